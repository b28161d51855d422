// The typed Collection API: each call fills the engine request that the
// command dispatcher would build and calls the same DBImpl entry point.
#include "gatedb/collection.h"

#include <chrono>

#include "engine/storage/db_impl.h"
#include "engine/storage/write_events.h"
#include "api/src/txn_manager.h"
#include "gatedb/db.h"

namespace gatedb {

namespace {

bool HasOperatorKey(DocumentView doc, bool* all_operators) {
  bson_iter_t it;
  bool any = false, all = true;
  if (doc.bson() && bson_iter_init(&it, doc.bson())) {
    while (bson_iter_next(&it)) {
      bool op = bson_iter_key(&it)[0] == '$';
      any |= op;
      all &= op;
    }
  }
  *all_operators = all;
  return any;
}

Document CopyOrEmpty(DocumentView v) { return v.bson() ? Document::Copy(v.bson()) : Document(); }

WriteOptionsInternal Internal(const WriteOptions& w) {
  WriteOptionsInternal o;
  o.sync = w.sync;
  o.context = w.context;
  return o;
}

bool Keyed(const WriteOptions& w) {
  return w.txn == nullptr && !w.context.task_id.empty() && w.context.write_seq.has_value();
}

// Runs fn(scope) inside `txn` (scope null without one); a failure aborts
// the transaction, as MongoDB does.
template <typename Fn>
auto InTxn(Transaction* txn, DBImpl* db, Fn&& fn) -> decltype(fn(nullptr)) {
  if (txn == nullptr) return fn(nullptr);
  TxnUse use(txn->impl(), db->NowMs());
  if (!use.status().ok()) return use.status();
  auto r = fn(use.scope());
  if (!r.ok()) use.AbortOnError(r.status());
  return r;
}

// The Status an {ok: 0} reply or a writeErrors entry stands for.
Status StatusFromReplyEntry(const bson_t* entry) {
  bson_iter_t it;
  int code = bson_iter_init_find(&it, entry, "code") ? static_cast<int>(bson_iter_as_int64(&it)) : 1;
  std::string msg = bson_iter_init_find(&it, entry, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, nullptr) : "";
  std::shared_ptr<const Document> info;
  if (bson_iter_init_find(&it, entry, "errInfo") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    info = std::make_shared<const Document>(Document::Adopt(bson_new_from_data(data, len)));
  }
  return Status(static_cast<ErrorCode>(code), msg, info);
}

// writeErrors of a reply, in order.
std::vector<WriteErrorInfo> WriteErrorsOf(const bson_t* reply) {
  std::vector<WriteErrorInfo> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, reply, "writeErrors") || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&arr, &len, &data);
    bson_t e;
    if (!bson_init_static(&e, data, len)) continue;
    bson_iter_t idx;
    size_t index = bson_iter_init_find(&idx, &e, "index") ? static_cast<size_t>(bson_iter_as_int64(&idx)) : 0;
    out.push_back(WriteErrorInfo{index, StatusFromReplyEntry(&e)});
  }
  return out;
}

int64_t IntField(const bson_t* reply, const char* path) {
  bson_iter_t it, f;
  if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, path, &f)) return bson_iter_as_int64(&f);
  return 0;
}

bool Replayed(const bson_t* reply) {
  bson_iter_t it;
  return bson_iter_init_find(&it, reply, "replayed") && bson_iter_as_bool(&it);
}

std::vector<Value> ValuesOf(const bson_t* reply, const char* field, const char* sub) {
  std::vector<Value> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, reply, field) || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) {
    if (sub == nullptr) {
      out.emplace_back(*bson_iter_value(&arr));
    } else {
      bson_iter_t d, f;
      if (bson_iter_recurse(&arr, &d) && bson_iter_find(&d, sub)) out.emplace_back(*bson_iter_value(&d));
      (void)f;
    }
  }
  return out;
}

bson_t* NewCommand(const char* name, const std::string& coll) {
  bson_t* cmd = bson_new();
  bson_append_utf8(cmd, name, -1, coll.c_str(), -1);
  return cmd;
}

void FinishCommand(bson_t* cmd, const std::string& db, const WriteOptions& w) {
  BSON_APPEND_BOOL(cmd, "ordered", w.ordered);
  BSON_APPEND_UTF8(cmd, "$db", db.c_str());
  AppendWriteContext(cmd, "writeContext", w.context);
  if (w.sync) {
    bson_t wc;
    BSON_APPEND_DOCUMENT_BEGIN(cmd, "writeConcern", &wc);
    BSON_APPEND_BOOL(&wc, "j", true);
    bson_append_document_end(cmd, &wc);
  }
}

}  // namespace

StatusOr<Document> Collection::RunKeyed(bson_t* command, const WriteOptions& options) {
  FinishCommand(command, db_name_, options);
  Document cmd = Document::Adopt(command);
  Document reply = db_->RunCommand(cmd.view());
  bson_iter_t it;
  if (!bson_iter_init_find(&it, reply.bson(), "ok") || bson_iter_as_double(&it) != 1.0) {
    return StatusFromReplyEntry(reply.bson());
  }
  return reply;
}

StatusOr<InsertOneResult> Collection::InsertOne(DocumentView doc, const WriteOptions& options) {
  if (Keyed(options)) {
    bson_t* cmd = NewCommand("insert", name_);
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
    BSON_APPEND_DOCUMENT(&arr, "0", doc.bson());
    bson_append_array_end(cmd, &arr);
    ASSIGN_OR_RETURN(Document reply, RunKeyed(cmd, options));
    std::vector<WriteErrorInfo> errors = WriteErrorsOf(reply.bson());
    if (!errors.empty()) return errors[0].status;
    std::vector<Value> ids = ValuesOf(reply.bson(), "insertedIds", nullptr);
    InsertOneResult out;
    if (!ids.empty()) out.inserted_id = std::move(ids[0]);
    out.replayed = Replayed(reply.bson());
    return out;
  }
  return InTxn(options.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<InsertOneResult> {
    InsertRequest req;
    req.ns = Namespace{db_name_, name_};
    req.documents.push_back(CopyOrEmpty(doc));
    req.write = Internal(options);
    req.write.scope = scope;
    ASSIGN_OR_RETURN(InsertResult r, db_->impl()->Insert(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    return InsertOneResult{std::move(r.inserted_ids.at(0))};
  });
}

StatusOr<InsertManyResult> Collection::InsertMany(const std::vector<Document>& docs, const WriteOptions& options) {
  if (docs.empty()) return Status(ErrorCode::kInvalidLength, "InsertMany needs at least one document");
  if (Keyed(options)) {
    bson_t* cmd = NewCommand("insert", name_);
    bson_t arr;
    char keybuf[16];
    BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
    for (size_t i = 0; i < docs.size(); ++i) {
      const char* key;
      bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
      BSON_APPEND_DOCUMENT(&arr, key, docs[i].bson());
    }
    bson_append_array_end(cmd, &arr);
    ASSIGN_OR_RETURN(Document reply, RunKeyed(cmd, options));
    InsertManyResult out;
    out.inserted_ids = ValuesOf(reply.bson(), "insertedIds", nullptr);
    out.write_errors = WriteErrorsOf(reply.bson());
    out.replayed = Replayed(reply.bson());
    return out;
  }
  return InTxn(options.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<InsertManyResult> {
    InsertRequest req;
    req.ns = Namespace{db_name_, name_};
    req.documents = docs;
    req.ordered = options.ordered;
    req.write = Internal(options);
    req.write.scope = scope;
    ASSIGN_OR_RETURN(InsertResult r, db_->impl()->Insert(req));
    // Inside a transaction a failed document fails the whole transaction.
    if (scope != nullptr && !r.write_errors.empty()) return r.write_errors[0].status;
    InsertManyResult out;
    out.inserted_ids = std::move(r.inserted_ids);
    for (auto& e : r.write_errors) out.write_errors.push_back(WriteErrorInfo{e.index, e.status});
    return out;
  });
}

StatusOr<std::vector<Document>> Collection::Find(DocumentView filter, const FindOptions& options) {
  return FindImpl(filter, options, options.limit);
}

StatusOr<std::vector<Document>> Collection::FindImpl(DocumentView filter, const FindOptions& options,
                                                     int64_t limit) {
  if (options.lock_documents && options.txn == nullptr) {
    return Status(ErrorCode::kBadValue, "lock_documents needs a transaction");
  }
  return InTxn(options.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<std::vector<Document>> {
    FindRequest req;
    req.ns = Namespace{db_name_, name_};
    req.filter = CopyOrEmpty(filter);
    req.projection = options.projection;
    req.sort = options.sort;
    req.skip = options.skip;
    req.limit = limit;
    req.scope = scope;
    req.lock_documents = options.lock_documents;
    ASSIGN_OR_RETURN(FindResult r, db_->impl()->Find(req));
    return std::move(r.docs);
  });
}

StatusOr<std::optional<Document>> Collection::FindOne(DocumentView filter, const FindOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Document> docs, FindImpl(filter, options, 1));
  if (docs.empty()) return std::optional<Document>();
  return std::optional<Document>(std::move(docs[0]));
}

StatusOr<UpdateResult> Collection::UpdateImpl(DocumentView filter, DocumentView update, bool multi,
                                              const UpdateOptions& options) {
  if (Keyed(options.write)) {
    bson_t* cmd = NewCommand("update", name_);
    bson_t arr, stmt;
    BSON_APPEND_ARRAY_BEGIN(cmd, "updates", &arr);
    BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &stmt);
    BSON_APPEND_DOCUMENT(&stmt, "q", CopyOrEmpty(filter).bson());
    BSON_APPEND_DOCUMENT(&stmt, "u", CopyOrEmpty(update).bson());
    BSON_APPEND_BOOL(&stmt, "upsert", options.upsert);
    BSON_APPEND_BOOL(&stmt, "multi", multi);
    if (options.write.basis_version) BSON_APPEND_INT64(&stmt, "basisVersion", *options.write.basis_version);
    bson_append_document_end(&arr, &stmt);
    bson_append_array_end(cmd, &arr);
    ASSIGN_OR_RETURN(Document reply, RunKeyed(cmd, options.write));
    std::vector<WriteErrorInfo> errors = WriteErrorsOf(reply.bson());
    if (!errors.empty()) return errors[0].status;
    UpdateResult out;
    std::vector<Value> upserted = ValuesOf(reply.bson(), "upserted", "_id");
    out.matched_count = IntField(reply.bson(), "n") - static_cast<int64_t>(upserted.size());
    out.modified_count = IntField(reply.bson(), "nModified");
    if (!upserted.empty()) out.upserted_id = std::move(upserted[0]);
    out.replayed = Replayed(reply.bson());
    return out;
  }
  return InTxn(options.write.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<UpdateResult> {
    UpdateRequest req;
    req.ns = Namespace{db_name_, name_};
    UpdateStatement stmt;
    stmt.q = CopyOrEmpty(filter);
    stmt.u = CopyOrEmpty(update);
    stmt.upsert = options.upsert;
    stmt.multi = multi;
    stmt.basis_version = options.write.basis_version;
    req.updates.push_back(std::move(stmt));
    req.write = Internal(options.write);
    req.write.scope = scope;
    ASSIGN_OR_RETURN(gatedb::UpdateWriteResult r, db_->impl()->Update(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    UpdateResult out;
    out.matched_count = r.n - static_cast<int64_t>(r.upserted.size());
    out.modified_count = r.n_modified;
    if (!r.upserted.empty()) out.upserted_id = std::move(r.upserted[0].id);
    return out;
  });
}

StatusOr<UpdateResult> Collection::UpdateOne(DocumentView filter, DocumentView update, const UpdateOptions& options) {
  bool all_ops = true;
  if (!HasOperatorKey(update, &all_ops) || !all_ops) {
    return Status(ErrorCode::kFailedToParse, "update document requires atomic operators");
  }
  return UpdateImpl(filter, update, false, options);
}

StatusOr<UpdateResult> Collection::UpdateMany(DocumentView filter, DocumentView update, const UpdateOptions& options) {
  bool all_ops = true;
  if (!HasOperatorKey(update, &all_ops) || !all_ops) {
    return Status(ErrorCode::kFailedToParse, "update document requires atomic operators");
  }
  return UpdateImpl(filter, update, true, options);
}

StatusOr<UpdateResult> Collection::ReplaceOne(DocumentView filter, DocumentView replacement,
                                              const UpdateOptions& options) {
  bool all_ops = true;
  if (HasOperatorKey(replacement, &all_ops)) {
    return Status(ErrorCode::kFailedToParse, "replacement document must not contain update operators");
  }
  return UpdateImpl(filter, replacement, false, options);
}

StatusOr<DeleteResult> Collection::DeleteKeyed(DocumentView filter, int64_t limit, const WriteOptions& options) {
  bson_t* cmd = NewCommand("delete", name_);
  bson_t arr, stmt;
  BSON_APPEND_ARRAY_BEGIN(cmd, "deletes", &arr);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &stmt);
  BSON_APPEND_DOCUMENT(&stmt, "q", CopyOrEmpty(filter).bson());
  BSON_APPEND_INT64(&stmt, "limit", limit);
  if (options.basis_version) BSON_APPEND_INT64(&stmt, "basisVersion", *options.basis_version);
  bson_append_document_end(&arr, &stmt);
  bson_append_array_end(cmd, &arr);
  ASSIGN_OR_RETURN(Document reply, RunKeyed(cmd, options));
  std::vector<WriteErrorInfo> errors = WriteErrorsOf(reply.bson());
  if (!errors.empty()) return errors[0].status;
  DeleteResult out;
  out.deleted_count = IntField(reply.bson(), "n");
  out.replayed = Replayed(reply.bson());
  return out;
}

StatusOr<DeleteResult> Collection::DeleteOne(DocumentView filter, const WriteOptions& options) {
  return DeleteImpl(filter, 1, options);
}

StatusOr<DeleteResult> Collection::DeleteMany(DocumentView filter, const WriteOptions& options) {
  return DeleteImpl(filter, 0, options);
}

StatusOr<DeleteResult> Collection::DeleteImpl(DocumentView filter, int64_t limit, const WriteOptions& options) {
  if (Keyed(options)) return DeleteKeyed(filter, limit, options);
  return InTxn(options.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<DeleteResult> {
    DeleteRequest req;
    req.ns = Namespace{db_name_, name_};
    req.deletes.push_back(DeleteStatement{CopyOrEmpty(filter), limit, options.basis_version});
    req.write = Internal(options);
    req.write.scope = scope;
    ASSIGN_OR_RETURN(gatedb::DeleteWriteResult r, db_->impl()->Delete(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    return DeleteResult{r.n};
  });
}

StatusOr<std::optional<Document>> Collection::FindAndModifyImpl(DocumentView filter, const Document* update,
                                                                bool remove,
                                                                const FindOneAndModifyOptions& options) {
  if (Keyed(options.write)) {
    bson_t* cmd = NewCommand("findAndModify", name_);
    BSON_APPEND_DOCUMENT(cmd, "query", CopyOrEmpty(filter).bson());
    if (!options.sort.empty()) BSON_APPEND_DOCUMENT(cmd, "sort", options.sort.bson());
    if (!options.projection.empty()) BSON_APPEND_DOCUMENT(cmd, "fields", options.projection.bson());
    if (update) {
      BSON_APPEND_DOCUMENT(cmd, "update", update->bson());
    } else {
      BSON_APPEND_BOOL(cmd, "remove", true);
    }
    if (options.return_after) BSON_APPEND_BOOL(cmd, "new", true);
    if (options.upsert) BSON_APPEND_BOOL(cmd, "upsert", true);
    if (options.write.basis_version) BSON_APPEND_INT64(cmd, "basisVersion", *options.write.basis_version);
    WriteOptions w = options.write;
    ASSIGN_OR_RETURN(Document reply, RunKeyed(cmd, w));
    bson_iter_t it;
    if (!bson_iter_init_find(&it, reply.bson(), "value") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return std::optional<Document>();
    }
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    return std::optional<Document>(Document::Adopt(bson_new_from_data(data, len)));
  }
  return InTxn(options.write.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<std::optional<Document>> {
    FindAndModifyRequest req;
    req.ns = Namespace{db_name_, name_};
    req.query = CopyOrEmpty(filter);
    req.sort = options.sort;
    req.fields = options.projection;
    if (update) req.update = *update;
    req.remove = remove;
    req.return_new = options.return_after;
    req.upsert = options.upsert;
    req.basis_version = options.write.basis_version;
    req.write = Internal(options.write);
    req.write.scope = scope;
    ASSIGN_OR_RETURN(FindAndModifyResult r, db_->impl()->FindAndModify(req));
    return std::move(r.value);
  });
}

StatusOr<std::optional<Document>> Collection::FindOneAndUpdate(DocumentView filter, DocumentView update,
                                                               const FindOneAndModifyOptions& options) {
  bool all_ops = true;
  if (!HasOperatorKey(update, &all_ops) || !all_ops) {
    return Status(ErrorCode::kFailedToParse, "update document requires atomic operators");
  }
  Document u = CopyOrEmpty(update);
  return FindAndModifyImpl(filter, &u, false, options);
}

StatusOr<std::optional<Document>> Collection::FindOneAndReplace(DocumentView filter, DocumentView replacement,
                                                                const FindOneAndModifyOptions& options) {
  bool all_ops = true;
  if (HasOperatorKey(replacement, &all_ops)) {
    return Status(ErrorCode::kFailedToParse, "replacement document must not contain update operators");
  }
  Document u = CopyOrEmpty(replacement);
  return FindAndModifyImpl(filter, &u, false, options);
}

StatusOr<std::optional<Document>> Collection::FindOneAndDelete(DocumentView filter,
                                                               const FindOneAndModifyOptions& options) {
  return FindAndModifyImpl(filter, nullptr, true, options);
}

StatusOr<int64_t> Collection::CountDocuments(DocumentView filter, const CountOptions& options) {
  return InTxn(options.txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<int64_t> {
    CountRequest req;
    req.ns = Namespace{db_name_, name_};
    req.query = CopyOrEmpty(filter);
    req.skip = options.skip;
    req.limit = options.limit;
    req.scope = scope;
    return db_->impl()->Count(req);
  });
}

StatusOr<std::vector<Value>> Collection::Distinct(std::string_view key, DocumentView filter, Transaction* txn) {
  return InTxn(txn, db_->impl(), [&](WriteScope* scope) -> StatusOr<std::vector<Value>> {
    DistinctRequest req;
    req.ns = Namespace{db_name_, name_};
    req.key = std::string(key);
    req.query = CopyOrEmpty(filter);
    req.scope = scope;
    return db_->impl()->Distinct(req);
  });
}

StatusOr<GatedWriteResult> Collection::WriteWithVersionGate(DocumentView filter, const GatedUpdateFn& fn,
                                                            const GatedWriteOptions& options) {
  ASSIGN_OR_RETURN(CollectionInfo info, db_->impl()->GetCollectionInfo(Namespace{db_name_, name_}));
  const std::string& vf = info.options.version_field;
  Status last = Status(ErrorCode::kBadValue, "max_attempts must be at least 1");
  for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
    int64_t read_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    ASSIGN_OR_RETURN(std::optional<Document> current, FindOne(filter));
    if (!current) {
      return Status(ErrorCode::kNoMatchingDocument, "no document of " + db_name_ + "." + name_ + " matches the filter");
    }
    bson_iter_t it;
    int64_t basis = 0;
    if (bson_iter_init_find(&it, current->bson(), vf.c_str()) && BSON_ITER_HOLDS_NUMBER(&it)) {
      basis = bson_iter_as_int64(&it);
    }
    ASSIGN_OR_RETURN(Document update, fn(*current));
    // Address the document read, by _id: the filter may no longer match it.
    bson_t* by_id = bson_new();
    if (bson_iter_init_find(&it, current->bson(), "_id")) bson_append_iter(by_id, "_id", 3, &it);
    Document id_filter = Document::Adopt(by_id);
    UpdateOptions uo;
    uo.write.sync = options.sync;
    uo.write.context = options.context;
    uo.write.context.read_at_ms = read_at;
    uo.write.basis_version = basis;
    bool all_ops = true;
    bool has_ops = HasOperatorKey(update.view(), &all_ops);
    StatusOr<UpdateResult> r = has_ops ? UpdateImpl(id_filter.view(), update.view(), false, uo)
                                       : ReplaceOne(id_filter.view(), update.view(), uo);
    if (r.ok()) {
      GatedWriteResult out;
      out.matched_count = r->matched_count;
      out.modified_count = r->modified_count;
      out.attempts = attempt;
      out.basis_version = basis;
      return out;
    }
    if (r.status().code() != ErrorCode::kVersionConflict) return r.status();
    last = r.status();
  }
  return last;
}

namespace {
Lease ToLease(const LeaseInfo& l) { return Lease{l.holder, l.expires_at_ms, l.released}; }
}  // namespace

StatusOr<Lease> Collection::AcquireLease(const Value& id, int64_t ttl_ms, const std::string& holder) {
  ASSIGN_OR_RETURN(LeaseInfo l, db_->impl()->AcquireLease(Namespace{db_name_, name_}, id.get(), ttl_ms, holder));
  return ToLease(l);
}

StatusOr<Lease> Collection::RenewLease(const Value& id, int64_t ttl_ms, const std::string& holder) {
  ASSIGN_OR_RETURN(LeaseInfo l, db_->impl()->RenewLease(Namespace{db_name_, name_}, id.get(), ttl_ms, holder));
  return ToLease(l);
}

StatusOr<Lease> Collection::ReleaseLease(const Value& id, const std::string& holder) {
  ASSIGN_OR_RETURN(LeaseInfo l, db_->impl()->ReleaseLease(Namespace{db_name_, name_}, id.get(), holder));
  return ToLease(l);
}

StatusOr<std::vector<FieldVersions>> Collection::GetFieldVersions(DocumentView filter) {
  FindRequest req;
  req.ns = Namespace{db_name_, name_};
  req.filter = CopyOrEmpty(filter);
  req.field_versions = true;
  ASSIGN_OR_RETURN(FindResult r, db_->impl()->Find(req));
  std::vector<FieldVersions> out;
  for (size_t i = 0; i < r.docs.size(); ++i) {
    bson_iter_t it;
    Value id;
    if (bson_iter_init_find(&it, r.docs[i].bson(), "_id")) id = Value(*bson_iter_value(&it));
    out.push_back(FieldVersions{std::move(id), i < r.field_versions.size() ? r.field_versions[i] : Document()});
  }
  return out;
}

}  // namespace gatedb
