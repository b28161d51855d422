// libFuzzer target: the order of numbers (decimal128, double, int64, int32)
// by CompareValues and by the index key bytes, against an independent
// string-exact comparison: GMP rationals built from libbson's string of the
// decimal (not from engine/decimal's decoding) and from the double's exact
// value (mpq_set_d); a non-canonical decimal is zero (decided from its bits).
//
// Input: two numbers, each a tag byte then its bytes (missing bytes read as
// zero):
//   tag % 7 == 0  decimal, 16 raw BID bytes (any: NaN, infinities,
//                 non-canonical encodings)
//   tag % 7 == 1  decimal from a digit string: a sign/length byte (bit 7
//                 the sign, low 6 bits the number of digits, 1..40), that
//                 many digit bytes (% 10), a 2-byte exponent; rounded to 34
//                 digits as MongoDB's Decimal128(string)
//   tag % 7 == 2  double, 8 raw bytes
//   tag % 7 == 3  int64, 8 bytes
//   tag % 7 == 4  int32, 4 bytes
//   tag % 7 == 5  decimal next to a double: the double (8 bytes) to 34
//                 digits, then one byte says how many units of its last
//                 digit to add (-4..3)
//   tag % 7 == 6  decimal next to an int64 (8 bytes): it plus k * 1E-33
//                 (k from one byte, -4..3)
// Checks, for the pair (a, b) and the reference r = sign(a - b):
//   CompareValues(a, b) == r and CompareValues(b, a) == -r;
//   EncodeValue order == r, equal bytes iff r == 0, and the same with a
//   following component (the 0xFF rule), inside a document, and for
//   EncodeValueDescending (reversed, alone and with a follower);
//   a's key lies in [E(b), E(b) + 0xFF) iff r == 0 (the planner's points).
#include <gmp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/keys/key_codec.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\n%s\n", what, detail.c_str());
  std::abort();
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t Byte() { return p_ < end_ ? *p_++ : 0; }
  void Bytes(void* out, size_t n) {
    auto* o = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < n; ++i) o[i] = Byte();
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

bson_value_t Decimal(const bson_decimal128_t& d) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DECIMAL128;
  v.value.v_decimal128 = d;
  return v;
}

bson_value_t ReadNumber(Reader* r) {
  bson_value_t v;
  std::memset(&v, 0, sizeof v);
  const uint8_t tag = r->Byte() % 7;
  switch (tag) {
    case 0: {
      bson_decimal128_t d;
      r->Bytes(&d.low, 8);
      r->Bytes(&d.high, 8);
      return Decimal(d);
    }
    case 1: {
      const uint8_t head = r->Byte();
      const int n = 1 + (head & 0x3F) % 40;
      std::string s = (head & 0x80) ? "-" : "";
      for (int i = 0; i < n; ++i) s.push_back(static_cast<char>('0' + r->Byte() % 10));
      int16_t e;
      r->Bytes(&e, 2);
      s += "E" + std::to_string(static_cast<int>(e) % 6300);
      return Decimal(gatedb::decimal::FromString(s).value);
    }
    case 2:
      v.value_type = BSON_TYPE_DOUBLE;
      r->Bytes(&v.value.v_double, 8);
      return v;
    case 3:
      v.value_type = BSON_TYPE_INT64;
      r->Bytes(&v.value.v_int64, 8);
      return v;
    case 4:
      v.value_type = BSON_TYPE_INT32;
      r->Bytes(&v.value.v_int32, 4);
      return v;
    case 5: {
      double x;
      r->Bytes(&x, 8);
      bson_decimal128_t d = gatedb::decimal::FromDouble(x, gatedb::decimal::DoublePrecision::k34Digits);
      const int k = static_cast<int>(r->Byte() % 8) - 4;
      gatedb::decimal::Parts p = gatedb::decimal::Decode(d);
      if (p.kind == gatedb::decimal::Kind::kFinite && k != 0) {
        gatedb::decimal::Parts unit;
        unit.negative = k < 0;
        unit.coefficient = static_cast<unsigned>(k < 0 ? -k : k);
        unit.exponent = p.exponent;
        d = gatedb::decimal::Add(d, gatedb::decimal::Encode(unit)).value;
      }
      return Decimal(d);
    }
    default: {
      int64_t x;
      r->Bytes(&x, 8);
      const int k = static_cast<int>(r->Byte() % 8) - 4;
      bson_decimal128_t d = gatedb::decimal::FromInt64(x);
      gatedb::decimal::Parts unit;
      unit.negative = k < 0;
      unit.coefficient = static_cast<unsigned>(k < 0 ? -k : k);
      unit.exponent = -33;
      return Decimal(gatedb::decimal::Add(d, gatedb::decimal::Encode(unit)).value);
    }
  }
}

// The reference: a class (-3 NaN, -2 -Infinity, 0 finite, 2 +Infinity) and,
// for finite values, an exact rational.
struct Exact {
  int cls = 0;
  mpq_t q;
  Exact() { mpq_init(q); }
  ~Exact() { mpq_clear(q); }
  Exact(const Exact&) = delete;
  Exact& operator=(const Exact&) = delete;
};

// From libbson's string of a decimal: "[-]digits[.digits][E[+-]digits]",
// "NaN", "Infinity", "-Infinity".
void FromDecimalString(const std::string& s, Exact* out) {
  if (s == "NaN") {
    out->cls = -3;
    return;
  }
  if (s == "Infinity" || s == "-Infinity") {
    out->cls = s[0] == '-' ? -2 : 2;
    return;
  }
  size_t i = 0;
  bool negative = false;
  if (s[i] == '-') {
    negative = true;
    ++i;
  }
  std::string digits;
  long exponent = 0;
  bool dot = false;
  for (; i < s.size() && s[i] != 'E'; ++i) {
    if (s[i] == '.') {
      dot = true;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') Fail("unexpected decimal string", s);
    digits.push_back(s[i]);
    if (dot) --exponent;
  }
  if (i < s.size()) exponent += std::strtol(s.c_str() + i + 1, nullptr, 10);
  std::string num = digits, den = "1";
  if (exponent >= 0) {
    num.append(static_cast<size_t>(exponent), '0');
  } else {
    den.append(static_cast<size_t>(-exponent), '0');
  }
  std::string text = (negative ? "-" : "") + num + "/" + den;
  if (mpq_set_str(out->q, text.c_str(), 10) != 0) Fail("mpq_set_str", text);
  mpq_canonicalize(out->q);
}

// A finite decimal whose coefficient is not canonical (>= 10^34, or the
// "11" combination form that is no infinity or NaN): IEEE 754 (and
// MongoDB's Intel library) read it as zero; libbson's string does not.
// Decided from the bits, with GMP.
bool NonCanonicalFinite(const bson_decimal128_t& d) {
  const unsigned top = static_cast<unsigned>((d.high >> 58) & 0x1F);
  if (top == 0x1E || top == 0x1F) return false;  // infinity, NaN
  if (((d.high >> 61) & 3) == 3) return true;
  mpz_t c, limit;
  mpz_init_set_ui(c, static_cast<unsigned long>(d.high & ((uint64_t{1} << 49) - 1)));
  mpz_mul_2exp(c, c, 64);
  mpz_add_ui(c, c, static_cast<unsigned long>(d.low));
  mpz_init(limit);
  mpz_ui_pow_ui(limit, 10, 34);
  const bool big = mpz_cmp(c, limit) >= 0;
  mpz_clear(c);
  mpz_clear(limit);
  return big;
}

void Reference(const bson_value_t& v, Exact* out) {
  switch (v.value_type) {
    case BSON_TYPE_DECIMAL128: {
      if (NonCanonicalFinite(v.value.v_decimal128)) return;  // zero, as IEEE 754 says
      char buf[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, buf);
      FromDecimalString(buf, out);
      return;
    }
    case BSON_TYPE_DOUBLE:
      if (std::isnan(v.value.v_double)) {
        out->cls = -3;
      } else if (std::isinf(v.value.v_double)) {
        out->cls = v.value.v_double < 0 ? -2 : 2;
      } else {
        mpq_set_d(out->q, v.value.v_double);
      }
      return;
    case BSON_TYPE_INT64:
      mpz_set_si(mpq_numref(out->q), static_cast<long>(v.value.v_int64));
      return;
    default:
      mpz_set_si(mpq_numref(out->q), v.value.v_int32);
      return;
  }
}

int Sign(int x) { return (x > 0) - (x < 0); }

int ReferenceCompare(const Exact& a, const Exact& b) {
  if (a.cls != 0 || b.cls != 0) return Sign(a.cls - b.cls);
  return Sign(mpq_cmp(a.q, b.q));
}

std::string Describe(const bson_value_t& v) {
  char buf[BSON_DECIMAL128_STRING + 64];
  switch (v.value_type) {
    case BSON_TYPE_DECIMAL128: {
      char d[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, d);
      std::snprintf(buf, sizeof buf, "decimal %s (%016llx%016llx)", d,
                    static_cast<unsigned long long>(v.value.v_decimal128.high),
                    static_cast<unsigned long long>(v.value.v_decimal128.low));
      break;
    }
    case BSON_TYPE_DOUBLE: std::snprintf(buf, sizeof buf, "double %.17g", v.value.v_double); break;
    case BSON_TYPE_INT64: std::snprintf(buf, sizeof buf, "int64 %lld", static_cast<long long>(v.value.v_int64)); break;
    default: std::snprintf(buf, sizeof buf, "int32 %d", v.value.v_int32); break;
  }
  return buf;
}

std::string Enc(const bson_value_t& v) {
  std::string out;
  gatedb::keys::EncodeValue(v, &out);
  return out;
}

std::string EncDesc(const bson_value_t& v) {
  std::string out;
  gatedb::keys::EncodeValueDescending(v, &out);
  return out;
}

// The encoding of {v: x}.
std::string EncDoc(const bson_value_t& x) {
  bson_t* d = bson_new();
  bson_append_value(d, "v", 1, &x);
  bson_value_t v;
  v.value_type = BSON_TYPE_DOCUMENT;
  v.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(d));
  v.value.v_doc.data_len = d->len;
  std::string out = Enc(v);
  bson_destroy(d);
  return out;
}

int KeyCompare(const std::string& a, const std::string& b) { return Sign(a.compare(b)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader reader(data, size);
  const bson_value_t a = ReadNumber(&reader);
  const bson_value_t b = ReadNumber(&reader);
  Exact ra, rb;
  Reference(a, &ra);
  Reference(b, &rb);
  const int want = ReferenceCompare(ra, rb);
  const std::string detail = Describe(a) + "\n" + Describe(b) + "\nexact order " + std::to_string(want);

  if (Sign(gatedb::CompareValues(a, b)) != want) Fail("CompareValues disagrees with the exact order", detail);
  if (Sign(gatedb::CompareValues(b, a)) != -want) Fail("CompareValues is not antisymmetric", detail);

  const std::string ka = Enc(a), kb = Enc(b);
  if (KeyCompare(ka, kb) != want) Fail("key order disagrees with the exact order", detail);
  if ((ka == kb) != (want == 0)) Fail("equal values must have equal keys (and only they)", detail);
  // A following component (another number, a type byte < 0xFF) changes
  // nothing unless the values are equal.
  static const bson_value_t kZero = [] {
    bson_value_t z;
    z.value_type = BSON_TYPE_INT32;
    z.value.v_int32 = 0;
    return z;
  }();
  const std::string follower = Enc(kZero);
  if (want != 0 && KeyCompare(ka + follower, kb) != want) Fail("a follower changed the key order", detail);
  if (want != 0 && KeyCompare(ka, kb + follower) != want) Fail("a follower changed the key order", detail);
  if (KeyCompare(EncDoc(a), EncDoc(b)) != want) Fail("nested key order disagrees", detail);
  // The planner's point [E(b), E(b) + 0xFF).
  const bool in_point = ka >= kb && ka < kb + '\xFF';
  if (in_point != (want == 0)) Fail("a key inside another value's point range", detail);
  // Descending components: reversed, alone (unique index) and followed.
  const std::string da = EncDesc(a), db = EncDesc(b);
  if (KeyCompare(da, db) != -want) Fail("descending key order is not reversed", detail);
  if (want != 0 && KeyCompare(da + follower, db) != -want) Fail("a follower changed the descending order", detail);
  if (want != 0 && KeyCompare(da, db + follower) != -want) Fail("a follower changed the descending order", detail);
  const bool in_desc_point = da >= db && da < db + '\xFF';
  if (in_desc_point != (want == 0)) Fail("a descending key inside another value's point range", detail);
  return 0;
}
