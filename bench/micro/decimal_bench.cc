// What a decimal128 costs in the comparator and the key encoding, beside
// the int and double cases that stay on their old paths (issue 19).  Read
// the ratios within one run: BM_Compare_Decimal* / BM_Compare_DoubleDouble
// and BM_Encode_Decimal* / BM_Encode_Double.
#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <string>

#include "engine/document/bson_compare.h"
#include "engine/keys/key_codec.h"

namespace {

bson_value_t Int64(int64_t x) {
  bson_value_t v;
  v.value_type = BSON_TYPE_INT64;
  v.value.v_int64 = x;
  return v;
}

bson_value_t Double(double x) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DOUBLE;
  v.value.v_double = x;
  return v;
}

bson_value_t Decimal(const char* s) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DECIMAL128;
  bson_decimal128_from_string(s, &v.value.v_decimal128);
  return v;
}

void Compare(benchmark::State& state, const bson_value_t& a, const bson_value_t& b) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(gatedb::CompareValues(a, b));
  }
}

void BM_Compare_IntInt(benchmark::State& state) { Compare(state, Int64(1234567), Int64(1234568)); }
BENCHMARK(BM_Compare_IntInt);
void BM_Compare_DoubleDouble(benchmark::State& state) { Compare(state, Double(12.34), Double(12.35)); }
BENCHMARK(BM_Compare_DoubleDouble);
void BM_Compare_IntDouble(benchmark::State& state) { Compare(state, Int64(1234567), Double(1234567.5)); }
BENCHMARK(BM_Compare_IntDouble);
// Decimal against decimal: one exponent (prices in cents), two exponents
// (aligned in 128-bit integers), 34 digits.
void BM_Compare_DecimalDecimal_SameExponent(benchmark::State& state) {
  Compare(state, Decimal("12.34"), Decimal("12.35"));
}
BENCHMARK(BM_Compare_DecimalDecimal_SameExponent);
void BM_Compare_DecimalDecimal_Cohorts(benchmark::State& state) {
  Compare(state, Decimal("12.340"), Decimal("12.34"));
}
BENCHMARK(BM_Compare_DecimalDecimal_Cohorts);
void BM_Compare_DecimalDecimal_34Digits(benchmark::State& state) {
  Compare(state, Decimal("9999999999999999999999999999999999"), Decimal("9999999999999999999999999999999998"));
}
BENCHMARK(BM_Compare_DecimalDecimal_34Digits);
void BM_Compare_DecimalInt(benchmark::State& state) { Compare(state, Decimal("1234567.5"), Int64(1234567)); }
BENCHMARK(BM_Compare_DecimalInt);
// Decimal against double: decided by the magnitudes, exact in 128-bit
// integers, exact in GMP integers.
void BM_Compare_DecimalDouble_Magnitude(benchmark::State& state) { Compare(state, Decimal("12.34"), Double(1e10)); }
BENCHMARK(BM_Compare_DecimalDouble_Magnitude);
void BM_Compare_DecimalDouble_Exact128(benchmark::State& state) { Compare(state, Decimal("12.34"), Double(12.34)); }
BENCHMARK(BM_Compare_DecimalDouble_Exact128);
void BM_Compare_DecimalDouble_ExactGmp(benchmark::State& state) {
  Compare(state, Decimal("1.000000000000000000000000000000001E-300"), Double(1e-300));
}
BENCHMARK(BM_Compare_DecimalDouble_ExactGmp);

void Encode(benchmark::State& state, const bson_value_t& v) {
  for (auto _ : state) {
    std::string key = gatedb::keys::EncodeDocKey(7, v);
    benchmark::DoNotOptimize(key.data());
  }
}

void BM_Encode_Int(benchmark::State& state) { Encode(state, Int64(1234567)); }
BENCHMARK(BM_Encode_Int);
void BM_Encode_Double(benchmark::State& state) { Encode(state, Double(12.34)); }
BENCHMARK(BM_Encode_Double);
// A decimal a 64-bit binary value equals (the same bytes as the int).
void BM_Encode_DecimalExactInteger(benchmark::State& state) { Encode(state, Decimal("1234567")); }
BENCHMARK(BM_Encode_DecimalExactInteger);
// Between two binary values: a short coefficient, 34 digits, a huge exponent.
void BM_Encode_DecimalInexact(benchmark::State& state) { Encode(state, Decimal("12.34")); }
BENCHMARK(BM_Encode_DecimalInexact);
void BM_Encode_Decimal34Digits(benchmark::State& state) {
  Encode(state, Decimal("1.234567890123456789012345678901234"));
}
BENCHMARK(BM_Encode_Decimal34Digits);
void BM_Encode_DecimalHugeExponent(benchmark::State& state) { Encode(state, Decimal("1.5E+6000")); }
BENCHMARK(BM_Encode_DecimalHugeExponent);

}  // namespace
