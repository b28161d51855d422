// A lease race found by gatedb_sim (issue 8):
//
//   gatedb_sim --seed=7 --agents=8 --docs=2 --think=0 --seconds=5 --reopen=2
//   -> "lease held by a3 over versions (343, 345] of sim.c2_priority _id "d1",
//       but 'a7' wrote version 344"
//
// DBImpl::LeaseCommand committed the lease record (which releases the
// document's lock) and only then counted it in lease_records_, which
// DBImpl::CheckLease reads to skip the lookup when no lease exists.  A
// writer that locked the document in that window skipped the check and
// committed inside the lease.  The count now goes up before the commit.
#include <atomic>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

int64_t VersionOf(Collection& c) {
  auto d = c.FindOne(Json(R"({"_id": "d"})").view());
  if (!d.ok() || !d->has_value()) return -1;
  return test::IntAt((**d).bson(), "version");
}

TEST(LeaseRaceTest, NoOtherAgentWritesWhileALeaseIsHeld) {
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  Collection c = (*db)->GetCollection("l");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "d", "n": 0})").view()));
  Document idd = Json(R"({"_id": "d"})");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, idd.bson(), "_id"));
  Value id(*bson_iter_value(&it));

  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      UpdateOptions o;
      o.write.context.agent_id = "writer-" + std::to_string(w);
      while (!stop.load()) {
        auto r = c.UpdateOne(idd.view(), Json(R"({"$inc": {"n": 1}})").view(), o);
        if (!r.ok() && r.status().code() != ErrorCode::kLeaseHeld) ADD_FAILURE() << r.status().ToString();
      }
    });
  }
  int slipped = 0, sessions = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (slipped == 0 && std::chrono::steady_clock::now() < deadline) {
    auto lease = c.AcquireLease(id, 30000, "holder");
    if (!lease.ok()) continue;  // a writer held the document's lock too long
    ++sessions;
    int64_t v0 = VersionOf(c);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    int64_t v1 = VersionOf(c);
    if (v1 != v0) ++slipped;
    ASSERT_OK(c.ReleaseLease(id, "holder"));
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(slipped, 0) << "another agent's write landed inside a held lease (after " << sessions << " sessions)";
}

}  // namespace
}  // namespace gatedb
