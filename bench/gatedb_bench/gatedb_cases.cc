// The gatedb cases of gatedb_bench: the CAS path through the public C++ API
// (gatedb/*.h only) and through RunCommand.  bench/README.md lists them.
#include <gatedb/collection.h>
#include <gatedb/db.h>
#include <gatedb/document.h>
#include <gatedb/options.h>
#include <gatedb/status.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"

namespace gatedb_bench {
namespace {

constexpr char kDb[] = "bench";
constexpr char kColl[] = "orders";
constexpr char kAgent[] = "bench-agent";

struct GatedbFixture : Fixture {
  TempDir dir{"gatedb"};
  std::unique_ptr<gatedb::Database> db;
  std::atomic<int64_t> seq{0};  // write_seq of keyed writes, unique per fixture
  std::atomic<int64_t> hot_attempts{0};
  std::atomic<int64_t> hot_conflicts{0};

  gatedb::Collection coll() { return db->GetCollection(kDb, kColl); }
};

// A fresh, empty database.
std::unique_ptr<GatedbFixture> OpenGatedb() {
  auto fx = std::make_unique<GatedbFixture>();
  auto db = gatedb::Database::Open(fx->dir.path());
  if (!db.ok()) throw std::runtime_error("open: " + db.status().ToString());
  fx->db = std::move(*db);
  return fx;
}

// Inserts NumDocs() documents with InsertMany in batches of 1000.
void FillGatedb(GatedbFixture& fx) {
  gatedb::Collection c = fx.coll();
  std::vector<gatedb::Document> batch;
  batch.reserve(1000);
  const int n = NumDocs();
  for (int i = 0; i < n; ++i) {
    bson_t* d = bson_new();
    BuildDoc(i, d);
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
}

// A fresh database with NumDocs() documents, inserted with InsertMany in
// batches of 1000.
std::unique_ptr<GatedbFixture> LoadGatedb() {
  auto fx = OpenGatedb();
  FillGatedb(*fx);
  return fx;
}

gatedb::Document IdFilter(int i) {
  bson_t* f = bson_new();
  std::string id = DocId(i);
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return gatedb::Document::Adopt(f);
}

// {$set: {score: v}}
gatedb::Document SetScore(double v) {
  bson_t* u = bson_new();
  bson_t set;
  BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
  BSON_APPEND_DOUBLE(&set, kChangedField, v);
  bson_append_document_end(u, &set);
  return gatedb::Document::Adopt(u);
}

int64_t VersionOf(const gatedb::Document& d) {
  bson_iter_t it;
  return bson_iter_init_find(&it, d.bson(), kVersionField) ? bson_iter_as_int64(&it) : -1;
}

// One gated update: read by _id, then a basisVersion-gated $set of one
// field.  Returns "" or what went wrong.  Not inlined, so that a profiler
// can collect exactly this (valgrind --toggle-collect='*GatedUpdateOnce*').
__attribute__((noinline)) std::string GatedUpdateOnce(gatedb::Collection& c, int i, const std::string* task,
                                                      int64_t seq, bool sync) {
  gatedb::Document filter = IdFilter(i);
  auto cur = c.FindOne(filter.view());
  if (!cur.ok() || !*cur) return "read failed";
  gatedb::UpdateOptions o;
  o.write.sync = sync;
  o.write.basis_version = VersionOf(**cur);
  o.write.context.agent_id = kAgent;
  if (task != nullptr) {
    o.write.context.task_id = *task;
    o.write.context.write_seq = seq;
  }
  gatedb::Document update = SetScore(NextScore());
  auto r = c.UpdateOne(filter.view(), update.view(), o);
  if (!r.ok()) return r.status().ToString();
  return r->modified_count == 1 ? "" : "not modified";
}

void RunGatedUpdate(benchmark::State& state, const std::string& base, bool keyed, bool sync) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey(base, state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  KeyPicker pick(state, 42);
  const std::string task = "bench-task-" + std::to_string(state.thread_index());
  WallRate wall;
  for (auto _ : state) {
    wall.Mark();
    std::string err = GatedUpdateOnce(c, pick.Next(), keyed ? &task : nullptr, keyed ? ++fx->seq : 0, sync);
    if (!err.empty()) {
      Fail(state, err);
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
  wall.Report(state);
}

void BM_GatedUpdate(benchmark::State& state) {
  RunGatedUpdate(state, "BM_GatedUpdate/key:" + std::to_string(state.range(0)), state.range(0) != 0, false);
}
BENCHMARK(BM_GatedUpdate)->ArgName("key")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_GatedUpdate_Durable(benchmark::State& state) {
  RunGatedUpdate(state, "BM_GatedUpdate_Durable", false, true);
}
// Writers 1, 2, 4 and 8, each on its own slice of the documents (no two
// threads touch one document): 4 and 8 show how far group commit shares
// the fsync when many agents write durably at once.
BENCHMARK(BM_GatedUpdate_Durable)->Apply(DurableWriters);

// The MongoDB idiom: read, then filter {_id, version} with $set + $inc version.
void BM_MongoIdiomUpdate(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_MongoIdiomUpdate", state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  KeyPicker pick(state, 43);
  for (auto _ : state) {
    int i = pick.Next();
    gatedb::Document by_id = IdFilter(i);
    auto cur = c.FindOne(by_id.view());
    if (!cur.ok() || !*cur) {
      Fail(state, "read failed");
      break;
    }
    bson_t* f = bson_new();
    std::string id = DocId(i);
    BSON_APPEND_UTF8(f, "_id", id.c_str());
    BSON_APPEND_INT64(f, kVersionField, VersionOf(**cur));
    gatedb::Document filter = gatedb::Document::Adopt(f);
    bson_t* u = bson_new();
    bson_t set, inc;
    BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
    BSON_APPEND_DOUBLE(&set, kChangedField, NextScore());
    bson_append_document_end(u, &set);
    BSON_APPEND_DOCUMENT_BEGIN(u, "$inc", &inc);
    BSON_APPEND_INT32(&inc, kVersionField, 1);
    bson_append_document_end(u, &inc);
    gatedb::Document update = gatedb::Document::Adopt(u);
    gatedb::UpdateOptions o;
    o.write.context.agent_id = kAgent;
    auto r = c.UpdateOne(filter.view(), update.view(), o);
    if (!r.ok() || r->modified_count != 1) {
      Fail(state, r.ok() ? "not modified" : r.status().ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_MongoIdiomUpdate)->UseRealTime()->Unit(benchmark::kMicrosecond);

bool ReplyOk(const gatedb::Document& reply) {
  bson_iter_t it;
  return bson_iter_init_find(&it, reply.bson(), "ok") && bson_iter_as_double(&it) == 1.0;
}

// The gated update as two commands through RunCommand: find by _id, then
// update with basisVersion.
void BM_RunCommandUpdate(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_RunCommandUpdate", state), LoadGatedb);
  KeyPicker pick(state, 44);
  for (auto _ : state) {
    std::string id = DocId(pick.Next());
    bson_t find = BSON_INITIALIZER;
    bson_t sub;
    BSON_APPEND_UTF8(&find, "find", kColl);
    BSON_APPEND_DOCUMENT_BEGIN(&find, "filter", &sub);
    BSON_APPEND_UTF8(&sub, "_id", id.c_str());
    bson_append_document_end(&find, &sub);
    BSON_APPEND_INT32(&find, "limit", 1);
    BSON_APPEND_UTF8(&find, "$db", kDb);
    gatedb::Document found = fx->db->RunCommand(gatedb::DocumentView(&find));
    bson_destroy(&find);
    bson_iter_t it, doc;
    int64_t version = -1;
    if (bson_iter_init(&it, found.bson()) && bson_iter_find_descendant(&it, "cursor.firstBatch.0.version", &doc)) {
      version = bson_iter_as_int64(&doc);
    }
    if (version < 0) {
      Fail(state, "find failed: " + found.ToJson());
      break;
    }
    bson_t upd = BSON_INITIALIZER;
    bson_t arr, stmt, q, u, set, wc;
    BSON_APPEND_UTF8(&upd, "update", kColl);
    BSON_APPEND_ARRAY_BEGIN(&upd, "updates", &arr);
    BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &stmt);
    BSON_APPEND_DOCUMENT_BEGIN(&stmt, "q", &q);
    BSON_APPEND_UTF8(&q, "_id", id.c_str());
    bson_append_document_end(&stmt, &q);
    BSON_APPEND_DOCUMENT_BEGIN(&stmt, "u", &u);
    BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
    BSON_APPEND_DOUBLE(&set, kChangedField, NextScore());
    bson_append_document_end(&u, &set);
    bson_append_document_end(&stmt, &u);
    BSON_APPEND_INT64(&stmt, "basisVersion", version);
    bson_append_document_end(&arr, &stmt);
    bson_append_array_end(&upd, &arr);
    BSON_APPEND_DOCUMENT_BEGIN(&upd, "writeContext", &wc);
    BSON_APPEND_UTF8(&wc, "agentId", kAgent);
    bson_append_document_end(&upd, &wc);
    BSON_APPEND_UTF8(&upd, "$db", kDb);
    gatedb::Document reply = fx->db->RunCommand(gatedb::DocumentView(&upd));
    bson_destroy(&upd);
    if (!ReplyOk(reply) || !bson_iter_init_find(&it, reply.bson(), "nModified") || bson_iter_as_int64(&it) != 1) {
      Fail(state, "update failed: " + reply.ToJson());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_RunCommandUpdate)->UseRealTime()->Unit(benchmark::kMicrosecond);

// How many documents the replay and stale cases prepare.
int PreparedDocs() { return NumDocs() < 1000 ? NumDocs() : 1000; }

constexpr char kReplayTask[] = "replay-task";

// A keyed gated write whose key (task, writeSeq) was already used: answered
// from the idempotency log.  Setup: one keyed write on each of the first
// PreparedDocs() documents, write_seq = document index.
void BM_IdempotentReplay(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_IdempotentReplay", state), [] {
    auto f = LoadGatedb();
    gatedb::Collection c = f->coll();
    for (int i = 0; i < PreparedDocs(); ++i) {
      gatedb::UpdateOptions o;
      o.write.basis_version = 0;
      o.write.context.agent_id = kAgent;
      o.write.context.task_id = kReplayTask;
      o.write.context.write_seq = i;
      auto r = c.UpdateOne(IdFilter(i).view(), SetScore(-i).view(), o);
      if (!r.ok() || r->replayed) throw std::runtime_error("replay setup failed");
    }
    return f;
  });
  gatedb::Collection c = fx->coll();
  std::mt19937 rng(45);
  std::uniform_int_distribution<int> dist(0, PreparedDocs() - 1);
  for (auto _ : state) {
    int i = dist(rng);
    gatedb::UpdateOptions o;
    o.write.basis_version = 0;
    o.write.context.agent_id = kAgent;
    o.write.context.task_id = kReplayTask;
    o.write.context.write_seq = i;
    gatedb::Document filter = IdFilter(i);
    gatedb::Document update = SetScore(-i);
    auto r = c.UpdateOne(filter.view(), update.view(), o);
    if (!r.ok() || !r->replayed) {
      Fail(state, r.ok() ? "expected a replay" : r.status().ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_IdempotentReplay)->UseRealTime()->Unit(benchmark::kMicrosecond);

// A gated write with an old basis: refused with VersionConflict and its
// errInfo (conflictingFields from the journal, lastWriter).  Setup: the first
// PreparedDocs() documents are updated twice (version 2); the writes say 0.
void BM_StaleWriteRejected(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_StaleWriteRejected", state), [] {
    auto f = LoadGatedb();
    gatedb::Collection c = f->coll();
    for (int i = 0; i < PreparedDocs(); ++i) {
      for (int v = 0; v < 2; ++v) {
        gatedb::UpdateOptions o;
        o.write.basis_version = v;
        o.write.context.agent_id = "other-agent";
        auto r = c.UpdateOne(IdFilter(i).view(), SetScore(1000.0 + v).view(), o);
        if (!r.ok() || r->modified_count != 1) throw std::runtime_error("stale setup failed");
      }
    }
    return f;
  });
  gatedb::Collection c = fx->coll();
  std::mt19937 rng(46);
  std::uniform_int_distribution<int> dist(0, PreparedDocs() - 1);
  for (auto _ : state) {
    gatedb::UpdateOptions o;
    o.write.basis_version = 0;
    o.write.context.agent_id = kAgent;
    gatedb::Document filter = IdFilter(dist(rng));
    gatedb::Document update = SetScore(NextScore());
    auto r = c.UpdateOne(filter.view(), update.view(), o);
    if (r.ok() || r.status().code() != gatedb::ErrorCode::kVersionConflict || r.status().err_info() == nullptr) {
      Fail(state, "expected a VersionConflict with errInfo");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_StaleWriteRejected)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Two threads read-think(0)-write one document through the retry helper.
// writes_per_s: successful writes per second (both threads);
// conflict_rate: refused attempts / all attempts.
void BM_HotDocContended(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_HotDocContended", state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  if (state.thread_index() == 0) {
    fx->hot_attempts = 0;
    fx->hot_conflicts = 0;
  }
  gatedb::Document filter = IdFilter(0);
  gatedb::GatedWriteOptions go;
  go.context.agent_id = "hot-agent-" + std::to_string(state.thread_index());
  go.max_attempts = 100;
  int64_t ok = 0;
  for (auto _ : state) {
    double score = NextScore();
    auto r = c.WriteWithVersionGate(
        filter.view(), [&](const gatedb::Document&) -> gatedb::StatusOr<gatedb::Document> { return SetScore(score); },
        go);
    if (r.ok()) {
      ++ok;
      fx->hot_attempts += r->attempts;
      fx->hot_conflicts += r->attempts - 1;
    } else if (r.status().code() == gatedb::ErrorCode::kVersionConflict) {
      fx->hot_attempts += go.max_attempts;
      fx->hot_conflicts += go.max_attempts;
    } else {
      Fail(state, r.status().ToString());
      break;
    }
  }
  state.counters["writes_per_s"] = benchmark::Counter(static_cast<double>(ok), benchmark::Counter::kIsRate);
  if (state.thread_index() == 0) {
    int64_t attempts = fx->hot_attempts.load();
    state.counters["conflict_rate"] =
        benchmark::Counter(attempts == 0 ? 0.0 : static_cast<double>(fx->hot_conflicts.load()) / attempts);
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_HotDocContended)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// InsertOne of new ~1 KB documents into fx's collection: document
// NumDocs() + 1, + 2, ... (fresh _id, email and orderNo; unique across calls
// of the benchmark, and the same sequence in every fixture).
void RunInsert(benchmark::State& state, GatedbFixture& fx) {
  gatedb::Collection c = fx.coll();
  gatedb::WriteOptions o;
  o.context.agent_id = kAgent;
  for (auto _ : state) {
    int i = NumDocs() + static_cast<int>(++fx.seq);
    bson_t* d = bson_new();
    BuildDoc(i, d);
    gatedb::Document doc = gatedb::Document::Adopt(d);
    auto r = c.InsertOne(doc.view(), o);
    if (!r.ok()) {
      Fail(state, r.status().ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, fx);
}

// InsertOne of a new ~1 KB document (a fresh _id) into the loaded collection.
void BM_Insert(benchmark::State& state) {
  RunInsert(state, *AcquireFixture<GatedbFixture>(InstanceKey("BM_Insert", state), LoadGatedb));
}
BENCHMARK(BM_Insert)->UseRealTime()->Unit(benchmark::kMicrosecond);

// FindOne({_id: <random>}).
void BM_FindById(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_FindById", state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  KeyPicker pick(state, 47);
  for (auto _ : state) {
    gatedb::Document filter = IdFilter(pick.Next());
    auto r = c.FindOne(filter.view());
    if (!r.ok() || !*r) {
      Fail(state, "not found");
      break;
    }
    benchmark::DoNotOptimize((**r).data());
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_FindById)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Find({category: "cat-NN"}): a scan of every document, 1% match.
void BM_FindByFilterScan(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_FindByFilterScan", state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  std::mt19937 rng(48);
  const size_t expected = static_cast<size_t>(NumDocs() / 100);
  int64_t docs_scanned = 0;
  for (auto _ : state) {
    char cat[16];
    std::snprintf(cat, sizeof cat, "cat-%02d", static_cast<int>(rng() % 100));
    bson_t* f = bson_new();
    BSON_APPEND_UTF8(f, "category", cat);
    gatedb::Document filter = gatedb::Document::Adopt(f);
    auto r = c.Find(filter.view());
    if (!r.ok() || r->size() < expected) {
      Fail(state, "scan found too few documents");
      break;
    }
    docs_scanned += NumDocs();
  }
  state.counters["docs_scanned_per_s"] = benchmark::Counter(static_cast<double>(docs_scanned), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_FindByFilterScan)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- Secondary indexes (issue 13) ------------------------------------------

// A fresh database whose collection has the first `indexes` of
// kIndexedFields (one CreateIndexes on the empty collection), then
// FillGatedb: the index entries are written with the documents (faster
// than building them afterwards: 14 to 15 s instead of 16 to 17 s at 100,000
// documents and 3 indexes).
std::unique_ptr<GatedbFixture> LoadGatedbIndexed(int indexes) {
  auto fx = OpenGatedb();
  std::vector<gatedb::IndexModel> models;
  for (int k = 0; k < indexes; ++k) {
    bson_t* keys = bson_new();
    BSON_APPEND_INT32(keys, kIndexedFields[k].name, 1);
    gatedb::IndexModel m;
    m.keys = gatedb::Document::Adopt(keys);
    m.unique = kIndexedFields[k].unique;
    models.push_back(std::move(m));
  }
  if (!models.empty()) {
    auto r = fx->coll().CreateIndexes(models);
    if (!r.ok()) throw std::runtime_error("CreateIndexes: " + r.status().ToString());
  }
  FillGatedb(*fx);
  return fx;
}

// Throws unless explain says that `filter` is answered by the index `name`
// (FETCH over IXSCAN), so that no index case quietly measures a scan.
void ExpectIndexPlan(gatedb::Collection& c, const gatedb::Document& filter, const std::string& name) {
  auto e = c.Explain(filter.view(), gatedb::FindOptions(), "queryPlanner");
  bson_iter_t it, found;
  if (!e.ok() || !bson_iter_init(&it, e->bson()) ||
      !bson_iter_find_descendant(&it, "queryPlanner.winningPlan.inputStage.indexName", &found) ||
      !BSON_ITER_HOLDS_UTF8(&found) || name != bson_iter_utf8(&found, nullptr)) {
    throw std::runtime_error("not an index plan on " + name + ": " + (e.ok() ? e->ToJson() : e.status().ToString()));
  }
}

// {email: Email(i)}
gatedb::Document EmailFilter(int i) {
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "email", Email(i).c_str());
  return gatedb::Document::Adopt(f);
}

// {orderNo: {$gte: i, $lt: i + RangeDocs()}}
gatedb::Document OrderNoRange(int i) {
  bson_t* f = bson_new();
  bson_t r;
  BSON_APPEND_DOCUMENT_BEGIN(f, "orderNo", &r);
  BSON_APPEND_INT32(&r, "$gte", i);
  BSON_APPEND_INT32(&r, "$lt", i + RangeDocs());
  bson_append_document_end(f, &r);
  return gatedb::Document::Adopt(f);
}

// The read cases' shared fixture (they only read): NumDocs() documents
// with all kIndexedFields indexed, each plan checked once by explain.
std::shared_ptr<GatedbFixture> IndexedReadFixture(const benchmark::State& state) {
  return AcquireFixture<GatedbFixture>(InstanceKey("gatedb_indexed_reads", state), [] {
    auto f = LoadGatedbIndexed(kNumIndexedFields);
    gatedb::Collection c = f->coll();
    ExpectIndexPlan(c, EmailFilter(0), "email_1");
    ExpectIndexPlan(c, OrderNoRange(0), "orderNo_1");
    return f;
  });
}

// One find through an index; returns the documents found (-1: an error).
// Not inlined (valgrind --toggle-collect='*IndexedFindOnce*').
__attribute__((noinline)) int64_t IndexedFindOnce(gatedb::Collection& c, const gatedb::Document& filter) {
  auto r = c.Find(filter.view());
  if (!r.ok()) return -1;
  for (const gatedb::Document& d : *r) benchmark::DoNotOptimize(d.data());
  return static_cast<int64_t>(r->size());
}

// Find({email: <random>}) on the unique index email_1: one document.
void BM_IndexedFindEq(benchmark::State& state) {
  auto fx = IndexedReadFixture(state);
  gatedb::Collection c = fx->coll();
  KeyPicker pick(state, 70);
  for (auto _ : state) {
    gatedb::Document filter = EmailFilter(pick.Next());
    if (IndexedFindOnce(c, filter) != 1) {
      Fail(state, "expected exactly 1 document: " + filter.ToJson());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_IndexedFindEq)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Find({orderNo: {$gte: x, $lt: x + 100}}) on orderNo_1: exactly 100
// documents per query (items: queries; docs_per_s: documents returned).
void BM_IndexedRange100(benchmark::State& state) {
  auto fx = IndexedReadFixture(state);
  gatedb::Collection c = fx->coll();
  KeyPicker pick(state, 71, RangeDocs());
  int64_t docs = 0;
  for (auto _ : state) {
    gatedb::Document filter = OrderNoRange(pick.Next());
    int64_t n = IndexedFindOnce(c, filter);
    if (n != RangeDocs()) {
      Fail(state, "expected " + std::to_string(RangeDocs()) + " documents, got " + std::to_string(n) + ": " +
                      filter.ToJson());
      break;
    }
    docs += n;
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_IndexedRange100)->UseRealTime()->Unit(benchmark::kMicrosecond);

// BM_Insert into a collection with the first `indexes` of kIndexedFields
// (0 or 3) indexed: the same documents at both arguments.
void BM_InsertIndexed(benchmark::State& state) {
  const int indexes = static_cast<int>(state.range(0));
  RunInsert(state, *AcquireFixture<GatedbFixture>(
                        InstanceKey("BM_InsertIndexed/indexes:" + std::to_string(indexes), state),
                        [indexes] { return LoadGatedbIndexed(indexes); }));
}
BENCHMARK(BM_InsertIndexed)->ArgName("indexes")->Arg(0)->Arg(kNumIndexedFields)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

// ---- Cursors and aggregation (issue 14) ---------------------------------------

// aggregate [{$group: {_id: "$category", total: {$sum: "$orderNo"}}}]:
// every document read, 100 groups (items: pipelines; docs_per_s: documents
// grouped).  Baseline: BM_Baseline_SqliteJsonGroupSum.
void BM_AggGroupSum(benchmark::State& state) {
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_FindByFilterScan", state), LoadGatedb);
  std::string cmd_json = std::string(R"({"aggregate": ")") + kColl +
                         R"(", "pipeline": [{"$group": {"_id": "$category", "total": {"$sum": "$orderNo"}}}], )"
                         R"("cursor": {"batchSize": 1000}, "$db": ")" + kDb + "\"}";
  auto cmd = gatedb::Document::FromJson(cmd_json);
  if (!cmd.ok()) {
    Fail(state, "bad command");
    return;
  }
  int64_t docs = 0;
  for (auto _ : state) {
    gatedb::Document reply = fx->db->RunCommand(cmd->view());
    bson_iter_t it, batch;
    uint32_t groups = 0;
    if (bson_iter_init(&it, reply.bson()) && bson_iter_find_descendant(&it, "cursor.firstBatch", &batch)) {
      bson_t arr;
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bson_iter_array(&batch, &len, &data);
      if (bson_init_static(&arr, data, len)) groups = bson_count_keys(&arr);
    }
    if (groups != 100) {
      Fail(state, "expected 100 groups: " + reply.ToJson());
      break;
    }
    docs += NumDocs();
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_AggGroupSum)->UseRealTime()->Unit(benchmark::kMillisecond);

// Every document of the collection through the typed API: batch_size:100
// pages a Cursor (a getMore per 100 documents); batch_size:0 is Find, the
// whole result in one vector (the issue's "one batch").  items: scans.
void BM_FindPaged(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto fx = AcquireFixture<GatedbFixture>(InstanceKey("BM_FindByFilterScan", state), LoadGatedb);
  gatedb::Collection c = fx->coll();
  gatedb::Document all = gatedb::Document::Adopt(bson_new());
  int64_t docs = 0;
  for (auto _ : state) {
    int64_t n = 0;
    if (batch == 0) {
      auto r = c.Find(all.view());
      if (r.ok()) {
        for (const gatedb::Document& d : *r) benchmark::DoNotOptimize(d.data());
        n = static_cast<int64_t>(r->size());
      }
    } else {
      gatedb::FindOptions o;
      o.batch_size = batch;
      auto cur = c.FindCursor(all.view(), o);
      gatedb::Document d;
      while (cur.ok()) {
        auto more = cur->Next(&d);
        if (!more.ok() || !*more) break;
        benchmark::DoNotOptimize(d.data());
        ++n;
      }
    }
    if (n != NumDocs()) {
      Fail(state, "scan returned " + std::to_string(n) + " documents");
      break;
    }
    docs += n;
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_FindPaged)->ArgName("batch")->Arg(0)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gatedb_bench
