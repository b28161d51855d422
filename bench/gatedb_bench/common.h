// Shared pieces of gatedb_bench (bench/README.md): the data set, temporary
// directories, the per-benchmark fixture cache and the peak-RSS counter.
//
// Every benchmark gets a fresh database in a fresh temporary directory,
// loaded once (outside timing) with NumDocs() documents of about 1 KB (the
// index read cases of one engine share one: they only read).
// Google Benchmark calls a benchmark function several times (to find the
// iteration count, then once per repetition); AcquireFixture() keeps the
// loaded fixture while the same benchmark runs and drops it when another
// one starts.  With --benchmark_enable_random_interleaving the repetitions
// of all cases are shuffled together, so every fixture is kept until the
// run ends (KeepAllFixtures): each benchmark loads exactly once either way.
#ifndef GATEDB_BENCH_COMMON_H_
#define GATEDB_BENCH_COMMON_H_

#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace gatedb_bench {

// GATEDB_BENCH_DOCS (default 100000): documents loaded per benchmark.
int NumDocs();

// "doc-0000042": the _id (and RocksDB / SQLite key) of document i.
std::string DocId(int i);

// Document i, about 1 KB: string _id, strings (`email`: Email(i), unique),
// `orderNo` (int32 i: distinct, in _id order), a double (`score`), an
// embedded `address`, an array of 5 `items` subdocuments, `category`
// (Category(i): "cat-00" .. "cat-99", i % 100, a 1% selective field) and
// `version` 0.
void BuildDoc(int i, bson_t* out);

// "customer42@example.com" and "cat-42": the `email` and `category` of
// document i.
std::string Email(int i);
std::string Category(int i);

// The secondary indexes of the index cases, the same in gatedb (ascending
// single-field indexes of these fields) and in SQLite (indexes on columns of
// the same names): a unique one for equality finds, a numeric one with
// distinct values for range finds, and a 1% selective one.
struct IndexedField {
  const char* name;
  bool unique;
};
constexpr IndexedField kIndexedFields[] = {{"email", true}, {"orderNo", false}, {"category", false}};
constexpr int kNumIndexedFields = 3;

// How many documents a range case's query returns: orderNo in [x, x + this).
int RangeDocs();

// The field every CAS case changes, and the value it sets.
constexpr char kChangedField[] = "score";
constexpr char kVersionField[] = "version";

// A copy of the BSON document `data` with `score` set to `score` and
// `version` raised by one (other fields copied in order): the "parse,
// change one field, bump version" step of the baselines.  Returns false
// when `data` is not BSON.  `old_version` receives the version read.
bool RewriteDoc(const uint8_t* data, size_t len, double score, int64_t* old_version, bson_t* out);

// A fresh directory under $TMPDIR (or /tmp), removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A loaded database of some kind.  peak_rss_mb: how far loading it raised
// the process's peak RSS (VmHWM, reset just before the load) above its RSS
// before the load: the memory the open database with its documents needs.
struct Fixture {
  virtual ~Fixture() = default;
  double peak_rss_mb = 0;
};

// The fixture for benchmark `key` (its full name: one per registered
// benchmark, threads included): made by `make` the first time (then the
// background work of the load is left to settle), and shared by every
// thread and every later call of that benchmark.  Thread-safe; the first
// caller loads while the others wait.  Cases that only read may share one
// fixture by using one key (the index read cases do); a case that writes
// must have its own.
std::shared_ptr<Fixture> AcquireFixtureBase(const std::string& key, const std::function<std::unique_ptr<Fixture>()>& make);

template <typename F>
std::shared_ptr<F> AcquireFixture(const std::string& key, const std::function<std::unique_ptr<F>()>& make) {
  return std::static_pointer_cast<F>(AcquireFixtureBase(key, [&]() -> std::unique_ptr<Fixture> { return make(); }));
}

// Keep every fixture until ReleaseFixtures() instead of only the current
// one (for interleaved runs; costs memory and disk for all of them).
void KeepAllFixtures(bool keep);

// Drops every fixture (their directories are removed).
void ReleaseFixtures();

// Name of a benchmark instance for fixture keys: "<base>/threads:<n>".
std::string InstanceKey(const std::string& base, const benchmark::State& state);

// Sets the peak_rss_MB counter (thread 0 only, so that it is not summed).
void ReportRss(benchmark::State& state, const Fixture& fx);

// Picks document indexes for one thread: uniform over this thread's own
// slice of [0, NumDocs()) (the whole range with one thread), from a
// std::mt19937 seeded per benchmark and thread.  With `width` > 1, the
// first index of a run of `width` documents that lies wholly in the slice
// (for range queries).
class KeyPicker {
 public:
  KeyPicker(const benchmark::State& state, uint32_t seed, int width = 1);
  int Next() { return dist_(rng_); }

 private:
  std::mt19937 rng_;
  std::uniform_int_distribution<int> dist_;
};

// Throughput of all threads of a case together over wall-clock time, as
// the counter `wall_items_per_s` (thread 0 sets it; only when the case runs
// more than one thread).  Google Benchmark's items_per_second divides all
// threads' items by the *mean* of the threads' times, which overstates the
// throughput when the threads finish at different times (an unfair lock:
// with 8 strictly serialized writers, by 1.8x).  Here the time runs from the
// first timed iteration (all threads start together, after Google
// Benchmark's start barrier) until the loop of thread 0 returns, which is
// after its end barrier, when the last thread has finished.
//   WallRate wall;
//   for (auto _ : state) { wall.Mark(); ... }
//   wall.Report(state);
class WallRate {
 public:
  void Mark() {
    if (!started_) {
      started_ = true;
      start_ = std::chrono::steady_clock::now();
    }
  }
  void Report(benchmark::State& state) const;

 private:
  bool started_ = false;
  std::chrono::steady_clock::time_point start_;
};

// A value never returned before in this process, and never a score of the
// loaded data (BuildDoc: i * 0.25) nor one the setup writes (whole numbers),
// so that every CAS really changes its document (Google Benchmark reruns a
// function with the same key sequence; a value the document already holds
// would make gatedb skip the write and the case fail with "not modified").
double NextScore();

// Fails the benchmark (once) with `msg`.
void Fail(benchmark::State& state, const std::string& msg);

// The durable cases' registration: 1, 2, 4 and 8 writer threads, real
// time, microseconds (use as BENCHMARK(BM_x)->Apply(DurableWriters)).
void DurableWriters(benchmark::internal::Benchmark* b);

// The usual console/JSON/CSV display (per --benchmark_format), remembering
// whether any case failed (SkipWithError), so that the process exits 1 and
// the CI smoke runs catch a broken case.  `program` prefixes the messages.
class ErrorTrackingReporter : public benchmark::BenchmarkReporter {
 public:
  ErrorTrackingReporter(const char* program, benchmark::BenchmarkReporter* inner) : program_(program), inner_(inner) {}
  bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override { inner_->Finalize(); }
  bool failed() const { return failed_; }

 private:
  const char* program_;
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  bool failed_ = false;
};

}  // namespace gatedb_bench

#endif  // GATEDB_BENCH_COMMON_H_
