// File: engine/schema/bson_util.h
//
// Small BSON helpers shared by the validator (validator.cc) and the
// $jsonSchema evaluator (json_schema.cc): owned bson_t values, building
// MongoDB's error documents, equality that ignores field order (JSON
// Schema's enum and uniqueItems), the values a dotted path reaches (for
// 'consideredValues'), exact decimal multipleOf, and UTF-8 code points.
// Internal to engine/schema.
//
// Thread safety: pure functions and plain values.
#ifndef GATEDB_ENGINE_SCHEMA_BSON_UTIL_H_
#define GATEDB_ENGINE_SCHEMA_BSON_UTIL_H_

#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gatedb {
namespace schema {

// The same type as bson_value_t, for use as a template argument (libbson's
// typedef carries an alignment attribute that GCC warns about dropping).
using BsonValue = struct _bson_value_t;

// The same type as bson_t, without the alignment attribute of libbson's
// typedef (which GCC warns about in template arguments).
using BsonStruct = struct _bson_t;

struct BsonDeleter {
  void operator()(BsonStruct* b) const {
    if (b != nullptr) bson_destroy(b);
  }
};
// An owned, heap-allocated bson_t.
using BsonPtr = std::unique_ptr<BsonStruct, BsonDeleter>;
inline BsonPtr NewBson() { return BsonPtr(bson_new()); }

// A document or array value that points at `doc`'s bytes.
bson_value_t DocumentValue(const bson_t* doc);

// Iterates the elements of a document or array value.  A value of another
// type, or malformed bytes, yields nothing.
class ElemIter {
 public:
  explicit ElemIter(const bson_value_t& doc_or_array);
  // Moves to the next element; false at the end.
  bool Next();
  std::string_view key() const;
  const bson_value_t& value() const { return *bson_iter_value(&it_); }

 private:
  mutable bson_iter_t it_;  // bson_iter_value() fills a field of the iterator
  bool ok_;
};

// Number of elements of a document or array value.
uint32_t CountElements(const bson_value_t& doc_or_array);

// Finds the first field named `name` (literally, no dotted paths) of a
// document value; false when absent.
bool FindField(const bson_value_t& doc, std::string_view name, bson_value_t* out);

// Appenders that take std::string_view keys.
void AppendValue(bson_t* out, std::string_view key, const bson_value_t& value);
void AppendUtf8(bson_t* out, std::string_view key, std::string_view value);
void AppendInt32(bson_t* out, std::string_view key, int32_t value);
void AppendBool(bson_t* out, std::string_view key, bool value);
void AppendDocument(bson_t* out, std::string_view key, const bson_t* doc);
// An array of documents under `key`.
void AppendDocumentArray(bson_t* out, std::string_view key, const std::vector<BsonPtr>& docs);
// An array of strings under `key`.
void AppendStringArray(bson_t* out, std::string_view key, const std::vector<std::string>& strings);
// An array of values under `key`.
void AppendValueArray(bson_t* out, std::string_view key, const std::vector<BsonValue>& values);
// Appends every element of `doc` to `out`.
void AppendAllFields(bson_t* out, const bson_t* doc);

// A value deep-copied with the fields of every embedded document sorted by
// name (stable, bytewise), so that CompareValues() of two canonical values
// is 0 exactly when the values are equal regardless of field order (MongoDB's
// UnorderedFieldsBSONElementComparator, used by enum and uniqueItems).
// Numbers compare by value (1 == 1.0 == NumberLong(1)), as CompareValues.
// Documents nested deeper than 200 levels keep their field order below that.
class CanonicalValue {
 public:
  explicit CanonicalValue(const bson_value_t& value);
  CanonicalValue(CanonicalValue&&) noexcept = default;
  CanonicalValue& operator=(CanonicalValue&&) noexcept = default;
  // Valid as long as this object lives.
  const bson_value_t& value() const { return value_; }

 private:
  BsonPtr holder_;  // {"v": <canonical value>}
  bson_value_t value_;
};

// The index of the first element of `values` (in order) that equals an
// earlier one ignoring field order (see CanonicalValue), or -1 when all
// differ.  O(n log n) comparisons.
int64_t FirstDuplicateIndex(const std::vector<BsonValue>& values);

// The values MongoDB's ElementPath yields for a dotted path, as
// doc_validation_error's createValuesArray() reports them: embedded
// documents are descended; arrays before the last component are traversed
// (documents inside them are searched for the rest of the path, and an
// all-digit component also selects the element at that position); a leaf
// array yields its elements when `expand_leaf_arrays`, else itself.
struct PathValues {
  std::vector<BsonValue> values;  // borrow from the walked document
  bool exists = false;            // the path reached at least one element
  bool truncated = false;         // more than `max_values` were found
};
void CollectPathValues(const bson_t* doc, const std::vector<std::string>& parts,
                       bool expand_leaf_arrays, size_t max_values, PathValues* out);

// Number of UTF-8 code points in s[0, len) (bytes that are not continuation
// bytes), as MongoDB's minLength/maxLength count.
int64_t CountCodePoints(const char* s, size_t len);

// A number as MongoDB's Decimal128 sees it: int32/int64 exactly, a double
// rounded to 15 significant digits, a decimal128 as is.
struct ExactDecimal {
  enum class Kind { kFinite, kNaN, kInfinity };
  Kind kind = Kind::kFinite;
  bool negative = false;
  unsigned __int128 coefficient = 0;  // < 10^34
  int32_t exponent = 0;               // value = coefficient * 10^exponent
};
// False when `v` is not a number.
bool ToExactDecimal(const bson_value_t& v, ExactDecimal* out);
// True when value mod divisor == 0 exactly (MongoDB's
// InternalSchemaFmodMatchExpression with a zero remainder).  NaN and
// infinite values are never multiples.
bool IsMultipleOf(const ExactDecimal& value, const ExactDecimal& divisor);
// True when the number is zero or negative (or NaN: false).
bool IsZeroOrNegative(const ExactDecimal& d);

// A short rendering of a value for error messages, close to MongoDB's
// BSONElement::toString(): strings quoted, numbers plain, others as relaxed
// Extended JSON.
std::string ValueToString(const bson_value_t& v);

}  // namespace schema
}  // namespace gatedb

#endif  // GATEDB_ENGINE_SCHEMA_BSON_UTIL_H_
