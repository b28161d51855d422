#include "engine/decimal/decimal128.h"

#include "engine/decimal/decimal_bid.h"

#include <gmp.h>
#include <locale.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

// decNumber's structure holds DECNUMDIGITS digits; 34 is the decimal128
// context's precision, so every result of an operation in that context
// fits.  The one operation that needs more (Remainder's wide retry)
// allocates its own storage.
#define DECNUMDIGITS 34
#include <decNumber.h>

namespace gatedb {
namespace decimal {

static_assert(DECDPUN == 3, "libdecnumber is built with 3 digits per unit");

namespace {

// ---------------------------------------------------------------------------
// BID layout (IEEE 754-2008 decimal128, binary integer decimal).
constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr uint64_t kInfinityBits = uint64_t{0x78} << 56;   // 0 11110 ...
constexpr uint64_t kQuietNaNBits = uint64_t{0x7C} << 56;   // 0 11111 0 ...
constexpr uint64_t kSignalingBit = uint64_t{1} << 57;      // 0 11111 1 ...
constexpr uint64_t kSmallCoefficientMask = (uint64_t{1} << 49) - 1;  // high bits of a "00/01/10" coefficient
constexpr uint64_t kPayloadMask = (uint64_t{1} << 46) - 1;           // high bits of a NaN payload
constexpr int kExponentBias = 6176;

constexpr uint128 Pow10(int k) {
  uint128 p = 1;
  for (int i = 0; i < k; ++i) p *= 10;
  return p;
}

struct Pow10Table {
  uint128 v[39];
  constexpr Pow10Table() : v() {
    for (int i = 0; i < 39; ++i) v[i] = Pow10(i);
  }
};
constexpr Pow10Table kPow10;
constexpr uint128 kMaxCoefficient = Pow10(34) - 1;
constexpr uint128 kMaxPayload = Pow10(33) - 1;

int BitLength(uint128 c) {
  uint64_t hi = static_cast<uint64_t>(c >> 64), lo = static_cast<uint64_t>(c);
  if (hi != 0) return 128 - __builtin_clzll(hi);
  return lo != 0 ? 64 - __builtin_clzll(lo) : 0;
}

// Decimal digits of c > 0.
int NumDigits(uint128 c) {
  int t = (BitLength(c) * 1233) >> 12;  // floor(log10(2^bits)), at most one too large
  return t + 1 - (c < kPow10.v[t] ? 1 : 0);
}

// |v| (INT64_MIN included).
uint128 Magnitude(int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v);
  return v < 0 ? uint128{uint64_t{0} - u} : uint128{u};
}

Parts FromInteger(bool negative, uint128 magnitude) {
  Parts p;
  p.negative = negative;
  p.coefficient = magnitude;
  return p;
}

// ---------------------------------------------------------------------------
// decNumber glue.

decContext Context(enum rounding round = DEC_ROUND_HALF_EVEN) {
  decContext set;
  decContextDefault(&set, DEC_INIT_DECIMAL128);  // 34 digits, 6144/-6143, clamp 1, no traps
  set.round = round;
  return set;
}

uint32_t FlagsOf(uint32_t status) {
  uint32_t f = 0;
  if (status & DEC_Inexact) f |= kFlagInexact;
  if (status & DEC_Underflow) f |= kFlagUnderflow;
  if (status & DEC_Overflow) f |= kFlagOverflow;
  if (status & DEC_Division_by_zero) f |= kFlagDivisionByZero;
  if (status & DEC_IEEE_754_Invalid_operation) f |= kFlagInvalid;
  return f;
}

void SetCoefficient(uint128 c, decNumber* dn) {
  char digits[kPrecision];
  int n = CoefficientDigits(c, digits);
  uint8_t bcd[kPrecision];
  for (int i = 0; i < n; ++i) bcd[i] = static_cast<uint8_t>(digits[i] - '0');
  dn->digits = n;  // decNumberSetBCD fills dn->digits digits
  decNumberSetBCD(dn, bcd, static_cast<uint32_t>(n));
}

void ToNumber(const Parts& p, decNumber* dn) {
  decNumberZero(dn);
  switch (p.kind) {
    case Kind::kFinite:
      SetCoefficient(p.coefficient, dn);
      dn->exponent = p.exponent;
      break;
    case Kind::kInfinity:
      dn->bits = DECINF;
      break;
    case Kind::kQuietNaN:
    case Kind::kSignalingNaN:
      if (p.coefficient != 0) SetCoefficient(p.coefficient, dn);
      dn->bits = p.kind == Kind::kQuietNaN ? DECNAN : DECSNAN;
      break;
  }
  if (p.negative) dn->bits |= DECNEG;
}

void ToNumber(const bson_decimal128_t& d, decNumber* dn) { ToNumber(Decode(d), dn); }

uint128 GetCoefficient(const decNumber* dn) {
  uint8_t bcd[kPrecision];
  decNumberGetBCD(dn, bcd);
  uint128 c = 0;
  for (int i = 0; i < dn->digits; ++i) c = c * 10 + bcd[i];
  return c;
}

bson_decimal128_t QuietNaN() {
  Parts p;
  p.kind = Kind::kQuietNaN;
  return Encode(p);
}

// REQUIRES: dn is the result of an operation in the decimal128 context (or
// otherwise fits the format).
bson_decimal128_t FromNumber(const decNumber* dn) {
  Parts p;
  p.negative = decNumberIsNegative(dn);
  if (decNumberIsNaN(dn)) {
    p.kind = decNumberIsSNaN(dn) ? Kind::kSignalingNaN : Kind::kQuietNaN;
    if (dn->digits <= kPrecision - 1) {
      p.coefficient = GetCoefficient(dn);
      if (p.coefficient > kMaxPayload) p.coefficient = 0;
    }
    return Encode(p);
  }
  if (decNumberIsInfinite(dn)) {
    p.kind = Kind::kInfinity;
    return Encode(p);
  }
  if (dn->digits > kPrecision || dn->exponent < kMinExponent || dn->exponent > kMaxExponent) {
    return QuietNaN();  // cannot happen for a decimal128-context result
  }
  p.coefficient = GetCoefficient(dn);
  p.exponent = dn->exponent;
  return Encode(p);
}

using BinaryOp = decNumber* (*)(decNumber*, const decNumber*, const decNumber*, decContext*);
using UnaryOp = decNumber* (*)(decNumber*, const decNumber*, decContext*);

Result Binary(BinaryOp op, const bson_decimal128_t& a, const bson_decimal128_t& b) {
  decNumber x, y, r;
  ToNumber(a, &x);
  ToNumber(b, &y);
  decContext set = Context();
  op(&r, &x, &y, &set);
  return Result{FromNumber(&r), FlagsOf(set.status)};
}

Result Unary(UnaryOp op, const bson_decimal128_t& a) {
  decNumber x, r;
  ToNumber(a, &x);
  decContext set = Context();
  op(&r, &x, &set);
  return Result{FromNumber(&r), FlagsOf(set.status)};
}

// 0E-6176: adding it gives a finite value its 34-digit cohort (MongoDB's
// Decimal128::normalize), exactly.
void ZeroWithSmallestExponent(decNumber* dn) {
  decNumberZero(dn);
  dn->exponent = kMinExponent;
}

// MongoDB's Decimal128::quantize(10^target, round): the value's 34-digit
// cohort n when n's exponent is above target (no digit to round at
// 10^target), infinities and NaNs as they are (through the same addition),
// else IEEE's quantize of the value to exponent target.
Result MongoQuantize(const bson_decimal128_t& d, int target, enum rounding round) {
  decNumber x, zero, n;
  ToNumber(d, &x);
  ZeroWithSmallestExponent(&zero);
  decContext set = Context();
  decNumberAdd(&n, &x, &zero, &set);
  // MongoDB compares biased exponents against the reference's 34-digit
  // cohort (exponent target - 33) and skips the test when that one is 0.
  const bool reference_normalizes = target - (kPrecision - 1) + kExponentBias != 0;
  if (!decNumberIsFinite(&x) || (reference_normalizes && n.exponent > target)) {
    return Result{FromNumber(&n), FlagsOf(set.status)};
  }
  decNumber reference, r;
  decNumberZero(&reference);
  reference.lsu[0] = 1;
  reference.exponent = target;
  decContext qset = Context(round);
  decNumberQuantize(&r, &x, &reference, &qset);
  return Result{FromNumber(&r), FlagsOf(qset.status)};
}

// A decNumber with room for `digits` digits.
class WideNumber {
 public:
  explicit WideNumber(int digits) {
    size_t units = static_cast<size_t>((digits + DECDPUN - 1) / DECDPUN);
    size_t extra = units > DECNUMUNITS ? units - DECNUMUNITS : 0;
    storage_.resize(sizeof(decNumber) + extra * sizeof(decNumberUnit) + alignof(decNumber));
    void* p = storage_.data();
    size_t space = storage_.size();
    dn_ = static_cast<decNumber*>(std::align(alignof(decNumber), sizeof(decNumber), p, space));
    decNumberZero(dn_);
  }
  decNumber* get() { return dn_; }

 private:
  std::vector<uint8_t> storage_;
  decNumber* dn_;
};

// ---------------------------------------------------------------------------
// Comparison helpers.

// -2 -Infinity, -1 negative, 0 zero, 1 positive, 2 +Infinity.
int ClassOf(const Parts& p) {
  if (p.kind == Kind::kInfinity) return p.negative ? -2 : 2;
  if (p.coefficient == 0) return 0;
  return p.negative ? -1 : 1;
}

template <typename T>
int Cmp3(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Compares c1 * 10^q1 with c2 * 10^q2, both coefficients non-zero and < 10^34.
int CompareMagnitudes(uint128 c1, int q1, uint128 c2, int q2) {
  const int d1 = NumDigits(c1), d2 = NumDigits(c2);
  const int a1 = q1 + d1 - 1, a2 = q2 + d2 - 1;  // adjusted exponents
  if (a1 != a2) return a1 < a2 ? -1 : 1;
  // Same adjusted exponent: |q1 - q2| = |d2 - d1| <= 33, and scaling the one
  // with the larger exponent keeps it below 10^34.
  if (q1 > q2) c1 *= kPow10.v[q1 - q2];
  if (q2 > q1) c2 *= kPow10.v[q2 - q1];
  return Cmp3(c1, c2);
}

int CompareParts(const Parts& a, const Parts& b) {
  const int ca = ClassOf(a), cb = ClassOf(b);
  if (ca != cb) return ca < cb ? -1 : 1;
  if (ca == 0 || ca == 2 || ca == -2) return 0;
  int m = CompareMagnitudes(a.coefficient, a.exponent, b.coefficient, b.exponent);
  return a.negative ? -m : m;
}

void SetMpz(mpz_t z, uint128 v) {
  mpz_set_ui(z, static_cast<unsigned long>(v >> 64));
  mpz_mul_2exp(z, z, 64);
  mpz_add_ui(z, z, static_cast<unsigned long>(static_cast<uint64_t>(v)));
}

class Mpz {
 public:
  Mpz() { mpz_init(z_); }
  ~Mpz() { mpz_clear(z_); }
  Mpz(const Mpz&) = delete;
  Mpz& operator=(const Mpz&) = delete;
  mpz_ptr get() { return z_; }

 private:
  mpz_t z_;
};

// z *= 10^k
void MulPow10(mpz_t z, unsigned long k) {
  if (k == 0) return;
  Mpz p;
  mpz_ui_pow_ui(p.get(), 10, k);
  mpz_mul(z, z, p.get());
}

// A positive finite double as m * 2^e with m odd.
void SplitDouble(double y, uint64_t* m, int* e) {
  uint64_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  const int field = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  if (field == 0) {
    *m = frac;
    *e = -1074;
  } else {
    *m = frac | (uint64_t{1} << 52);
    *e = field - 1075;
  }
  int tz = __builtin_ctzll(*m);
  *m >>= tz;
  *e += tz;
}

// Whether v << s (s >= 0) or v * 10^k fits: bit-length arithmetic.
bool Fits(int bits) { return bits <= 127; }

// Compares c * 10^q (c > 0) with y > 0 (finite), exactly.
int CompareMagnitudeToDouble(uint128 c, int q, double y) {
  uint64_t m;
  int e2;
  SplitDouble(y, &m, &e2);
  const int b = (64 - __builtin_clzll(m)) - 1 + e2;  // y in [2^b, 2^(b+1))
  const int a = q + NumDigits(c) - 1;                // |d| in [10^a, 10^(a+1))
  constexpr double kLog2Of10 = 3.321928094887362;
  const int d_lo = static_cast<int>(std::floor(a * kLog2Of10)) - 1;       // 2^d_lo <= 10^a
  const int d_hi = static_cast<int>(std::ceil((a + 1) * kLog2Of10)) + 1;  // 10^(a+1) <= 2^d_hi
  if (b + 1 <= d_lo) return 1;
  if (b >= d_hi) return -1;
  // Exact: c * 10^max(q,0) * 2^max(-e2,0)  vs  m * 10^max(-q,0) * 2^max(e2,0).
  const int lq = q > 0 ? q : 0, rq = q < 0 ? -q : 0;
  const int ls = e2 < 0 ? -e2 : 0, rs = e2 > 0 ? e2 : 0;
  if (lq <= 38 && rq <= 38) {
    const int lbits = BitLength(c) + (lq ? BitLength(kPow10.v[lq]) : 0) + ls;
    const int rbits = (64 - __builtin_clzll(m)) + (rq ? BitLength(kPow10.v[rq]) : 0) + rs;
    if (Fits(lbits) && Fits(rbits)) {
      uint128 l = (c * kPow10.v[lq]) << ls;
      uint128 r = (static_cast<uint128>(m) * kPow10.v[rq]) << rs;
      return Cmp3(l, r);
    }
  }
  Mpz l, r;
  SetMpz(l.get(), c);
  mpz_set_ui(r.get(), m);
  MulPow10(l.get(), static_cast<unsigned long>(lq));
  MulPow10(r.get(), static_cast<unsigned long>(rq));
  mpz_mul_2exp(l.get(), l.get(), static_cast<mp_bitcnt_t>(ls));
  mpz_mul_2exp(r.get(), r.get(), static_cast<mp_bitcnt_t>(rs));
  int cmp = mpz_cmp(l.get(), r.get());
  return cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
}

locale_t CLocale() {
  static locale_t loc = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return loc;
}

// "[-]digitsE<q>" of a finite value.
std::string ScientificString(const Parts& p) {
  char digits[kPrecision];
  int n = CoefficientDigits(p.coefficient, digits);
  std::string s;
  if (p.negative) s.push_back('-');
  s.append(digits, static_cast<size_t>(n));
  s.push_back('E');
  s += std::to_string(p.exponent);
  return s;
}

// MongoDB's accepted string forms (its validateInputString), lower-cased.
bool ValidDecimalString(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (s == "nan" || s == "inf" || s == "infinity") return true;
  size_t i = 0;
  bool digit = false, dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digit) return false;
  if (i == s.size()) return true;
  if (s[i] != 'e') return false;
  ++i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

// The double's exact value as a decimal string: "digits" or "digitsE-k".
std::string ExactDoubleString(double v) {
  uint64_t m;
  int e2;
  SplitDouble(std::fabs(v), &m, &e2);
  Mpz z;
  mpz_set_ui(z.get(), m);
  std::string exponent;
  if (e2 >= 0) {
    mpz_mul_2exp(z.get(), z.get(), static_cast<mp_bitcnt_t>(e2));
  } else {
    // m * 2^e2 = m * 5^-e2 * 10^e2
    Mpz five;
    mpz_ui_pow_ui(five.get(), 5, static_cast<unsigned long>(-e2));
    mpz_mul(z.get(), z.get(), five.get());
    exponent = "E" + std::to_string(e2);
  }
  std::vector<char> buf(mpz_sizeinbase(z.get(), 10) + 2);
  mpz_get_str(buf.data(), 10, z.get());
  std::string s = v < 0 ? "-" : "";
  s += buf.data();
  return s + exponent;
}

}  // namespace

// ---------------------------------------------------------------------------

Parts Decode(const bson_decimal128_t& d) {
  Parts p;
  const uint64_t high = d.high, low = d.low;
  p.negative = (high & kSignBit) != 0;
  if (((high >> 61) & 3) == 3) {
    const unsigned combination = static_cast<unsigned>((high >> 58) & 0x1F);
    if (combination == 0x1E) {
      p.kind = Kind::kInfinity;
      return p;
    }
    if (combination == 0x1F) {
      p.kind = (high & kSignalingBit) ? Kind::kSignalingNaN : Kind::kQuietNaN;
      uint128 payload = (static_cast<uint128>(high & kPayloadMask) << 64) | low;
      p.coefficient = payload <= kMaxPayload ? payload : 0;
      return p;
    }
    // "11" form: the implied coefficient is at least 2^113 > 10^34 - 1,
    // never canonical: the value is zero.
    p.exponent = static_cast<int32_t>((high >> 47) & 0x3FFF) - kExponentBias;
    return p;
  }
  p.exponent = static_cast<int32_t>((high >> 49) & 0x3FFF) - kExponentBias;
  uint128 c = (static_cast<uint128>(high & kSmallCoefficientMask) << 64) | low;
  p.coefficient = c <= kMaxCoefficient ? c : 0;
  return p;
}

bson_decimal128_t Encode(const Parts& p) {
  bson_decimal128_t d;
  uint64_t high = p.negative ? kSignBit : 0;
  switch (p.kind) {
    case Kind::kFinite:
      high |= static_cast<uint64_t>(p.exponent + kExponentBias) << 49;
      high |= static_cast<uint64_t>(p.coefficient >> 64);
      d.low = static_cast<uint64_t>(p.coefficient);
      break;
    case Kind::kInfinity:
      high |= kInfinityBits;
      d.low = 0;
      break;
    case Kind::kQuietNaN:
    case Kind::kSignalingNaN:
      high |= kQuietNaNBits | (p.kind == Kind::kSignalingNaN ? kSignalingBit : 0);
      high |= static_cast<uint64_t>(p.coefficient >> 64) & kPayloadMask;
      d.low = static_cast<uint64_t>(p.coefficient);
      break;
  }
  d.high = high;
  return d;
}

bool IsNaN(const bson_decimal128_t& d) { return ((d.high >> 58) & 0x1F) == 0x1F; }
bool IsInfinity(const bson_decimal128_t& d) { return ((d.high >> 58) & 0x1F) == 0x1E; }
bool IsZero(const bson_decimal128_t& d) {
  Parts p = Decode(d);
  return p.kind == Kind::kFinite && p.coefficient == 0;
}

int CoefficientDigits(uint128 c, char* out) {
  if (c == 0) {
    out[0] = '0';
    return 1;
  }
  constexpr uint64_t k1e17 = 100000000000000000ull;
  uint64_t parts[2] = {static_cast<uint64_t>(c / k1e17), static_cast<uint64_t>(c % k1e17)};
  char tmp[kPrecision];
  int n = 0;
  // Least significant first into tmp, then reversed.
  uint64_t lo = parts[1], hi = parts[0];
  for (int i = 0; i < 17 && (lo != 0 || hi != 0); ++i) {
    tmp[n++] = static_cast<char>('0' + lo % 10);
    lo /= 10;
  }
  while (hi != 0) {
    tmp[n++] = static_cast<char>('0' + hi % 10);
    hi /= 10;
  }
  for (int i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

// ---------------------------------------------------------------------------

int Compare(const bson_decimal128_t& a, const bson_decimal128_t& b) {
  const bool an = IsNaN(a), bn = IsNaN(b);
  if (an || bn) return an && bn ? 0 : (an ? -1 : 1);
  return CompareParts(Decode(a), Decode(b));
}

int CompareToInt64(const bson_decimal128_t& a, int64_t b) {
  if (IsNaN(a)) return -1;
  return CompareParts(Decode(a), FromInteger(b < 0, Magnitude(b)));
}

int CompareToDouble(const bson_decimal128_t& a, double b) {
  if (std::isnan(b)) return IsNaN(a) ? 0 : 1;
  if (IsNaN(a)) return -1;
  const Parts p = Decode(a);
  const int ca = ClassOf(p);
  const int cb = std::isinf(b) ? (b < 0 ? -2 : 2) : (b == 0 ? 0 : (b < 0 ? -1 : 1));
  if (ca != cb) return ca < cb ? -1 : 1;
  if (ca == 0 || ca == 2 || ca == -2) return 0;
  int m = CompareMagnitudeToDouble(p.coefficient, p.exponent, std::fabs(b));
  return p.negative ? -m : m;
}

// ---------------------------------------------------------------------------

bson_decimal128_t FromInt64(int64_t v) {
  return Encode(FromInteger(v < 0, Magnitude(v)));
}

bson_decimal128_t FromDouble(double v, DoublePrecision precision) {
  Parts p;
  p.negative = std::signbit(v);
  if (std::isnan(v)) {
    p.kind = Kind::kQuietNaN;
    p.negative = false;
    return Encode(p);
  }
  if (std::isinf(v)) {
    p.kind = Kind::kInfinity;
    return Encode(p);
  }
  if (v == 0) return Encode(p);
  // The exact value, rounded half even to 34 digits (binary64_to_bid128).
  decNumber exact;
  decContext set = Context();
  const std::string s = ExactDoubleString(v);
  decNumberFromString(&exact, s.c_str(), &set);
  if (precision == DoublePrecision::k34Digits) return FromNumber(&exact);
  // Quantize to 15 significant digits.  The first guess of the decimal
  // exponent comes from the binary one (floor(e2 * log10(2)) through
  // 30103/100000, exact over the double range); when the value rounds to
  // 16 digits at that guess, it is one too small.
  int base2 = 0;
  std::frexp(v, &base2);
  base2 -= 1;  // the exponent of v in [1, 2) form
  int base10 = (base2 * 30103) / 100000;
  if (base2 < 0) base10 -= 1;
  decNumber out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    decNumber reference;
    decNumberZero(&reference);
    reference.lsu[0] = 1;
    reference.exponent = base10 - 14 + attempt;
    decContext qset = Context();
    decNumberQuantize(&out, &exact, &reference, &qset);
    if (out.digits <= 15) break;
  }
  return FromNumber(&out);
}

Result FromString(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!ValidDecimalString(lower)) return Result{QuietNaN(), kFlagInvalid};
  decNumber dn;
  decContext set = Context();
  decNumberFromString(&dn, lower.c_str(), &set);
  Result r{FromNumber(&dn), FlagsOf(set.status)};
  if (decNumberIsZero(&dn)) r.flags = 0;  // as MongoDB: zeros convert without flags
  return r;
}

double ToDouble(const bson_decimal128_t& d) {
  const Parts p = Decode(d);
  switch (p.kind) {
    case Kind::kQuietNaN:
    case Kind::kSignalingNaN:
      return std::numeric_limits<double>::quiet_NaN();
    case Kind::kInfinity:
      return p.negative ? -HUGE_VAL : HUGE_VAL;
    case Kind::kFinite:
      break;
  }
  if (p.coefficient == 0) return p.negative ? -0.0 : 0.0;
  // glibc's strtod is correctly rounded (ties to even), subnormals and
  // overflow included; the C locale keeps it independent of the process's.
  const std::string s = ScientificString(p);
  return strtod_l(s.c_str(), nullptr, CLocale());
}

namespace {

// |value| truncated toward zero, or nullopt when it exceeds `limit`;
// *exact says whether nothing was dropped.
std::optional<uint128> TruncatedMagnitude(const Parts& p, uint128 limit, bool* exact) {
  *exact = true;
  if (p.coefficient == 0) return uint128{0};
  if (p.exponent >= 0) {
    if (p.exponent > 19) return std::nullopt;  // at least 10^20
    const uint128 scale = kPow10.v[p.exponent];
    if (p.coefficient > limit / scale) return std::nullopt;
    return p.coefficient * scale;
  }
  if (-p.exponent > kPrecision) {
    *exact = false;
    return uint128{0};
  }
  const uint128 scale = kPow10.v[-p.exponent];
  *exact = p.coefficient % scale == 0;
  uint128 v = p.coefficient / scale;
  if (v > limit) return std::nullopt;
  return v;
}

std::optional<int64_t> ToInt64(const bson_decimal128_t& d, bool require_exact) {
  const Parts p = Decode(d);
  if (p.kind != Kind::kFinite) return std::nullopt;
  const uint128 limit = p.negative ? (uint128{1} << 63) : (uint128{1} << 63) - 1;
  bool exact = true;
  std::optional<uint128> m = TruncatedMagnitude(p, limit, &exact);
  if (!m || (require_exact && !exact)) return std::nullopt;
  if (p.negative) return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(*m));
  return static_cast<int64_t>(*m);
}

}  // namespace

std::optional<int64_t> ToInt64Truncated(const bson_decimal128_t& d) { return ToInt64(d, false); }
std::optional<int64_t> ToInt64Exact(const bson_decimal128_t& d) { return ToInt64(d, true); }

std::string ToString(const bson_decimal128_t& d) {
  char buf[BSON_DECIMAL128_STRING];
  bson_decimal128_to_string(&d, buf);
  return buf;
}

// ---------------------------------------------------------------------------

Result Add(const bson_decimal128_t& a, const bson_decimal128_t& b) { return Binary(decNumberAdd, a, b); }
Result Subtract(const bson_decimal128_t& a, const bson_decimal128_t& b) { return Binary(decNumberSubtract, a, b); }
Result Multiply(const bson_decimal128_t& a, const bson_decimal128_t& b) { return Binary(decNumberMultiply, a, b); }
Result Divide(const bson_decimal128_t& a, const bson_decimal128_t& b) { return Binary(decNumberDivide, a, b); }

Result Remainder(const bson_decimal128_t& a, const bson_decimal128_t& b) {
  decNumber x, y, r;
  ToNumber(a, &x);
  ToNumber(b, &y);
  decContext set = Context();
  decNumberRemainder(&r, &x, &y, &set);
  if ((set.status & DEC_Division_impossible) == 0) return Result{FromNumber(&r), FlagsOf(set.status)};
  // The integer quotient has more than 34 digits (1E+100 mod 7): the
  // remainder itself is exact and short (below |b|, at exponent min(qa,
  // qb)), so divide at the precision the quotient needs.
  const int adjusted_a = x.exponent + x.digits - 1, adjusted_b = y.exponent + y.digits - 1;
  const int digits = adjusted_a - adjusted_b + 2 * kPrecision;
  decContext wide = Context();
  wide.digits = digits;
  wide.clamp = 0;
  WideNumber out(digits);
  decNumberRemainder(out.get(), &x, &y, &wide);
  return Result{FromNumber(out.get()), FlagsOf(wide.status)};
}

bson_decimal128_t Abs(const bson_decimal128_t& d) {
  bson_decimal128_t r = d;
  r.high &= ~kSignBit;
  return r;
}

bson_decimal128_t Negate(const bson_decimal128_t& d) {
  bson_decimal128_t r = d;
  r.high ^= kSignBit;
  return r;
}

Result Round(const bson_decimal128_t& d, int places) { return MongoQuantize(d, -places, DEC_ROUND_HALF_EVEN); }
Result Trunc(const bson_decimal128_t& d, int places) { return MongoQuantize(d, -places, DEC_ROUND_DOWN); }
Result Ceil(const bson_decimal128_t& d) { return MongoQuantize(d, 0, DEC_ROUND_CEILING); }
Result Floor(const bson_decimal128_t& d) { return MongoQuantize(d, 0, DEC_ROUND_FLOOR); }

Result Sqrt(const bson_decimal128_t& d) { return Unary(decNumberSquareRoot, d); }
// ---------------------------------------------------------------------------
// Intel's functions (decimal_bid.h).

namespace {

Result IntelUnary(int op, const bson_decimal128_t& d) {
  const uint64_t in[2] = {d.low, d.high};
  uint64_t out[2] = {0, 0};
  uint32_t flags = 0;
  if (decimal_bid_unary(op, in, out, &flags) == 0) return Result{QuietNaN(), kFlagInvalid};
  bson_decimal128_t r;
  r.low = out[0];
  r.high = out[1];
  return Result{r, flags};
}

Result IntelBinary(int op, const bson_decimal128_t& a, const bson_decimal128_t& b) {
  const uint64_t x[2] = {a.low, a.high}, y[2] = {b.low, b.high};
  uint64_t out[2] = {0, 0};
  uint32_t flags = 0;
  if (decimal_bid_binary(op, x, y, out, &flags) == 0) return Result{QuietNaN(), kFlagInvalid};
  bson_decimal128_t r;
  r.low = out[0];
  r.high = out[1];
  return Result{r, flags};
}

// Intel's quiet_equal: by value (cohorts equal), NaN unequal to all.
bool EqualsInt(const bson_decimal128_t& d, int64_t v) { return !IsNaN(d) && CompareToInt64(d, v) == 0; }

}  // namespace

Result Exp(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_EXP, d); }
Result Ln(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_LOG, d); }
Result Log2(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_LOG2, d); }
Result Log10(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_LOG10, d); }
Result Sin(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_SIN, d); }
Result Cos(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_COS, d); }
Result Tan(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_TAN, d); }
Result Asin(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ASIN, d); }
Result Acos(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ACOS, d); }
Result Atan(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ATAN, d); }
Result Sinh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_SINH, d); }
Result Cosh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_COSH, d); }
Result Tanh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_TANH, d); }
Result Asinh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ASINH, d); }
Result Acosh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ACOSH, d); }
Result Atanh(const bson_decimal128_t& d) { return IntelUnary(GATEDB_BID_ATANH, d); }
Result Atan2(const bson_decimal128_t& y, const bson_decimal128_t& x) { return IntelBinary(GATEDB_BID_ATAN2, y, x); }

Result Log(const bson_decimal128_t& d, const bson_decimal128_t& base) {
  if (EqualsInt(base, 2)) return Log2(d);
  if (EqualsInt(base, 10)) return Log10(d);
  // MongoDB divides ln(d) by the base itself here, not by ln(base); gatedb
  // answers what MongoDB answers (the double path divides by ln(base)).
  const Result num = Ln(d);
  Result q = Divide(num.value, base);
  q.flags |= num.flags;
  return q;
}

Result Pow(const bson_decimal128_t& base, const bson_decimal128_t& exponent) {
  Result r = EqualsInt(base, 10)  ? IntelUnary(GATEDB_BID_EXP10, exponent)
             : EqualsInt(base, 2) ? IntelUnary(GATEDB_BID_EXP2, exponent)
                                  : IntelBinary(GATEDB_BID_POW, base, exponent);
  // MongoDB's power adds the zero with the smallest exponent, which puts
  // the result in its 34-digit cohort.
  decNumber x, zero, n;
  ToNumber(r.value, &x);
  ZeroWithSmallestExponent(&zero);
  decContext set = Context();
  decNumberAdd(&n, &x, &zero, &set);
  return Result{FromNumber(&n), r.flags | FlagsOf(set.status)};
}

// ---------------------------------------------------------------------------

BinaryBracket BracketMagnitude(uint128 c, int q) {
  BinaryBracket out;
  // Fast path: an integer that fits in 128 bits (5, 5.0, 1E+20).
  uint128 n = 0;
  bool integer = false;
  if (q >= 0 && q <= 38 && c <= std::numeric_limits<uint128>::max() / kPow10.v[q]) {
    n = c * kPow10.v[q];
    integer = true;
  } else if (q < 0 && -q <= kPrecision && c % kPow10.v[-q] == 0) {
    n = c / kPow10.v[-q];
    integer = true;
  }
  if (integer) {
    const int bits = BitLength(n);
    out.exponent = bits;
    if (bits <= 64) {
      out.mantissa = static_cast<uint64_t>(n) << (64 - bits);
      out.exact = true;
    } else {
      const int drop = bits - 64;
      out.mantissa = static_cast<uint64_t>(n >> drop);
      out.exact = (n & ((uint128{1} << drop) - 1)) == 0;
    }
    return out;
  }
  // value in (2^(k-1), 2^(k+1)); floor(value * 2^(64 - k)) is in [2^63, 2^65).
  if (q < 0 && -q <= 19) {
    // Fast path: den = 10^-q < 2^64, so the shifted numerator (64 +
    // bits(den) bits) or the shifted denominator fits in 128 bits.
    const uint128 den = kPow10.v[-q];
    const int k = BitLength(c) - BitLength(den);
    const int shift = 64 - k;
    uint128 quo, rem;
    if (shift >= 0) {
      const uint128 num = c << shift;
      quo = num / den;
      rem = num % den;
    } else {
      const uint128 d = den << -shift;
      quo = c / d;
      rem = c % d;
    }
    bool exact = rem == 0;
    out.exponent = k;
    if (quo >> 64 != 0) {  // value >= 2^k: one bit fewer
      exact = exact && (quo & 1) == 0;
      quo >>= 1;
      out.exponent += 1;
    }
    out.mantissa = static_cast<uint64_t>(quo);
    out.exact = exact;
    return out;
  }
  // value = num / den exactly.
  Mpz num, den, quo, rem;
  SetMpz(num.get(), c);
  mpz_set_ui(den.get(), 1);
  if (q >= 0) {
    MulPow10(num.get(), static_cast<unsigned long>(q));
  } else {
    MulPow10(den.get(), static_cast<unsigned long>(-q));
  }
  const long k = static_cast<long>(mpz_sizeinbase(num.get(), 2)) - static_cast<long>(mpz_sizeinbase(den.get(), 2));
  const long shift = 64 - k;
  if (shift >= 0) {
    mpz_mul_2exp(num.get(), num.get(), static_cast<mp_bitcnt_t>(shift));
  } else {
    mpz_mul_2exp(den.get(), den.get(), static_cast<mp_bitcnt_t>(-shift));
  }
  mpz_tdiv_qr(quo.get(), rem.get(), num.get(), den.get());
  bool exact = mpz_sgn(rem.get()) == 0;
  int exponent = static_cast<int>(k);
  if (mpz_sizeinbase(quo.get(), 2) > 64) {  // value >= 2^k: one bit fewer
    exact = exact && mpz_even_p(quo.get());
    mpz_tdiv_q_2exp(quo.get(), quo.get(), 1);
    exponent += 1;
  }
  uint64_t words[2] = {0, 0};
  size_t count = 0;
  mpz_export(words, &count, -1, sizeof(uint64_t), 0, 0, quo.get());
  out.exponent = exponent;
  out.mantissa = words[0];
  out.exact = exact;
  return out;
}

}  // namespace decimal
}  // namespace gatedb
