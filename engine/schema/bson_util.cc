#include "engine/schema/bson_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <utility>

#include "engine/document/bson_compare.h"

namespace gatedb {
namespace schema {

namespace {

// Below this many levels, CanonicalValue sorts fields; deeper documents keep
// their order, so that a hostile value cannot exhaust the stack.
constexpr int kMaxCanonicalDepth = 200;

int KeyLen(std::string_view key) { return static_cast<int>(key.size()); }

bool IsDocOrArray(const bson_value_t& v) {
  return v.value_type == BSON_TYPE_DOCUMENT || v.value_type == BSON_TYPE_ARRAY;
}

bool IsPositional(std::string_view part) {
  if (part.empty()) return false;
  for (char c : part) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void AppendCanonical(bson_t* out, std::string_view key, const bson_value_t& v, int depth) {
  if (!IsDocOrArray(v) || depth >= kMaxCanonicalDepth) {
    bson_append_value(out, key.data(), KeyLen(key), &v);
    return;
  }
  const bool is_doc = v.value_type == BSON_TYPE_DOCUMENT;
  std::vector<std::pair<std::string_view, BsonValue>> fields;
  ElemIter it(v);
  while (it.Next()) fields.emplace_back(it.key(), it.value());
  if (is_doc) {
    std::stable_sort(fields.begin(), fields.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  bson_t child;
  if (is_doc) {
    bson_append_document_begin(out, key.data(), KeyLen(key), &child);
  } else {
    bson_append_array_begin(out, key.data(), KeyLen(key), &child);
  }
  for (const auto& [k, value] : fields) AppendCanonical(&child, k, value, depth + 1);
  if (is_doc) {
    bson_append_document_end(out, &child);
  } else {
    bson_append_array_end(out, &child);
  }
}

class PathWalker {
 public:
  PathWalker(const std::vector<std::string>& parts, bool expand, size_t max, PathValues* out)
      : parts_(parts), expand_(expand), max_(max), out_(out) {}

  void WalkDocument(const bson_value_t& doc, size_t i) {
    bson_value_t v;
    if (FindField(doc, parts_[i], &v)) Walk(v, i + 1);
  }

 private:
  void Add(const bson_value_t& v) {
    if (out_->values.size() < max_) {
      out_->values.push_back(v);
    } else {
      out_->truncated = true;
    }
  }

  // `v` was reached by parts_[0, next).
  void Walk(const bson_value_t& v, size_t next) {
    if (out_->truncated) return;
    if (next == parts_.size()) {
      out_->exists = true;
      if (v.value_type == BSON_TYPE_ARRAY && expand_) {
        ElemIter it(v);
        while (it.Next() && !out_->truncated) Add(it.value());
      } else {
        Add(v);
      }
      return;
    }
    if (v.value_type == BSON_TYPE_DOCUMENT) {
      WalkDocument(v, next);
      return;
    }
    if (v.value_type != BSON_TYPE_ARRAY) return;
    if (IsPositional(parts_[next])) {
      bson_value_t elem;
      if (FindField(v, parts_[next], &elem)) Walk(elem, next + 1);
    }
    ElemIter it(v);
    while (it.Next() && !out_->truncated) {
      if (it.value().value_type == BSON_TYPE_DOCUMENT) WalkDocument(it.value(), next);
    }
  }

  const std::vector<std::string>& parts_;
  const bool expand_;
  const size_t max_;
  PathValues* const out_;
};

// Parses libbson's decimal128 string ("-1.23E+5", "0.001", "NaN", ...).
bool ParseDecimalString(const char* s, ExactDecimal* out) {
  *out = ExactDecimal();
  if (*s == '-') {
    out->negative = true;
    ++s;
  } else if (*s == '+') {
    ++s;
  }
  if (std::strncmp(s, "NaN", 3) == 0) {
    out->kind = ExactDecimal::Kind::kNaN;
    return true;
  }
  if (std::strncmp(s, "Inf", 3) == 0) {
    out->kind = ExactDecimal::Kind::kInfinity;
    return true;
  }
  int digits = 0;
  int32_t frac_digits = 0;
  bool in_frac = false;
  for (; *s != '\0' && *s != 'E' && *s != 'e'; ++s) {
    if (*s == '.') {
      in_frac = true;
      continue;
    }
    if (*s < '0' || *s > '9') return false;
    if (digits >= 36) return false;  // a decimal128 has at most 34
    out->coefficient = out->coefficient * 10 + static_cast<unsigned>(*s - '0');
    if (out->coefficient != 0) ++digits;
    if (in_frac) ++frac_digits;
  }
  int32_t exp = 0;
  if (*s == 'E' || *s == 'e') {
    ++s;
    bool neg_exp = false;
    if (*s == '-') {
      neg_exp = true;
      ++s;
    } else if (*s == '+') {
      ++s;
    }
    for (; *s >= '0' && *s <= '9'; ++s) {
      if (exp > 100000) return false;
      exp = exp * 10 + (*s - '0');
    }
    if (neg_exp) exp = -exp;
  }
  out->exponent = exp - frac_digits;
  return true;
}

std::string DoubleToString(double d) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

}  // namespace

bson_value_t DocumentValue(const bson_t* doc) {
  bson_value_t v;
  std::memset(&v, 0, sizeof(v));
  v.value_type = BSON_TYPE_DOCUMENT;
  v.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(doc));
  v.value.v_doc.data_len = doc->len;
  return v;
}

ElemIter::ElemIter(const bson_value_t& v)
    : ok_(IsDocOrArray(v) &&
          bson_iter_init_from_data(&it_, v.value.v_doc.data, v.value.v_doc.data_len)) {}

bool ElemIter::Next() { return ok_ && bson_iter_next(&it_); }

std::string_view ElemIter::key() const {
  return std::string_view(bson_iter_key(&it_), bson_iter_key_len(&it_));
}

uint32_t CountElements(const bson_value_t& v) {
  uint32_t n = 0;
  ElemIter it(v);
  while (it.Next()) ++n;
  return n;
}

bool FindField(const bson_value_t& doc, std::string_view name, bson_value_t* out) {
  ElemIter it(doc);
  while (it.Next()) {
    if (it.key() == name) {
      *out = it.value();
      return true;
    }
  }
  return false;
}

void AppendValue(bson_t* out, std::string_view key, const bson_value_t& value) {
  bson_append_value(out, key.data(), KeyLen(key), &value);
}

void AppendUtf8(bson_t* out, std::string_view key, std::string_view value) {
  bson_append_utf8(out, key.data(), KeyLen(key), value.data(), static_cast<int>(value.size()));
}

void AppendInt32(bson_t* out, std::string_view key, int32_t value) {
  bson_append_int32(out, key.data(), KeyLen(key), value);
}

void AppendBool(bson_t* out, std::string_view key, bool value) {
  bson_append_bool(out, key.data(), KeyLen(key), value);
}

void AppendDocument(bson_t* out, std::string_view key, const bson_t* doc) {
  bson_append_document(out, key.data(), KeyLen(key), doc);
}

void AppendDocumentArray(bson_t* out, std::string_view key, const std::vector<BsonPtr>& docs) {
  bson_t arr;
  bson_append_array_begin(out, key.data(), KeyLen(key), &arr);
  char buf[16];
  for (size_t i = 0; i < docs.size(); ++i) {
    const char* k = nullptr;
    size_t klen = bson_uint32_to_string(static_cast<uint32_t>(i), &k, buf, sizeof(buf));
    bson_append_document(&arr, k, static_cast<int>(klen), docs[i].get());
  }
  bson_append_array_end(out, &arr);
}

void AppendStringArray(bson_t* out, std::string_view key, const std::vector<std::string>& strings) {
  bson_t arr;
  bson_append_array_begin(out, key.data(), KeyLen(key), &arr);
  char buf[16];
  for (size_t i = 0; i < strings.size(); ++i) {
    const char* k = nullptr;
    size_t klen = bson_uint32_to_string(static_cast<uint32_t>(i), &k, buf, sizeof(buf));
    bson_append_utf8(&arr, k, static_cast<int>(klen), strings[i].data(),
                     static_cast<int>(strings[i].size()));
  }
  bson_append_array_end(out, &arr);
}

void AppendValueArray(bson_t* out, std::string_view key, const std::vector<BsonValue>& values) {
  bson_t arr;
  bson_append_array_begin(out, key.data(), KeyLen(key), &arr);
  char buf[16];
  for (size_t i = 0; i < values.size(); ++i) {
    const char* k = nullptr;
    size_t klen = bson_uint32_to_string(static_cast<uint32_t>(i), &k, buf, sizeof(buf));
    bson_append_value(&arr, k, static_cast<int>(klen), &values[i]);
  }
  bson_append_array_end(out, &arr);
}

void AppendAllFields(bson_t* out, const bson_t* doc) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return;
  while (bson_iter_next(&it)) {
    bson_append_value(out, bson_iter_key(&it), static_cast<int>(bson_iter_key_len(&it)),
                      bson_iter_value(&it));
  }
}

CanonicalValue::CanonicalValue(const bson_value_t& value) : holder_(NewBson()) {
  AppendCanonical(holder_.get(), "v", value, 0);
  bson_iter_t it;
  std::memset(&value_, 0, sizeof(value_));
  if (bson_iter_init(&it, holder_.get()) && bson_iter_next(&it)) value_ = *bson_iter_value(&it);
}

int64_t FirstDuplicateIndex(const std::vector<BsonValue>& values) {
  const size_t n = values.size();
  if (n < 2) return -1;
  std::vector<CanonicalValue> canon;
  std::vector<BsonValue> keys(values);
  canon.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (IsDocOrArray(values[i])) {
      canon.emplace_back(values[i]);
      keys[i] = canon.back().value();
    }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&keys](size_t a, size_t b) {
    return CompareValues(keys[a], keys[b]) < 0;
  });
  int64_t first = -1;
  for (size_t i = 1; i < n; ++i) {
    // order[i - 1] < order[i] within a run of equal values (stable sort).
    if (CompareValues(keys[order[i - 1]], keys[order[i]]) == 0) {
      const bool starts_run = i == 1 || CompareValues(keys[order[i - 2]], keys[order[i]]) != 0;
      if (starts_run && (first < 0 || static_cast<int64_t>(order[i]) < first)) {
        first = static_cast<int64_t>(order[i]);
      }
    }
  }
  return first;
}

void CollectPathValues(const bson_t* doc, const std::vector<std::string>& parts,
                       bool expand_leaf_arrays, size_t max_values, PathValues* out) {
  *out = PathValues();
  if (parts.empty()) return;
  PathWalker walker(parts, expand_leaf_arrays, max_values, out);
  walker.WalkDocument(DocumentValue(doc), 0);
}

int64_t CountCodePoints(const char* s, size_t len) {
  int64_t n = 0;
  for (size_t i = 0; i < len; ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
  }
  return n;
}

bool ToExactDecimal(const bson_value_t& v, ExactDecimal* out) {
  *out = ExactDecimal();
  switch (v.value_type) {
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64: {
      const int64_t i = v.value_type == BSON_TYPE_INT32 ? v.value.v_int32 : v.value.v_int64;
      out->negative = i < 0;
      // Negating in unsigned arithmetic is exact even for INT64_MIN.
      const uint64_t mag = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
      out->coefficient = mag;
      return true;
    }
    case BSON_TYPE_DOUBLE: {
      const double d = v.value.v_double;
      const bool negative = std::signbit(d);
      out->negative = negative;
      if (std::isnan(d)) {
        out->kind = ExactDecimal::Kind::kNaN;
        return true;
      }
      if (std::isinf(d)) {
        out->kind = ExactDecimal::Kind::kInfinity;
        return true;
      }
      if (d == 0) return true;
      // MongoDB's Decimal128(double) keeps 15 significant digits.
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.14e", std::fabs(d));
      if (!ParseDecimalString(buf, out)) return false;
      out->negative = negative;
      return true;
    }
    case BSON_TYPE_DECIMAL128: {
      char buf[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, buf);
      return ParseDecimalString(buf, out);
    }
    default:
      return false;
  }
}

bool IsMultipleOf(const ExactDecimal& value, const ExactDecimal& divisor) {
  using Kind = ExactDecimal::Kind;
  if (value.kind != Kind::kFinite || divisor.kind == Kind::kNaN) return false;
  if (divisor.kind == Kind::kInfinity) return value.coefficient == 0;  // fmod(x, inf) == x
  if (divisor.coefficient == 0) return false;                          // fmod(x, 0) is NaN
  if (value.coefficient == 0) return true;
  const unsigned __int128 cv = value.coefficient;
  const unsigned __int128 cd = divisor.coefficient;
  if (value.exponent >= divisor.exponent) {
    // (cv * 10^k) mod cd, by repeated multiplication; cd < 10^35 so r * 10
    // never overflows.
    unsigned __int128 r = cv % cd;
    for (int64_t k = int64_t{value.exponent} - divisor.exponent; k > 0 && r != 0; --k) {
      r = (r * 10) % cd;
    }
    return r == 0;
  }
  const int64_t k = int64_t{divisor.exponent} - value.exponent;
  if (k > 38) return false;  // the divisor is larger than any coefficient
  unsigned __int128 p = 1;
  for (int64_t i = 0; i < k; ++i) p *= 10;
  const unsigned __int128 max = ~static_cast<unsigned __int128>(0);
  if (cd > max / p) return false;
  return cv % (cd * p) == 0;
}

bool IsZeroOrNegative(const ExactDecimal& d) {
  if (d.kind == ExactDecimal::Kind::kNaN) return false;
  if (d.kind == ExactDecimal::Kind::kInfinity) return d.negative;
  return d.coefficient == 0 || d.negative;
}

std::string ValueToString(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_UTF8:
      return "\"" + std::string(v.value.v_utf8.str, v.value.v_utf8.len) + "\"";
    case BSON_TYPE_INT32:
      return std::to_string(v.value.v_int32);
    case BSON_TYPE_INT64:
      return std::to_string(v.value.v_int64);
    case BSON_TYPE_DOUBLE:
      return DoubleToString(v.value.v_double);
    case BSON_TYPE_BOOL:
      return v.value.v_bool ? "true" : "false";
    case BSON_TYPE_NULL:
      return "null";
    default:
      break;
  }
  BsonPtr holder = NewBson();
  bson_append_value(holder.get(), "v", 1, &v);
  size_t len = 0;
  char* json = bson_as_relaxed_extended_json(holder.get(), &len);
  if (json == nullptr) return "?";
  std::string s(json, len);
  bson_free(json);
  // "{ "v" : <value> }" -> "<value>"
  const std::string prefix = "{ \"v\" : ";
  if (s.size() > prefix.size() + 2 && s.compare(0, prefix.size(), prefix) == 0) {
    s = s.substr(prefix.size(), s.size() - prefix.size() - 2);
  }
  return s;
}

}  // namespace schema
}  // namespace gatedb
