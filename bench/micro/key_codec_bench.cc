// Micro-benchmarks of the _id key encoding and the BSON comparator, each
// beside its baseline (a plain memcpy of the same bytes).
#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <cstring>
#include <string>

#include "engine/document/bson_compare.h"
#include "engine/keys/key_codec.h"

namespace {

void BM_Baseline_CopyBytes12(benchmark::State& state) {
  bson_oid_t oid;
  bson_oid_init(&oid, nullptr);
  std::string out;
  for (auto _ : state) {
    out.assign(reinterpret_cast<const char*>(oid.bytes), 12);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Baseline_CopyBytes12);

void BM_KeyCodec_EncodeObjectId(benchmark::State& state) {
  bson_value_t v;
  v.value_type = BSON_TYPE_OID;
  bson_oid_init(&v.value.v_oid, nullptr);
  for (auto _ : state) {
    std::string key = gatedb::keys::EncodeDocKey(7, v);
    benchmark::DoNotOptimize(key.data());
  }
}
BENCHMARK(BM_KeyCodec_EncodeObjectId);

void BM_KeyCodec_EncodeString(benchmark::State& state) {
  std::string s = "order_" + std::to_string(123456789);
  bson_value_t v;
  v.value_type = BSON_TYPE_UTF8;
  v.value.v_utf8.str = const_cast<char*>(s.c_str());
  v.value.v_utf8.len = static_cast<uint32_t>(s.size());
  for (auto _ : state) {
    std::string key = gatedb::keys::EncodeDocKey(7, v);
    benchmark::DoNotOptimize(key.data());
  }
}
BENCHMARK(BM_KeyCodec_EncodeString);

void BM_KeyCodec_EncodeDouble(benchmark::State& state) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DOUBLE;
  v.value.v_double = 12345.678;
  for (auto _ : state) {
    std::string key = gatedb::keys::EncodeDocKey(7, v);
    benchmark::DoNotOptimize(key.data());
  }
}
BENCHMARK(BM_KeyCodec_EncodeDouble);

void BM_BsonCompare_IntVsDouble(benchmark::State& state) {
  bson_value_t a, b;
  a.value_type = BSON_TYPE_INT64;
  a.value.v_int64 = 1234567;
  b.value_type = BSON_TYPE_DOUBLE;
  b.value.v_double = 1234567.5;
  for (auto _ : state) benchmark::DoNotOptimize(gatedb::CompareValues(a, b));
}
BENCHMARK(BM_BsonCompare_IntVsDouble);

}  // namespace
