// Cursors through the command door: bounded memory, expiry, sessions and
// transactions, sorts that spill, time limits, and concurrent getMores.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

int64_t Int(const bson_t* doc, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, dotted, &f)) return -1;
  return bson_iter_as_int64(&f);
}

std::string Str(const bson_t* doc, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, dotted, &f) || !BSON_ITER_HOLDS_UTF8(&f)) return "";
  return bson_iter_utf8(&f, nullptr);
}

bool Ok(const Document& reply) { return Int(reply.bson(), "ok") == 1; }

// The _ids of cursor.<batch> (firstBatch or nextBatch).
std::vector<int64_t> BatchIds(const Document& reply, const char* batch) {
  std::vector<int64_t> ids;
  bson_iter_t it, arr, d, id;
  std::string path = std::string("cursor.") + batch;
  if (!bson_iter_init(&it, reply.bson()) || !bson_iter_find_descendant(&it, path.c_str(), &arr)) return ids;
  bson_iter_recurse(&arr, &d);
  while (bson_iter_next(&d)) {
    bson_iter_t doc;
    bson_iter_recurse(&d, &doc);
    if (bson_iter_find(&doc, "_id")) ids.push_back(bson_iter_as_int64(&doc));
  }
  (void)id;
  return ids;
}

Document GetMore(Database* db, int64_t id, const std::string& coll, int64_t batch = 0, const char* extra = "") {
  std::string cmd = R"({"getMore": {"$numberLong": ")" + std::to_string(id) + R"("}, "collection": ")" + coll + "\"";
  if (batch > 0) cmd += R"(, "batchSize": )" + std::to_string(batch);
  cmd += extra;
  cmd += "}";
  return db->RunCommand(Json(cmd).view());
}

// Inserts n documents {_id: i, k: i % 7, pad: <pad bytes>} in batches.
void Load(Database* db, const std::string& coll, int n, size_t pad) {
  const std::string padding(pad, 'x');
  for (int start = 0; start < n; start += 1000) {
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "insert", coll.c_str());
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
    for (int i = start; i < std::min(n, start + 1000); ++i) {
      bson_t d;
      BSON_APPEND_DOCUMENT_BEGIN(&arr, std::to_string(i - start).c_str(), &d);
      BSON_APPEND_INT64(&d, "_id", i);
      BSON_APPEND_INT32(&d, "k", i % 7);
      BSON_APPEND_UTF8(&d, "pad", padding.c_str());
      bson_append_document_end(&arr, &d);
    }
    bson_append_array_end(cmd, &arr);
    Document reply = db->RunCommand(Document::Adopt(cmd).view());
    ASSERT_TRUE(Ok(reply)) << reply.ToJson();
  }
}

// Resident set size of this process, in bytes.
size_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Sanitizers keep memory of their own: AddressSanitizer quarantines what is
// freed (256 MB by default) and ThreadSanitizer's shadow and history grow with
// every access, so resident memory stops measuring what the cursor holds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kUnderSanitizer = true;
#else
constexpr bool kUnderSanitizer = false;
#endif
#else
constexpr bool kUnderSanitizer = false;
#endif

TEST(CursorTest, PagingALargeScanKeepsMemoryFlat) {
  if (kUnderSanitizer) GTEST_SKIP() << "RSS is not a measure of held memory under a sanitizer";
  test::TempDir dir;
  Options opts;
  opts.block_cache_bytes = 8u << 20;
  auto db = Database::Open(dir.path(), opts);
  ASSERT_OK(db);
  constexpr int kDocs = 40000;
  constexpr size_t kPad = 4000;  // 160 MB of documents in all
  Load(db->get(), "big", kDocs, kPad);

  const size_t rss_start = RssBytes();
  Document first = (*db)->RunCommand(Json(R"({"find": "big", "batchSize": 100})").view());
  ASSERT_TRUE(Ok(first)) << Str(first.bson(), "errmsg");
  int64_t id = Int(first.bson(), "cursor.id");
  ASSERT_NE(id, 0);
  int64_t seen = static_cast<int64_t>(BatchIds(first, "firstBatch").size());
  size_t rss_max = rss_start;
  int64_t expect_next = seen;
  while (id != 0) {
    Document more = GetMore(db->get(), id, "big", 100);
    ASSERT_TRUE(Ok(more)) << Str(more.bson(), "errmsg");
    std::vector<int64_t> ids = BatchIds(more, "nextBatch");
    ASSERT_LE(ids.size(), 100u);
    for (int64_t i : ids) ASSERT_EQ(i, expect_next++);  // in order, none lost or repeated
    seen += static_cast<int64_t>(ids.size());
    id = Int(more.bson(), "cursor.id");
    rss_max = std::max(rss_max, RssBytes());
  }
  EXPECT_EQ(seen, kDocs);
  RecordProperty("rss_growth_mb", static_cast<int>((rss_max - rss_start) >> 20));
  // Holding the result would take 160 MB more; one batch is 400 KB.  The
  // margin covers RocksDB's block cache (8 MB), its table readers and the
  // allocator's slack.
  EXPECT_LT(rss_max - rss_start, size_t{48} << 20)
      << "RSS grew from " << (rss_start >> 20) << " MB to " << (rss_max >> 20) << " MB while paging";
}

TEST(CursorTest, IdleCursorsExpire) {
  test::TempDir dir;
  Options opts;
  opts.cursor_timeout_ms = 50;
  auto db = Database::Open(dir.path(), opts);
  ASSERT_OK(db);
  Load(db->get(), "c", 10, 1);
  Document first = (*db)->RunCommand(Json(R"({"find": "c", "batchSize": 2})").view());
  int64_t id = Int(first.bson(), "cursor.id");
  ASSERT_NE(id, 0);
  // Used within its timeout it lives on.
  ASSERT_TRUE(Ok(GetMore(db->get(), id, "c", 2)));
  // Idle past it (the background sweep runs at least every timeout), it is gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  Document late = GetMore(db->get(), id, "c", 2);
  EXPECT_EQ(Str(late.bson(), "codeName"), "CursorNotFound") << late.ToJson();
}

TEST(CursorTest, SessionCursorAnswersOnlyItsSession) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Load(db->get(), "c", 10, 1);
  const std::string lsid_a = R"("lsid": {"id": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAA==", "subType": "04"}}})";
  const std::string lsid_b = R"("lsid": {"id": {"$binary": {"base64": "AQEBAQEBAQEBAQEBAQEBAQ==", "subType": "04"}}})";
  Document first = (*db)->RunCommand(Json(R"({"find": "c", "batchSize": 2, )" + lsid_a + "}").view());
  ASSERT_TRUE(Ok(first)) << first.ToJson();
  int64_t id = Int(first.bson(), "cursor.id");
  Document other = GetMore(db->get(), id, "c", 2, (", " + lsid_b).c_str());
  EXPECT_EQ(Int(other.bson(), "code"), 50738) << other.ToJson();
  Document none = GetMore(db->get(), id, "c", 2);
  EXPECT_EQ(Int(none.bson(), "code"), 50738) << none.ToJson();
  Document mine = GetMore(db->get(), id, "c", 2, (", " + lsid_a).c_str());
  EXPECT_EQ(BatchIds(mine, "nextBatch"), (std::vector<int64_t>{2, 3}));
}

TEST(CursorTest, TransactionCursorSeesItsWritesAndDiesWithIt) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Load(db->get(), "c", 5, 1);
  const std::string s = R"("lsid": {"id": {"$binary": {"base64": "AgICAgICAgICAgICAgICAg==", "subType": "04"}}}, )"
                        R"("txnNumber": {"$numberLong": "1"}, "autocommit": false)";
  Document ins = (*db)->RunCommand(
      Json(R"({"insert": "c", "documents": [{"_id": 100}], "startTransaction": true, )" + s + "}").view());
  ASSERT_TRUE(Ok(ins)) << ins.ToJson();
  Document first = (*db)->RunCommand(Json(R"({"find": "c", "batchSize": 4, )" + s + "}").view());
  ASSERT_TRUE(Ok(first)) << first.ToJson();
  int64_t id = Int(first.bson(), "cursor.id");
  ASSERT_NE(id, 0);
  // Outside the transaction the cursor is not there to be had.
  Document outside = GetMore(db->get(), id, "c");
  EXPECT_FALSE(Ok(outside));
  Document inside = GetMore(db->get(), id, "c", 0, (", " + s).c_str());
  ASSERT_TRUE(Ok(inside)) << inside.ToJson();
  EXPECT_EQ(BatchIds(inside, "nextBatch"), (std::vector<int64_t>{4, 100}));  // its own insert

  // A second cursor left open when the transaction commits is killed.
  Document again = (*db)->RunCommand(Json(R"({"find": "c", "batchSize": 1, )" + s + "}").view());
  int64_t id2 = Int(again.bson(), "cursor.id");
  ASSERT_NE(id2, 0);
  Document commit = (*db)->RunCommand(Json(R"({"commitTransaction": 1, "$db": "admin", )" + s + "}").view());
  ASSERT_TRUE(Ok(commit)) << commit.ToJson();
  Document after = GetMore(db->get(), id2, "c", 0, (", " + s).c_str());
  EXPECT_FALSE(Ok(after)) << after.ToJson();
  Document killed = (*db)->RunCommand(
      Json(R"({"killCursors": "c", "cursors": [{"$numberLong": ")" + std::to_string(id2) + R"("}]})").view());
  EXPECT_EQ(BatchIds(killed, "cursorsKilled").size(), 0u);
}

TEST(CursorTest, LargeSortSpillsWithAllowDiskUseAndCleansUp) {
  test::TempDir dir;
  Options opts;
  opts.sort_memory_bytes = 64 << 10;  // 64 KiB: the 500 KB below must spill
  auto db = Database::Open(dir.path(), opts);
  ASSERT_OK(db);
  Load(db->get(), "s", 2000, 200);
  Document refused = (*db)->RunCommand(Json(R"({"find": "s", "sort": {"k": -1}})").view());
  EXPECT_EQ(Str(refused.bson(), "codeName"), "QueryExceededMemoryLimitNoDiskUseAllowed") << refused.ToJson();
  // A limit makes it a top-k sort: in memory.
  Document top = (*db)->RunCommand(Json(R"({"find": "s", "sort": {"k": -1, "_id": 1}, "limit": 3})").view());
  EXPECT_EQ(BatchIds(top, "firstBatch"), (std::vector<int64_t>{6, 13, 20}));

  Document first = (*db)->RunCommand(
      Json(R"({"find": "s", "sort": {"k": -1}, "allowDiskUse": true, "batchSize": 500, "projection": {"pad": 0}})")
          .view());
  ASSERT_TRUE(Ok(first)) << first.ToJson();
  const std::string tmp = dir.path() + "/_tmp";
  EXPECT_TRUE(std::filesystem::exists(tmp) && !std::filesystem::is_empty(tmp)) << "the sort did not spill";
  std::vector<int64_t> ids = BatchIds(first, "firstBatch");
  int64_t id = Int(first.bson(), "cursor.id");
  while (id != 0) {
    Document more = GetMore(db->get(), id, "s", 500);
    ASSERT_TRUE(Ok(more)) << more.ToJson();
    for (int64_t i : BatchIds(more, "nextBatch")) ids.push_back(i);
    id = Int(more.bson(), "cursor.id");
  }
  // k descending, ties in _id order (a stable sort of the _id-ordered scan).
  std::vector<int64_t> want;
  for (int k = 6; k >= 0; --k) {
    for (int i = 0; i < 2000; ++i) {
      if (i % 7 == k) want.push_back(i);
    }
  }
  EXPECT_EQ(ids, want);
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "run files outlived the exhausted cursor";
}

TEST(CursorTest, RunFilesLeftByACrashAreRemovedAtOpen) {
  test::TempDir dir;
  {
    auto db = Database::Open(dir.path());
    ASSERT_OK(db);
  }
  const std::string tmp = dir.path() + "/_tmp";
  std::filesystem::create_directories(tmp);
  std::ofstream(tmp + "/sort-999-0.run") << "left behind";
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  EXPECT_FALSE(std::filesystem::exists(tmp + "/sort-999-0.run"));
}

TEST(CursorTest, MaxTimeMSStopsALongFind) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Load(db->get(), "t", 60000, 10);
  // A filter nothing matches: the whole collection is scanned (well over
  // 1 ms) before the first batch could fill.
  Document r = (*db)->RunCommand(Json(R"({"find": "t", "filter": {"k": 99}, "maxTimeMS": 1})").view());
  EXPECT_EQ(Str(r.bson(), "codeName"), "MaxTimeMSExpired") << r.ToJson();
  Document unlimited = (*db)->RunCommand(Json(R"({"find": "t", "filter": {"k": 99}, "maxTimeMS": 0})").view());
  EXPECT_TRUE(Ok(unlimited)) << unlimited.ToJson();
}

// Several threads page through one cursor at once: each batch goes to
// exactly one of them (the others see CursorInUse and retry), and together
// they see every document exactly once.
TEST(CursorTest, ConcurrentGetMoresOnOneCursorNeverDuplicateOrLose) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  constexpr int kDocs = 3000;
  Load(db->get(), "m", kDocs, 1);
  Document first = (*db)->RunCommand(Json(R"({"find": "m", "batchSize": 7})").view());
  const int64_t id = Int(first.bson(), "cursor.id");
  ASSERT_NE(id, 0);
  std::vector<int64_t> firsts = BatchIds(first, "firstBatch");
  std::atomic<bool> done{false};
  std::atomic<int> in_use{0}, unexpected{0};
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (!done.load()) {
        Document more = GetMore(db->get(), id, "m", 7);
        if (Ok(more)) {
          for (int64_t i : BatchIds(more, "nextBatch")) got[t].push_back(i);
          if (Int(more.bson(), "cursor.id") == 0) done = true;
        } else if (Str(more.bson(), "codeName") == "CursorInUse") {
          ++in_use;
        } else if (Str(more.bson(), "codeName") == "CursorNotFound") {
          done = true;  // another thread took the last batch
        } else {
          ++unexpected;
          done = true;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(unexpected.load(), 0);
  std::multiset<int64_t> all(firsts.begin(), firsts.end());
  for (const auto& v : got) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kDocs));
  for (int i = 0; i < kDocs; ++i) ASSERT_EQ(all.count(i), 1u) << "document " << i;
  // Cursors opened and exhausted in parallel do not disturb each other.
  std::atomic<int> wrong{0};
  std::vector<std::thread> pagers;
  for (int t = 0; t < 4; ++t) {
    pagers.emplace_back([&] {
      Document f = (*db)->RunCommand(Json(R"({"find": "m", "batchSize": 50, "projection": {"_id": 1}})").view());
      int64_t cid = Int(f.bson(), "cursor.id");
      int64_t n = static_cast<int64_t>(BatchIds(f, "firstBatch").size());
      while (cid != 0) {
        Document m = GetMore(db->get(), cid, "m", 50);
        if (!Ok(m)) {
          ++wrong;
          return;
        }
        n += static_cast<int64_t>(BatchIds(m, "nextBatch").size());
        cid = Int(m.bson(), "cursor.id");
      }
      if (n != kDocs) ++wrong;
    });
  }
  for (auto& th : pagers) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The typed API's cursor: the same documents as Find, a batch at a time.
TEST(TypedCursorTest, PagesThroughTheSameDocumentsAsFind) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Load(db->get(), "c", 1000, 1);
  Collection c = (*db)->GetCollection("test", "c");
  for (const char* sort : {"{}", R"({"k": 1})"}) {
    SCOPED_TRACE(sort);
    FindOptions opts;
    opts.sort = Json(sort);
    opts.skip = 3;
    opts.limit = 900;
    opts.batch_size = 64;
    auto all = c.Find(Json(R"({"k": {"$ne": 2}})").view(), opts);
    ASSERT_OK(all);
    auto cur = c.FindCursor(Json(R"({"k": {"$ne": 2}})").view(), opts);
    ASSERT_OK(cur);
    EXPECT_NE(cur->id(), 0);
    std::vector<std::string> got;
    Document d;
    for (;;) {
      auto more = cur->Next(&d);
      ASSERT_OK(more);
      if (!*more) break;
      got.push_back(d.ToJson());
    }
    ASSERT_EQ(got.size(), all->size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], (*all)[i].ToJson()) << i;
    EXPECT_EQ(cur->id(), 0);
  }
}

TEST(TypedCursorTest, TransactionCursorEndsWithItsTransaction) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Load(db->get(), "c", 10, 1);
  Collection c = (*db)->GetCollection("test", "c");
  auto txn = (*db)->StartTransaction();
  ASSERT_OK(txn);
  WriteOptions w;
  w.txn = txn->get();
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 50})").view(), w));
  FindOptions opts;
  opts.txn = txn->get();
  opts.batch_size = 4;
  auto cur = c.FindCursor(Json("{}").view(), opts);
  ASSERT_OK(cur);
  std::vector<int64_t> ids;
  Document d;
  for (int i = 0; i < 6; ++i) {
    auto more = cur->Next(&d);
    ASSERT_OK(more);
    ASSERT_TRUE(*more);
    ids.push_back(Int(d.bson(), "_id"));
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_OK((*txn)->Commit());
  // The rest of this batch was already fetched; the next batch is gone.
  for (int i = 0; i < 2; ++i) ASSERT_OK(cur->Next(&d));
  auto after = cur->Next(&d);
  EXPECT_FALSE(after.ok());
}

// $group past the memory limit: refused without allowDiskUse; with it, the
// partial groups spill and merge to the same sums and pushes as in memory.
TEST(AggregateSpillTest, GroupSpillsAndMergesPartials) {
  test::TempDir dir;
  Options opts;
  opts.sort_memory_bytes = 16 << 10;
  auto db = Database::Open(dir.path(), opts);
  ASSERT_OK(db);
  Load(db->get(), "g", 3000, 1);  // k = _id % 7
  bson_t* cmd = bson_new();
  // 300 groups (_id % 300), each with a $sum and a $push of _ids in input order.
  const std::string pipeline =
      R"([{"$group": {"_id": {"$mod": ["$_id", 300]}, "s": {"$sum": "$_id"}, "ids": {"$push": "$_id"}}}, )"
      R"({"$sort": {"_id": 1}}])";
  bson_destroy(cmd);
  Document refused = (*db)->RunCommand(Json(R"({"aggregate": "g", "pipeline": )" + pipeline + R"(, "cursor": {}})").view());
  EXPECT_EQ(Str(refused.bson(), "codeName"), "QueryExceededMemoryLimitNoDiskUseAllowed") << refused.ToJson();
  Document r = (*db)->RunCommand(
      Json(R"({"aggregate": "g", "pipeline": )" + pipeline + R"(, "allowDiskUse": true, "cursor": {"batchSize": 1000}})")
          .view());
  ASSERT_TRUE(Ok(r)) << Str(r.bson(), "errmsg");
  std::vector<int64_t> keys = BatchIds(r, "firstBatch");
  ASSERT_EQ(keys.size(), 300u);
  bson_iter_t it, arr, d;
  ASSERT_TRUE(bson_iter_init(&it, r.bson()) && bson_iter_find_descendant(&it, "cursor.firstBatch", &arr));
  bson_iter_recurse(&arr, &d);
  int64_t g = 0;
  while (bson_iter_next(&d)) {
    bson_t doc;
    const bson_value_t* v = bson_iter_value(&d);
    bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len);
    int64_t want_sum = 0;
    std::vector<int64_t> want_ids;
    for (int64_t i = g; i < 3000; i += 300) {
      want_sum += i;
      want_ids.push_back(i);
    }
    EXPECT_EQ(Int(&doc, "_id"), g);
    EXPECT_EQ(Int(&doc, "s"), want_sum) << "group " << g;
    bson_iter_t p, e;
    ASSERT_TRUE(bson_iter_init_find(&p, &doc, "ids") && bson_iter_recurse(&p, &e));
    std::vector<int64_t> ids;
    while (bson_iter_next(&e)) ids.push_back(bson_iter_as_int64(&e));
    EXPECT_EQ(ids, want_ids) << "group " << g << ": $push lost input order across spilled runs";
    ++g;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/_tmp"));
}

}  // namespace
}  // namespace gatedb
