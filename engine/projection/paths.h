// File: engine/projection/paths.h
//
// Walking a dotted path ("a.b.c") through a BSON document the way MongoDB
// does for distinct and for sort keys, and DistinctSet, which collects the
// distinct values that distinct returns.
//
// Path rules (MongoDB's extractAllElementsAlongPath):
//   * a path component looks up a field of an embedded document;
//   * on an array, an all-digit component ("0", "12") selects that element
//     by position; any other component is applied to every element that is
//     a document (the array is traversed);
//   * at the end of the path an array contributes its elements, one level
//     deep (a nested array is one value), not the array itself.
//
// Thread safety: the free functions are reentrant.  A DistinctSet is a plain
// value: const methods may be called concurrently, Add() needs external
// synchronization.
//
//   DistinctSet set;
//   for (const bson_t* doc : docs) set.AddFromDocument(doc, "tags");
//   set.AppendToArray(&reply_values);  // ascending, deduplicated
#ifndef GATEDB_ENGINE_PROJECTION_PATHS_H_
#define GATEDB_ENGINE_PROJECTION_PATHS_H_

#include <bson/bson.h>

#include <set>
#include <string_view>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace projection {

// The same type as bson_value_t, for use as a template argument: libbson's
// typedef carries an alignment attribute that GCC warns about dropping
// (-Wignored-attributes) there; the struct it names has the same layout.
using BsonValue = struct _bson_value_t;

// Splits "a.b.c" into {"a", "b", "c"}.  Empty components are kept ("a..b"
// gives {"a", "", "b"}; "" gives {""}).  The views point into `path`.
std::vector<std::string_view> SplitDottedPath(std::string_view path);

// Checks a field path as MongoDB's FieldPath does.  Errors, all BadValue
// with MongoDB's messages: "" ("FieldPath cannot be constructed with empty
// string"), an empty component as in "a..b" ("FieldPath field names may not
// be empty strings."), a component starting with '$' ("FieldPath field names
// may not start with '$'. Consider using $getField or $setField.").
Status ValidateFieldPath(std::string_view path);

// True for a non-empty component made only of ASCII digits, which indexes an
// array by position.
bool IsPositionalComponent(std::string_view component);

// Receives the values found along a path.  The value borrows from the
// document being walked (or is a static null/undefined) and is valid only
// during the call.
class PathValueVisitor {
 public:
  virtual ~PathValueVisitor() = default;
  virtual void Visit(const bson_value_t& value) = 0;
};

// What VisitPathValues reports where the path finds nothing.
enum class MissingPolicy {
  // distinct: a missing field, a path through a scalar, or an empty array
  // contributes nothing.
  kSkip,
  // sort keys (MongoDB's index key generation): a missing field or a path
  // through a scalar (or an empty array, or a non-document array element)
  // reports null; an empty array at the end of the path reports undefined,
  // which sorts below null.
  kNullAndUndefined,
};

// Calls visitor->Visit() for each value reached by `parts` (see SplitDottedPath)
// in `doc`, in document order.  REQUIRES: parts is not empty.
void VisitPathValues(const bson_t* doc, const std::vector<std::string_view>& parts,
                     MissingPolicy missing, PathValueVisitor* visitor);

// Appends to `out` the values that MongoDB's distinct collects from `doc` at
// `dotted_path`: traverses arrays of documents, an array at the end of the
// path contributes its elements, a missing field contributes nothing.
// Duplicates are not removed.  The values borrow from `doc`: REQUIRES: `doc`
// outlives them and is not modified while they are used.
void CollectDistinctValues(const bson_t* doc, std::string_view dotted_path,
                           std::vector<BsonValue>* out);

// A set of owned BSON values, deduplicated by CompareValues() == 0 (so 1,
// 1.0 and NumberLong(1) are one value; the first one added is kept, with its
// type).  Iteration is in ascending CompareValues() order, which is the
// order gatedb returns distinct values in (MongoDB leaves it unspecified).
class DistinctSet {
 private:
  struct ValueLess {
    bool operator()(const bson_value_t& a, const bson_value_t& b) const;
  };
  using Set = std::set<BsonValue, ValueLess>;

 public:
  using const_iterator = Set::const_iterator;

  DistinctSet() = default;
  ~DistinctSet();
  DistinctSet(DistinctSet&& other) noexcept;
  DistinctSet& operator=(DistinctSet&& other) noexcept;
  DistinctSet(const DistinctSet&) = delete;
  DistinctSet& operator=(const DistinctSet&) = delete;

  // Adds a deep copy of `value` unless an equal value is present.  Returns
  // true when it was added.
  bool Add(const bson_value_t& value);

  // Adds every value CollectDistinctValues() finds in `doc` at `dotted_path`.
  void AddFromDocument(const bson_t* doc, std::string_view dotted_path);

  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  // Ascending by CompareValues().  Valid until the set is next modified.
  const_iterator begin() const { return values_.begin(); }
  const_iterator end() const { return values_.end(); }

  // Appends the values, ascending, to `array` under the keys "0", "1", ...
  // (`array` is typically opened with bson_append_array_begin).
  void AppendToArray(bson_t* array) const;

  // Bytes the values would take as the elements of a BSON array (type byte,
  // index key and payload each): what a reply built by AppendToArray() grows
  // by.  Lets the caller stop early at MongoDB's 16MB reply limit.
  size_t ByteSize() const { return byte_size_; }

 private:
  void Clear();

  Set values_;  // each element owns its data (bson_value_copy)
  size_t byte_size_ = 0;
};

}  // namespace projection
}  // namespace gatedb

#endif  // GATEDB_ENGINE_PROJECTION_PATHS_H_
