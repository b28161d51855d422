// renameCollection with writers running: every acknowledged write is kept
// once, under the new name or (a write that came after the rename and
// found the old name free) in a new collection of the old name.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

TEST(RenameCollection, ConcurrentWritersLoseNothingAndWriteNothingTwice) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Document c = (*db)->RunCommand(Json(R"({"create": "a", "$db": "t"})").view());
  ASSERT_EQ(test::IntAt(c.bson(), "ok"), 1) << c.ToJson();
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::vector<std::vector<int>> acked(kThreads);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      Collection a = (*db)->GetCollection("t", "a");
      for (int i = 0; !stop.load() || i < 50; ++i) {
        const int id = t * 1000000 + i;
        Document d = Json(R"({"_id": )" + std::to_string(id) + "}");
        if (a.InsertOne(d.view()).ok()) acked[t].push_back(id);
        if (i > 200000) break;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Document r = (*db)->RunCommand(Json(R"({"renameCollection": "t.a", "to": "t.b", "$db": "admin"})").view());
  EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1) << r.ToJson();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  for (std::thread& w : writers) w.join();

  std::multiset<int64_t> seen;
  for (const char* name : {"a", "b"}) {
    auto docs = (*db)->GetCollection("t", name).Find(Json("{}").view());
    ASSERT_OK(docs);
    for (const Document& d : *docs) seen.insert(test::IntAt(d.bson(), "_id"));
  }
  size_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    total += acked[t].size();
    for (int id : acked[t]) EXPECT_EQ(seen.count(id), 1u) << "acknowledged insert " << id;
  }
  EXPECT_EQ(seen.size(), total) << "nothing unacknowledged, nothing twice";
  auto before = (*db)->GetCollection("t", "b").CountDocuments(Json("{}").view());
  ASSERT_OK(before);
  EXPECT_GT(*before, 0) << "the writes before the rename are under the new name";
}

}  // namespace
}  // namespace gatedb
