// fuzz_update_apply: the input is two BSON documents (fuzz_split.h): an
// update and a target.  Parse the update with update::UpdateDriver, Apply it
// (as a plain update, then as an upsert-insert with a positional index); a
// successful Apply must produce valid BSON (bson_validate and the stricter
// ValidateIncoming), and a failed one an empty `out`.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/update/update_driver.h"
#include "tests/fuzz/fuzz_split.h"

namespace {

std::string Json(const bson_t* b) {
  char* s = bson_as_canonical_extended_json(b, nullptr);
  std::string r = s ? s : "<unprintable>";
  bson_free(s);
  return r;
}

std::string Hex(const bson_t* b) {
  std::string r;
  const uint8_t* p = bson_get_data(b);
  char buf[4];
  for (uint32_t i = 0; i < b->len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    r += buf;
  }
  return r;
}

[[noreturn]] void Fail(const char* what, const bson_t* u, const bson_t* d, const bson_t* out) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\nupdate: %s\ndoc: %s\nout: %s\nout hex: %s\n", what,
               Json(u).c_str(), Json(d).c_str(), Json(out).c_str(), Hex(out).c_str());
  std::abort();
}

void ApplyOnce(const gatedb::update::UpdateDriver& driver, const bson_t* u, const bson_t* d,
               const gatedb::update::ApplyContext& ctx) {
  bson_t out = BSON_INITIALIZER;
  gatedb::Status s = driver.Apply(d, ctx, &out);
  size_t off = 0;
  if (s.ok()) {
    if (!bson_validate(&out, BSON_VALIDATE_NONE, &off)) Fail("Apply succeeded with invalid BSON", u, d, &out);
    if (!gatedb_fuzz::StrictlyValid(&out)) Fail("Apply succeeded with malformed BSON (ValidateIncoming)", u, d, &out);
  } else if (out.len != 5) {
    Fail("Apply failed but left `out` non-empty", u, d, &out);
  }
  bson_destroy(&out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gatedb_fuzz::TwoDocs docs;
  if (!gatedb_fuzz::SplitTwo(data, size, &docs)) return 0;
  gatedb::update::UpdateOptions opts;
  auto driver = gatedb::update::UpdateDriver::Parse(&docs.a, opts);
  if (!driver.ok()) return 0;

  gatedb::update::ApplyContext plain;
  ApplyOnce(**driver, &docs.a, &docs.b, plain);

  gatedb::update::ApplyContext upsert;
  upsert.is_upsert_insert = true;
  upsert.positional_index = size % 4;
  upsert.now_millis = 1700000000000;
  ApplyOnce(**driver, &docs.a, &docs.b, upsert);

  (void)(*driver)->IncrementPaths();
  (void)(*driver)->TargetPaths();
  return 0;
}
