// File: engine/index/index_spec.h
//
// A secondary index's definition, as createIndexes gives it and listIndexes
// shows it: the key pattern ({a: 1, "b.c": -1}), its name (MongoDB's default
// "a_1_b.c_-1" when none is given), unique, sparse, partialFilterExpression
// and expireAfterSeconds.  ParseIndexSpec applies MongoDB's checks and
// refuses, by name, what gatedb does not build (text, 2dsphere, hashed,
// wildcard, collation, hidden, ...).
//
// The catalog keeps each index as EncodeIndexSpec()'s BSON together with
// the engine's own fields: the index id (which prefixes its keys), whether
// the build finished, and whether any document made it multikey.
//
// Thread safety: IndexSpec is a plain value.
#ifndef GATEDB_ENGINE_INDEX_INDEX_SPEC_H_
#define GATEDB_ENGINE_INDEX_INDEX_SPEC_H_

#include <bson/bson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace index {

// The most indexes a collection may have, _id_ included (MongoDB's limit).
constexpr size_t kMaxIndexes = 64;
// The name of the index every collection has on _id.
constexpr const char* kIdIndexName = "_id_";

struct IndexField {
  std::string path;                // "b.c"
  std::vector<std::string> parts;  // {"b", "c"}
  bool descending = false;
};

struct IndexSpec {
  std::string name;
  Document key;  // the key pattern as given
  std::vector<IndexField> fields;
  bool unique = false;
  bool sparse = false;
  Document partial_filter;  // empty: none
  std::optional<int64_t> expire_after_seconds;

  // Engine state, kept in the catalog with the definition.
  uint32_t id = 0;        // prefixes the index's keys; never reused in a collection
  bool ready = true;      // false while the build runs
  bool multikey = false;  // some document indexed an array on a key path

  bool has_partial_filter() const { return !partial_filter.empty(); }
};

// Parses one element of createIndexes' `indexes` array.  Errors (MongoDB's
// codes): a missing or empty key, a bad direction, an unknown field, a bad
// option type, expireAfterSeconds on a compound or _id index, sparse with a
// partial filter, an operator a partial filter may not hold: CannotCreateIndex
// (67), InvalidIndexSpecificationOption (197), TypeMismatch (14), FailedToParse
// (9); index types and options gatedb does not build are refused by name.
StatusOr<IndexSpec> ParseIndexSpec(const bson_t* spec);

// MongoDB's default name: "<field>_<direction>" joined with '_'.
std::string DefaultIndexName(const bson_t* key_pattern);

// The definition as listIndexes shows it ({v: 2, key, name, unique, ...}).
void AppendIndexDescription(const IndexSpec& spec, bson_t* out);

// True when a and b define the same index (key pattern and options), so that
// creating b again is a no-op.
bool SameDefinition(const IndexSpec& a, const IndexSpec& b);

// True when the key patterns are equal field by field and direction by direction.
bool SameKeyPattern(const IndexSpec& a, const IndexSpec& b);

// The catalog's form: the description plus {gatedbId, ready, multikey}.
std::string EncodeIndexSpec(const IndexSpec& spec);
StatusOr<IndexSpec> DecodeIndexSpec(std::string_view bytes);

// The `_id_` index's description, which every collection has.
void AppendIdIndexDescription(bson_t* out);

}  // namespace index
}  // namespace gatedb

#endif  // GATEDB_ENGINE_INDEX_INDEX_SPEC_H_
