// File: engine/decimal/decimal128.h
//
// MongoDB's Decimal128 semantics on BSON's decimal128 bytes (libbson's
// bson_decimal128_t: IEEE 754-2008 decimal128 in the binary integer
// decimal (BID) encoding, the 16 bytes MongoDB stores): decoding and
// encoding, exact comparison with every BSON number type in MongoDB's
// order, conversions, and arithmetic in the decimal128 context.
//
// Which libraries, and why:
//   - The operations IEEE 754 defines exactly (add, subtract, multiply,
//     divide, remainder, quantize, sqrt) are IBM's decNumber
//     (libdecnumber.a from Debian's libdfp-dev), the reference
//     implementation of the General Decimal Arithmetic specification that
//     IEEE 754-2008 decimal follows, used with the decimal128 context: 34
//     digits, emax 6144, emin -6143, clamp 1, rounding half even.  Its
//     results (value and cohort, that is the exponent too) are IEEE's, so
//     they are the bytes MongoDB's Intel library gives; decimal128_test
//     checks Add/Subtract/Multiply/Divide byte for byte against GCC's
//     std::decimal::decimal128 (libgcc's BID, Intel's code) on random and
//     edge operands.
//   - The functions IEEE leaves to the implementation (exp, logarithms,
//     pow, trigonometric and hyperbolic) are Intel's Decimal
//     Floating-Point Math Library (Debian's libintelrdfpmath-dev), which
//     MongoDB's Decimal128 calls: its results are not correctly rounded,
//     so only the same code gives the same last digit.  It is linked
//     isolated (decimal_bid.cc says why), through decimal_bid.h.
//   - Exact relations between a decimal and a binary number (a double, the
//     64-bit binary neighbours of a decimal for index keys) use GMP
//     (mpz) integers, after fast paths in 128-bit integers.
//   - Not GCC's <decimal/decimal> (TR 24733), which the issue suggested:
//     clang, which builds the libFuzzer targets (scripts/fuzz.sh) and the
//     -Wthread-safety CI build, has no decimal floating point (clang++
//     rejects the header: "unknown machine mode 'SD'"), and libgcc's BID
//     routines have no quantize, sqrt, exp, ln, log10 or pow and no exact
//     comparison with a binary double.  GCC's type is used only as the
//     reference in decimal128_test (compiled under GCC only).
//
// Nothing here hand-writes decimal arithmetic or rounding: the
// operations below are decNumber's or Intel's; what this file adds is the
// BID bit layout, integer comparisons of decoded coefficients, and
// MongoDB's choices (its order, its Decimal128(double), its quantize, its
// power and logarithm special cases).
//
// Thread safety: pure functions (decNumber, Intel's libbidgcc000 and GMP
// keep no global state).
//
//   bson_decimal128_t a, b;
//   bson_decimal128_from_string("0.1", &a);
//   decimal::Result sum = decimal::Add(a, a);              // 0.2, flags 0
//   int c = decimal::CompareToDouble(a, 0.1);               // -1: 0.1 < double 0.1
#ifndef GATEDB_ENGINE_DECIMAL_DECIMAL128_H_
#define GATEDB_ENGINE_DECIMAL_DECIMAL128_H_

#include <bson/bson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gatedb {
namespace decimal {

using uint128 = unsigned __int128;

// The decimal128 format: value = (-1)^sign * coefficient * 10^exponent with
// coefficient < 10^34 and kMinExponent <= exponent <= kMaxExponent.
constexpr int kPrecision = 34;
constexpr int kMinExponent = -6176;  // the exponent of the smallest subnormal
constexpr int kMaxExponent = 6111;   // 10^34 - 1 times 10^6111 is the largest value

enum class Kind : uint8_t { kFinite, kInfinity, kQuietNaN, kSignalingNaN };

// The fields of a decimal128.  A finite value is
// (negative ? -1 : 1) * coefficient * 10^exponent.
struct Parts {
  Kind kind = Kind::kFinite;
  bool negative = false;  // the sign bit (also of zeros, infinities, NaNs)
  // Finite: < 10^34.  A NaN: its payload (< 10^33, else 0).  Infinity: 0.
  uint128 coefficient = 0;
  int32_t exponent = 0;  // finite only; 0 otherwise
};

// Reads the BID fields.  A non-canonical coefficient (>= 10^34, including
// every encoding with the "11" combination prefix that is not an infinity or
// a NaN) reads as zero with its exponent, as IEEE 754 says; a NaN payload
// that is not canonical reads as 0.
Parts Decode(const bson_decimal128_t& d);

// The canonical BID bytes of `p`.
// REQUIRES: for a finite p, coefficient < 10^34 and kMinExponent <=
// exponent <= kMaxExponent; for a NaN, coefficient < 10^33.
bson_decimal128_t Encode(const Parts& p);

bool IsNaN(const bson_decimal128_t& d);       // quiet or signaling
bool IsInfinity(const bson_decimal128_t& d);  // either sign
bool IsZero(const bson_decimal128_t& d);      // any cohort, either sign (finite only)

// ---------------------------------------------------------------------------
// Comparisons, MongoDB's order: by value, exactly; NaN equals NaN and sorts
// below every other number (-Infinity included); -0 equals 0; cohorts of
// one value (1.0, 1.00, 1E0) are equal.  Each returns -1, 0 or 1 as `a` is
// below, equal to or above the other operand.
//
// Decimal against decimal or int64: 128-bit integer arithmetic on the
// decoded coefficients (exponents are aligned only when the adjusted
// exponents are equal, so nothing overflows).  Against a double: an
// estimate of both binary magnitudes decides most pairs; the rest are exact
// products in 128-bit integers or, when those could overflow, GMP integers.
int Compare(const bson_decimal128_t& a, const bson_decimal128_t& b);
int CompareToInt64(const bson_decimal128_t& a, int64_t b);
int CompareToDouble(const bson_decimal128_t& a, double b);

// ---------------------------------------------------------------------------
// Results of operations that may round or fail: the value and IEEE's
// exception flags (which MongoDB's callers test, e.g. $toLong's kInvalid).
enum Flag : uint32_t {
  kFlagInexact = 1u << 0,
  kFlagUnderflow = 1u << 1,
  kFlagOverflow = 1u << 2,
  kFlagDivisionByZero = 1u << 3,
  kFlagInvalid = 1u << 4,  // the value is then a NaN
};

struct Result {
  bson_decimal128_t value;
  uint32_t flags = 0;  // Flag bits
};

// ---------------------------------------------------------------------------
// Conversions.

// Exact (at most 19 digits, exponent 0).
bson_decimal128_t FromInt64(int64_t v);

// MongoDB's Decimal128(double, RoundingPrecision).  k15Digits (MongoDB's
// default, used by $toDecimal, $convert and decimal arithmetic with a
// double operand): the double's exact value rounded half even to 34 digits
// and then quantized, half even, to exactly 15 significant digits (0.1 ->
// 0.100000000000000, 1.1 -> 1.10000000000000, 1e300 ->
// 1.00000000000000E+300).  k34Digits: the exact value rounded half even to
// 34 digits, in the cohort of the shortest exact decimal (1.0 -> 1, 0.5 ->
// 0.5, 0.1 -> 0.1000000000000000055511151231257827).  Zero, infinities and
// NaN convert as they are (a NaN to the positive quiet NaN).
enum class DoublePrecision { k15Digits, k34Digits };
bson_decimal128_t FromDouble(double v, DoublePrecision precision = DoublePrecision::k15Digits);

// MongoDB's Decimal128(string): [+-]digits[.digits][e[+-]digits] (either
// part of the coefficient may be empty, not both), or [+-]nan, inf or
// infinity, case-insensitive; rounded half even to 34 digits (kFlagInexact),
// overflowing to an infinity (kFlagOverflow).  Anything else gives NaN with
// kFlagInvalid (MongoDB's ConversionFailure).
Result FromString(std::string_view s);

// The nearest double, ties to even (MongoDB's toDouble): NaN for a NaN,
// +-Infinity beyond the double range, +-0 below its smallest subnormal.
double ToDouble(const bson_decimal128_t& d);

// The value truncated toward zero, when that fits in int64 (nullopt for
// NaN, infinities and out of range), as MongoDB's toLong(kRoundTowardZero).
std::optional<int64_t> ToInt64Truncated(const bson_decimal128_t& d);

// The value when it is an integer that fits in int64 (2.0 and 2E1 are;
// 2.5 is not), else nullopt.
std::optional<int64_t> ToInt64Exact(const bson_decimal128_t& d);

// libbson's format (bson_decimal128_to_string), which is MongoDB's:
// "0.1", "1.000", "1E+6144", "-0", "NaN", "Infinity".
std::string ToString(const bson_decimal128_t& d);

// ---------------------------------------------------------------------------
// Arithmetic in the decimal128 context (34 digits, half even), with IEEE's
// results including the cohort: 1.0 + 1.00 is 2.00, 6 / 2 is 3, 1 / 3 is
// 0.3333333333333333333333333333333333 (kFlagInexact).  Division of a
// non-zero finite number by zero is a signed infinity with
// kFlagDivisionByZero; 0/0, Inf-Inf, 0*Inf, operations on a signaling NaN
// are NaN with kFlagInvalid; a quiet NaN operand gives a quiet NaN.
Result Add(const bson_decimal128_t& a, const bson_decimal128_t& b);
Result Subtract(const bson_decimal128_t& a, const bson_decimal128_t& b);
Result Multiply(const bson_decimal128_t& a, const bson_decimal128_t& b);
Result Divide(const bson_decimal128_t& a, const bson_decimal128_t& b);

// MongoDB's $mod on decimals (its Decimal128::modulo, C's fmod): a - n * b
// with n = a / b truncated toward zero; exact, with a's sign (-7 mod 2 is
// -1, 7 mod -2 is 1), exponent min(a's, b's); whatever the size of the
// quotient (1E+6144 mod 7 is exact).  b = 0 or a infinite: NaN with
// kFlagInvalid; b infinite: a.
Result Remainder(const bson_decimal128_t& a, const bson_decimal128_t& b);

// Sign operations on the bits, as IEEE's abs and negate (NaNs included;
// no flags, no rounding).
bson_decimal128_t Abs(const bson_decimal128_t& d);
bson_decimal128_t Negate(const bson_decimal128_t& d);

// MongoDB's $round and $trunc of a decimal with `places` (MongoDB accepts
// -20..100): the value quantized to 10^-places, half even (Round) or
// toward zero (Trunc): Round(2.5, 0) is 2, Round(-1.25, 1) is -1.2,
// Round(1234, -2) is 1.2E+3, Trunc(2.79, 1) is 2.7.  As MongoDB's quantize
// does, a value whose 34-digit form has no digit at 10^-places (1E+40 at
// places 0) comes back in that 34-digit form, and infinities and NaNs come
// back as they are (a signaling NaN quieted, kFlagInvalid).
Result Round(const bson_decimal128_t& d, int places);
Result Trunc(const bson_decimal128_t& d, int places);
// MongoDB's $ceil and $floor of a decimal: quantized to 10^0 toward
// +Infinity / -Infinity, under the same rules (Ceil(1.1) is 2, Floor(-1.1)
// is -2, Ceil(-0.5) is -0).
Result Ceil(const bson_decimal128_t& d);
Result Floor(const bson_decimal128_t& d);

// decNumber's correctly rounded square root (IEEE 754 defines it exactly,
// so it is Intel's too): of a negative number NaN with kFlagInvalid;
// callers that refuse it (MongoDB's $sqrt) check first.
Result Sqrt(const bson_decimal128_t& d);

// ---------------------------------------------------------------------------
// The functions IEEE 754 recommends but does not define to one answer.  They
// are Intel's (libintelrdfpmath's bid128_*, the code and the configuration
// MongoDB's Decimal128 calls), so their digits are MongoDB's, last digit
// included: Intel's are not correctly rounded (sin(1) is
// 0.8414709848078965066525023216302991, one unit above the rounded true
// value), and a correctly rounded library would give other bytes.
//
// Outside a function's domain the result is NaN with kFlagInvalid (Ln(-1),
// Asin(2), Acosh(0.5), Atanh(2), Sin(Infinity)); Ln(0), Log10(0) and
// Log2(0) are -Infinity with kFlagDivisionByZero, Atanh(+-1) +-Infinity.
// MongoDB's operators refuse those arguments before calling (their error
// codes are the expression layer's); a quiet NaN gives a quiet NaN.
Result Exp(const bson_decimal128_t& d);
Result Ln(const bson_decimal128_t& d);
Result Log2(const bson_decimal128_t& d);
Result Log10(const bson_decimal128_t& d);
Result Sin(const bson_decimal128_t& d);
Result Cos(const bson_decimal128_t& d);
Result Tan(const bson_decimal128_t& d);
Result Asin(const bson_decimal128_t& d);
Result Acos(const bson_decimal128_t& d);
Result Atan(const bson_decimal128_t& d);
Result Sinh(const bson_decimal128_t& d);
Result Cosh(const bson_decimal128_t& d);
Result Tanh(const bson_decimal128_t& d);
Result Asinh(const bson_decimal128_t& d);
Result Acosh(const bson_decimal128_t& d);
Result Atanh(const bson_decimal128_t& d);
// The angle of the point (x, y), in (-pi, pi]: Intel's atan2(y, x).
Result Atan2(const bson_decimal128_t& y, const bson_decimal128_t& x);

// MongoDB's Decimal128::logarithm(base) for $log: Log2 for base 2, Log10
// for base 10, otherwise Ln(d) divided by the base itself, as MongoDB
// computes it (not by Ln(base): the README's Decimal128 notes).
Result Log(const bson_decimal128_t& d, const bson_decimal128_t& base);

// MongoDB's Decimal128::power: Intel's exp10(exponent) for base 10,
// exp2(exponent) for base 2, pow(base, exponent) otherwise, then, as
// MongoDB does, the result in its 34-digit cohort (2^3 is
// 8.000000000000000000000000000000000).  0 to a negative power is
// +Infinity (MongoDB's $pow refuses it first).
Result Pow(const bson_decimal128_t& base, const bson_decimal128_t& exponent);

// ---------------------------------------------------------------------------
// The binary neighbours of a decimal's magnitude, for order-preserving keys
// (engine/keys/key_format.h): for a finite non-zero |d| = c * 10^q,
//   |d| = (mantissa + f) * 2^(exponent - 64),  2^63 <= mantissa < 2^64,
//   0 <= f < 1,
// that is mantissa * 2^(exponent - 64) is |d| truncated to 64 significant
// bits (exponent is frexp's: |d| in [2^(exponent-1), 2^exponent)), and
// exact is f == 0.  The exponent covers decimal128's whole range (about
// -20516..20414).
struct BinaryBracket {
  int exponent = 0;
  uint64_t mantissa = 0;
  bool exact = false;
};
// REQUIRES: 0 < coefficient < 10^34, kMinExponent <= exponent <= kMaxExponent.
BinaryBracket BracketMagnitude(uint128 coefficient, int exponent);

// The decimal digits of a coefficient, most significant first, without
// leading zeros ("0" for 0); returns their number (1..34).
// REQUIRES: c < 10^34; out has room for 34 bytes.
int CoefficientDigits(uint128 c, char* out);

}  // namespace decimal
}  // namespace gatedb

#endif  // GATEDB_ENGINE_DECIMAL_DECIMAL128_H_
