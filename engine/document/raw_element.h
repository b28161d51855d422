// File: engine/document/raw_element.h
//
// ReadRawElement: one top-level element of a document the store wrote, read
// by its bytes alone: its type, key, and where it starts and ends, without
// libbson's checks of the value (its UTF-8, a nested document's own
// terminator, ...), which those bytes passed when they were written.  Every
// length is still checked against the document's bounds, and a type the
// reader does not know stops it: the caller then lets a validating reader
// (bson_iter_t) decide.  A walk of the top level this way costs a few
// instructions per element where bson_iter_next costs about a hundred.
#ifndef GATEDB_ENGINE_DOCUMENT_RAW_ELEMENT_H_
#define GATEDB_ENGINE_DOCUMENT_RAW_ELEMENT_H_

#include <cstdint>
#include <string_view>

namespace gatedb {

struct RawElement {
  uint8_t type = 0;
  std::string_view key;
  uint32_t start = 0;  // offset of the type byte (bson_iter_offset)
  uint32_t end = 0;    // offset just past the value: the next element's start
};

enum class RawRead { kElement, kEnd, kStop };

// Reads the element at `offset` of the document `data` (`len` bytes, as its
// header says).  kEnd: `offset` is the document's terminator; kStop: the
// bytes there are not an element this reader can measure inside the
// document.
RawRead ReadRawElement(const uint8_t* data, uint32_t len, uint32_t offset, RawElement* out);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_RAW_ELEMENT_H_
