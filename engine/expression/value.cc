#include "engine/expression/value.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"

namespace gatedb {
namespace expression {

namespace {

// A deep copy of a bson_value_t, freed with it.
struct OwnedValue {
  bson_value_t v;
  ~OwnedValue() { bson_value_destroy(&v); }
};

bool HoldsPointers(bson_type_t t) {
  switch (t) {
    case BSON_TYPE_UTF8:
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
    case BSON_TYPE_BINARY:
    case BSON_TYPE_REGEX:
    case BSON_TYPE_DBPOINTER:
    case BSON_TYPE_CODE:
    case BSON_TYPE_CODEWSCOPE:
    case BSON_TYPE_SYMBOL:
      return true;
    default:
      return false;
  }
}

size_t PayloadBytes(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_UTF8: return v.value.v_utf8.len + 1;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: return v.value.v_doc.data_len;
    case BSON_TYPE_BINARY: return v.value.v_binary.data_len;
    case BSON_TYPE_REGEX:
      return std::strlen(v.value.v_regex.regex) + 2 +
             (v.value.v_regex.options ? std::strlen(v.value.v_regex.options) : 0);
    case BSON_TYPE_DBPOINTER: return v.value.v_dbpointer.collection_len + 1;
    case BSON_TYPE_CODE: return v.value.v_code.code_len + 1;
    case BSON_TYPE_CODEWSCOPE:
      return v.value.v_codewscope.code_len + 1 + v.value.v_codewscope.scope_len;
    case BSON_TYPE_SYMBOL: return v.value.v_symbol.len + 1;
    default: return 0;
  }
}

}  // namespace

Value Value::Null() {
  Value r;
  r.v_.value_type = BSON_TYPE_NULL;
  return r;
}

Value Value::Undefined() {
  Value r;
  r.v_.value_type = BSON_TYPE_UNDEFINED;
  return r;
}

Value Value::Bool(bool b) {
  Value r;
  r.v_.value_type = BSON_TYPE_BOOL;
  r.v_.value.v_bool = b;
  return r;
}

Value Value::Int32(int32_t i) {
  Value r;
  r.v_.value_type = BSON_TYPE_INT32;
  r.v_.value.v_int32 = i;
  return r;
}

Value Value::Int64(int64_t i) {
  Value r;
  r.v_.value_type = BSON_TYPE_INT64;
  r.v_.value.v_int64 = i;
  return r;
}

Value Value::Double(double d) {
  Value r;
  r.v_.value_type = BSON_TYPE_DOUBLE;
  r.v_.value.v_double = d;
  return r;
}

Value Value::Decimal(const bson_decimal128_t& d) {
  Value r;
  r.v_.value_type = BSON_TYPE_DECIMAL128;
  r.v_.value.v_decimal128 = d;
  return r;
}

Value Value::Date(int64_t unix_ms) {
  Value r;
  r.v_.value_type = BSON_TYPE_DATE_TIME;
  r.v_.value.v_datetime = unix_ms;
  return r;
}

Value Value::Oid(const bson_oid_t& oid) {
  Value r;
  r.v_.value_type = BSON_TYPE_OID;
  r.v_.value.v_oid = oid;
  return r;
}

Value Value::Timestamp(uint32_t seconds, uint32_t increment) {
  Value r;
  r.v_.value_type = BSON_TYPE_TIMESTAMP;
  r.v_.value.v_timestamp.timestamp = seconds;
  r.v_.value.v_timestamp.increment = increment;
  return r;
}

Value Value::MinKey() {
  Value r;
  r.v_.value_type = BSON_TYPE_MINKEY;
  return r;
}

Value Value::MaxKey() {
  Value r;
  r.v_.value_type = BSON_TYPE_MAXKEY;
  return r;
}

Value Value::String(std::string_view s) { return String(std::string(s)); }

Value Value::String(std::string&& s) {
  auto owned = std::make_shared<std::string>(std::move(s));
  Value r;
  r.v_.value_type = BSON_TYPE_UTF8;
  r.v_.value.v_utf8.str = owned->data();
  r.v_.value.v_utf8.len = static_cast<uint32_t>(owned->size());
  r.keep_ = std::move(owned);
  return r;
}

Value Value::Borrow(const bson_value_t& v) {
  Value r;
  r.v_ = v;
  return r;
}

Value Value::Within(const bson_value_t& v, const Value& owner) {
  Value r;
  r.v_ = v;
  // A scalar needs nothing kept alive (and copying it then costs no
  // reference count).
  if (HoldsPointers(v.value_type)) r.keep_ = owner.keep_;
  if (owner.depth_ > 1 && (v.value_type == BSON_TYPE_DOCUMENT || v.value_type == BSON_TYPE_ARRAY)) {
    r.depth_ = owner.depth_ - 1;
  }
  return r;
}

Value Value::Copy(const bson_value_t& v) {
  if (v.value_type == BSON_TYPE_EOD) return Value();
  if (!HoldsPointers(v.value_type)) return Borrow(v);
  auto owned = std::make_shared<OwnedValue>();
  bson_value_copy(&v, &owned->v);
  Value r;
  r.v_ = owned->v;
  r.keep_ = std::move(owned);
  return r;
}

bool Value::self_contained() const { return keep_ != nullptr || !HoldsPointers(v_.value_type); }

Value Value::Detached() const {
  if (self_contained()) return *this;
  Value r = Copy(v_);
  r.depth_ = depth_;
  return r;
}

size_t Value::ApproximateSize() const { return sizeof(Value) + PayloadBytes(v_); }

void Value::AppendTo(bson_t* out, std::string_view key) const {
  if (missing()) return;
  bson_append_value(out, key.data(), static_cast<int>(key.size()), &v_);
}

std::string Value::ToString() const {
  if (missing()) return "missing";
  bson_t tmp = BSON_INITIALIZER;
  AppendTo(&tmp, "v");
  size_t len = 0;
  char* json = bson_as_relaxed_extended_json(&tmp, &len);
  bson_destroy(&tmp);
  if (json == nullptr) return "?";
  std::string s(json, len);
  bson_free(json);
  // { "v" : X } -> X
  const size_t colon = s.find(':');
  const size_t end = s.rfind('}');
  if (colon == std::string::npos || end == std::string::npos || end <= colon) return s;
  std::string inner = s.substr(colon + 1, end - colon - 1);
  const size_t b = inner.find_first_not_of(' ');
  const size_t e = inner.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : inner.substr(b, e - b + 1);
}

bool Truthy(const Value& v) {
  const bson_value_t& b = v.bson();
  switch (b.value_type) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED: return false;
    case BSON_TYPE_BOOL: return b.value.v_bool;
    case BSON_TYPE_INT32: return b.value.v_int32 != 0;
    case BSON_TYPE_INT64: return b.value.v_int64 != 0;
    case BSON_TYPE_DOUBLE: return b.value.v_double != 0;  // NaN is true
    case BSON_TYPE_DECIMAL128: return !decimal::IsZero(b.value.v_decimal128);  // NaN is true
    default: return true;
  }
}

int CompareForExpression(const Value& a, const Value& b) {
  if (a.missing() || b.missing()) {
    // Missing ranks with undefined, below null.
    const int ra = a.missing() ? CanonicalTypeRank(BSON_TYPE_UNDEFINED) : CanonicalTypeRank(a.type());
    const int rb = b.missing() ? CanonicalTypeRank(BSON_TYPE_UNDEFINED) : CanonicalTypeRank(b.type());
    return ra < rb ? -1 : (ra > rb ? 1 : 0);
  }
  return CompareValues(a.bson(), b.bson());
}

const char* TypeName(const Value& v) { return BsonTypeName(v.type()); }

void Elements(const Value& container, std::vector<Value>* out) {
  ForEachField(container, [out](std::string_view, Value v) {
    out->push_back(std::move(v));
    return true;
  });
}

uint32_t CountElements(const Value& container) {
  bson_iter_t it;
  uint32_t n = 0;
  if (!bson_iter_init_from_data(&it, container.doc_data(), container.doc_len())) return 0;
  while (bson_iter_next(&it)) ++n;
  return n;
}

// ---------------------------------------------------------------------------
// ValueBuilder

struct ValueBuilder::Buffer {
  bson_t b;
  Buffer() { bson_init(&b); }
  ~Buffer() { bson_destroy(&b); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

ValueBuilder::ValueBuilder(Kind kind) : buf_(std::make_shared<Buffer>()), kind_(kind) {}

ValueBuilder::~ValueBuilder() = default;

bson_t* ValueBuilder::bson() { return &buf_->b; }

void ValueBuilder::Append(std::string_view key, const Value& v) {
  if (v.missing() || failed_) return;
  if (v.is_document() || v.is_array()) max_child_depth_ = std::max(max_child_depth_, std::max(v.depth(), 1));
  if (!bson_append_value(&buf_->b, key.data(), static_cast<int>(key.size()), &v.bson()) ||
      buf_->b.len > kMaxValueBytes) {
    failed_ = true;
    return;
  }
  ++count_;
}

void ValueBuilder::Append(const Value& v) {
  if (v.missing() || failed_) return;
  char buf[16];
  const char* key = nullptr;
  const size_t len = bson_uint32_to_string(count_, &key, buf, sizeof(buf));
  Append(std::string_view(key, len), v);
}

void ValueBuilder::AppendElementsOf(const Value& array) {
  ForEachField(array, [this](std::string_view, const Value& v) {
    Append(v);
    return !failed_;
  });
}

StatusOr<Value> ValueBuilder::Finish() {
  if (failed_ || buf_->b.len > kMaxValueBytes) {
    return Status(ErrorCode::kBSONObjectTooLarge,
                  "the value an expression built is larger than the maximum of " +
                      std::to_string(kMaxValueBytes) + " bytes");
  }
  const int depth = max_child_depth_ + 1;
  if (depth > kMaxValueDepth) {
    return Status(ErrorCode::kOverflow, "the value an expression built nests deeper than " +
                                            std::to_string(kMaxValueDepth) + " levels");
  }
  Value r;
  r.v_.value_type = kind_ == kArray ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
  r.v_.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(&buf_->b));
  r.v_.value.v_doc.data_len = buf_->b.len;
  r.depth_ = depth;
  r.keep_ = std::move(buf_);
  return r;
}

}  // namespace expression
}  // namespace gatedb
