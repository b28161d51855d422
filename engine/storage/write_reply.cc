#include "engine/storage/write_reply.h"

#include <cstring>
#include <string_view>

#include "engine/util/utf8.h"

namespace gatedb {

void AppendErrorMessage(const Status& s, bson_t* out) {
  const std::string errmsg = ToCleanUtf8(s.reason());
  bson_append_utf8(out, "errmsg", 6, errmsg.data(), static_cast<int>(errmsg.size()));
}

void AppendErrorDetails(const Status& s, bson_t* out) {
  const Document* info = s.err_info();
  if (info == nullptr) return;
  if (s.code() == ErrorCode::kDuplicateKey) {
    bson_concat(out, info->bson());  // keyPattern, keyValue
  } else {
    BSON_APPEND_DOCUMENT(out, "errInfo", info->bson());
  }
}

namespace {

// Appends `n` elements under the array keys "0", "1", ...
template <typename Fn>
void AppendArray(bson_t* out, const char* name, size_t n, Fn&& element) {
  bson_t arr;
  bson_append_array_begin(out, name, -1, &arr);
  char keybuf[16];
  for (size_t i = 0; i < n; ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    element(&arr, key, i);
  }
  bson_append_array_end(out, &arr);
}

void AppendWriteErrors(const std::vector<WriteError>& errors, bson_t* out) {
  if (errors.empty()) return;
  AppendArray(out, "writeErrors", errors.size(), [&](bson_t* arr, const char* key, size_t i) {
    const Status& s = errors[i].status;
    bson_t e;
    bson_append_document_begin(arr, key, -1, &e);
    BSON_APPEND_INT32(&e, "index", static_cast<int32_t>(errors[i].index));
    BSON_APPEND_INT32(&e, "code", s.code_number());
    BSON_APPEND_UTF8(&e, "codeName", s.code_name());
    AppendErrorMessage(s, &e);
    AppendErrorDetails(s, &e);
    bson_append_document_end(arr, &e);
  });
}

void AppendVersionConflicts(const std::vector<VersionConflictEntry>& entries, bson_t* out) {
  if (entries.empty()) return;
  AppendArray(out, "versionConflicts", entries.size(), [&](bson_t* arr, const char* key, size_t i) {
    bson_t e;
    bson_append_document_begin(arr, key, -1, &e);
    BSON_APPEND_INT32(&e, "index", static_cast<int32_t>(entries[i].index));
    entries[i].id.AppendTo(&e, "_id");
    BSON_APPEND_INT64(&e, "expectedVersion", entries[i].expected_version);
    BSON_APPEND_INT64(&e, "currentVersion", entries[i].current_version);
    bson_append_document_end(arr, &e);
  });
}

Status Corrupt(const char* what) {
  return Status(ErrorCode::kDataCorruptionDetected, std::string("stored reply: bad ") + what);
}

Document SubDocument(const bson_iter_t* it) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(it, &len, &data);
  return Document::Adopt(bson_new_from_data(data, len));
}

// Calls fn(entry) for each document of the array field `name`, if present.
template <typename Fn>
Status ForEachEntry(const bson_t* reply, const char* name, Fn&& fn) {
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, reply, name)) return Status::OK();
  if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return Corrupt(name);
  while (bson_iter_next(&arr)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) return Corrupt(name);
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&arr, &len, &data);
    bson_t entry;
    if (!bson_init_static(&entry, data, len)) return Corrupt(name);
    RETURN_IF_ERROR(fn(&entry));
  }
  return Status::OK();
}

int64_t IntOf(const bson_t* doc, const char* name) {
  bson_iter_t it;
  return bson_iter_init_find(&it, doc, name) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
}

Status DecodeWriteErrors(const bson_t* reply, std::vector<WriteError>* out) {
  return ForEachEntry(reply, "writeErrors", [&](const bson_t* e) -> Status {
    WriteError we;
    we.index = static_cast<size_t>(IntOf(e, "index"));
    const auto code = static_cast<ErrorCode>(IntOf(e, "code"));
    bson_iter_t it;
    std::string msg = bson_iter_init_find(&it, e, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, nullptr) : "";
    std::shared_ptr<const Document> info;
    if (code == ErrorCode::kDuplicateKey) {
      bson_t* d = bson_new();
      bson_copy_to_excluding_noinit(e, d, "index", "code", "codeName", "errmsg", nullptr);
      if (bson_count_keys(d) > 0) {
        info = std::make_shared<const Document>(Document::Adopt(d));
      } else {
        bson_destroy(d);
      }
    } else if (bson_iter_init_find(&it, e, "errInfo") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      info = std::make_shared<const Document>(SubDocument(&it));
    }
    if (code == ErrorCode::kOK) return Corrupt("writeErrors code");
    we.status = Status(code, std::move(msg), std::move(info));
    out->push_back(std::move(we));
    return Status::OK();
  });
}

Status DecodeVersionConflicts(const bson_t* reply, std::vector<VersionConflictEntry>* out) {
  return ForEachEntry(reply, "versionConflicts", [&](const bson_t* e) -> Status {
    VersionConflictEntry v;
    v.index = static_cast<size_t>(IntOf(e, "index"));
    bson_iter_t it;
    if (bson_iter_init_find(&it, e, "_id")) v.id = Value(*bson_iter_value(&it));
    v.expected_version = IntOf(e, "expectedVersion");
    v.current_version = IntOf(e, "currentVersion");
    out->push_back(std::move(v));
    return Status::OK();
  });
}

}  // namespace

void AppendReply(const InsertResult& r, bool inserted_ids, bson_t* out) {
  BSON_APPEND_INT32(out, "n", static_cast<int32_t>(r.n));
  if (inserted_ids) {
    AppendArray(out, "insertedIds", r.inserted_ids.size(),
                [&](bson_t* arr, const char* key, size_t i) { r.inserted_ids[i].AppendTo(arr, key); });
  }
  AppendWriteErrors(r.write_errors, out);
}

void AppendReply(const UpdateWriteResult& r, bson_t* out) {
  BSON_APPEND_INT32(out, "n", static_cast<int32_t>(r.n));
  BSON_APPEND_INT32(out, "nModified", static_cast<int32_t>(r.n_modified));
  if (!r.upserted.empty()) {
    AppendArray(out, "upserted", r.upserted.size(), [&](bson_t* arr, const char* key, size_t i) {
      bson_t u;
      bson_append_document_begin(arr, key, -1, &u);
      BSON_APPEND_INT32(&u, "index", static_cast<int32_t>(r.upserted[i].index));
      r.upserted[i].id.AppendTo(&u, "_id");
      bson_append_document_end(arr, &u);
    });
  }
  AppendWriteErrors(r.write_errors, out);
  AppendVersionConflicts(r.version_conflicts, out);
}

void AppendReply(const DeleteWriteResult& r, bson_t* out) {
  BSON_APPEND_INT32(out, "n", static_cast<int32_t>(r.n));
  AppendWriteErrors(r.write_errors, out);
  AppendVersionConflicts(r.version_conflicts, out);
}

void AppendReply(const FindAndModifyResult& r, bool remove, bson_t* out) {
  bson_t leo;
  BSON_APPEND_DOCUMENT_BEGIN(out, "lastErrorObject", &leo);
  BSON_APPEND_INT32(&leo, "n", static_cast<int32_t>(r.n));
  if (!remove) BSON_APPEND_BOOL(&leo, "updatedExisting", r.updated_existing);
  if (r.upserted_id) r.upserted_id->AppendTo(&leo, "upserted");
  bson_append_document_end(out, &leo);
  if (r.value) {
    BSON_APPEND_DOCUMENT(out, "value", r.value->bson());
  } else {
    BSON_APPEND_NULL(out, "value");
  }
}

Status DecodeReply(const bson_t* reply, InsertResult* out) {
  out->n = IntOf(reply, "n");
  bson_iter_t it, arr;
  if (bson_iter_init_find(&it, reply, "insertedIds")) {
    if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return Corrupt("insertedIds");
    while (bson_iter_next(&arr)) out->inserted_ids.emplace_back(*bson_iter_value(&arr));
  }
  return DecodeWriteErrors(reply, &out->write_errors);
}

Status DecodeReply(const bson_t* reply, UpdateWriteResult* out) {
  out->n = IntOf(reply, "n");
  out->n_modified = IntOf(reply, "nModified");
  RETURN_IF_ERROR(ForEachEntry(reply, "upserted", [&](const bson_t* e) -> Status {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, e, "_id")) return Corrupt("upserted");
    out->upserted.push_back(Upserted{static_cast<size_t>(IntOf(e, "index")), Value(*bson_iter_value(&it))});
    return Status::OK();
  }));
  RETURN_IF_ERROR(DecodeWriteErrors(reply, &out->write_errors));
  return DecodeVersionConflicts(reply, &out->version_conflicts);
}

Status DecodeReply(const bson_t* reply, DeleteWriteResult* out) {
  out->n = IntOf(reply, "n");
  RETURN_IF_ERROR(DecodeWriteErrors(reply, &out->write_errors));
  return DecodeVersionConflicts(reply, &out->version_conflicts);
}

Status DecodeReply(const bson_t* reply, FindAndModifyResult* out) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, reply, "lastErrorObject") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
    return Corrupt("lastErrorObject");
  }
  Document leo = SubDocument(&it);
  out->n = IntOf(leo.bson(), "n");
  bson_iter_t f;
  if (bson_iter_init_find(&f, leo.bson(), "updatedExisting")) out->updated_existing = bson_iter_as_bool(&f);
  if (bson_iter_init_find(&f, leo.bson(), "upserted")) out->upserted_id = Value(*bson_iter_value(&f));
  if (bson_iter_init_find(&it, reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) out->value = SubDocument(&it);
  return Status::OK();
}

}  // namespace gatedb
