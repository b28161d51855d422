#include "common.h"

#include <malloc.h>
#include <sys/resource.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gatedb_bench {

int NumDocs() {
  static const int n = [] {
    const char* env = std::getenv("GATEDB_BENCH_DOCS");
    if (env == nullptr || *env == '\0') return 100000;
    long v = std::strtol(env, nullptr, 10);
    return v < 10 ? 10 : static_cast<int>(v);
  }();
  return n;
}

std::string DocId(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "doc-%07d", i);
  return buf;
}

std::string Email(int i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "customer%d@example.com", i);
  return buf;
}

std::string Category(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "cat-%02d", i % 100);
  return buf;
}

int RangeDocs() { return NumDocs() < 100 ? NumDocs() : 100; }

namespace {

const char* const kCities[] = {"Lisbon", "Porto", "Lyon", "Turin", "Ghent", "Leiden", "Aarhus", "Graz"};
const char* const kProducts[] = {"widget", "gadget", "sprocket", "flange", "gear", "bracket", "valve", "spring"};

}  // namespace

void BuildDoc(int i, bson_t* out) {
  char buf[256];
  std::string id = DocId(i);
  BSON_APPEND_UTF8(out, "_id", id.c_str());
  std::snprintf(buf, sizeof buf, "Customer %d of the benchmark data set", i);
  BSON_APPEND_UTF8(out, "name", buf);
  BSON_APPEND_UTF8(out, "email", Email(i).c_str());
  BSON_APPEND_INT32(out, "orderNo", i);
  BSON_APPEND_UTF8(out, "category", Category(i).c_str());
  BSON_APPEND_UTF8(out, "status", "open");
  BSON_APPEND_UTF8(out, "notes",
                   "Deliver between nine and five; ring twice; the side door is the one with the green frame. "
                   "Invoices go to the accounting address on file, not to the delivery address. Keep the "
                   "packaging: returns are collected on Fridays.");
  BSON_APPEND_DOUBLE(out, kChangedField, i * 0.25);
  bson_t addr;
  BSON_APPEND_DOCUMENT_BEGIN(out, "address", &addr);
  std::snprintf(buf, sizeof buf, "%d Long Benchmark Avenue", i % 997);
  BSON_APPEND_UTF8(&addr, "street", buf);
  BSON_APPEND_UTF8(&addr, "city", kCities[i % 8]);
  std::snprintf(buf, sizeof buf, "%05d", (i * 7) % 100000);
  BSON_APPEND_UTF8(&addr, "zip", buf);
  BSON_APPEND_UTF8(&addr, "country", "PT");
  bson_append_document_end(out, &addr);
  bson_t items;
  BSON_APPEND_ARRAY_BEGIN(out, "items", &items);
  for (int k = 0; k < 5; ++k) {
    char key[4];
    std::snprintf(key, sizeof key, "%d", k);
    bson_t item;
    BSON_APPEND_DOCUMENT_BEGIN(&items, key, &item);
    std::snprintf(buf, sizeof buf, "SKU-%06d-%d", (i * 31 + k) % 1000000, k);
    BSON_APPEND_UTF8(&item, "sku", buf);
    std::snprintf(buf, sizeof buf, "%s, size %d, standard finish", kProducts[(i + k) % 8], k + 1);
    BSON_APPEND_UTF8(&item, "name", buf);
    BSON_APPEND_INT32(&item, "qty", (i + k) % 10 + 1);
    BSON_APPEND_DOUBLE(&item, "price", 1.5 + ((i + k) % 100));
    bson_append_document_end(&items, &item);
  }
  bson_append_array_end(out, &items);
  BSON_APPEND_INT64(out, kVersionField, 0);
}

bool RewriteDoc(const uint8_t* data, size_t len, double score, int64_t* old_version, bson_t* out) {
  bson_t in;
  if (!bson_init_static(&in, data, len)) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, &in)) return false;
  bool set_score = false, set_version = false;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (std::strcmp(key, kChangedField) == 0) {
      BSON_APPEND_DOUBLE(out, kChangedField, score);
      set_score = true;
    } else if (std::strcmp(key, kVersionField) == 0) {
      *old_version = bson_iter_as_int64(&it);
      BSON_APPEND_INT64(out, kVersionField, *old_version + 1);
      set_version = true;
    } else {
      bson_append_iter(out, key, -1, &it);
    }
  }
  if (!set_score) BSON_APPEND_DOUBLE(out, kChangedField, score);
  if (!set_version) {
    *old_version = 0;
    BSON_APPEND_INT64(out, kVersionField, 1);
  }
  return true;
}

TempDir::TempDir(const std::string& tag) {
  std::string base = std::filesystem::temp_directory_path().string() + "/gatedb_bench_" + tag + "_XXXXXX";
  std::vector<char> buf(base.begin(), base.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + base);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::mutex g_fixture_mu;
std::map<std::string, std::shared_ptr<Fixture>> g_fixtures;
bool g_keep_all = false;

// Resets VmHWM to the current RSS (Linux >= 4.0: "5" to clear_refs).
void ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";
}

// A field of /proc/self/status in MB ("VmRSS:", "VmHWM:").
double StatusMb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0) return std::strtod(line.c_str() + n, nullptr) / 1024.0;  // kB
  }
  return 0;
}

double ProcessCpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// After a load, RocksDB flushes and compacts in the background for a
// while.  Waits (at most 60 s) until the process uses less than 5% of a
// core over 200 ms, so that no case is timed against the previous load's
// compactions.
void WaitForQuiescence() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    double before = ProcessCpuSeconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (ProcessCpuSeconds() - before < 0.010) return;
  }
}

}  // namespace

std::shared_ptr<Fixture> AcquireFixtureBase(const std::string& key,
                                            const std::function<std::unique_ptr<Fixture>()>& make) {
  std::lock_guard<std::mutex> l(g_fixture_mu);
  auto it = g_fixtures.find(key);
  if (it != g_fixtures.end()) return it->second;
  if (!g_keep_all) g_fixtures.clear();  // the previous benchmark's database and directory
  malloc_trim(0);
  double rss_before = StatusMb("VmRSS:");
  ResetPeakRss();
  std::unique_ptr<Fixture> f = make();
  f->peak_rss_mb = StatusMb("VmHWM:") - rss_before;
  WaitForQuiescence();
  std::shared_ptr<Fixture> shared(std::move(f));
  g_fixtures.emplace(key, shared);
  return shared;
}

void KeepAllFixtures(bool keep) {
  std::lock_guard<std::mutex> l(g_fixture_mu);
  g_keep_all = keep;
}

void ReleaseFixtures() {
  std::lock_guard<std::mutex> l(g_fixture_mu);
  g_fixtures.clear();
}

std::string InstanceKey(const std::string& base, const benchmark::State& state) {
  return base + "/threads:" + std::to_string(state.threads());
}

void ReportRss(benchmark::State& state, const Fixture& fx) {
  if (state.thread_index() == 0) state.counters["peak_rss_MB"] = benchmark::Counter(fx.peak_rss_mb);
}

KeyPicker::KeyPicker(const benchmark::State& state, uint32_t seed, int width)
    : rng_(seed + 7919u * static_cast<uint32_t>(state.thread_index())) {
  int n = NumDocs();
  int t = state.thread_index();
  int threads = state.threads();
  int begin = static_cast<int>(static_cast<int64_t>(n) * t / threads);
  int end = static_cast<int>(static_cast<int64_t>(n) * (t + 1) / threads);
  int last = end - (width < 1 ? 1 : width);
  dist_ = std::uniform_int_distribution<int>(begin, last < begin ? begin : last);
}

void WallRate::Report(benchmark::State& state) const {
  if (state.threads() < 2 || state.thread_index() != 0 || !started_ || state.error_occurred()) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Every thread runs the same number of iterations.
  double items = static_cast<double>(state.iterations()) * state.threads();
  if (seconds > 0) state.counters["wall_items_per_s"] = benchmark::Counter(items / seconds);
}

double NextScore() {
  static std::atomic<int64_t> counter{0};
  // n + 0.125 is never a multiple of 0.25 (exact in a double up to 2^50).
  return static_cast<double>(++counter) + 0.125;
}

void Fail(benchmark::State& state, const std::string& msg) { state.SkipWithError(msg.c_str()); }

void DurableWriters(benchmark::internal::Benchmark* b) {
  b->Threads(1)->Threads(2)->Threads(4)->Threads(8)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void ErrorTrackingReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    if (r.error_occurred) {
      failed_ = true;
      std::fprintf(stderr, "%s: %s failed: %s\n", program_, r.benchmark_name().c_str(), r.error_message.c_str());
    }
  }
  inner_->ReportRuns(runs);
}

}  // namespace gatedb_bench
