// The typed Collection API: each call fills the engine request that the
// command dispatcher would build and calls the same DBImpl entry point, with
// no BSON round trip: keyed writes (writeContext with task_id and
// write_seq) too, since the engine owns the idempotency protocol.
#include "gatedb/collection.h"

#include <chrono>

#include "api/src/database_rep.h"
#include "engine/index/index_spec.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/write_events.h"
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

// A hint as the engine takes it: an index name, or a document (a key
// pattern or {$natural: 1}).
std::optional<Value> HintValue(const std::string& name, const Document& doc) {
  bson_value_t v;
  if (!name.empty()) {
    v.value_type = BSON_TYPE_UTF8;
    v.value.v_utf8.str = const_cast<char*>(name.c_str());
    v.value.v_utf8.len = static_cast<uint32_t>(name.size());
    return Value(v);
  }
  if (doc.empty()) return std::nullopt;
  v.value_type = BSON_TYPE_DOCUMENT;
  v.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(doc.bson()));
  v.value.v_doc.data_len = doc.bson()->len;
  return Value(v);
}

WriteOptionsInternal Internal(const WriteOptions& w, WriteScope* scope) {
  WriteOptionsInternal o;
  o.sync = w.sync;
  o.context = w.context;
  o.scope = scope;
  o.bypass_document_validation = w.bypass_document_validation;
  return o;
}

}  // namespace

StatusOr<InsertOneResult> Collection::InsertOne(DocumentView doc, const WriteOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<InsertOneResult> {
    InsertRequest req;
    req.ns = Namespace{db_name_, name_};
    req.documents.push_back(CopyOrEmpty(doc));
    req.ordered = options.ordered;
    req.write = Internal(options, scope);
    req.write.principal = caller;
    ASSIGN_OR_RETURN(InsertResult r, db_->rep_->db->Insert(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    InsertOneResult out;
    if (!r.inserted_ids.empty()) out.inserted_id = std::move(r.inserted_ids[0]);
    out.replayed = r.replayed;
    return out;
  });
}

StatusOr<InsertManyResult> Collection::InsertMany(const std::vector<Document>& docs, const WriteOptions& options) {
  if (docs.empty()) return Status(ErrorCode::kInvalidLength, "InsertMany needs at least one document");
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<InsertManyResult> {
    InsertRequest req;
    req.ns = Namespace{db_name_, name_};
    req.documents = docs;
    req.ordered = options.ordered;
    req.write = Internal(options, scope);
    req.write.principal = caller;
    ASSIGN_OR_RETURN(InsertResult r, db_->rep_->db->Insert(req));
    // Inside a transaction a failed document fails the whole transaction.
    if (scope != nullptr && !r.write_errors.empty()) return r.write_errors[0].status;
    InsertManyResult out;
    out.inserted_ids = std::move(r.inserted_ids);
    for (auto& e : r.write_errors) out.write_errors.push_back(WriteErrorInfo{e.index, e.status});
    out.replayed = r.replayed;
    return out;
  });
}

StatusOr<std::vector<Document>> Collection::Find(DocumentView filter, const FindOptions& options) {
  return FindImpl(filter, options, options.limit);
}

StatusOr<std::vector<Document>> Collection::FindImpl(DocumentView filter, const FindOptions& options,
                                                     int64_t limit) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  if (options.lock_documents && options.txn == nullptr) {
    return Status(ErrorCode::kBadValue, "lock_documents needs a transaction");
  }
  return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<std::vector<Document>> {
    FindRequest req;
    req.ns = Namespace{db_name_, name_};
    req.filter = CopyOrEmpty(filter);
    req.projection = options.projection;
    req.sort = options.sort;
    req.skip = options.skip;
    req.limit = limit;
    req.scope = scope;
    req.lock_documents = options.lock_documents;
    req.hint = HintValue(options.hint_name, options.hint);
    req.allow_disk_use = options.allow_disk_use;
    req.max_time_ms = options.max_time_ms;
    ASSIGN_OR_RETURN(FindResult r, db_->rep_->db->Find(req));
    return std::move(r.docs);
  });
}

struct Cursor::Rep {
  DBImpl* db = nullptr;
  std::string ns;
  Transaction* txn = nullptr;
  int64_t id = 0;
  int64_t batch_size = 101;
  std::vector<Document> batch;
  size_t pos = 0;
};

Cursor::Cursor(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Cursor::Cursor(Cursor&& other) noexcept = default;
Cursor& Cursor::operator=(Cursor&& other) noexcept {
  if (this != &other) {
    Cursor dying(std::move(*this));  // closes the cursor this one held
    rep_ = std::move(other.rep_);
  }
  return *this;
}
Cursor::~Cursor() {
  if (rep_ != nullptr && rep_->id != 0) rep_->db->KillCursors(rep_->ns, {rep_->id});
}

int64_t Cursor::id() const { return rep_ != nullptr ? rep_->id : 0; }

StatusOr<bool> Cursor::Next(Document* doc) {
  if (rep_ == nullptr) return false;
  Rep& r = *rep_;
  while (r.pos == r.batch.size()) {
    if (r.id == 0) return false;
    StatusOr<CursorPage> page = InTxn(r.txn, r.db, [&](WriteScope* scope) -> StatusOr<CursorPage> {
      CursorRequest req;
      req.batch_size = r.batch_size;
      req.scope = scope;
      return r.db->GetMore(r.id, r.ns, req);
    });
    if (!page.ok()) {
      r.id = 0;  // the store dropped it
      return page.status();
    }
    r.batch = std::move(page->batch.docs);
    r.pos = 0;
    r.id = page->cursor_id;
  }
  *doc = std::move(r.batch[r.pos++]);
  return true;
}

StatusOr<Cursor> Collection::FindCursor(DocumentView filter, const FindOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  if (options.lock_documents && options.txn == nullptr) {
    return Status(ErrorCode::kBadValue, "lock_documents needs a transaction");
  }
  if (options.batch_size <= 0) return Status(ErrorCode::kBadValue, "batch_size must be positive");
  DBImpl* db = db_->rep_->db.get();
  auto rep = std::make_unique<Cursor::Rep>();
  rep->db = db;
  rep->ns = Namespace{db_name_, name_}.full();
  rep->txn = options.txn;
  rep->batch_size = options.batch_size;
  StatusOr<CursorPage> first = InTxn(options.txn, db, [&](WriteScope* scope) -> StatusOr<CursorPage> {
    FindRequest req;
    req.ns = Namespace{db_name_, name_};
    req.filter = CopyOrEmpty(filter);
    req.projection = options.projection;
    req.sort = options.sort;
    req.skip = options.skip;
    req.limit = options.limit;
    req.scope = scope;
    req.lock_documents = options.lock_documents;
    req.hint = HintValue(options.hint_name, options.hint);
    req.allow_disk_use = options.allow_disk_use;
    req.max_time_ms = options.max_time_ms;
    CursorRequest page;
    page.batch_size = options.limit > 0 ? std::min(options.limit, options.batch_size) : options.batch_size;
    page.scope = scope;
    return db->FindPage(req, page);
  });
  if (!first.ok()) return first.status();
  rep->batch = std::move(first->batch.docs);
  rep->id = first->cursor_id;
  return Cursor(std::move(rep));
}

StatusOr<Cursor> Collection::Aggregate(DocumentView pipeline, const AggregateOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  if (options.batch_size <= 0) return Status(ErrorCode::kBadValue, "batch_size must be positive");
  DBImpl* db = db_->rep_->db.get();
  auto rep = std::make_unique<Cursor::Rep>();
  rep->db = db;
  rep->ns = Namespace{db_name_, name_}.full();
  rep->txn = options.txn;
  rep->batch_size = options.batch_size;
  StatusOr<CursorPage> first = InTxn(options.txn, db, [&](WriteScope* scope) -> StatusOr<CursorPage> {
    AggregateRequest req;
    req.ns = Namespace{db_name_, name_};
    req.pipeline = CopyOrEmpty(pipeline);
    req.allow_disk_use = options.allow_disk_use;
    req.max_time_ms = options.max_time_ms;
    req.hint = HintValue(options.hint_name, options.hint);
    req.let = options.let;
    req.scope = scope;
    req.write = Internal(options.write, nullptr);
    req.write.principal = caller;
    CursorRequest page;
    page.batch_size = options.batch_size;
    page.scope = scope;
    return db->AggregatePage(req, page);
  });
  if (!first.ok()) return first.status();
  rep->batch = std::move(first->batch.docs);
  rep->id = first->cursor_id;
  return Cursor(std::move(rep));
}

StatusOr<std::optional<Document>> Collection::FindOne(DocumentView filter, const FindOptions& options) {
  bson_value_t id;
  if (options.projection.empty() && options.sort.empty() && options.skip == 0 && !options.lock_documents &&
      IdOnlyFilter(filter.bson(), &id)) {
    // The agent's read of its basis: one point read, no matcher, no copies
    // of the request.
    ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
    if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
    return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) {
      return db_->rep_->db->FindById(Namespace{db_name_, name_}, id, scope);
    });
  }
  ASSIGN_OR_RETURN(std::vector<Document> docs, FindImpl(filter, options, 1));
  if (docs.empty()) return std::optional<Document>();
  return std::optional<Document>(std::move(docs[0]));
}

StatusOr<UpdateResult> Collection::UpdateImpl(DocumentView filter, DocumentView update, bool multi,
                                              const UpdateOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  return InTxn(options.write.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<UpdateResult> {
    UpdateRequest req;
    req.ns = Namespace{db_name_, name_};
    UpdateStatement stmt;
    stmt.q = CopyOrEmpty(filter);
    stmt.u = CopyOrEmpty(update);
    stmt.upsert = options.upsert;
    stmt.multi = multi;
    stmt.basis_version = options.write.basis_version;
    req.updates.push_back(std::move(stmt));
    req.ordered = options.write.ordered;
    req.write = Internal(options.write, scope);
    req.write.principal = caller;
    ASSIGN_OR_RETURN(UpdateWriteResult r, db_->rep_->db->Update(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    UpdateResult out;
    out.matched_count = r.n - static_cast<int64_t>(r.upserted.size());
    out.modified_count = r.n_modified;
    if (!r.upserted.empty()) out.upserted_id = std::move(r.upserted[0].id);
    out.replayed = r.replayed;
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

StatusOr<DeleteResult> Collection::DeleteOne(DocumentView filter, const WriteOptions& options) {
  return DeleteImpl(filter, 1, options);
}

StatusOr<DeleteResult> Collection::DeleteMany(DocumentView filter, const WriteOptions& options) {
  return DeleteImpl(filter, 0, options);
}

StatusOr<DeleteResult> Collection::DeleteImpl(DocumentView filter, int64_t limit, const WriteOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<DeleteResult> {
    DeleteRequest req;
    req.ns = Namespace{db_name_, name_};
    req.deletes.push_back(DeleteStatement{CopyOrEmpty(filter), limit, options.basis_version, std::nullopt});
    req.ordered = options.ordered;
    req.write = Internal(options, scope);
    req.write.principal = caller;
    ASSIGN_OR_RETURN(DeleteWriteResult r, db_->rep_->db->Delete(req));
    if (!r.write_errors.empty()) return r.write_errors[0].status;
    DeleteResult out;
    out.deleted_count = r.n;
    out.replayed = r.replayed;
    return out;
  });
}

StatusOr<std::optional<Document>> Collection::FindAndModifyImpl(DocumentView filter, const Document* update,
                                                                bool remove,
                                                                const FindOneAndModifyOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  return InTxn(options.write.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<std::optional<Document>> {
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
    req.write = Internal(options.write, scope);
    req.write.principal = caller;
    ASSIGN_OR_RETURN(FindAndModifyResult r, db_->rep_->db->FindAndModify(req));
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
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  return InTxn(options.txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<int64_t> {
    CountRequest req;
    req.ns = Namespace{db_name_, name_};
    req.query = CopyOrEmpty(filter);
    req.skip = options.skip;
    req.limit = options.limit;
    req.scope = scope;
    req.hint = HintValue(options.hint_name, options.hint);
    return db_->rep_->db->Count(req);
  });
}

StatusOr<std::vector<Value>> Collection::Distinct(std::string_view key, DocumentView filter, Transaction* txn) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  return InTxn(txn, db_->rep_->db.get(), [&](WriteScope* scope) -> StatusOr<std::vector<Value>> {
    DistinctRequest req;
    req.ns = Namespace{db_name_, name_};
    req.key = std::string(key);
    req.query = CopyOrEmpty(filter);
    req.scope = scope;
    return db_->rep_->db->Distinct(req);
  });
}

StatusOr<std::vector<std::string>> Collection::CreateIndexes(const std::vector<IndexModel>& indexes,
                                                             const std::function<void(uint64_t)>& progress) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kCreateIndex, db_name_, name_));
  std::vector<Document> specs;
  std::vector<std::string> names;
  for (const IndexModel& m : indexes) {
    bson_t* spec = bson_new();
    BSON_APPEND_DOCUMENT(spec, "key", m.keys.bson());
    if (!m.name.empty()) BSON_APPEND_UTF8(spec, "name", m.name.c_str());
    if (m.unique) BSON_APPEND_BOOL(spec, "unique", true);
    if (m.sparse) BSON_APPEND_BOOL(spec, "sparse", true);
    if (!m.partial_filter.empty()) BSON_APPEND_DOCUMENT(spec, "partialFilterExpression", m.partial_filter.bson());
    if (m.expire_after_seconds) BSON_APPEND_INT64(spec, "expireAfterSeconds", *m.expire_after_seconds);
    names.push_back(m.name.empty() ? index::DefaultIndexName(m.keys.bson()) : m.name);
    specs.push_back(Document::Adopt(spec));
  }
  ASSIGN_OR_RETURN(CreateIndexesResult r, db_->rep_->db->CreateIndexes(Namespace{db_name_, name_}, specs, progress));
  (void)r;
  return names;
}

StatusOr<std::string> Collection::CreateIndex(const IndexModel& index) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, CreateIndexes({index}));
  return names[0];
}

StatusOr<std::vector<Document>> Collection::ListIndexes() {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kListIndexes, db_name_, name_));
  return db_->rep_->db->ListIndexes(Namespace{db_name_, name_});
}

Status Collection::DropIndex(const std::string& name) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kDropIndex, db_name_, name_));
  ASSIGN_OR_RETURN(int was, db_->rep_->db->DropIndexes(Namespace{db_name_, name_}, {name}, nullptr));
  (void)was;
  return Status::OK();
}

StatusOr<Document> Collection::Explain(DocumentView filter, const FindOptions& options, const std::string& verbosity) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  ExplainRequest req;
  req.kind = ExplainRequest::Kind::kFind;
  req.verbosity = verbosity;
  req.find.ns = Namespace{db_name_, name_};
  req.find.filter = CopyOrEmpty(filter);
  req.find.projection = options.projection;
  req.find.sort = options.sort;
  req.find.skip = options.skip;
  req.find.limit = options.limit;
  req.find.hint = HintValue(options.hint_name, options.hint);
  return db_->rep_->db->Explain(req);
}

StatusOr<GatedWriteResult> Collection::WriteWithVersionGate(DocumentView filter, const GatedUpdateFn& fn,
                                                            const GatedWriteOptions& options) {
  ASSIGN_OR_RETURN(CollectionInfo info, db_->rep_->db->GetCollectionInfo(Namespace{db_name_, name_}));
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
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(CheckLeaseCall(*caller, db_name_, name_, holder));
  ASSIGN_OR_RETURN(LeaseInfo l, db_->rep_->db->AcquireLease(Namespace{db_name_, name_}, id.get(), ttl_ms, holder));
  return ToLease(l);
}

StatusOr<Lease> Collection::RenewLease(const Value& id, int64_t ttl_ms, const std::string& holder) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(CheckLeaseCall(*caller, db_name_, name_, holder));
  ASSIGN_OR_RETURN(LeaseInfo l, db_->rep_->db->RenewLease(Namespace{db_name_, name_}, id.get(), ttl_ms, holder));
  return ToLease(l);
}

StatusOr<Lease> Collection::ReleaseLease(const Value& id, const std::string& holder) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(CheckLeaseCall(*caller, db_name_, name_, holder));
  ASSIGN_OR_RETURN(LeaseInfo l, db_->rep_->db->ReleaseLease(Namespace{db_name_, name_}, id.get(), holder));
  return ToLease(l);
}

StatusOr<std::vector<FieldVersions>> Collection::GetFieldVersions(DocumentView filter) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  FindRequest req;
  req.ns = Namespace{db_name_, name_};
  req.filter = CopyOrEmpty(filter);
  req.field_versions = true;
  ASSIGN_OR_RETURN(FindResult r, db_->rep_->db->Find(req));
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
