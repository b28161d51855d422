// fuzz_update_apply: the input is two BSON documents (fuzz_split.h): an
// update and a target.  Parse the update with update::UpdateDriver, Apply it
// (as a plain update, then as an upsert-insert with a positional index); a
// successful Apply must produce valid BSON (bson_validate and the stricter
// ValidateIncoming), and a failed one an empty `out`.  The in-place path
// must agree with the general one byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/document/diff.h"
#include "engine/document/validate.h"
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

// The first top-level element named `name`, 0 when none.
uint32_t OffsetOf(const bson_t* doc, const std::string& name) {
  bson_iter_t it;
  return bson_iter_init_find_w_len(&it, doc, name.data(), static_cast<int>(name.size())) ? bson_iter_offset(&it) : 0;
}

// The write path reads the named fields where Apply's FieldLayout says they
// are: it must be where a search finds them, and the diff and checks there
// must agree with the searching ones.
void CheckLayout(const gatedb::update::UpdateDriver& driver, const bson_t* u, const bson_t* d, const bson_t* out,
                 const std::vector<std::string>& listed) {
  gatedb::update::FieldLayout layout;
  bson_t again = BSON_INITIALIZER;
  if (!driver.Apply(d, gatedb::update::ApplyContext(), &again, &layout).ok()) {
    Fail("Apply failed the second time", u, d, out);
  }
  bson_destroy(&again);
  if (!layout.known) {
    if (!driver.top_level_fields().empty()) Fail("no layout for an operator update", u, d, out);
    return;
  }
  const std::vector<std::string>& fields = driver.top_level_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (layout.before[i] != OffsetOf(d, fields[i]) || layout.after[i] != OffsetOf(out, fields[i])) {
      Fail("FieldLayout misplaces a field", u, d, out);
    }
  }
  if (layout.version_after != OffsetOf(out, "version")) Fail("FieldLayout misplaces the version field", u, d, out);
  std::vector<std::string> told;
  gatedb::DiffPathsOfFields(d, out, fields, layout.before, layout.after, "version", &told);
  if (told != listed) Fail("DiffPathsOfFields at the layout's offsets disagrees", u, d, out);
  if (gatedb::ValidateWrittenFields(out, fields).code() != gatedb::ValidateWrittenFields(out, fields, layout.after).code()) {
    Fail("ValidateWrittenFields at the layout's offsets disagrees", u, d, out);
  }
}

// The write path diffs and validates only the driver's top_level_fields():
// on a storable document, that must agree with the whole-document checks.
void CheckWrittenFieldsOnly(const gatedb::update::UpdateDriver& driver, const bson_t* u, const bson_t* d) {
  if (driver.is_replacement() || !gatedb::ValidateForStorage(d).ok() || gatedb::HasDuplicateTopLevelNames(d)) return;
  bson_t out = BSON_INITIALIZER;
  if (driver.Apply(d, gatedb::update::ApplyContext(), &out).ok()) {
    std::vector<std::string> all, listed;
    gatedb::DiffPaths(d, &out, "version", &all);
    gatedb::DiffPathsOfFields(d, &out, driver.top_level_fields(), "version", &listed);
    if (all != listed) Fail("an operator update changed a field outside top_level_fields()", u, d, &out);
    if (gatedb::ValidateForStorage(&out).code() !=
        gatedb::ValidateWrittenFields(&out, driver.top_level_fields()).code()) {
      Fail("ValidateWrittenFields disagrees with ValidateForStorage", u, d, &out);
    }
    CheckLayout(driver, u, d, &out, listed);
  }
  bson_destroy(&out);
}

// The in-place path (an update of existing top-level fields) must write
// and note exactly what the general path does, or leave the update to it.
void CheckInPlace(const gatedb::update::UpdateDriver& driver, const bson_t* u, const bson_t* d) {
  gatedb::update::ApplyContext general;
  general.allow_in_place = false;
  gatedb::update::FieldLayout fast_layout, slow_layout;
  bson_t fast = BSON_INITIALIZER, slow = BSON_INITIALIZER;
  gatedb::Status fs = driver.Apply(d, gatedb::update::ApplyContext(), &fast, &fast_layout);
  gatedb::Status ss = driver.Apply(d, general, &slow, &slow_layout);
  if (fs.code() != ss.code()) Fail("the in-place and general paths disagree on the status", u, d, &fast);
  if (fast.len != slow.len || std::memcmp(bson_get_data(&fast), bson_get_data(&slow), fast.len) != 0) {
    Fail("the in-place and general paths write different bytes", u, d, &fast);
  }
  if (fast_layout.known != slow_layout.known ||
      (fast_layout.known && (fast_layout.before != slow_layout.before || fast_layout.after != slow_layout.after ||
                             fast_layout.version_after != slow_layout.version_after))) {
    Fail("the in-place and general paths note different layouts", u, d, &fast);
  }
  bson_destroy(&fast);
  bson_destroy(&slow);
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
  CheckWrittenFieldsOnly(**driver, &docs.a, &docs.b);
  CheckInPlace(**driver, &docs.a, &docs.b);

  gatedb::update::ApplyContext upsert;
  upsert.is_upsert_insert = true;
  upsert.positional_index = size % 4;
  upsert.now_millis = 1700000000000;
  ApplyOnce(**driver, &docs.a, &docs.b, upsert);

  (void)(*driver)->IncrementPaths();
  (void)(*driver)->TargetPaths();
  return 0;
}
