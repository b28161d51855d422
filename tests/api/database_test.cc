// The typed C++ API over a real RocksDB database in a temporary directory:
// CRUD, the version field, reopen, and concurrent writers.
#include <atomic>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::StatusIs;

int64_t Int(const Document& d, const char* field) {
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init_find(&it, d.bson(), field)) << field << " in " << d.ToJson();
  return bson_iter_as_int64(&it);
}

CreateCollectionOptions VersionField(const char* name) {
  CreateCollectionOptions o;
  o.version_field = name;
  return o;
}

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    db_.reset();
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

// A point read by _id answers an invalid name with InvalidNamespace, as
// every other read does, and a valid but missing collection with nothing.
TEST_F(DatabaseTest, FindOneByIdChecksTheNamespace) {
  for (const char* name : {"a$b", ".starts"}) {
    SCOPED_TRACE(name);
    EXPECT_THAT(db_->GetCollection(name).FindOne(Json(R"({"_id": 1})").view()),
                test::StatusIs(ErrorCode::kInvalidNamespace));
  }
  auto missing = db_->GetCollection("never_created").FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(missing);
  EXPECT_FALSE(missing->has_value());
}

TEST_F(DatabaseTest, InsertFindUpdateDelete) {
  Collection c = db_->GetCollection("orders");
  auto ins = c.InsertOne(Json(R"({"_id": "o1", "qty": 2})").view());
  ASSERT_OK(ins);
  EXPECT_EQ(ins->inserted_id.ToJson(), "\"o1\"");
  auto found = c.FindOne(Json(R"({"_id": "o1"})").view());
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(Int(**found, "version"), 0);
  EXPECT_EQ(Int(**found, "qty"), 2);

  auto up = c.UpdateOne(Json(R"({"_id": "o1"})").view(), Json(R"({"$inc": {"qty": 3}})").view());
  ASSERT_OK(up);
  EXPECT_EQ(up->matched_count, 1);
  EXPECT_EQ(up->modified_count, 1);
  found = c.FindOne(Json(R"({"_id": "o1"})").view());
  EXPECT_EQ(Int(**found, "qty"), 5);
  EXPECT_EQ(Int(**found, "version"), 1);

  auto del = c.DeleteOne(Json(R"({"qty": {"$gt": 4}})").view());
  ASSERT_OK(del);
  EXPECT_EQ(del->deleted_count, 1);
  auto n = c.CountDocuments(Json("{}").view());
  ASSERT_OK(n);
  EXPECT_EQ(*n, 0);
}

TEST_F(DatabaseTest, MissingIdGetsObjectIdAndDuplicateIsRefused) {
  Collection c = db_->GetCollection("c");
  auto ins = c.InsertOne(Json(R"({"x": 1})").view());
  ASSERT_OK(ins);
  EXPECT_EQ(ins->inserted_id.type(), BSON_TYPE_OID);
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  EXPECT_THAT(c.InsertOne(Json(R"({"_id": 1.0})").view()), StatusIs(ErrorCode::kDuplicateKey));
  EXPECT_THAT(c.InsertOne(Json(R"({"_id": [1]})").view()), StatusIs(ErrorCode::kInvalidIdField));
  EXPECT_THAT(c.InsertOne(Json(R"({"$bad": 1})").view()), StatusIs(ErrorCode::kDollarPrefixedFieldName));
}

TEST_F(DatabaseTest, VersionFieldIsOwnedByTheStore) {
  ASSERT_OK(db_->CreateCollection("test", "items", VersionField("rev")));
  Collection c = db_->GetCollection("items");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "rev": 99, "a": 1})").view()));
  auto d = c.FindOne(Json(R"({"_id": 1})").view());
  EXPECT_EQ(Int(**d, "rev"), 0);
  // $inc: {rev: 1} is absorbed as the one step.
  auto up = c.UpdateOne(Json(R"({"_id": 1, "rev": 0})").view(), Json(R"({"$set": {"a": 2}, "$inc": {"rev": 1}})").view());
  ASSERT_OK(up);
  EXPECT_EQ(up->modified_count, 1);
  d = c.FindOne(Json(R"({"_id": 1})").view());
  EXPECT_EQ(Int(**d, "rev"), 1);
  // The filter compares by value: a double 1.0 matches the int64 1.
  up = c.UpdateOne(Json(R"({"_id": 1, "rev": 1.0})").view(), Json(R"({"$set": {"a": 3}})").view());
  ASSERT_OK(up);
  EXPECT_EQ(up->matched_count, 1);
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"rev": 5}})").view()),
              StatusIs(ErrorCode::kImmutableField));
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"rev": 2}})").view()),
              StatusIs(ErrorCode::kImmutableField));
  EXPECT_THAT(c.ReplaceOne(Json(R"({"_id": 1})").view(), Json(R"({"a": 1, "rev": 0})").view()),
              StatusIs(ErrorCode::kImmutableField));
  // A replacement keeps the version counting.
  auto rep = c.ReplaceOne(Json(R"({"_id": 1})").view(), Json(R"({"b": 1})").view());
  ASSERT_OK(rep);
  d = c.FindOne(Json(R"({"_id": 1})").view());
  EXPECT_EQ(Int(**d, "rev"), 3);
  EXPECT_EQ(Int(**d, "b"), 1);
}

TEST_F(DatabaseTest, EverythingSurvivesReopen) {
  Collection c = db_->GetCollection("shop", "orders");
  ASSERT_OK(db_->CreateCollection("shop", "ledger", VersionField("v")));
  for (int i = 0; i < 50; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT32(d, "_id", i);
    BSON_APPEND_INT32(d, "n", i * 2);
    ASSERT_OK(c.InsertOne(DocumentView(d)));
    bson_destroy(d);
  }
  ASSERT_OK(c.UpdateMany(Json(R"({"n": {"$gte": 50}})").view(), Json(R"({"$set": {"big": true}})").view()));
  Reopen();
  Collection again = db_->GetCollection("shop", "orders");
  auto n = again.CountDocuments(Json(R"({"big": true})").view());
  ASSERT_OK(n);
  EXPECT_EQ(*n, 25);
  auto d = again.FindOne(Json(R"({"_id": 30})").view());
  EXPECT_EQ(Int(**d, "version"), 1);
  auto names = db_->ListCollectionNames("shop");
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("orders", "ledger"));
  // The ledger's version field option survived too.
  ASSERT_OK(db_->GetCollection("shop", "ledger").InsertOne(Json(R"({"_id": 1})").view()));
  auto l = db_->GetCollection("shop", "ledger").FindOne(Json("{}").view());
  EXPECT_EQ(Int(**l, "v"), 0);
  // Collections created after reopen get fresh ids (no collision).
  ASSERT_OK(db_->GetCollection("shop", "other").InsertOne(Json(R"({"_id": 1})").view()));
  auto cnt = again.CountDocuments(Json("{}").view());
  EXPECT_EQ(*cnt, 50);
}

TEST_F(DatabaseTest, DropRemovesDocumentsAndRecreateStartsEmpty) {
  Collection c = db_->GetCollection("c");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  ASSERT_OK(db_->DropCollection("test", "c"));
  EXPECT_THAT(db_->DropCollection("test", "c"), StatusIs(ErrorCode::kNamespaceNotFound));
  auto n = c.CountDocuments(Json("{}").view());
  EXPECT_EQ(*n, 0);
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  Reopen();
  n = db_->GetCollection("c").CountDocuments(Json("{}").view());
  EXPECT_EQ(*n, 1);
}

TEST_F(DatabaseTest, ConcurrentIncrementsAreNeverLost) {
  Collection c = db_->GetCollection("counters");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "hot", "n": 0})").view()));
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Collection mine = db_->GetCollection("counters");
      for (int i = 0; i < kPerThread; ++i) {
        auto r = mine.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$inc": {"n": 1}})").view());
        if (!r.ok() || r->modified_count != 1) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto d = c.FindOne(Json(R"({"_id": "hot"})").view());
  EXPECT_EQ(Int(**d, "n"), kThreads * kPerThread);
  EXPECT_EQ(Int(**d, "version"), kThreads * kPerThread);
}

TEST_F(DatabaseTest, ConcurrentDurableWritesShareFsyncsAndLoseNothing) {
  // Durable commits leave commit_mu_ before their fsync (group commit):
  // every one must still be acknowledged once, in the journal in order, and
  // there after a reopen.  Keyed durable retries replay.
  Collection c = db_->GetCollection("counters");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "hot", "n": 0})").view()));
  uint64_t start_seq = db_->ReadJournal(JournalQuery{})->last_seq;
  constexpr int kThreads = 4, kPerThread = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Collection mine = db_->GetCollection("counters");
      for (int i = 0; i < kPerThread; ++i) {
        UpdateOptions o;
        o.write.sync = true;
        if (i % 2 == 0) {
          o.write.context.task_id = "t" + std::to_string(t);
          o.write.context.write_seq = i;
        }
        auto r = mine.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$inc": {"n": 1}})").view(), o);
        if (!r.ok() || r->modified_count != 1) failures.fetch_add(1);
        if (i % 2 == 0) {
          auto again = mine.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$inc": {"n": 1}})").view(), o);
          if (!again.ok() || !again->replayed) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  constexpr int kWrites = kThreads * kPerThread;
  JournalQuery q;
  q.after_seq = start_seq;
  q.limit = 0;
  auto events = db_->ReadJournal(q);
  ASSERT_OK(events);
  ASSERT_EQ(events->events.size(), static_cast<size_t>(kWrites));
  for (size_t i = 0; i < events->events.size(); ++i) {
    EXPECT_EQ(Int(events->events[i], "seq"), static_cast<int64_t>(start_seq + 1 + i));
    EXPECT_EQ(Int(events->events[i], "versionAfter"), static_cast<int64_t>(i + 1));
  }
  Reopen();
  auto d = db_->GetCollection("counters").FindOne(Json(R"({"_id": "hot"})").view());
  ASSERT_OK(d);
  EXPECT_EQ(Int(**d, "n"), kWrites);
  EXPECT_EQ(Int(**d, "version"), kWrites);
}

TEST_F(DatabaseTest, ConcurrentGatedReadThenWriteNeverLosesAnUpdate) {
  Collection c = db_->GetCollection("orders");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "o", "total": 0})").view()));
  constexpr int kThreads = 6, kPerThread = 100;
  std::atomic<int64_t> stale{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Collection mine = db_->GetCollection("orders");
      for (int i = 0; i < kPerThread; ++i) {
        while (true) {
          auto d = mine.FindOne(Json(R"({"_id": "o"})").view());
          ASSERT_OK(d);
          int64_t v = Int(**d, "version");
          int64_t total = Int(**d, "total");
          bson_t* f = bson_new();
          BSON_APPEND_UTF8(f, "_id", "o");
          BSON_APPEND_INT64(f, "version", v);
          bson_t* u = bson_new();
          bson_t set;
          BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
          BSON_APPEND_INT64(&set, "total", total + 1);  // read-modify-write in the client
          bson_append_document_end(u, &set);
          Document fd = Document::Adopt(f), ud = Document::Adopt(u);
          auto r = mine.UpdateOne(fd.view(), ud.view());
          ASSERT_OK(r);
          if (r->matched_count == 1) break;
          stale.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  auto d = c.FindOne(Json(R"({"_id": "o"})").view());
  EXPECT_EQ(Int(**d, "total"), kThreads * kPerThread);
  EXPECT_EQ(Int(**d, "version"), kThreads * kPerThread);
}

TEST_F(DatabaseTest, ConcurrentUpsertsOfOneIdInsertOnce) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> upserted{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      UpdateOptions o;
      o.upsert = true;
      auto r = db_->GetCollection("u").UpdateOne(Json(R"({"_id": "k"})").view(),
                                                 Json(R"({"$inc": {"hits": 1}})").view(), o);
      ASSERT_OK(r);
      if (r->upserted_id) upserted.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(upserted.load(), 1);
  auto d = db_->GetCollection("u").FindOne(Json(R"({"_id": "k"})").view());
  EXPECT_EQ(Int(**d, "hits"), kThreads);
}

TEST_F(DatabaseTest, FindOneAndModifyVariants) {
  Collection c = db_->GetCollection("q");
  ASSERT_OK(c.InsertMany({Json(R"({"_id": 1, "p": 5})"), Json(R"({"_id": 2, "p": 9})"), Json(R"({"_id": 3, "p": 1})")}));
  FindOneAndModifyOptions o;
  o.sort = Json(R"({"p": -1})");
  auto before = c.FindOneAndUpdate(Json("{}").view(), Json(R"({"$set": {"taken": true}})").view(), o);
  ASSERT_OK(before);
  ASSERT_TRUE(before->has_value());
  EXPECT_EQ(Int(**before, "_id"), 2);
  EXPECT_FALSE(bson_has_field((*before)->bson(), "taken"));
  o.return_after = true;
  o.sort = Json(R"({"p": 1})");
  auto after = c.FindOneAndReplace(Json(R"({"taken": {"$exists": false}})").view(), Json(R"({"p": 0})").view(), o);
  ASSERT_OK(after);
  EXPECT_EQ(Int(**after, "_id"), 3);
  EXPECT_EQ(Int(**after, "p"), 0);
  EXPECT_EQ(Int(**after, "version"), 1);
  auto gone = c.FindOneAndDelete(Json(R"({"_id": 1})").view());
  ASSERT_OK(gone);
  EXPECT_EQ(Int(**gone, "p"), 5);
  auto none = c.FindOneAndDelete(Json(R"({"_id": 1})").view());
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
}

TEST_F(DatabaseTest, RunCommandAndTypedApiShareOneImplementation) {
  Collection c = db_->GetCollection("s");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "a": [1, 2]})").view()));
  Document reply = db_->RunCommand(Json(R"({"update": "s", "updates": [{"q": {"_id": 1}, "u": {"$push": {"a": 3}}}]})").view());
  EXPECT_EQ(Int(reply, "nModified"), 1);
  auto d = c.FindOne(Json(R"({"a": 3})").view());
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ(Int(**d, "version"), 1);
  Document bad = db_->RunCommand(Json(R"({"find": "s", "filter": {"a": {"$bogus": 1}}})").view());
  EXPECT_EQ(Int(bad, "code"), 2);
  EXPECT_THAT(c.Find(Json(R"({"a": {"$bogus": 1}})").view()), StatusIs(ErrorCode::kBadValue));
}

}  // namespace
}  // namespace gatedb
