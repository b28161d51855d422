// The CAS path through the C++ API: a gated update with and without an
// idempotency key, and the replay of a key already used.  Ratios between
// these cases (same process, same data) are the figures to read; the full
// benchmark suite with RocksDB and SQLite baselines is issue 5's.
//
//   build/bench/cas_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>

#include "gatedb/db.h"

namespace {

constexpr int kDocs = 10000;

struct Fixture {
  std::string dir;
  std::unique_ptr<gatedb::Database> db;

  Fixture() {
    dir = (std::filesystem::temp_directory_path() / ("gatedb_bench_" + std::to_string(std::random_device()()))).string();
    db = std::move(gatedb::Database::Open(dir).value());
    gatedb::Collection c = db->GetCollection("bench", "orders");
    std::vector<gatedb::Document> batch;
    for (int i = 0; i < kDocs; ++i) {
      bson_t* d = bson_new();
      std::string id = "order_" + std::to_string(i);
      BSON_APPEND_UTF8(d, "_id", id.c_str());
      BSON_APPEND_UTF8(d, "customer", "customer name that is reasonably long");
      BSON_APPEND_DOUBLE(d, "total", i * 1.5);
      BSON_APPEND_UTF8(d, "notes", std::string(700, 'x').c_str());
      batch.push_back(gatedb::Document::Adopt(d));
      if (batch.size() == 1000) {
        (void)c.InsertMany(batch);
        batch.clear();
      }
    }
  }
  ~Fixture() {
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

gatedb::Document IdFilter(int i) {
  bson_t* f = bson_new();
  std::string id = "order_" + std::to_string(i);
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return gatedb::Document::Adopt(f);
}

// Read the document (its version), then a gated $set of one field.
void RunGated(benchmark::State& state, bool keyed) {
  Fixture fx;
  gatedb::Collection c = fx.db->GetCollection("bench", "orders");
  std::mt19937 rng(42);
  gatedb::Document update = std::move(gatedb::Document::FromJson(R"({"$set": {"status": "paid"}, "$inc": {"total": 1}})").value());
  int64_t seq = 0;
  for (auto _ : state) {
    gatedb::Document filter = IdFilter(static_cast<int>(rng() % kDocs));
    auto cur = c.FindOne(filter.view());
    bson_iter_t it;
    int64_t version = bson_iter_init_find(&it, (**cur).bson(), "version") ? bson_iter_as_int64(&it) : 0;
    gatedb::UpdateOptions o;
    o.write.basis_version = version;
    o.write.context.agent_id = "bench";
    if (keyed) {
      o.write.context.task_id = "bench-task";
      o.write.context.write_seq = ++seq;
    }
    auto r = c.UpdateOne(filter.view(), update.view(), o);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_GatedUpdate(benchmark::State& state) { RunGated(state, false); }
BENCHMARK(BM_GatedUpdate)->Unit(benchmark::kMicrosecond);

void BM_GatedUpdate_WithKey(benchmark::State& state) { RunGated(state, true); }
BENCHMARK(BM_GatedUpdate_WithKey)->Unit(benchmark::kMicrosecond);

// A write whose key was already used: answered from the idempotency log.
void BM_IdempotentReplay(benchmark::State& state) {
  Fixture fx;
  gatedb::Collection c = fx.db->GetCollection("bench", "orders");
  gatedb::Document update = std::move(gatedb::Document::FromJson(R"({"$set": {"status": "paid"}})").value());
  gatedb::UpdateOptions o;
  o.write.context.task_id = "bench-task";
  o.write.context.write_seq = 1;
  gatedb::Document filter = IdFilter(7);
  (void)c.UpdateOne(filter.view(), update.view(), o);
  for (auto _ : state) {
    auto r = c.UpdateOne(filter.view(), update.view(), o);
    if (!r.ok() || !r->replayed) state.SkipWithError("expected a replay");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IdempotentReplay)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
