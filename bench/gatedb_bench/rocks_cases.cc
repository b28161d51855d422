// RocksDB baselines (plain DB, TransactionDB) and the single-document
// locking mechanisms DESIGN.md asks to choose by measurement
// (TransactionDB vs OptimisticTransactionDB vs striped mutexes + plain DB).
// Same data, same RocksDB options as gatedb's (engine/storage/db_impl_open.cc:
// IncreaseParallelism(2), a 64 MiB LRU block cache, WAL on).
#include <rocksdb/cache.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/db.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/write_batch.h>

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "common.h"

namespace gatedb_bench {
namespace {

rocksdb::Options BaseOptions() {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.IncreaseParallelism(2);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(64u << 20);
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return opts;
}

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.ToString());
}

// Loads NumDocs() documents (key = DocId(i), value = BSON) through `db`
// (any rocksdb::DB, including the transaction DBs' base) in WriteBatches of
// 1000.
void Load(rocksdb::DB* db) {
  rocksdb::WriteBatch batch;
  const int n = NumDocs();
  for (int i = 0; i < n; ++i) {
    bson_t d = BSON_INITIALIZER;
    BuildDoc(i, &d);
    Check(batch.Put(DocId(i), rocksdb::Slice(reinterpret_cast<const char*>(bson_get_data(&d)), d.len)), "batch");
    bson_destroy(&d);
    if (batch.Count() == 1000 || i == n - 1) {
      Check(db->Write(rocksdb::WriteOptions(), &batch), "load");
      batch.Clear();
    }
  }
}

struct RocksFixture : Fixture {
  TempDir dir{"rocks"};
  std::unique_ptr<rocksdb::DB> db;
  std::array<std::mutex, 1024> stripes;  // for the striped-lock mechanism

  RocksFixture() {
    rocksdb::DB* raw = nullptr;
    Check(rocksdb::DB::Open(BaseOptions(), dir.path(), &raw), "open");
    db.reset(raw);
    Load(db.get());
  }
  ~RocksFixture() override {
    if (db) db->Close().PermitUncheckedError();
  }
};

struct TxnFixture : Fixture {
  TempDir dir{"rockstxn"};
  std::unique_ptr<rocksdb::TransactionDB> db;

  TxnFixture() {
    rocksdb::TransactionDBOptions topts;
    topts.transaction_lock_timeout = 1000;  // as gatedb's Options::lock_timeout_ms
    rocksdb::TransactionDB* raw = nullptr;
    Check(rocksdb::TransactionDB::Open(BaseOptions(), topts, dir.path(), &raw), "open");
    db.reset(raw);
    Load(db.get());
  }
  ~TxnFixture() override {
    if (db) db->Close().PermitUncheckedError();
  }
};

struct OptimisticFixture : Fixture {
  TempDir dir{"rocksocc"};
  std::unique_ptr<rocksdb::OptimisticTransactionDB> db;

  OptimisticFixture() {
    rocksdb::OptimisticTransactionDB* raw = nullptr;
    Check(rocksdb::OptimisticTransactionDB::Open(BaseOptions(), dir.path(), &raw), "open");
    db.reset(raw);
    Load(db->GetBaseDB());
  }
  ~OptimisticFixture() override {
    if (db) db->Close().PermitUncheckedError();
  }
};

rocksdb::WriteOptions Wo(bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return wo;
}

// Parses `value`, sets score, bumps version; the new bytes go to `out`.
bool ChangeOneField(const std::string& value, double score, std::string* out) {
  bson_t next = BSON_INITIALIZER;
  int64_t old_version = 0;
  bool ok = RewriteDoc(reinterpret_cast<const uint8_t*>(value.data()), value.size(), score, &old_version, &next);
  if (ok) out->assign(reinterpret_cast<const char*>(bson_get_data(&next)), next.len);
  bson_destroy(&next);
  return ok;
}

// RocksDB's per-thread perf counters off, as gatedb turns them off on the
// threads that call it (engine/storage/db_impl_internal.h,
// QuietRocksPerfCounters): the baselines run RocksDB as tuned as gatedb's
// own use of it, whichever case ran on the thread before.
void QuietPerfCounters() { rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable); }

// ---- plain DB ---------------------------------------------------------------

// Overwrites a random document with a ~1 KB value (WAL on, no sync).
void BM_Baseline_RocksPut(benchmark::State& state) {
  auto fx = AcquireFixture<RocksFixture>(InstanceKey("BM_Baseline_RocksPut", state),
                                         [] { return std::make_unique<RocksFixture>(); });
  KeyPicker pick(state, 50);
  QuietPerfCounters();
  bson_t d = BSON_INITIALIZER;
  BuildDoc(0, &d);
  rocksdb::Slice value(reinterpret_cast<const char*>(bson_get_data(&d)), d.len);
  rocksdb::WriteOptions wo;
  for (auto _ : state) {
    rocksdb::Status s = fx->db->Put(wo, DocId(pick.Next()), value);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  bson_destroy(&d);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_RocksPut)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Get of a random document into a std::string.
void BM_Baseline_RocksGet(benchmark::State& state) {
  auto fx = AcquireFixture<RocksFixture>(InstanceKey("BM_Baseline_RocksGet", state),
                                         [] { return std::make_unique<RocksFixture>(); });
  KeyPicker pick(state, 51);
  QuietPerfCounters();
  std::string value;
  for (auto _ : state) {
    rocksdb::Status s = fx->db->Get(rocksdb::ReadOptions(), DocId(pick.Next()), &value);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
    benchmark::DoNotOptimize(value.data());
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_RocksGet)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- TransactionDB: the floor of a correct CAS on this stack -----------------

// One CAS: GetForUpdate, parse BSON, change one field, bump version, Put,
// Commit.  Not inlined (a profiler can collect exactly this).
__attribute__((noinline)) rocksdb::Status RocksCasOnce(rocksdb::TransactionDB* db, const rocksdb::WriteOptions& wo,
                                                       const std::string& key, std::string* value, std::string* next) {
  std::unique_ptr<rocksdb::Transaction> txn(db->BeginTransaction(wo));
  rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key, value);
  if (s.ok() && !ChangeOneField(*value, NextScore(), next)) s = rocksdb::Status::Corruption("bson");
  if (s.ok()) s = txn->Put(key, *next);
  if (s.ok()) s = txn->Commit();
  return s;
}

void RunRocksCas(benchmark::State& state, const std::string& base, bool sync) {
  auto fx = AcquireFixture<TxnFixture>(InstanceKey(base, state), [] { return std::make_unique<TxnFixture>(); });
  KeyPicker pick(state, 52);
  QuietPerfCounters();
  rocksdb::WriteOptions wo = Wo(sync);
  std::string value, next;
  WallRate wall;
  for (auto _ : state) {
    wall.Mark();
    rocksdb::Status s = RocksCasOnce(fx->db.get(), wo, DocId(pick.Next()), &value, &next);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
  wall.Report(state);
}

void BM_Baseline_RocksCas(benchmark::State& state) { RunRocksCas(state, "BM_Baseline_RocksCas", false); }
BENCHMARK(BM_Baseline_RocksCas)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Baseline_RocksCas_Durable(benchmark::State& state) { RunRocksCas(state, "BM_Baseline_RocksCas_Durable", true); }
BENCHMARK(BM_Baseline_RocksCas_Durable)->Apply(DurableWriters);

// ---- OptimisticTransactionDB --------------------------------------------------

// One CAS: GetForUpdate, parse, change, Put, Commit; a Busy commit
// (another writer committed the key first) retries from the read, counted
// in `retries`.  Not inlined (a profiler can collect exactly this).
__attribute__((noinline)) rocksdb::Status OptimisticCasOnce(rocksdb::OptimisticTransactionDB* db,
                                                            const rocksdb::WriteOptions& wo, const std::string& key,
                                                            std::string* value, std::string* next, int64_t* retries) {
  for (;;) {
    std::unique_ptr<rocksdb::Transaction> txn(db->BeginTransaction(wo));
    rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key, value);
    if (s.ok() && !ChangeOneField(*value, NextScore(), next)) s = rocksdb::Status::Corruption("bson");
    if (s.ok()) s = txn->Put(key, *next);
    if (s.ok()) s = txn->Commit();
    if (!s.IsBusy() && !s.IsTryAgain()) return s;
    ++*retries;
  }
}

void RunOptimisticCas(benchmark::State& state, const std::string& base, bool sync) {
  auto fx = AcquireFixture<OptimisticFixture>(InstanceKey(base, state),
                                              [] { return std::make_unique<OptimisticFixture>(); });
  KeyPicker pick(state, 53);
  QuietPerfCounters();
  rocksdb::WriteOptions wo = Wo(sync);
  int64_t retries = 0;
  std::string value, next;
  WallRate wall;
  for (auto _ : state) {
    wall.Mark();
    rocksdb::Status s = OptimisticCasOnce(fx->db.get(), wo, DocId(pick.Next()), &value, &next, &retries);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  state.counters["retries"] = benchmark::Counter(static_cast<double>(retries));
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
  wall.Report(state);
}

void BM_Mechanism_OptimisticCas(benchmark::State& state) {
  RunOptimisticCas(state, "BM_Mechanism_OptimisticCas", false);
}
BENCHMARK(BM_Mechanism_OptimisticCas)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Mechanism_OptimisticCas_Durable(benchmark::State& state) {
  RunOptimisticCas(state, "BM_Mechanism_OptimisticCas_Durable", true);
}
BENCHMARK(BM_Mechanism_OptimisticCas_Durable)->Apply(DurableWriters);

// ---- striped mutexes over a plain DB -----------------------------------------

// One CAS: lock(stripe of key), Get, parse, change, Put, unlock.  Not
// inlined (a profiler can collect exactly this).
__attribute__((noinline)) rocksdb::Status StripedCasOnce(RocksFixture* fx, const rocksdb::WriteOptions& wo,
                                                         const std::string& key, std::string* value,
                                                         std::string* next) {
  static const std::hash<std::string> hasher;
  std::lock_guard<std::mutex> l(fx->stripes[hasher(key) % fx->stripes.size()]);
  rocksdb::Status s = fx->db->Get(rocksdb::ReadOptions(), key, value);
  if (s.ok() && !ChangeOneField(*value, NextScore(), next)) s = rocksdb::Status::Corruption("bson");
  if (s.ok()) s = fx->db->Put(wo, key, *next);
  return s;
}

void RunStripedCas(benchmark::State& state, const std::string& base, bool sync) {
  auto fx = AcquireFixture<RocksFixture>(InstanceKey(base, state), [] { return std::make_unique<RocksFixture>(); });
  KeyPicker pick(state, 54);
  QuietPerfCounters();
  rocksdb::WriteOptions wo = Wo(sync);
  std::string value, next;
  WallRate wall;
  for (auto _ : state) {
    wall.Mark();
    rocksdb::Status s = StripedCasOnce(fx.get(), wo, DocId(pick.Next()), &value, &next);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
  wall.Report(state);
}

void BM_Mechanism_StripedLockCas(benchmark::State& state) {
  RunStripedCas(state, "BM_Mechanism_StripedLockCas", false);
}
BENCHMARK(BM_Mechanism_StripedLockCas)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Mechanism_StripedLockCas_Durable(benchmark::State& state) {
  RunStripedCas(state, "BM_Mechanism_StripedLockCas_Durable", true);
}
BENCHMARK(BM_Mechanism_StripedLockCas_Durable)->Apply(DurableWriters);

}  // namespace
}  // namespace gatedb_bench
