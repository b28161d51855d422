// File: gatedb/value.h
//
// Value owns one BSON value (a copy of a libbson bson_value_t): an _id, a
// distinct() result.  Thread safety: const methods may be called
// concurrently.
#ifndef GATEDB_VALUE_H_
#define GATEDB_VALUE_H_

#include <bson/bson.h>

#include <string>

namespace gatedb {

class Value {
 public:
  // The null value.
  Value();
  // A deep copy of `v` (which may point into a document).
  explicit Value(const bson_value_t& v);
  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&& other) noexcept;
  Value& operator=(Value&& other) noexcept;
  ~Value();

  const bson_value_t& get() const { return value_; }
  bson_type_t type() const { return value_.value_type; }
  // Relaxed Extended JSON of the value alone, e.g. "order_1" -> "\"order_1\"".
  std::string ToJson() const;
  // Appends the value to `doc` under `key`.
  void AppendTo(bson_t* doc, const char* key) const;

 private:
  bson_value_t value_;
};

}  // namespace gatedb

#endif  // GATEDB_VALUE_H_
