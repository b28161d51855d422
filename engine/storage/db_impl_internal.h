// Internal to engine/storage: the parts of DBImpl shared by its .cc files.
#ifndef GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_
#define GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>

#include <rocksdb/perf_level.h>

#include "engine/index/index_spec.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/fingerprint.h"
#include "engine/storage/txn_pool.h"
#include "engine/storage/write_reply.h"
#include "engine/util/rocks_status.h"

namespace gatedb {

// One secondary index of a collection, as the write path and the planner
// use it: the definition, its compiled partial filter, and the paths whose
// change can change its keys.
struct IndexEntry {
  index::IndexSpec spec;
  std::unique_ptr<query::Matcher> partial;  // null: none
  std::vector<std::string> watched_paths;   // key fields and partial filter paths
};

// A collection's secondary indexes: an immutable snapshot, replaced whole
// (copy on write) by index creation, drop, and the first multikey write.
struct IndexCatalog {
  std::vector<std::shared_ptr<const IndexEntry>> entries;
};

// Checks `opts`' validation settings and compiles its validator into
// opts->compiled.  BadValue for an unknown level or action; a bad validator
// gives schema::Validator::Parse's error.
Status CompileValidator(CollectionOptions* opts);

// MongoDB's document validation of a write's new document (`old_doc`: the
// document it replaces, null for an insert): skipped when the collection
// has no validator, validationLevel is off, the write bypasses validation,
// or the level is moderate and the old document was already invalid; a
// failure is DocumentValidationFailure (121) with errInfo.details unless
// validationAction is warn.
Status CheckValidation(const CollectionOptions& opts, const bson_t* old_doc, const bson_t* doc,
                       const WriteOptionsInternal& w);

// What a query plan did, for explain.
// The filter's verdict on `doc`, with $expr's evaluation errors reported
// (MongoDB fails the operation; Matcher::Matches would say "no match").
inline StatusOr<bool> MatchOrError(const query::Matcher& m, const bson_t* doc) {
  if (!m.CanFail()) return m.Matches(doc);
  return m.MatchesOrError(doc);
}

// A chosen query plan (IDHACK, COLLSCAN, IXSCAN or OR), pulled one
// candidate document at a time (db_impl_plan.cc).  Candidates are not yet
// matched against the filter.
class DBImpl::PlanExecutor {
 public:
  virtual ~PlanExecutor() = default;
  // The next candidate: true with *key (the document's key) and *rec valid
  // until the next call; false at the end.
  virtual StatusOr<bool> Next(std::string_view* key, RecordView* rec) = 0;
  // Every document it yields matches the whole filter (an exact index
  // scan, index::IndexScan::exact): the caller need not match them again.
  virtual bool exact() const { return false; }
};

struct DBImpl::PlanStats {
  // Choose the plan and stop: explain's queryPlanner verbosity, which (as
  // MongoDB's) does not run the query.
  bool plan_only = false;
  Document plan;                 // the winning plan's stage tree (below SORT/SKIP/LIMIT)
  std::vector<Document> rejected;
  int64_t keys_examined = 0;
  int64_t docs_examined = 0;
};

struct DBImpl::Collection : std::enable_shared_from_this<DBImpl::Collection> {
  CollectionInfo info;  // ns and id are constant; info.options is as created

  // The secondary indexes in force; a write reads them when it stages a
  // document (after the collection's drop lock is held).
  std::shared_ptr<const IndexCatalog> indexes() const { return std::atomic_load(&index_catalog); }
  void set_indexes(std::shared_ptr<const IndexCatalog> c) { std::atomic_store(&index_catalog, std::move(c)); }
  std::shared_ptr<const IndexCatalog> index_catalog = std::make_shared<IndexCatalog>();
  // Lock order: index_ddl_mu, then drop_mu, then index_mu.
  // Serializes index creation and removal (their checks and registration).
  Mutex index_ddl_mu;
  // Serializes replacing the index catalog snapshot (short: writers take it
  // while holding drop_mu shared, to record a first multikey document).
  Mutex index_mu;

  // The options in force (collMod may replace them; a write uses the
  // options it read at its start).
  std::shared_ptr<const CollectionOptions> opts() const { return std::atomic_load(&options); }
  void set_opts(CollectionOptions o) {
    std::atomic_store(&options, std::shared_ptr<const CollectionOptions>(
                                    std::make_shared<CollectionOptions>(std::move(o))));
  }
  std::shared_ptr<const CollectionOptions> options;

  // Writers hold it shared for the length of a write; drop takes it
  // exclusively, so no write lands in a dropped collection.
  SharedMutex drop_mu;
  bool dropped GATEDB_GUARDED_BY(drop_mu) = false;
};

// What gates a single-document write.
struct WriteGate {
  std::optional<int64_t> basis_version;  // the write protocol's basis
  bool idiom = false;                    // the filter holds a version equality
  // The paths the writer's principal may change here (engine/auth): unset
  // for every path.
  std::optional<std::vector<std::string>> writable;
  bool gated() const { return basis_version.has_value() || idiom; }
};

// What a conflict policy found when it refused a stale write.
struct RefusalDetail {
  const char* policy = "reject";
  // The conflicting paths, when the policy computed them (fieldMerge).
  std::optional<std::vector<std::string>> fields;
  // sourcePriority: the writer's and the last writer's sources.
  bool by_source = false;
  std::string source;
  std::string last_source;
};

// A journal event built during a write, numbered at commit.  Either a
// document (`event`), whose journal value CommitWithEvents encodes before
// its lock, or, for a write's own event, the value itself (`prepared`:
// wal::Journal::BeginWriterValue, then EncodeWriteEvent, which also names
// the write's snapshot transaction).
struct PendingEvent {
  Document event;
  std::string doc_key;
  std::string value;  // the journal value
  bool prepared = false;
};

struct DBImpl::WriteOutcome {
  bool matched = false;   // a document matched (and was locked)
  bool modified = false;  // it changed (update) or was removed (delete)
  bool raced = false;     // upsert: another writer inserted this _id first
  bool want_before = false;
  bool want_after = false;
  Document before;  // the old document, when want_before
  Document after;   // the new document, when want_after
  std::optional<Value> upserted_id;
};

// RocksDB counts every key comparison, block read and the like in a
// thread-local PerfContext unless told not to (its default PerfLevel is
// kEnableCount); from a shared librocksdb each count is two TLS look-ups
// through __tls_get_addr, about a tenth of a point read.  gatedb reads
// none of these counters: the threads that read or write through the
// engine turn them off, where a read or a RocksDB transaction starts.  (A
// host that wants RocksDB's perf context on such a thread sets its level
// again after the call.)
inline void QuietRocksPerfCounters() { rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable); }

// A buffer for one point read's value that keeps its capacity on this
// thread from one read to the next.  RocksDB copies a value found in the
// memtable into the caller's string (a PinnableSlice's own string), and a
// new one for every read of a ~1 KB document costs an allocation and a free.
// A read while the thread's buffer is in use (a nested one) gets a buffer of
// its own; a buffer that grew past kMaxKeptBytes is not kept.  T:
// std::string or rocksdb::PinnableSlice (reset, unpinning any block, when
// the read is done).
template <typename T>
class ReadBuffer {
 public:
  static constexpr size_t kMaxKeptBytes = 1u << 20;

  ReadBuffer() : buf_(busy_ ? &own_ : &kept_) { busy_ = busy_ || buf_ == &kept_; }
  ~ReadBuffer() {
    Reset(buf_);
    if (buf_ == &kept_) busy_ = false;
  }
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;

  T* get() { return buf_; }

 private:
  static void Reset(std::string* s) {
    if (s->capacity() > kMaxKeptBytes) std::string().swap(*s);
    s->clear();
  }
  static void Reset(rocksdb::PinnableSlice* p) {
    p->Reset();
    Reset(p->GetSelf());
  }

  static inline thread_local T kept_;
  static inline thread_local bool busy_ = false;
  T own_;
  T* buf_;
};

// A pessimistic RocksDB transaction that rolls back unless committed.  Its
// locking reads and its commit note whether they failed on a lock conflict
// worth retrying at once (RocksDB's Busy, TryAgain or Deadlock: another
// writer got there first); a lock wait that timed out is not one (retrying
// would multiply the wait), nor is any other error.
class Txn {
 public:
  // A transaction from `pool` (returned to it when this is destroyed).
  Txn(TxnPool* pool, const rocksdb::WriteOptions& wo,
      const rocksdb::TransactionOptions& to = rocksdb::TransactionOptions())
      : pool_(pool), txn_((QuietRocksPerfCounters(), pool->Begin(wo, to))) {}
  // Rolls back now (idempotent).
  void Abort() {
    if (!done_) {
      done_ = true;
      txn_->Rollback().PermitUncheckedError();
    }
  }
  bool done() const { return done_; }
  ~Txn() {
    if (!done_) txn_->Rollback().PermitUncheckedError();
    pool_->Recycle(txn_.release());
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  rocksdb::Transaction* operator->() { return txn_.get(); }
  rocksdb::Transaction* get() { return txn_.get(); }

  // Locks `key` and reads its latest value.  NotFound is OK with *found
  // false.
  Status GetForUpdate(rocksdb::ColumnFamilyHandle* cf, const rocksdb::Slice& key, std::string* value, bool* found) {
    rocksdb::Status rs = txn_->GetForUpdate(rocksdb::ReadOptions(), cf, key, value);
    *found = rs.ok();
    if (rs.IsNotFound()) return Status::OK();
    Note(rs);
    return FromRocks(rs);
  }
  // Commits; after a failure the transaction is rolled back.
  Status Commit() {
    done_ = true;
    rocksdb::Status s = txn_->Commit();
    if (!s.ok()) {
      Note(s);
      txn_->Rollback().PermitUncheckedError();
    }
    return FromRocks(s);
  }
  // The last failed lock or commit was a conflict worth retrying at once.
  bool lock_conflict() const { return lock_conflict_; }
  void clear_lock_conflict() { lock_conflict_ = false; }

 private:
  void Note(const rocksdb::Status& s) { lock_conflict_ = s.IsBusy() || s.IsTryAgain() || s.IsDeadlock(); }
  TxnPool* const pool_;
  std::unique_ptr<rocksdb::Transaction> txn_;
  bool done_ = false;
  bool lock_conflict_ = false;
};

// One transaction that a whole request (or several) writes through; its
// journal events are numbered when it commits (DBImpl::CommitScope): a keyed
// write's, or a snapshot transaction's.
struct WriteScope {
  WriteScope(TxnPool* pool, const rocksdb::WriteOptions& wo,
             const rocksdb::TransactionOptions& to = rocksdb::TransactionOptions())
      : txn(pool, wo, to), sync(wo.sync) {}
  Txn txn;
  const bool sync;  // its commit is durable
  std::vector<PendingEvent> events;
  // Set for a snapshot transaction: its id (recorded as `txn` in every
  // journal event it commits); reads then use the transaction's snapshot.
  std::string txn_id;
  // The documents it wrote and the index catalog each one's first write
  // maintained.  An index registered while the scope is open cannot see the
  // scope's uncommitted documents in its build: they get their entries from
  // DBImpl::CatchUpIndexes, before the scope's next read and at its commit.
  // An index dropped while it is open loses the entries the scope staged
  // for it there too.
  struct IndexedWrite {
    std::shared_ptr<DBImpl::Collection> coll;
    std::shared_ptr<const IndexCatalog> seen;
  };
  std::map<std::string, IndexedWrite> indexed_writes;  // by document key
  // Each collection's catalog as of the last catch-up (or first write): when
  // none changed, a catch-up has nothing to do.
  std::map<const DBImpl::Collection*, std::shared_ptr<const IndexCatalog>> synced_catalogs;
  // Set when a cursor was opened in this scope: its cursors read through
  // the transaction and die with it (commit, abort, destruction).
  CursorRegistry* cursors = nullptr;
};

// The refusal of any update or delete in an appendOnly collection.
Status AppendOnlyError(const Namespace& ns);
// The filter's matcher, or null when the filter is {_id: v} alone (a point
// read by _id's key is then the whole match: equal _id values share a key).
// Errors: the filter's parse errors.
StatusOr<std::unique_ptr<query::Matcher>> ParseFilter(const bson_t* filter);
// NoMatchingDocument: a basisVersion names a document of a collection that
// does not exist.
Status MissingCollectionBasis(const Namespace& ns);
// A basisVersion names one existing document: BadValue with multi (or a
// delete without limit 1) or with upsert.
Status CheckBasisUse(const std::optional<int64_t>& basis, bool multi, bool upsert);

// How many times a single-document write retries a lock conflict before
// reporting WriteConflict.
constexpr int kMaxWriteRetries = 20;

// Waits before retry number `attempt` (from 0): yields first, then sleeps
// 50 us doubling up to about 50 ms.
void BackoffBeforeRetry(int attempt);

// The one retry skeleton of single-document writes: runs attempt(txn) in
// the scope's transaction, or in a fresh one per try, and runs it again
// (with backoff, up to kMaxWriteRetries times) when it failed on a lock
// conflict worth retrying.  Inside a scope nothing is retried: the scope
// holds other locks, and its caller decides.
template <typename Fn>
Status WithLockRetries(TxnPool* pool, const rocksdb::WriteOptions& wo, WriteScope* scope, Fn&& attempt) {
  for (int n = 0;; ++n) {
    std::optional<Txn> local;
    if (scope == nullptr) local.emplace(pool, wo);
    Txn& txn = scope != nullptr ? scope->txn : *local;
    txn.clear_lock_conflict();
    Status s = attempt(txn);
    if (s.ok() || scope != nullptr || !txn.lock_conflict() || n >= kMaxWriteRetries) return s;
    BackoffBeforeRetry(n);
  }
}

template <typename Result, typename Request, typename Exec, typename Encode>
StatusOr<Result> DBImpl::RunKeyedRequest(const Request& req, const WriteOptionsInternal& base, Exec&& exec,
                                         Encode&& encode) {
  KeyedCall call;
  call.context = &base.context;
  call.principal = base.principal.get();
  call.sync = base.sync || options_.sync;
  call.ns = req.ns.full();
  call.fingerprint = RequestFingerprint(req);
  call.legacy_fingerprint = [&req] { return LegacyFingerprint(req); };
  Result result;
  call.run = [&](WriteScope* scope, Document* reply, bool* took_effect) -> Status {
    WriteOptionsInternal w = base;
    w.scope = scope;
    ASSIGN_OR_RETURN(result, exec(w));
    encode(result, reply->mutable_bson());
    BSON_APPEND_DOUBLE(reply->mutable_bson(), "ok", 1.0);
    // It inserted, matched, upserted or removed something.  A write refused
    // as a whole (conflict, validation) leaves nothing, so a retry with a
    // fresh basis can run under the same key.
    *took_effect = result.n > 0;
    return Status::OK();
  };
  bool replayed = false;
  ASSIGN_OR_RETURN(Document reply, RunKeyed(call, nullptr, &replayed));
  if (!replayed) return result;
  Result stored;
  RETURN_IF_ERROR(DecodeReply(reply.bson(), &stored));
  stored.replayed = true;
  return stored;
}

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_
