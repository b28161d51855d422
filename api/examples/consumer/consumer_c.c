/* A C program on gatedb's C ABI: a command in BSON (built with libbson),
 * one in Extended JSON, and a refused stale write; exits 0 only when every
 * reply is what PROTOCOL.md says. */
#include <bson/bson.h>
#include <gatedb/gatedb_c.h>
#include <stdio.h>
#include <string.h>

static int check(int cond, const char* what) {
  if (!cond) fprintf(stderr, "consumer_c: %s\n", what);
  return cond;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c DATA_DIR\n");
    return 2;
  }
  gatedb_options_t* options = gatedb_options_create();
  gatedb_options_set_sync(options, 1);
  gatedb_t* db = NULL;
  char* err = NULL;
  int32_t rc = gatedb_open(argv[1], options, &db, &err);
  gatedb_options_destroy(options);
  if (!check(rc == GATEDB_OK, err ? err : "open failed")) return 1;

  /* BSON in, BSON out. */
  bson_t* cmd = BCON_NEW("insert", BCON_UTF8("orders"), "documents", "[", "{", "_id", BCON_UTF8("o1"),
                         "qty", BCON_INT32(2), "}", "]", "$db", BCON_UTF8("shop"));
  uint8_t* reply = NULL;
  size_t reply_len = 0;
  rc = gatedb_command(db, bson_get_data(cmd), cmd->len, &reply, &reply_len, &err);
  bson_destroy(cmd);
  int ok = check(rc == GATEDB_OK, "insert failed");
  bson_t r;
  if (ok && bson_init_static(&r, reply, reply_len)) {
    bson_iter_t it;
    ok = check(bson_iter_init_find(&it, &r, "n") && bson_iter_as_int64(&it) == 1, "insert: n is not 1");
  }
  gatedb_free(reply);

  /* Extended JSON in and out: a write on a stale basis is refused. */
  char* json = NULL;
  rc = gatedb_command_json(db,
                           "{\"update\": \"orders\", \"updates\": [{\"q\": {\"_id\": \"o1\"}, "
                           "\"u\": {\"$set\": {\"qty\": 3}}, \"basisVersion\": 7}], \"$db\": \"shop\"}",
                           GATEDB_JSON_RELAXED, &json, &err);
  ok = check(rc == GATEDB_OK, "update: the command failed") && ok;
  ok = check(json != NULL && strstr(json, "\"VersionConflict\"") != NULL, "update: no VersionConflict") && ok;
  if (json) printf("%s\n", json);
  gatedb_free(json);

  /* A malformed command is an error reply, never a crash. */
  const uint8_t junk[] = {9, 0, 0, 0, 2, 'a', 0, 0, 0};
  rc = gatedb_command(db, junk, sizeof junk, &reply, &reply_len, &err);
  ok = check(rc == 22 && err != NULL, "junk bytes: not InvalidBSON") && ok;
  gatedb_free(reply);
  gatedb_free(err);

  printf("gatedb %s\n", gatedb_version());
  gatedb_close(db);
  return ok ? 0 : 1;
}
