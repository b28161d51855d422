// File: api/commands/command_util.h
//
// Parsing command BSON into typed fields, with MongoDB's error codes and
// messages ("BSON field 'insert.documents' is the wrong type 'object',
// expected type 'array'"), and building replies.
#ifndef GATEDB_API_COMMANDS_COMMAND_UTIL_H_
#define GATEDB_API_COMMANDS_COMMAND_UTIL_H_

#include <bson/bson.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "gatedb/document.h"
#include "engine/storage/cursor.h"
#include "engine/storage/requests.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {
namespace commands {

// MongoDB's name for a BSON type ("string", "object", "array", "int", ...).
const char* TypeName(bson_type_t t);

// `context` is the dotted field path used in messages ("update.updates.u").
Status TypeError(std::string_view context, bson_type_t got, const char* expected);

Status ReadString(const bson_iter_t* it, std::string_view context, std::string* out);
// Accepts bool and numbers (non-zero is true), as MongoDB's safeBool.
Status ReadBool(const bson_iter_t* it, std::string_view context, bool* out);
// Accepts int32, int64 and integral doubles.
Status ReadInt64(const bson_iter_t* it, std::string_view context, int64_t* out);
// A sub-document (copied).
Status ReadDocument(const bson_iter_t* it, std::string_view context, Document* out);
// Points `out` (a static bson_t) at an array's bytes.
Status ReadArray(const bson_iter_t* it, std::string_view context, bson_t* out);

// A cursor's batchSize: a non-negative integer (BadValue otherwise, with
// MongoDB's message).
Status ReadBatchSize(const bson_iter_t* it, std::string_view context, int64_t* out);
// maxTimeMS: a non-negative integer number of milliseconds, at most
// INT32_MAX (BadValue otherwise); 0 means no limit.
Status ReadMaxTimeMS(const bson_iter_t* it, int64_t* out);
// Appends values as the array of strings `key` of `out`.
void AppendStringArray(bson_t* out, const char* key, const std::vector<std::string>& values);
// Appends docs as the array `name` of `out`.
void AppendDocsArray(const char* name, const std::vector<Document>& docs, bson_t* out);
// {cursor: {<batch_name>: [...], [fieldVersions: [...]], id, ns}}
void AppendCursorReply(const CursorPage& page, const char* batch_name, bool field_versions, bson_t* reply);

// PROTOCOL.md's writeContext: {agentId, taskId, writeSeq, source, readAt}
// (readAt a date).
Status ReadWriteContext(const bson_iter_t* it, WriteContext* out);

// Fields that any command may carry and the dispatcher handles itself.
bool IsGenericCommandField(std::string_view name);

// Calls fn(key, &iter) for each field of the command after its first (the
// command name), skipping the generic ones; stops at fn's first error.
template <typename Fn>
Status ForEachCommandField(const bson_t* cmd, Fn&& fn) {
  bson_iter_t it;
  if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it)) return Status::OK();
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    RETURN_IF_ERROR(fn(key, &it));
  }
  return Status::OK();
}

// The collection a command names in its first field ({insert: "orders"}),
// in database `db`.  Errors: InvalidNamespace.
Status ReadCommandNamespace(const bson_t* cmd, const std::string& db, Namespace* ns);

Status UnknownField(std::string_view command, std::string_view field);
Status MissingField(std::string_view command, std::string_view field);

// Appends {ok: 0, errmsg, code, codeName} to `reply`.
void AppendError(const Status& status, bson_t* reply);
// `reply` with errorLabels: [label] appended (MongoDB's error labels:
// TransientTransactionError, UnknownTransactionCommitResult,
// RetryableWriteError).
Document WithErrorLabel(const Document& reply, const char* label);

}  // namespace commands
}  // namespace gatedb

#endif  // GATEDB_API_COMMANDS_COMMAND_UTIL_H_
