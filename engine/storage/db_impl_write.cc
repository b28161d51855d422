// DBImpl: the write path.  Every write of every door ends here, one
// document per pessimistic RocksDB transaction (an insert batch shares one).
#include <chrono>
#include <thread>

#include "engine/document/validate.h"
#include "engine/keys/key_codec.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"
#include "engine/storage/rocks_status.h"
#include "engine/update/update_driver.h"

namespace gatedb {

namespace {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void BackoffBeforeRetry(int attempt) {
  if (attempt < 3) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50 << std::min(attempt, 10)));
  }
}

bool IsLockConflict(const Status& s) { return s.code() == ErrorCode::kWriteConflict; }

// A pessimistic transaction that rolls back unless committed.
class Txn {
 public:
  Txn(rocksdb::TransactionDB* db, const rocksdb::WriteOptions& wo) : txn_(db->BeginTransaction(wo)) {}
  ~Txn() {
    if (!done_) txn_->Rollback().PermitUncheckedError();
  }
  rocksdb::Transaction* operator->() { return txn_.get(); }
  Status Commit() {
    done_ = true;
    return FromRocks(txn_->Commit());
  }

 private:
  std::unique_ptr<rocksdb::Transaction> txn_;
  bool done_ = false;
};

Status DuplicateKeyError(const CollectionInfo& info, const bson_value_t& id, Document* err_info) {
  Value v(id);
  bson_t* ei = bson_new();
  bson_t sub;
  BSON_APPEND_DOCUMENT_BEGIN(ei, "keyPattern", &sub);
  BSON_APPEND_INT32(&sub, "_id", 1);
  bson_append_document_end(ei, &sub);
  BSON_APPEND_DOCUMENT_BEGIN(ei, "keyValue", &sub);
  v.AppendTo(&sub, "_id");
  bson_append_document_end(ei, &sub);
  if (err_info) *err_info = Document::Adopt(ei); else bson_destroy(ei);
  return Status(ErrorCode::kDuplicateKey, "E11000 duplicate key error collection: " + info.ns.full() +
                                              " index: _id_ dup key: { _id: " + v.ToJson() + " }");
}

// Validates a document for insertion and gives it its _id (first) and the
// version field at `version`.
Status PrepareNewDocument(const bson_t* doc, const std::string& version_field, int64_t version,
                          Document* out) {
  RETURN_IF_ERROR(ValidateForStorage(doc));
  std::optional<Document> with_id = EnsureId(doc);
  const bson_t* src = with_id ? with_id->bson() : doc;
  bson_t* stamped = bson_new();
  SetVersionField(src, version_field, version, stamped);
  *out = Document::Adopt(stamped);
  return ValidateForStorage(out->bson());
}

}  // namespace

StatusOr<InsertResult> DBImpl::Insert(const InsertRequest& req) {
  ASSIGN_OR_RETURN(std::shared_ptr<Collection> coll, GetOrCreateCollection(req.ns));
  std::shared_lock<std::shared_mutex> drop(coll->drop_mu);
  if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during insert");
  const CollectionInfo& info = coll->info;
  InsertResult result;
  constexpr size_t kBatch = 1000;
  size_t i = 0;
  bool stop = false;
  std::string record;
  while (i < req.documents.size() && !stop) {
    Txn txn(db_, RocksWriteOptions(req.write));
    std::vector<std::pair<size_t, Value>> pending;
    for (size_t in_batch = 0; i < req.documents.size() && in_batch < kBatch; ++i, ++in_batch) {
      Document doc;
      Status s = PrepareNewDocument(req.documents[i].bson(), info.options.version_field, 0, &doc);
      std::optional<Document> err_info;
      bson_value_t id;
      if (s.ok()) {
        GetId(doc.bson(), &id);
        std::string key = keys::EncodeDocKey(info.id, id);
        std::string existing;
        rocksdb::Status rs = txn->GetForUpdate(rocksdb::ReadOptions(), docs_cf_, key, &existing);
        if (rs.ok()) {
          Document ei;
          s = DuplicateKeyError(info, id, &ei);
          err_info = std::move(ei);
        } else if (!rs.IsNotFound()) {
          s = FromRocks(rs);
        } else {
          EncodeRecord(0, doc.bson(), &record);
          s = FromRocks(txn->Put(docs_cf_, key, record));
        }
      }
      if (!s.ok()) {
        result.write_errors.push_back(WriteError{i, s, std::move(err_info)});
        if (req.ordered) {
          stop = true;
          ++i;
          break;
        }
        continue;
      }
      pending.emplace_back(i, Value(id));
    }
    Status cs = txn.Commit();
    if (!cs.ok()) {
      for (auto& p : pending) result.write_errors.push_back(WriteError{p.first, cs, std::nullopt});
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

Status DBImpl::UpdateDocument(const Collection& coll, const std::string& key, const query::Matcher& matcher,
                              const update::UpdateDriver& driver, const WriteOptionsInternal& w,
                              WriteOutcome* out) {
  const std::string& vf = coll.info.options.version_field;
  for (int attempt = 0;; ++attempt) {
    Txn txn(db_, RocksWriteOptions(w));
    std::string value;
    rocksdb::Status rs = txn->GetForUpdate(rocksdb::ReadOptions(), docs_cf_, key, &value);
    if (rs.IsNotFound()) return Status::OK();  // deleted since it was found
    Status s = FromRocks(rs);
    if (IsLockConflict(s) && attempt < kMaxWriteRetries) {
      BackoffBeforeRetry(attempt);
      continue;
    }
    RETURN_IF_ERROR(s);
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(value, &rec));
    query::MatchDetails details;
    if (!matcher.Matches(&rec.doc, &details)) return Status::OK();
    out->matched = true;
    update::ApplyContext ctx;
    ctx.positional_index = details.elem_match_index;
    ctx.now_millis = NowMillis();
    bson_t applied = BSON_INITIALIZER;
    s = driver.Apply(&rec.doc, ctx, &applied);
    if (!s.ok()) {
      bson_destroy(&applied);
      return s;
    }
    bool changed = driver.bumps_version() ||
                   !BinaryEqual(DocumentView(&rec.doc), DocumentView(&applied));
    if (out->want_before) out->before = Document::Copy(&rec.doc);
    if (!changed) {
      bson_destroy(&applied);
      if (out->want_after) out->after = Document::Copy(&rec.doc);
      return Status::OK();
    }
    bson_t* stamped = bson_new();
    SetVersionField(&applied, vf, rec.version + 1, stamped);
    bson_destroy(&applied);
    Document next = Document::Adopt(stamped);
    RETURN_IF_ERROR(ValidateForStorage(next.bson()));
    std::string record;
    EncodeRecord(rec.version + 1, next.bson(), &record);
    RETURN_IF_ERROR(FromRocks(txn->Put(docs_cf_, key, record)));
    s = txn.Commit();
    if (IsLockConflict(s) && attempt < kMaxWriteRetries) {
      BackoffBeforeRetry(attempt);
      out->matched = false;
      continue;
    }
    RETURN_IF_ERROR(s);
    out->modified = true;
    if (out->want_after) out->after = std::move(next);
    return Status::OK();
  }
}

Status DBImpl::UpsertDocument(const Collection& coll, const bson_t* query, const update::UpdateDriver& driver,
                              const WriteOptionsInternal& w, WriteOutcome* out) {
  bson_t seed = BSON_INITIALIZER;
  Status s = query::ExtractEqualityFields(query, &seed);
  if (!s.ok()) {
    bson_destroy(&seed);
    return s;
  }
  update::ApplyContext ctx;
  ctx.is_upsert_insert = true;
  ctx.now_millis = NowMillis();
  bson_t applied = BSON_INITIALIZER;
  s = driver.Apply(&seed, ctx, &applied);
  bson_destroy(&seed);
  if (!s.ok()) {
    bson_destroy(&applied);
    return s;
  }
  Document doc;
  s = PrepareNewDocument(&applied, coll.info.options.version_field, 0, &doc);
  bson_destroy(&applied);
  RETURN_IF_ERROR(s);
  bson_value_t id;
  GetId(doc.bson(), &id);
  std::string key = keys::EncodeDocKey(coll.info.id, id);
  for (int attempt = 0;; ++attempt) {
    Txn txn(db_, RocksWriteOptions(w));
    std::string existing;
    rocksdb::Status rs = txn->GetForUpdate(rocksdb::ReadOptions(), docs_cf_, key, &existing);
    if (rs.ok()) {
      out->raced = true;
      return Status::OK();
    }
    s = rs.IsNotFound() ? Status::OK() : FromRocks(rs);
    if (s.ok()) {
      std::string record;
      EncodeRecord(0, doc.bson(), &record);
      s = FromRocks(txn->Put(docs_cf_, key, record));
      if (s.ok()) s = txn.Commit();
    }
    if (IsLockConflict(s) && attempt < kMaxWriteRetries) {
      BackoffBeforeRetry(attempt);
      continue;
    }
    RETURN_IF_ERROR(s);
    out->upserted_id = Value(id);
    if (out->want_after) out->after = std::move(doc);
    return Status::OK();
  }
}

Status DBImpl::DeleteDocument(const Collection& coll, const std::string& key, const query::Matcher& matcher,
                              const WriteOptionsInternal& w, WriteOutcome* out) {
  for (int attempt = 0;; ++attempt) {
    Txn txn(db_, RocksWriteOptions(w));
    std::string value;
    rocksdb::Status rs = txn->GetForUpdate(rocksdb::ReadOptions(), docs_cf_, key, &value);
    if (rs.IsNotFound()) return Status::OK();
    Status s = FromRocks(rs);
    if (s.ok()) {
      RecordView rec;
      RETURN_IF_ERROR(DecodeRecord(value, &rec));
      if (!matcher.Matches(&rec.doc)) return Status::OK();
      if (out->want_before) out->before = Document::Copy(&rec.doc);
      s = FromRocks(txn->Delete(docs_cf_, key));
      if (s.ok()) s = txn.Commit();
    }
    if (IsLockConflict(s) && attempt < kMaxWriteRetries) {
      BackoffBeforeRetry(attempt);
      continue;
    }
    RETURN_IF_ERROR(s);
    out->matched = true;
    out->modified = true;
    return Status::OK();
  }
}

Status DBImpl::UpdateStatementImpl(const Collection& coll, const UpdateStatement& stmt, size_t index,
                                   const WriteOptionsInternal& w, UpdateWriteResult* result) {
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(stmt.q.bson()));
  update::UpdateOptions uopts;
  uopts.version_field = coll.info.options.version_field;
  ASSIGN_OR_RETURN(std::unique_ptr<update::UpdateDriver> driver, update::UpdateDriver::Parse(stmt.u.bson(), uopts));
  if (stmt.multi && driver->is_replacement()) {
    return Status(ErrorCode::kFailedToParse, "multi update is not supported for replacement-style update");
  }
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> keys;
    RETURN_IF_ERROR(CandidateKeys(coll, stmt.q.bson(), *matcher, stmt.multi ? 0 : 1, &keys));
    bool matched_any = false;
    // A single-document update whose candidate stopped matching before it
    // was locked looks again.
    for (size_t k = 0; k < keys.size(); ++k) {
      WriteOutcome o;
      RETURN_IF_ERROR(UpdateDocument(coll, keys[k], *matcher, *driver, w, &o));
      if (o.matched) {
        matched_any = true;
        ++result->n;
        if (o.modified) ++result->n_modified;
        if (!stmt.multi) break;
      }
    }
    if (!matched_any && !stmt.multi && !keys.empty() && attempt < kMaxWriteRetries) continue;
    if (matched_any || !stmt.upsert) return Status::OK();
    WriteOutcome o;
    RETURN_IF_ERROR(UpsertDocument(coll, stmt.q.bson(), *driver, w, &o));
    if (o.raced && attempt < kMaxWriteRetries) continue;  // retry as an update
    if (o.raced) return Status(ErrorCode::kWriteConflict, "upsert kept racing with concurrent inserts");
    ++result->n;
    result->upserted.push_back(Upserted{index, std::move(*o.upserted_id)});
    return Status::OK();
  }
}

StatusOr<UpdateWriteResult> DBImpl::Update(const UpdateRequest& req) {
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
  std::shared_lock<std::shared_mutex> drop;
  if (coll) {
    drop = std::shared_lock<std::shared_mutex>(coll->drop_mu);
    if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during update");
  }
  for (size_t i = 0; i < req.updates.size(); ++i) {
    Status s;
    if (coll) {
      s = UpdateStatementImpl(*coll, req.updates[i], i, req.write, &result);
    } else {
      // No collection: nothing matches, but the statement must still parse.
      auto m = query::Matcher::Parse(req.updates[i].q.bson());
      s = m.ok() ? update::UpdateDriver::Parse(req.updates[i].u.bson(), update::UpdateOptions()).status() : m.status();
    }
    if (!s.ok()) {
      result.write_errors.push_back(WriteError{i, s, std::nullopt});
      if (req.ordered) break;
    }
  }
  return result;
}

Status DBImpl::DeleteStatementImpl(const Collection& coll, const DeleteStatement& stmt,
                                   const WriteOptionsInternal& w, int64_t* n) {
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(stmt.q.bson()));
  if (stmt.limit != 0 && stmt.limit != 1) {
    return Status(ErrorCode::kFailedToParse, "The limit field in delete objects must be 0 or 1. Got " +
                                                 std::to_string(stmt.limit));
  }
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> keys;
    RETURN_IF_ERROR(CandidateKeys(coll, stmt.q.bson(), *matcher, stmt.limit, &keys));
    bool deleted_any = false;
    for (const std::string& key : keys) {
      WriteOutcome o;
      RETURN_IF_ERROR(DeleteDocument(coll, key, *matcher, w, &o));
      if (o.matched) {
        deleted_any = true;
        ++*n;
        if (stmt.limit == 1) break;
      }
    }
    if (stmt.limit == 1 && !deleted_any && !keys.empty() && attempt < kMaxWriteRetries) continue;
    return Status::OK();
  }
}

StatusOr<DeleteWriteResult> DBImpl::Delete(const DeleteRequest& req) {
  DeleteWriteResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) RETURN_IF_ERROR(ValidateNamespace(req.ns));
  std::shared_lock<std::shared_mutex> drop;
  if (coll) {
    drop = std::shared_lock<std::shared_mutex>(coll->drop_mu);
    if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during delete");
  }
  for (size_t i = 0; i < req.deletes.size(); ++i) {
    Status s;
    if (coll) {
      s = DeleteStatementImpl(*coll, req.deletes[i], req.write, &result.n);
    } else {
      s = query::Matcher::Parse(req.deletes[i].q.bson()).status();
    }
    if (!s.ok()) {
      result.write_errors.push_back(WriteError{i, s, std::nullopt});
      if (req.ordered) break;
    }
  }
  return result;
}

}  // namespace gatedb
