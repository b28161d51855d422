// DBImpl: the idempotency protocol.  Every keyed write (insert, update,
// delete, findAndModify with writeContext.taskId and writeSeq, from any
// door) and every keyed transaction commit runs through RunKeyed:
//
//   1. claim the key in-process: a concurrent duplicate waits, then replays;
//   2. look the key up: the same fingerprint -> the stored reply (replayed);
//      another fingerprint -> IdempotencyKeyReuse;
//   3. run the write inside one WriteScope (a pessimistic transaction that
//      every statement joins, its journal events queued on the scope);
//   4. commit, as one RocksDB write under commit_mu_, the documents, the
//      journal events and (when the write took effect) the record.
//
// A write that fails as a whole rolls back and stores nothing.
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/fingerprint.h"
#include "engine/storage/idempotency.h"
#include "wal/journal.h"

namespace gatedb {

namespace {

// IdempotencyKeyReuse for `wc`'s key: errInfo {taskId, writeSeq, <details>},
// the message "idempotency key (...) was already used <why>".
template <typename Details>
Status KeyReuse(const WriteContext& wc, const char* why, Details&& details) {
  bson_t* info = bson_new();
  BSON_APPEND_UTF8(info, "taskId", wc.task_id.c_str());
  BSON_APPEND_INT64(info, "writeSeq", *wc.write_seq);
  details(info);
  return Status(ErrorCode::kIdempotencyKeyReuse,
                "idempotency key (taskId: \"" + wc.task_id + "\", writeSeq: " + std::to_string(*wc.write_seq) +
                    ") was already used " + why,
                std::make_shared<const Document>(Document::Adopt(info)));
}

}  // namespace

StatusOr<std::optional<Document>> DBImpl::StoredReply(const KeyedCall& call, const std::string& key) {
  ASSIGN_OR_RETURN(std::optional<IdempotencyRecord> rec, idempotency_->Lookup(key));
  if (!rec) return std::optional<Document>();
  const WriteContext& wc = *call.context;
  // A user replays only what its own agent stored: another agent's reply
  // (what it wrote, its ids) is not this caller's to read.  The owner
  // replays anything; records from before agents were recorded replay as
  // they did.
  if (call.principal != nullptr && rec->agent && *rec->agent != wc.agent_id) {
    return KeyReuse(wc, "by another agent; use a task id of your own",
                    [&](bson_t* info) { BSON_APPEND_UTF8(info, "agentId", wc.agent_id.c_str()); });
  }
  bool same;
  if (rec->fingerprint_format == kFingerprintFormat) {
    same = rec->fingerprint == call.fingerprint;
  } else {
    std::string legacy = call.legacy_fingerprint ? call.legacy_fingerprint() : std::string();
    same = rec->fingerprint_format == 1 && !legacy.empty() && rec->fingerprint == legacy;
  }
  if (!same) {
    return KeyReuse(wc, "for a different command; use a new writeSeq", [&](bson_t* info) {
      BSON_APPEND_DATE_TIME(info, "firstUsedAt", rec->at_ms);
      BSON_APPEND_UTF8(info, "ns", rec->ns.c_str());
    });
  }
  return std::optional<Document>(std::move(rec->reply));
}

StatusOr<Document> DBImpl::RunKeyed(const KeyedCall& call, WriteScope* scope, bool* replayed) {
  *replayed = false;
  const WriteContext& wc = *call.context;
  RETURN_IF_ERROR(IdempotencyLog::ValidateTaskId(wc.task_id));
  const std::string key = IdempotencyLog::EncodeKey(wc.task_id, *wc.write_seq);
  IdempotencyLog::ClaimGuard claim(idempotency_.get(), key);
  ASSIGN_OR_RETURN(std::optional<Document> stored, StoredReply(call, key));
  if (stored) {
    // A durable retry is answered once what it replays is durable (its
    // first run may have got WriteConcernFailed).
    RETURN_IF_ERROR(SyncCommitted(call.sync));
    *replayed = true;
    return std::move(*stored);
  }
  ScopePtr own;
  if (scope == nullptr) {
    own = BeginScope(call.sync);
    scope = own.get();
  }
  Document out;
  bool took_effect = false;
  RETURN_IF_ERROR(call.run(scope, &out, &took_effect));  // an own scope rolls back: nothing happened, nothing stored
  if (!took_effect) {
    RETURN_IF_ERROR(CommitScope(scope));
    return out;
  }
  IdempotencyRecord rec;
  rec.fingerprint = call.fingerprint;
  rec.fingerprint_format = kFingerprintFormat;
  rec.at_ms = NowMs();
  rec.ns = call.ns;
  rec.agent = wc.agent_id;
  rec.reply = std::move(out);
  RETURN_IF_ERROR(CommitScope(scope, &key, &rec));
  return std::move(rec.reply);
}

StatusOr<InsertResult> DBImpl::Insert(const InsertRequest& req) {
  std::optional<WriteOptionsInternal> admitted;
  ASSIGN_OR_RETURN(const WriteOptionsInternal* w, AdmitWrite(req.ns, {auth::Action::kInsert}, req.write, &admitted));
  DurableWrite durable(this, DurableRequest(*w));
  if (!w->keyed()) return InsertWith(req, *w);
  return RunKeyedRequest<InsertResult>(
      req, *w, [&](const WriteOptionsInternal& sw) { return InsertWith(req, sw); },
      [](const InsertResult& r, bson_t* out) { AppendReply(r, /*inserted_ids=*/true, out); });
}

StatusOr<UpdateWriteResult> DBImpl::Update(const UpdateRequest& req) {
  std::optional<WriteOptionsInternal> admitted;
  const WriteOptionsInternal* w = &req.write;
  if (req.write.principal) {
    bool upsert = false;
    for (const UpdateStatement& u : req.updates) upsert |= u.upsert;
    auto r = upsert ? AdmitWrite(req.ns, {auth::Action::kUpdate, auth::Action::kInsert}, req.write, &admitted)
                    : AdmitWrite(req.ns, {auth::Action::kUpdate}, req.write, &admitted);
    if (!r.ok()) return r.status();
    w = *r;
  }
  DurableWrite durable(this, DurableRequest(*w));
  if (!w->keyed()) return UpdateWith(req, *w);
  return RunKeyedRequest<UpdateWriteResult>(
      req, *w, [&](const WriteOptionsInternal& sw) { return UpdateWith(req, sw); },
      [](const UpdateWriteResult& r, bson_t* out) { AppendReply(r, out); });
}

StatusOr<DeleteWriteResult> DBImpl::Delete(const DeleteRequest& req) {
  std::optional<WriteOptionsInternal> admitted;
  ASSIGN_OR_RETURN(const WriteOptionsInternal* w, AdmitWrite(req.ns, {auth::Action::kRemove}, req.write, &admitted));
  DurableWrite durable(this, DurableRequest(*w));
  if (!w->keyed()) return DeleteWith(req, *w);
  return RunKeyedRequest<DeleteWriteResult>(
      req, *w, [&](const WriteOptionsInternal& sw) { return DeleteWith(req, sw); },
      [](const DeleteWriteResult& r, bson_t* out) { AppendReply(r, out); });
}

StatusOr<FindAndModifyResult> DBImpl::FindAndModify(const FindAndModifyRequest& req) {
  std::optional<WriteOptionsInternal> admitted;
  const WriteOptionsInternal* w = &req.write;
  if (req.write.principal) {
    auto r = req.remove   ? AdmitWrite(req.ns, {auth::Action::kFind, auth::Action::kRemove}, req.write, &admitted)
             : req.upsert ? AdmitWrite(req.ns, {auth::Action::kFind, auth::Action::kUpdate, auth::Action::kInsert},
                                       req.write, &admitted)
                          : AdmitWrite(req.ns, {auth::Action::kFind, auth::Action::kUpdate}, req.write, &admitted);
    if (!r.ok()) return r.status();
    w = *r;
  }
  DurableWrite durable(this, DurableRequest(*w));
  if (!w->keyed()) return FindAndModifyWith(req, *w);
  return RunKeyedRequest<FindAndModifyResult>(
      req, *w, [&](const WriteOptionsInternal& sw) { return FindAndModifyWith(req, sw); },
      [&](const FindAndModifyResult& r, bson_t* out) { AppendReply(r, req.remove, out); });
}

namespace {

// A keyed commit's context as the write gate would admit it: a user's
// commit names the user as its agent (an empty agentId becomes its name;
// another name is Unauthorized).
StatusOr<WriteContext> ClaimCommitAgent(const WriteContext& context, const auth::Principal* principal) {
  WriteContext claimed = context;
  if (principal != nullptr) RETURN_IF_ERROR(principal->ClaimAgent(&claimed.agent_id, "commitTransaction", "admin.$cmd"));
  return claimed;
}

}  // namespace

Status DBImpl::CommitTransaction(WriteScope* scope, const WriteContext* keyed, const auth::Principal* principal,
                                 bool* replayed) {
  *replayed = false;
  // Its cursors read through it: they end with it (MongoDB kills them too).
  if (scope->cursors != nullptr) scope->cursors->KillOwnedBy(scope);
  if (keyed == nullptr || keyed->task_id.empty() || !keyed->write_seq) return CommitScope(scope);
  ASSIGN_OR_RETURN(const WriteContext claimed, ClaimCommitAgent(*keyed, principal));
  KeyedCall call;
  call.context = &claimed;
  call.principal = principal;
  call.sync = scope->sync;
  call.ns = "admin.$cmd";
  call.fingerprint = CommitFingerprint();
  call.legacy_fingerprint = [] { return LegacyCommitFingerprint(); };
  call.run = [&](WriteScope*, Document* reply, bool* took_effect) {
    BSON_APPEND_UTF8(reply->mutable_bson(), "txn", scope->txn_id.c_str());
    BSON_APPEND_DOUBLE(reply->mutable_bson(), "ok", 1.0);
    *took_effect = true;
    return Status::OK();
  };
  return RunKeyed(call, scope, replayed).status();
}

Status DBImpl::TransactionCommittedBefore(const WriteContext& context, const auth::Principal* principal, bool sync,
                                          bool* committed) {
  *committed = false;
  if (context.task_id.empty() || !context.write_seq) return Status::OK();
  RETURN_IF_ERROR(IdempotencyLog::ValidateTaskId(context.task_id));
  ASSIGN_OR_RETURN(const WriteContext claimed, ClaimCommitAgent(context, principal));
  KeyedCall call;
  call.context = &claimed;
  call.principal = principal;
  call.fingerprint = CommitFingerprint();
  call.legacy_fingerprint = [] { return LegacyCommitFingerprint(); };
  ASSIGN_OR_RETURN(std::optional<Document> stored,
                   StoredReply(call, IdempotencyLog::EncodeKey(claimed.task_id, *claimed.write_seq)));
  if (!stored) return Status::OK();
  *committed = true;
  return SyncCommitted(sync);
}

StatusOr<std::vector<std::pair<int64_t, IdempotencyRecord>>> DBImpl::IdempotencyStatus(const std::string& task_id) {
  return idempotency_->ListTask(task_id);
}

StatusOr<uint64_t> DBImpl::CollectIdempotencyRecords() { return idempotency_->Collect(); }

uint64_t DBImpl::LastJournalSeq() const { return journal_->last_seq(); }

bool DBImpl::WaitForJournal(uint64_t after_seq, int64_t timeout_ms) {
  return journal_->WaitForEvents(after_seq, std::chrono::milliseconds(timeout_ms));
}

}  // namespace gatedb
