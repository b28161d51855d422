// Change streams through the typed API (Collection::Watch, Database::Watch):
// every committed write once and in commit order, under concurrent writers;
// resume tokens across a reopen; transactions; retention; waiting.
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

std::string Str(const Document& d, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, d.bson()) || !bson_iter_find_descendant(&it, dotted, &f) || !BSON_ITER_HOLDS_UTF8(&f)) {
    return "";
  }
  return bson_iter_utf8(&f, nullptr);
}

int64_t Int(const Document& d, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, d.bson()) || !bson_iter_find_descendant(&it, dotted, &f) || !BSON_ITER_HOLDS_NUMBER(&f)) {
    return -1;
  }
  return bson_iter_as_int64(&f);
}

// The events a stream gives until `n` arrived (or a wait came back empty).
std::vector<Document> Take(ChangeStream* cs, size_t n) {
  std::vector<Document> out;
  while (out.size() < n) {
    Document ev;
    StatusOr<bool> got = cs->Next(&ev);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || !*got) break;
    out.push_back(std::move(ev));
  }
  return out;
}

TEST(ChangeStreamTest, EventsOfOneCollectionInCommitOrder) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("app", "c");
  Collection other = (*db)->GetCollection("app", "other");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 0})").view()));
  ChangeStreamOptions o;
  o.max_await_ms = 0;
  auto cs = c.Watch(DocumentView(), o);
  ASSERT_OK(cs);
  Document ev;
  auto none = cs->Next(&ev);
  ASSERT_OK(none);
  EXPECT_FALSE(*none) << "only writes after the stream opened";

  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "n": 1})").view()));
  ASSERT_OK(other.InsertOne(Json(R"({"_id": 1})").view()));
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 1}, "$unset": {"gone": 1}})").view()));
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"n": 5}})").view()));
  ASSERT_OK(c.DeleteOne(Json(R"({"_id": 1})").view()));
  std::vector<Document> got = Take(&*cs, 4);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(Str(got[0], "operationType"), "insert");
  EXPECT_EQ(Int(got[0], "fullDocument.n"), 1);
  EXPECT_EQ(Str(got[1], "operationType"), "update");
  EXPECT_EQ(Int(got[1], "updateDescription.updatedFields.n"), 2);
  EXPECT_EQ(Int(got[1], "versionBefore"), 0);
  EXPECT_EQ(Int(got[1], "versionAfter"), 1);
  EXPECT_EQ(Int(got[2], "updateDescription.updatedFields.n"), 5);
  EXPECT_EQ(Str(got[3], "operationType"), "delete");
  for (const Document& e : got) {
    EXPECT_EQ(Str(e, "ns.db"), "app");
    EXPECT_EQ(Str(e, "ns.coll"), "c");
    EXPECT_EQ(Int(e, "documentKey._id"), 1);
  }
  // After the batch, the token is the stream's position.
  auto again = cs->Next(&ev);
  ASSERT_OK(again);
  EXPECT_FALSE(*again);
  EXPECT_FALSE(cs->resume_token().empty());
  EXPECT_FALSE(cs->done());
}

TEST(ChangeStreamTest, ResumeTokensSurviveAReopen) {
  test::TempDir dir;
  Document token;
  {
    auto db = Database::Open(dir.path());
    ASSERT_OK(db);
    Collection c = (*db)->GetCollection("c");
    ASSERT_OK(c.InsertOne(Json(R"({"_id": 0})").view()));
    auto cs = c.Watch();
    ASSERT_OK(cs);
    ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
    ASSERT_OK(c.InsertOne(Json(R"({"_id": 2})").view()));
    std::vector<Document> first = Take(&*cs, 1);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(Int(first[0], "documentKey._id"), 1);
    token = Document::Copy(cs->resume_token().bson());
    ASSERT_OK(c.InsertOne(Json(R"({"_id": 3})").view()));
  }
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  ChangeStreamOptions o;
  o.resume_after = Document::Copy(token.bson());
  o.max_await_ms = 0;
  auto cs = (*db)->GetCollection("c").Watch(DocumentView(), o);
  ASSERT_OK(cs);
  std::vector<Document> rest = Take(&*cs, 3);
  ASSERT_EQ(rest.size(), 2u) << "the two inserts after the token, nothing else";
  EXPECT_EQ(Int(rest[0], "documentKey._id"), 2);
  EXPECT_EQ(Int(rest[1], "documentKey._id"), 3);
}

// Writers on distinct documents and a reader at the same time: the reader
// gets every committed write exactly once, each document's versions in
// order, and the clusterTime increments (the journal's seqs) only grow.
TEST(ChangeStreamTest, ConcurrentWritersEveryWriteOnceInOrder) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("c");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "seed"})").view()));
  ChangeStreamOptions o;
  o.max_await_ms = 50;
  o.batch_size = 7;  // many getMores
  auto cs = c.Watch(DocumentView(), o);
  ASSERT_OK(cs);
  constexpr int kWriters = 4, kDocsPerWriter = 5, kUpdates = 40;
  constexpr size_t kExpected = kWriters * kDocsPerWriter * (1 + kUpdates);
  std::atomic<bool> go{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      while (!go.load()) std::this_thread::yield();
      for (int d = 0; d < kDocsPerWriter; ++d) {
        std::string id = std::to_string(w) + "-" + std::to_string(d);
        ASSERT_OK(c.InsertOne(Json(R"({"_id": ")" + id + R"(", "n": 0})").view()));
      }
      for (int u = 0; u < kUpdates; ++u) {
        for (int d = 0; d < kDocsPerWriter; ++d) {
          std::string id = std::to_string(w) + "-" + std::to_string(d);
          ASSERT_OK(c.UpdateOne(Json(R"({"_id": ")" + id + R"("})").view(), Json(R"({"$inc": {"n": 1}})").view()));
        }
      }
    });
  }
  std::vector<Document> got;
  std::thread reader([&] {
    int idle = 0;
    while (got.size() < kExpected && idle < 100) {
      Document ev;
      StatusOr<bool> r = cs->Next(&ev);
      ASSERT_OK(r);
      if (*r) {
        got.push_back(std::move(ev));
        idle = 0;
      } else {
        ++idle;
      }
    }
  });
  go = true;
  for (auto& t : writers) t.join();
  reader.join();
  ASSERT_EQ(got.size(), kExpected);
  std::map<std::string, int64_t> last_version;
  std::set<std::string> tokens;
  uint32_t last_inc = 0;
  for (const Document& e : got) {
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "clusterTime") && BSON_ITER_HOLDS_TIMESTAMP(&it));
    uint32_t t = 0, inc = 0;
    bson_iter_timestamp(&it, &t, &inc);
    EXPECT_GT(inc, last_inc) << "commit order";
    last_inc = inc;
    EXPECT_TRUE(tokens.insert(Str(e, "_id._data")).second) << "an event twice";
    std::string id = Str(e, "documentKey._id");
    int64_t v = Int(e, "versionAfter");
    auto seen = last_version.find(id);
    if (seen == last_version.end()) {
      EXPECT_EQ(Str(e, "operationType"), "insert");
      EXPECT_EQ(v, 0);
    } else {
      EXPECT_EQ(v, seen->second + 1) << id << ": a version skipped or repeated";
      EXPECT_EQ(Int(e, "updateDescription.updatedFields.n"), v);
    }
    last_version[id] = v;
  }
  EXPECT_EQ(last_version.size(), static_cast<size_t>(kWriters * kDocsPerWriter));
  for (const auto& [id, v] : last_version) EXPECT_EQ(v, kUpdates) << id;
}

TEST(ChangeStreamTest, ATransactionsWritesAppearAtItsCommitOnly) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection a = (*db)->GetCollection("shop", "a");
  Collection b = (*db)->GetCollection("shop", "b");
  ASSERT_OK(a.InsertOne(Json(R"({"_id": 0})").view()));
  ASSERT_OK(b.InsertOne(Json(R"({"_id": 0})").view()));
  ChangeStreamOptions o;
  o.max_await_ms = 0;
  auto cs = (*db)->Watch("shop", DocumentView(), o);
  ASSERT_OK(cs);
  {
    auto txn = (*db)->StartTransaction();
    ASSERT_OK(txn);
    WriteOptions w;
    w.txn = txn->get();
    ASSERT_OK(a.InsertOne(Json(R"({"_id": "aborted"})").view(), w));
    ASSERT_OK((*txn)->Abort());
  }
  auto txn = (*db)->StartTransaction();
  ASSERT_OK(txn);
  WriteOptions w;
  w.txn = txn->get();
  ASSERT_OK(a.InsertOne(Json(R"({"_id": 1})").view(), w));
  ASSERT_OK(b.InsertOne(Json(R"({"_id": 1})").view(), w));
  Document ev;
  auto before = cs->Next(&ev);
  ASSERT_OK(before);
  EXPECT_FALSE(*before) << "nothing before the commit";
  ASSERT_OK((*txn)->Commit());
  std::vector<Document> got = Take(&*cs, 3);
  ASSERT_EQ(got.size(), 2u) << "the two committed inserts; nothing of the aborted transaction";
  EXPECT_EQ(Str(got[0], "ns.coll"), "a");
  EXPECT_EQ(Str(got[1], "ns.coll"), "b");
  EXPECT_FALSE(Str(got[0], "txn").empty());
  EXPECT_EQ(Str(got[0], "txn"), Str(got[1], "txn"));
}

TEST(ChangeStreamTest, AWaitingNextWakesOnAWrite) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("c");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 0})").view()));
  ChangeStreamOptions o;
  o.max_await_ms = 60000;
  auto cs = c.Watch(DocumentView(), o);
  ASSERT_OK(cs);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  });
  Document ev;
  auto got = cs->Next(&ev);  // would wait a minute without the write
  writer.join();
  ASSERT_OK(got);
  ASSERT_TRUE(*got);
  EXPECT_EQ(Int(ev, "documentKey._id"), 1);
}

TEST(ChangeStreamTest, ATokenWhoseEventsWereCollectedIsHistoryLost) {
  test::TempDir dir;
  Options opts;
  opts.journal_max_events = 5;
  auto db = Database::Open(dir.path(), opts);
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("c");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 0})").view()));
  auto cs = c.Watch();
  ASSERT_OK(cs);
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  ASSERT_EQ(Take(&*cs, 1).size(), 1u);
  Document token = Document::Copy(cs->resume_token().bson());
  for (int i = 2; i < 40; ++i) ASSERT_OK(c.InsertOne(Json(R"({"_id": )" + std::to_string(i) + "}").view()));
  // The background collector runs every second; wait until it collected
  // the events after the token (seq 2).
  JournalQuery q;
  q.after_seq = 1;
  q.limit = 1;
  StatusOr<JournalBatch> r = (*db)->ReadJournal(q);
  for (int i = 0; i < 200 && r.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = (*db)->ReadJournal(q);
  }
  ASSERT_THAT(r, test::StatusIs(ErrorCode::kChangeStreamHistoryLost));
  ChangeStreamOptions o;
  o.resume_after = Document::Copy(token.bson());
  auto late = c.Watch(DocumentView(), o);
  EXPECT_THAT(late, test::StatusIs(ErrorCode::kChangeStreamHistoryLost));
  // The open stream fell behind the retention as well.
  Document ev;
  EXPECT_THAT(cs->Next(&ev), test::StatusIs(ErrorCode::kChangeStreamHistoryLost));
}

TEST(ChangeStreamTest, DroppingTheCollectionEndsItsStream) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("c");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 0})").view()));
  ChangeStreamOptions o;
  o.max_await_ms = 0;
  auto cs = c.Watch(Json(R"({"0": {"$match": {"operationType": {"$ne": "insert"}}}})").view(), o);
  ASSERT_OK(cs);
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  ASSERT_OK((*db)->DropCollection("test", "c"));
  std::vector<Document> got = Take(&*cs, 5);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(Str(got[0], "operationType"), "drop");
  EXPECT_EQ(Str(got[1], "operationType"), "invalidate");
  EXPECT_TRUE(cs->done());
  Document ev;
  auto more = cs->Next(&ev);
  ASSERT_OK(more);
  EXPECT_FALSE(*more);
  EXPECT_THAT(c.Watch(Json(R"({"0": {"$sort": {"_id": 1}}})").view()), test::StatusIs(ErrorCode::kIllegalOperation));
}

}  // namespace
}  // namespace gatedb
