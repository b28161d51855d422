#include "gatedb/value.h"

#include "gatedb/document.h"

namespace gatedb {

Value::Value() { value_.value_type = BSON_TYPE_NULL; }
Value::Value(const bson_value_t& v) { bson_value_copy(&v, &value_); }
Value::Value(const Value& other) { bson_value_copy(&other.value_, &value_); }
Value& Value::operator=(const Value& other) {
  if (this != &other) {
    bson_value_t copy;
    bson_value_copy(&other.value_, &copy);
    bson_value_destroy(&value_);
    value_ = copy;
  }
  return *this;
}
Value::Value(Value&& other) noexcept : value_(other.value_) { other.value_.value_type = BSON_TYPE_NULL; }
Value& Value::operator=(Value&& other) noexcept {
  if (this != &other) {
    bson_value_destroy(&value_);
    value_ = other.value_;
    other.value_.value_type = BSON_TYPE_NULL;
  }
  return *this;
}
Value::~Value() { bson_value_destroy(&value_); }

void Value::AppendTo(bson_t* doc, const char* key) const { bson_append_value(doc, key, -1, &value_); }

std::string Value::ToJson() const {
  bson_t tmp = BSON_INITIALIZER;
  AppendTo(&tmp, "v");
  std::string json = DocumentView(&tmp).ToJson();
  bson_destroy(&tmp);
  // {"v" : X } -> X
  size_t colon = json.find(':');
  size_t end = json.rfind('}');
  if (colon == std::string::npos || end == std::string::npos || end <= colon) return json;
  std::string inner = json.substr(colon + 1, end - colon - 1);
  size_t b = inner.find_first_not_of(' ');
  size_t e = inner.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : inner.substr(b, e - b + 1);
}

}  // namespace gatedb
