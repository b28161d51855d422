#include "engine/decimal/decimal128.h"

#include <gmp.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <atomic>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

#if defined(__GNUC__) && !defined(__clang__)
#include <decimal/decimal>
#define GATEDB_HAVE_GCC_DECIMAL 1
#endif

namespace gatedb {
namespace decimal {
namespace {

bson_decimal128_t D(const char* s) {
  bson_decimal128_t d;
  EXPECT_TRUE(bson_decimal128_from_string(s, &d)) << s;
  return d;
}

bool SameBytes(const bson_decimal128_t& a, const bson_decimal128_t& b) { return a.high == b.high && a.low == b.low; }

std::string Hex(const bson_decimal128_t& d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(d.high),
                static_cast<unsigned long long>(d.low));
  return buf;
}

uint128 U128(const char* digits) {
  uint128 v = 0;
  for (const char* p = digits; *p; ++p) v = v * 10 + static_cast<unsigned>(*p - '0');
  return v;
}

// A random canonical finite decimal: coefficient of 1..34 digits, any exponent.
bson_decimal128_t RandomFinite(std::mt19937_64& rng, int min_exp = kMinExponent, int max_exp = kMaxExponent) {
  Parts p;
  p.negative = rng() & 1;
  int digits = 1 + static_cast<int>(rng() % 34);
  uint128 c = 0;
  for (int i = 0; i < digits; ++i) c = c * 10 + rng() % 10;
  p.coefficient = c;
  p.exponent = min_exp + static_cast<int>(rng() % static_cast<uint64_t>(max_exp - min_exp + 1));
  return Encode(p);
}

// ---------------------------------------------------------------------------
// BID decode/encode and the decNumber round trip.

TEST(Decimal128Test, DecodeReadsLibbsonBytes) {
  Parts p = Decode(D("-1.25E+3"));
  EXPECT_EQ(p.kind, Kind::kFinite);
  EXPECT_TRUE(p.negative);
  EXPECT_TRUE(p.coefficient == 125);
  EXPECT_EQ(p.exponent, 1);
  p = Decode(D("9999999999999999999999999999999999"));
  EXPECT_TRUE(p.coefficient == U128("9999999999999999999999999999999999"));
  EXPECT_EQ(p.exponent, 0);
  EXPECT_EQ(Decode(D("Infinity")).kind, Kind::kInfinity);
  EXPECT_TRUE(Decode(D("-Infinity")).negative);
  EXPECT_EQ(Decode(D("NaN")).kind, Kind::kQuietNaN);
  p = Decode(D("-0.000"));
  EXPECT_TRUE(p.negative);
  EXPECT_TRUE(p.coefficient == 0);
  EXPECT_EQ(p.exponent, -3);
  // The extremes of the exponent.
  EXPECT_EQ(Decode(D("1E-6176")).exponent, kMinExponent);
  p = Decode(D("1E+6144"));  // clamped: 10^33 * 10^6111
  EXPECT_EQ(p.exponent, kMaxExponent);
  EXPECT_TRUE(p.coefficient == U128("1000000000000000000000000000000000"));
}

TEST(Decimal128Test, NonCanonicalEncodingsReadAsZero) {
  // "00" form with a coefficient of 10^34 (one past the largest).
  Parts p;
  p.coefficient = U128("9999999999999999999999999999999999");
  p.exponent = 5;
  bson_decimal128_t d = Encode(p);
  d.low += 1;  // 10^34: still fits the 113 bits, not canonical
  Parts q = Decode(d);
  EXPECT_EQ(q.kind, Kind::kFinite);
  EXPECT_TRUE(q.coefficient == 0);
  EXPECT_EQ(q.exponent, 5);
  EXPECT_TRUE(IsZero(d));
  EXPECT_EQ(Compare(d, D("0")), 0);
  EXPECT_EQ(CompareToInt64(d, 0), 0);
  EXPECT_EQ(CompareToDouble(d, -0.0), 0);
  // "11" form: the implied leading 100 makes every coefficient >= 2^113.
  bson_decimal128_t e;
  e.high = (uint64_t{0x3} << 61) | (uint64_t{6176 + 7} << 47) | 123;
  e.low = 99;
  q = Decode(e);
  EXPECT_EQ(q.kind, Kind::kFinite);
  EXPECT_TRUE(q.coefficient == 0);
  EXPECT_EQ(q.exponent, 7);
  EXPECT_EQ(ToString(Multiply(e, D("1")).value), "0E+7");  // decNumber sees zero too
}

TEST(Decimal128Test, RandomRoundTripsAgreeWithLibbson) {
  std::mt19937_64 rng(19);
  for (int i = 0; i < 20000; ++i) {
    bson_decimal128_t d = RandomFinite(rng);
    Parts p = Decode(d);
    // Encode(Decode(d)) is d, and libbson reads back the string it writes.
    ASSERT_TRUE(SameBytes(Encode(p), d)) << Hex(d);
    std::string s = ToString(d);
    ASSERT_TRUE(SameBytes(D(s.c_str()), d)) << s;
    // libbson's parse of "<coefficient>E<exponent>" is the same bytes.
    char digits[kPrecision];
    int n = CoefficientDigits(p.coefficient, digits);
    std::string sci = (p.negative ? "-" : "") + std::string(digits, static_cast<size_t>(n)) + "E" +
                      std::to_string(p.exponent);
    ASSERT_TRUE(SameBytes(D(sci.c_str()), d)) << sci;
    // Through decNumber and back: x * 1 is x exactly (same cohort), and
    // decNumber parses libbson's string to the same bytes.
    Result one = Multiply(d, D("1"));
    ASSERT_TRUE(SameBytes(one.value, d)) << s << " became " << ToString(one.value);
    ASSERT_EQ(one.flags, 0u) << s;
    Result parsed = FromString(s);
    ASSERT_TRUE(SameBytes(parsed.value, d)) << s << " parsed as " << ToString(parsed.value);
  }
}

TEST(Decimal128Test, SpecialValuesRoundTripThroughDecNumber) {
  for (const char* s : {"Infinity", "-Infinity", "0", "-0", "0E-6176", "-0E+6111", "1E-6176"}) {
    Result r = Multiply(D(s), D("1"));
    EXPECT_EQ(ToString(r.value), s);
  }
  EXPECT_TRUE(IsNaN(Multiply(D("NaN"), D("1")).value));
  EXPECT_EQ(Multiply(D("NaN"), D("1")).flags, 0u);
  // A signaling NaN signals and comes back quiet.
  bson_decimal128_t snan;
  snan.high = uint64_t{0x7E} << 56;
  snan.low = 0;
  EXPECT_EQ(Decode(snan).kind, Kind::kSignalingNaN);
  Result r = Add(snan, D("1"));
  EXPECT_EQ(Decode(r.value).kind, Kind::kQuietNaN);
  EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagInvalid));
}

// ---------------------------------------------------------------------------
// Comparisons.

TEST(Decimal128Test, ComparesAtThe34thDigit) {
  EXPECT_EQ(Compare(D("9999999999999999999999999999999999"), D("9999999999999999999999999999999998")), 1);
  EXPECT_EQ(Compare(D("1.000000000000000000000000000000001"), D("1")), 1);
  EXPECT_EQ(Compare(D("0.9999999999999999999999999999999999"), D("1")), -1);
  EXPECT_EQ(Compare(D("-1.000000000000000000000000000000001"), D("-1")), -1);
  // Cohorts of one value are equal.
  EXPECT_EQ(Compare(D("1.0"), D("1.000000000000000000000000000000000")), 0);
  EXPECT_EQ(Compare(D("100"), D("1E+2")), 0);
  EXPECT_EQ(Compare(D("1E+6144"), D("1000000000000000000000000000000000E+6111")), 0);
  // Beyond any binary precision: int64 neighbours.
  EXPECT_EQ(CompareToInt64(D("9223372036854775807.1"), INT64_MAX), 1);
  EXPECT_EQ(CompareToInt64(D("9223372036854775806.0000000001"), INT64_MAX - 1), 1);
  EXPECT_EQ(CompareToInt64(D("9223372036854775806.000"), INT64_MAX - 1), 0);
  EXPECT_EQ(CompareToInt64(D("-9223372036854775808"), INT64_MIN), 0);
  EXPECT_EQ(CompareToInt64(D("-9223372036854775808.5"), INT64_MIN), -1);
  EXPECT_EQ(CompareToInt64(D("1E+19"), INT64_MAX), 1);
  EXPECT_EQ(CompareToInt64(D("5E-6176"), 0), 1);
}

TEST(Decimal128Test, ComparesExactlyWithDoubles) {
  // The double 0.1 is 0.1000000000000000055511151231257827021181583404541015625.
  EXPECT_EQ(CompareToDouble(D("0.1000000000000000055511151231257827"), 0.1), -1);
  EXPECT_EQ(CompareToDouble(D("0.1000000000000000055511151231257828"), 0.1), 1);
  EXPECT_EQ(CompareToDouble(D("0.1"), 0.1), -1);
  EXPECT_EQ(CompareToDouble(D("0.5"), 0.5), 0);
  EXPECT_EQ(CompareToDouble(D("9007199254740993"), 9007199254740992.0), 1);
  EXPECT_EQ(CompareToDouble(D("-9007199254740993"), -9007199254740992.0), -1);
  EXPECT_EQ(CompareToDouble(D("1.7976931348623157E+308"), DBL_MAX), -1);  // DBL_MAX is 1.797...8570E+308
  // Beyond the double range.
  EXPECT_EQ(CompareToDouble(D("1E+400"), DBL_MAX), 1);
  EXPECT_EQ(CompareToDouble(D("1E+400"), HUGE_VAL), -1);
  EXPECT_EQ(CompareToDouble(D("-1E+400"), -HUGE_VAL), 1);
  EXPECT_EQ(CompareToDouble(D("-1E+400"), -DBL_MAX), -1);
  // 1E-400 is above 0 and below the smallest subnormal double (4.9E-324),
  // so below every positive double.
  const double min_sub = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(CompareToDouble(D("1E-400"), 0.0), 1);
  EXPECT_EQ(CompareToDouble(D("1E-400"), -0.0), 1);
  EXPECT_EQ(CompareToDouble(D("1E-400"), min_sub), -1);
  EXPECT_EQ(CompareToDouble(D("-1E-400"), -min_sub), 1);
  EXPECT_EQ(CompareToDouble(D("4.940656458412465441765687928682213E-324"), min_sub), -1);
  EXPECT_EQ(CompareToDouble(D("4.940656458412465441765687928682214E-324"), min_sub), 1);
  // Zeros, infinities, NaN.
  EXPECT_EQ(CompareToDouble(D("-0"), 0.0), 0);
  EXPECT_EQ(CompareToDouble(D("0E+300"), -0.0), 0);
  EXPECT_EQ(CompareToDouble(D("Infinity"), HUGE_VAL), 0);
  EXPECT_EQ(CompareToDouble(D("-Infinity"), -HUGE_VAL), 0);
  EXPECT_EQ(CompareToDouble(D("-Infinity"), -DBL_MAX), -1);
  EXPECT_EQ(CompareToDouble(D("NaN"), NAN), 0);
  EXPECT_EQ(CompareToDouble(D("NaN"), -HUGE_VAL), -1);
  EXPECT_EQ(CompareToDouble(D("-Infinity"), NAN), 1);
  EXPECT_EQ(Compare(D("NaN"), D("-Infinity")), -1);
  EXPECT_EQ(Compare(D("NaN"), D("-NaN")), 0);
  EXPECT_EQ(CompareToInt64(D("NaN"), INT64_MIN), -1);
}

// An independent exact comparison: GMP rationals from the decimal's string
// and from the double's exact value (mpq_set_d is exact).
class Rational {
 public:
  Rational() { mpq_init(q_); }
  ~Rational() { mpq_clear(q_); }
  Rational(const Rational&) = delete;
  Rational& operator=(const Rational&) = delete;
  mpq_ptr get() { return q_; }

  // REQUIRES: a finite decimal.
  void SetDecimal(const bson_decimal128_t& d) {
    Parts p = Decode(d);
    char digits[kPrecision];
    int n = CoefficientDigits(p.coefficient, digits);
    std::string num(digits, static_cast<size_t>(n)), den = "1";
    if (p.exponent >= 0) {
      num += std::string(static_cast<size_t>(p.exponent), '0');
    } else {
      den += std::string(static_cast<size_t>(-p.exponent), '0');
    }
    std::string text = (p.negative ? "-" : "") + num + "/" + den;
    ASSERT_EQ(mpq_set_str(q_, text.c_str(), 10), 0);
    mpq_canonicalize(q_);
  }

 private:
  mpq_t q_;
};

int Sign(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

TEST(Decimal128Test, RandomComparisonsAgreeWithRationals) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.5, 1.0);
  for (int i = 0; i < 20000; ++i) {
    // Decimals near doubles' magnitudes (and some anywhere).
    bson_decimal128_t d = i % 10 == 0 ? RandomFinite(rng) : RandomFinite(rng, -360, 300);
    double x;
    switch (i % 4) {
      case 0: x = std::ldexp(unit(rng), static_cast<int>(rng() % 2100) - 1075); break;
      case 1: x = ToDouble(d); break;  // the nearest double: the hard cases
      case 2: x = std::nextafter(ToDouble(d), rng() & 1 ? HUGE_VAL : -HUGE_VAL); break;
      default: x = static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 8; break;
    }
    if (rng() & 1) x = -x;
    if (std::isinf(x) || std::isnan(x)) continue;
    Rational a, b;
    a.SetDecimal(d);
    mpq_set_d(b.get(), x);
    int expected = Sign(mpq_cmp(a.get(), b.get()));
    ASSERT_EQ(CompareToDouble(d, x), expected) << ToString(d) << " vs " << x;
    // Decimal against decimal, and against int64.
    bson_decimal128_t e = i % 3 == 0 ? RandomFinite(rng) : RandomFinite(rng, Decode(d).exponent - 40, Decode(d).exponent + 5);
    Rational c;
    c.SetDecimal(e);
    ASSERT_EQ(Compare(d, e), Sign(mpq_cmp(a.get(), c.get()))) << ToString(d) << " vs " << ToString(e);
    int64_t k = static_cast<int64_t>(rng());
    if (i % 2) k >>= rng() % 63;
    mpq_set_si(b.get(), 0, 1);
    mpz_set_si(mpq_numref(b.get()), static_cast<long>(k));
    ASSERT_EQ(CompareToInt64(d, k), Sign(mpq_cmp(a.get(), b.get()))) << ToString(d) << " vs " << k;
  }
}

// ---------------------------------------------------------------------------
// Conversions.

TEST(Decimal128Test, FromDoubleFollowsMongoDB) {
  EXPECT_EQ(ToString(FromDouble(0.1)), "0.100000000000000");
  EXPECT_EQ(ToString(FromDouble(1.1)), "1.10000000000000");
  EXPECT_EQ(ToString(FromDouble(1.0)), "1.00000000000000");
  EXPECT_EQ(ToString(FromDouble(-2.5)), "-2.50000000000000");
  EXPECT_EQ(ToString(FromDouble(100000.0)), "100000.000000000");       // the guess is retried
  EXPECT_EQ(ToString(FromDouble(0.00001)), "0.0000100000000000000");  // likewise
  EXPECT_EQ(ToString(FromDouble(0.9999999999999994)), "0.999999999999999");
  EXPECT_EQ(ToString(FromDouble(1e300)), "1.00000000000000E+300");
  EXPECT_EQ(ToString(FromDouble(DBL_MAX)), "1.79769313486232E+308");
  EXPECT_EQ(ToString(FromDouble(std::numeric_limits<double>::denorm_min())), "4.94065645841247E-324");
  EXPECT_EQ(ToString(FromDouble(0.0)), "0");
  EXPECT_EQ(ToString(FromDouble(-0.0)), "-0");
  EXPECT_EQ(ToString(FromDouble(HUGE_VAL)), "Infinity");
  EXPECT_EQ(ToString(FromDouble(-HUGE_VAL)), "-Infinity");
  EXPECT_EQ(ToString(FromDouble(NAN)), "NaN");
  // 34 digits: the exact value rounded.
  EXPECT_EQ(ToString(FromDouble(0.1, DoublePrecision::k34Digits)), "0.1000000000000000055511151231257827");
  EXPECT_EQ(ToString(FromDouble(1.0, DoublePrecision::k34Digits)), "1");
  EXPECT_EQ(ToString(FromDouble(0.5, DoublePrecision::k34Digits)), "0.5");
  EXPECT_EQ(ToString(FromDouble(1e300, DoublePrecision::k34Digits)), "1.000000000000000052504760255204420E+300");
  // Every 15-digit result has exactly 15 digits.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v) || v == 0) continue;
    Parts p = Decode(FromDouble(v));
    char digits[kPrecision];
    ASSERT_EQ(CoefficientDigits(p.coefficient, digits), 15) << v;
  }
}

TEST(Decimal128Test, ToDoubleIsCorrectlyRounded) {
  EXPECT_EQ(ToDouble(D("0.1")), 0.1);
  EXPECT_EQ(ToDouble(D("9007199254740993")), 9007199254740992.0);  // a tie: to even
  EXPECT_EQ(ToDouble(D("9007199254740995")), 9007199254740996.0);
  EXPECT_EQ(ToDouble(D("1E+400")), HUGE_VAL);
  EXPECT_EQ(ToDouble(D("-1E+400")), -HUGE_VAL);
  EXPECT_EQ(ToDouble(D("1E-400")), 0.0);
  EXPECT_TRUE(std::signbit(ToDouble(D("-1E-400"))));
  EXPECT_EQ(ToDouble(D("4.9E-324")), std::numeric_limits<double>::denorm_min());
  EXPECT_TRUE(std::isnan(ToDouble(D("NaN"))));
  EXPECT_EQ(ToDouble(D("-Infinity")), -HUGE_VAL);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 5000; ++i) {
    bson_decimal128_t d = RandomFinite(rng, -340, 300);
    std::string s = ToString(d);
    ASSERT_EQ(ToDouble(d), std::strtod(s.c_str(), nullptr)) << s;
  }
}

TEST(Decimal128Test, ToInt64) {
  EXPECT_EQ(ToInt64Truncated(D("2.9")), 2);
  EXPECT_EQ(ToInt64Truncated(D("-2.9")), -2);
  EXPECT_EQ(ToInt64Truncated(D("9223372036854775807.9")), INT64_MAX);
  EXPECT_EQ(ToInt64Truncated(D("-9223372036854775808.9")), INT64_MIN);
  EXPECT_EQ(ToInt64Truncated(D("9223372036854775808")), std::nullopt);
  EXPECT_EQ(ToInt64Truncated(D("1E-6176")), 0);
  EXPECT_EQ(ToInt64Truncated(D("1E+19")), std::nullopt);
  EXPECT_EQ(ToInt64Truncated(D("0E+6000")), 0);
  EXPECT_EQ(ToInt64Truncated(D("NaN")), std::nullopt);
  EXPECT_EQ(ToInt64Truncated(D("Infinity")), std::nullopt);
  EXPECT_EQ(ToInt64Exact(D("2E1")), 20);
  EXPECT_EQ(ToInt64Exact(D("20.000")), 20);
  EXPECT_EQ(ToInt64Exact(D("2.5")), std::nullopt);
  EXPECT_EQ(ToInt64Exact(D("-9223372036854775808")), INT64_MIN);
  EXPECT_EQ(ToInt64Exact(D("9223372036854775808")), std::nullopt);
  EXPECT_EQ(ToString(FromInt64(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(ToString(FromInt64(0)), "0");
  EXPECT_TRUE(SameBytes(FromInt64(-5), D("-5")));
}

TEST(Decimal128Test, FromStringTakesMongoDBsForms) {
  EXPECT_EQ(ToString(FromString("1.5").value), "1.5");
  EXPECT_EQ(ToString(FromString(".5").value), "0.5");
  EXPECT_EQ(ToString(FromString("5.").value), "5");
  EXPECT_EQ(ToString(FromString("-1E+3").value), "-1E+3");
  EXPECT_EQ(ToString(FromString("1e-3").value), "0.001");
  EXPECT_EQ(ToString(FromString("INF").value), "Infinity");
  EXPECT_EQ(ToString(FromString("-Infinity").value), "-Infinity");
  EXPECT_EQ(ToString(FromString("nan").value), "NaN");
  EXPECT_EQ(FromString("nan").flags, 0u);
  // Rounded to 34 digits, half even.
  Result r = FromString("1.00000000000000000000000000000000050");
  EXPECT_EQ(ToString(r.value), "1.000000000000000000000000000000000");
  EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagInexact));
  r = FromString("1E+7000");
  EXPECT_EQ(ToString(r.value), "Infinity");
  EXPECT_TRUE(r.flags & kFlagOverflow);
  EXPECT_EQ(FromString("0E+7000").flags, 0u);
  for (const char* bad : {"", ".", "e5", "1e", "1e+", "1.2.3", "abc", " 1", "1 ", "snan", "nan1", "0x10", "1e5.5"}) {
    r = FromString(bad);
    EXPECT_TRUE(IsNaN(r.value)) << bad;
    EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagInvalid)) << bad;
  }
}

// ---------------------------------------------------------------------------
// Arithmetic.

std::string S(const Result& r) { return ToString(r.value); }

TEST(Decimal128Test, ArithmeticKeepsIEEECohorts) {
  EXPECT_EQ(S(Add(D("1.0"), D("1.00"))), "2.00");
  EXPECT_EQ(S(Add(D("0.1"), D("0.2"))), "0.3");
  EXPECT_EQ(S(Subtract(D("1"), D("1"))), "0");
  EXPECT_EQ(S(Subtract(D("-0"), D("0"))), "-0");
  EXPECT_EQ(S(Multiply(D("1.5"), D("2.0"))), "3.00");
  EXPECT_EQ(S(Divide(D("6"), D("2"))), "3");
  EXPECT_EQ(S(Divide(D("1"), D("4"))), "0.25");
  EXPECT_EQ(S(Divide(D("6.0"), D("2"))), "3.0");
  Result third = Divide(D("1"), D("3"));
  EXPECT_EQ(S(third), "0.3333333333333333333333333333333333");
  EXPECT_EQ(third.flags, static_cast<uint32_t>(kFlagInexact));
  EXPECT_EQ(S(Add(D("9999999999999999999999999999999999"), D("1"))), "1.000000000000000000000000000000000E+34");
  // Division by zero, invalid operations.
  Result r = Divide(D("-1"), D("0"));
  EXPECT_EQ(S(r), "-Infinity");
  EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagDivisionByZero));
  r = Divide(D("0"), D("0"));
  EXPECT_TRUE(IsNaN(r.value));
  EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagInvalid));
  EXPECT_EQ(Subtract(D("Infinity"), D("Infinity")).flags, static_cast<uint32_t>(kFlagInvalid));
  EXPECT_EQ(Multiply(D("0"), D("-Infinity")).flags, static_cast<uint32_t>(kFlagInvalid));
  // The range: 1E6144 is representable; ten times the largest overflows.
  EXPECT_EQ(S(Multiply(D("1E+6143"), D("10"))), "1.000000000000000000000000000000000E+6144");
  r = Multiply(D("9.999999999999999999999999999999999E+6144"), D("10"));
  EXPECT_EQ(S(r), "Infinity");
  EXPECT_TRUE(r.flags & kFlagOverflow);
  // Subnormals: the smallest is 1E-6176; half of it rounds to zero (even).
  EXPECT_EQ(S(Divide(D("1E-6175"), D("10"))), "1E-6176");
  r = Divide(D("1E-6176"), D("2"));
  EXPECT_EQ(S(r), "0E-6176");
  EXPECT_EQ(r.flags, static_cast<uint32_t>(kFlagInexact | kFlagUnderflow));
  EXPECT_EQ(S(Divide(D("3E-6176"), D("2"))), "2E-6176");
  EXPECT_EQ(S(Multiply(D("1.234E-6170"), D("1"))), "1.234E-6170");  // exact subnormal, no flag
  EXPECT_EQ(Multiply(D("1.234E-6170"), D("1")).flags, 0u);
}

TEST(Decimal128Test, RemainderIsMongoDBsMod) {
  EXPECT_EQ(S(Remainder(D("7"), D("2"))), "1");
  EXPECT_EQ(S(Remainder(D("-7"), D("2"))), "-1");
  EXPECT_EQ(S(Remainder(D("7"), D("-2"))), "1");
  EXPECT_EQ(S(Remainder(D("7.5"), D("2"))), "1.5");
  EXPECT_EQ(S(Remainder(D("-7.50"), D("2"))), "-1.50");
  EXPECT_EQ(S(Remainder(D("6"), D("3"))), "0");
  EXPECT_EQ(S(Remainder(D("-6"), D("3"))), "-0");
  EXPECT_EQ(S(Remainder(D("5"), D("Infinity"))), "5");
  EXPECT_EQ(Remainder(D("5"), D("0")).flags, static_cast<uint32_t>(kFlagInvalid));
  EXPECT_EQ(Remainder(D("Infinity"), D("3")).flags, static_cast<uint32_t>(kFlagInvalid));
  // A quotient far beyond 34 digits: still exact.  10^100 mod 7 = 4
  // (10^6 = 1 mod 7, 10^100 = 10^4 = 4 mod 7).
  Result r = Remainder(D("1E+100"), D("7"));
  EXPECT_EQ(S(r), "4");
  EXPECT_EQ(r.flags, 0u);
  // 10^6144 mod 7: 6144 = 6 * 1024, so 1.
  EXPECT_EQ(S(Remainder(D("1E+6144"), D("7"))), "1");
  EXPECT_EQ(S(Remainder(D("-1E+6144"), D("0.7"))), "-0.3");  // 10^6145 mod 7 = 3
  EXPECT_EQ(S(Remainder(D("1E-6176"), D("1E+6144"))), "1E-6176");
}

TEST(Decimal128Test, RoundTruncCeilFloorAsMongoDB) {
  EXPECT_EQ(S(Round(D("2.5"), 0)), "2");
  EXPECT_EQ(S(Round(D("3.5"), 0)), "4");
  EXPECT_EQ(S(Round(D("-1.25"), 1)), "-1.2");
  EXPECT_EQ(S(Round(D("1.2345"), 2)), "1.23");
  EXPECT_EQ(S(Round(D("1234"), -2)), "1.2E+3");
  EXPECT_EQ(S(Round(D("1"), 2)), "1.00");
  EXPECT_EQ(S(Round(D("-0"), 1)), "-0.0");
  EXPECT_EQ(S(Round(D("1E+40"), 0)), "1.000000000000000000000000000000000E+40");
  EXPECT_EQ(S(Round(D("Infinity"), 2)), "Infinity");
  EXPECT_TRUE(IsNaN(Round(D("NaN"), 2).value));
  EXPECT_EQ(S(Trunc(D("2.79"), 1)), "2.7");
  EXPECT_EQ(S(Trunc(D("-2.79"), 0)), "-2");
  EXPECT_EQ(S(Ceil(D("1.1"))), "2");
  EXPECT_EQ(S(Ceil(D("-0.5"))), "-0");
  EXPECT_EQ(S(Floor(D("-1.1"))), "-2");
  EXPECT_EQ(S(Floor(D("5"))), "5");
  EXPECT_EQ(S(Floor(D("-Infinity"))), "-Infinity");
  EXPECT_EQ(Round(D("1.25"), 1).flags, static_cast<uint32_t>(kFlagInexact));
}

TEST(Decimal128Test, FunctionsAndSigns) {
  EXPECT_EQ(S(Sqrt(D("4"))), "2");
  EXPECT_EQ(S(Sqrt(D("2"))), "1.414213562373095048801688724209698");
  EXPECT_EQ(S(Sqrt(D("0.0100"))), "0.10");
  EXPECT_EQ(Sqrt(D("-1")).flags, static_cast<uint32_t>(kFlagInvalid));
  EXPECT_EQ(S(Exp(D("0"))), "1");
  EXPECT_EQ(S(Exp(D("1"))), "2.718281828459045235360287471352662");
  EXPECT_EQ(S(Ln(D("1"))), "0");
  EXPECT_EQ(S(Ln(D("0"))), "-Infinity");
  EXPECT_EQ(Ln(D("-1")).flags, static_cast<uint32_t>(kFlagInvalid));
  EXPECT_EQ(S(Log10(D("1000"))), "3");
  EXPECT_EQ(S(Log10(D("2"))), "0.3010299956639811952137388947244930");
  EXPECT_EQ(S(Pow(D("2"), D("3"))), "8.000000000000000000000000000000000");
  EXPECT_EQ(S(Pow(D("2"), D("0.5"))), "1.414213562373095048801688724209698");
  EXPECT_EQ(S(Pow(D("0"), D("-1"))), "Infinity");
  EXPECT_EQ(ToString(Abs(D("-1.50"))), "1.50");
  EXPECT_EQ(ToString(Negate(D("0"))), "-0");
  EXPECT_EQ(ToString(Negate(D("-Infinity"))), "Infinity");
  EXPECT_TRUE(IsNaN(Abs(D("NaN"))));
}

TEST(Decimal128Test, BracketMagnitudeTruncatesTo64Bits) {
  auto bracket = [](const char* s) {
    Parts p = Decode(D(s));
    return BracketMagnitude(p.coefficient, p.exponent);
  };
  BinaryBracket b = bracket("5");
  EXPECT_TRUE(b.exact);
  EXPECT_EQ(b.exponent, 3);
  EXPECT_EQ(b.mantissa, uint64_t{5} << 61);
  b = bracket("0.5");
  EXPECT_TRUE(b.exact);
  EXPECT_EQ(b.exponent, 0);
  EXPECT_EQ(b.mantissa, uint64_t{1} << 63);
  b = bracket("18446744073709551615");  // 2^64 - 1: 64 bits, exact
  EXPECT_TRUE(b.exact);
  EXPECT_EQ(b.mantissa, ~uint64_t{0});
  b = bracket("18446744073709551617");  // 2^64 + 1: not
  EXPECT_FALSE(b.exact);
  EXPECT_EQ(b.exponent, 65);
  EXPECT_EQ(b.mantissa, uint64_t{1} << 63);
  EXPECT_FALSE(bracket("0.1").exact);
  EXPECT_TRUE(bracket("1E+27").exact);   // 5^27 < 2^64
  EXPECT_FALSE(bracket("1E+28").exact);  // 5^28 > 2^64
  EXPECT_TRUE(bracket("0.0000152587890625").exact);  // 2^-16
  // Against the rationals: M * 2^(E-64) <= |d| < (M+1) * 2^(E-64).
  std::mt19937_64 rng(5);
  for (int i = 0; i < 10000; ++i) {
    // Half near 1 (the 128-bit fast paths: integers, and exponents down to
    // -19), half anywhere (GMP).
    bson_decimal128_t d = i % 2 ? RandomFinite(rng) : RandomFinite(rng, -40, 5);
    Parts p = Decode(d);
    if (p.coefficient == 0) continue;
    p.negative = false;
    b = BracketMagnitude(p.coefficient, p.exponent);
    ASSERT_GE(b.mantissa, uint64_t{1} << 63);
    Rational x, lo, hi;
    x.SetDecimal(Encode(p));
    mpz_set_ui(mpq_numref(lo.get()), b.mantissa);
    mpz_set_ui(mpq_numref(hi.get()), b.mantissa);
    mpz_add_ui(mpq_numref(hi.get()), mpq_numref(hi.get()), 1);
    int shift = b.exponent - 64;
    for (Rational* r : {&lo, &hi}) {
      mpz_set_ui(mpq_denref(r->get()), 1);
      if (shift >= 0) {
        mpq_mul_2exp(r->get(), r->get(), static_cast<mp_bitcnt_t>(shift));
      } else {
        mpq_div_2exp(r->get(), r->get(), static_cast<mp_bitcnt_t>(-shift));
      }
    }
    int c = mpq_cmp(lo.get(), x.get());
    ASSERT_LE(c, 0) << ToString(d);
    ASSERT_EQ(c == 0, b.exact) << ToString(d);
    ASSERT_LT(mpq_cmp(x.get(), hi.get()), 0) << ToString(d);
  }
}

#ifdef GATEDB_HAVE_GCC_DECIMAL
// The differential check that says why decNumber can stand in for MongoDB's
// Intel library: GCC's std::decimal::decimal128 is libgcc's BID code, Intel's
// (MongoDB links IntelRDFPMathLib); the four operations IEEE defines exactly
// must give the same 16 bytes (value and cohort), NaNs aside (both NaN).
using GccBits = std::decimal::decimal128::__decfloat128;  // the 16 BID bytes

std::decimal::decimal128 Gcc(const bson_decimal128_t& d) {
  GccBits raw;
  static_assert(sizeof raw == sizeof d, "decimal128 is 16 bytes");
  std::memcpy(&raw, &d, sizeof d);
  return std::decimal::decimal128(raw);
}

bson_decimal128_t FromGcc(std::decimal::decimal128 g) {
  GccBits raw = g.__getval();
  bson_decimal128_t d;
  std::memcpy(&d, &raw, sizeof d);
  return d;
}

// |got - truth| in units of the 34th significant digit of truth (truth
// given to 40+ digits; both positive or both negative).
double UlpsFrom(const bson_decimal128_t& got, const char* truth) {
  // Exact in decNumber: truth rounded to 34 digits differs from truth by
  // at most half a unit, well below the tolerances used.
  const bson_decimal128_t t = FromString(truth).value;
  const Parts p = Decode(t);
  const int digits = CoefficientDigits(p.coefficient, std::vector<char>(34).data());
  const int ulp_exponent = p.exponent + digits - 34;
  const Result diff = Subtract(got, t);
  Parts d = Decode(Abs(diff.value));
  char buf[64];
  std::snprintf(buf, sizeof buf, "1E%d", ulp_exponent);
  return ToDouble(Divide(Encode(d), FromString(buf).value).value);
}

// The functions IEEE leaves to the implementation are Intel's, MongoDB's:
// within a unit or two of the true value, and where Intel is not correctly
// rounded, Intel's digits (sin(1) rounds to ...302990; Intel, and so
// MongoDB, say ...302991).
TEST(Decimal128Test, TranscendentalsAreIntelsAndAccurate) {
  struct Case {
    const char* name;
    Result got;
    const char* truth;
  } cases[] = {
      {"sin(1)", Sin(D("1")), "0.841470984807896506652502321630298999622563"},
      {"cos(1)", Cos(D("1")), "0.540302305868139717400936607442976603732310"},
      {"tan(1)", Tan(D("1")), "1.557407724654902230506974807458360173087251"},
      {"asin(0.5)", Asin(D("0.5")), "0.523598775598298873077107230546583814032862"},
      {"acos(0)", Acos(D("0")), "1.570796326794896619231321691639751442098585"},
      {"atan(1)", Atan(D("1")), "0.785398163397448309615660845819875721049292"},
      {"atan2(1,-1)", Atan2(D("1"), D("-1")), "2.356194490192344928846982537459627163147877"},
      {"sinh(1)", Sinh(D("1")), "1.175201193643801456882381850595600815155718"},
      {"cosh(1)", Cosh(D("1")), "1.543080634815243778477905620757061682601529"},
      {"tanh(1)", Tanh(D("1")), "0.761594155955764888119458282604793590412768"},
      {"asinh(1)", Asinh(D("1")), "0.881373587019543025232609324979792309028160"},
      {"acosh(2)", Acosh(D("2")), "1.316957896924816708625046347307968444026981"},
      {"atanh(0.5)", Atanh(D("0.5")), "0.549306144334054845697622618461262852323745"},
      {"exp(1)", Exp(D("1")), "2.718281828459045235360287471352662497757247"},
      {"ln(2)", Ln(D("2")), "0.693147180559945309417232121458176568075500"},
      {"log2(10)", Log2(D("10")), "3.321928094887362347870319429489390175864831"},
      {"log10(2)", Log10(D("2")), "0.301029995663981195213738894724493026768190"},
      // $log's base 3 as MongoDB computes it: ln(100) / 3 (not / ln(3)).
      {"log(100, 3)", Log(D("100"), D("3")), "1.535056728662697122678660969789576138400734"},
      {"pow(3, 0.5)", Pow(D("3"), D("0.5")), "1.732050807568877293527446341505872366942805"},
  };
  for (const Case& c : cases) {
    // Two units from the truth, plus half a unit: UlpsFrom measures from
    // the truth rounded to 34 digits.
    EXPECT_LE(UlpsFrom(c.got.value, c.truth), 2.5) << c.name << " = " << ToString(c.got.value);
    EXPECT_EQ(c.got.flags, static_cast<uint32_t>(kFlagInexact)) << c.name;
  }
  // A correctly rounded library gives ...302990; MongoDB's library does not.
  EXPECT_EQ(S(Sin(D("1"))), "0.8414709848078965066525023216302991");

  // Exact cases, and MongoDB's special bases: log2(8) and log(8, 2) are 3,
  // 10^3 is computed by exp10 and comes back in its 34-digit cohort.
  EXPECT_EQ(S(Log2(D("8"))), "3");
  EXPECT_EQ(S(Log(D("8"), D("2"))), "3");
  EXPECT_EQ(S(Log(D("1000"), D("10.0"))), "3");
  EXPECT_EQ(S(Pow(D("10"), D("3"))), "1000.000000000000000000000000000000");
  // Intel's cohorts, which MongoDB shows as they are.
  EXPECT_EQ(S(Cos(D("0"))), "1.000000000000000000000000000000000");
  EXPECT_TRUE(IsZero(Sin(D("0")).value));

  // Outside the domains: NaN with kFlagInvalid; poles are infinities.
  for (const Result& r : {Asin(D("2")), Acos(D("-1.5")), Acosh(D("0.5")), Atanh(D("2")), Sin(D("Infinity")),
                          Ln(D("-1"))}) {
    EXPECT_TRUE(IsNaN(r.value)) << S(r);
    EXPECT_TRUE(r.flags & kFlagInvalid) << S(r);
  }
  EXPECT_EQ(S(Ln(D("0"))), "-Infinity");
  EXPECT_EQ(S(Atanh(D("1"))), "Infinity");
  EXPECT_TRUE(IsNaN(Cos(D("NaN")).value));
  EXPECT_EQ(Cos(D("NaN")).flags, 0u);
}

// The rounding state is per call: threads computing at once get the
// answers one thread gets.
TEST(Decimal128Test, TranscendentalsAreThreadSafe) {
  std::vector<bson_decimal128_t> args;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) args.push_back(RandomFinite(rng, -36, 2));
  std::vector<std::string> expected;
  for (const bson_decimal128_t& a : args) expected.push_back(S(Sin(a)) + S(Atan2(a, D("3"))) + S(Exp(a)));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < args.size(); ++i) {
          if (S(Sin(args[i])) + S(Atan2(args[i], D("3"))) + S(Exp(args[i])) != expected[i]) ++mismatches;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

std::vector<bson_decimal128_t> Operands() {
  std::vector<bson_decimal128_t> out;
  for (const char* s :
       {"0", "-0", "0E-6176", "0E+6111", "1", "-1", "1.0", "0.1", "3", "7", "10", "1E+6144", "-1E+6144",
        "9.999999999999999999999999999999999E+6144", "1E-6176", "-1E-6176", "1E-6143",
        "9999999999999999999999999999999999", "1000000000000000000000000000000000",
        "0.3333333333333333333333333333333333", "5E-6176", "1.5", "2.5", "-2.5", "123456789012345678901234567890.1234",
        "Infinity", "-Infinity", "NaN"}) {
    out.push_back(D(s));
  }
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 120; ++i) out.push_back(RandomFinite(rng));
  for (int i = 0; i < 120; ++i) out.push_back(RandomFinite(rng, -40, 40));  // cancellations, carries
  for (int i = 0; i < 40; ++i) out.push_back(RandomFinite(rng, kMinExponent, kMinExponent + 40));  // subnormals
  for (int i = 0; i < 40; ++i) out.push_back(RandomFinite(rng, kMaxExponent - 40, kMaxExponent));  // overflow
  return out;
}

// This binary also calls Intel's functions (TranscendentalsAre...), whose
// archive defines libgcc's __bid128_add, __bid128_mul, ... with another
// calling convention: GCC's operators below reach libgcc's own only
// because engine/CMakeLists.txt keeps Intel's symbols local.
TEST(Decimal128Test, MatchesGccBidByteForByte) {
  const std::vector<bson_decimal128_t> ops = Operands();
  size_t checked = 0;
  for (const bson_decimal128_t& a : ops) {
    for (const bson_decimal128_t& b : ops) {
      struct Case {
        const char* name;
        Result ours;
        std::decimal::decimal128 theirs;
      } cases[] = {
          {"+", Add(a, b), Gcc(a) + Gcc(b)},
          {"-", Subtract(a, b), Gcc(a) - Gcc(b)},
          {"*", Multiply(a, b), Gcc(a) * Gcc(b)},
          {"/", Divide(a, b), Gcc(a) / Gcc(b)},
      };
      for (const Case& c : cases) {
        bson_decimal128_t theirs = FromGcc(c.theirs);
        ++checked;
        if (IsNaN(theirs) || IsNaN(c.ours.value)) {
          ASSERT_EQ(IsNaN(theirs), IsNaN(c.ours.value)) << ToString(a) << " " << c.name << " " << ToString(b);
          continue;
        }
        ASSERT_TRUE(SameBytes(c.ours.value, theirs))
            << ToString(a) << " " << c.name << " " << ToString(b) << ": ours " << ToString(c.ours.value) << " ("
            << Hex(c.ours.value) << "), GCC " << ToString(theirs) << " (" << Hex(theirs) << ")";
      }
    }
  }
  EXPECT_GT(checked, 4 * 100000u);
}

TEST(Decimal128Test, FromDouble34MatchesGcc) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (i % 4 == 0) v = static_cast<double>(static_cast<int64_t>(rng() % 100000) - 50000) / 64;
    if (std::isnan(v)) continue;
    bson_decimal128_t ours = FromDouble(v, DoublePrecision::k34Digits);
    bson_decimal128_t theirs = FromGcc(std::decimal::decimal128(v));
    ASSERT_TRUE(SameBytes(ours, theirs)) << v << ": ours " << ToString(ours) << ", GCC " << ToString(theirs);
  }
}
#endif  // GATEDB_HAVE_GCC_DECIMAL

}  // namespace
}  // namespace decimal
}  // namespace gatedb
