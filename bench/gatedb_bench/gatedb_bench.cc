// gatedb_bench: the CAS path of gatedb beside RocksDB and SQLite baselines
// (bench/README.md; figures in docs/BENCHMARKS.md).
//
//   build/bench/gatedb_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//   GATEDB_BENCH_DOCS=200 build/bench/gatedb_bench --benchmark_min_time=0.01   # smoke run
#include <benchmark/benchmark.h>
#include <bson/bson.h>
#include <rocksdb/version.h>
#include <sqlite3.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common.h"

#ifndef GATEDB_BENCH_BUILD_TYPE
#define GATEDB_BENCH_BUILD_TYPE "unknown"
#endif

int main(int argc, char** argv) {
  // Interleaved repetitions come back to every case: keep all fixtures.
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--benchmark_enable_random_interleaving", 0) == 0) {
      gatedb_bench::KeepAllFixtures(arg.find("=false") == std::string::npos && arg.find("=0") == std::string::npos);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gatedb_bench_docs", std::to_string(gatedb_bench::NumDocs()));
  benchmark::AddCustomContext("gatedb_build_type", GATEDB_BENCH_BUILD_TYPE);
#ifndef NDEBUG
  std::fprintf(stderr, "***WARNING*** gatedb_bench was built without NDEBUG (assertions on): figures are not representative\n");
#endif
  benchmark::AddCustomContext("rocksdb", std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                                             std::to_string(ROCKSDB_PATCH));
  benchmark::AddCustomContext("sqlite", sqlite3_libversion());
  benchmark::AddCustomContext("libbson", bson_get_version());
  gatedb_bench::ErrorTrackingReporter reporter("gatedb_bench", benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  gatedb_bench::ReleaseFixtures();  // removes the temporary directories
  benchmark::Shutdown();
  return reporter.failed() ? 1 : 0;
}
