// Aggregation through the typed API (Collection::Aggregate) and the
// properties the command scripts cannot show: $lookup reads the aggregate's
// snapshot across getMores, $merge and $out write through the gate while
// other writers run (nothing lost), transactions, spilling.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

// Every document of a cursor.
std::vector<Document> Drain(Cursor* c) {
  std::vector<Document> out;
  Document d;
  for (;;) {
    StatusOr<bool> more = c->Next(&d);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(std::move(d));
  }
  return out;
}

// A pipeline from the JSON text of its array of stages.
Document Pipeline(const std::string& stages) {
  Document wrapped = Json(R"({"p": )" + stages + "}");
  bson_iter_t it;
  if (!bson_iter_init_find(&it, wrapped.bson(), "p") || !BSON_ITER_HOLDS_ARRAY(&it)) {
    ADD_FAILURE() << "not an array: " << stages;
    return Document();
  }
  const bson_value_t* v = bson_iter_value(&it);
  bson_t arr;
  bson_init_static(&arr, v->value.v_doc.data, v->value.v_doc.data_len);
  return Document::Copy(&arr);
}

// The size of the array at `field`.
int64_t ArraySize(const Document& d, const char* field) {
  bson_iter_t it, a;
  if (!bson_iter_init_find(&it, d.bson(), field) || !BSON_ITER_HOLDS_ARRAY(&it)) return -1;
  bson_iter_recurse(&it, &a);
  int64_t n = 0;
  while (bson_iter_next(&a)) ++n;
  return n;
}

TEST(TypedAggregateTest, PagesAPipelineWithLetAndLookup) {
  test::TempDir dir;
  auto db = Database::Open(dir.path(), Options());
  ASSERT_OK(db);
  Collection orders = (*db)->GetCollection("orders");
  Collection items = (*db)->GetCollection("items");
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(orders.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "item": )" + std::to_string(i % 3) +
                                    R"(, "qty": )" + std::to_string(i) + "}")
                                   .view()));
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_OK(items.InsertOne(Json(R"({"_id": )" + std::to_string(k) + R"(, "price": )" + std::to_string(10 * k) + "}").view()));
  }
  AggregateOptions opts;
  opts.batch_size = 3;
  opts.let = Json(R"({"minQty": 2})");
  StatusOr<Cursor> c = orders.Aggregate(
      Pipeline(R"([{"$match": {"$expr": {"$gte": ["$qty", "$$minQty"]}}},
               {"$lookup": {"from": "items", "localField": "item", "foreignField": "_id", "as": "it"}},
               {"$project": {"total": {"$multiply": ["$qty", {"$first": "$it.price"}]}}}])")
          .view(),
      opts);
  ASSERT_OK(c);
  EXPECT_NE(c->id(), 0);  // 8 results, batches of 3: a cursor stays open
  std::vector<Document> docs = Drain(&*c);
  ASSERT_EQ(docs.size(), 8u);
  for (size_t i = 0; i < docs.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i) + 2;
    EXPECT_EQ(Int(docs[i].bson(), "_id"), id);
    EXPECT_EQ(Int(docs[i].bson(), "total"), id * 10 * (id % 3)) << docs[i].ToJson();
  }
  // Errors come back as Status with MongoDB's code.
  StatusOr<Cursor> bad = orders.Aggregate(Pipeline(R"([{"$nope": 1}])").view());
  EXPECT_EQ(bad.status().code(), static_cast<ErrorCode>(40324));
}

// A $lookup made after documents of the foreign collection were inserted or
// deleted (between getMores) still sees the collection as it was when the
// aggregate opened: one snapshot for the whole pipeline.
// `index_foreign`: foreign.k has an index, so $lookup's reads are index
// scans (which once took a snapshot of their own, the latest).
void CheckLookupReadsTheAggregatesSnapshot(bool index_foreign) {
  test::TempDir dir;
  auto db = Database::Open(dir.path(), Options());
  ASSERT_OK(db);
  Collection local = (*db)->GetCollection("local");
  Collection foreign = (*db)->GetCollection("foreign");
  if (index_foreign) {
    IndexModel k;
    k.keys = Json(R"({"k": 1})");
    ASSERT_OK(foreign.CreateIndexes({k}));
  }
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(local.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "k": 1})").view()));
    ASSERT_OK(foreign.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "k": 1})").view()));
  }
  AggregateOptions opts;
  opts.batch_size = 1;
  StatusOr<Cursor> c = local.Aggregate(
      Pipeline(R"([{"$lookup": {"from": "foreign", "localField": "k", "foreignField": "k", "as": "m"}},
               {"$lookup": {"from": "foreign", "pipeline": [{"$count": "n"}], "as": "all"}}])")
          .view(),
      opts);
  ASSERT_OK(c);
  Document d;
  StatusOr<bool> more = c->Next(&d);
  ASSERT_OK(more);
  ASSERT_TRUE(*more);
  EXPECT_EQ(ArraySize(d, "m"), 6);
  // Change the foreign collection now: 3 more matches, 2 fewer.
  for (int i = 10; i < 13; ++i) ASSERT_OK(foreign.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "k": 1})").view()));
  ASSERT_OK(foreign.DeleteOne(Json(R"({"_id": 0})").view()));
  ASSERT_OK(foreign.DeleteOne(Json(R"({"_id": 1})").view()));
  int seen = 1;
  while (true) {
    more = c->Next(&d);
    ASSERT_OK(more);
    if (!*more) break;
    ++seen;
    EXPECT_EQ(ArraySize(d, "m"), 6) << d.ToJson();
    EXPECT_EQ(Int(d.bson(), "all.0.n"), 6) << d.ToJson();
  }
  EXPECT_EQ(seen, 6);
  // A new aggregate sees the change.
  StatusOr<Cursor> again = local.Aggregate(
      Pipeline(R"([{"$limit": 1}, {"$lookup": {"from": "foreign", "localField": "k", "foreignField": "k", "as": "m"}}])").view());
  ASSERT_OK(again);
  std::vector<Document> docs = Drain(&*again);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(ArraySize(docs[0], "m"), 7);
}

TEST(TypedAggregateTest, LookupReadsTheAggregatesSnapshotAcrossBatches) { CheckLookupReadsTheAggregatesSnapshot(false); }

TEST(TypedAggregateTest, LookupThroughAnIndexReadsTheAggregatesSnapshotAcrossBatches) {
  CheckLookupReadsTheAggregatesSnapshot(true);
}

// $merge (whenMatched: merge) into documents that other threads increment
// at the same time: every increment survives, and every $merge's field
// lands; a read-modify-write outside the gate would lose some.
TEST(AggregateConcurrencyTest, MergeBesideConcurrentIncrementsLosesNothing) {
  test::TempDir dir;
  auto db = Database::Open(dir.path(), Options());
  ASSERT_OK(db);
  Collection counters = (*db)->GetCollection("counters");
  Collection source = (*db)->GetCollection("source");
  constexpr int kDocs = 20;
  for (int i = 0; i < kDocs; ++i) {
    ASSERT_OK(counters.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "n": 0})").view()));
    ASSERT_OK(source.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "w": 0})").view()));
  }
  constexpr int kIncThreads = 2, kIncsPerThread = 1000, kMerges = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kIncThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int j = 0; j < kIncsPerThread; ++j) {
        const int id = (j * 7 + t) % kDocs;
        auto r = counters.UpdateOne(Json(R"({"_id": )" + std::to_string(id) + "}").view(),
                                    Json(R"({"$inc": {"n": 1}})").view());
        if (!r.ok() || r->matched_count != 1) failures++;
      }
    });
  }
  threads.emplace_back([&] {
    for (int m = 1; m <= kMerges; ++m) {
      AggregateOptions opts;
      opts.write.context.agent_id = "summarizer";
      auto c = source.Aggregate(
          Pipeline(R"([{"$project": {"summary": {"$literal": )" + std::to_string(m) +
               R"(}}}, {"$merge": {"into": "counters", "whenMatched": "merge", "whenNotMatched": "fail"}}])")
              .view(),
          opts);
      if (!c.ok()) {
        ADD_FAILURE() << c.status().ToString();
        failures++;
      }
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  StatusOr<Cursor> all = counters.FindCursor(Json("{}").view());
  ASSERT_OK(all);
  int64_t total = 0;
  for (const Document& d : Drain(&*all)) {
    total += Int(d.bson(), "n");
    EXPECT_EQ(Int(d.bson(), "summary"), kMerges) << d.ToJson();
    // Each increment and each $merge that changed the document moved its version.
    EXPECT_EQ(Int(d.bson(), "version"), Int(d.bson(), "n") + kMerges) << d.ToJson();
  }
  EXPECT_EQ(total, kIncThreads * kIncsPerThread);
}

TEST(AggregateTransactionTest, LookupSeesTheTransactionsWritesAndOutIsRefused) {
  test::TempDir dir;
  auto db = Database::Open(dir.path(), Options());
  ASSERT_OK(db);
  Collection a = (*db)->GetCollection("a");
  Collection b = (*db)->GetCollection("b");
  ASSERT_OK(a.InsertOne(Json(R"({"_id": 1, "k": 1})").view()));
  auto txn = (*db)->StartTransaction();
  ASSERT_OK(txn);
  WriteOptions in_txn;
  in_txn.txn = txn->get();
  ASSERT_OK(b.InsertOne(Json(R"({"_id": 7, "k": 1})").view(), in_txn));
  AggregateOptions opts;
  opts.txn = txn->get();
  StatusOr<Cursor> c =
      a.Aggregate(Pipeline(R"([{"$lookup": {"from": "b", "localField": "k", "foreignField": "k", "as": "m"}}])").view(), opts);
  ASSERT_OK(c);
  std::vector<Document> docs = Drain(&*c);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(Int(docs[0].bson(), "m.0._id"), 7);
  // Outside the transaction, b is still empty.
  StatusOr<Cursor> outside =
      a.Aggregate(Pipeline(R"([{"$lookup": {"from": "b", "localField": "k", "foreignField": "k", "as": "m"}}])").view());
  ASSERT_OK(outside);
  docs = Drain(&*outside);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(ArraySize(docs[0], "m"), 0);
  StatusOr<Cursor> out = a.Aggregate(Pipeline(R"([{"$out": "c"}])").view(), opts);
  EXPECT_EQ(out.status().code(), ErrorCode::kOperationNotSupportedInTransaction);
}

// $out sorts its results by _id: past the memory limit it needs allowDiskUse,
// and with it writes every document.  $sample spills the same way.
TEST(AggregateSpillTest, OutAndSampleSpillWithAllowDiskUse) {
  test::TempDir dir;
  Options o;
  o.sort_memory_bytes = 16 << 10;
  auto db = Database::Open(dir.path(), o);
  ASSERT_OK(db);
  Collection src = (*db)->GetCollection("src");
  const std::string pad(200, 'p');
  std::vector<Document> docs;
  for (int i = 0; i < 1000; ++i) {
    // Inserted in reverse _id order so $out's sort has work to do.
    docs.push_back(Json(R"({"_id": )" + std::to_string(999 - i) + R"(, "pad": ")" + pad + "\"}"));
  }
  ASSERT_OK(src.InsertMany(docs));
  const Document out = Pipeline(R"([{"$project": {"pad": 1, "twice": {"$multiply": ["$_id", 2]}}}, {"$out": "dst"}])");
  StatusOr<Cursor> refused = src.Aggregate(out.view());
  EXPECT_EQ(refused.status().code(), ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
  AggregateOptions disk;
  disk.allow_disk_use = true;
  StatusOr<Cursor> ok = src.Aggregate(out.view(), disk);
  ASSERT_OK(ok);
  EXPECT_EQ(ok->id(), 0);
  Collection dst = (*db)->GetCollection("dst");
  StatusOr<Cursor> all = dst.FindCursor(Json("{}").view());
  ASSERT_OK(all);
  std::vector<Document> written = Drain(&*all);
  ASSERT_EQ(written.size(), 1000u);
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(Int(written[i].bson(), "_id"), static_cast<int64_t>(i));
    EXPECT_EQ(Int(written[i].bson(), "twice"), static_cast<int64_t>(2 * i));
  }
  const Document sample = Pipeline(R"([{"$sample": {"size": 900}}, {"$group": {"_id": null, "ids": {"$addToSet": "$_id"}}}])");
  EXPECT_EQ(src.Aggregate(sample.view()).status().code(), ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
  StatusOr<Cursor> s = src.Aggregate(sample.view(), disk);
  ASSERT_OK(s);
  std::vector<Document> groups = Drain(&*s);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(ArraySize(groups[0], "ids"), 900);
}

}  // namespace
}  // namespace gatedb

namespace gatedb {
namespace {

// maxTimeMS bounds the whole pipeline, not only its leading find: a slow
// $lookup per document (each a scan of 1,500 documents) is stopped.
TEST(AggregateTimeLimitTest, MaxTimeMSStopsASlowPipeline) {
  test::TempDir dir;
  auto db = Database::Open(dir.path(), Options());
  ASSERT_OK(db);
  Collection t = (*db)->GetCollection("t");
  std::vector<Document> docs;
  for (int i = 0; i < 1500; ++i) docs.push_back(Json(R"({"_id": )" + std::to_string(i) + R"(, "k": )" + std::to_string(i % 10) + "}"));
  ASSERT_OK(t.InsertMany(docs));
  const Document slow = Pipeline(
      R"([{"$lookup": {"from": "t", "let": {"k": "$k"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$k"]}}}], "as": "same"}},
          {"$group": {"_id": null, "n": {"$sum": {"$size": "$same"}}}}])");
  AggregateOptions limited;
  limited.max_time_ms = 20;
  StatusOr<Cursor> stopped = t.Aggregate(slow.view(), limited);
  EXPECT_EQ(stopped.status().code(), ErrorCode::kMaxTimeMSExpired) << stopped.status().ToString();
  // The same pipeline without a limit finishes: 1,500 documents, each with
  // the 150 of its k.
  AggregateOptions cheap;
  StatusOr<Cursor> ok = t.Aggregate(Pipeline(R"([{"$limit": 20}, {"$lookup": {"from": "t", "let": {"k": "$k"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$k"]}}}], "as": "same"}}, {"$group": {"_id": null, "n": {"$sum": {"$size": "$same"}}}}])").view(), cheap);
  ASSERT_OK(ok);
  std::vector<Document> out = Drain(&*ok);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Int(out[0].bson(), "n"), 20 * 150);
}

}  // namespace
}  // namespace gatedb
