// File: api/c/gatedb_c.cc
//
// The C ABI (gatedb/gatedb_c.h): a translation of C calls into
// Database::Open and Database::RunCommand, and of their results into
// buffers the caller frees with gatedb_free.  Nothing here decides anything
// about a command; the dispatcher and the write gate do.
//
// The boundary rules:
//  - bytes from the caller are checked by ValidateIncoming (the wire
//    server's check: length header, bounds, UTF-8, nesting) before they are
//    read as BSON, and a command over MongoDB's internal limit is refused;
//  - no C++ exception crosses into C: std::bad_alloc and anything else is
//    caught at each entry point and becomes an error code;
//  - every buffer handed out comes from bson_malloc, so gatedb_free is
//    bson_free, whatever allocator the caller's C runtime uses.
#include "gatedb/gatedb_c.h"

#include <bson/bson.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "engine/document/validate.h"
#include "engine/util/utf8.h"
#include "gatedb/db.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

struct gatedb_options_t {
  gatedb::Options options;
};

struct gatedb_t {
  std::unique_ptr<gatedb::Database> db;
};

namespace {

using gatedb::ErrorCode;

// MongoDB's BSONObjMaxInternalSize: a user document plus room for the
// command around it.
constexpr size_t kMaxCommandSize = gatedb::kMaxUserDocumentSize + 16 * 1024;

char* CopyString(std::string_view s) {
  char* p = static_cast<char*>(bson_malloc(s.size() + 1));
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

int32_t Fail(ErrorCode code, std::string_view message, char** errmsg) {
  if (errmsg != nullptr) *errmsg = CopyString(message);
  return static_cast<int32_t>(code);
}

// 0 for a reply with ok: 1, otherwise its code (InternalError when it has
// none), with its errmsg copied to *errmsg.
int32_t ReplyCode(const bson_t* reply, char** errmsg) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply, "ok") && bson_iter_as_bool(&it)) return GATEDB_OK;
  int32_t code = static_cast<int32_t>(ErrorCode::kInternalError);
  if (bson_iter_init_find(&it, reply, "code") && BSON_ITER_HOLDS_NUMBER(&it)) {
    code = static_cast<int32_t>(bson_iter_as_int64(&it));
    if (code == 0) code = static_cast<int32_t>(ErrorCode::kInternalError);
  }
  if (errmsg != nullptr) {
    std::string_view message = "command failed";
    if (bson_iter_init_find(&it, reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it)) {
      uint32_t len = 0;
      const char* s = bson_iter_utf8(&it, &len);
      message = std::string_view(s, len);
    }
    *errmsg = CopyString(message);
  }
  return code;
}

// A reply document for an error found before the dispatcher ran, in the
// dispatcher's own shape.
gatedb::Document ErrorReply(ErrorCode code, std::string_view raw_message) {
  const std::string message = gatedb::ToCleanUtf8(raw_message);
  gatedb::Document reply;
  bson_t* b = reply.mutable_bson();
  BSON_APPEND_DOUBLE(b, "ok", 0.0);
  bson_append_utf8(b, "errmsg", 6, message.data(), static_cast<int>(message.size()));
  BSON_APPEND_INT32(b, "code", static_cast<int32_t>(code));
  BSON_APPEND_UTF8(b, "codeName", gatedb::ErrorCodeName(code));
  return reply;
}

// The BSONObjectTooLarge reply for a command of `len` bytes.
gatedb::Document TooLargeReply(size_t len) {
  return ErrorReply(ErrorCode::kBSONObjectTooLarge,
                    "the command is " + std::to_string(len) + " bytes, over the limit of " +
                        std::to_string(kMaxCommandSize));
}

// Runs `command` (already checked) and returns the reply.
gatedb::Document Run(gatedb_t* db, const bson_t* command) {
  if (command->len > kMaxCommandSize) return TooLargeReply(command->len);
  return db->db->RunCommand(gatedb::DocumentView(command));
}

// Hands the reply's bytes to the caller: a buffer from bson_malloc.
void HandOut(gatedb::Document reply, uint8_t** out, size_t* out_len) {
  bson_t* b = reply.Release();
  uint32_t len = 0;
  *out = bson_destroy_with_steal(b, true, &len);
  *out_len = len;
}

}  // namespace

extern "C" {

const char* gatedb_version(void) { return GATEDB_VERSION_STRING; }

gatedb_options_t* gatedb_options_create(void) { return new (std::nothrow) gatedb_options_t(); }
void gatedb_options_destroy(gatedb_options_t* options) { delete options; }

#define GATEDB_OPTION_SETTER(name, type, field, convert)          \
  void gatedb_options_set_##name(gatedb_options_t* o, type value) { \
    if (o != nullptr) o->options.field = convert(value);            \
  }
#define GATEDB_AS_BOOL(v) ((v) != 0)
#define GATEDB_AS_IS(v) (v)
GATEDB_OPTION_SETTER(create_if_missing, int, create_if_missing, GATEDB_AS_BOOL)
GATEDB_OPTION_SETTER(error_if_exists, int, error_if_exists, GATEDB_AS_BOOL)
GATEDB_OPTION_SETTER(sync, int, sync, GATEDB_AS_BOOL)
GATEDB_OPTION_SETTER(lock_timeout_ms, int64_t, lock_timeout_ms, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(block_cache_bytes, uint64_t, block_cache_bytes, static_cast<size_t>)
GATEDB_OPTION_SETTER(journal_retention_ms, int64_t, journal_retention_ms, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(journal_max_events, uint64_t, journal_max_events, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(idempotency_retention_sec, int64_t, idempotency_retention_sec, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(ttl_interval_ms, int64_t, ttl_interval_ms, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(transaction_lifetime_ms, int64_t, transaction_lifetime_ms, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(cursor_timeout_ms, int64_t, cursor_timeout_ms, GATEDB_AS_IS)
GATEDB_OPTION_SETTER(sort_memory_bytes, uint64_t, sort_memory_bytes, static_cast<size_t>)
#undef GATEDB_AS_IS
#undef GATEDB_AS_BOOL
#undef GATEDB_OPTION_SETTER

void gatedb_options_set_identity(gatedb_options_t* o, const char* user, const char* user_db) {
  if (o == nullptr) return;
  try {
    o->options.identity = gatedb::Identity{user != nullptr ? user : "", user_db != nullptr ? user_db : "admin"};
  } catch (...) {
    o->options.identity = gatedb::Identity();  // out of memory: no identity rather than half of one
  }
}

void gatedb_options_set_unauthenticated_root(gatedb_options_t* o, int value) {
  if (o != nullptr) o->options.unauthenticated_is_root = value != 0;
}

int32_t gatedb_open_as(gatedb_t* db, const char* user, const char* user_db, gatedb_t** out, char** errmsg) {
  if (errmsg != nullptr) *errmsg = nullptr;
  if (out == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_open_as: out is NULL", errmsg);
  *out = nullptr;
  if (db == nullptr || user == nullptr || *user == '\0') {
    return Fail(ErrorCode::kBadValue, "gatedb_open_as: db and user must not be NULL or empty", errmsg);
  }
  try {
    auto view = db->db->As(gatedb::Identity{user, user_db != nullptr ? user_db : "admin"});
    if (!view.ok()) return Fail(view.status().code(), view.status().reason(), errmsg);
    *out = new gatedb_t{std::move(*view)};
    return GATEDB_OK;
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kExceededMemoryLimit, "gatedb_open_as: out of memory", errmsg);
  } catch (...) {
    return Fail(ErrorCode::kInternalError, "gatedb_open_as: unexpected failure", errmsg);
  }
}

int32_t gatedb_open(const char* path, const gatedb_options_t* options, gatedb_t** db, char** errmsg) {
  if (errmsg != nullptr) *errmsg = nullptr;
  if (db == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_open: db is NULL", errmsg);
  *db = nullptr;
  if (path == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_open: path is NULL", errmsg);
  try {
    gatedb::Options o = options != nullptr ? options->options : gatedb::Options();
    auto opened = gatedb::Database::Open(path, o);
    if (!opened.ok()) return Fail(opened.status().code(), opened.status().reason(), errmsg);
    *db = new gatedb_t{std::move(*opened)};
    return GATEDB_OK;
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kExceededMemoryLimit, "gatedb_open: out of memory", errmsg);
  } catch (...) {
    return Fail(ErrorCode::kInternalError, "gatedb_open: unexpected failure", errmsg);
  }
}

void gatedb_close(gatedb_t* db) {
  try {
    delete db;
  } catch (...) {
    // A destructor that throws would terminate; nothing is left to free.
  }
}

int32_t gatedb_command(gatedb_t* db, const uint8_t* command, size_t command_len, uint8_t** reply,
                       size_t* reply_len, char** errmsg) {
  if (errmsg != nullptr) *errmsg = nullptr;
  if (reply != nullptr) *reply = nullptr;
  if (reply_len != nullptr) *reply_len = 0;
  if (db == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_command: db is NULL", errmsg);
  if (reply == nullptr || reply_len == nullptr) {
    return Fail(ErrorCode::kBadValue, "gatedb_command: reply and reply_len must not be NULL", errmsg);
  }
  try {
    gatedb::Document out;
    if (command == nullptr) {
      out = ErrorReply(ErrorCode::kInvalidBSON, "gatedb_command: command is NULL");
    } else if (command_len > kMaxCommandSize) {
      out = TooLargeReply(command_len);  // refused before a byte is read
    } else if (gatedb::Status s = gatedb::ValidateIncoming(command, command_len); !s.ok()) {
      out = ErrorReply(s.code(), s.reason());
    } else {
      bson_t view;
      if (!bson_init_static(&view, command, command_len)) {
        out = ErrorReply(ErrorCode::kInvalidBSON, "gatedb_command: not a BSON document");
      } else {
        out = Run(db, &view);
      }
    }
    const int32_t rc = ReplyCode(out.bson(), errmsg);
    HandOut(std::move(out), reply, reply_len);
    return rc;
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kExceededMemoryLimit, "gatedb_command: out of memory", errmsg);
  } catch (...) {
    return Fail(ErrorCode::kInternalError, "gatedb_command: unexpected failure", errmsg);
  }
}

int32_t gatedb_command_json(gatedb_t* db, const char* command_json, gatedb_json_mode_t mode,
                            char** reply_json, char** errmsg) {
  if (errmsg != nullptr) *errmsg = nullptr;
  if (reply_json != nullptr) *reply_json = nullptr;
  if (db == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_command_json: db is NULL", errmsg);
  if (reply_json == nullptr) return Fail(ErrorCode::kBadValue, "gatedb_command_json: reply_json is NULL", errmsg);
  if (mode != GATEDB_JSON_RELAXED && mode != GATEDB_JSON_CANONICAL) {
    return Fail(ErrorCode::kBadValue, "gatedb_command_json: unknown JSON mode " + std::to_string(mode), errmsg);
  }
  try {
    gatedb::Document out;
    if (command_json == nullptr) {
      out = ErrorReply(ErrorCode::kFailedToParse, "gatedb_command_json: command is NULL");
    } else {
      auto parsed = gatedb::Document::FromJson(command_json);
      if (!parsed.ok()) {
        out = ErrorReply(parsed.status().code(), parsed.status().reason());
      } else if (gatedb::Status s = gatedb::ValidateIncoming(parsed->data(), parsed->size()); !s.ok()) {
        out = ErrorReply(s.code(), s.reason());
      } else {
        out = Run(db, parsed->bson());
      }
    }
    const int32_t rc = ReplyCode(out.bson(), errmsg);
    *reply_json = CopyString(
        out.ToJson(mode == GATEDB_JSON_CANONICAL ? gatedb::JsonMode::kCanonical : gatedb::JsonMode::kRelaxed));
    return rc;
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kExceededMemoryLimit, "gatedb_command_json: out of memory", errmsg);
  } catch (...) {
    return Fail(ErrorCode::kInternalError, "gatedb_command_json: unexpected failure", errmsg);
  }
}

void gatedb_free(void* p) { bson_free(p); }

}  // extern "C"
