// Helpers shared by the libFuzzer targets in tests/fuzz/.
#ifndef GATEDB_TESTS_FUZZ_FUZZ_COMMON_H_
#define GATEDB_TESTS_FUZZ_FUZZ_COMMON_H_

#include <bson/bson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "gatedb/db.h"
#include "engine/document/validate.h"
#include "gatedb/document.h"

namespace gatedb_fuzz {

// Aborts (a crash libFuzzer records) with a message.
[[noreturn]] inline void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// One database for the whole process, in a fresh temp dir.  Left open at exit
// on purpose (libFuzzer exits without running destructors in some paths).
inline gatedb::Database* SharedDatabase() {
  static gatedb::Database* db = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gatedb_fuzz_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) Fail("mkdtemp", tmpl);
    auto opened = gatedb::Database::Open(tmpl + "/db");
    if (!opened.ok()) Fail("Database::Open", opened.status().ToString());
    return std::move(opened).value().release();
  }();
  return db;
}

// The reply of RunCommand must be a well-formed document with an `ok` field.
inline void CheckReply(const gatedb::Document& reply, const std::string& input) {
  const bson_t* b = reply.bson();
  if (b == nullptr) Fail("RunCommand returned a null reply", input);
  size_t off = 0;
  if (!bson_validate(b, BSON_VALIDATE_NONE, &off)) Fail("RunCommand reply is not valid BSON", input);
  // Stricter: nested terminators and UTF-8 (a driver would reject the reply).
  if (!gatedb::ValidateIncoming(bson_get_data(b), b->len).ok()) Fail("RunCommand reply is malformed (ValidateIncoming)", input);
  bson_iter_t it;
  if (!bson_iter_init_find(&it, b, "ok")) Fail("RunCommand reply has no `ok` field", reply.ToJson() + "\ninput: " + input);
}

}  // namespace gatedb_fuzz

#endif  // GATEDB_TESTS_FUZZ_FUZZ_COMMON_H_
