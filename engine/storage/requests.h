// File: engine/storage/requests.h
//
// The request and result structs that every door builds: the typed C++ API
// fills them from its arguments, the command dispatcher from command BSON.
// Both then call the same DBImpl entry points, so no feature exists in one
// door only.
#ifndef GATEDB_ENGINE_STORAGE_REQUESTS_H_
#define GATEDB_ENGINE_STORAGE_REQUESTS_H_

#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"
#include "gatedb/value.h"

namespace rocksdb {
class Snapshot;
}  // namespace rocksdb

namespace gatedb {
namespace auth {
class Principal;
}  // namespace auth
}  // namespace gatedb

namespace gatedb {

// "db.collection", split.
struct Namespace {
  std::string db;
  std::string coll;
  std::string full() const {
    std::string s;
    s.reserve(db.size() + 1 + coll.size());
    return s.append(db).append(1, '.').append(coll);
  }
};

// Validates database and collection names as MongoDB does.
// Errors: InvalidNamespace.
Status ValidateNamespace(const Namespace& ns);

// PROTOCOL.md's conflict policies: what a write with a stale basisVersion
// gets.
enum class ConflictMode { kReject, kFieldMerge, kSourcePriority, kAppendOnly };
const char* ConflictModeName(ConflictMode mode);

struct ConflictPolicy {
  ConflictMode mode = ConflictMode::kReject;
  // kSourcePriority: sources listed first outrank later ones; unknown rank last.
  std::vector<std::string> source_priority;
  // kFieldMerge: concurrent $inc of one field both apply.
  bool merge_increments = false;
};

// Parses {mode, sourcePriority, mergeIncrements}.  Errors: InvalidOptions,
// TypeMismatch, Location40415 (unknown field).
Status ParseConflictPolicy(const bson_t* spec, ConflictPolicy* out);
void AppendConflictPolicy(const ConflictPolicy& policy, bson_t* out, const char* key);

namespace schema {
class Validator;
}

struct CollectionOptions {
  // The store-owned version field.  Default: "version".
  std::string version_field = "version";
  // MongoDB's document validation: `validator` (query operators and
  // $jsonSchema), validationLevel strict | moderate | off, validationAction
  // error | warn.  `compiled` is set by DBImpl from `validator`.
  Document validator;
  std::string validation_level = "strict";
  std::string validation_action = "error";
  std::shared_ptr<const schema::Validator> compiled;
  ConflictPolicy conflict_policy;
  // Gated writes whose basis was read longer ago are StaleBasis.
  std::optional<int64_t> max_basis_age_ms;
};

struct CollectionInfo {
  Namespace ns;
  uint32_t id = 0;
  CollectionOptions options;
};

// One failed statement of a multi-statement write.
struct WriteError {
  size_t index = 0;
  Status status;  // with its errInfo, when it has one
};

// A transaction that the writes of several requests join (a snapshot
// transaction); engine/storage/db_impl_internal.h.  Doors hold it as a
// ScopePtr and pass it back in WriteOptionsInternal::scope.
struct WriteScope;
struct WriteScopeDeleter {
  void operator()(WriteScope* scope) const;  // rolls back what was not committed
};
using ScopePtr = std::unique_ptr<WriteScope, WriteScopeDeleter>;

struct WriteOptionsInternal {
  bool sync = false;  // j: true
  bool bypass_document_validation = false;
  // Who writes and why.  With task_id and write_seq (and no scope) the
  // write is keyed: it runs once, and a retry gets the stored result with
  // `replayed` set (engine/storage/idempotency.h).
  WriteContext context;
  // When set, every write of the request joins this one transaction and
  // nothing commits until the transaction commits.  Lock waits then fail
  // instead of retrying.
  WriteScope* scope = nullptr;
  // The command BSON the request was parsed from, when a dispatcher built
  // it: only for comparing with idempotency records of fingerprint format 1.
  const bson_t* command = nullptr;
  // Who writes (engine/auth/principal.h): the write gate checks its
  // privileges first (the action on the collection, the paths the write
  // changes, the source it claims), and the writeContext.agentId is its
  // user.  Null: the store's owner (an in-process caller without an
  // identity), who may do anything.
  std::shared_ptr<const auth::Principal> principal;
  bool keyed() const { return scope == nullptr && !context.task_id.empty() && context.write_seq.has_value(); }
};

struct InsertRequest {
  Namespace ns;
  std::vector<Document> documents;
  bool ordered = true;
  WriteOptionsInternal write;
};
// `replayed` (every write result): a keyed write whose key had already run
// it; the result is the stored one and nothing was written now.
struct InsertResult {
  bool replayed = false;
  int64_t n = 0;
  std::vector<Value> inserted_ids;  // of the documents that were inserted
  std::vector<WriteError> write_errors;
};

struct UpdateStatement {
  Document q;
  Document u;
  bool upsert = false;
  bool multi = false;
  std::optional<int64_t> basis_version;
  std::optional<Value> hint;  // an index name or key pattern, or {$natural: 1}
};
struct UpdateRequest {
  Namespace ns;
  std::vector<UpdateStatement> updates;
  bool ordered = true;
  WriteOptionsInternal write;
};
struct Upserted {
  size_t index = 0;
  Value id;
};
// A statement of the MongoDB idiom ({_id, version: v} in the filter) that
// matched nothing only because the version moved on.
struct VersionConflictEntry {
  size_t index = 0;
  Value id;
  int64_t expected_version = 0;
  int64_t current_version = 0;
};

struct UpdateWriteResult {
  bool replayed = false;
  int64_t n = 0;
  int64_t n_modified = 0;
  std::vector<Upserted> upserted;
  std::vector<WriteError> write_errors;
  std::vector<VersionConflictEntry> version_conflicts;
};

struct DeleteStatement {
  Document q;
  int64_t limit = 0;  // 0: all matching; 1: one
  std::optional<int64_t> basis_version;
  std::optional<Value> hint;
};
struct DeleteRequest {
  Namespace ns;
  std::vector<DeleteStatement> deletes;
  bool ordered = true;
  WriteOptionsInternal write;
};
struct DeleteWriteResult {
  bool replayed = false;
  int64_t n = 0;
  std::vector<WriteError> write_errors;
  std::vector<VersionConflictEntry> version_conflicts;
};

struct FindRequest {
  Namespace ns;
  Document filter;
  Document projection;  // {} = whole documents
  Document sort;        // {} = _id order
  int64_t skip = 0;
  int64_t limit = 0;    // 0 = no limit
  std::optional<Value> hint;  // an index name or key pattern, or {$natural: 1}
  // Inside a snapshot transaction: read its snapshot plus its own writes.
  WriteScope* scope = nullptr;
  // With `scope`: lock every returned document as if written (the write set
  // then holds it, so a concurrent change of it aborts one side: the cure
  // for write skew).
  bool lock_documents = false;
  // Also return each document's field-version table (FindResult::field_versions).
  bool field_versions = false;
  // A sort past Options::sort_memory_bytes spills to disk instead of failing.
  bool allow_disk_use = false;
  // The cursor's processing time limit (0: none): MaxTimeMSExpired past it.
  int64_t max_time_ms = 0;
  // Outside a transaction: read at this snapshot instead of the latest
  // (aggregate's $lookup reads where the aggregate's own find reads).
  const rocksdb::Snapshot* snapshot = nullptr;
};
struct FindResult {
  std::vector<Document> docs;
  std::vector<Document> field_versions;  // parallel to docs, when asked for
};

struct FindAndModifyRequest {
  Namespace ns;
  Document query;
  Document sort;
  Document fields;
  std::optional<Document> update;  // exactly one of update / remove
  bool remove = false;
  bool return_new = false;
  bool upsert = false;
  std::optional<int64_t> basis_version;
  std::optional<Value> hint;
  WriteOptionsInternal write;
};
struct FindAndModifyResult {
  bool replayed = false;
  std::optional<Document> value;  // null in the reply when absent
  int64_t n = 0;
  bool updated_existing = false;
  std::optional<Value> upserted_id;
};

struct CountRequest {
  Namespace ns;
  Document query;
  int64_t skip = 0;
  int64_t limit = 0;
  std::optional<Value> hint;
  WriteScope* scope = nullptr;
};

struct DistinctRequest {
  Namespace ns;
  std::string key;
  Document query;
  WriteScope* scope = nullptr;
};

// dbStats / collStats / listDatabases: what one collection holds.
struct CollectionStatsResult {
  int64_t count = 0;           // documents
  uint64_t data_bytes = 0;     // their BSON, uncompressed
  uint64_t storage_bytes = 0;  // RocksDB's estimate for their keys (files and memtables)
  uint64_t index_bytes = 0;    // the same for their secondary index entries
  int num_indexes = 1;         // _id_ included
};

struct CreateIndexesResult {
  int num_indexes_before = 0;  // _id_ included
  int num_indexes_after = 0;
  bool created_collection = false;
  bool all_existed = false;  // MongoDB's note "all indexes already exist"
};

// aggregate: a pipeline over one collection.
// The collection a collection-less aggregate's cursor names ("db.$cmd.aggregate"),
// as MongoDB's.
constexpr char kCollectionlessCursorColl[] = "$cmd.aggregate";

struct AggregateRequest {
  // ns.coll is empty for {aggregate: 1} (collectionless).
  Namespace ns;
  bool collectionless = false;
  Document pipeline;  // the stages, as a BSON array
  bool allow_disk_use = false;
  int64_t max_time_ms = 0;
  std::optional<Value> hint;  // for the leading $match
  Document let;               // {name: <expression>}: $$name in every stage
  WriteScope* scope = nullptr;
  // How $out and $merge write: who and why (not keyed: each of their
  // writes is its own), document validation, j.
  WriteOptionsInternal write;
};

// explain of a read or of a write's query part (writes are not run).
struct ExplainRequest {
  enum class Kind { kFind, kCount, kDistinct, kUpdate, kDelete, kFindAndModify };
  Kind kind = Kind::kFind;
  std::string verbosity = "allPlansExecution";  // queryPlanner, executionStats, allPlansExecution
  FindRequest find;          // kFind; for a write, its query part (limit 1: one document)
  CountRequest count;        // kCount
  DistinctRequest distinct;  // kDistinct
  Document command;          // the explained command, echoed as `command`
};

// A document lease.
struct LeaseInfo {
  std::string holder;
  int64_t expires_at_ms = 0;
  bool released = false;  // releaseLease: whether a lease was removed
};

// A snapshot transaction's limits.
struct TransactionLimits {
  int64_t lifetime_ms = 60 * 1000;        // MongoDB's transactionLifetimeLimitSeconds
  size_t max_bytes = 16 * 1024 * 1024;    // of everything it writes
  int64_t lock_timeout_ms = 1000;
};

struct JournalReadRequest {
  std::string ns;          // "db.coll", or "" for every collection
  std::string db;          // with ns "": only this database's collections ("" = all)
  uint64_t after_seq = 0;  // events with seq > after_seq
  size_t limit = 100;      // 0: no limit
  int64_t wait_ms = 0;     // when nothing is newer, wait this long for an event
};
struct JournalReadResult {
  std::vector<Document> events;
  uint64_t last_seq = 0;        // the journal's newest event
  uint64_t next_after_seq = 0;  // pass as after_seq to continue
  uint64_t first_seq = 0;       // the oldest retained event
};

struct ConflictStatsResult {
  int64_t gated_writes = 0;  // committed gated writes + refused ones
  int64_t conflicts = 0;     // refused gated writes
  double conflict_rate = 0;
  std::vector<std::pair<Value, int64_t>> hot_documents;  // most conflicts first
  std::vector<std::pair<std::string, int64_t>> agents;   // refused agents, most first
  // Writes refused by permissions (engine/auth), in all and per agent.
  int64_t unauthorized = 0;
  std::vector<std::pair<std::string, int64_t>> unauthorized_agents;  // most first
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_REQUESTS_H_
