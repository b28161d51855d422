/* File: gatedb/gatedb_c.h
 *
 * gatedb's C ABI: open a data directory, run MongoDB commands on it (BSON
 * in, BSON out, or the same in Extended JSON), close it.  Every command the
 * C++ Database::RunCommand runs is here, through the same dispatcher and
 * write gate (PROTOCOL.md is the contract); the Python package (api/python)
 * is built on these functions alone.
 *
 * Errors.  Every function that can fail returns an int32_t: 0 (GATEDB_OK)
 * on success, otherwise a MongoDB error code (2 BadValue for a bad
 * argument, 22 InvalidBSON for malformed bytes, ...).  When `errmsg` is not
 * NULL, a failure stores a message there (free it with gatedb_free) and a
 * success stores NULL.  No function aborts, throws, or reads past the
 * lengths it is given, whatever bytes come in.
 *
 * Ownership.  Every buffer a function returns through an out-parameter
 * (reply, reply_json, errmsg) is allocated by the library, owned by the
 * caller from then on, and freed with gatedb_free (never with free()).  The
 * buffers the caller passes in are only read during the call.  Handles
 * (gatedb_t, gatedb_options_t) are freed with their own close/destroy.
 *
 * Thread safety.  A gatedb_t may be used from any number of threads at
 * once, except that gatedb_close must not race with other calls on the
 * same handle.  A gatedb_options_t is not synchronized.
 *
 *   gatedb_options_t* opt = gatedb_options_create();
 *   gatedb_t* db = NULL;
 *   char* err = NULL;
 *   if (gatedb_open("/tmp/agents", opt, &db, &err) != GATEDB_OK) { ... }
 *   gatedb_options_destroy(opt);
 *   char* reply = NULL;
 *   int32_t rc = gatedb_command_json(
 *       db, "{\"insert\": \"tasks\", \"documents\": [{\"_id\": 1}], \"$db\": \"app\"}",
 *       GATEDB_JSON_RELAXED, &reply, &err);
 *   ... rc is 0, reply is {"ok": 1.0, "n": 1, ...} ...
 *   gatedb_free(reply);
 *   gatedb_close(db);
 */
#ifndef GATEDB_GATEDB_C_H_
#define GATEDB_GATEDB_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GATEDB_OK 0

typedef struct gatedb_t gatedb_t;
typedef struct gatedb_options_t gatedb_options_t;

/* The library's version, "0.2.0". */
const char* gatedb_version(void);

/* Open options, each with gatedb::Options' default (gatedb/options.h says
 * what each means).  gatedb_options_create returns NULL only when out of
 * memory; the setters ignore a NULL handle. */
gatedb_options_t* gatedb_options_create(void);
void gatedb_options_destroy(gatedb_options_t* options);
void gatedb_options_set_create_if_missing(gatedb_options_t* options, int value);
void gatedb_options_set_error_if_exists(gatedb_options_t* options, int value);
void gatedb_options_set_sync(gatedb_options_t* options, int value);
void gatedb_options_set_lock_timeout_ms(gatedb_options_t* options, int64_t value);
void gatedb_options_set_block_cache_bytes(gatedb_options_t* options, uint64_t value);
void gatedb_options_set_journal_retention_ms(gatedb_options_t* options, int64_t value);
void gatedb_options_set_journal_max_events(gatedb_options_t* options, uint64_t value);
void gatedb_options_set_idempotency_retention_sec(gatedb_options_t* options, int64_t value);
void gatedb_options_set_ttl_interval_ms(gatedb_options_t* options, int64_t value);
void gatedb_options_set_transaction_lifetime_ms(gatedb_options_t* options, int64_t value);
void gatedb_options_set_cursor_timeout_ms(gatedb_options_t* options, int64_t value);
void gatedb_options_set_sort_memory_bytes(gatedb_options_t* options, uint64_t value);
/* Who calls through the opened handle (gatedb::Options::identity): a user
 * made with createUser, by name and authentication database (NULL: "admin").
 * Copied; a NULL or empty user clears it.  gatedb_open then fails with
 * UserNotFound 11 when there is no such user. */
void gatedb_options_set_identity(gatedb_options_t* options, const char* user, const char* user_db);
/* Whether a handle without an identity is the owner, who may do anything
 * (gatedb::Options::unauthenticated_is_root; default 1). */
void gatedb_options_set_unauthenticated_root(gatedb_options_t* options, int value);

/* Opens (by default creating) the data directory at `path`, a NUL-terminated
 * UTF-8 string.  `options` may be NULL for the defaults; it is only read
 * during the call.  On success stores the handle in *db.
 * Errors: BadValue (a NULL path or db), InternalError (the directory cannot
 * be opened, or another process holds it), DataCorruptionDetected. */
int32_t gatedb_open(const char* path, const gatedb_options_t* options, gatedb_t** db, char** errmsg);

/* A second handle to db's store acting as user `user` of database `user_db`
 * (NULL: "admin"), gatedb::Database::As: its commands are checked against
 * that user's roles and its writes name it as the agent.  Close it with
 * gatedb_close; the store stays open while any handle to it is open.
 * Errors: BadValue (NULL arguments), UserNotFound 11. */
int32_t gatedb_open_as(gatedb_t* db, const char* user, const char* user_db, gatedb_t** out, char** errmsg);

/* Closes the handle and frees it; NULL is a no-op.  Open cursors and
 * uncommitted transactions of this handle are discarded. */
void gatedb_close(gatedb_t* db);

/* Runs one command, `command_len` bytes of BSON (a document such as
 * {find: "tasks", filter: {...}, $db: "app"}).  Whenever the arguments are
 * usable (db, reply and reply_len not NULL), stores the reply, one BSON
 * document of *reply_len bytes, in *reply, also for a failed command:
 * {ok: 0, code, codeName, errmsg, errInfo?, errorLabels?}.
 * Returns 0 when the reply has ok: 1 (a write's per-statement writeErrors
 * do not make the command fail, as in MongoDB), otherwise the reply's code:
 * InvalidBSON 22 when the bytes are not one well-formed document of exactly
 * `command_len` bytes, Overflow 15 when nested too deeply, and every
 * command error of PROTOCOL.md.  BadValue 2 for unusable arguments, with no
 * reply stored. */
int32_t gatedb_command(gatedb_t* db, const uint8_t* command, size_t command_len, uint8_t** reply,
                       size_t* reply_len, char** errmsg);

/* The reply's Extended JSON flavour (MongoDB's Extended JSON v2). */
typedef enum {
  GATEDB_JSON_RELAXED = 0,   /* {"n": 1, "at": {"$date": "2024-01-01T00:00:00Z"}} */
  GATEDB_JSON_CANONICAL = 1, /* {"n": {"$numberInt": "1"}, ...}: every type kept */
} gatedb_json_mode_t;

/* gatedb_command with the command as NUL-terminated Extended JSON
 * (canonical or relaxed) and the reply as NUL-terminated Extended JSON in
 * `mode`.  A command that does not parse replies FailedToParse 9 with the
 * position.  Otherwise as gatedb_command. */
int32_t gatedb_command_json(gatedb_t* db, const char* command_json, gatedb_json_mode_t mode,
                            char** reply_json, char** errmsg);

/* Frees a buffer this library returned (a reply, a JSON reply, a message);
 * NULL is a no-op. */
void gatedb_free(void* p);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GATEDB_GATEDB_C_H_ */
