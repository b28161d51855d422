// wire_bench: `gatedb serve`'s wire server (api/server) over loopback TCP,
// beside a plain TCP echo of the same request and reply sizes, in one
// process (issue 15; bench/README.md; figures in docs/BENCHMARKS.md).
//
// One fixture for the whole run, made before the first case: a gatedb
// Database in a temporary directory with GATEDB_BENCH_DOCS documents
// (default 10,000 here) of about 200 bytes, an in-process WireServer on a
// free port (quiet, default thread counts), and the echo server, whose
// canned reply is a real reply of that server to a find by _id.
//
//   BM_WireFindById_Mongoc  libmongoc (one mongoc_client_t per thread):
//                           find by a random existing _id, limit 1
//   BM_WireFindById_Raw     the same find as prebuilt OP_MSG bytes over a
//                           blocking socket (loopback.h's RawClient)
//   BM_Baseline_TcpEcho     the same client and bytes against the echo
//                           server (a reply of the real reply's size)
//
//   build/bench/wire_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true       (one command line)
//   GATEDB_BENCH_DOCS=200 build/bench/wire_bench --benchmark_min_time=0.01   # smoke run
#include <benchmark/benchmark.h>
#include <bson/bson.h>
#include <gatedb/collection.h>
#include <gatedb/db.h>
#include <gatedb/document.h>
#include <mongoc/mongoc.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api/server/wire_message.h"
#include "api/server/wire_server.h"
#include "bench/gatedb_bench/common.h"
#include "loopback.h"

#ifndef GATEDB_BENCH_BUILD_TYPE
#define GATEDB_BENCH_BUILD_TYPE "unknown"
#endif

namespace wire_bench {
namespace {

using gatedb_bench::DocId;
using gatedb_bench::Fail;
using gatedb_bench::KeyPicker;
using gatedb_bench::NumDocs;
using gatedb_bench::WallRate;

constexpr char kDb[] = "bench";
constexpr char kColl[] = "orders";

// Document i, about 200 bytes, the fields of gatedb_bench's documents
// (common.h) in short, every value of a fixed width, so that every find
// request and every reply has the same size: string _id (DocId), name,
// email, int32 orderNo, category, double score, an embedded address,
// int64 version.
void BuildSmallDoc(int i, bson_t* out) {
  char buf[64];
  BSON_APPEND_UTF8(out, "_id", DocId(i).c_str());
  std::snprintf(buf, sizeof buf, "Customer %07d", i);
  BSON_APPEND_UTF8(out, "name", buf);
  std::snprintf(buf, sizeof buf, "customer%07d@example.com", i);
  BSON_APPEND_UTF8(out, "email", buf);
  BSON_APPEND_INT32(out, "orderNo", i);
  std::snprintf(buf, sizeof buf, "cat-%02d", i % 100);
  BSON_APPEND_UTF8(out, "category", buf);
  BSON_APPEND_DOUBLE(out, "score", i * 0.25);
  bson_t addr;
  BSON_APPEND_DOCUMENT_BEGIN(out, "address", &addr);
  std::snprintf(buf, sizeof buf, "%03d Bench Ave", i % 997);
  BSON_APPEND_UTF8(&addr, "street", buf);
  std::snprintf(buf, sizeof buf, "%05d", (i * 7) % 100000);
  BSON_APPEND_UTF8(&addr, "zip", buf);
  bson_append_document_end(out, &addr);
  BSON_APPEND_INT64(out, "version", 0);
}

// {find: "orders", filter: {_id}, limit: 1, singleBatch: true, $db: "bench"}
// as one OP_MSG (flags 0, one body section), requestID 0.
std::string BuildFindRequest(const std::string& id) {
  bson_t cmd = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&cmd, "find", kColl);
  bson_t filter;
  BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &filter);
  BSON_APPEND_UTF8(&filter, "_id", id.c_str());
  bson_append_document_end(&cmd, &filter);
  BSON_APPEND_INT32(&cmd, "limit", 1);
  BSON_APPEND_BOOL(&cmd, "singleBatch", true);
  BSON_APPEND_UTF8(&cmd, "$db", kDb);
  std::string msg;
  int32_t len = static_cast<int32_t>(gatedb::server::kHeaderSize + 4 + 1 + cmd.len);
  gatedb::server::AppendHeader(&msg, len, 0, 0, gatedb::server::kOpMsg);
  gatedb::server::AppendInt32(&msg, 0);  // flagBits
  msg.push_back('\0');                   // section kind 0: the body
  msg.append(reinterpret_cast<const char*>(bson_get_data(&cmd)), cmd.len);
  bson_destroy(&cmd);
  return msg;
}

// "" or what is wrong with `m` as the reply to a find by _id sent with
// `request_id`: an OP_MSG (flags 0, one body section, no checksum)
// answering it, with ok: 1, cursor.id 0 and a firstBatch of exactly one
// document, whose _id is `want_id` unless that is null.
std::string CheckFindReply(const uint8_t* m, size_t n, int32_t request_id, const char* want_id) {
  using gatedb::server::kHeaderSize;
  if (n < kHeaderSize + 5 + 5) return "reply too short";
  if (LoadLE32(m + 12) != gatedb::server::kOpMsg) return "reply is not an OP_MSG";
  if (LoadLE32(m + 8) != request_id) return "reply answers another request";
  if (LoadLE32(m + 16) != 0 || m[20] != 0) return "unexpected OP_MSG flags or section";
  const uint8_t* body = m + kHeaderSize + 5;
  size_t body_len = n - kHeaderSize - 5;
  if (static_cast<size_t>(LoadLE32(body)) != body_len) return "reply body does not fill the message";
  bson_t b;
  if (!bson_init_static(&b, body, body_len)) return "reply body is not BSON";
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &b, "ok") || bson_iter_as_double(&it) != 1.0) {
    char* json = bson_as_relaxed_extended_json(&b, nullptr);
    std::string err = std::string("reply not ok: ") + (json ? json : "?");
    bson_free(json);
    return err;
  }
  bson_iter_t id_it;
  if (!bson_iter_init(&it, &b) || !bson_iter_find_descendant(&it, "cursor.id", &id_it) ||
      bson_iter_as_int64(&id_it) != 0) {
    return "reply has no cursor.id 0 (an open cursor after limit 1)";
  }
  bson_iter_t batch, doc;
  if (!bson_iter_init(&it, &b) || !bson_iter_find_descendant(&it, "cursor.firstBatch", &batch) ||
      !BSON_ITER_HOLDS_ARRAY(&batch) || !bson_iter_recurse(&batch, &doc)) {
    return "reply has no cursor.firstBatch";
  }
  int count = 0;
  bool id_ok = want_id == nullptr;
  while (bson_iter_next(&doc)) {
    ++count;
    bson_iter_t f;
    if (!id_ok && BSON_ITER_HOLDS_DOCUMENT(&doc) && bson_iter_recurse(&doc, &f) && bson_iter_find(&f, "_id") &&
        BSON_ITER_HOLDS_UTF8(&f) && std::strcmp(bson_iter_utf8(&f, nullptr), want_id) == 0) {
      id_ok = true;
    }
  }
  if (count != 1) return "firstBatch holds " + std::to_string(count) + " documents, not 1";
  if (!id_ok) return std::string("firstBatch holds another document than ") + want_id;
  return "";
}

// What libmongoc sent and got for one find by _id (RecordingProxy).
struct MongocTraffic {
  size_t request_bytes = 0;
  size_t reply_bytes = 0;
  double messages_per_find = 0;  // both ways; 2 = one round trip
  std::string command_json;     // the find command as sent
};

struct WireFixture {
  gatedb_bench::TempDir dir{"wire"};
  std::unique_ptr<gatedb::Database> db;
  std::unique_ptr<gatedb::server::WireServer> server;
  std::unique_ptr<EchoServer> echo;
  std::string uri;                    // mongodb://127.0.0.1:PORT/?directConnection=true
  std::vector<std::string> ids;       // DocId(i)
  std::vector<std::string> requests;  // BuildFindRequest(ids[i])
  std::string sample_reply;           // the server's reply to requests[0]
  size_t doc_bytes = 0;               // BSON size of document 0
  size_t min_reply = 0, max_reply = 0;  // over a sample of the documents
  MongocTraffic mongoc;
  gatedb::server::ServerOptions opts;
};

WireFixture* g_fx = nullptr;

double ProcessCpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Waits (at most 30 s) until the process uses less than 5% of a core over
// 200 ms: RocksDB's flush of the load is done.
void WaitForQuiescence() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    double before = ProcessCpuSeconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (ProcessCpuSeconds() - before < 0.010) return;
  }
}

mongoc_client_t* NewMongocClient(const std::string& uri, std::string* err) {
  bson_error_t e;
  mongoc_uri_t* u = mongoc_uri_new_with_error(uri.c_str(), &e);
  if (u == nullptr) {
    *err = std::string("bad URI: ") + e.message;
    return nullptr;
  }
  mongoc_client_t* c = mongoc_client_new_from_uri_with_error(u, &e);
  mongoc_uri_destroy(u);
  if (c == nullptr) {
    *err = std::string("mongoc_client_new: ") + e.message;
    return nullptr;
  }
  mongoc_client_set_error_api(c, MONGOC_ERROR_API_VERSION_2);
  return c;
}

// One find by _id through libmongoc: the cursor's first document must be
// the one asked for.  Returns "" or what went wrong.  Not inlined, for
// callgrind's --toggle-collect.
__attribute__((noinline)) std::string MongocFindOnce(mongoc_collection_t* coll, const bson_t* opts,
                                                     const std::string& id) {
  bson_t filter = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&filter, "_id", id.c_str());
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, &filter, opts, nullptr);
  const bson_t* doc = nullptr;
  std::string err;
  if (mongoc_cursor_next(cur, &doc)) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it) ||
        std::strcmp(bson_iter_utf8(&it, nullptr), id.c_str()) != 0) {
      err = "find returned another document than " + id;
    }
  } else {
    bson_error_t e;
    err = mongoc_cursor_error(cur, &e) ? std::string("find failed: ") + e.message
                                       : "find returned no document for " + id;
  }
  mongoc_cursor_destroy(cur);
  bson_destroy(&filter);
  return err;
}

// One request/reply over a RawClient: `request` (a prebuilt find) with its
// requestID set to `request_id`, into the thread's buffer `scratch`; the
// reply is checked (CheckFindReply).  Not inlined, for callgrind.
__attribute__((noinline)) std::string RawFindOnce(RawClient* client, const std::string& request, int32_t request_id,
                                                  const char* want_id, std::string* scratch) {
  scratch->assign(request);
  StoreLE32(reinterpret_cast<uint8_t*>(&(*scratch)[4]), request_id);
  std::string err;
  if (!client->RoundTrip(*scratch, &err)) return err;
  return CheckFindReply(client->reply(), client->reply_size(), request_id, want_id);
}

MongocTraffic MeasureMongocTraffic(int server_port) {
  std::string err;
  auto proxy = RecordingProxy::Start(server_port, &err);
  if (!proxy) throw std::runtime_error("recording proxy: " + err);
  std::string uri = "mongodb://127.0.0.1:" + std::to_string(proxy->port()) + "/?directConnection=true";
  mongoc_client_t* client = NewMongocClient(uri, &err);
  if (client == nullptr) throw std::runtime_error(err);
  mongoc_collection_t* coll = mongoc_client_get_collection(client, kDb, kColl);
  bson_t* opts = BCON_NEW("limit", BCON_INT64(1));
  err = MongocFindOnce(coll, opts, DocId(0));  // the handshake, then the find
  size_t mark = proxy->Seen().size();
  const int kFinds = 4;
  for (int i = 1; i <= kFinds && err.empty(); ++i) err = MongocFindOnce(coll, opts, DocId(i % NumDocs()));
  std::vector<SeenMessage> seen = proxy->Seen();
  bson_destroy(opts);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(client);
  proxy.reset();
  if (!err.empty()) throw std::runtime_error("libmongoc through the recording proxy: " + err);
  MongocTraffic t;
  t.messages_per_find = static_cast<double>(seen.size() - mark) / kFinds;
  for (size_t i = mark; i + 1 < seen.size(); ++i) {
    if (seen[i].to_server && seen[i].command == "find" && !seen[i + 1].to_server) {
      t.request_bytes = seen[i].size;
      t.reply_bytes = seen[i + 1].size;
      // The body section (kind 0) comes first: 16-byte header, flagBits, kind byte.
      const SeenMessage& m = seen[i];
      const size_t at = gatedb::server::kHeaderSize + 5;
      bson_t body;
      if (m.size > at + 4 && m.bytes[at - 1] == 0) {
        size_t len = static_cast<size_t>(LoadLE32(m.bytes.data() + at));
        if (len <= m.size - at && bson_init_static(&body, m.bytes.data() + at, len)) {
          char* json = bson_as_relaxed_extended_json(&body, nullptr);
          if (json) t.command_json = json;
          bson_free(json);
        }
      }
      break;
    }
  }
  if (t.request_bytes == 0) throw std::runtime_error("the recording proxy saw no find from libmongoc");
  return t;
}

std::unique_ptr<WireFixture> MakeFixture() {
  auto fx = std::make_unique<WireFixture>();
  auto db = gatedb::Database::Open(fx->dir.path());
  if (!db.ok()) throw std::runtime_error("open: " + db.status().ToString());
  fx->db = std::move(*db);
  const int n = NumDocs();
  gatedb::Collection c = fx->db->GetCollection(kDb, kColl);
  std::vector<gatedb::Document> batch;
  for (int i = 0; i < n; ++i) {
    bson_t* d = bson_new();
    BuildSmallDoc(i, d);
    if (i == 0) fx->doc_bytes = d->len;
    batch.push_back(gatedb::Document::Adopt(d));
    if (batch.size() == 1000 || i == n - 1) {
      auto r = c.InsertMany(batch);
      if (!r.ok() || !r->write_errors.empty()) {
        throw std::runtime_error("InsertMany failed: " +
                                 (r.ok() ? r->write_errors[0].status.ToString() : r.status().ToString()));
      }
      batch.clear();
    }
  }
  fx->ids.reserve(n);
  fx->requests.reserve(n);
  for (int i = 0; i < n; ++i) {
    fx->ids.push_back(DocId(i));
    fx->requests.push_back(BuildFindRequest(fx->ids.back()));
  }
  WaitForQuiescence();

  fx->opts.port = 0;
  fx->opts.quiet = true;
  auto server = gatedb::server::WireServer::Start(fx->db.get(), fx->opts);
  if (!server.ok()) throw std::runtime_error("WireServer::Start: " + server.status().ToString());
  fx->server = std::move(*server);
  fx->uri = "mongodb://127.0.0.1:" + std::to_string(fx->server->port()) + "/?directConnection=true";

  // The real reply's size, from the real server (and every request and
  // reply is the same size: checked on a sample).
  RawClient probe;
  std::string err;
  if (!probe.Connect(fx->server->port(), &err)) throw std::runtime_error("connect to the wire server: " + err);
  std::string scratch;
  for (int i : {0, n / 3, n / 2, n - 1}) {
    err = RawFindOnce(&probe, fx->requests[i], i + 1, fx->ids[i].c_str(), &scratch);
    if (!err.empty()) throw std::runtime_error("find by _id over the wire: " + err);
    size_t sz = probe.reply_size();
    if (i == 0) fx->sample_reply.assign(reinterpret_cast<const char*>(probe.reply()), sz);
    fx->min_reply = fx->min_reply == 0 || sz < fx->min_reply ? sz : fx->min_reply;
    fx->max_reply = sz > fx->max_reply ? sz : fx->max_reply;
    if (fx->requests[i].size() != fx->requests[0].size()) throw std::runtime_error("find requests differ in size");
  }

  fx->echo = EchoServer::Start(fx->sample_reply, &err);
  if (!fx->echo) throw std::runtime_error("echo server: " + err);
  fx->mongoc = MeasureMongocTraffic(fx->server->port());
  return fx;
}

// Process-wide CPU time and context switches per operation over the timed
// loop, all threads of the process together (benchmark clients and
// servers): counters cpu_us_per_op and ctx_switches_per_op, set by thread 0.
class ProcessMeter {
 public:
  void Mark() {
    if (started_) return;
    started_ = true;
    getrusage(RUSAGE_SELF, &start_);
  }
  void Report(benchmark::State& state) const {
    if (state.thread_index() != 0 || !started_ || state.error_occurred() || state.iterations() == 0) return;
    struct rusage end;
    getrusage(RUSAGE_SELF, &end);
    double ops = static_cast<double>(state.iterations()) * state.threads();
    auto us = [](const struct rusage& r) {
      return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
    };
    state.counters["cpu_us_per_op"] = benchmark::Counter((us(end) - us(start_)) / ops);
    double cs = static_cast<double>((end.ru_nvcsw + end.ru_nivcsw) - (start_.ru_nvcsw + start_.ru_nivcsw));
    state.counters["ctx_switches_per_op"] = benchmark::Counter(cs / ops);
  }

 private:
  bool started_ = false;
  struct rusage start_;
};

void BM_WireFindById_Mongoc(benchmark::State& state) {
  WireFixture& fx = *g_fx;
  std::string err;
  mongoc_client_t* client = NewMongocClient(fx.uri, &err);
  if (client == nullptr) {
    Fail(state, err);
    return;
  }
  mongoc_collection_t* coll = mongoc_client_get_collection(client, kDb, kColl);
  bson_t* opts = BCON_NEW("limit", BCON_INT64(1));
  KeyPicker pick(state, 51);
  // The handshake and the first find, outside the timed loop.
  err = MongocFindOnce(coll, opts, fx.ids[pick.Next()]);
  WallRate wall;
  ProcessMeter meter;
  if (!err.empty()) Fail(state, err);
  for (auto _ : state) {
    wall.Mark();
    meter.Mark();
    err = MongocFindOnce(coll, opts, fx.ids[pick.Next()]);
    if (!err.empty()) {
      Fail(state, err);
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  wall.Report(state);
  meter.Report(state);
  bson_destroy(opts);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(client);
}

// The raw client's loop, against the wire server (`echo` false: each
// reply's _id is checked too) or the echo server.
void RunRaw(benchmark::State& state, bool echo) {
  WireFixture& fx = *g_fx;
  RawClient client;
  std::string err;
  if (!client.Connect(echo ? fx.echo->port() : fx.server->port(), &err)) {
    Fail(state, err);
    return;
  }
  KeyPicker pick(state, echo ? 53 : 52);
  std::string scratch;
  // Request ids: distinct per thread, so a stray reply would be noticed.
  int32_t rid = (state.thread_index() + 1) << 24;
  int i = pick.Next();
  err = RawFindOnce(&client, fx.requests[i], ++rid, echo ? nullptr : fx.ids[i].c_str(), &scratch);
  if (!err.empty()) Fail(state, err);
  WallRate wall;
  ProcessMeter meter;
  for (auto _ : state) {
    wall.Mark();
    meter.Mark();
    i = pick.Next();
    err = RawFindOnce(&client, fx.requests[i], ++rid, echo ? nullptr : fx.ids[i].c_str(), &scratch);
    if (!err.empty()) {
      Fail(state, err);
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  wall.Report(state);
  meter.Report(state);
}

void BM_WireFindById_Raw(benchmark::State& state) { RunRaw(state, false); }
void BM_Baseline_TcpEcho(benchmark::State& state) { RunRaw(state, true); }

// 1 and 8 connections (one per thread), wall time, microseconds.
void Connections(benchmark::internal::Benchmark* b) {
  b->Threads(1)->Threads(8)->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_WireFindById_Mongoc)->Apply(Connections);
BENCHMARK(BM_WireFindById_Raw)->Apply(Connections);
BENCHMARK(BM_Baseline_TcpEcho)->Apply(Connections);

}  // namespace
}  // namespace wire_bench

int main(int argc, char** argv) {
  // This binary's default is 10,000 documents (gatedb_bench's is 100,000).
  setenv("GATEDB_BENCH_DOCS", "10000", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#ifndef NDEBUG
  std::fprintf(stderr,
               "***WARNING*** wire_bench was built without NDEBUG (assertions on): figures are not representative\n");
#endif
  mongoc_init();
  std::unique_ptr<wire_bench::WireFixture> fx;
  try {
    fx = wire_bench::MakeFixture();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wire_bench: setup failed: %s\n", e.what());
    mongoc_cleanup();
    return 1;
  }
  wire_bench::g_fx = fx.get();
  auto ctx = [](const char* k, const std::string& v) { benchmark::AddCustomContext(k, v); };
  ctx("gatedb_bench_docs", std::to_string(gatedb_bench::NumDocs()));
  ctx("gatedb_build_type", GATEDB_BENCH_BUILD_TYPE);
  ctx("libmongoc", mongoc_get_version());
  ctx("libbson", bson_get_version());
  ctx("server_threads", "io " + std::to_string(fx->opts.io_threads) + ", workers " +
                            std::to_string(fx->opts.worker_threads));
  ctx("doc_bytes", std::to_string(fx->doc_bytes));
  ctx("raw_find_request_bytes", std::to_string(fx->requests[0].size()));
  ctx("find_reply_bytes", fx->min_reply == fx->max_reply
                              ? std::to_string(fx->min_reply)
                              : std::to_string(fx->min_reply) + ".." + std::to_string(fx->max_reply));
  ctx("echo_request_reply_bytes",
      std::to_string(fx->requests[0].size()) + " / " + std::to_string(fx->sample_reply.size()));
  ctx("mongoc_find_request_reply_bytes",
      std::to_string(fx->mongoc.request_bytes) + " / " + std::to_string(fx->mongoc.reply_bytes));
  char mpf[32];
  std::snprintf(mpf, sizeof mpf, "%.2f", fx->mongoc.messages_per_find);
  ctx("mongoc_messages_per_find", mpf);
  ctx("mongoc_find_command", fx->mongoc.command_json);
  gatedb_bench::ErrorTrackingReporter reporter("wire_bench", benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  wire_bench::g_fx = nullptr;
  fx.reset();  // stops the servers, closes the database, removes the directory
  mongoc_cleanup();
  benchmark::Shutdown();
  return reporter.failed() ? 1 : 0;
}
