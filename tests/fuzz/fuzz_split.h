// Splits a fuzz input into two BSON documents: the first 4 bytes are the
// little-endian length N of the first part, the next N bytes the first
// document, the rest the second.  Each part must pass bson_validate (with
// BSON_VALIDATE_NONE), the precondition the engine's parsers state.
#ifndef GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_
#define GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>

namespace gatedb_fuzz {

struct TwoDocs {
  bson_t a;
  bson_t b;
};

// True when both parts are valid BSON; `out` then points into `data`.
inline bool SplitTwo(const uint8_t* data, size_t size, TwoDocs* out) {
  if (size < 4) return false;
  uint32_t n = uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 | uint32_t(data[3]) << 24;
  data += 4;
  size -= 4;
  if (n > size) return false;
  if (!bson_init_static(&out->a, data, n)) return false;
  if (!bson_init_static(&out->b, data + n, size - n)) return false;
  size_t off = 0;
  if (!bson_validate(&out->a, BSON_VALIDATE_NONE, &off)) return false;
  if (!bson_validate(&out->b, BSON_VALIDATE_NONE, &off)) return false;
  return true;
}

}  // namespace gatedb_fuzz

#endif  // GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_
