// fuzz_c_api: the C ABI with whatever bytes come in.  The first input byte
// chooses the door: even, the rest is passed to gatedb_command as BSON of
// exactly that length; odd, the rest (cut at its first NUL) to
// gatedb_command_json.  Every call must return a reply that is one
// well-formed document with `ok`, and a return code that agrees with it:
// 0 exactly when ok is 1, and then no message.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gatedb/gatedb_c.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_split.h"

namespace {

gatedb_t* SharedHandle() {
  static gatedb_t* db = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gatedb_fuzz_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) gatedb_fuzz::Fail("mkdtemp", tmpl);
    gatedb_t* h = nullptr;
    char* err = nullptr;
    if (gatedb_open((tmpl + "/db").c_str(), nullptr, &h, &err) != GATEDB_OK) gatedb_fuzz::Fail("gatedb_open", err);
    return h;
  }();
  return db;
}

void CheckAgreement(int32_t rc, const bson_t* reply, const char* errmsg) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, reply, "ok")) gatedb_fuzz::Fail("a C ABI reply has no ok", "");
  const bool ok = bson_iter_as_bool(&it);
  if (ok != (rc == GATEDB_OK)) gatedb_fuzz::Fail("return code and reply disagree", std::to_string(rc));
  if (ok != (errmsg == nullptr)) gatedb_fuzz::Fail("errmsg set on success or missing on failure", std::to_string(rc));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  gatedb_t* db = SharedHandle();
  char* err = nullptr;
  if ((data[0] & 1) == 0) {
    uint8_t* reply = nullptr;
    size_t len = 0;
    const int32_t rc = gatedb_command(db, data + 1, size - 1, &reply, &len, &err);
    bson_t view;
    if (reply == nullptr || !bson_init_static(&view, reply, len) || !gatedb_fuzz::WellFormed(reply, len)) {
      gatedb_fuzz::Fail("gatedb_command gave no well-formed reply", std::to_string(rc));
    }
    CheckAgreement(rc, &view, err);
    gatedb_free(reply);
  } else {
    const std::string json(reinterpret_cast<const char*>(data + 1), size - 1);  // c_str() stops at a NUL
    char* reply = nullptr;
    const int32_t rc = gatedb_command_json(db, json.c_str(), GATEDB_JSON_CANONICAL, &reply, &err);
    if (reply == nullptr) gatedb_fuzz::Fail("gatedb_command_json gave no reply", std::to_string(rc));
    bson_error_t error;
    bson_t* parsed = bson_new_from_json(reinterpret_cast<const uint8_t*>(reply), -1, &error);
    if (parsed == nullptr) gatedb_fuzz::Fail("the JSON reply does not parse", reply);
    CheckAgreement(rc, parsed, err);
    bson_destroy(parsed);
    gatedb_free(reply);
  }
  gatedb_free(err);
  return 0;
}
