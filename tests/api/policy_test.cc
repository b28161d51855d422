// Conflict policies, field versions and leases through the C++ API,
// including the write-protocol article's four scenarios with real threads.
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

constexpr auto Int = test::IntAt;
constexpr auto Str = test::StrAt;
constexpr auto Strings = test::StringsAt;

using test::Json;
using test::StatusIs;

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    db_.reset();
    Options o;
    o.clock_ms = [this] { return now_ms_.load(); };
    auto db = Database::Open(dir_.path(), o);
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  Document Run(const std::string& json) { return db_->RunCommand(Json(json).view()); }
  void Create(const std::string& name, const std::string& policy) {
    Document r = Run(R"({"create": ")" + name + R"(", "conflictPolicy": )" + policy + "}");
    ASSERT_EQ(Int(r.bson(), "ok"), 1) << r.ToJson();
  }
  StatusOr<UpdateResult> Write(const std::string& coll, const std::string& update, int64_t basis,
                               const std::string& agent = "", const std::string& source = "") {
    UpdateOptions o;
    o.write.basis_version = basis;
    o.write.context.agent_id = agent;
    o.write.context.source = source;
    return db_->GetCollection(coll).UpdateOne(Json(R"({"_id": "o"})").view(), Json(update).view(), o);
  }
  Document Get(const std::string& coll) {
    auto d = db_->GetCollection(coll).FindOne(Json(R"({"_id": "o"})").view());
    EXPECT_OK(d);
    return d.ok() && d->has_value() ? **d : Document();
  }
  Document Versions(const std::string& coll) {
    auto v = db_->GetCollection(coll).GetFieldVersions(Json(R"({"_id": "o"})").view());
    EXPECT_OK(v);
    return v.ok() && !v->empty() ? (*v)[0].versions : Document();
  }

  std::atomic<int64_t> now_ms_{1700000000000};
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

// ---- the four scenarios of the write-protocol article, with threads ----

// Each agent reads the order, thinks a random few ms, writes with its basis.
struct AgentRun {
  int attempts = 0;
  int conflicts = 0;
  Status last;
};

AgentRun RunAgent(Database* db, const std::string& coll, const std::string& agent, const std::string& update,
                  int seed, int max_attempts) {
  AgentRun run;
  std::mt19937 rng(seed);
  Collection c = db->GetCollection(coll);
  for (int i = 0; i < max_attempts; ++i) {
    ++run.attempts;
    auto cur = c.FindOne(Json(R"({"_id": "o"})").view());
    int64_t basis = Int((**cur).bson(), "version");
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 5));
    UpdateOptions o;
    o.write.basis_version = basis;
    o.write.context.agent_id = agent;
    auto r = c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(update).view(), o);
    run.last = r.status();
    if (r.ok()) return run;
    if (r.status().code() != ErrorCode::kVersionConflict) return run;
    ++run.conflicts;
  }
  return run;
}

TEST_F(PolicyTest, ScenarioSerialWritesNeverConflict) {
  ASSERT_OK(db_->GetCollection("o").InsertOne(Json(R"({"_id": "o", "n": 0})").view()));
  for (int i = 0; i < 5; ++i) {
    std::thread t([&, i] {
      AgentRun r = RunAgent(db_.get(), "o", "agent-" + std::to_string(i), R"({"$inc": {"n": 1}})", i, 1);
      EXPECT_OK(r.last);
      EXPECT_EQ(r.conflicts, 0);
    });
    t.join();  // one after the other
  }
  EXPECT_EQ(Int(Get("o").bson(), "n"), 5);
  EXPECT_EQ(Int(Get("o").bson(), "version"), 5);
}

TEST_F(PolicyTest, ScenarioTwoAgentsOneRecordRejectNoLostUpdate) {
  ASSERT_OK(db_->GetCollection("o").InsertOne(Json(R"({"_id": "o", "status": "new", "notes": []})").view()));
  std::atomic<int> conflicts{0};
  // Both read version 0 at about the same time, think, write.
  auto agent = [&](const char* name, const char* update, int seed) {
    AgentRun r = RunAgent(db_.get(), "o", name, update, seed, 50);
    EXPECT_OK(r.last);
    conflicts += r.conflicts;
  };
  std::thread a(agent, "A", R"({"$push": {"notes": "from A"}})", 1);
  std::thread b(agent, "B", R"({"$push": {"notes": "from B"}})", 2);
  a.join();
  b.join();
  Document d = Get("o");
  EXPECT_EQ(Int(d.bson(), "version"), 2);
  // Neither push was lost; the loser was refused at least once unless the
  // threads happened not to overlap.
  auto notes = db_->GetCollection("o").Distinct("notes", Json("{}").view());
  ASSERT_OK(notes);
  EXPECT_EQ(notes->size(), 2u);
  auto stats = db_->GetConflictStats("test", "o");
  EXPECT_EQ(stats->conflicts, conflicts.load());
}

TEST_F(PolicyTest, ScenarioOneAgentRetryingHasNoDuplicate) {
  ASSERT_OK(db_->GetCollection("o").InsertOne(Json(R"({"_id": "o", "charged": 0})").view()));
  std::vector<std::thread> retries;
  std::atomic<int> replays{0};
  // The agent's call "times out" and it retries, three times, concurrently.
  for (int i = 0; i < 4; ++i) {
    retries.emplace_back([&] {
      UpdateOptions o;
      o.write.context.agent_id = "billing";
      o.write.context.task_id = "invoice-9";
      o.write.context.write_seq = 1;
      auto r = db_->GetCollection("o").UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"charged": 99}})").view(), o);
      ASSERT_OK(r);
      if (r->replayed) replays++;
    });
  }
  for (auto& t : retries) t.join();
  EXPECT_EQ(Int(Get("o").bson(), "charged"), 99);
  EXPECT_EQ(replays.load(), 3);
}

TEST_F(PolicyTest, ScenarioTwoAgentsDifferentFieldsFieldMergeBothSurvive) {
  Create("o", R"({"mode": "fieldMerge"})");
  ASSERT_OK(db_->GetCollection("o").InsertOne(Json(R"({"_id": "o", "address": "old st", "eta": "monday"})").view()));
  std::atomic<int> conflicts{0};
  // Both read version 0, think, and write different fields with basis 0.
  std::atomic<int> ready{0};
  auto agent = [&](const char* name, const char* update) {
    ready++;
    while (ready.load() < 2) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    UpdateOptions o;
    o.write.basis_version = 0;
    o.write.context.agent_id = name;
    auto r = db_->GetCollection("o").UpdateOne(Json(R"({"_id": "o"})").view(), Json(update).view(), o);
    if (!r.ok()) conflicts++;
  };
  std::thread a(agent, "A", R"({"$set": {"address": "new st"}})");
  std::thread b(agent, "B", R"({"$set": {"eta": "tuesday"}})");
  a.join();
  b.join();
  EXPECT_EQ(conflicts.load(), 0);
  Document d = Get("o");
  EXPECT_EQ(Str(d.bson(), "address"), "new st");
  EXPECT_EQ(Str(d.bson(), "eta"), "tuesday");
  EXPECT_EQ(Int(d.bson(), "version"), 2);
  // The journal marks the second as merged.
  JournalQuery q;
  q.collection = "o";
  q.limit = 0;
  int merged = 0;
  auto journal = db_->ReadJournal(q);
  ASSERT_OK(journal);
  for (const Document& e : journal->events) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, e.bson(), "merged") && bson_iter_bool(&it)) ++merged;
  }
  EXPECT_EQ(merged, 1);
}

// ---- field merge rules ----

TEST_F(PolicyTest, FieldMergeRefusesExactlyTheOverlappingPaths) {
  Create("m", R"({"mode": "fieldMerge"})");
  Collection c = db_->GetCollection("m");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "o", "addr": {"city": "a", "zip": 1}, "items": [{"x": 1}], "n": 0, "tag": "t"})").view()));
  ASSERT_OK(Write("m", R"({"$set": {"addr.city": "b"}})", 0));  // v1
  // Child of a changed path's parent: overlap both ways.
  auto r = Write("m", R"({"$set": {"addr": {"city": "c"}}})", 0);
  ASSERT_THAT(r, StatusIs(ErrorCode::kVersionConflict));
  EXPECT_EQ(Strings(r.status().err_info()->bson(), "conflictingFields"), std::vector<std::string>{"addr.city"});
  {
    // conflictingValues holds the current value under the dotted path.
    bson_iter_t it, vals;
    ASSERT_TRUE(bson_iter_init_find(&it, r.status().err_info()->bson(), "conflictingValues"));
    ASSERT_TRUE(bson_iter_recurse(&it, &vals) && bson_iter_find(&vals, "addr.city"));
    EXPECT_STREQ(bson_iter_utf8(&vals, nullptr), "b");
  }
  EXPECT_EQ(Str(r.status().err_info()->bson(), "policy"), "fieldMerge");
  // A sibling merges.
  ASSERT_OK(Write("m", R"({"$set": {"addr.zip": 2}})", 0));  // v2
  // Arrays are one unit.
  ASSERT_OK(Write("m", R"({"$push": {"items": {"x": 2}}})", 2));  // v3
  EXPECT_THAT(Write("m", R"({"$set": {"items.0.x": 9}})", 2), StatusIs(ErrorCode::kVersionConflict));
  // $unset and $rename write their paths.
  ASSERT_OK(Write("m", R"({"$unset": {"tag": ""}})", 3));  // v4
  EXPECT_THAT(Write("m", R"({"$set": {"tag": "u"}})", 3), StatusIs(ErrorCode::kVersionConflict));
  ASSERT_OK(Write("m", R"({"$rename": {"n": "count"}})", 4));  // v5
  EXPECT_THAT(Write("m", R"({"$inc": {"n": 1}})", 4), StatusIs(ErrorCode::kVersionConflict));
  EXPECT_THAT(Write("m", R"({"$set": {"count": 7}})", 4), StatusIs(ErrorCode::kVersionConflict));
  // A replacement writes everything: with a stale basis it conflicts.
  UpdateOptions o;
  o.write.basis_version = 4;
  EXPECT_THAT(c.ReplaceOne(Json(R"({"_id": "o"})").view(), Json(R"({"fresh": true})").view(), o),
              StatusIs(ErrorCode::kVersionConflict));
  // A delete too.
  WriteOptions wo;
  wo.basis_version = 4;
  EXPECT_THAT(c.DeleteOne(Json(R"({"_id": "o"})").view(), wo), StatusIs(ErrorCode::kVersionConflict));
  Document v = Versions("m");
  EXPECT_EQ(Int(v.bson(), "items"), 3);
  EXPECT_EQ(Int(v.bson(), "tag"), 4);
  EXPECT_EQ(Int(v.bson(), "n"), 5);
  EXPECT_EQ(Int(v.bson(), "count"), 5);
}

TEST_F(PolicyTest, UpsertsStartWithAnEmptyTableAndMergeLikeInserts) {
  Create("u", R"({"mode": "fieldMerge"})");
  Collection c = db_->GetCollection("u");
  UpdateOptions up;
  up.upsert = true;
  auto r = c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$set": {"a": 1, "b": 1}})").view(), up);
  ASSERT_OK(r);
  ASSERT_TRUE(r->upserted_id.has_value());
  EXPECT_EQ(bson_count_keys(Versions("u").bson()), 0u);  // as old as the insert
  // An upsert that matches is an update: it records its paths.
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$set": {"a": 2}})").view(), up));
  EXPECT_EQ(Int(Versions("u").bson(), "a"), 1);
  // A stale write of another field merges; of the same field conflicts.
  ASSERT_OK(Write("u", R"({"$set": {"b": 2}})", 0));
  EXPECT_THAT(Write("u", R"({"$set": {"a": 3}})", 0), StatusIs(ErrorCode::kVersionConflict));
}

TEST_F(PolicyTest, ConcurrentIncrementsMergeOnlyWhenTheCollectionSaysSo) {
  Create("i", R"({"mode": "fieldMerge"})");
  Create("j", R"({"mode": "fieldMerge", "mergeIncrements": true})");
  for (const char* coll : {"i", "j"}) {
    ASSERT_OK(db_->GetCollection(coll).InsertOne(Json(R"({"_id": "o", "n": 0})").view()));
    ASSERT_OK(Write(coll, R"({"$inc": {"n": 1}})", 0));
  }
  EXPECT_THAT(Write("i", R"({"$inc": {"n": 1}})", 0), StatusIs(ErrorCode::kVersionConflict));
  ASSERT_OK(Write("j", R"({"$inc": {"n": 1}})", 0));
  EXPECT_EQ(Int(Get("j").bson(), "n"), 2);
  // A $set of the same field is still a conflict.
  EXPECT_THAT(Write("j", R"({"$set": {"n": 5}})", 0), StatusIs(ErrorCode::kVersionConflict));
}

TEST_F(PolicyTest, FieldVersionTableStaysBounded) {
  ASSERT_OK(db_->GetCollection("b").InsertOne(Json(R"({"_id": "o", "a": {}})").view()));
  for (int i = 0; i < 300; ++i) {
    std::string path = "a.k" + std::to_string(i % 50);
    bson_t* u = BCON_NEW("$set", "{", path.c_str(), BCON_INT32(i), "}");
    ASSERT_OK(db_->GetCollection("b").UpdateOne(Json(R"({"_id": "o"})").view(), DocumentView(u)));
    bson_destroy(u);
  }
  EXPECT_EQ(bson_count_keys(Versions("b").bson()), 50u);
  // Writing the parent supersedes the children's entries.
  ASSERT_OK(db_->GetCollection("b").UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$set": {"a": {"z": 1}}})").view()));
  Document v = Versions("b");
  EXPECT_EQ(bson_count_keys(v.bson()), 1u);
  EXPECT_EQ(Int(v.bson(), "a"), 301);
  // Hundreds of distinct top-level paths fold into the root entry.
  for (int i = 0; i < 300; ++i) {
    std::string path = "f" + std::to_string(i);
    bson_t* u = BCON_NEW("$set", "{", path.c_str(), BCON_INT32(i), "}");
    ASSERT_OK(db_->GetCollection("b").UpdateOne(Json(R"({"_id": "o"})").view(), DocumentView(u)));
    bson_destroy(u);
  }
  EXPECT_LE(bson_count_keys(Versions("b").bson()), 257u);
}

TEST_F(PolicyTest, SourcePriorityAndAppendOnlyAndCollMod) {
  Create("s", R"({"mode": "sourcePriority", "sourcePriority": ["human", "planner"]})");
  ASSERT_OK(db_->GetCollection("s").InsertOne(Json(R"({"_id": "o", "x": 0})").view()));
  ASSERT_OK(Write("s", R"({"$set": {"x": 1}})", 0, "p", "planner"));
  // Stale, but a human outranks the planner.
  ASSERT_OK(Write("s", R"({"$set": {"x": 2}})", 0, "h", "human"));
  // Stale planner vs last writer human: refused, naming both sources.
  auto r = Write("s", R"({"$set": {"x": 3}})", 0, "p", "planner");
  ASSERT_THAT(r, StatusIs(ErrorCode::kVersionConflict));
  EXPECT_EQ(Str(r.status().err_info()->bson(), "source"), "planner");
  EXPECT_EQ(Str(r.status().err_info()->bson(), "lastWriterSource"), "human");
  // Unknown sources rank last.
  EXPECT_THAT(Write("s", R"({"$set": {"x": 4}})", 0, "bot", "bot"), StatusIs(ErrorCode::kVersionConflict));

  Create("a", R"({"mode": "appendOnly"})");
  ASSERT_OK(db_->GetCollection("a").InsertOne(Json(R"({"_id": "o"})").view()));
  EXPECT_THAT(Write("a", R"({"$set": {"x": 1}})", 0), StatusIs(ErrorCode::kAppendOnlyCollection));
  EXPECT_THAT(db_->GetCollection("a").DeleteOne(Json(R"({"_id": "o"})").view()),
              StatusIs(ErrorCode::kAppendOnlyCollection));
  // collMod applies to the next write, and the policy is in conflict events.
  ASSERT_OK(db_->GetCollection("r").InsertOne(Json(R"({"_id": "o", "a": 0, "b": 0})").view()));
  ASSERT_OK(Write("r", R"({"$set": {"a": 1}})", 0));
  EXPECT_THAT(Write("r", R"({"$set": {"b": 1}})", 0), StatusIs(ErrorCode::kVersionConflict));
  Document mod = Run(R"({"collMod": "r", "conflictPolicy": {"mode": "fieldMerge"}})");
  ASSERT_EQ(Int(mod.bson(), "ok"), 1) << mod.ToJson();
  ASSERT_OK(Write("r", R"({"$set": {"b": 1}})", 0));
  EXPECT_THAT(Write("r", R"({"$set": {"a": 2}})", 0), StatusIs(ErrorCode::kVersionConflict));
  JournalQuery q;
  q.collection = "r";
  q.limit = 0;
  std::vector<std::string> policies;
  auto journal = db_->ReadJournal(q);
  ASSERT_OK(journal);
  for (const Document& e : journal->events) {
    if (Str(e.bson(), "op") == "conflict") policies.push_back(Str(e.bson(), "policy"));
  }
  EXPECT_EQ(policies, (std::vector<std::string>{"reject", "fieldMerge"}));
  // The policy survives reopen.
  Reopen();
  ASSERT_OK(db_->GetCollection("r").UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$set": {"c": 1}})").view()));
  ASSERT_OK(Write("r", R"({"$set": {"d": 1}})", 2));
}

// ---- leases ----

TEST_F(PolicyTest, LeasesRefuseOthersPassTheHolderAndExpire) {
  Collection c = db_->GetCollection("l");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "o", "n": 0})").view()));
  Value id(*bson_iter_value([] {
    static bson_iter_t it;
    static Document d = Json(R"({"_id": "o"})");
    bson_iter_init_find(&it, d.bson(), "_id");
    return &it;
  }()));
  auto lease = c.AcquireLease(id, 10000, "A");
  ASSERT_OK(lease);
  EXPECT_EQ(lease->holder, "A");
  EXPECT_EQ(lease->expires_at_ms, now_ms_.load() + 10000);
  UpdateOptions by_b;
  by_b.write.context.agent_id = "B";
  auto refused = c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_b);
  ASSERT_THAT(refused, StatusIs(ErrorCode::kLeaseHeld));
  EXPECT_EQ(Str(refused.status().err_info()->bson(), "holder"), "A");
  EXPECT_EQ(Int(refused.status().err_info()->bson(), "expiresAt"), now_ms_.load() + 10000);
  WriteOptions del_b;
  del_b.context.agent_id = "B";
  EXPECT_THAT(c.DeleteOne(Json(R"({"_id": "o"})").view(), del_b), StatusIs(ErrorCode::kLeaseHeld));
  EXPECT_THAT(c.AcquireLease(id, 10000, "B"), StatusIs(ErrorCode::kLeaseHeld));
  EXPECT_THAT(c.RenewLease(id, 10000, "B"), StatusIs(ErrorCode::kLeaseHeld));
  // The holder passes the lease, and still the version gate.
  UpdateOptions by_a;
  by_a.write.context.agent_id = "A";
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_a));
  by_a.write.basis_version = 0;
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_a),
              StatusIs(ErrorCode::kVersionConflict));
  // Renewal, and survival across a restart.
  now_ms_ += 5000;
  auto renewed = c.AcquireLease(id, 10000, "A");  // acquiring your own renews
  ASSERT_OK(renewed);
  EXPECT_EQ(renewed->expires_at_ms, now_ms_.load() + 10000);
  Reopen();
  Collection again = db_->GetCollection("l");
  EXPECT_THAT(again.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_b),
              StatusIs(ErrorCode::kLeaseHeld));
  // Expiry: no sweeper needed.
  now_ms_ += 10001;
  ASSERT_OK(again.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_b));
  EXPECT_THAT(again.RenewLease(id, 10000, "A"), StatusIs(ErrorCode::kNoSuchKey));
  // Release.
  ASSERT_OK(again.AcquireLease(id, 10000, "B"));
  EXPECT_THAT(again.ReleaseLease(id, "A"), StatusIs(ErrorCode::kLeaseHeld));
  auto released = again.ReleaseLease(id, "B");
  ASSERT_OK(released);
  EXPECT_TRUE(released->released);
  UpdateOptions by_c;
  by_c.write.context.agent_id = "C";
  ASSERT_OK(again.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), by_c));
  EXPECT_THAT(again.AcquireLease(id, 10000, ""), StatusIs(ErrorCode::kBadValue));
}

TEST_F(PolicyTest, LeaseAndWriterRaceNeverLetsAnotherWriterThrough) {
  Collection c = db_->GetCollection("race");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "o", "n": 0})").view()));
  Document idd = Json(R"({"_id": "o"})");
  bson_iter_t it;
  bson_iter_init_find(&it, idd.bson(), "_id");
  Value id(*bson_iter_value(&it));
  std::atomic<bool> leased{false};
  std::atomic<int> writes_after_lease{0};
  std::thread writer([&] {
    UpdateOptions o;
    o.write.context.agent_id = "W";
    for (int i = 0; i < 300; ++i) {
      bool before = leased.load();
      auto r = c.UpdateOne(Json(R"({"_id": "o"})").view(), Json(R"({"$inc": {"n": 1}})").view(), o);
      if (r.ok() && before) writes_after_lease++;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_OK(c.AcquireLease(id, 60000, "L"));
  leased = true;
  writer.join();
  EXPECT_EQ(writes_after_lease.load(), 0);
}

}  // namespace
}  // namespace gatedb
