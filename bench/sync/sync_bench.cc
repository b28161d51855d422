// Upstream sync's benchmarks (issue 16), against an in-process hub
// (`gatedb serve`'s WireServer on its own data directory) over loopback:
//
//   BM_SyncPush                 one gatedb::Sync::RunOnce pushing one small
//                               update of each of GATEDB_BENCH_SYNC_DOCS
//                               documents (default 100,000)
//   BM_Baseline_DriverBulkInsert  the same number of documents of the same
//                               size inserted with libmongoc's bulk insert,
//                               on one connection to the same hub
//   BM_SyncFollowLatency        a commit on edge A until it is on edge B,
//                               both syncing in a loop (--follow) through the
//                               hub; the median and p99 are the counters
//
// Items per second: documents.  The ratio BM_SyncPush / BM_Baseline is the
// issue's target (>= 0.5).
#include <benchmark/benchmark.h>
#include <mongoc/mongoc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "api/server/wire_server.h"
#include "gatedb/db.h"
#include "gatedb/sync.h"

namespace {

int64_t Docs() {
  const char* e = std::getenv("GATEDB_BENCH_SYNC_DOCS");
  return e ? std::max<int64_t>(10, std::atoll(e)) : 100000;
}

std::string TempDir(const char* what) {
  std::string d = (std::filesystem::temp_directory_path() / ("gatedb-sync-bench-" + std::string(what) + "-" +
                                                             std::to_string(::getpid())))
                      .string();
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

struct Hub {
  std::string dir = TempDir("hub");
  std::unique_ptr<gatedb::Database> db;
  std::unique_ptr<gatedb::server::WireServer> server;
  std::string uri;
  Hub() {
    db = std::move(*gatedb::Database::Open(dir + "/db"));
    gatedb::server::ServerOptions o;
    o.port = 0;
    o.quiet = true;
    o.log = [](const std::string&) {};
    server = std::move(*gatedb::server::WireServer::Start(db.get(), o));
    uri = "mongodb://127.0.0.1:" + std::to_string(server->port()) + "/?directConnection=true";
  }
  ~Hub() {
    server->Stop();
    server.reset();
    db.reset();
    std::filesystem::remove_all(dir);
  }
};

std::string SmallDoc(int64_t i) {
  return R"({"_id": )" + std::to_string(i) + R"(, "status": "open", "qty": 1, "owner": "agent-7"})";
}

gatedb::SyncOptions SyncOpts(const Hub& hub, const char* origin) {
  gatedb::SyncOptions o;
  o.upstream_uri = hub.uri;
  o.namespaces = {"bench.orders"};
  o.origin = origin;
  o.pull_wait_ms = 20;
  return o;
}

void BM_SyncPush(benchmark::State& state) {
  const int64_t n = Docs();
  Hub hub;
  std::string edge_dir = TempDir("edge");
  auto edge = std::move(*gatedb::Database::Open(edge_dir));
  gatedb::Collection c = edge->GetCollection("bench", "orders");
  std::vector<gatedb::Document> docs;
  for (int64_t i = 0; i < n; ++i) docs.push_back(*gatedb::Document::FromJson(SmallDoc(i)));
  if (!c.InsertMany(docs).ok()) state.SkipWithError("load failed");
  auto sync = std::move(*gatedb::Sync::Open(edge.get(), SyncOpts(hub, "bench-edge")));
  if (!sync->RunOnce().ok()) state.SkipWithError("initial push failed");
  auto all = *gatedb::Document::FromJson("{}");
  auto inc = *gatedb::Document::FromJson(R"({"$inc": {"qty": 1}})");
  for (auto _ : state) {
    state.PauseTiming();
    if (!c.UpdateMany(all.view(), inc.view()).ok()) state.SkipWithError("local updates failed");
    state.ResumeTiming();
    auto r = sync->RunOnce();
    if (!r.ok() || r->pushed != n) {
      state.SkipWithError("push failed or short");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  sync.reset();
  edge.reset();
  std::filesystem::remove_all(edge_dir);
}

void BM_Baseline_DriverBulkInsert(benchmark::State& state) {
  const int64_t n = Docs();
  Hub hub;
  mongoc_init();
  mongoc_client_t* client = mongoc_client_new(hub.uri.c_str());
  int round = 0;
  for (auto _ : state) {
    std::string coll_name = "orders" + std::to_string(round++);
    mongoc_collection_t* coll = mongoc_client_get_collection(client, "bench", coll_name.c_str());
    mongoc_bulk_operation_t* bulk = mongoc_collection_create_bulk_operation_with_opts(coll, nullptr);
    for (int64_t i = 0; i < n; ++i) {
      bson_error_t err;
      std::string json = SmallDoc(i);
      bson_t* d = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
      mongoc_bulk_operation_insert(bulk, d);
      bson_destroy(d);
    }
    bson_t reply;
    bson_error_t err;
    if (!mongoc_bulk_operation_execute(bulk, &reply, &err)) state.SkipWithError(err.message);
    bson_destroy(&reply);
    mongoc_bulk_operation_destroy(bulk);
    mongoc_collection_destroy(coll);
  }
  state.SetItemsProcessed(state.iterations() * n);
  mongoc_client_destroy(client);
}

// Edge A writes one document; edge B, syncing in a loop, has it: the time
// between, through the hub.
void BM_SyncFollowLatency(benchmark::State& state) {
  Hub hub;
  std::string a_dir = TempDir("a"), b_dir = TempDir("b");
  auto a = std::move(*gatedb::Database::Open(a_dir));
  auto b = std::move(*gatedb::Database::Open(b_dir));
  auto sa = std::move(*gatedb::Sync::Open(a.get(), SyncOpts(hub, "a")));
  auto sb = std::move(*gatedb::Sync::Open(b.get(), SyncOpts(hub, "b")));
  std::atomic<bool> stop{false};
  std::thread follow_a([&] {
    while (!stop) sa->RunOnce().status().PermitUnchecked();
  });
  std::thread follow_b([&] {
    while (!stop) sb->RunOnce().status().PermitUnchecked();
  });
  std::vector<double> ms;
  gatedb::Collection ca = a->GetCollection("bench", "orders");
  gatedb::Collection cb = b->GetCollection("bench", "orders");
  int64_t i = 0;
  for (auto _ : state) {
    auto doc = *gatedb::Document::FromJson(SmallDoc(i));
    auto filter = *gatedb::Document::FromJson(R"({"_id": )" + std::to_string(i) + "}");
    ++i;
    auto t0 = std::chrono::steady_clock::now();
    if (!ca.InsertOne(doc.view()).ok()) state.SkipWithError("insert failed");
    for (;;) {
      auto got = cb.FindOne(filter.view());
      if (got.ok() && got->has_value()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) {
        state.SkipWithError("the write did not arrive within 30 s");
        break;
      }
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  stop = true;
  follow_a.join();
  follow_b.join();
  std::sort(ms.begin(), ms.end());
  if (!ms.empty()) {
    state.counters["median_ms"] = ms[ms.size() / 2];
    state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  }
  sa.reset();
  sb.reset();
  a.reset();
  b.reset();
  std::filesystem::remove_all(a_dir);
  std::filesystem::remove_all(b_dir);
}

BENCHMARK(BM_SyncPush)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Baseline_DriverBulkInsert)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SyncFollowLatency)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(50);

}  // namespace

BENCHMARK_MAIN();
