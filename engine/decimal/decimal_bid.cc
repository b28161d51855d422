// File: engine/decimal/decimal_bid.cc
//
// The doorway to Intel's Decimal Floating-Point Math Library (Debian's
// libintelrdfpmath-dev, libbidgcc000.a: arguments by value, rounding mode
// and flags as parameters, no global state), the library MongoDB computes
// Decimal128 with.  decimal128.cc calls it for the functions IEEE 754 does
// not pin to one answer (exp, ln, log2, log10, pow, the trigonometric and
// hyperbolic functions): Intel's are not correctly rounded, so the only way
// to give MongoDB's digits is to run MongoDB's code.
//
// Why a doorway with two C functions: Intel's archive defines the same
// symbol names as libgcc's decimal floating point (__bid128_add,
// __bid128_mul, ... ) with another calling convention (libgcc's take no
// rounding mode and no flags).  A program that links both would call one
// through the other's convention.  So the build links this file with the
// archive members it needs into one relocatable object and makes every
// symbol in it local except the two below (engine/CMakeLists.txt,
// objcopy --keep-global-symbol): nothing of Intel's is visible to the
// linker, whatever else the program links.
//
// Nothing here computes: each function is a switch over Intel's calls.
#include <cstdint>

#define DECIMAL_CALL_BY_REFERENCE 0
#define DECIMAL_GLOBAL_ROUNDING 0
#define DECIMAL_GLOBAL_EXCEPTION_FLAGS 0
#include <bid_conf.h>
#include <bid_functions.h>

#include "engine/decimal/decimal_bid.h"

namespace {

BID_UINT128 In(const uint64_t v[2]) {
  BID_UINT128 x;
  x.w[0] = v[0];  // the low 64 bits, as bson_decimal128_t.low
  x.w[1] = v[1];
  return x;
}

void Out(const BID_UINT128& x, uint64_t out[2]) {
  out[0] = x.w[0];
  out[1] = x.w[1];
}

uint32_t Flags(_IDEC_flags f) {
  uint32_t r = 0;
  if (f & BID_INVALID_EXCEPTION) r |= GATEDB_BID_INVALID;
  if (f & BID_ZERO_DIVIDE_EXCEPTION) r |= GATEDB_BID_DIVISION_BY_ZERO;
  if (f & BID_OVERFLOW_EXCEPTION) r |= GATEDB_BID_OVERFLOW;
  if (f & BID_UNDERFLOW_EXCEPTION) r |= GATEDB_BID_UNDERFLOW;
  if (f & BID_INEXACT_EXCEPTION) r |= GATEDB_BID_INEXACT;
  return r;
}

}  // namespace

extern "C" int decimal_bid_unary(int op, const uint64_t x[2], uint64_t out[2], uint32_t* flags) {
  const BID_UINT128 v = In(x);
  const _IDEC_round rnd = BID_ROUNDING_TO_NEAREST;
  _IDEC_flags f = 0;
  BID_UINT128 r;
  switch (op) {
    case GATEDB_BID_EXP: r = bid128_exp(v, rnd, &f); break;
    case GATEDB_BID_EXP2: r = bid128_exp2(v, rnd, &f); break;
    case GATEDB_BID_EXP10: r = bid128_exp10(v, rnd, &f); break;
    case GATEDB_BID_LOG: r = bid128_log(v, rnd, &f); break;
    case GATEDB_BID_LOG2: r = bid128_log2(v, rnd, &f); break;
    case GATEDB_BID_LOG10: r = bid128_log10(v, rnd, &f); break;
    case GATEDB_BID_SIN: r = bid128_sin(v, rnd, &f); break;
    case GATEDB_BID_COS: r = bid128_cos(v, rnd, &f); break;
    case GATEDB_BID_TAN: r = bid128_tan(v, rnd, &f); break;
    case GATEDB_BID_ASIN: r = bid128_asin(v, rnd, &f); break;
    case GATEDB_BID_ACOS: r = bid128_acos(v, rnd, &f); break;
    case GATEDB_BID_ATAN: r = bid128_atan(v, rnd, &f); break;
    case GATEDB_BID_SINH: r = bid128_sinh(v, rnd, &f); break;
    case GATEDB_BID_COSH: r = bid128_cosh(v, rnd, &f); break;
    case GATEDB_BID_TANH: r = bid128_tanh(v, rnd, &f); break;
    case GATEDB_BID_ASINH: r = bid128_asinh(v, rnd, &f); break;
    case GATEDB_BID_ACOSH: r = bid128_acosh(v, rnd, &f); break;
    case GATEDB_BID_ATANH: r = bid128_atanh(v, rnd, &f); break;
    default: return 0;
  }
  Out(r, out);
  *flags = Flags(f);
  return 1;
}

extern "C" int decimal_bid_binary(int op, const uint64_t x[2], const uint64_t y[2], uint64_t out[2],
                                    uint32_t* flags) {
  const BID_UINT128 a = In(x), b = In(y);
  const _IDEC_round rnd = BID_ROUNDING_TO_NEAREST;
  _IDEC_flags f = 0;
  BID_UINT128 r;
  switch (op) {
    case GATEDB_BID_POW: r = bid128_pow(a, b, rnd, &f); break;
    case GATEDB_BID_ATAN2: r = bid128_atan2(a, b, rnd, &f); break;
    default: return 0;
  }
  Out(r, out);
  *flags = Flags(f);
  return 1;
}
