// fuzz_validator: the input is two BSON documents (fuzz_split.h): a
// collection validator (query operators and $jsonSchema) and a document.
// Parse the validator and validate the document; the details of a failure
// must be valid BSON, and Check() must agree with Validate().
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/schema/validator.h"
#include "tests/fuzz/fuzz_split.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gatedb_fuzz::TwoDocs docs;
  if (!gatedb_fuzz::SplitTwo(data, size, &docs)) return 0;
  auto validator = gatedb::schema::Validator::Parse(&docs.a);
  if (!validator.ok()) return 0;
  bson_t details = BSON_INITIALIZER;
  bool ok = (*validator)->Validate(&docs.b, &details);
  size_t off = 0;
  if (!bson_validate(&details, BSON_VALIDATE_NONE, &off) || !gatedb_fuzz::StrictlyValid(&details)) {
    std::fprintf(stderr, "FUZZ INVARIANT FAILED: validation details are not valid BSON\n");
    std::abort();
  }
  bson_destroy(&details);
  if ((*validator)->Check(&docs.b).ok() != ok) {
    std::fprintf(stderr, "FUZZ INVARIANT FAILED: Check and Validate disagree\n");
    std::abort();
  }
  return 0;
}
