// File: engine/index/index_keys.h
//
// Index entries: which keys a document gives an index, and their bytes.
//
// ---------------------------------------------------------------------------
// Layout ("indexes" column family).  DO NOT CHANGE: stored keys depend on it.
//
//   key   = collection id (4 bytes BE) + index id (4 bytes BE)
//           + component 1 + ... + component n
//           [+ EncodeValue(_id)]        (not for unique indexes)
//   value = EncodeValue(_id)            (the document is docs[collection id + this])
//
// A component is EncodeValue(v) (engine/keys/key_format.h) of the key
// field's value, or EncodeValueDescending(v) when the field is descending
// (every byte inverted, except for a top-level decimal between two 64-bit
// binary values, which key_format.h lays out).  Bytewise order of the
// components is MongoDB's order of the values (reversed for a descending
// field), with or without anything after them; the keys whose component
// equals v are [C, C + 0xFF) for C = the component of v (a decimal just
// beyond v starts with C + 0xFF), not every key starting with C.  A unique index has one entry per key,
// so that two writers of one key meet on one RocksDB key (and its lock); a
// non-unique index appends the _id, so every document has its own entries.
//
// Key generation follows MongoDB's: along a dotted path through embedded
// documents and arrays (engine/projection/paths.h), a missing field is null,
// an array at the end of the path gives one key per element (an empty array
// gives undefined), a compound key is the cartesian product of its fields'
// values, and two fields that each meet a different array are refused
// (CannotIndexParallelArrays, 171).  A sparse index takes no entry for a
// document where every key field is missing.
#ifndef GATEDB_ENGINE_INDEX_INDEX_KEYS_H_
#define GATEDB_ENGINE_INDEX_INDEX_KEYS_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/index/index_spec.h"
#include "engine/projection/paths.h"
#include "gatedb/status.h"

namespace gatedb {
namespace index {

// The length of IndexPrefix().
constexpr size_t kIndexPrefixSize = 8;

// One key a document gives an index.
struct IndexKey {
  std::string body;  // the components
  // The key's values, for DuplicateKey's keyValue; they borrow from the
  // document (or are static null/undefined) and live as long as it does.
  std::vector<projection::BsonValue> values;
};

// The keys of `doc` for `spec`, distinct by body and in body order; none for
// a sparse index whose fields are all missing.  *multikey is set when a key
// path met an array.  The caller applies the partial filter.
Status GenerateKeys(const IndexSpec& spec, const bson_t* doc, std::vector<IndexKey>* out, bool* multikey);

// Appends one component: EncodeValue(v), or EncodeValueDescending(v).
void AppendComponent(const bson_value_t& v, bool descending, std::string* out);

// collection id + index id.
std::string IndexPrefix(uint32_t collection_id, uint32_t index_id);

// The smallest string greater than every string that starts with `s`:
// s with its trailing 0xFF bytes dropped and the last other byte incremented.
// Empty when s is empty or all 0xFF (no such string: scan to the end).
std::string PrefixSuccessor(std::string_view s);

// {pattern field: value, ...} for DuplicateKey's keyValue, and the text of
// its message ("{ a: 1, b: \"x\" }").
void AppendKeyValue(const IndexSpec& spec, const IndexKey& key, bson_t* out);

}  // namespace index
}  // namespace gatedb

#endif  // GATEDB_ENGINE_INDEX_INDEX_KEYS_H_
