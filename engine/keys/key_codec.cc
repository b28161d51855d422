#include "engine/keys/key_codec.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/keys/key_format.h"
#include "engine/util/coding.h"

namespace gatedb {
namespace keys {

// The number layout stores a 64-bit mantissa: every int32, int64 and double
// is exact in the x87 80-bit long double EncodeFloating goes through.
static_assert(LDBL_MANT_DIG == 64, "key format requires the 80-bit x87 long double");
static_assert(LDBL_MAX_EXP == 16384, "key format requires the 80-bit x87 long double");

namespace {

// bson_iter_t's alignment attribute is dropped when the typedef is a
// template argument, so std::vector<bson_iter_t> would under-align it; a
// struct keeps the member's alignment and gets aligned storage.
struct AlignedIter {
  bson_iter_t it;
};


KeyType TypeByte(bson_type_t type) {
  switch (type) {
    case BSON_TYPE_MINKEY: return kTypeMinKey;
    case BSON_TYPE_UNDEFINED: return kTypeUndefined;
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL: return kTypeNull;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: return kTypeNumber;
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: return kTypeString;
    case BSON_TYPE_DOCUMENT: return kTypeObject;
    case BSON_TYPE_ARRAY: return kTypeArray;
    case BSON_TYPE_BINARY: return kTypeBinary;
    case BSON_TYPE_OID: return kTypeObjectId;
    case BSON_TYPE_BOOL: return kTypeBool;
    case BSON_TYPE_DATE_TIME: return kTypeDate;
    case BSON_TYPE_TIMESTAMP: return kTypeTimestamp;
    case BSON_TYPE_REGEX: return kTypeRegex;
    case BSON_TYPE_DBPOINTER: return kTypeDBPointer;
    case BSON_TYPE_CODE: return kTypeCode;
    case BSON_TYPE_CODEWSCOPE: return kTypeCodeWithScope;
    case BSON_TYPE_MAXKEY: return kTypeMaxKey;
  }
  return kTypeNull;  // unknown types rank with null, as in CanonicalTypeRank
}

void PutByte(std::string* out, uint8_t b) { out->push_back(static_cast<char>(b)); }

// Escaped bytes: 0x00 -> 0x00 0xFF, then the 0x00 0x01 terminator.
void PutEscaped(const char* data, size_t len, std::string* out) {
  const char* end = data + len;
  while (data < end) {
    const void* zero = std::memchr(data, 0, static_cast<size_t>(end - data));
    const char* stop = zero ? static_cast<const char*>(zero) : end;
    out->append(data, static_cast<size_t>(stop - data));
    if (stop == end) break;
    PutByte(out, kEscape);
    PutByte(out, kEscapedZero);
    data = stop + 1;
  }
  PutByte(out, kEscape);
  PutByte(out, kStringTerminator);
}

// A C string (no embedded 0x00) and its terminator.
void PutCString(const char* s, std::string* out) {
  if (s != nullptr) out->append(s);
  PutByte(out, 0x00);
}

void PutFinite(bool negative, int exponent, uint64_t mantissa, std::string* out) {
  uint16_t e = static_cast<uint16_t>(exponent + kExponentBias);
  if (negative) {
    e = static_cast<uint16_t>(~e);
    mantissa = ~mantissa;
  }
  PutByte(out, negative ? kNumNegative : kNumPositive);
  PutFixed16BE(out, e);
  PutFixed64BE(out, mantissa);
}

void EncodeInteger(int64_t x, std::string* out) {
  if (x == 0) {
    PutByte(out, kNumZero);
    return;
  }
  bool negative = x < 0;
  uint64_t u = negative ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  int bits = 64 - __builtin_clzll(u);  // u in [2^(bits-1), 2^bits)
  // |x| = (u << (64 - bits)) * 2^(bits - 64): the frexp exponent is `bits`.
  PutFinite(negative, bits, u << (64 - bits), out);
}

void EncodeFloating(long double x, std::string* out) {
  if (std::isnan(x)) {
    PutByte(out, kNumNaN);
  } else if (std::isinf(x)) {
    PutByte(out, x < 0 ? kNumNegInf : kNumPosInf);
  } else if (x == 0) {
    PutByte(out, kNumZero);  // -0 and +0 alike
  } else {
    int exponent = 0;
    long double m = std::frexp(std::fabs(x), &exponent);  // m in [0.5, 1)
    // Exact: the mantissa has 64 significant bits.
    uint64_t mantissa = static_cast<uint64_t>(std::ldexp(m, 64));
    PutFinite(x < 0, exponent, mantissa, out);
  }
}

// A 64-bit binary value: exponent and normalized mantissa (key_format.h).
struct Binary64 {
  int exponent;
  uint64_t mantissa;
};

// The next 64-bit value above b (the mantissa may carry into the exponent).
Binary64 NextUp(Binary64 b) {
  if (b.mantissa == ~uint64_t{0}) return Binary64{b.exponent + 1, uint64_t{1} << 63};
  return Binary64{b.exponent, b.mantissa + 1};
}

// P(|x|): the decimal magnitude, order-preserving and self-delimiting:
// adjusted exponent + kDecimalExponentBias (2 bytes BE), each digit of the
// coefficient without trailing zeros as digit + 1, then kDecimalEnd.
// `invert` writes ~P(|x|) instead.
void PutDecimalMagnitude(const decimal::Parts& p, bool invert, std::string* out) {
  char digits[decimal::kPrecision];
  int n = decimal::CoefficientDigits(p.coefficient, digits);
  const int adjusted = p.exponent + n - 1;
  while (n > 1 && digits[n - 1] == '0') --n;  // 5.000 and 5 alike
  const uint8_t mask = invert ? 0xFF : 0x00;
  uint16_t e = static_cast<uint16_t>(adjusted + kDecimalExponentBias);
  PutByte(out, static_cast<uint8_t>((e >> 8) ^ mask));
  PutByte(out, static_cast<uint8_t>((e & 0xFF) ^ mask));
  for (int i = 0; i < n; ++i) PutByte(out, static_cast<uint8_t>((digits[i] - '0' + 1) ^ mask));
  PutByte(out, static_cast<uint8_t>(kDecimalEnd ^ mask));
}

// A decimal128, ascending (key_format.h): NaN, infinities and zeros by class;
// a value some 64-bit binary value equals exactly as that value (as an int
// or a double of that value); any other x between 64-bit neighbours
// L < x < H as L's encoding, kDecimalSuffix, then S(x) (P(|x|) for x > 0,
// ~P(|x|) for x < 0).  `descending` (a top-level descending index
// component): ~(H's encoding), kDecimalSuffix, ~S(x) instead, so that the
// component sorts after every key of H in the inverted order too.
void EncodeDecimalBody(const bson_decimal128_t& d, bool descending, std::string* out) {
  const size_t start = out->size();
  const decimal::Parts p = decimal::Decode(d);
  if (p.kind == decimal::Kind::kQuietNaN || p.kind == decimal::Kind::kSignalingNaN) {
    PutByte(out, kNumNaN);
  } else if (p.kind == decimal::Kind::kInfinity) {
    PutByte(out, p.negative ? kNumNegInf : kNumPosInf);
  } else if (p.coefficient == 0) {
    PutByte(out, kNumZero);
  } else {
    const decimal::BinaryBracket b = decimal::BracketMagnitude(p.coefficient, p.exponent);
    const Binary64 t{b.exponent, b.mantissa};
    if (b.exact) {
      PutFinite(p.negative, t.exponent, t.mantissa, out);
    } else {
      // |x| in (t, u): x > 0 lies in (t, u), x < 0 in (-u, -t).
      const Binary64 u = NextUp(t);
      const bool lower_is_t = p.negative == descending;  // L = t (x > 0) or -t (x < 0, H)
      const Binary64 bound = lower_is_t ? t : u;
      PutFinite(p.negative, bound.exponent, bound.mantissa, out);
      PutByte(out, descending ? static_cast<uint8_t>(~kDecimalSuffix) : kDecimalSuffix);  // kDecimalSuffix once inverted
      PutDecimalMagnitude(p, p.negative, out);
    }
  }
  if (descending) {
    for (size_t i = start; i < out->size(); ++i) (*out)[i] = static_cast<char>(~static_cast<uint8_t>((*out)[i]));
  }
}

// `format1`: key format version 1's decimal (its nearest long double), for
// tests that build a store of that version.
void EncodeNumber(const bson_value_t& v, bool format1, std::string* out) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: EncodeInteger(v.value.v_int32, out); return;
    case BSON_TYPE_INT64: EncodeInteger(v.value.v_int64, out); return;
    case BSON_TYPE_DOUBLE: EncodeFloating(v.value.v_double, out); return;
    default:
      if (format1) {
        EncodeFloating(NumberAsLongDouble(v), out);
      } else {
        EncodeDecimalBody(v.value.v_decimal128, false, out);
      }
      return;
  }
}

// True for a decimal that no 64-bit binary value equals (finite, non-zero,
// BracketMagnitude not exact).
bool IsInexactDecimal(const bson_decimal128_t& d) {
  const decimal::Parts p = decimal::Decode(d);
  if (p.kind != decimal::Kind::kFinite || p.coefficient == 0) return false;
  return !decimal::BracketMagnitude(p.coefficient, p.exponent).exact;
}

bool DocumentHasInexactDecimal(const uint8_t* data, uint32_t len);

bool ValueHasInexactDecimal(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_DECIMAL128: return IsInexactDecimal(v.value.v_decimal128);
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: return DocumentHasInexactDecimal(v.value.v_doc.data, v.value.v_doc.data_len);
    case BSON_TYPE_CODEWSCOPE:
      return DocumentHasInexactDecimal(v.value.v_codewscope.scope_data, v.value.v_codewscope.scope_len);
    default: return false;
  }
}

// Walks nested documents and arrays with an explicit stack.
bool DocumentHasInexactDecimal(const uint8_t* data, uint32_t len) {
  std::vector<AlignedIter> stack(1);
  if (data == nullptr || !bson_iter_init_from_data(&stack.back().it, data, len)) return false;
  while (!stack.empty()) {
    bson_iter_t* it = &stack.back().it;
    if (!bson_iter_next(it)) {
      stack.pop_back();
      continue;
    }
    bson_type_t type = bson_iter_type(it);
    if (type == BSON_TYPE_DOCUMENT || type == BSON_TYPE_ARRAY) {
      bson_iter_t child;
      if (bson_iter_recurse(it, &child)) stack.push_back(AlignedIter{child});
    } else if (ValueHasInexactDecimal(*bson_iter_value(it))) {
      return true;
    }
  }
  return false;
}

void EncodeBody(const bson_value_t& v, bool format1, std::string* out);

// Body of a document or array: elements, then kEndOfDocument.  Walks nested
// documents and arrays with an explicit stack.
void EncodeDocumentBody(const uint8_t* data, uint32_t len, bool format1, std::string* out) {
  std::vector<AlignedIter> stack(1);
  if (data == nullptr || !bson_iter_init_from_data(&stack.back().it, data, len)) {
    PutByte(out, kEndOfDocument);
    return;
  }
  while (!stack.empty()) {
    bson_iter_t* it = &stack.back().it;
    if (!bson_iter_next(it)) {
      PutByte(out, kEndOfDocument);
      stack.pop_back();
      continue;
    }
    bson_type_t type = bson_iter_type(it);
    PutByte(out, TypeByte(type));
    PutCString(bson_iter_key(it), out);
    if (type == BSON_TYPE_DOCUMENT || type == BSON_TYPE_ARRAY) {
      bson_iter_t child;
      if (bson_iter_recurse(it, &child)) {
        stack.push_back(AlignedIter{child});  // invalidates `it`
      } else {
        PutByte(out, kEndOfDocument);
      }
    } else {
      EncodeBody(*bson_iter_value(it), format1, out);
    }
  }
}

void EncodeBody(const bson_value_t& v, bool format1, std::string* out) {
  switch (v.value_type) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY:
      return;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128:
      EncodeNumber(v, format1, out);
      return;
    case BSON_TYPE_UTF8:
      PutEscaped(v.value.v_utf8.str, v.value.v_utf8.len, out);
      return;
    case BSON_TYPE_SYMBOL:
      PutEscaped(v.value.v_symbol.symbol, v.value.v_symbol.len, out);
      return;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
      EncodeDocumentBody(v.value.v_doc.data, v.value.v_doc.data_len, format1, out);
      return;
    case BSON_TYPE_BINARY:
      PutFixed32BE(out, v.value.v_binary.data_len);
      PutByte(out, static_cast<uint8_t>(v.value.v_binary.subtype));
      if (v.value.v_binary.data_len > 0) {
        out->append(reinterpret_cast<const char*>(v.value.v_binary.data), v.value.v_binary.data_len);
      }
      return;
    case BSON_TYPE_OID:
      out->append(reinterpret_cast<const char*>(v.value.v_oid.bytes), 12);
      return;
    case BSON_TYPE_BOOL:
      PutByte(out, v.value.v_bool ? 1 : 0);
      return;
    case BSON_TYPE_DATE_TIME:
      PutFixed64BE(out, static_cast<uint64_t>(v.value.v_datetime) ^ (uint64_t{1} << 63));
      return;
    case BSON_TYPE_TIMESTAMP:
      PutFixed32BE(out, v.value.v_timestamp.timestamp);
      PutFixed32BE(out, v.value.v_timestamp.increment);
      return;
    case BSON_TYPE_REGEX:
      PutCString(v.value.v_regex.regex, out);
      PutCString(v.value.v_regex.options, out);
      return;
    case BSON_TYPE_DBPOINTER:
      PutEscaped(v.value.v_dbpointer.collection, v.value.v_dbpointer.collection_len, out);
      out->append(reinterpret_cast<const char*>(v.value.v_dbpointer.oid.bytes), 12);
      return;
    case BSON_TYPE_CODE:
      PutEscaped(v.value.v_code.code, v.value.v_code.code_len, out);
      return;
    case BSON_TYPE_CODEWSCOPE:
      PutEscaped(v.value.v_codewscope.code, v.value.v_codewscope.code_len, out);
      EncodeDocumentBody(v.value.v_codewscope.scope_data, v.value.v_codewscope.scope_len, format1, out);
      return;
  }
}

}  // namespace

void EncodeValue(const bson_value_t& v, std::string* out) {
  PutByte(out, TypeByte(v.value_type));
  EncodeBody(v, false, out);
}

void TEST_EncodeValueFormat1(const bson_value_t& v, std::string* out) {
  PutByte(out, TypeByte(v.value_type));
  EncodeBody(v, true, out);
}

void EncodeValueDescending(const bson_value_t& v, std::string* out) {
  const size_t start = out->size();
  if (v.value_type == BSON_TYPE_DECIMAL128) {
    PutByte(out, static_cast<uint8_t>(~kTypeNumber));
    EncodeDecimalBody(v.value.v_decimal128, true, out);
    return;
  }
  EncodeValue(v, out);
  for (size_t i = start; i < out->size(); ++i) (*out)[i] = static_cast<char>(~static_cast<uint8_t>((*out)[i]));
}

bool HasInexactDecimal(const bson_value_t& v) { return ValueHasInexactDecimal(v); }

bool HasInexactDecimal(const bson_t* doc) { return DocumentHasInexactDecimal(bson_get_data(doc), doc->len); }

std::string CollectionPrefix(uint32_t collection_id) {
  std::string prefix;
  PutFixed32BE(&prefix, collection_id);
  return prefix;
}

std::string CollectionUpperBound(uint32_t collection_id) {
  std::string bound = CollectionPrefix(collection_id);
  PutByte(&bound, kAfterAllTypes);
  return bound;
}

std::string EncodeDocKey(uint32_t collection_id, const bson_value_t& id) {
  std::string key;
  key.reserve(kCollectionIdSize + 16);
  PutFixed32BE(&key, collection_id);
  EncodeValue(id, &key);
  return key;
}

uint32_t DecodeCollectionId(std::string_view key) { return DecodeFixed32BE(key.data()); }

}  // namespace keys
}  // namespace gatedb
