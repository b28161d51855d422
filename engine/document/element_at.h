// File: engine/document/element_at.h
//
// An iterator on a top-level element whose place is already known (an
// offset noted by an earlier walk: ValidateForStorage's TopLevelSummary,
// update::FieldLayout), instead of a search of the document.
#ifndef GATEDB_ENGINE_DOCUMENT_ELEMENT_AT_H_
#define GATEDB_ENGINE_DOCUMENT_ELEMENT_AT_H_

#include <bson/bson.h>

#include <cassert>
#include <cstdint>
#include <string_view>

namespace gatedb {

// Points `it` at the element of `doc` at `offset` (bson_iter_offset: its
// type byte), which is named `name`.  False when `offset` is 0 (the
// convention for "the document lacks it") or libbson finds no element of
// that name length there.
// Debug builds check that a nonzero offset is the named element's: the
// offsets come from walks of the same bytes, never from input.
inline bool ElementAt(const bson_t* doc, uint32_t offset, std::string_view name, bson_iter_t* it) {
  if (offset == 0) return false;
  const bool found = bson_iter_init_from_data_at_offset(it, bson_get_data(doc), doc->len, offset,
                                                        static_cast<uint32_t>(name.size()));
  assert(found && name == bson_iter_key(it) && "an offset that is not the named element's");
  return found;
}

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_ELEMENT_AT_H_
