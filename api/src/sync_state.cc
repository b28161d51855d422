#include "api/src/sync_state.h"

#include <algorithm>
#include <string_view>

#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace sync_state {

namespace {

std::string RecordKey(const std::string& ns, const Value& id) {
  std::string k = ns;
  k.push_back('\0');
  keys::EncodeValue(id.get(), &k);
  return k;
}

std::string NsPrefix(const std::string& ns) {
  std::string k = ns;
  k.push_back('\0');
  return k;
}

StatusOr<Base> DecodeBase(const bson_t* r) {
  Base b;
  b.exists = true;
  bson_iter_t it;
  if (bson_iter_init_find(&it, r, "doc") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    // A record sync wrote itself (the side record's framing is checked).
    const bson_value_t* v = bson_iter_value(&it);
    bson_t doc;
    if (!bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len)) {
      return Status(ErrorCode::kDataCorruptionDetected, "a sync base record's document is not BSON");
    }
    b.doc = Document::Copy(&doc);
  }
  if (bson_iter_init_find(&it, r, "upVersion") && BSON_ITER_HOLDS_NUMBER(&it)) b.up_version = bson_iter_as_int64(&it);
  b.pending = bson_iter_init_find(&it, r, "pending") && bson_iter_as_bool(&it);
  b.conflict = bson_iter_init_find(&it, r, "conflict") && bson_iter_as_bool(&it);
  return b;
}

Status IdOf(const bson_t* r, std::optional<Value>* id) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, r, "id")) {
    return Status(ErrorCode::kDataCorruptionDetected, "a sync base record has no id");
  }
  *id = Value(*bson_iter_value(&it));
  return Status::OK();
}

Document EncodeBase(const Value& id, const Base& b) {
  bson_t* rec = bson_new();
  id.AppendTo(rec, "id");
  if (b.doc) {
    BSON_APPEND_DOCUMENT(rec, "doc", b.doc->bson());
  } else {
    BSON_APPEND_NULL(rec, "doc");
  }
  BSON_APPEND_INT64(rec, "upVersion", b.up_version);
  BSON_APPEND_BOOL(rec, "pending", b.pending);
  BSON_APPEND_BOOL(rec, "conflict", b.conflict);
  return Document::Adopt(rec);
}

Document EncodePending(const Value& id) {
  bson_t* p = bson_new();
  id.AppendTo(p, "id");
  return Document::Adopt(p);
}

}  // namespace

StatusOr<Base> LoadBase(DBImpl* db, WriteScope* scope, const std::string& ns, const Value& id) {
  ASSIGN_OR_RETURN(std::optional<Document> r, db->GetSideRecord(scope, kBaseSpace, RecordKey(ns, id)));
  if (!r) return Base();
  return DecodeBase(r->bson());
}

Status SaveBase(DBImpl* db, WriteScope* scope, const std::string& ns, const Value& id, const Base& b,
                bool was_pending) {
  const std::string key = RecordKey(ns, id);
  Document rec = EncodeBase(id, b);
  RETURN_IF_ERROR(db->PutSideRecord(scope, kBaseSpace, key, rec.bson()));
  if (b.pending) {
    Document p = EncodePending(id);
    return db->PutSideRecord(scope, kPendingSpace, key, p.bson());
  }
  if (was_pending) return db->DeleteSideRecord(scope, kPendingSpace, key);
  return Status::OK();
}

Status SaveBases(DBImpl* db, const std::string& ns, const std::vector<BaseWrite>& writes) {
  std::vector<DBImpl::SideRecordWrite> batch;
  batch.reserve(writes.size() * 2);
  for (const BaseWrite& w : writes) {
    const std::string key = RecordKey(ns, w.id);
    batch.push_back({kBaseSpace, key, EncodeBase(w.id, w.base)});
    if (w.base.pending) {
      batch.push_back({kPendingSpace, key, EncodePending(w.id)});
    } else if (w.was_pending) {
      batch.push_back({kPendingSpace, key, std::nullopt});
    }
  }
  return db->WriteSideRecords(batch);
}

Status ForEachBase(DBImpl* db, const std::string& ns, const std::function<Status(const Value& id, const Base&)>& fn) {
  return db->ScanSideRecords(kBaseSpace, NsPrefix(ns), [&](std::string_view, DocumentView rv) -> Status {
    const bson_t* r = rv.bson();
    std::optional<Value> id;
    RETURN_IF_ERROR(IdOf(r, &id));
    ASSIGN_OR_RETURN(Base b, DecodeBase(r));
    return fn(*id, b);
  });
}

Status ForEachPendingBase(DBImpl* db, const std::string& ns, const std::function<Status(const Value& id)>& fn) {
  return db->ScanSideRecords(kPendingSpace, NsPrefix(ns), [&](std::string_view, DocumentView rv) -> Status {
    const bson_t* r = rv.bson();
    std::optional<Value> id;
    RETURN_IF_ERROR(IdOf(r, &id));
    return fn(*id);
  });
}

StatusOr<std::optional<Document>> LoadInflight(DBImpl* db, const std::string& ns) {
  return db->GetSideRecord(nullptr, kInflightSpace, ns);
}

Status SaveInflight(DBImpl* db, const std::string& ns, const Document& rec) {
  return db->PutSideRecord(nullptr, kInflightSpace, ns, rec.bson());
}

Status DeleteInflight(DBImpl* db, const std::string& ns) { return db->DeleteSideRecord(nullptr, kInflightSpace, ns); }

Status PendingPush(DBImpl* db, const std::string& ns, uint64_t after,
                   const std::function<void(const Value&, std::string_view source)>& add, uint64_t* upto) {
  JournalReadRequest q;
  q.ns = ns;
  q.after_seq = after;
  q.limit = 10000;
  *upto = after;
  for (;;) {
    ASSIGN_OR_RETURN(JournalReadResult r, db->ReadJournal(q));
    for (const Document& e : r.events) {
      bson_iter_t it, agent;
      if (bson_iter_init(&it, e.bson()) && bson_iter_find_descendant(&it, "writeContext.agentId", &agent) &&
          BSON_ITER_HOLDS_UTF8(&agent) && std::string_view(bson_iter_utf8(&agent, nullptr)) == kAgent) {
        continue;  // sync's own writes: pulled, not to be pushed back
      }
      if (bson_iter_init_find(&it, e.bson(), "op") && BSON_ITER_HOLDS_UTF8(&it) &&
          std::string_view(bson_iter_utf8(&it, nullptr)) == "conflict") {
        continue;
      }
      std::string_view source;
      bson_iter_t src;
      if (bson_iter_init(&src, e.bson()) && bson_iter_find_descendant(&src, "writeContext.source", &src) &&
          BSON_ITER_HOLDS_UTF8(&src)) {
        source = bson_iter_utf8(&src, nullptr);
      }
      if (bson_iter_init_find(&it, e.bson(), "_id")) add(Value(*bson_iter_value(&it)), source);
    }
    *upto = std::max<uint64_t>(*upto, r.next_after_seq);
    if (r.events.empty() || r.next_after_seq >= r.last_seq) break;
    q.after_seq = r.next_after_seq;
  }
  return ForEachPendingBase(db, ns, [&](const Value& id) {
    add(id, "");
    return Status::OK();
  });
}

}  // namespace sync_state
}  // namespace gatedb
