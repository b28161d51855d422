// fuzz_index_keys: the input is two BSON documents (fuzz_split.h): an index
// specification ({key: {...}, unique, sparse, partialFilterExpression, ...})
// and a document that is both indexed and used as a query filter.  Parse
// the specification; generate the document's keys (sorted, distinct); plan
// the filter against the index (ranges ascending, disjoint, non-empty, all
// inside the index's prefix).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/index/index_keys.h"
#include "engine/index/planner.h"
#include "tests/fuzz/fuzz_split.h"

namespace {

void Fail(const char* why) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\n", why);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gatedb_fuzz::TwoDocs docs;
  if (!gatedb_fuzz::SplitTwo(data, size, &docs)) return 0;
  auto spec = gatedb::index::ParseIndexSpec(&docs.a);
  if (!spec.ok()) return 0;
  spec->id = 7;
  std::vector<gatedb::index::IndexKey> keys;
  bool multikey = false;
  if (gatedb::index::GenerateKeys(*spec, &docs.b, &keys, &multikey).ok()) {
    for (size_t i = 1; i < keys.size(); ++i) {
      if (!(keys[i - 1].body < keys[i].body)) Fail("keys not sorted and distinct");
    }
    for (const auto& k : keys) {
      if (k.values.size() != spec->fields.size()) Fail("a key without a value per field");
    }
  }
  // The catalog form round-trips.
  auto back = gatedb::index::DecodeIndexSpec(gatedb::index::EncodeIndexSpec(*spec));
  if (!back.ok() || !gatedb::index::SameDefinition(*back, *spec) || back->id != spec->id) {
    Fail("the catalog form does not round-trip");
  }
  const std::string prefix = gatedb::index::IndexPrefix(1, spec->id);
  const std::string end = gatedb::index::PrefixSuccessor(prefix);
  for (bool multi : {false, true}) {
    spec->multikey = multi;
    gatedb::index::IndexScan scan = gatedb::index::ScanForIndex(1, &docs.b, &docs.b, *spec);
    for (size_t i = 0; i < scan.ranges.size(); ++i) {
      const auto& r = scan.ranges[i];
      if (!(r.start < r.end)) Fail("an empty or inverted range");
      if (r.start < prefix || r.end > end) Fail("a range outside the index");
      if (i > 0 && !(scan.ranges[i - 1].end < r.start)) Fail("ranges overlap or are out of order");
    }
    std::vector<const gatedb::index::IndexSpec*> all{&*spec};
    (void)gatedb::index::PlanQuery(1, &docs.b, &docs.b, all);
  }
  return 0;
}
