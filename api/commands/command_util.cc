#include "api/commands/command_util.h"

#include "engine/document/bson_compare.h"
#include "engine/storage/idempotency.h"
#include "engine/storage/write_reply.h"

#include <cmath>
#include <cstring>

namespace gatedb {
namespace commands {

const char* TypeName(bson_type_t t) { return BsonTypeName(t); }

Status TypeError(std::string_view context, bson_type_t got, const char* expected) {
  return Status(ErrorCode::kTypeMismatch, "BSON field '" + std::string(context) + "' is the wrong type '" +
                                              TypeName(got) + "', expected type '" + expected + "'");
}

Status ReadString(const bson_iter_t* it, std::string_view context, std::string* out) {
  if (!BSON_ITER_HOLDS_UTF8(it)) return TypeError(context, bson_iter_type(it), "string");
  uint32_t len = 0;
  const char* s = bson_iter_utf8(it, &len);
  out->assign(s, len);
  return Status::OK();
}

Status ReadBool(const bson_iter_t* it, std::string_view context, bool* out) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_BOOL: *out = bson_iter_bool(it); return Status::OK();
    case BSON_TYPE_INT32: *out = bson_iter_int32(it) != 0; return Status::OK();
    case BSON_TYPE_INT64: *out = bson_iter_int64(it) != 0; return Status::OK();
    case BSON_TYPE_DOUBLE: *out = bson_iter_double(it) != 0; return Status::OK();
    case BSON_TYPE_NULL: *out = false; return Status::OK();
    default: return TypeError(context, bson_iter_type(it), "bool");
  }
}

Status ReadInt64(const bson_iter_t* it, std::string_view context, int64_t* out) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_INT32: *out = bson_iter_int32(it); return Status::OK();
    case BSON_TYPE_INT64: *out = bson_iter_int64(it); return Status::OK();
    case BSON_TYPE_DOUBLE: {
      double d = bson_iter_double(it);
      if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.2e18) {
        return Status(ErrorCode::kBadValue, "BSON field '" + std::string(context) + "' must be an integer, got " +
                                                std::to_string(d));
      }
      *out = static_cast<int64_t>(d);
      return Status::OK();
    }
    default: return TypeError(context, bson_iter_type(it), "long");
  }
}

Status ReadDocument(const bson_iter_t* it, std::string_view context, Document* out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return TypeError(context, bson_iter_type(it), "object");
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(it, &len, &data);
  bson_t* copy = bson_new_from_data(data, len);
  if (copy == nullptr) return Status(ErrorCode::kInvalidBSON, "invalid embedded document in '" + std::string(context) + "'");
  *out = Document::Adopt(copy);
  return Status::OK();
}

Status ReadArray(const bson_iter_t* it, std::string_view context, bson_t* out) {
  if (!BSON_ITER_HOLDS_ARRAY(it)) return TypeError(context, bson_iter_type(it), "array");
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_array(it, &len, &data);
  if (!bson_init_static(out, data, len)) {
    return Status(ErrorCode::kInvalidBSON, "invalid array in '" + std::string(context) + "'");
  }
  return Status::OK();
}

Status ReadWriteContext(const bson_iter_t* it, WriteContext* out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return TypeError("writeContext", bson_iter_type(it), "object");
  bson_iter_t f;
  bson_iter_recurse(it, &f);
  while (bson_iter_next(&f)) {
    std::string_view k = bson_iter_key(&f);
    if (k == "agentId") {
      RETURN_IF_ERROR(ReadString(&f, "writeContext.agentId", &out->agent_id));
    } else if (k == "taskId") {
      RETURN_IF_ERROR(ReadString(&f, "writeContext.taskId", &out->task_id));
      if (out->task_id.rfind(IdempotencyLog::kSessionTaskPrefix, 0) == 0) {
        return Status(ErrorCode::kBadValue, std::string("writeContext.taskId may not start with '") +
                                                IdempotencyLog::kSessionTaskPrefix +
                                                "': that prefix names the retryable writes of driver sessions");
      }
    } else if (k == "source") {
      RETURN_IF_ERROR(ReadString(&f, "writeContext.source", &out->source));
    } else if (k == "writeSeq") {
      int64_t seq = 0;
      RETURN_IF_ERROR(ReadInt64(&f, "writeContext.writeSeq", &seq));
      out->write_seq = seq;
    } else if (k == "readAt") {
      if (!BSON_ITER_HOLDS_DATE_TIME(&f)) return TypeError("writeContext.readAt", bson_iter_type(&f), "date");
      out->read_at_ms = bson_iter_date_time(&f);
    } else {
      return UnknownField("writeContext", k);
    }
  }
  return Status::OK();
}

bool IsGenericCommandField(std::string_view name) {
  static const char* const kGeneric[] = {
      "$db", "lsid", "txnNumber", "writeConcern", "readConcern", "comment", "maxTimeMS", "apiVersion",
      "apiStrict", "apiDeprecationErrors", "$readPreference", "$clusterTime", "$client", "$audit",
      "bypassDocumentValidation", "readPreference", "$queryOptions", "mayBypassWriteBlocking", "autocommit",
      "startTransaction"};
  for (const char* g : kGeneric) {
    if (name == g) return true;
  }
  return false;
}

Status ReadCommandNamespace(const bson_t* cmd, const std::string& db, Namespace* ns) {
  bson_iter_t it;
  bson_iter_init(&it, cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_UTF8(&it)) {
    return Status(ErrorCode::kInvalidNamespace,
                  "collection name has invalid type " + std::string(TypeName(bson_iter_type(&it))));
  }
  ns->db = db;
  ns->coll = bson_iter_utf8(&it, nullptr);
  return ValidateNamespace(*ns);
}

Status UnknownField(std::string_view command, std::string_view field) {
  return Status(ErrorCode::kLocation40415,
                "BSON field '" + std::string(command) + "." + std::string(field) + "' is an unknown field.");
}

Status MissingField(std::string_view command, std::string_view field) {
  return Status(ErrorCode::kLocation40414, "BSON field '" + std::string(command) + "." + std::string(field) +
                                               "' is missing but a required field");
}

void AppendError(const Status& status, bson_t* reply) {
  BSON_APPEND_DOUBLE(reply, "ok", 0.0);
  AppendErrorMessage(status, reply);
  BSON_APPEND_INT32(reply, "code", status.code_number());
  BSON_APPEND_UTF8(reply, "codeName", status.code_name());
  AppendErrorDetails(status, reply);
}

void AppendDocsArray(const char* name, const std::vector<Document>& docs, bson_t* out) {
  bson_t arr;
  bson_append_array_begin(out, name, -1, &arr);
  char keybuf[16];
  for (size_t i = 0; i < docs.size(); ++i) {
    const char* key;
    size_t len = bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    bson_append_document(&arr, key, static_cast<int>(len), docs[i].bson());
  }
  bson_append_array_end(out, &arr);
}

Status ReadBatchSize(const bson_iter_t* it, std::string_view context, int64_t* out) {
  int64_t b = 0;
  RETURN_IF_ERROR(ReadInt64(it, context, &b));
  if (b < 0) return Status(ErrorCode::kBadValue, "BatchSize value must be non-negative, but received: " + std::to_string(b));
  *out = b;
  return Status::OK();
}

Status ReadMaxTimeMS(const bson_iter_t* it, int64_t* out) {
  int64_t ms = 0;
  if (!BSON_ITER_HOLDS_NUMBER(it) || !ReadInt64(it, "maxTimeMS", &ms).ok()) {
    return Status(ErrorCode::kBadValue, "maxTimeMS must be a number");
  }
  if (ms < 0 || ms > INT32_MAX) {
    return Status(ErrorCode::kBadValue, "maxTimeMS value must be between 0 and 2147483647, but received: " +
                                            std::to_string(ms));
  }
  *out = ms;
  return Status::OK();
}

void AppendCursorReply(const CursorPage& page, const char* batch_name, bool field_versions, bson_t* reply) {
  bson_t cursor;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "cursor", &cursor);
  AppendDocsArray(batch_name, page.batch.docs, &cursor);
  // gatedb: each document's field versions, parallel to the batch.
  if (field_versions) AppendDocsArray("fieldVersions", page.batch.field_versions, &cursor);
  if (!page.batch.post_batch_resume_token.empty()) {
    BSON_APPEND_DOCUMENT(&cursor, "postBatchResumeToken", page.batch.post_batch_resume_token.bson());
  }
  BSON_APPEND_INT64(&cursor, "id", page.cursor_id);
  BSON_APPEND_UTF8(&cursor, "ns", page.ns.c_str());
  bson_append_document_end(reply, &cursor);
}

void AppendStringArray(bson_t* out, const char* key, const std::vector<std::string>& values) {
  bson_t arr;
  bson_append_array_begin(out, key, -1, &arr);
  char keybuf[16];
  uint32_t i = 0;
  for (const std::string& v : values) {
    const char* k;
    size_t klen = bson_uint32_to_string(i++, &k, keybuf, sizeof keybuf);
    bson_append_utf8(&arr, k, static_cast<int>(klen), v.data(), static_cast<int>(v.size()));
  }
  bson_append_array_end(out, &arr);
}

Document WithErrorLabel(const Document& reply, const char* label) {
  bson_t* out = bson_new();
  bson_concat(out, reply.bson());
  bson_t labels;
  BSON_APPEND_ARRAY_BEGIN(out, "errorLabels", &labels);
  BSON_APPEND_UTF8(&labels, "0", label);
  bson_append_array_end(out, &labels);
  return Document::Adopt(out);
}

}  // namespace commands
}  // namespace gatedb
