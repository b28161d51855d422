// File: engine/decimal/decimal_bid.h
//
// The two entry points of the isolated Intel object (decimal_bid.cc says
// why it is isolated).  Private to engine/decimal: decimal128.h is the
// interface everything else uses.  A decimal is two 64-bit words, low
// first, as in bson_decimal128_t; each function returns 0 for an unknown
// op and leaves `out` and `flags` untouched then.
#ifndef GATEDB_ENGINE_DECIMAL_DECIMAL_BID_H_
#define GATEDB_ENGINE_DECIMAL_DECIMAL_BID_H_

#include <cstdint>

enum GatedbBidOp {
  GATEDB_BID_EXP = 1,
  GATEDB_BID_EXP2,
  GATEDB_BID_EXP10,
  GATEDB_BID_LOG,
  GATEDB_BID_LOG2,
  GATEDB_BID_LOG10,
  GATEDB_BID_SIN,
  GATEDB_BID_COS,
  GATEDB_BID_TAN,
  GATEDB_BID_ASIN,
  GATEDB_BID_ACOS,
  GATEDB_BID_ATAN,
  GATEDB_BID_SINH,
  GATEDB_BID_COSH,
  GATEDB_BID_TANH,
  GATEDB_BID_ASINH,
  GATEDB_BID_ACOSH,
  GATEDB_BID_ATANH,
  GATEDB_BID_POW,    // binary: x^y
  GATEDB_BID_ATAN2,  // binary: atan2(y = first, x = second)
};

// IEEE's exception flags, as bits.
enum GatedbBidFlag : uint32_t {
  GATEDB_BID_INEXACT = 1u << 0,
  GATEDB_BID_UNDERFLOW = 1u << 1,
  GATEDB_BID_OVERFLOW = 1u << 2,
  GATEDB_BID_DIVISION_BY_ZERO = 1u << 3,
  GATEDB_BID_INVALID = 1u << 4,
};

extern "C" int decimal_bid_unary(int op, const uint64_t x[2], uint64_t out[2], uint32_t* flags);
extern "C" int decimal_bid_binary(int op, const uint64_t x[2], const uint64_t y[2], uint64_t out[2],
                                    uint32_t* flags);

#endif  // GATEDB_ENGINE_DECIMAL_DECIMAL_BID_H_
