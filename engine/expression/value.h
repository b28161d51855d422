// File: engine/expression/value.h
//
// expression::Value: what an aggregation expression evaluates to.  A BSON
// value (libbson's bson_value_t), or *missing* (a field that does not exist,
// or $$REMOVE), which is not the same as null: {$ifNull: ["$a", 1]} and
// {$type: "$a"} tell them apart, and an object expression leaves a missing
// field out.
//
// A Value never deep-copies on its own.  Its bytes (a string, a document,
// an array, ...) live in one of two places:
//   - borrowed: memory owned by someone else.  ParseExpression() literals
//     point into the expression; field paths ("$a.b") point into the input
//     document.  Numbers, booleans, dates and the like are held inline, so
//     evaluating "$qty" allocates nothing.
//   - kept: a buffer the Value shares (by reference count) with every Value
//     copied or derived from it: what an operator builds ($concat's string,
//     $map's array), and sub-values of those ("$$x.a" of a built document).
//
// LIFETIME RULE.  A Value stays valid while (1) the input documents given
// to the EvalContext it was evaluated with ($$ROOT, SetVariable values that
// borrow) and (2) the Expression it came from are alive.  Everything an
// operator built is kept alive by the Value itself.  To keep a Value past
// either of those (an accumulator holding a $push element, a $group key),
// call Detached(), which copies only what is borrowed.
//
// Not to be confused with gatedb::Value (gatedb/value.h), the public API's
// owning value.
//
// Thread safety: a Value is immutable; copies may be used on different
// threads (the reference count is atomic).
#ifndef GATEDB_ENGINE_EXPRESSION_VALUE_H_
#define GATEDB_ENGINE_EXPRESSION_VALUE_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace expression {

// Deepest nesting of documents and arrays that an expression may build
// (MongoDB's BSON depth limit).  Deeper results fail with Overflow.
constexpr int kMaxValueDepth = 200;
// Largest document, array or string an expression may build: MongoDB's
// 16 MiB document limit plus its 16 KiB of slack for internal fields.
constexpr size_t kMaxValueBytes = 16 * 1024 * 1024 + 16 * 1024;

class Value {
 public:
  // Missing.
  Value() { v_.value_type = BSON_TYPE_EOD; }

  static Value Missing() { return Value(); }
  static Value Null();
  static Value Undefined();
  static Value Bool(bool b);
  static Value Int32(int32_t i);
  static Value Int64(int64_t i);
  static Value Double(double d);
  static Value Decimal(const bson_decimal128_t& d);
  // Milliseconds since the Unix epoch.
  static Value Date(int64_t unix_ms);
  static Value Oid(const bson_oid_t& oid);
  static Value Timestamp(uint32_t seconds, uint32_t increment);
  static Value MinKey();
  static Value MaxKey();
  // A string; the Value keeps a copy of `s` (or takes `s`).
  static Value String(std::string_view s);
  static Value String(std::string&& s);
  static Value String(const char* s) { return String(std::string_view(s)); }

  // Borrows `v`: its bytes must outlive the Value (see the lifetime rule).
  // BSON_TYPE_EOD gives missing.
  static Value Borrow(const bson_value_t& v);
  // `v` points into `owner`'s bytes: the result keeps alive what `owner`
  // keeps alive (or borrows what `owner` borrows).
  static Value Within(const bson_value_t& v, const Value& owner);
  // A deep copy of `v` that depends on nothing else.
  static Value Copy(const bson_value_t& v);

  // The value as libbson sees it (BSON_TYPE_EOD when missing).  Pointers in
  // it follow this Value's lifetime.
  const bson_value_t& bson() const { return v_; }
  bson_type_t type() const { return v_.value_type; }

  bool missing() const { return v_.value_type == BSON_TYPE_EOD; }
  // Missing, null or undefined: what most operators answer null for.
  bool nullish() const {
    return v_.value_type == BSON_TYPE_EOD || v_.value_type == BSON_TYPE_NULL ||
           v_.value_type == BSON_TYPE_UNDEFINED;
  }
  bool is_number() const {
    return v_.value_type == BSON_TYPE_INT32 || v_.value_type == BSON_TYPE_INT64 ||
           v_.value_type == BSON_TYPE_DOUBLE || v_.value_type == BSON_TYPE_DECIMAL128;
  }
  bool is_string() const { return v_.value_type == BSON_TYPE_UTF8; }
  bool is_array() const { return v_.value_type == BSON_TYPE_ARRAY; }
  bool is_document() const { return v_.value_type == BSON_TYPE_DOCUMENT; }
  bool is_date() const { return v_.value_type == BSON_TYPE_DATE_TIME; }

  // REQUIRES: the type the accessor names.
  bool boolean() const { return v_.value.v_bool; }
  int32_t int32() const { return v_.value.v_int32; }
  int64_t int64() const { return v_.value.v_int64; }
  double dbl() const { return v_.value.v_double; }
  int64_t date() const { return v_.value.v_datetime; }
  std::string_view str() const { return std::string_view(v_.value.v_utf8.str, v_.value.v_utf8.len); }
  // The bytes of a document or array.
  const uint8_t* doc_data() const { return v_.value.v_doc.data; }
  uint32_t doc_len() const { return v_.value.v_doc.data_len; }

  // The nesting depth of a document or array this library built (1 for
  // [1, 2]); 0 for scalars and for borrowed values.
  int depth() const { return depth_; }

  // True when nothing outside this Value (and its shared buffers) needs to
  // stay alive for it: a scalar, or bytes it keeps.
  bool self_contained() const;
  // This value with every borrowed byte copied: see the lifetime rule.
  Value Detached() const;

  // Approximate heap bytes this Value holds or would hold once Detached():
  // what accumulators report against the $group memory limit.
  size_t ApproximateSize() const;

  // Appends the value to `out` under `key`; nothing when missing.
  void AppendTo(bson_t* out, std::string_view key) const;

  // Relaxed Extended JSON of the value ("missing" when missing), for error
  // messages and tests.
  std::string ToString() const;

 private:
  friend class ValueBuilder;

  bson_value_t v_;
  std::shared_ptr<const void> keep_;
  int depth_ = 0;
};

// MongoDB's truthiness (Value::coerceToBool): false, null, undefined,
// missing and a zero of any numeric type are false; everything else,
// including "" and [], is true.
bool Truthy(const Value& v);

// Aggregation's comparison order: MongoDB's BSON order (CompareValues in
// engine/document/bson_compare.h), except that missing sorts below null (as
// undefined), so {$eq: ["$nope", null]} is false.  <0, 0, >0.
int CompareForExpression(const Value& a, const Value& b);

// MongoDB's type name of a value, as $type answers: "double", "string",
// "object", ..., "missing".
const char* TypeName(const Value& v);

// The elements of an array (or the values of a document), each sharing
// `container`'s lifetime.  REQUIRES: an array or document.
void Elements(const Value& container, std::vector<Value>* out);

// Calls `fn(key, value)` for each field of a document (or element of an
// array) until it returns false.  Values share `container`'s lifetime.
template <typename Fn>
void ForEachField(const Value& container, Fn fn) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, container.doc_data(), container.doc_len())) return;
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (!fn(key, Value::Within(*bson_iter_value(&it), container))) return;
  }
}

// The number of elements of an array or fields of a document.
uint32_t CountElements(const Value& container);

// Builds a document or an array Value.  Fields are appended in order; a
// missing Value appends nothing (callers that need null for missing, as an
// array expression does, say so).  The result keeps its bytes.
//
//   ValueBuilder b(ValueBuilder::kArray);
//   b.Append(Value::Int32(1));
//   ASSIGN_OR_RETURN(Value arr, b.Finish());
class ValueBuilder {
 public:
  enum Kind { kDocument, kArray };
  explicit ValueBuilder(Kind kind);
  ValueBuilder(const ValueBuilder&) = delete;
  ValueBuilder& operator=(const ValueBuilder&) = delete;
  ~ValueBuilder();

  // Documents: the field `key`.
  void Append(std::string_view key, const Value& v);
  // Arrays: the next element (keys "0", "1", ...).
  void Append(const Value& v);
  // Arrays: appends every element of `array`.
  void AppendElementsOf(const Value& array);

  uint32_t count() const { return count_; }
  // True once the value has grown past kMaxValueBytes (Finish() will fail):
  // loops that build may stop early.
  bool full() const { return failed_; }
  // The document being built, to append to with libbson directly.
  // REQUIRES: kDocument.
  bson_t* bson();

  // The finished value.  Errors: Overflow when it nests deeper than
  // kMaxValueDepth; BSONObjectTooLarge when it is larger than
  // kMaxValueBytes.  The builder must not be used afterwards.
  StatusOr<Value> Finish();

 private:
  struct Buffer;
  std::shared_ptr<Buffer> buf_;
  Kind kind_;
  uint32_t count_ = 0;
  int max_child_depth_ = 0;
  bool failed_ = false;  // bson_append_* refused (the 2 GiB libbson limit)
};

}  // namespace expression
}  // namespace gatedb

#endif  // GATEDB_ENGINE_EXPRESSION_VALUE_H_
