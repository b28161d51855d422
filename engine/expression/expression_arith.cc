// Arithmetic operators: $add $subtract $multiply $divide $mod $abs $ceil
// $floor $round $trunc $sqrt $pow $exp $ln $log $log10, the trigonometric
// operators, and the accumulator-style $sum $avg $min $max $stdDevPop
// $stdDevSamp over arrays or several arguments.
//
// Result types follow MongoDB: int32 results that overflow widen to int64,
// int64 results that overflow become doubles, any double operand gives a
// double, any decimal operand gives a decimal (the other operands converted
// as MongoDB's coerceToDecimal does; engine/decimal computes, with Intel's
// library for the functions IEEE leaves to the implementation, as MongoDB).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine/decimal/decimal128.h"
#include "engine/expression/accumulator.h"
#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

std::string T(const Value& v) { return TypeName(v); }

int64_t IntOf(const Value& v) { return v.type() == BSON_TYPE_INT32 ? v.int32() : v.int64(); }

bool InInt64Range(long double d) { return d >= -9223372036854775808.0L && d < 9223372036854775808.0L; }

Value Dec(const bson_decimal128_t& d) { return Value::Decimal(d); }
Value Dec(const decimal::Result& r) { return Value::Decimal(r.value); }

bool IsDecimal(const Value& v) { return v.type() == BSON_TYPE_DECIMAL128; }

// A decimal number of milliseconds added to or taken from a date: rounded
// half to even, as MongoDB's Decimal128::toLong.
bool DecimalMillis(const bson_decimal128_t& d, int64_t* ms) {
  std::optional<int64_t> r = decimal::ToInt64Exact(decimal::Round(d, 0).value);
  if (!r) return false;
  *ms = *r;
  return true;
}

// ---------------------------------------------------------------------------
// $add $subtract $multiply $divide $mod

StatusOr<Value> Add(const char* name, const Value* a, size_t n) {
  NumType widest = NumType::kInt32;
  int64_t isum = 0;
  bool int_overflow = false;
  long double dsum = 0;
  bson_decimal128_t dec_sum = decimal::FromInt64(0);
  bool have_date = false;
  int64_t date = 0;
  for (size_t i = 0; i < n; ++i) {
    const Value& v = a[i];
    if (v.nullish()) return Value::Null();
    if (v.is_date()) {
      if (have_date) return Err(16612, "only one date allowed in an $add expression");
      have_date = true;
      date = v.date();
      continue;
    }
    if (!v.is_number()) return Err(16554, "$add only supports numeric or date types, not " + T(v));
    const NumType t = NumTypeOf(v);
    if (t > widest) widest = t;
    if (t == NumType::kDecimal) {
      // MongoDB's AddState: decimals add up in decimal, the other numbers
      // apart; the two totals meet at the end.
      dec_sum = decimal::Add(dec_sum, v.bson().value.v_decimal128).value;
    } else if (t == NumType::kDouble) {
      dsum += v.dbl();
    } else if (int_overflow) {
      dsum += IntOf(v);
    } else {
      const int64_t x = IntOf(v);
      const int64_t before = isum;
      if (__builtin_add_overflow(before, x, &isum)) {
        int_overflow = true;
        dsum += static_cast<long double>(before) + x;
        isum = 0;
      }
    }
  }
  const long double total = dsum + isum;
  if (widest == NumType::kDecimal) {
    const bson_decimal128_t rest = (dsum == 0 && !int_overflow) ? decimal::FromInt64(isum)
                                                                : decimal::FromDouble(static_cast<double>(total));
    dec_sum = decimal::Add(dec_sum, rest).value;
    if (!have_date) return Dec(dec_sum);
    int64_t ms = 0, out = 0;
    if (!DecimalMillis(dec_sum, &ms) || __builtin_add_overflow(date, ms, &out)) {
      return Status(ErrorCode::kOverflow, "date overflow in $add");
    }
    return Value::Date(out);
  }
  if (have_date) {
    int64_t out = 0;
    if (widest != NumType::kDouble && !int_overflow) {
      if (__builtin_add_overflow(date, isum, &out)) return Status(ErrorCode::kOverflow, "date overflow in $add");
    } else {
      // MongoDB rounds a fractional number of milliseconds.
      if (!std::isfinite(total) || !InInt64Range(total)) return Status(ErrorCode::kOverflow, "date overflow in $add");
      const long double ms = static_cast<long double>(date) + std::llroundl(total);
      if (!InInt64Range(ms)) return Status(ErrorCode::kOverflow, "date overflow in $add");
      out = static_cast<int64_t>(ms);
    }
    return Value::Date(out);
  }
  if (widest == NumType::kDouble || int_overflow) return Value::Double(static_cast<double>(total));
  if (widest == NumType::kInt64) return Value::Int64(isum);
  return IntegerValue(isum);
}

StatusOr<Value> Subtract(const char* name, const Value* a, size_t) {
  const Value& l = a[0];
  const Value& r = a[1];
  if (l.nullish() || r.nullish()) return Value::Null();
  if (l.is_number() && r.is_number()) {
    const NumType tl = NumTypeOf(l), tr = NumTypeOf(r);
    if (tl == NumType::kDecimal || tr == NumType::kDecimal) return Dec(decimal::Subtract(ToDecimal(l), ToDecimal(r)));
    if (tl == NumType::kDouble || tr == NumType::kDouble) return Value::Double(ToDouble(l) - ToDouble(r));
    int64_t out = 0;
    if (__builtin_sub_overflow(IntOf(l), IntOf(r), &out)) {
      return Value::Double(static_cast<double>(static_cast<long double>(IntOf(l)) - IntOf(r)));
    }
    if (tl == NumType::kInt64 || tr == NumType::kInt64) return Value::Int64(out);
    return IntegerValue(out);
  }
  if (l.is_date()) {
    if (r.is_date()) {
      int64_t out = 0;
      if (__builtin_sub_overflow(l.date(), r.date(), &out)) {
        return Status(ErrorCode::kOverflow, "date overflow in $subtract");
      }
      return Value::Int64(out);
    }
    if (r.is_number()) {
      int64_t ms = 0;
      if (NumTypeOf(r) == NumType::kDecimal) {
        if (!DecimalMillis(r.bson().value.v_decimal128, &ms)) {
          return Status(ErrorCode::kOverflow, "date overflow in $subtract");
        }
      } else if (NumTypeOf(r) == NumType::kDouble) {
        const double d = r.dbl();
        if (!std::isfinite(d) || !InInt64Range(d)) {
          return Status(ErrorCode::kOverflow, "date overflow in $subtract");
        }
        ms = std::llround(d);
      } else {
        ms = IntOf(r);
      }
      int64_t out = 0;
      if (__builtin_sub_overflow(l.date(), ms, &out)) {
        return Status(ErrorCode::kOverflow, "date overflow in $subtract");
      }
      return Value::Date(out);
    }
  }
  return Err(16556, "can't $subtract " + T(r) + " from " + T(l));
}

StatusOr<Value> Multiply(const char* name, const Value* a, size_t n) {
  // As MongoDB: an exact integer product while it fits, then a double.
  // From the first decimal on (MongoDB's ExpressionMultiply), the product so
  // far becomes a decimal and every further factor multiplies in decimal.
  NumType widest = NumType::kInt32;
  int64_t iprod = 1;
  bool int_overflow = false;
  double dprod = 1;
  bson_decimal128_t dec_prod{};
  for (size_t i = 0; i < n; ++i) {
    const Value& v = a[i];
    if (v.nullish()) return Value::Null();
    if (!v.is_number()) return Err(16555, "$multiply only supports numeric types, not " + T(v));
    const NumType t = NumTypeOf(v);
    if (widest == NumType::kDecimal) {
      dec_prod = decimal::Multiply(dec_prod, ToDecimal(v)).value;
      continue;
    }
    if (t == NumType::kDecimal) {
      const bson_decimal128_t so_far = (widest == NumType::kDouble || int_overflow)
                                           ? decimal::FromDouble(dprod * static_cast<double>(iprod))
                                           : decimal::FromInt64(iprod);
      dec_prod = decimal::Multiply(so_far, v.bson().value.v_decimal128).value;
      widest = NumType::kDecimal;
      continue;
    }
    if (t > widest) widest = t;
    if (widest == NumType::kDouble || int_overflow) {
      if (iprod != 1) {
        dprod *= static_cast<double>(iprod);
        iprod = 1;
      }
      dprod *= ToDouble(v);
      continue;
    }
    const int64_t before = iprod;
    if (__builtin_mul_overflow(before, IntOf(v), &iprod)) {
      int_overflow = true;
      dprod *= static_cast<double>(before) * static_cast<double>(IntOf(v));
      iprod = 1;
    }
  }
  if (widest == NumType::kDecimal) return Dec(dec_prod);
  if (widest == NumType::kDouble || int_overflow) return Value::Double(dprod * static_cast<double>(iprod));
  if (widest == NumType::kInt64) return Value::Int64(iprod);
  return IntegerValue(iprod);
}

StatusOr<Value> Divide(const char* name, const Value* a, size_t) {
  const Value& l = a[0];
  const Value& r = a[1];
  if (l.nullish() || r.nullish()) return Value::Null();
  if (!l.is_number() || !r.is_number()) {
    return Err(16609, "$divide only supports numeric types, not " + T(l) + " and " + T(r));
  }
  if (IsDecimal(l) || IsDecimal(r)) {
    const bson_decimal128_t divisor = ToDecimal(r);
    if (decimal::IsZero(divisor)) return Err(16608, "can't $divide by zero");
    return Dec(decimal::Divide(ToDecimal(l), divisor));
  }
  const double d = ToDouble(r);
  if (d == 0) return Err(16608, "can't $divide by zero");
  return Value::Double(ToDouble(l) / d);
}

StatusOr<Value> Mod(const char* name, const Value* a, size_t) {
  const Value& l = a[0];
  const Value& r = a[1];
  if (l.nullish() || r.nullish()) return Value::Null();
  if (!l.is_number() || !r.is_number()) {
    return Err(16611, "$mod only supports numeric types, not " + T(l) + " and " + T(r));
  }
  const NumType tl = NumTypeOf(l), tr = NumTypeOf(r);
  if (tl == NumType::kDecimal || tr == NumType::kDecimal) {
    const bson_decimal128_t divisor = ToDecimal(r);
    if (decimal::IsZero(divisor)) return Err(16610, "can't $mod by zero");
    return Dec(decimal::Remainder(ToDecimal(l), divisor));
  }
  if (tl == NumType::kDouble || tr == NumType::kDouble) {
    const double d = ToDouble(r);
    if (d == 0) return Err(16610, "can't $mod by zero");
    return Value::Double(std::fmod(ToDouble(l), d));
  }
  const int64_t x = IntOf(l), y = IntOf(r);
  if (y == 0) return Err(16610, "can't $mod by zero");
  const int64_t m = (y == -1) ? 0 : x % y;  // INT64_MIN % -1 overflows in C++
  if (tl == NumType::kInt64 || tr == NumType::kInt64) return Value::Int64(m);
  return Value::Int32(static_cast<int32_t>(m));
}

// ---------------------------------------------------------------------------
// One-number operators

Status NotNumeric(const char* name, const Value& v) {
  return Err(28765, std::string(name) + " only supports numeric types, not " + T(v));
}

StatusOr<Value> Abs(const char* name, const Value* a, size_t) {
  const Value& v = a[0];
  if (v.nullish()) return Value::Null();
  if (!v.is_number()) return NotNumeric(name, v);
  switch (v.type()) {
    case BSON_TYPE_INT32:
      if (v.int32() == INT32_MIN) return Value::Int64(-static_cast<int64_t>(INT32_MIN));
      return Value::Int32(std::abs(v.int32()));
    case BSON_TYPE_INT64:
      if (v.int64() == INT64_MIN) return Err(28680, "can't take $abs of long long min");
      return Value::Int64(std::llabs(v.int64()));
    case BSON_TYPE_DOUBLE: return Value::Double(std::fabs(v.dbl()));
    default: return Dec(decimal::Abs(v.bson().value.v_decimal128));
  }
}

template <double (*F)(double), decimal::Result (*D)(const bson_decimal128_t&)>
StatusOr<Value> IntegralRound(const char* name, const Value* a, size_t) {
  const Value& v = a[0];
  if (v.nullish()) return Value::Null();
  if (!v.is_number()) return NotNumeric(name, v);
  if (v.type() == BSON_TYPE_INT32 || v.type() == BSON_TYPE_INT64) return v;
  if (v.type() == BSON_TYPE_DOUBLE) return Value::Double(F(v.dbl()));
  return Dec(D(v.bson().value.v_decimal128));
}

double Ceil(double d) { return std::ceil(d); }
double Floor(double d) { return std::floor(d); }

// Rounds (or truncates) a double to `place` decimal places the way MongoDB
// does: through its 15-significant-digit decimal form, rounding half to even
// ({$round: [2.015, 2]} is 2.02, although the double is 2.01499...).
double RoundDouble(double x, int place, bool truncate) {
  if (!std::isfinite(x) || x == 0) return x;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.14e", x);  // "-d.dddddddddddddde+XX"
  const bool negative = buf[0] == '-';
  const char* p = buf + (negative ? 1 : 0);
  std::string digits;
  for (; *p != 'e'; ++p) {
    if (*p != '.') digits.push_back(*p);
  }
  const int exp10 = std::atoi(p + 1);  // value = d.ddd * 10^exp10
  const int keep = exp10 + place + 1;  // digits at or above 10^-place
  if (keep >= static_cast<int>(digits.size())) return std::strtod(buf, nullptr);
  bool round_up = false;
  if (keep < 0) {
    round_up = false;
  } else if (!truncate) {
    const char first_dropped = digits[static_cast<size_t>(keep)];
    const bool rest_zero = digits.find_first_not_of('0', static_cast<size_t>(keep) + 1) == std::string::npos;
    if (first_dropped > '5' || (first_dropped == '5' && !rest_zero)) {
      round_up = true;
    } else if (first_dropped == '5') {
      const int last_kept = keep > 0 ? digits[static_cast<size_t>(keep) - 1] - '0' : 0;
      round_up = (last_kept % 2) == 1;
    }
  }
  std::string kept = keep > 0 ? digits.substr(0, static_cast<size_t>(keep)) : std::string();
  int scale = -place;  // the value is kept * 10^scale
  if (round_up) {
    int i = static_cast<int>(kept.size()) - 1;
    while (i >= 0 && kept[static_cast<size_t>(i)] == '9') kept[static_cast<size_t>(i--)] = '0';
    if (i >= 0) {
      ++kept[static_cast<size_t>(i)];
    } else {
      kept.insert(kept.begin(), '1');
    }
  }
  if (kept.empty()) kept = "0";
  std::string s = (negative ? "-" : "") + kept + "e" + std::to_string(scale);
  return std::strtod(s.c_str(), nullptr);
}

// Integers rounded to a negative place: to a multiple of 10^-place.
bool RoundInteger(int64_t x, int place, bool truncate, int64_t* out) {
  if (place >= 0) {
    *out = x;
    return true;
  }
  if (place < -18) {
    // |x| < 10^19 <= 10^-place: everything rounds to 0 except a tie-free
    // half, which cannot happen below 10^19 / 2 ... except for -19.
    if (truncate || place < -19) {
      *out = 0;
      return true;
    }
    // place == -19: unit is 10^19, half is 5e18.
    const long double half = 5e18L;
    const long double ax = std::fabs(static_cast<long double>(x));
    if (ax > half) return false;  // rounds to ±10^19: does not fit
    *out = 0;
    return true;
  }
  int64_t unit = 1;
  for (int i = 0; i < -place; ++i) unit *= 10;
  const int64_t q = x / unit;  // toward zero
  const int64_t r = x % unit;
  int64_t rq = q;
  if (!truncate && r != 0) {
    const int64_t ar = r < 0 ? -r : r;
    const bool up = ar * 2 > unit || (ar * 2 == unit && (q % 2 != 0));
    if (up) rq = q + (x < 0 ? -1 : 1);
  }
  return !__builtin_mul_overflow(rq, unit, out);
}

// $round and $trunc: [number, place?].
StatusOr<Value> RoundOrTrunc(const char* name, const Value* a, size_t n, bool truncate) {
  const Value& v = a[0];
  if (v.nullish()) return Value::Null();
  if (!v.is_number()) return Err(51081, std::string(name) + " only supports numeric types, not " + T(v));
  int64_t place = 0;
  if (n > 1) {
    const Value& p = a[1];
    if (p.nullish()) return Value::Null();
    if (!ToInt64Exact(p, &place)) {
      return Err(51082, "precision argument to " + std::string(name) + " must be a integral value");
    }
    if (place < -20 || place > 100) {
      return Err(51083, "cannot apply " + std::string(name) + " with precision value " + std::to_string(place) +
                            " value must be in [-20, 100]");
    }
  }
  switch (v.type()) {
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64: {
      int64_t out = 0;
      if (!RoundInteger(IntOf(v), static_cast<int>(place), truncate, &out)) {
        return Err(51080, "invalid conversion from Decimal128 result in " + std::string(name) +
                              " resulting from arguments: [" + v.ToString() + ", " + std::to_string(place) + "]");
      }
      return v.type() == BSON_TYPE_INT64 ? Value::Int64(out) : IntegerValue(out);
    }
    case BSON_TYPE_DOUBLE:
      return Value::Double(RoundDouble(v.dbl(), static_cast<int>(place), truncate));
    default: {
      const bson_decimal128_t& d = v.bson().value.v_decimal128;
      return Dec(truncate ? decimal::Trunc(d, static_cast<int>(place)) : decimal::Round(d, static_cast<int>(place)));
    }
  }
}

StatusOr<Value> Round(const char* name, const Value* a, size_t n) { return RoundOrTrunc(name, a, n, false); }
StatusOr<Value> Trunc(const char* name, const Value* a, size_t n) { return RoundOrTrunc(name, a, n, true); }

// A one-argument operator: `F` on a double (or an integer, as a double),
// `D` on a decimal.  `check` and `dcheck` (either may be null) refuse an
// argument outside the operator's domain, a double's or a decimal's; a NaN
// is never refused (it passes through, as in MongoDB).
using DoubleCheck = Status (*)(const char*, double);
using DecimalCheck = Status (*)(const char*, const bson_decimal128_t&);

template <double (*F)(double), decimal::Result (*D)(const bson_decimal128_t&)>
StatusOr<Value> DoubleFn(const char* name, const Value& v, DoubleCheck check, DecimalCheck dcheck) {
  if (v.nullish()) return Value::Null();
  if (!v.is_number()) return NotNumeric(name, v);
  if (IsDecimal(v)) {
    const bson_decimal128_t& x = v.bson().value.v_decimal128;
    if (dcheck != nullptr && !decimal::IsNaN(x)) RETURN_IF_ERROR(dcheck(name, x));
    return Dec(D(x));
  }
  const double d = ToDouble(v);
  if (check != nullptr && !std::isnan(d)) RETURN_IF_ERROR(check(name, d));
  return Value::Double(F(d));
}

Status SqrtCheck(const char*, double d) {
  return d >= 0 ? Status::OK() : Err(28714, "$sqrt's argument must be greater than or equal to 0");
}
Status LnCheck(const char*, double d) {
  return d > 0 ? Status::OK() : Err(28766, "$ln's argument must be a positive number, but is " + FormatDouble(d));
}
Status Log10Check(const char*, double d) {
  return d > 0 ? Status::OK() : Err(28761, "$log10's argument must be a positive number, but is " + FormatDouble(d));
}

// The bounded trigonometric functions' error, for a double or a decimal
// argument (MongoDB prints a decimal in its own notation: "Infinity", "2").
Status OutOfBounds(const char* name, const std::string& arg, const char* bounds) {
  return Err(50989, "cannot apply " + std::string(name) + " to " + arg + ", value must in " + bounds);
}
Status UnitRange(const char* name, double d) {
  return d >= -1 && d <= 1 ? Status::OK() : OutOfBounds(name, FormatDouble(d), "[-1,1]");
}
Status Finite(const char* name, double d) {
  return std::isfinite(d) ? Status::OK() : OutOfBounds(name, FormatDouble(d), "(-inf,inf)");
}
Status AtLeastOne(const char* name, double d) {
  return d >= 1 ? Status::OK() : OutOfBounds(name, FormatDouble(d), "[1,inf]");
}

Status SqrtDecimalCheck(const char*, const bson_decimal128_t& x) {
  return decimal::CompareToInt64(x, 0) >= 0 ? Status::OK()
                                             : Err(28714, "$sqrt's argument must be greater than or equal to 0");
}
Status LnDecimalCheck(const char*, const bson_decimal128_t& x) {
  return decimal::CompareToInt64(x, 0) > 0
             ? Status::OK()
             : Err(28766, "$ln's argument must be a positive number, but is " + decimal::ToString(x));
}
Status Log10DecimalCheck(const char*, const bson_decimal128_t& x) {
  return decimal::CompareToInt64(x, 0) > 0
             ? Status::OK()
             : Err(28761, "$log10's argument must be a positive number, but is " + decimal::ToString(x));
}
Status UnitRangeDecimal(const char* name, const bson_decimal128_t& x) {
  return decimal::CompareToInt64(x, -1) >= 0 && decimal::CompareToInt64(x, 1) <= 0
             ? Status::OK()
             : OutOfBounds(name, decimal::ToString(x), "[-1,1]");
}
Status FiniteDecimal(const char* name, const bson_decimal128_t& x) {
  return !decimal::IsInfinity(x) ? Status::OK() : OutOfBounds(name, decimal::ToString(x), "(-inf,inf)");
}
Status AtLeastOneDecimal(const char* name, const bson_decimal128_t& x) {
  return decimal::CompareToInt64(x, 1) >= 0 ? Status::OK() : OutOfBounds(name, decimal::ToString(x), "[1,inf]");
}

double Sqrt(double d) { return std::sqrt(d); }
double Exp(double d) { return std::exp(d); }
double Ln(double d) { return std::log(d); }
double Log10(double d) { return std::log10(d); }
double Sin(double d) { return std::sin(d); }
double Cos(double d) { return std::cos(d); }
double Tan(double d) { return std::tan(d); }
double Asin(double d) { return std::asin(d); }
double Acos(double d) { return std::acos(d); }
double Atan(double d) { return std::atan(d); }
double Sinh(double d) { return std::sinh(d); }
double Cosh(double d) { return std::cosh(d); }
double Tanh(double d) { return std::tanh(d); }
double Asinh(double d) { return std::asinh(d); }
double Acosh(double d) { return std::acosh(d); }
double Atanh(double d) { return std::atanh(d); }
double DegToRad(double d) { return d * M_PI / 180.0; }
double RadToDeg(double d) { return d * 180.0 / M_PI; }

// MongoDB's Decimal128::kPiOver180 and k180OverPi, to 34 digits.
decimal::Result DecimalDegToRad(const bson_decimal128_t& d) {
  return decimal::Multiply(d, decimal::FromString("0.01745329251994329576923690768488613").value);
}
decimal::Result DecimalRadToDeg(const bson_decimal128_t& d) {
  return decimal::Multiply(d, decimal::FromString("57.29577951308232087679815481410517").value);
}

#define GATEDB_DOUBLE_OP(fn_name, F, D, check, dcheck)                \
  StatusOr<Value> fn_name(const char* name, const Value* a, size_t) { \
    return DoubleFn<F, D>(name, a[0], check, dcheck);                 \
  }
GATEDB_DOUBLE_OP(SqrtOp, Sqrt, decimal::Sqrt, SqrtCheck, SqrtDecimalCheck)
GATEDB_DOUBLE_OP(ExpOp, Exp, decimal::Exp, nullptr, nullptr)
GATEDB_DOUBLE_OP(LnOp, Ln, decimal::Ln, LnCheck, LnDecimalCheck)
GATEDB_DOUBLE_OP(Log10Op, Log10, decimal::Log10, Log10Check, Log10DecimalCheck)
GATEDB_DOUBLE_OP(SinOp, Sin, decimal::Sin, Finite, FiniteDecimal)
GATEDB_DOUBLE_OP(CosOp, Cos, decimal::Cos, Finite, FiniteDecimal)
GATEDB_DOUBLE_OP(TanOp, Tan, decimal::Tan, Finite, FiniteDecimal)
GATEDB_DOUBLE_OP(AsinOp, Asin, decimal::Asin, UnitRange, UnitRangeDecimal)
GATEDB_DOUBLE_OP(AcosOp, Acos, decimal::Acos, UnitRange, UnitRangeDecimal)
GATEDB_DOUBLE_OP(AtanOp, Atan, decimal::Atan, nullptr, nullptr)
GATEDB_DOUBLE_OP(SinhOp, Sinh, decimal::Sinh, nullptr, nullptr)
GATEDB_DOUBLE_OP(CoshOp, Cosh, decimal::Cosh, nullptr, nullptr)
GATEDB_DOUBLE_OP(TanhOp, Tanh, decimal::Tanh, nullptr, nullptr)
GATEDB_DOUBLE_OP(AsinhOp, Asinh, decimal::Asinh, nullptr, nullptr)
GATEDB_DOUBLE_OP(AcoshOp, Acosh, decimal::Acosh, AtLeastOne, AtLeastOneDecimal)
GATEDB_DOUBLE_OP(AtanhOp, Atanh, decimal::Atanh, UnitRange, UnitRangeDecimal)
GATEDB_DOUBLE_OP(DegToRadOp, DegToRad, DecimalDegToRad, nullptr, nullptr)
GATEDB_DOUBLE_OP(RadToDegOp, RadToDeg, DecimalRadToDeg, nullptr, nullptr)
#undef GATEDB_DOUBLE_OP

StatusOr<Value> Atan2(const char* name, const Value* a, size_t) {
  if (a[0].nullish() || a[1].nullish()) return Value::Null();
  if (!a[0].is_number()) return Err(51044, "$atan2 only supports numeric types, not " + T(a[0]));
  if (!a[1].is_number()) return Err(51045, "$atan2 only supports numeric types, not " + T(a[1]));
  if (IsDecimal(a[0]) || IsDecimal(a[1])) return Dec(decimal::Atan2(ToDecimal(a[0]), ToDecimal(a[1])));
  return Value::Double(std::atan2(ToDouble(a[0]), ToDouble(a[1])));
}

StatusOr<Value> Log(const char* name, const Value* a, size_t) {
  const Value& v = a[0];
  const Value& b = a[1];
  if (v.nullish() || b.nullish()) return Value::Null();
  if (!v.is_number()) return Err(28756, "$log's argument must be numeric, not " + T(v));
  if (!b.is_number()) return Err(28757, "$log's base must be numeric, not " + T(b));
  if (IsDecimal(v) || IsDecimal(b)) {
    // MongoDB's Decimal128::logarithm(base) (decimal::Log).
    const bson_decimal128_t x = ToDecimal(v), base = ToDecimal(b);
    if (!decimal::IsNaN(x) && decimal::CompareToInt64(x, 0) <= 0) {
      return Err(28758, "$log's argument must be a positive number, but is " + decimal::ToString(x));
    }
    if (!decimal::IsNaN(base) && (decimal::CompareToInt64(base, 0) <= 0 || decimal::CompareToInt64(base, 1) == 0)) {
      return Err(28759, "$log's base must be a positive number not equal to 1, but is " + decimal::ToString(base));
    }
    return Dec(decimal::Log(x, base));
  }
  const double x = ToDouble(v), base = ToDouble(b);
  if (!(x > 0) && !std::isnan(x)) {
    return Err(28758, "$log's argument must be a positive number, but is " + FormatDouble(x));
  }
  if ((!(base > 0) || base == 1) && !std::isnan(base)) {
    return Err(28759, "$log's base must be a positive number not equal to 1, but is " + FormatDouble(base));
  }
  return Value::Double(std::log(x) / std::log(base));
}

StatusOr<Value> Pow(const char* name, const Value* a, size_t) {
  const Value& b = a[0];
  const Value& e = a[1];
  if (b.nullish() || e.nullish()) return Value::Null();
  if (!b.is_number()) return Err(28762, "$pow's base must be numeric, not " + T(b));
  if (!e.is_number()) return Err(28763, "$pow's exponent must be numeric, not " + T(e));
  const NumType tb = NumTypeOf(b), te = NumTypeOf(e);
  if (tb == NumType::kDecimal || te == NumType::kDecimal) {
    const bson_decimal128_t base = ToDecimal(b), exp = ToDecimal(e);
    if (decimal::IsZero(base) && decimal::CompareToInt64(exp, 0) < 0) {
      return Err(28764, "$pow cannot take a base of 0 and a negative exponent");
    }
    return Dec(decimal::Pow(base, exp));
  }
  const double db = ToDouble(b), de = ToDouble(e);
  if (db == 0 && de < 0) return Err(28764, "$pow cannot take a base of 0 and a negative exponent");
  if (tb == NumType::kDouble || te == NumType::kDouble) return Value::Double(std::pow(db, de));
  const bool want_long = tb == NumType::kInt64 || te == NumType::kInt64;
  const int64_t base = IntOf(b), exp = IntOf(e);
  auto make = [want_long](int64_t r) { return want_long ? Value::Int64(r) : IntegerValue(r); };
  if (exp < 0) {
    if (base == 1) return make(1);
    if (base == -1) return make(exp % 2 == 0 ? 1 : -1);
    return Value::Double(std::pow(db, de));
  }
  // Exact integer power by squaring; a double when it overflows int64.
  int64_t result = 1, sq = base;
  int64_t k = exp;
  bool overflow = false;
  while (k > 0 && !overflow) {
    if (k & 1) overflow |= __builtin_mul_overflow(result, sq, &result);
    k >>= 1;
    if (k > 0) overflow |= __builtin_mul_overflow(sq, sq, &sq);
  }
  if (overflow) return Value::Double(std::pow(db, de));
  return make(result);
}

// ---------------------------------------------------------------------------
// $sum $avg $min $max $stdDevPop $stdDevSamp as expressions: one argument
// that is an array gives its elements; otherwise each argument is one input.

class AccumulatorExpression final : public Expression {
 public:
  AccumulatorExpression(const char* name, std::vector<ExprPtr> args) : name_(name), args_(std::move(args)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<Accumulator> acc, NewAccumulator(name_));
    if (args_.size() == 1) {
      ASSIGN_OR_RETURN(Value v, args_[0]->Evaluate(ctx));
      if (v.is_array()) {
        Status failed;
        ForEachField(v, [&](std::string_view, const Value& elem) {
          failed = acc->Process(elem);
          return failed.ok();
        });
        RETURN_IF_ERROR(failed);
      } else {
        RETURN_IF_ERROR(acc->Process(v));
      }
    } else {
      for (const ExprPtr& e : args_) {
        ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
        RETURN_IF_ERROR(acc->Process(v));
      }
    }
    return acc->Finalize();
  }

  void Serialize(bson_t* out, std::string_view key) const override { SerializeOperator(out, key, name_, args_); }

 private:
  const char* name_;
  std::vector<ExprPtr> args_;
};

StatusOr<ExprPtr> ParseAccumulatorExpression(const char* name, const bson_value_t& spec, ParseContext* pc) {
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(spec, pc));
  return ExprPtr(new AccumulatorExpression(name, std::move(args)));
}

}  // namespace

void AddArithOperators(std::vector<OperatorDef>* ops) {
  ops->push_back(OperatorDef{"$add", Add, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$subtract", Subtract, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$multiply", Multiply, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$divide", Divide, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$mod", Mod, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$abs", Abs, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$ceil", IntegralRound<Ceil, decimal::Ceil>, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$floor", IntegralRound<Floor, decimal::Floor>, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$round", Round, 1, 2, nullptr});
  ops->push_back(OperatorDef{"$trunc", Trunc, 1, 2, nullptr});
  ops->push_back(OperatorDef{"$sqrt", SqrtOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$exp", ExpOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$ln", LnOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$log10", Log10Op, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$log", Log, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$pow", Pow, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$sin", SinOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$cos", CosOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$tan", TanOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$asin", AsinOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$acos", AcosOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$atan", AtanOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$atan2", Atan2, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$sinh", SinhOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$cosh", CoshOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$tanh", TanhOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$asinh", AsinhOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$acosh", AcoshOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$atanh", AtanhOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$degreesToRadians", DegToRadOp, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$radiansToDegrees", RadToDegOp, 1, 1, nullptr});
  for (const char* n : {"$sum", "$avg", "$min", "$max", "$stdDevPop", "$stdDevSamp"}) {
    ops->push_back(OperatorDef{n, nullptr, 0, 0, ParseAccumulatorExpression});
  }
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
