// fuzz_matcher: the input is two BSON documents (fuzz_split.h): a filter and
// a document.  Parse the filter with query::Matcher and match the document;
// also run ExtractEqualityFields (the upsert seed) on the filter, whose
// output must be valid BSON when it succeeds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/query/matcher.h"
#include "tests/fuzz/fuzz_split.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gatedb_fuzz::TwoDocs docs;
  if (!gatedb_fuzz::SplitTwo(data, size, &docs)) return 0;

  auto matcher = gatedb::query::Matcher::Parse(&docs.a);
  if (matcher.ok()) {
    gatedb::query::MatchDetails details;
    bool m = (*matcher)->Matches(&docs.b, &details);
    (void)(*matcher)->Matches(&docs.b, nullptr);
    (void)(*matcher)->MatchesAll();
    if (!m && details.elem_match_index.has_value()) {
      // Not an invariant the header promises; left as information only.
    }
    bson_t seed = BSON_INITIALIZER;
    gatedb::Status s = gatedb::query::ExtractEqualityFields(&docs.a, &seed);
    size_t off = 0;
    if (s.ok() && (!bson_validate(&seed, BSON_VALIDATE_NONE, &off) || !gatedb_fuzz::StrictlyValid(&seed))) {
      std::fprintf(stderr, "FUZZ INVARIANT FAILED: ExtractEqualityFields produced invalid BSON\n");
      std::abort();
    }
    bson_destroy(&seed);
  }
  return 0;
}
