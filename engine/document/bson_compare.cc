#include "engine/document/bson_compare.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/decimal/decimal128.h"

namespace gatedb {

int CanonicalTypeRank(bson_type_t type) {
  switch (type) {
    case BSON_TYPE_MINKEY: return -1;
    case BSON_TYPE_UNDEFINED: return 0;
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL: return 5;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: return 10;
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: return 15;
    case BSON_TYPE_DOCUMENT: return 20;
    case BSON_TYPE_ARRAY: return 25;
    case BSON_TYPE_BINARY: return 30;
    case BSON_TYPE_OID: return 35;
    case BSON_TYPE_BOOL: return 40;
    case BSON_TYPE_DATE_TIME: return 45;
    case BSON_TYPE_TIMESTAMP: return 47;
    case BSON_TYPE_REGEX: return 50;
    case BSON_TYPE_DBPOINTER: return 55;
    case BSON_TYPE_CODE: return 60;
    case BSON_TYPE_CODEWSCOPE: return 65;
    case BSON_TYPE_MAXKEY: return 127;
  }
  return 5;
}

const char* BsonTypeName(bson_type_t type) {
  switch (type) {
    case BSON_TYPE_EOD: return "missing";
    case BSON_TYPE_DOUBLE: return "double";
    case BSON_TYPE_UTF8: return "string";
    case BSON_TYPE_DOCUMENT: return "object";
    case BSON_TYPE_ARRAY: return "array";
    case BSON_TYPE_BINARY: return "binData";
    case BSON_TYPE_UNDEFINED: return "undefined";
    case BSON_TYPE_OID: return "objectId";
    case BSON_TYPE_BOOL: return "bool";
    case BSON_TYPE_DATE_TIME: return "date";
    case BSON_TYPE_NULL: return "null";
    case BSON_TYPE_REGEX: return "regex";
    case BSON_TYPE_DBPOINTER: return "dbPointer";
    case BSON_TYPE_CODE: return "javascript";
    case BSON_TYPE_SYMBOL: return "symbol";
    case BSON_TYPE_CODEWSCOPE: return "javascriptWithScope";
    case BSON_TYPE_INT32: return "int";
    case BSON_TYPE_TIMESTAMP: return "timestamp";
    case BSON_TYPE_INT64: return "long";
    case BSON_TYPE_DECIMAL128: return "decimal";
    case BSON_TYPE_MAXKEY: return "maxKey";
    case BSON_TYPE_MINKEY: return "minKey";
  }
  return "unknown";
}

bool IsNumberType(bson_type_t t) {
  return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE ||
         t == BSON_TYPE_DECIMAL128;
}

long double NumberAsLongDouble(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return v.value.v_int32;
    case BSON_TYPE_INT64: return static_cast<long double>(v.value.v_int64);
    case BSON_TYPE_DOUBLE: return v.value.v_double;
    case BSON_TYPE_DECIMAL128: {
      char buf[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, buf);
      if (std::strcmp(buf, "Infinity") == 0) return HUGE_VALL;
      if (std::strcmp(buf, "-Infinity") == 0) return -HUGE_VALL;
      if (std::strcmp(buf, "NaN") == 0) return NAN;
      return std::strtold(buf, nullptr);
    }
    default: return 0;
  }
}

namespace {

template <typename T>
int Cmp3(T a, T b) { return a < b ? -1 : (b < a ? 1 : 0); }

// d against any number n, exactly.
int CompareDecimalTo(const bson_decimal128_t& d, const bson_value_t& n) {
  switch (n.value_type) {
    case BSON_TYPE_DECIMAL128: return decimal::Compare(d, n.value.v_decimal128);
    case BSON_TYPE_DOUBLE: return decimal::CompareToDouble(d, n.value.v_double);
    case BSON_TYPE_INT64: return decimal::CompareToInt64(d, n.value.v_int64);
    default: return decimal::CompareToInt64(d, n.value.v_int32);
  }
}

// REQUIRES: a or b is a decimal128, both are numbers.
int CompareWithDecimal(const bson_value_t& a, const bson_value_t& b) {
  if (a.value_type == BSON_TYPE_DECIMAL128) return CompareDecimalTo(a.value.v_decimal128, b);
  return -CompareDecimalTo(b.value.v_decimal128, a);
}

int CompareNumbers(const bson_value_t& a, const bson_value_t& b) {
  // Fast exact paths for the common integer cases.
  if (a.value_type == BSON_TYPE_INT32 && b.value_type == BSON_TYPE_INT32)
    return Cmp3(a.value.v_int32, b.value.v_int32);
  if ((a.value_type == BSON_TYPE_INT32 || a.value_type == BSON_TYPE_INT64) &&
      (b.value_type == BSON_TYPE_INT32 || b.value_type == BSON_TYPE_INT64)) {
    int64_t x = a.value_type == BSON_TYPE_INT32 ? a.value.v_int32 : a.value.v_int64;
    int64_t y = b.value_type == BSON_TYPE_INT32 ? b.value.v_int32 : b.value.v_int64;
    return Cmp3(x, y);
  }
  // A decimal: exact, through engine/decimal (never through long double,
  // which cannot tell decimals apart in the 34th digit).
  if (__builtin_expect(a.value_type == BSON_TYPE_DECIMAL128 || b.value_type == BSON_TYPE_DECIMAL128, 0)) {
    return CompareWithDecimal(a, b);
  }
  // int32, int64 and double are all exact as 80-bit long doubles.
  long double x = NumberAsLongDouble(a);
  long double y = NumberAsLongDouble(b);
  bool xn = std::isnan(x), yn = std::isnan(y);
  if (xn || yn) return xn && yn ? 0 : (xn ? -1 : 1);
  return Cmp3(x, y);
}

int CompareBytes(const void* a, size_t alen, const void* b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? std::memcmp(a, b, n) : 0;
  if (c != 0) return c < 0 ? -1 : 1;
  return Cmp3(alen, blen);
}

int CompareDocBytes(const uint8_t* a, uint32_t alen, const uint8_t* b, uint32_t blen) {
  bson_t da, db;
  if (!bson_init_static(&da, a, alen) || !bson_init_static(&db, b, blen)) {
    return CompareBytes(a, alen, b, blen);
  }
  return CompareDocuments(&da, &db);
}

}  // namespace

int CompareValues(const bson_value_t& a, const bson_value_t& b) {
  int ra = CanonicalTypeRank(a.value_type), rb = CanonicalTypeRank(b.value_type);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case -1: case 0: case 5: case 127: return 0;
    case 10: return CompareNumbers(a, b);
    case 15: {
      const char* sa = a.value_type == BSON_TYPE_UTF8 ? a.value.v_utf8.str : a.value.v_symbol.symbol;
      uint32_t la = a.value_type == BSON_TYPE_UTF8 ? a.value.v_utf8.len : a.value.v_symbol.len;
      const char* sb = b.value_type == BSON_TYPE_UTF8 ? b.value.v_utf8.str : b.value.v_symbol.symbol;
      uint32_t lb = b.value_type == BSON_TYPE_UTF8 ? b.value.v_utf8.len : b.value.v_symbol.len;
      return CompareBytes(sa, la, sb, lb);
    }
    case 20: case 25:
      return CompareDocBytes(a.value.v_doc.data, a.value.v_doc.data_len, b.value.v_doc.data,
                             b.value.v_doc.data_len);
    case 30: {
      // MongoDB: length first, then subtype, then bytes.
      if (a.value.v_binary.data_len != b.value.v_binary.data_len)
        return Cmp3(a.value.v_binary.data_len, b.value.v_binary.data_len);
      if (a.value.v_binary.subtype != b.value.v_binary.subtype)
        return Cmp3(static_cast<int>(a.value.v_binary.subtype), static_cast<int>(b.value.v_binary.subtype));
      return CompareBytes(a.value.v_binary.data, a.value.v_binary.data_len, b.value.v_binary.data,
                          b.value.v_binary.data_len);
    }
    case 35: return CompareBytes(a.value.v_oid.bytes, 12, b.value.v_oid.bytes, 12);
    case 40: return Cmp3(a.value.v_bool, b.value.v_bool);
    case 45: return Cmp3(a.value.v_datetime, b.value.v_datetime);
    case 47: {
      uint64_t x = (uint64_t(a.value.v_timestamp.timestamp) << 32) | a.value.v_timestamp.increment;
      uint64_t y = (uint64_t(b.value.v_timestamp.timestamp) << 32) | b.value.v_timestamp.increment;
      return Cmp3(x, y);
    }
    case 50: {
      int c = std::strcmp(a.value.v_regex.regex, b.value.v_regex.regex);
      if (c != 0) return c < 0 ? -1 : 1;
      c = std::strcmp(a.value.v_regex.options ? a.value.v_regex.options : "",
                      b.value.v_regex.options ? b.value.v_regex.options : "");
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case 55: {
      int c = CompareBytes(a.value.v_dbpointer.collection, a.value.v_dbpointer.collection_len,
                           b.value.v_dbpointer.collection, b.value.v_dbpointer.collection_len);
      if (c != 0) return c;
      return CompareBytes(a.value.v_dbpointer.oid.bytes, 12, b.value.v_dbpointer.oid.bytes, 12);
    }
    case 60:
      return CompareBytes(a.value.v_code.code, a.value.v_code.code_len, b.value.v_code.code,
                          b.value.v_code.code_len);
    case 65: {
      int c = CompareBytes(a.value.v_codewscope.code, a.value.v_codewscope.code_len,
                           b.value.v_codewscope.code, b.value.v_codewscope.code_len);
      if (c != 0) return c;
      return CompareDocBytes(a.value.v_codewscope.scope_data, a.value.v_codewscope.scope_len,
                             b.value.v_codewscope.scope_data, b.value.v_codewscope.scope_len);
    }
  }
  return 0;
}

int CompareDocuments(const bson_t* a, const bson_t* b) {
  bson_iter_t ia, ib;
  if (!bson_iter_init(&ia, a) || !bson_iter_init(&ib, b)) return 0;
  while (true) {
    bool ha = bson_iter_next(&ia), hb = bson_iter_next(&ib);
    if (!ha || !hb) return ha == hb ? 0 : (ha ? 1 : -1);
    int ra = CanonicalTypeRank(bson_iter_type(&ia)), rb = CanonicalTypeRank(bson_iter_type(&ib));
    if (ra != rb) return ra < rb ? -1 : 1;
    int c = std::strcmp(bson_iter_key(&ia), bson_iter_key(&ib));
    if (c != 0) return c < 0 ? -1 : 1;
    c = CompareIters(&ia, &ib);
    if (c != 0) return c;
  }
}

int CompareIters(const bson_iter_t* a, const bson_iter_t* b) {
  return CompareValues(*bson_iter_value(const_cast<bson_iter_t*>(a)),
                       *bson_iter_value(const_cast<bson_iter_t*>(b)));
}

}  // namespace gatedb
