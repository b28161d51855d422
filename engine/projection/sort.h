// File: engine/projection/sort.h
//
// SortSpec: a parsed find() sort specification ({qty: -1, "item.sku": 1})
// ordering documents as MongoDB does: field by field in spec order, each
// value compared by CompareValues() (engine/document/bson_compare.h), with
// MongoDB's rules for paths that reach arrays or nothing:
//   * an ascending key sorts by the smallest value the path reaches, a
//     descending key by the largest; an array at the end of the path
//     contributes its elements (a nested array is one value);
//   * a missing field (or a path through a scalar) sorts as null;
//   * an empty array at the end of the path sorts as undefined, below null
//     (so first ascending, last descending).
// Ties compare equal (0); keeping ties in their original order is the
// caller's job (std::stable_sort).
//
// Extract each document's key once and compare keys, not documents:
//
//   std::vector<std::pair<SortKey, const bson_t*>> rows;
//   for (const bson_t* d : docs) { SortKey k; spec->ExtractKey(d, &k); rows.emplace_back(std::move(k), d); }
//   std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
//     return spec->CompareKeys(x.first, y.first) < 0; });
//
// Thread safety: a SortSpec is immutable after Parse(); its methods may be
// called from many threads at once.  A SortKey is a value.
#ifndef GATEDB_ENGINE_PROJECTION_SORT_H_
#define GATEDB_ENGINE_PROJECTION_SORT_H_

#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/projection/paths.h"
#include "gatedb/status.h"

namespace gatedb {
namespace projection {

// One document's sort key: one value per SortSpec field.  Owns its bytes
// (it does not borrow from the document it was extracted from).
class SortKey {
 public:
  SortKey() = default;
  SortKey(const SortKey& other);
  SortKey& operator=(const SortKey& other);
  SortKey(SortKey&& other) noexcept = default;
  SortKey& operator=(SortKey&& other) noexcept = default;

  size_t size() const { return values_.size(); }
  // REQUIRES: i < size().  Valid until the key is modified or destroyed.
  const bson_value_t& value(size_t i) const { return values_[i]; }

 private:
  friend class SortSpec;
  // Re-reads values_ from buf_ (a BSON document of the key values).
  void Index();

  std::vector<uint8_t> buf_;
  std::vector<BsonValue> values_;  // point into buf_
};

class SortSpec {
 public:
  // Parses a sort specification.  {} sorts nothing (every pair compares 0).
  // Errors, all BadValue:
  //   * a value that is 0, not a number, or a number whose integer part is
  //     not 1 or -1: "$sort key ordering must be 1 (for ascending) or -1
  //     (for descending)" (MongoDB 15975);
  //   * {$meta: ...}: "$meta sort is not supported"; another object:
  //     "$meta is the only expression supported by $sort right now";
  //   * a bad field path ("", "a..b", "$a"), MongoDB's FieldPath messages;
  //   * a repeated field: "$sort key must not contain duplicate keys
  //     (duplicate: 'a')".
  static StatusOr<std::unique_ptr<SortSpec>> Parse(const bson_t* spec);

  SortSpec(const SortSpec&) = delete;
  SortSpec& operator=(const SortSpec&) = delete;

  // True for the empty spec {}.
  bool empty() const { return fields_.empty(); }
  size_t num_fields() const { return fields_.size(); }

  // Replaces *key with the sort key of `doc`.
  void ExtractKey(const bson_t* doc, SortKey* key) const;

  // <0, 0, >0 as the document with key `a` sorts before, ties with, or after
  // the one with key `b`.  REQUIRES: both keys come from this spec.
  int CompareKeys(const SortKey& a, const SortKey& b) const;

  // Convenience: extracts both keys and compares them.
  int Compare(const bson_t* a, const bson_t* b) const;

 private:
  struct Field {
    std::string path;
    std::vector<std::string_view> parts;  // into path
    bool ascending;
  };
  SortSpec() = default;

  // Constant after Parse(), which fills every `parts` only once fields_ has
  // stopped growing (each view points into its element's `path`).
  std::vector<Field> fields_;
};

}  // namespace projection
}  // namespace gatedb

#endif  // GATEDB_ENGINE_PROJECTION_SORT_H_
