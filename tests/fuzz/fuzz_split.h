// Splits a fuzz input into two BSON documents: the first 4 bytes are the
// little-endian length N of the first part, the next N bytes the first
// document, the rest the second.  Each part must pass gatedb's
// ValidateIncoming (engine/document/validate.h), what the server applies to
// bytes from outside, and WellFormed() below, since neither bson_validate
// (libbson 1.23) nor ValidateIncoming notices an element that overruns its
// embedded document (an iterator that stops with err_off set): see README.md.
#ifndef GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_
#define GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>

#include "engine/document/validate.h"

namespace gatedb_fuzz {

// Every element of every embedded document/array/scope parses: a full
// iterative walk that treats an iterator stopping with err_off != 0 as an
// error.  `data` must already have passed ValidateIncoming (depth <= 200).
inline bool WellFormed(const uint8_t* data, size_t len, int depth = 0) {
  if (depth > 256) return false;
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, data, len)) return false;
  while (bson_iter_next(&it)) {
    uint32_t n = 0;
    const uint8_t* child = nullptr;
    switch (bson_iter_type(&it)) {
      case BSON_TYPE_DOCUMENT:
        bson_iter_document(&it, &n, &child);
        break;
      case BSON_TYPE_ARRAY:
        bson_iter_array(&it, &n, &child);
        break;
      case BSON_TYPE_CODEWSCOPE: {
        uint32_t code_len = 0;
        bson_iter_codewscope(&it, &code_len, &n, &child);
        break;
      }
      default:
        continue;
    }
    if (child == nullptr || !WellFormed(child, n, depth + 1)) return false;
  }
  return it.err_off == 0;
}

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
  if (!gatedb::ValidateIncoming(data, n).ok()) return false;
  if (!gatedb::ValidateIncoming(data + n, size - n).ok()) return false;
  return WellFormed(data, n) && WellFormed(data + n, size - n);
}

// Strict check of an engine result: structure, nested terminators, UTF-8.
inline bool StrictlyValid(const bson_t* b) {
  return gatedb::ValidateIncoming(bson_get_data(b), b->len).ok() && WellFormed(bson_get_data(b), b->len);
}

}  // namespace gatedb_fuzz

#endif  // GATEDB_TESTS_FUZZ_FUZZ_SPLIT_H_
