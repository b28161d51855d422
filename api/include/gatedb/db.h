// File: gatedb/db.h
//
// Database: one open gatedb data directory, shared by every thread of the
// process (RocksDB's lock keeps a second process out).  Commands and the
// typed Collection API share one implementation.
//
//   auto db = gatedb::Database::Open("./gatedb-data");
//   if (!db.ok()) { std::cerr << db.status().ToString(); return 1; }
//   gatedb::Document reply = (*db)->RunCommand(
//       gatedb::Document::FromJson(R"({"insert": "orders", "documents": [{"_id": 1}]})")->view());
//
// Thread safety: all methods may be called concurrently.
#ifndef GATEDB_DB_H_
#define GATEDB_DB_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gatedb/collection.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"
#include "gatedb/transaction.h"

namespace gatedb {

struct WithTransactionOptions {
  TransactionOptions transaction;
  // Give up retrying transient errors after this long (MongoDB's drivers
  // use 120 s).  Default: 120000
  int64_t timeout_ms = 120 * 1000;
  // Commit idempotently under this context's key (task_id + write_seq).
  // Default: none
  std::optional<WriteContext> commit_context;
};

struct CreateCollectionOptions {
  // The store-owned version field of every document.  Default: "version"
  std::string version_field = "version";
  // Refuse (StaleBasis) a gated write whose writeContext.readAt is older
  // than this many milliseconds.  Default: none
  std::optional<int64_t> max_basis_age_ms;
  // MongoDB's document validation: query operators and/or $jsonSchema; a
  // write whose new document fails is DocumentValidationFailure (121) with
  // errInfo {failingDocumentId, details}.  Default: {} (none)
  Document validator;
  std::string validation_level = "strict";   // strict, moderate or off
  std::string validation_action = "error";   // error or warn
};

// Which journal events to read.
struct JournalQuery {
  std::string db;          // "" = every database ("test" when a collection is named)
  std::string collection;  // "" = every collection (of `db`, when given)
  uint64_t after_seq = 0;  // events with seq > after_seq
  size_t limit = 100;      // 0 = no limit
};

struct JournalBatch {
  // In commit order: {seq, op, ns, _id, versionBefore, versionAfter,
  // writeContext, changedPaths, at, gated, ...} (PROTOCOL.md's journal).
  std::vector<Document> events;
  uint64_t last_seq = 0;        // the newest event's seq
  uint64_t next_after_seq = 0;  // pass as after_seq to continue
  uint64_t first_seq = 0;       // the oldest retained event's seq
};

struct ConflictStats {
  int64_t gated_writes = 0;  // gated writes, committed or refused
  int64_t conflicts = 0;     // refused ones
  double conflict_rate = 0;  // conflicts / gated_writes
  std::vector<std::pair<Value, int64_t>> hot_documents;  // (_id, conflicts), most first
  std::vector<std::pair<std::string, int64_t>> agents;   // (agentId, conflicts), most first
  // Writes refused by permissions (Unauthorized): in all, and per agent.
  int64_t unauthorized = 0;
  std::vector<std::pair<std::string, int64_t>> unauthorized_agents;  // (agentId, refusals), most first
};

class Database {
 public:
  // Opens (creating, by default) the data directory at `path`.
  // Errors: InternalError when the directory cannot be opened or is locked
  // by another process; DataCorruptionDetected.
  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path, const Options& options = Options());
  ~Database();

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one MongoDB command ({insert: "orders", documents: [...], $db:
  // "shop"}).  Always returns a reply: {ok: 1, ...} on success, or {ok: 0,
  // code, codeName, errmsg} (see PROTOCOL.md).  Never throws.
  Document RunCommand(DocumentView command);

  // A handle to collection `name` of database `db` (default "test").
  Collection GetCollection(std::string_view name) { return GetCollection("test", name); }
  Collection GetCollection(std::string_view db, std::string_view name);

  // A change stream on every collection of database `db`, or, with `db`
  // empty, on every database but admin, config and local (gatedb/cursor.h;
  // `pipeline` and errors as Collection::Watch).  A database's stream ends
  // when the database is dropped.
  StatusOr<ChangeStream> Watch(std::string_view db, DocumentView pipeline = DocumentView(),
                               const ChangeStreamOptions& options = ChangeStreamOptions());

  // Errors: NamespaceExists, InvalidNamespace, InvalidOptions.
  Status CreateCollection(std::string_view db, std::string_view name,
                          const CreateCollectionOptions& options = CreateCollectionOptions());
  // Errors: NamespaceNotFound.
  Status DropCollection(std::string_view db, std::string_view name);
  std::vector<std::string> ListCollectionNames(std::string_view db = "test");

  // Journal events in commit order.  Errors: ChangeStreamHistoryLost when the events
  // after `after_seq` were already collected (retention): never a silent gap.
  StatusOr<JournalBatch> ReadJournal(const JournalQuery& query);
  // Blocks until an event with seq > after_seq exists or `timeout_ms`
  // passes; true when one exists.
  bool WaitForJournal(uint64_t after_seq, int64_t timeout_ms);
  // Gated writes and conflicts of one collection over the retained journal
  // (the `conflictStats` command).
  // `after_seq`: count only journal events after it (0: all retained).
  StatusOr<ConflictStats> GetConflictStats(std::string_view db, std::string_view collection,
                                           uint64_t after_seq = 0);

  // A task's stored keyed writes (the `idempotencyStatus` command): for
  // each, its writeSeq, when it ran, and the reply it got.
  struct StoredWrite {
    int64_t write_seq = 0;
    int64_t at_ms = 0;
    std::string ns;
    Document reply;
  };
  StatusOr<std::vector<StoredWrite>> IdempotencyStatus(const std::string& task_id);

  // Starts a snapshot transaction (gatedb/transaction.h).
  StatusOr<std::unique_ptr<Transaction>> StartTransaction(const TransactionOptions& options = TransactionOptions());

  // Runs fn in a new transaction and commits it; when fn or the commit
  // fails with a transient error (IsTransientTransactionError) the whole
  // function runs again in a fresh transaction, with backoff, until
  // options.timeout_ms.  A non-transient error is returned at once (the
  // transaction aborted).  fn must not commit or abort the transaction.
  Status WithTransaction(const std::function<Status(Transaction& txn)>& fn,
                         const WithTransactionOptions& options = WithTransactionOptions());

  // A handle to the same store acting as `who` (a user made with
  // createUser): its commands, collections and transactions are checked
  // against that user's roles, and their writes name it as the agent.  The
  // store stays open while any handle to it lives.
  // Errors: UserNotFound.
  StatusOr<std::unique_ptr<Database>> As(const Identity& who);
  // Who this handle calls as (empty: the opener).
  const Identity& identity() const { return identity_; }

  // Deletes idempotency records older than Options::idempotency_retention_sec
  // now (a background thread also does it periodically).  Returns how many.
  StatusOr<uint64_t> CollectIdempotencyRecords();

  // The store behind this Database (api/src/database_rep.h), opaque here;
  // gatedb's own doors (the wire server) reach the dispatcher through it.
  struct Rep;
  Rep* rep() const { return rep_.get(); }

 private:
  friend class Collection;
  Database();
  std::shared_ptr<Rep> rep_;
  Identity identity_;
};

}  // namespace gatedb

#endif  // GATEDB_DB_H_
