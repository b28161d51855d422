// File: engine/storage/db_impl.h
//
// DBImpl: one open gatedb data directory.  It owns the RocksDB
// TransactionDB, the catalog of collections, and the engine entry points
// that every door (typed C++ API, command dispatcher) calls with the
// request structs of requests.h.
//
// Concurrency: every public method is thread-safe.  A single-document write
// is one pessimistic RocksDB transaction: the document's key is locked with
// GetForUpdate, the filter is re-checked on the locked, latest value, the
// update is applied, and the commit is one atomic write.  Two writers of one
// document therefore serialize and never lose an update.  Reads never lock.
#ifndef GATEDB_ENGINE_STORAGE_DB_IMPL_H_
#define GATEDB_ENGINE_STORAGE_DB_IMPL_H_

#include <rocksdb/utilities/transaction_db.h>

#include <atomic>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/auth/principal.h"
#include "engine/storage/cursor.h"
#include "engine/storage/requests.h"
#include "engine/util/mutex.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {

namespace query {
class Matcher;
}
namespace update {
class UpdateDriver;
}
namespace wal {
class Journal;
}
struct WriteGate;
class IdempotencyLog;
struct IdempotencyRecord;
struct PendingEvent;
struct RefusalDetail;
struct RecordView;
struct AppliedUpdate;
class TxnPool;
struct IndexEntry;
namespace index {
struct Hint;
}
class Txn;

class DBImpl {
 public:
  struct PlanStats;  // what a plan did, for explain (db_impl_internal.h)

  // Opening a directory written with key format version 1 migrates it
  // first (MigrateKeyFormat; engine/keys/key_format.h).
  // Errors: InternalError / DataCorruptionDetected from RocksDB (for example
  // when another process holds the directory's lock); IllegalOperation for
  // a directory a newer gatedb wrote (a key format above kKeyFormatVersion).
  static StatusOr<std::unique_ptr<DBImpl>> Open(const std::string& path, const Options& options);

  // The key format this build writes (engine/keys/key_format.h).
  static constexpr uint32_t kKeyFormatVersion = 2;
  // Test hook: the key-format migration stops, as if the process died, after
  // this many of its durable steps (-1: never).  Process-wide.
  static void TEST_StopMigrationAfter(int steps);
  ~DBImpl();

  DBImpl(const DBImpl&) = delete;
  DBImpl& operator=(const DBImpl&) = delete;

  // Catalog.
  // Errors: InvalidNamespace, NamespaceExists, InvalidOptions.
  Status CreateCollection(const Namespace& ns, const CollectionOptions& options);
  // Errors: NamespaceNotFound.
  Status DropCollection(const Namespace& ns);
  // renameCollection.  The collection keeps its id, and its documents,
  // indexes and leases are keyed by the id, so a rename is a catalog change:
  // the old name's entry goes, the new one's comes, and the journal's
  // "rename" event (ns, to) commits with them.  With `drop_target` an
  // existing `to` is dropped in the same commit (its "drop" event first).
  // Errors: InvalidNamespace, IllegalOperation (to itself), NamespaceNotFound
  // (no `from`), NamespaceExists (`to` exists, without drop_target).
  Status RenameCollection(const Namespace& from, const Namespace& to, bool drop_target);
  // Collections of one database, by name.
  std::vector<CollectionInfo> ListCollections(const std::string& db) const;
  // Errors: NamespaceNotFound.
  StatusOr<CollectionInfo> GetCollectionInfo(const Namespace& ns) const;
  // Replaces a collection's options (collMod); applies to the next write.
  // Errors: NamespaceNotFound, InvalidOptions.
  Status ModifyCollection(const Namespace& ns, const CollectionOptions& options);
  std::vector<std::string> ListDatabases() const;
  // What a collection holds, for dbStats and collStats: an exact count and
  // data size (one key-ordered pass over its documents) and RocksDB's size
  // estimates.  Without `count_documents` (listDatabases) the pass stops at
  // the first document: count is then 0 or 1, whether it holds any.
  // Errors: NamespaceNotFound.
  StatusOr<CollectionStatsResult> CollectionStats(const Namespace& ns, bool count_documents = true);
  // MongoDB's storage statistics of a collection (collStats' fields,
  // $collStats' storageStats), sizes divided by `scale`.
  static void AppendStorageStats(const CollectionStatsResult& st, int64_t scale, bson_t* out);
  // Drops every collection of `db`.
  Status DropDatabase(const std::string& db);

  // CRUD.  A whole-request error (bad namespace, unparsable filter in a
  // read) is the Status; a per-statement error of a write is a WriteError in
  // the result.
  StatusOr<InsertResult> Insert(const InsertRequest& req);
  StatusOr<UpdateWriteResult> Update(const UpdateRequest& req);
  StatusOr<DeleteWriteResult> Delete(const DeleteRequest& req);
  StatusOr<FindResult> Find(const FindRequest& req);
  // The document whose _id is `id`, whole (a find of {_id: v} alone, with
  // no projection, sort or skip: one point read).  With `scope`: the
  // transaction's snapshot and its own writes.  With `writer`: the
  // document's last writer ({agentId, taskId, source, at}; empty when not
  // recorded).
  StatusOr<std::optional<Document>> FindById(const Namespace& ns, const bson_value_t& id, WriteScope* scope,
                                             Document* writer = nullptr);
  StatusOr<FindAndModifyResult> FindAndModify(const FindAndModifyRequest& req);
  StatusOr<int64_t> Count(const CountRequest& req);
  // Distinct values, sorted in BSON order.
  StatusOr<std::vector<Value>> Distinct(const DistinctRequest& req);

  // Secondary indexes (engine/index).  CreateIndexes builds each new index
  // over the existing documents before it returns (progress, when set, is
  // called with the documents indexed so far); an index whose definition
  // exists already is skipped.
  StatusOr<CreateIndexesResult> CreateIndexes(const Namespace& ns, const std::vector<Document>& specs,
                                              const std::function<void(uint64_t)>& progress = nullptr);
  // listIndexes' descriptions, _id_ first.  NamespaceNotFound when the
  // collection does not exist.
  StatusOr<std::vector<Document>> ListIndexes(const Namespace& ns);
  // Drops the named indexes ("*": all but _id_); returns how many indexes the
  // collection had.  A key pattern names the index that has it.
  StatusOr<int> DropIndexes(const Namespace& ns, const std::vector<std::string>& names, const Document* key_pattern);
  // Index entries staged so far (puts and deletes) by document writes,
  // builds and catch-ups: an update that touches no indexed path adds none.
  uint64_t index_entry_writes() const { return index_entry_writes_.load(std::memory_order_relaxed); }

  // One pass of the TTL monitor: deletes, through the write gate, every
  // document a TTL index says has expired (its indexed date, or the
  // earliest date of an array, is older than now - expireAfterSeconds).
  // Returns how many it deleted.  The monitor thread calls it every
  // Options::ttl_interval_ms.
  StatusOr<int64_t> RunTtlPass();

  // find as a cursor (engine/storage/cursor.h): the first batch, and the
  // cursor id when more remain.  Errors: find's, and
  // QueryExceededMemoryLimitNoDiskUseAllowed for a large in-memory sort.
  StatusOr<CursorPage> FindPage(const FindRequest& req, const CursorRequest& page);
  // The first batch of any cursor source; registers the cursor when more remain.
  StatusOr<CursorPage> FirstPage(std::unique_ptr<CursorSource> source, std::string ns, const CursorRequest& page);
  // The next batch of cursor `id` (page.single_batch is ignored).  Errors:
  // CursorNotFound, CursorInUse, Unauthorized (another namespace), and the
  // cursor's own error, which also kills it.
  StatusOr<CursorPage> GetMore(int64_t id, const std::string& ns, const CursorRequest& page);
  KillCursorsResult KillCursors(const std::string& ns, const std::vector<int64_t>& ids);
  // Kills the cursors of session `lsid` (its bytes; empty: of every session).
  size_t KillSessionCursors(const std::string& lsid) { return cursors_->KillSession(lsid); }
  // aggregate as a cursor (engine/agg/pipeline.h): the leading $match, $sort
  // and $limit run as a find (with its indexes), the other stages on what
  // it returns.  Errors: the pipeline's parse errors, then its run's.
  StatusOr<CursorPage> AggregatePage(const AggregateRequest& req, const CursorRequest& page);
  // An aggregate whose first stage is $changeStream (AggregatePage sends it
  // here): a tailable cursor over the journal (db_impl_change_stream.cc).
  // Errors: the $changeStream options' (InvalidResumeToken, ...), the
  // stages' (IllegalOperation for a stage a change stream cannot run),
  // OperationNotSupportedInTransaction, ChangeStreamHistoryLost.
  StatusOr<CursorPage> ChangeStreamPage(const AggregateRequest& req, const CursorRequest& page);
  // explain of an aggregate: the leading query's plan and the stages.
  StatusOr<Document> ExplainAggregate(const AggregateRequest& req, const std::string& verbosity);
  // Open cursors (for serverStatus and tests).
  size_t OpenCursors() const { return cursors_->size(); }
  // Where sorts spill: "<data directory>/_tmp", emptied at open.
  std::string TempDir() const { return path_ + "/_tmp"; }

  // explain for find / count / distinct / update / delete / findAndModify:
  // MongoDB's queryPlanner and, when verbosity asks, executionStats.
  StatusOr<Document> Explain(const ExplainRequest& req);

  // The journal: events after a sequence number, optionally of one
  // collection.  Errors: ChangeStreamHistoryLost when the events asked for were collected.
  StatusOr<JournalReadResult> ReadJournal(const JournalReadRequest& req);
  // Gated writes and conflicts of one collection over the retained journal.
  // Only events with seq > after_seq count (0: the whole retained journal).
  StatusOr<ConflictStatsResult> ConflictStats(const Namespace& ns, uint64_t after_seq = 0);

  // A snapshot transaction: a scope whose reads see the snapshot taken now
  // (plus its own writes), whose writes conflict with any write committed
  // after that snapshot (WriteConflict), and whose lifetime and size are
  // bounded.  `txn_id` is recorded in its journal events.  Requests join it
  // through WriteOptionsInternal::scope / FindRequest::scope.
  ScopePtr BeginTransaction(const std::string& txn_id, const TransactionLimits& limits, bool sync);
  // Commits everything the transaction wrote, with its journal events, as
  // one atomic RocksDB write.  With `keyed` (task_id and write_seq), the
  // commit is idempotent: it is recorded under that key in the same write,
  // and when the key already holds a commit nothing is committed, the
  // scope is left as it is (the caller rolls it back) and *replayed is
  // set.  The scope cannot be used for writes afterwards.
  // Errors: WriteConflict, IdempotencyKeyReuse, BadValue (task id),
  // WriteConcernFailed (a durable commit's fsync failed; it is applied).
  // `principal` (null: the owner): the user the transaction acts as; a
  // keyed commit claims its agent as a keyed write does (AdmitWrite), and
  // replays only that agent's record.
  Status CommitTransaction(WriteScope* scope, const WriteContext* keyed, const auth::Principal* principal,
                           bool* replayed);
  // Whether a transaction already committed under `context`'s key (a re-run
  // must then not run its statements again).  With `sync`, answers once that
  // commit is durable.  Errors: IdempotencyKeyReuse, BadValue,
  // WriteConcernFailed.
  Status TransactionCommittedBefore(const WriteContext& context, const auth::Principal* principal, bool sync,
                                    bool* committed);

  // Side records: small keyed BSON records that a feature built on the
  // store keeps beside the documents they describe (upstream sync's bases).
  // Written in a scope, they commit with it, in the same RocksDB write as
  // its documents; without one, each is a write of its own.  A scope's read
  // locks the key until the scope ends (two scopes that read and write one
  // record serialize).  Not journaled, not gated, not visible to find: the
  // idempotency log's kind of state.  `space` names the feature's records
  // ("sync.base"); keys are the feature's own bytes.
  Status PutSideRecord(WriteScope* scope, std::string_view space, std::string_view key, const bson_t* value);
  Status DeleteSideRecord(WriteScope* scope, std::string_view space, std::string_view key);
  StatusOr<std::optional<Document>> GetSideRecord(WriteScope* scope, std::string_view space, std::string_view key);
  // Several puts (value set) and deletes (value empty) as one RocksDB write
  // of their own, outside any scope: no locks taken.
  struct SideRecordWrite {
    std::string space;
    std::string key;
    std::optional<Document> value;
  };
  Status WriteSideRecords(const std::vector<SideRecordWrite>& writes);
  // Every record of `space` whose key starts with `prefix`, in key order,
  // as of now; `fn` returning an error stops the scan with it.
  Status ScanSideRecords(std::string_view space, std::string_view prefix,
                         const std::function<Status(std::string_view key, DocumentView value)>& fn);

  // A task's stored keyed writes, by writeSeq (the idempotencyStatus command).
  StatusOr<std::vector<std::pair<int64_t, IdempotencyRecord>>> IdempotencyStatus(const std::string& task_id);
  // Deletes idempotency records past their retention now (a background
  // thread also does it).  Returns how many.
  StatusOr<uint64_t> CollectIdempotencyRecords();

  // Blocks until a journal event with seq > after_seq exists or the time
  // passes; true when one exists.
  bool WaitForJournal(uint64_t after_seq, int64_t timeout_ms);
  // The journal's last published seq.
  uint64_t LastJournalSeq() const;

  // Leases (PROTOCOL.md): while a document's lease is held, writes to it
  // from anyone but the holder are refused with LeaseHeld.  An expired
  // lease simply no longer counts.
  // Errors: LeaseHeld (errInfo: holder, expiresAt), BadValue, InvalidIdField.
  StatusOr<LeaseInfo> AcquireLease(const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                   const std::string& holder);
  // Errors: LeaseHeld (someone else holds it), NoSuchKey (no live lease of yours).
  StatusOr<LeaseInfo> RenewLease(const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                 const std::string& holder);
  // Errors: LeaseHeld (someone else holds it).  Releasing no lease is OK
  // with released = false.
  StatusOr<LeaseInfo> ReleaseLease(const Namespace& ns, const bson_value_t& id, const std::string& holder);

  // Users and roles (engine/auth), kept as side records ("auth.user",
  // "auth.role"; key "<db>\0<name>").  Changes are serialized (two
  // createUser calls for one name: exactly one succeeds) and take effect at
  // the next call of every principal (ResolvePrincipal's cache is dropped).
  // Errors: Location51003 (the user exists), UserNotFound,
  // Location51002 (the role exists), RoleNotFound.  `first_only`: create
  // it only while no user exists (MongoDB's localhost exception, decided
  // under the same lock as the creation, so two racing clients cannot both
  // get one in); else Unauthorized.
  Status CreateUser(const auth::UserRecord& user, bool first_only);
  Status UpdateUser(const auth::UserRecord& user);
  Status DropUser(const std::string& user, const std::string& db);
  StatusOr<std::optional<auth::UserRecord>> GetUser(const std::string& user, const std::string& db);
  // Every user of `db` ("" = of every database), by database then name.
  StatusOr<std::vector<auth::UserRecord>> ListUsers(const std::string& db);
  Status CreateRole(const auth::RoleRecord& role);
  Status UpdateRole(const auth::RoleRecord& role);
  Status DropRole(const std::string& role, const std::string& db);
  StatusOr<std::optional<auth::RoleRecord>> GetRole(const std::string& role, const std::string& db);
  StatusOr<std::vector<auth::RoleRecord>> ListRoles(const std::string& db);
  // Whether any user exists (the wire server then requires authentication).
  bool HasUsers() const { return user_count_.load(std::memory_order_acquire) > 0; }
  // The user with its roles' privileges, resolved now or taken from the
  // cache.  Errors: UserNotFound.
  StatusOr<std::shared_ptr<const auth::Principal>> ResolvePrincipal(const std::string& user, const std::string& db);

  // Makes every write committed so far durable (an fsync of RocksDB's WAL)
  // when `sync` or Options::sync asks for it; a no-op otherwise.  Durable
  // commits call it after leaving commit_mu_, so that concurrent durable
  // writers share one fsync (group commit); a replayed durable write calls
  // it before answering.
  // Errors: WriteConcernFailed when the fsync fails (the write is applied
  // but may not survive a power loss).
  Status SyncCommitted(bool sync);
  // How group commit has done since open: durable acknowledgements (each
  // write or replay answered after an fsync), the fsyncs that covered them,
  // and the durable writes in flight now.
  struct GroupCommitCounts {
    uint64_t durable_acks = 0;
    uint64_t wal_syncs = 0;
    int in_flight = 0;
  };
  GroupCommitCounts GroupCommitStats();
  // Whether a request with these options commits durably by itself (not
  // inside a transaction).
  bool DurableRequest(const WriteOptionsInternal& w) const { return w.scope == nullptr && (w.sync || options_.sync); }

  const Options& options() const { return options_; }
  // The clock in force (Options::clock_ms, or the system clock).
  int64_t NowMs() const;

 private:
  friend struct WriteScope;  // names the collections it wrote
  struct Collection;  // catalog entry plus its drop lock
  struct WriteOutcome;

  DBImpl(const std::string& path, const Options& options);
  Status OpenRocks();
  Status LoadCatalog();
  // Catalog keys (db_impl_open.cc).  DO NOT CHANGE.
  static const char kCatalogFormatVersionKey[];  // -> uint32 BE, the key format

  // The collection, or null when it does not exist.
  std::shared_ptr<Collection> FindCollection(const Namespace& ns) const;
  // The collection, created (as MongoDB does on first write) when missing.
  StatusOr<std::shared_ptr<Collection>> GetOrCreateCollection(const Namespace& ns);
  // Deletes a dropped collection's documents, index definitions and index
  // entries (its id is never reused: this is space reclamation).
  Status ReclaimCollection(uint32_t collection_id);
  Status CreateCollectionLocked(const Namespace& ns, const CollectionOptions& options,
                                std::shared_ptr<Collection>* out) GATEDB_REQUIRES(catalog_mu_);

  rocksdb::WriteOptions RocksWriteOptions(const WriteOptionsInternal& w) const;

  // The idempotency protocol, in one place: every keyed write and every
  // keyed transaction commit runs through RunKeyed (db_impl_keyed.cc).
  struct KeyedCall {
    const WriteContext* context = nullptr;  // with task_id and write_seq
    // The caller acts as this user (null: the owner, who replays any
    // record); a user replays only records its own agent stored.
    const auth::Principal* principal = nullptr;
    bool sync = false;
    std::string ns;           // recorded with the reply
    std::string fingerprint;  // format 2 (engine/storage/fingerprint.h)
    // Format 1, asked for only when the key holds a record of that format.
    std::function<std::string()> legacy_fingerprint;
    // Runs the write in `scope`: fills the reply to store and says whether
    // the write took effect (only then is the reply stored, so that a write
    // refused as a whole can be retried under the same key).
    std::function<Status(WriteScope* scope, Document* reply, bool* took_effect)> run;
  };
  // Claims the key, replays a stored reply (*replayed) or refuses a reused
  // key, else runs the call in `scope` (a new one when null) and commits it
  // with the record.  Returns the reply.
  StatusOr<Document> RunKeyed(const KeyedCall& call, WriteScope* scope, bool* replayed);
  // The stored reply under `key` when its fingerprint is the call's;
  // IdempotencyKeyReuse when it is another's; nullopt when there is none.
  StatusOr<std::optional<Document>> StoredReply(const KeyedCall& call, const std::string& key);
  // A keyed request: runs `exec` through RunKeyed, storing its result's
  // reply (`encode`), or decodes the stored one (db_impl_internal.h).
  template <typename Result, typename Request, typename Exec, typename Encode>
  StatusOr<Result> RunKeyedRequest(const Request& req, const WriteOptionsInternal& base, Exec&& exec,
                                   Encode&& encode);
  // The write gate's first decision, for every write of every door: with a
  // principal, its user is the agent (an empty writeContext.agentId becomes
  // it, another name is refused), it must hold every action of `actions` on
  // `ns`, and a writeContext.source it claims must be one it speaks for.
  // Returns the write options to run with: `req` itself when there is no
  // principal, else `*admitted`.  A refusal is Unauthorized 13, journaled as
  // a refused write.
  StatusOr<const WriteOptionsInternal*> AdmitWrite(const Namespace& ns, std::initializer_list<auth::Action> actions,
                                                   const WriteOptionsInternal& req,
                                                   std::optional<WriteOptionsInternal>* admitted);
  // A write refused by permissions: its conflict event (code Unauthorized,
  // action, path) committed on its own, and the Unauthorized status.
  // `rec` (may be null): the document the write would have changed.
  Status RefuseUnauthorized(const Namespace& ns, std::string_view doc_key, const RecordView* rec, const WriteGate* gate,
                            const WriteOptionsInternal& w, auth::Action action, const std::string& path,
                            const std::string& why);
  // Unauthorized (refused and journaled) unless the principal may change
  // every path of `paths` ("" is the whole document) with `action`.
  Status CheckWritablePaths(const Collection& coll, std::string_view doc_key, const RecordView* rec,
                            const WriteGate& gate, const WriteOptionsInternal& w, auth::Action action,
                            const std::vector<std::string>& paths);
  // The same for a new document (an insert, an upsert's insert): `paths`,
  // its top-level fields but the version field (PrepareNewDocument's), are
  // checked but _id.  Lists nothing when the gate restricts no path.
  Status CheckInsertedPaths(const Collection& coll, std::string_view doc_key, const WriteGate& gate,
                            const WriteOptionsInternal& w, const std::vector<std::string>& paths);

  // The request bodies, with the write options in force (a keyed request's
  // carry its scope).
  StatusOr<InsertResult> InsertWith(const InsertRequest& req, const WriteOptionsInternal& w);
  StatusOr<UpdateWriteResult> UpdateWith(const UpdateRequest& req, const WriteOptionsInternal& w);
  StatusOr<DeleteWriteResult> DeleteWith(const DeleteRequest& req, const WriteOptionsInternal& w);
  StatusOr<FindAndModifyResult> FindAndModifyWith(const FindAndModifyRequest& req, const WriteOptionsInternal& w);

  // A scope for one keyed write: a plain pessimistic transaction.
  ScopePtr BeginScope(bool sync);
  // Commits the scope, its journal events and, when given, an idempotency
  // record under `idem_key`, as one RocksDB write (CommitWithEvents).
  Status CommitScope(WriteScope* scope, const std::string* idem_key = nullptr,
                     const IdempotencyRecord* record = nullptr);

  // Keys of the documents that match right now (read without locks), at
  // most `limit` (0: all).  Uses a point lookup when the filter pins _id.
  // Inside a scope (`txn` not null) the scan sees the scope's own writes.
  Status CandidateKeys(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                       size_t limit, std::vector<std::string>* keys, Txn* txn = nullptr,
                       const index::Hint* hint = nullptr) const;
  // The keys a statement's write visits: the one key its filter pins by
  // _id, else the matching documents' (at most `limit`, 0: all).
  Status StatementCandidates(const Collection& coll, const bson_t* filter, const query::Matcher* matcher,
                             size_t limit, const WriteOptionsInternal& w, std::vector<std::string>* keys,
                             const index::Hint* hint = nullptr);
  // Matching documents (copies) with their keys, for sorted selection.
  Status MatchingDocs(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                      std::vector<std::pair<std::string, Document>>* out, Txn* txn = nullptr,
                      const index::Hint* hint = nullptr) const;
  // Adds `events` to the scope, or commits them with `txn` when there is none.
  Status FinishWrite(const WriteOptionsInternal& w, Txn& txn, std::vector<PendingEvent>* events);

  // One document's read-modify-write under its lock: re-checks `matcher` on
  // the latest value, applies `driver`, bumps the version when the document
  // changed, commits.  Retries internally on lock conflicts.
  // `matcher` null: the filter is {_id: v} alone, and the key read is the match.
  Status UpdateDocument(const Collection& coll, const std::string& key, const query::Matcher* matcher,
                        const update::UpdateDriver& driver, const WriteOptionsInternal& w,
                        const WriteGate& gate, WriteOutcome* out);
  // The insert half of an upsert: the query's equality fields, then the
  // update applied as an insert.  Sets out->raced when another writer
  // inserted the same _id first (the caller retries as an update).
  Status UpsertDocument(const Collection& coll, const bson_t* query, const update::UpdateDriver& driver,
                        const WriteOptionsInternal& w, WriteOutcome* out);
  Status DeleteDocument(const Collection& coll, const std::string& key, const query::Matcher* matcher,
                        const WriteOptionsInternal& w, const WriteGate& gate, WriteOutcome* out);
  // After the gate let an update through: stamps version + 1 into the new
  // document, validates what it wrote, and puts the record (with its
  // writer and field-version table) into `txn` and its journal event into
  // `events`.  `merged`: a stale write the collection's policy let through.
  // `opts`: the options the write read at its start.
  Status StageUpdate(const Collection& coll, const CollectionOptions& opts, Txn& txn, const std::string& key,
                     const RecordView& rec, const update::UpdateDriver& driver, AppliedUpdate* applied,
                     const WriteOptionsInternal& w, const WriteGate& gate, bool merged, int64_t now,
                     std::vector<PendingEvent>* events);

  // Numbers `events` in the journal, adds them to `txn` and commits, as one
  // atomic RocksDB write, under commit_mu_ (which keeps the journal's
  // sequence gap-free and in commit order).  A durable (sync) commit is
  // written under the mutex and fsynced after it (SyncCommitted).
  Status CommitWithEvents(Txn& txn, std::vector<PendingEvent>* events);
  // A refused gated write: the VersionConflict / StaleBasis status with its
  // errInfo, and its conflict event in the journal.
  // `rec`: the document as it is (null when there is none).
  Status RefuseGatedWrite(const Collection& coll, std::string_view doc_key, const RecordView* rec,
                          const WriteGate& gate, const WriteOptionsInternal& w, ErrorCode code,
                          const std::string& why, const RefusalDetail* detail = nullptr);
  // Whether a conflict policy lets a write with a stale basis through.
  // `written`: the paths the write changes ("" for everything).
  bool PolicyAllows(const CollectionOptions& opts, const RecordView& rec, const WriteGate& gate,
                    const WriteOptionsInternal& w, const std::vector<std::string>& written, RefusalDetail* detail);
  // Under the document's lock, for a write whose basis is not the
  // document's version: OK when the collection's policy lets it through,
  // else the refusal (VersionConflict with its errInfo and conflict event).
  // `what` names the write in the reason ("write", "delete").
  Status DecideStaleWrite(const Collection& coll, const std::string& key, const RecordView& rec,
                          const WriteGate& gate, const WriteOptionsInternal& w,
                          const std::vector<std::string>& written, const char* what);
  // A statement's gate, decided before any document is read: appendOnly
  // refuses every update and delete; a basisVersion names one existing
  // document (CheckBasisUse); a gated write whose basis is older than the
  // collection's maxBasisAgeMs is StaleBasis (CheckBasisAge).  The rest of
  // the gate is decided under the document's lock (DecideStaleWrite).
  StatusOr<WriteGate> OpenGate(const Collection& coll, const bson_t* filter, const std::optional<int64_t>& basis,
                               bool multi, bool upsert, const WriteOptionsInternal& w);
  // Before a gated write: StaleBasis when the basis is older than the
  // collection's maxBasisAgeMs.
  Status CheckBasisAge(const Collection& coll, const bson_t* filter, const WriteGate& gate,
                       const WriteOptionsInternal& w);
  // After a statement of the MongoDB idiom matched nothing: the document
  // its filter names without the version equality, if there is one.
  void DetectIdiomConflict(const Collection& coll, const bson_t* filter, size_t index,
                           const WriteOptionsInternal& w, std::vector<VersionConflictEntry>* out);
  // For a statement with basisVersion that matched nothing: NoMatchingDocument,
  // or VersionConflict when the named document exists at another version.
  Status BasisTargetMissing(const Collection& coll, const bson_t* filter, const WriteGate& gate,
                            const WriteOptionsInternal& w);

  Status UpdateStatementImpl(const Collection& coll, const UpdateStatement& stmt, size_t index,
                             const WriteOptionsInternal& w, UpdateWriteResult* result);
  Status DeleteStatementImpl(const Collection& coll, const DeleteStatement& stmt, size_t index,
                             const WriteOptionsInternal& w, DeleteWriteResult* result);

  // Index maintenance: the entries `doc_key` loses (old_doc) and gains
  // (new_doc; either may be null) in every index, unique ones checked
  // (DuplicateKey), staged in `txn`.  Nothing is staged when it fails.  With
  // `changed` (an update's changed paths), indexes that watch none of them
  // are skipped.
  Status UpdateIndexes(const Collection& coll, Txn& txn, std::string_view doc_key, const bson_t* old_doc,
                       const bson_t* new_doc, const std::vector<std::string>* changed,
                       const WriteOptionsInternal& w);
  // At a scope's commit: the entries its documents need in indexes
  // registered after it wrote them.
  Status CatchUpIndexes(WriteScope* scope);
  // Index entries `doc` (null: none) gives the index `e`, staged in txn.
  Status AddIndexEntries(const Collection& coll, const IndexEntry& e, Txn& txn, std::string_view doc_key,
                         const bson_t* doc);
  Status LoadIndexes();
  // The catalog's "meta:format_version" (db_impl_format.cc): recorded for a
  // new store, checked for an existing one, and a version-1 store migrated
  // (MigrateKeyFormat) before the record says 2.
  Status CheckKeyFormat();
  Status MigrateKeyFormat();
  Status MigrateCollectionKeys(const Collection& coll, int* steps);
  Status BuildIndex(const Collection& coll, const std::shared_ptr<const IndexEntry>& entry,
                    const std::function<void(uint64_t)>& progress);
  Status RemoveIndexes(Collection& coll, const std::vector<std::string>& names);
  Status DeleteIndexRange(const std::string& prefix);
  Status MarkMultikey(Collection& coll, const std::string& name);
  // The plan a read or a write's candidate search runs (db_impl_plan.cc).
  using CandidateFn = std::function<bool(std::string_view key, const RecordView& rec)>;
  StatusOr<FindResult> FindWithStats(const FindRequest& req, PlanStats* stats);
  StatusOr<int64_t> CountWithStats(const CountRequest& req, PlanStats* stats);
  StatusOr<std::vector<Value>> DistinctWithStats(const DistinctRequest& req, PlanStats* stats);
  Status ForEachCandidate(const Collection& coll, const bson_t* filter, const bson_t* sort, const index::Hint* hint,
                          Txn* txn, PlanStats* stats, bool* sorted, const CandidateFn& fn) const;
  class FindSource;  // find's CursorSource (db_impl_read.cc)
  class AggregateSource;  // aggregate's (db_impl_agg.cc)
  class AggregateHost;    // $lookup's reads, $out's and $merge's writes (db_impl_agg.cc)
  class ChangeStreamSource;  // $changeStream's (db_impl_change_stream.cc)
  // find's source, opened (parsed and planned).
  StatusOr<std::unique_ptr<CursorSource>> OpenFind(const FindRequest& req);
  std::unique_ptr<CursorRegistry> cursors_;

 public:
  // Internal to engine/storage (db_impl_internal.h), public so that its
  // helper classes can name it.
  class PlanExecutor;  // a chosen plan, pulled one candidate document at a time
 private:
  // Chooses the plan (stats: explain's stages, may be null; *sorted: the
  // plan yields the sort's order) and opens it.  The executor holds what it
  // reads (snapshot, iterators, index catalog): it may outlive this call,
  // not the transaction `txn`.  Outside a transaction, `snapshot` (may be
  // null: the latest) is where it reads.
  StatusOr<std::unique_ptr<PlanExecutor>> OpenPlan(const Collection& coll, const bson_t* filter, const bson_t* sort,
                                                   const index::Hint* hint, Txn* txn, PlanStats* stats,
                                                   bool* sorted, const rocksdb::Snapshot* snapshot = nullptr) const;

  const std::string path_;
  const Options options_;

  rocksdb::TransactionDB* db_ = nullptr;
  // Finished transactions reused by every write (Txn); emptied before db_
  // is closed.
  std::unique_ptr<TxnPool> txn_pool_;
  rocksdb::ColumnFamilyHandle* catalog_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* docs_cf_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<wal::Journal> journal_;
  std::unique_ptr<IdempotencyLog> idempotency_;
  rocksdb::ColumnFamilyHandle* leases_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* index_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* side_cf_ = nullptr;  // side records (PutSideRecord)
  rocksdb::WriteOptions SideWriteOptions() const;
  // Lease records present (live or expired): writes skip the lease check
  // while there are none.
  std::atomic<int64_t> lease_records_{0};
  std::atomic<uint64_t> index_entry_writes_{0};

  // LeaseHeld when another holder's live lease covers `doc_key`.
  // REQUIRES: the document's key is locked by `txn`.
  Status CheckLease(Txn& txn, const std::string& doc_key, const WriteContext& ctx);
  enum class LeaseOp { kAcquire, kRenew, kRelease };
  StatusOr<LeaseInfo> LeaseCommand(LeaseOp op, const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                   const std::string& holder);

  // Held from journal sequence allocation through commit (not through a
  // durable commit's fsync: see SyncCommitted).  It also guards the
  // journal's sequence allocation, which the journal cannot name.
  Mutex commit_mu_;

  // Group commit: one thread at a time fsyncs the WAL (the leader, with an
  // empty synced write); writers
  // whose commit it covers wait for it instead of syncing again.
  Mutex sync_mu_;
  CondVar sync_cv_;         // followers: an fsync ended
  CondVar sync_leader_cv_;  // the leader: the durable writes in flight committed
  bool syncing_ GATEDB_GUARDED_BY(sync_mu_) = false;
  bool sync_leader_waiting_ GATEDB_GUARDED_BY(sync_mu_) = false;
  // How long the last fsync took: a leader waits for the writes in flight
  // at most that long (never more than kGroupCommitWaitMicros), since
  // waiting longer would cost more than a second fsync.
  int64_t last_sync_micros_ GATEDB_GUARDED_BY(sync_mu_) = kGroupCommitWaitMicros;
  // Durable writes in flight (DurableWrite): from the start of a durable
  // write request, or of a durable commit, until it committed or failed.
  std::atomic<int> durable_in_flight_{0};
  // How long a group-commit leader waits at most for writes in flight.
  static constexpr int kGroupCommitWaitMicros = 1000;
  // Finished transactions kept for reuse: more than the writers that
  // commit at once in practice.
  static constexpr size_t kKeptTransactions = 32;
  // Counts a durable write as in flight while it lives, so that a
  // group-commit leader lets it commit before fsyncing (one fsync then
  // covers it).  Counts nothing when `durable` is false, or when the
  // thread's write is already counted (a request's own commit).  The count
  // ends at the first of: destruction, Release(), or SyncCommitted on this
  // thread (a writer waiting for an fsync must not be waited for).
  class DurableWrite {
   public:
    DurableWrite(DBImpl* db, bool durable);
    ~DurableWrite() { Release(); }
    DurableWrite(const DurableWrite&) = delete;
    DurableWrite& operator=(const DurableWrite&) = delete;
    void Release();
    // Ends the count of this thread's durable write in `db`, if any.
    static void ReleaseCurrent(const DBImpl* db);

   private:
    static thread_local DurableWrite* current_;  // this thread's counted write
    DBImpl* db_ = nullptr;                       // null: nothing counted (or released)
  };
  uint64_t synced_rocks_seq_ GATEDB_GUARDED_BY(sync_mu_) = 0;  // durable up to this RocksDB sequence
  uint64_t durable_acks_ GATEDB_GUARDED_BY(sync_mu_) = 0;
  uint64_t wal_syncs_ GATEDB_GUARDED_BY(sync_mu_) = 0;

  // The TTL monitor (db_impl_ttl.cc).
  void TtlLoop();
  void StopTtlMonitor();
  Mutex ttl_mu_;
  CondVar ttl_cv_;
  bool ttl_stop_ GATEDB_GUARDED_BY(ttl_mu_) = false;
  std::thread ttl_thread_;

  // Users and roles (db_impl_auth.cc).
  Status LoadUserCount();
  // Writes (value) or deletes (null) the record of `space` under (db, name)
  // when its existence is `must_exist`, else returns `refusal`; every
  // principal resolves again after.
  Status ChangeAuthRecord(const char* space, const std::string& db, const std::string& name, bool must_exist,
                          const Status& refusal, const Document* value) GATEDB_REQUIRES(auth_mu_);
  Mutex auth_mu_;  // serializes user and role changes
  std::atomic<int64_t> user_count_{0};
  mutable Mutex principals_mu_;
  std::map<std::string, std::shared_ptr<const auth::Principal>> principals_ GATEDB_GUARDED_BY(principals_mu_);

  mutable SharedMutex catalog_mu_;
  // Key: the full namespace.
  std::map<std::string, std::shared_ptr<Collection>> collections_ GATEDB_GUARDED_BY(catalog_mu_);
  uint32_t next_collection_id_ GATEDB_GUARDED_BY(catalog_mu_) = 1;
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_DB_IMPL_H_
