// DBImpl: the write path.  Every write of every door ends here: one
// document per pessimistic RocksDB transaction (an insert batch shares one),
// committed together with its journal event, after the version gate.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

#include "engine/document/diff.h"
#include "engine/document/validate.h"
#include "engine/index/planner.h"
#include "engine/schema/validator.h"
#include "engine/keys/key_codec.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/field_versions.h"
#include "engine/storage/idempotency.h"
#include "engine/storage/record.h"
#include "engine/util/rocks_status.h"
#include "engine/storage/write_events.h"
#include "engine/update/update_driver.h"
#include "wal/journal.h"

namespace gatedb {

namespace {

Status DuplicateKeyError(const Namespace& ns, const bson_value_t& id) {
  Value v(id);
  bson_t* ei = bson_new();
  bson_t sub;
  BSON_APPEND_DOCUMENT_BEGIN(ei, "keyPattern", &sub);
  BSON_APPEND_INT32(&sub, "_id", 1);
  bson_append_document_end(ei, &sub);
  BSON_APPEND_DOCUMENT_BEGIN(ei, "keyValue", &sub);
  v.AppendTo(&sub, "_id");
  bson_append_document_end(ei, &sub);
  return Status(ErrorCode::kDuplicateKey,
                "E11000 duplicate key error collection: " + ns.full() + " index: _id_ dup key: { _id: " +
                    v.ToJson() + " }",
                std::make_shared<const Document>(Document::Adopt(ei)));
}

// A write's own journal event, encoded into its value here, named after the
// write's snapshot transaction if it is in one (EncodeWriteEvent's other
// arguments follow the document key and the write's options).
template <typename... EventArgs>
PendingEvent WriterEvent(std::string doc_key, const WriteOptionsInternal& w, EventArgs&&... args) {
  PendingEvent ev;
  ev.doc_key = std::move(doc_key);
  wal::Journal::BeginWriterValue(ev.doc_key, &ev.value);
  EncodeWriteEvent(&ev.value, w.scope != nullptr ? std::string_view(w.scope->txn_id) : std::string_view(),
                   std::forward<EventArgs>(args)...);
  ev.prepared = true;
  return ev;
}

}  // namespace

Status CheckValidation(const CollectionOptions& opts, const bson_t* old_doc, const bson_t* doc,
                       const WriteOptionsInternal& w) {
  if (!opts.compiled || w.bypass_document_validation || opts.validation_level == "off") return Status::OK();
  if (opts.validation_level == "moderate" && old_doc != nullptr && !opts.compiled->Validate(old_doc, nullptr)) {
    return Status::OK();  // moderate: documents already invalid may stay so
  }
  Status s = opts.compiled->Check(doc);
  if (!s.ok() && opts.validation_action == "warn") return Status::OK();
  return s;
}

namespace {

// Validates a document for insertion and gives it its _id (first) and the
// version field at `version`; `paths` gets the stamped document's top-level
// names but the version's (TopLevelPaths), for the journal.  The input is
// walked once, in full; the stamped copy holds its fields' bytes again, so
// only what stamping can change is checked there: the size, _id and the
// version field.
Status PrepareNewDocument(const bson_t* doc, const std::string& version_field, int64_t version,
                          Document* out, std::vector<std::string>* paths) {
  TopLevelSummary top;
  RETURN_IF_ERROR(ValidateForStorage(doc, version_field, &top));
  std::optional<Document> with_id;
  if (!top.id_first) with_id = EnsureId(doc);
  const bson_t* src = with_id ? with_id->bson() : doc;
  bson_t* stamped = bson_sized_new(src->len + 16 + version_field.size());
  // The field's offset holds in `doc` only, not in EnsureId's copy.
  SetVersionField(src, version_field, version, top.probe, with_id ? 0 : top.probe_offset, stamped);
  *out = Document::Adopt(stamped);
  // _id first (kept or made by EnsureId), then the rest in their order.
  paths->clear();
  paths->reserve(top.rest.size() + 1);
  paths->emplace_back("_id");
  for (std::string& name : top.rest) paths->push_back(std::move(name));
  Status s = ValidateStampedDocument(out->bson(), version_field);
  assert(s.code() == ValidateForStorage(out->bson()).code());
  assert(!s.ok() || *paths == TopLevelPaths(out->bson(), version_field));
  return s;
}

}  // namespace

namespace {

// The paths w's principal may change with `action` in `ns`: unset for
// every path (some granting privilege is unrestricted, or there is no
// principal: the owner).
std::optional<std::vector<std::string>> WritablePathsOf(const WriteOptionsInternal& w, auth::Action action,
                                                        const Namespace& ns) {
  if (!w.principal) return std::nullopt;
  return w.principal->WritablePaths(action, auth::Target::Collection(ns.db, ns.coll));
}

}  // namespace

void BackoffBeforeRetry(int attempt) {
  if (attempt < 3) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50 << std::min(attempt, 10)));
  }
}

Status AppendOnlyError(const Namespace& ns) {
  return Status(ErrorCode::kAppendOnlyCollection,
                "collection " + ns.full() +
                    " is append-only (conflictPolicy appendOnly): updates, replacements and deletes are refused");
}

namespace {

Status BasisWithMultiError() {
  return Status(ErrorCode::kBadValue,
                "basisVersion names one document; it cannot be used in a statement with multi: true");
}

}  // namespace

// Runs statement(i) for each statement in order, collecting the errors; an
// ordered request stops at the first.
template <typename Fn>
void RunStatements(size_t n, bool ordered, std::vector<WriteError>* errors, Fn&& statement) {
  for (size_t i = 0; i < n; ++i) {
    Status s = statement(i);
    if (s.ok()) continue;
    errors->push_back(WriteError{i, std::move(s)});
    if (ordered) break;
  }
}

StatusOr<std::unique_ptr<query::Matcher>> ParseFilter(const bson_t* filter) {
  bson_value_t id;
  if (IdOnlyFilter(filter, &id)) return std::unique_ptr<query::Matcher>();
  return query::Matcher::Parse(filter);
}

Status MissingCollectionBasis(const Namespace& ns) {
  return Status(ErrorCode::kNoMatchingDocument,
                "basisVersion names a document of " + ns.full() + ", which does not exist");
}

Status DBImpl::StatementCandidates(const Collection& coll, const bson_t* filter, const query::Matcher* matcher,
                                   size_t limit, const WriteOptionsInternal& w, std::vector<std::string>* keys,
                                   const index::Hint* hint) {
  // A filter that pins _id names its one candidate: the locked read is the
  // only read needed.
  bson_value_t id;
  if ((hint == nullptr || hint->empty()) && PointIdFromFilter(filter, &id)) {
    keys->push_back(keys::EncodeDocKey(coll.info.id, id));
    return Status::OK();
  }
  if (w.scope != nullptr) RETURN_IF_ERROR(CatchUpIndexes(w.scope));
  return CandidateKeys(coll, filter, *matcher, limit, keys, w.scope ? &w.scope->txn : nullptr, hint);
}

Status CheckBasisUse(const std::optional<int64_t>& basis, bool multi, bool upsert) {
  if (basis && multi) return BasisWithMultiError();
  if (basis && upsert) {
    return Status(ErrorCode::kBadValue, "basisVersion names an existing document; it cannot be combined with upsert");
  }
  return Status::OK();
}

StatusOr<WriteGate> DBImpl::OpenGate(const Collection& coll, const bson_t* filter,
                                     const std::optional<int64_t>& basis, bool multi, bool upsert,
                                     const WriteOptionsInternal& w) {
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  if (opts->conflict_policy.mode == ConflictMode::kAppendOnly) return AppendOnlyError(coll.info.ns);
  RETURN_IF_ERROR(CheckBasisUse(basis, multi, upsert));
  WriteGate gate;
  gate.basis_version = basis;
  gate.idiom = HasVersionEquality(filter, opts->version_field);
  gate.writable = WritablePathsOf(w, auth::Action::kUpdate, coll.info.ns);
  RETURN_IF_ERROR(CheckBasisAge(coll, filter, gate, w));
  return gate;
}

StatusOr<const WriteOptionsInternal*> DBImpl::AdmitWrite(const Namespace& ns,
                                                         std::initializer_list<auth::Action> actions,
                                                         const WriteOptionsInternal& req,
                                                         std::optional<WriteOptionsInternal>* admitted) {
  if (!req.principal) return &req;
  const auth::Principal& p = *req.principal;
  admitted->emplace(req);
  WriteOptionsInternal& w = **admitted;
  Status agent = p.ClaimAgent(&w.context.agent_id, auth::ActionName(*actions.begin()), ns.full());
  if (!agent.ok()) {  // recorded as the real agent's refusal
    return RefuseUnauthorized(ns, {}, nullptr, nullptr, w, *actions.begin(), "", agent.reason());
  }
  const auth::Target target = auth::Target::Collection(ns.db, ns.coll);
  for (auth::Action a : actions) {
    if (!p.Can(a, target)) {
      return RefuseUnauthorized(ns, {}, nullptr, nullptr, w, a, "",
                                "not authorized on " + ns.db + " to " + auth::ActionName(a) + " in " + ns.full());
    }
  }
  for (auth::Action a : actions) {
    if (!p.MaySpeakFor(a, target, w.context.source)) {
      return RefuseUnauthorized(ns, {}, nullptr, nullptr, w, a, "",
                                "agent \"" + p.user() + "\" does not speak for source \"" + w.context.source +
                                    "\" on " + ns.full() + " (no privilege of its roles lists it)");
    }
  }
  return &w;
}

Status DBImpl::RefuseUnauthorized(const Namespace& ns, std::string_view doc_key, const RecordView* rec,
                                  const WriteGate* gate, const WriteOptionsInternal& w, auth::Action action,
                                  const std::string& path, const std::string& why) {
  bson_value_t id;
  ConflictInfo info;
  info.code = ErrorCode::kUnauthorized;
  info.ns = ns.full();
  if (rec != nullptr && GetId(&rec->doc, &id)) info.id = Value(id);
  if (gate != nullptr) info.basis_version = gate->basis_version;
  info.gated = gate != nullptr && gate->gated();
  info.current_version = rec ? rec->version : 0;
  info.reason = why;
  info.context = &w.context;
  info.now_ms = NowMs();
  info.policy = "permissions";
  info.action = auth::ActionName(action);
  info.path = path;
  std::vector<PendingEvent> events(1);
  events[0].event = BuildConflictEvent(info);
  events[0].doc_key = std::string(doc_key);
  // Committed on its own, as a version conflict's event is (RefuseGatedWrite).
  Txn txn(txn_pool_.get(), RocksWriteOptions(w));
  RETURN_IF_ERROR(CommitWithEvents(txn, &events));
  return auth::UnauthorizedError(w.context.agent_id, info.action, info.ns, why, path.empty() ? nullptr : &path,
                                 w.context.source.empty() ? nullptr : &w.context.source,
                                 info.id ? &*info.id : nullptr);
}

Status DBImpl::CheckWritablePaths(const Collection& coll, std::string_view doc_key, const RecordView* rec,
                                  const WriteGate& gate, const WriteOptionsInternal& w, auth::Action action,
                                  const std::vector<std::string>& paths) {
  if (!gate.writable) return Status::OK();
  for (const std::string& path : paths) {
    if (auth::PathAllowed(gate.writable, path)) continue;
    const std::string shown = path.empty() ? std::string("(the whole document)") : path;
    return RefuseUnauthorized(coll.info.ns, doc_key, rec, &gate, w, action, path,
                              "agent \"" + w.context.agent_id + "\" may not change " + shown + " in " +
                                  coll.info.ns.full() + " (its roles allow " + auth::ActionName(action) +
                                  " of other paths only)");
  }
  return Status::OK();
}

Status DBImpl::CheckInsertedPaths(const Collection& coll, std::string_view doc_key, const WriteGate& gate,
                                  const WriteOptionsInternal& w, const std::vector<std::string>& paths) {
  if (!gate.writable) return Status::OK();  // the paths are listed only when some are off limits
  std::vector<std::string> fields(paths);
  fields.erase(std::remove(fields.begin(), fields.end(), std::string("_id")), fields.end());
  return CheckWritablePaths(coll, doc_key, nullptr, gate, w, auth::Action::kInsert, fields);
}

Status DBImpl::CommitWithEvents(Txn& txn, std::vector<PendingEvent>* events) {
  // A durable commit is written (WAL and memtable) under commit_mu_ without
  // its fsync, then made durable after the mutex is released: other writers
  // commit meanwhile, and one fsync covers every commit before it.  The
  // caller is answered only after its fsync.
  rocksdb::WriteOptions* wo = txn->GetWriteOptions();
  const bool durable = wo->sync;
  if (durable) {
    rocksdb::WriteOptions relaxed = *wo;
    relaxed.sync = false;
    txn->SetWriteOptions(relaxed);
  }
  // Encoded outside commit_mu_: under it, each event only gets its seq.
  for (PendingEvent& e : *events) {
    if (!e.prepared) wal::Journal::PrepareWriterEvent(e.event.bson(), e.doc_key, &e.value);
  }
  {
    // A durable commit is counted while it waits for and holds commit_mu_
    // (a durable request already is, from its start), so that a
    // group-commit leader can let it land before its fsync.  Plain commits
    // are left out of the count: a plain commit that meets an fsync only
    // waits for it.
    DurableWrite in_flight(this, durable);
    MutexLock lock(&commit_mu_);
    std::vector<uint64_t> seqs;
    seqs.reserve(events->size());
    Status s;
    for (PendingEvent& e : *events) {
      uint64_t seq = journal_->AllocateSeq();
      seqs.push_back(seq);
      // No per-document index entry: the record's field-version table
      // answers what the index did (conflictingFields), one key cheaper.
      s = journal_->AddPreparedToTransaction(txn.get(), seq, e.doc_key, &e.value);
      if (!s.ok()) break;
    }
    if (s.ok()) s = txn.Commit();
    if (!s.ok()) {
      for (auto it = seqs.rbegin(); it != seqs.rend(); ++it) journal_->ReleaseSeq(*it);
      return s;
    }
    if (!seqs.empty()) journal_->Published(seqs.back());
  }
  return durable ? SyncCommitted(true) : Status::OK();
}

// The durable write this thread has counted (at most one at a time).
thread_local DBImpl::DurableWrite* DBImpl::DurableWrite::current_ = nullptr;

DBImpl::DurableWrite::DurableWrite(DBImpl* db, bool durable) {
  if (!durable || current_ != nullptr) return;
  db_ = db;
  current_ = this;
  db_->durable_in_flight_.fetch_add(1, std::memory_order_acq_rel);
}

void DBImpl::DurableWrite::Release() {
  if (db_ == nullptr) return;
  DBImpl* db = db_;
  db_ = nullptr;
  current_ = nullptr;
  if (db->durable_in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    MutexLock l(&db->sync_mu_);
    // Only the leader waits for this; the followers sleep on until its
    // fsync ends.
    if (db->sync_leader_waiting_) db->sync_leader_cv_.Signal();
  }
}

void DBImpl::DurableWrite::ReleaseCurrent(const DBImpl* db) {
  if (current_ != nullptr && current_->db_ == db) current_->Release();
}

Status DBImpl::SyncCommitted(bool sync) {
  // This thread's write is done: the leader must not wait for it (it may be
  // the leader, or wait for the leader's fsync).
  DurableWrite::ReleaseCurrent(this);
  if (!sync && !options_.sync) return Status::OK();
  // Everything up to this RocksDB sequence is committed, hence written to
  // the WAL file: it is what the caller needs durable.
  const uint64_t needed = db_->GetLatestSequenceNumber();
  uint64_t target = 0;
  {
    MutexLock l(&sync_mu_);
    for (;;) {
      if (synced_rocks_seq_ >= needed) {
        ++durable_acks_;
        return Status::OK();
      }
      if (!syncing_) break;
      sync_cv_.Wait(&sync_mu_);  // the running fsync may cover us; look again after it
    }
    syncing_ = true;
    // Group commit: the fsync below is a write in RocksDB's write queue, and
    // a commit that reaches the queue during it waits for it while holding
    // commit_mu_ (so every other committer waits too).  The leader therefore
    // first lets the durable writes in flight commit, so that this one fsync
    // covers them instead of each starting its own: writes still being
    // prepared too (with many writers, most of them are), for at most as
    // long as an fsync takes.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(last_sync_micros_);
    sync_leader_waiting_ = true;
    while (durable_in_flight_.load(std::memory_order_acquire) > 0) {
      if (!sync_leader_cv_.WaitUntil(&sync_mu_, deadline)) break;
    }
    sync_leader_waiting_ = false;
    target = db_->GetLatestSequenceNumber();  // >= needed
  }
  // An empty batch written with sync fsyncs the WAL through RocksDB's write
  // path, which returns a stored write error cleanly; SyncWAL() after a
  // failed WAL append trips an assertion inside RocksDB (found by the
  // fault-injection tests).
  rocksdb::WriteOptions sync_wo;
  sync_wo.sync = true;
  rocksdb::WriteBatch empty;
  const auto sync_start = std::chrono::steady_clock::now();
  rocksdb::Status rs = db_->GetBaseDB()->Write(sync_wo, &empty);
  const int64_t took =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - sync_start).count();
  {
    MutexLock l(&sync_mu_);
    syncing_ = false;
    last_sync_micros_ = std::clamp<int64_t>(took, 1, kGroupCommitWaitMicros);
    if (rs.ok()) {
      synced_rocks_seq_ = std::max(synced_rocks_seq_, target);
      ++wal_syncs_;
      ++durable_acks_;
    }
  }
  sync_cv_.SignalAll();
  if (!rs.ok()) {
    return Status(ErrorCode::kWriteConcernFailed,
                  "the write was applied but could not be made durable (fsync of the write-ahead log failed: " +
                      rs.ToString() + "); it may not survive a power loss");
  }
  return Status::OK();
}

DBImpl::GroupCommitCounts DBImpl::GroupCommitStats() {
  GroupCommitCounts c;
  MutexLock l(&sync_mu_);
  c.durable_acks = durable_acks_;
  c.wal_syncs = wal_syncs_;
  c.in_flight = durable_in_flight_.load(std::memory_order_acquire);
  return c;
}

Status DBImpl::FinishWrite(const WriteOptionsInternal& w, Txn& txn, std::vector<PendingEvent>* events) {
  if (w.scope != nullptr) {
    for (PendingEvent& e : *events) w.scope->events.push_back(std::move(e));
    events->clear();
    return Status::OK();
  }
  return CommitWithEvents(txn, events);
}

void WriteScopeDeleter::operator()(WriteScope* scope) const {
  if (scope->cursors != nullptr) scope->cursors->KillOwnedBy(scope);
  delete scope;
}

ScopePtr DBImpl::BeginScope(bool sync) {
  WriteOptionsInternal plain;
  plain.sync = sync;
  return ScopePtr(new WriteScope(txn_pool_.get(), RocksWriteOptions(plain)));
}

ScopePtr DBImpl::BeginTransaction(const std::string& txn_id, const TransactionLimits& limits, bool sync) {
  WriteOptionsInternal plain;
  plain.sync = sync;
  rocksdb::TransactionOptions to;
  to.set_snapshot = true;
  to.lock_timeout = limits.lock_timeout_ms;
  to.expiration = limits.lifetime_ms;
  to.max_write_batch_size = limits.max_bytes;
  ScopePtr scope(new WriteScope(txn_pool_.get(), RocksWriteOptions(plain), to));
  scope->txn_id = txn_id;
  return scope;
}

Status DBImpl::CommitScope(WriteScope* scope, const std::string* idem_key, const IdempotencyRecord* record) {
  if (!scope->txn_id.empty()) {
    // Every event of a transaction names it.
    for (PendingEvent& e : scope->events) {
      if (e.prepared) continue;  // a write's own event: named when encoded (WriterEvent)
      bson_t* with = bson_copy(e.event.bson());
      BSON_APPEND_UTF8(with, "txn", scope->txn_id.c_str());
      e.event = Document::Adopt(with);
    }
  }
  if (record != nullptr) {
    RETURN_IF_ERROR(
        FromRocks(scope->txn->Put(idempotency_->cf(), *idem_key, IdempotencyLog::EncodeRecord(*record))));
  }
  // No index may be registered or dropped between the catch-up and the
  // commit: hold the drop locks of the collections the scope wrote.
  std::vector<Collection*> colls;
  for (const auto& [coll, cat] : scope->synced_catalogs) colls.push_back(const_cast<Collection*>(coll));
  std::sort(colls.begin(), colls.end());
  std::vector<std::unique_ptr<ReaderLock>> held;
  for (Collection* c : colls) held.push_back(std::make_unique<ReaderLock>(&c->drop_mu));
  RETURN_IF_ERROR(CatchUpIndexes(scope));
  return CommitWithEvents(scope->txn, &scope->events);
}

Status DBImpl::RefuseGatedWrite(const Collection& coll, std::string_view doc_key, const RecordView* rec,
                                const WriteGate& gate, const WriteOptionsInternal& w, ErrorCode code,
                                const std::string& why, const RefusalDetail* detail) {
  const bson_t* current = rec ? &rec->doc : nullptr;
  const int64_t current_version = rec ? rec->version : 0;
  std::vector<std::string> conflicting;
  bool complete = false;
  if (detail != nullptr && detail->fields) {
    conflicting = *detail->fields;
    complete = true;
  } else if (gate.basis_version && rec != nullptr && current_version > *gate.basis_version) {
    if (rec->tracks_field_versions) {
      // The field-version table says what changed after the basis, exactly
      // (no table: nothing but the version changed since the insert).
      if (rec->has_field_versions) conflicting = ChangedSince(&rec->field_versions, *gate.basis_version);
      complete = !(conflicting.size() == 1 && conflicting[0].empty());
      if (!complete) conflicting.clear();
    } else if (!doc_key.empty()) {
      // A record of the first format has no table: the per-document journal
      // index written with it holds its history.
      std::vector<Document> history;
      if (journal_->EventsForDocument(doc_key, *gate.basis_version, &history).ok() && !history.empty()) {
        complete = true;
        for (const Document& e : history) AppendChangedPaths(e.bson(), &conflicting);
      }
    }
  }
  bson_value_t id;
  bool has_id = current != nullptr && GetId(current, &id);
  ConflictInfo info;
  info.code = code;
  info.ns = coll.info.ns.full();
  info.id = has_id ? std::optional<Value>(Value(id)) : std::nullopt;
  info.basis_version = gate.basis_version;
  info.current_version = current_version;
  info.current = current;
  info.conflicting_fields = std::move(conflicting);
  info.conflicting_fields_complete = complete;
  bson_t last_writer;
  if (rec && rec->has_writer) {
    rec->Writer(&last_writer);
    info.last_writer = &last_writer;
  }
  info.reason = why;
  info.context = &w.context;
  info.now_ms = NowMs();
  info.policy = detail ? detail->policy : ConflictModeName(coll.opts()->conflict_policy.mode);
  if (detail && detail->by_source) {
    info.by_source = true;
    info.source = detail->source;
    info.last_source = detail->last_source;
  }

  // The conflict event: it changes no data, but it is part of the record.
  PendingEvent ev;
  ev.event = BuildConflictEvent(info);
  ev.doc_key = std::string(doc_key);
  std::vector<PendingEvent> events;
  events.push_back(std::move(ev));
  // Committed on its own, even inside a transaction or a keyed write's
  // scope: the refusal makes those abort (nothing of them is kept), but the
  // attempt happened and conflictStats counts it.  Only journal keys are
  // written, without locks, so this cannot wait on the scope's own locks.
  Txn txn(txn_pool_.get(), RocksWriteOptions(w));
  Status s = CommitWithEvents(txn, &events);
  if (!s.ok()) return s;
  return Status(code, BuildConflictMessage(info), std::make_shared<const Document>(BuildConflictErrInfo(info)));
}

bool DBImpl::PolicyAllows(const CollectionOptions& opts, const RecordView& rec, const WriteGate& gate,
                          const WriteOptionsInternal& w, const std::vector<std::string>& written,
                          RefusalDetail* detail) {
  const ConflictPolicy& policy = opts.conflict_policy;
  detail->policy = ConflictModeName(policy.mode);
  // A basis newer than the document is never stale, it is wrong.
  if (!gate.basis_version || rec.version < *gate.basis_version) return false;
  switch (policy.mode) {
    case ConflictMode::kFieldMerge: {
      const bson_t* table = rec.has_field_versions ? &rec.field_versions : nullptr;
      std::vector<std::string> overlapping = ChangedSinceOverlapping(table, *gate.basis_version, written);
      if (!rec.tracks_field_versions && rec.version > *gate.basis_version) {
        overlapping.assign(1, "");  // a record without history: everything may have changed
      }
      detail->fields = overlapping;
      return overlapping.empty();
    }
    case ConflictMode::kSourcePriority: {
      std::string last;
      bson_iter_t it;
      if (rec.has_writer) {
        bson_t writer;
        rec.Writer(&writer);
        if (bson_iter_init_find(&it, &writer, "source") && BSON_ITER_HOLDS_UTF8(&it)) last = bson_iter_utf8(&it, nullptr);
      }
      auto rank = [&](const std::string& s) {
        for (size_t i = 0; i < policy.source_priority.size(); ++i) {
          if (policy.source_priority[i] == s) return i;
        }
        return policy.source_priority.size();  // unknown sources rank last
      };
      detail->by_source = true;
      detail->source = w.context.source;
      detail->last_source = last;
      return rank(w.context.source) < rank(last);
    }
    default:
      return false;
  }
}

Status DBImpl::DecideStaleWrite(const Collection& coll, const std::string& key, const RecordView& rec,
                                const WriteGate& gate, const WriteOptionsInternal& w,
                                const std::vector<std::string>& written, const char* what) {
  RefusalDetail detail;
  if (PolicyAllows(*coll.opts(), rec, gate, w, written, &detail)) return Status::OK();
  return RefuseGatedWrite(coll, key, &rec, gate, w, ErrorCode::kVersionConflict,
                          "the document is at version " + std::to_string(rec.version) + " but the " + what +
                              " was based on version " + std::to_string(*gate.basis_version),
                          &detail);
}

Status DBImpl::CheckBasisAge(const Collection& coll, const bson_t* filter, const WriteGate& gate,
                             const WriteOptionsInternal& w) {
  if (!gate.gated()) return Status::OK();
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  if (!opts->max_basis_age_ms || !w.context.read_at_ms) return Status::OK();
  int64_t age = NowMs() - *w.context.read_at_ms;
  if (age <= *opts->max_basis_age_ms) return Status::OK();
  std::string why = "the basis was read " + std::to_string(age) + " ms ago; collection " + coll.info.ns.full() +
                    " accepts gated writes whose basis is at most " + std::to_string(*opts->max_basis_age_ms) +
                    " ms old";
  // Name the document when the filter does.
  bson_value_t id;
  std::string key;
  std::string value;
  RecordView rec;
  bool have = false;
  if (PointIdFromFilter(filter, &id)) {
    key = keys::EncodeDocKey(coll.info.id, id);
    have = db_->Get(rocksdb::ReadOptions(), docs_cf_, key, &value).ok() && DecodeRecord(value, &rec).ok();
  }
  return RefuseGatedWrite(coll, key, have ? &rec : nullptr, gate, w, ErrorCode::kStaleBasis, why);
}

namespace {

// A single-document write outside a scope never reads back what it wrote:
// its transaction's writes need no index (RocksDB's WriteBatchWithIndex
// then only records them).  Inside a scope later statements read their own
// writes, so the index stays.
void NoReadBack(Txn& txn, const WriteOptionsInternal& w) {
  if (w.scope == nullptr) txn->DisableIndexing();
}

}  // namespace

StatusOr<InsertResult> DBImpl::InsertWith(const InsertRequest& req, const WriteOptionsInternal& w) {
  ASSIGN_OR_RETURN(std::shared_ptr<Collection> coll, GetOrCreateCollection(req.ns));
  ReaderLock drop(&coll->drop_mu);
  if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during insert");
  std::shared_ptr<const CollectionOptions> opts = coll->opts();
  const CollectionInfo& info = coll->info;
  InsertResult result;
  constexpr size_t kBatch = 1000;
  size_t i = 0;
  bool stop = false;
  std::string record;
  std::vector<std::string> paths;  // a document's top-level paths
  int64_t now = NowMs();
  Document writer = BuildWriterBlock(w.context, now);
  WriteGate insert_gate;  // not gated; the principal's writable paths
  insert_gate.writable = WritablePathsOf(w, auth::Action::kInsert, info.ns);
  while (i < req.documents.size() && !stop) {
    std::optional<Txn> local;
    if (w.scope == nullptr) local.emplace(txn_pool_.get(), RocksWriteOptions(w));
    Txn& txn = w.scope ? w.scope->txn : *local;
    // A batch of several documents reads its own writes back (a repeated
    // _id, a unique key taken earlier in the batch); one document alone
    // does not.
    if (req.documents.size() == 1) NoReadBack(txn, w);
    std::vector<std::pair<size_t, Value>> pending;
    std::vector<PendingEvent> events;
    size_t batch_limit = w.scope ? req.documents.size() : kBatch;
    for (size_t in_batch = 0; i < req.documents.size() && in_batch < batch_limit; ++i, ++in_batch) {
      Document doc;
      Status s = PrepareNewDocument(req.documents[i].bson(), opts->version_field, 0, &doc, &paths);
      bson_value_t id;
      std::string key;
      if (s.ok()) {
        GetId(doc.bson(), &id);
        key = keys::EncodeDocKey(info.id, id);
        std::string existing;
        rocksdb::Status rs = txn->GetForUpdate(rocksdb::ReadOptions(), docs_cf_, key, &existing);
        if (rs.ok()) {
          s = DuplicateKeyError(info.ns, id);
        } else if (!rs.IsNotFound()) {
          s = FromRocks(rs);
        } else if (!(s = CheckInsertedPaths(*coll, key, insert_gate, w, paths)).ok()) {
          // the principal may not write some of its fields
        } else if (!(s = CheckLease(txn, key, w.context)).ok()) {
          // leased by someone else
        } else if (!(s = CheckValidation(*opts, nullptr, doc.bson(), w)).ok()) {
          // refused by the collection's validator
        } else if (!(s = UpdateIndexes(*coll, txn, key, nullptr, doc.bson(), nullptr, w)).ok()) {
          // a unique index holds the key, or the document cannot be indexed
        } else {
          EncodeRecord(0, writer.bson(), doc.bson(), &record);
          s = FromRocks(txn->PutUntracked(docs_cf_, key, record));  // locked by GetForUpdate
        }
      }
      if (!s.ok()) {
        result.write_errors.push_back(WriteError{i, s});
        if (req.ordered) {
          stop = true;
          ++i;
          break;
        }
        continue;
      }
      events.push_back(WriterEvent(std::move(key), w, "insert", info.ns.full(), id, std::nullopt, 0, w.context, paths,
                                   WriteGate(), now, nullptr, doc.bson()));
      pending.emplace_back(i, Value(id));
    }
    Status cs = FinishWrite(w, txn, &events);
    if (!cs.ok()) {
      for (auto& p : pending) result.write_errors.push_back(WriteError{p.first, cs});
      std::sort(result.write_errors.begin(), result.write_errors.end(),
                [](const WriteError& a, const WriteError& b) { return a.index < b.index; });
      if (req.ordered) break;
      continue;
    }
    result.n += static_cast<int64_t>(pending.size());
    for (auto& p : pending) result.inserted_ids.push_back(std::move(p.second));
  }
  return result;
}

// What an update does to the locked document, before the gate decides.
struct AppliedUpdate {
  Document next;                   // the new document (version not yet stamped)
  std::vector<std::string> paths;  // the paths it changes (version field left out)
  bool changed = false;            // a new version: different bytes, or a version bump
  // Where the fields the update names lie in the stored document and in
  // `next` (valid while `next` keeps its bytes' places).
  update::FieldLayout layout;
};

namespace {

// Applies `driver` to the stored document and diffs the result.  An
// operator update changes only the top-level fields it names, so only those
// are compared (and later validated); debug builds check that against the
// whole document.
Status ApplyUpdate(const RecordView& rec, const update::UpdateDriver& driver, const query::MatchDetails& details,
                   const std::string& vf, int64_t now, AppliedUpdate* out) {
  update::ApplyContext ctx;
  ctx.positional_index = details.elem_match_index;
  ctx.now_millis = now;
  bson_t* applied = bson_new();
  Status s = driver.Apply(&rec.doc, ctx, applied, &out->layout);
  out->next = Document::Adopt(applied);
  RETURN_IF_ERROR(s);
  if (driver.is_replacement()) {
    DiffPaths(&rec.doc, applied, vf, &out->paths);
  } else {
    const update::FieldLayout& layout = out->layout;
    if (layout.known) {
      DiffPathsOfFields(&rec.doc, applied, driver.top_level_fields(), layout.before, layout.after, vf, &out->paths);
    } else {
      DiffPathsOfFields(&rec.doc, applied, driver.top_level_fields(), vf, &out->paths);
    }
#ifndef NDEBUG
    if (layout.known) {
      std::vector<std::string> searched;
      DiffPathsOfFields(&rec.doc, applied, driver.top_level_fields(), vf, &searched);
      assert(searched == out->paths && "the field layout misplaced a field");
    }
    if (!HasDuplicateTopLevelNames(&rec.doc)) {
      std::vector<std::string> all;
      DiffPaths(&rec.doc, applied, vf, &all);
      assert(all == out->paths && "an operator update changed a field it does not name");
    }
#endif
  }
  out->changed = driver.bumps_version() || !BinaryEqual(DocumentView(&rec.doc), DocumentView(applied));
  return Status::OK();
}

// The paths a stale write would overwrite, for the conflict policy: every
// path for a replacement; the changed paths for operators, less the $inc
// paths when the policy merges increments (both apply).
std::vector<std::string> WrittenPaths(const update::UpdateDriver& driver, const CollectionOptions& opts,
                                      const std::vector<std::string>& paths) {
  if (driver.is_replacement()) return std::vector<std::string>(1, "");
  std::vector<std::string> written = paths;
  if (opts.conflict_policy.merge_increments) {
    std::vector<std::string> incs = driver.IncrementPaths();
    written.erase(std::remove_if(written.begin(), written.end(),
                                 [&](const std::string& p) {
                                   return std::find(incs.begin(), incs.end(), p) != incs.end();
                                 }),
                  written.end());
  }
  return written;
}

}  // namespace

Status DBImpl::StageUpdate(const Collection& coll, const CollectionOptions& opts, Txn& txn, const std::string& key,
                           const RecordView& rec, const update::UpdateDriver& driver, AppliedUpdate* applied,
                           const WriteOptionsInternal& w, const WriteGate& gate, bool merged, int64_t now,
                           std::vector<PendingEvent>* events) {
  const std::string& vf = opts.version_field;
  const int64_t version = rec.version + 1;
  bson_t* next = applied->next.mutable_bson();
  update::FieldLayout& layout = applied->layout;
  if (!(layout.known ? OverwriteVersionFieldAt(next, vf, layout.version_after, version)
                     : OverwriteVersionField(next, vf, version))) {
    bson_t* stamped = bson_new();
    SetVersionField(next, vf, version, stamped);
    applied->next = Document::Adopt(stamped);
    layout.known = false;  // the fields after the version field moved
  }
  if (driver.is_replacement()) {
    RETURN_IF_ERROR(ValidateForStorage(applied->next.bson()));
  } else {
    // The stored document was valid: check what the update wrote.
    Status valid = layout.known
                       ? ValidateWrittenFields(applied->next.bson(), driver.top_level_fields(), layout.after)
                       : ValidateWrittenFields(applied->next.bson(), driver.top_level_fields());
    assert(valid.code() == ValidateForStorage(applied->next.bson()).code());
    assert(valid.code() == ValidateWrittenFields(applied->next.bson(), driver.top_level_fields()).code());
    RETURN_IF_ERROR(valid);
  }
  std::string record;
  EncodeRecordWith(
      version, [&](BsonWriter* out) { WriteWriterBlock(w.context, now, out); },
      [&](BsonWriter* out) {
        UpdateFieldVersions(rec.has_field_versions ? &rec.field_versions : nullptr,
                            driver.is_replacement() ? applied->paths
                                                    : PathsToRecord(applied->paths, driver.TargetPaths()),
                            version, out);
      },
      applied->next.bson(), &record);
  RETURN_IF_ERROR(CheckValidation(opts, &rec.doc, applied->next.bson(), w));
  RETURN_IF_ERROR(UpdateIndexes(coll, txn, key, &rec.doc, applied->next.bson(), &applied->paths, w));
  // Untracked: GetForUpdate locked (and, in a snapshot transaction,
  // validated) the key already.
  RETURN_IF_ERROR(FromRocks(txn->PutUntracked(docs_cf_, key, record)));
  bson_value_t id;
  GetId(applied->next.bson(), &id);
  KnownFields known{&driver.top_level_fields(), &layout.after};
  events->push_back(WriterEvent(key, w, driver.is_replacement() ? "replace" : "update", coll.info.ns.full(), id,
                                rec.version, version, w.context, applied->paths, gate, now,
                                merged ? ConflictModeName(opts.conflict_policy.mode) : nullptr, applied->next.bson(),
                                layout.known ? &known : nullptr));
  return Status::OK();
}

Status DBImpl::UpdateDocument(const Collection& coll, const std::string& key, const query::Matcher* matcher,
                              const update::UpdateDriver& driver, const WriteOptionsInternal& w,
                              const WriteGate& gate, WriteOutcome* out) {
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  return WithLockRetries(txn_pool_.get(), RocksWriteOptions(w), w.scope, [&](Txn& txn) -> Status {
    out->matched = false;
    NoReadBack(txn, w);
    ReadBuffer<std::string> buffer;
    std::string& value = *buffer.get();
    bool found = false;
    RETURN_IF_ERROR(txn.GetForUpdate(docs_cf_, key, &value, &found));
    if (!found) return Status::OK();  // deleted since it was found
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(value, &rec));
    query::MatchDetails details;
    if (matcher != nullptr) {
      ASSIGN_OR_RETURN(bool match, matcher->CanFail() ? matcher->MatchesOrError(&rec.doc, nullptr, &details)
                                                      : matcher->Matches(&rec.doc, &details));
      if (!match) return Status::OK();
    }
    RETURN_IF_ERROR(CheckLease(txn, key, w.context));
    out->matched = true;
    const int64_t now = NowMs();
    const bool stale = gate.basis_version && rec.version != *gate.basis_version;
    AppliedUpdate applied;
    Status s = ApplyUpdate(rec, driver, details, opts->version_field, now, &applied);
    if (!s.ok()) {
      // A stale write is told so first: the agent rereads and decides again.
      if (stale) RETURN_IF_ERROR(DecideStaleWrite(coll, key, rec, gate, w, std::vector<std::string>(1, ""), "write"));
      return s;
    }
    // Permissions first: the paths this write changes must be the
    // principal's to change, whatever the version says.
    RETURN_IF_ERROR(CheckWritablePaths(coll, key, &rec, gate, w, auth::Action::kUpdate, applied.paths));
    // The gate decides under the document's lock; a stale write that gets
    // through was merged by the collection's policy.
    if (stale) {
      RETURN_IF_ERROR(DecideStaleWrite(coll, key, rec, gate, w, WrittenPaths(driver, *opts, applied.paths), "write"));
    }
    if (out->want_before) out->before = Document::Copy(&rec.doc);
    if (!applied.changed) {
      if (out->want_after) out->after = Document::Copy(&rec.doc);
      return Status::OK();
    }
    std::vector<PendingEvent> events;
    RETURN_IF_ERROR(StageUpdate(coll, *opts, txn, key, rec, driver, &applied, w, gate, stale, now, &events));
    RETURN_IF_ERROR(FinishWrite(w, txn, &events));
    out->modified = true;
    if (out->want_after) out->after = std::move(applied.next);
    return Status::OK();
  });
}

Status DBImpl::UpsertDocument(const Collection& coll, const bson_t* query, const update::UpdateDriver& driver,
                              const WriteOptionsInternal& w, WriteOutcome* out) {
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  bson_t seed = BSON_INITIALIZER;
  Status s = query::ExtractEqualityFields(query, &seed);
  if (!s.ok()) {
    bson_destroy(&seed);
    return s;
  }
  update::ApplyContext ctx;
  ctx.is_upsert_insert = true;
  int64_t now = NowMs();
  ctx.now_millis = now;
  bson_t applied = BSON_INITIALIZER;
  s = driver.Apply(&seed, ctx, &applied);
  bson_destroy(&seed);
  if (!s.ok()) {
    bson_destroy(&applied);
    return s;
  }
  Document doc;
  std::vector<std::string> paths;
  s = PrepareNewDocument(&applied, opts->version_field, 0, &doc, &paths);
  bson_destroy(&applied);
  RETURN_IF_ERROR(s);
  bson_value_t id;
  GetId(doc.bson(), &id);
  std::string key = keys::EncodeDocKey(coll.info.id, id);
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(query));
  Document writer = BuildWriterBlock(w.context, now);
  RETURN_IF_ERROR(WithLockRetries(txn_pool_.get(), RocksWriteOptions(w), w.scope, [&](Txn& txn) -> Status {
    out->raced = false;
    NoReadBack(txn, w);
    std::string existing;
    bool found = false;
    RETURN_IF_ERROR(txn.GetForUpdate(docs_cf_, key, &existing, &found));
    if (found) {
      // Another writer inserted this _id first.  When its document matches
      // the filter the caller retries as an update; otherwise the upsert
      // would duplicate the _id, as in MongoDB.
      RecordView rec;
      RETURN_IF_ERROR(DecodeRecord(existing, &rec));
      ASSIGN_OR_RETURN(bool match, MatchOrError(*matcher, &rec.doc));
      if (match) {
        out->raced = true;
        return Status::OK();
      }
      return DuplicateKeyError(coll.info.ns, id);
    }
    WriteGate insert_gate;
    insert_gate.writable = WritablePathsOf(w, auth::Action::kInsert, coll.info.ns);
    RETURN_IF_ERROR(CheckInsertedPaths(coll, key, insert_gate, w, paths));
    RETURN_IF_ERROR(CheckLease(txn, key, w.context));
    RETURN_IF_ERROR(CheckValidation(*opts, nullptr, doc.bson(), w));
    RETURN_IF_ERROR(UpdateIndexes(coll, txn, key, nullptr, doc.bson(), nullptr, w));
    std::string record;
    EncodeRecord(0, writer.bson(), doc.bson(), &record);
    RETURN_IF_ERROR(FromRocks(txn->PutUntracked(docs_cf_, key, record)));  // locked by GetForUpdate
    std::vector<PendingEvent> events;
    events.push_back(WriterEvent(key, w, "insert", coll.info.ns.full(), id, std::nullopt, 0, w.context, paths,
                                 WriteGate(), now, nullptr, doc.bson()));
    return FinishWrite(w, txn, &events);
  }));
  if (out->raced) return Status::OK();
  out->upserted_id = Value(id);
  if (out->want_after) out->after = std::move(doc);
  return Status::OK();
}

Status DBImpl::DeleteDocument(const Collection& coll, const std::string& key, const query::Matcher* matcher,
                              const WriteOptionsInternal& w, const WriteGate& gate, WriteOutcome* out) {
  return WithLockRetries(txn_pool_.get(), RocksWriteOptions(w), w.scope, [&](Txn& txn) -> Status {
    out->matched = false;
    NoReadBack(txn, w);
    ReadBuffer<std::string> buffer;
    std::string& value = *buffer.get();
    bool found = false;
    RETURN_IF_ERROR(txn.GetForUpdate(docs_cf_, key, &value, &found));
    if (!found) return Status::OK();
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(value, &rec));
    if (matcher != nullptr) {
      ASSIGN_OR_RETURN(bool match, MatchOrError(*matcher, &rec.doc));
      if (!match) return Status::OK();
    }
    RETURN_IF_ERROR(CheckLease(txn, key, w.context));
    if (gate.basis_version && rec.version != *gate.basis_version) {
      out->matched = true;
      // A delete writes every path.
      RETURN_IF_ERROR(DecideStaleWrite(coll, key, rec, gate, w, std::vector<std::string>(1, ""), "delete"));
    }
    if (out->want_before) out->before = Document::Copy(&rec.doc);
    RETURN_IF_ERROR(UpdateIndexes(coll, txn, key, &rec.doc, nullptr, nullptr, w));
    RETURN_IF_ERROR(FromRocks(txn->DeleteUntracked(docs_cf_, key)));  // locked by GetForUpdate
    bson_value_t id;
    GetId(&rec.doc, &id);
    std::vector<PendingEvent> events;
    events.push_back(WriterEvent(key, w, "delete", coll.info.ns.full(), id, rec.version, std::nullopt, w.context,
                                 std::vector<std::string>(), gate, NowMs()));
    RETURN_IF_ERROR(FinishWrite(w, txn, &events));
    out->matched = true;
    out->modified = true;
    return Status::OK();
  });
}

Status DBImpl::BasisTargetMissing(const Collection& coll, const bson_t* filter, const WriteGate& gate,
                                  const WriteOptionsInternal& w) {
  bson_value_t id;
  if (PointIdFromFilter(filter, &id)) {
    std::string key = keys::EncodeDocKey(coll.info.id, id);
    std::string value;
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), docs_cf_, key, &value);
    if (rs.ok()) {
      RecordView rec;
      RETURN_IF_ERROR(DecodeRecord(value, &rec));
      if (rec.version != *gate.basis_version) {
        return RefuseGatedWrite(coll, key, &rec, gate, w, ErrorCode::kVersionConflict,
                                "the document is at version " + std::to_string(rec.version) +
                                    " but the write was based on version " + std::to_string(*gate.basis_version) +
                                    " (and no longer matches the filter)");
      }
      return Status::OK();  // at the basis, but the rest of the filter does not match: n: 0
    }
    if (!rs.IsNotFound()) return FromRocks(rs);
    return Status(ErrorCode::kNoMatchingDocument, "basisVersion " + std::to_string(*gate.basis_version) +
                                                      " names document _id: " + Value(id).ToJson() +
                                                      ", which does not exist in " + coll.info.ns.full());
  }
  return Status(ErrorCode::kNoMatchingDocument,
                "no document of " + coll.info.ns.full() + " matches the filter of a statement with basisVersion " +
                    std::to_string(*gate.basis_version));
}

void DBImpl::DetectIdiomConflict(const Collection& coll, const bson_t* filter, size_t index,
                                 const WriteOptionsInternal& w, std::vector<VersionConflictEntry>* out) {
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  int64_t expected = 0;
  Document without;
  if (!SplitVersionEquality(filter, opts->version_field, &expected, &without)) return;
  auto matcher = query::Matcher::Parse(without.bson());
  if (!matcher.ok()) return;
  std::vector<std::string> keys;
  if (!CandidateKeys(coll, without.bson(), **matcher, 1, &keys).ok() || keys.empty()) return;
  std::string value;
  if (!db_->Get(rocksdb::ReadOptions(), docs_cf_, keys[0], &value).ok()) return;
  RecordView rec;
  if (!DecodeRecord(value, &rec).ok() || rec.version == expected) return;
  bson_value_t id;
  GetId(&rec.doc, &id);
  out->push_back(VersionConflictEntry{index, Value(id), expected, rec.version});
  WriteGate gate;
  gate.idiom = true;
  gate.basis_version = expected;
  // Record the refusal; the statement itself still answers n: 0, as MongoDB.
  RefuseGatedWrite(coll, keys[0], &rec, gate, w, ErrorCode::kVersionConflict,
                   "the filter asked for version " + std::to_string(expected) + " but the document is at version " +
                       std::to_string(rec.version))
      .PermitUnchecked();
}

Status DBImpl::UpdateStatementImpl(const Collection& coll, const UpdateStatement& stmt, size_t index,
                                   const WriteOptionsInternal& w, UpdateWriteResult* result) {
  std::shared_ptr<const CollectionOptions> opts = coll.opts();
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, ParseFilter(stmt.q.bson()));
  update::UpdateOptions uopts;
  uopts.version_field = opts->version_field;
  uopts.borrow_update = true;  // stmt outlives the driver
  ASSIGN_OR_RETURN(std::unique_ptr<update::UpdateDriver> driver, update::UpdateDriver::Parse(stmt.u.bson(), uopts));
  if (stmt.multi && driver->is_replacement()) {
    return Status(ErrorCode::kFailedToParse, "multi update is not supported for replacement-style update");
  }
  ASSIGN_OR_RETURN(WriteGate gate, OpenGate(coll, stmt.q.bson(), stmt.basis_version, stmt.multi, stmt.upsert, w));
  std::optional<index::Hint> hint;
  if (stmt.hint) {
    ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(stmt.hint->get()));
    hint = std::move(h);
  }
  bson_value_t point_id;
  const bool point = PointIdFromFilter(stmt.q.bson(), &point_id);
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> keys;
    RETURN_IF_ERROR(StatementCandidates(coll, stmt.q.bson(), matcher.get(), stmt.multi ? 0 : 1, w, &keys,
                                        hint ? &*hint : nullptr));
    bool matched_any = false;
    for (size_t k = 0; k < keys.size(); ++k) {
      WriteOutcome o;
      RETURN_IF_ERROR(UpdateDocument(coll, keys[k], matcher.get(), *driver, w, gate, &o));
      if (o.matched) {
        matched_any = true;
        ++result->n;
        if (o.modified) ++result->n_modified;
        if (!stmt.multi) break;
      }
    }
    // A single-document update whose candidate stopped matching before it
    // was locked looks again.
    if (!matched_any && !point && !stmt.multi && !keys.empty() && w.scope == nullptr &&
        attempt < kMaxWriteRetries) {
      continue;
    }
    if (matched_any) return Status::OK();
    if (gate.basis_version) return BasisTargetMissing(coll, stmt.q.bson(), gate, w);
    if (!stmt.upsert) {
      if (gate.idiom) DetectIdiomConflict(coll, stmt.q.bson(), index, w, &result->version_conflicts);
      return Status::OK();
    }
    WriteOutcome o;
    Status us = UpsertDocument(coll, stmt.q.bson(), *driver, w, &o);
    if (!us.ok()) {
      if (us.code() == ErrorCode::kDuplicateKey && gate.idiom) {
        DetectIdiomConflict(coll, stmt.q.bson(), index, w, &result->version_conflicts);
      }
      return us;
    }
    if (o.raced && attempt < kMaxWriteRetries) continue;  // retry as an update (in a scope: sees its own insert)
    if (o.raced) return Status(ErrorCode::kWriteConflict, "upsert kept racing with concurrent inserts");
    ++result->n;
    result->upserted.push_back(Upserted{index, std::move(*o.upserted_id)});
    return Status::OK();
  }
}

StatusOr<UpdateWriteResult> DBImpl::UpdateWith(const UpdateRequest& req, const WriteOptionsInternal& w) {
  UpdateWriteResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) {
    RETURN_IF_ERROR(ValidateNamespace(req.ns));
    bool any_upsert = false;
    for (const auto& u : req.updates) any_upsert |= u.upsert;
    if (any_upsert) {
      ASSIGN_OR_RETURN(coll, GetOrCreateCollection(req.ns));
    }
  }
  if (!coll) {
    // No collection: nothing matches, but each statement must still parse,
    // and a basisVersion names a document that does not exist.
    RunStatements(req.updates.size(), req.ordered, &result.write_errors, [&](size_t i) -> Status {
      const UpdateStatement& stmt = req.updates[i];
      auto m = query::Matcher::Parse(stmt.q.bson());
      Status s = m.ok() ? update::UpdateDriver::Parse(stmt.u.bson(), update::UpdateOptions()).status() : m.status();
      if (s.ok() && stmt.basis_version) {
        s = stmt.multi ? BasisWithMultiError() : MissingCollectionBasis(req.ns);
      }
      return s;
    });
    return result;
  }
  ReaderLock drop(&coll->drop_mu);
  if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during update");
  RunStatements(req.updates.size(), req.ordered, &result.write_errors,
                [&](size_t i) { return UpdateStatementImpl(*coll, req.updates[i], i, w, &result); });
  return result;
}

Status DBImpl::DeleteStatementImpl(const Collection& coll, const DeleteStatement& stmt, size_t index,
                                   const WriteOptionsInternal& w, DeleteWriteResult* result) {
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, ParseFilter(stmt.q.bson()));
  if (stmt.limit != 0 && stmt.limit != 1) {
    return Status(ErrorCode::kFailedToParse, "The limit field in delete objects must be 0 or 1. Got " +
                                                 std::to_string(stmt.limit));
  }
  ASSIGN_OR_RETURN(WriteGate gate, OpenGate(coll, stmt.q.bson(), stmt.basis_version, stmt.limit != 1, false, w));
  std::optional<index::Hint> hint;
  if (stmt.hint) {
    ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(stmt.hint->get()));
    hint = std::move(h);
  }
  bson_value_t point_id;
  const bool point = PointIdFromFilter(stmt.q.bson(), &point_id);
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> keys;
    RETURN_IF_ERROR(StatementCandidates(coll, stmt.q.bson(), matcher.get(), stmt.limit, w, &keys,
                                        hint ? &*hint : nullptr));
    bool deleted_any = false;
    for (const std::string& key : keys) {
      WriteOutcome o;
      RETURN_IF_ERROR(DeleteDocument(coll, key, matcher.get(), w, gate, &o));
      if (o.matched) {
        deleted_any = true;
        ++result->n;
        if (stmt.limit == 1) break;
      }
    }
    if (stmt.limit == 1 && !point && !deleted_any && !keys.empty() && w.scope == nullptr &&
        attempt < kMaxWriteRetries) {
      continue;
    }
    if (!deleted_any && gate.basis_version) return BasisTargetMissing(coll, stmt.q.bson(), gate, w);
    if (!deleted_any && gate.idiom) DetectIdiomConflict(coll, stmt.q.bson(), index, w, &result->version_conflicts);
    return Status::OK();
  }
}

StatusOr<DeleteWriteResult> DBImpl::DeleteWith(const DeleteRequest& req, const WriteOptionsInternal& w) {
  DeleteWriteResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) {
    RETURN_IF_ERROR(ValidateNamespace(req.ns));
    RunStatements(req.deletes.size(), req.ordered, &result.write_errors, [&](size_t i) -> Status {
      const DeleteStatement& stmt = req.deletes[i];
      Status s = query::Matcher::Parse(stmt.q.bson()).status();
      if (s.ok() && stmt.basis_version) s = MissingCollectionBasis(req.ns);
      return s;
    });
    return result;
  }
  ReaderLock drop(&coll->drop_mu);
  if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during delete");
  RunStatements(req.deletes.size(), req.ordered, &result.write_errors,
                [&](size_t i) { return DeleteStatementImpl(*coll, req.deletes[i], i, w, &result); });
  return result;
}

}  // namespace gatedb
