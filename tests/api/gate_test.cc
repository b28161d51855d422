// The version gate and the write protocol through the C++ API and
// RunCommand: the idiom's versionConflicts, basisVersion and its structured
// VersionConflict, StaleBasis, not-found bases, the journal, conflictStats,
// and the retry helper under contention.
#include <atomic>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

constexpr auto Int = test::IntAt;
constexpr auto Str = test::StrAt;
constexpr auto Has = test::HasPath;
constexpr auto Strings = test::StringsAt;

using test::Json;
using test::StatusIs;

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(Options o = Options()) {
    db_.reset();
    auto db = Database::Open(dir_.path(), o);
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  Document Run(const std::string& json) { return db_->RunCommand(Json(json).view()); }
  std::vector<Document> Events(const std::string& coll = "") {
    JournalQuery q;
    q.collection = coll;
    q.limit = 0;
    auto r = db_->ReadJournal(q);
    EXPECT_OK(r);
    return r.ok() ? std::move(r->events) : std::vector<Document>();
  }
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(GateTest, IdiomReportsVersionConflictsOnlyWhenTheVersionMovedOn) {
  Run(R"({"insert": "o", "documents": [{"_id": "a", "s": 1}]})");
  Document ok = Run(R"({"update": "o", "updates": [{"q": {"_id": "a", "version": 0}, "u": {"$set": {"s": 2}, "$inc": {"version": 1}}}]})");
  EXPECT_EQ(Int(ok.bson(), "n"), 1);
  EXPECT_FALSE(Has(ok.bson(), "versionConflicts")) << ok.ToJson();
  Document stale = Run(R"({"update": "o", "updates": [
      {"q": {"_id": "missing", "version": 0}, "u": {"$set": {"s": 3}}},
      {"q": {"_id": "a", "version": 0}, "u": {"$set": {"s": 3}, "$inc": {"version": 1}}}]})");
  EXPECT_EQ(Int(stale.bson(), "n"), 0);
  EXPECT_EQ(Int(stale.bson(), "nModified"), 0);
  EXPECT_FALSE(Has(stale.bson(), "writeErrors"));
  // Only the statement whose document exists at another version is listed.
  EXPECT_EQ(Int(stale.bson(), "versionConflicts.0.index"), 1) << stale.ToJson();
  EXPECT_EQ(Str(stale.bson(), "versionConflicts.0._id"), "a");
  EXPECT_EQ(Int(stale.bson(), "versionConflicts.0.expectedVersion"), 0);
  EXPECT_EQ(Int(stale.bson(), "versionConflicts.0.currentVersion"), 1);
  EXPECT_FALSE(Has(stale.bson(), "versionConflicts.1"));
  // A non-matching filter for another reason is no version conflict.
  Document other = Run(R"({"update": "o", "updates": [{"q": {"_id": "a", "version": 1, "s": 99}, "u": {"$set": {"s": 3}}}]})");
  EXPECT_FALSE(Has(other.bson(), "versionConflicts")) << other.ToJson();
  Document del = Run(R"({"delete": "o", "deletes": [{"q": {"_id": "a", "version": 7}, "limit": 1}]})");
  EXPECT_EQ(Int(del.bson(), "n"), 0);
  EXPECT_EQ(Int(del.bson(), "versionConflicts.0.currentVersion"), 1);
}

TEST_F(GateTest, BasisVersionConflictCarriesEverythingAnAgentNeeds) {
  Collection c = db_->GetCollection("orders");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "o1", "addr": "x", "eta": 1, "n": 0})").view()));
  UpdateOptions by_b;
  by_b.write.basis_version = 0;
  by_b.write.context.agent_id = "agent-b";
  by_b.write.context.task_id = "t-b";
  by_b.write.context.source = "planner";
  auto r = c.UpdateOne(Json(R"({"_id": "o1"})").view(), Json(R"({"$set": {"addr": "y"}})").view(), by_b);
  ASSERT_OK(r);
  EXPECT_EQ(r->modified_count, 1);
  UpdateOptions by_a;
  by_a.write.basis_version = 0;  // stale: agent-b wrote version 1
  by_a.write.context.agent_id = "agent-a";
  auto conflict = c.UpdateOne(Json(R"({"_id": "o1"})").view(), Json(R"({"$set": {"eta": 2}})").view(), by_a);
  ASSERT_THAT(conflict, StatusIs(ErrorCode::kVersionConflict));
  const Document* info = conflict.status().err_info();
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(Int(info->bson(), "basisVersion"), 0);
  EXPECT_EQ(Int(info->bson(), "currentVersion"), 1);
  EXPECT_EQ(Str(info->bson(), "current.addr"), "y");
  EXPECT_THAT(Strings(info->bson(), "conflictingFields"), ::testing::ElementsAre("addr"));
  EXPECT_EQ(Str(info->bson(), "lastWriter.agentId"), "agent-b");
  EXPECT_EQ(Str(info->bson(), "lastWriter.taskId"), "t-b");
  EXPECT_EQ(Str(info->bson(), "lastWriter.source"), "planner");
  EXPECT_TRUE(Has(info->bson(), "lastWriter.at"));
  EXPECT_FALSE(Str(info->bson(), "reason").empty());
  EXPECT_EQ(Str(info->bson(), "suggestedAction"), "reread_and_retry");
  // Nothing was written by the refused write.
  auto d = c.FindOne(Json(R"({"_id": "o1"})").view());
  EXPECT_EQ(Int((*d)->bson(), "eta"), 1);
  EXPECT_EQ(Int((*d)->bson(), "version"), 1);
  // Through the command: a writeErrors entry with the same errInfo.
  Document reply = Run(R"({"update": "orders", "updates": [{"q": {"_id": "o1"}, "u": {"$set": {"eta": 3}}, "basisVersion": 0}],
                           "writeContext": {"agentId": "agent-c"}})");
  EXPECT_EQ(Str(reply.bson(), "writeErrors.0.codeName"), "VersionConflict") << reply.ToJson();
  EXPECT_EQ(Int(reply.bson(), "writeErrors.0.code"), 80001);
  EXPECT_EQ(Int(reply.bson(), "writeErrors.0.errInfo.currentVersion"), 1);
  EXPECT_EQ(Int(reply.bson(), "n"), 0);
  // The right basis goes through.
  Document good = Run(R"({"update": "orders", "updates": [{"q": {"_id": "o1"}, "u": {"$set": {"eta": 3}}, "basisVersion": 1}]})");
  EXPECT_EQ(Int(good.bson(), "nModified"), 1) << good.ToJson();
}

TEST_F(GateTest, BasisOnAMissingDocumentIsNotFoundNotStale) {
  Collection c = db_->GetCollection("orders");
  UpdateOptions o;
  o.write.basis_version = 3;
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": "nope"})").view(), Json(R"({"$set": {"a": 1}})").view(), o),
              StatusIs(ErrorCode::kNoMatchingDocument));
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x"})").view()));
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": "nope"})").view(), Json(R"({"$set": {"a": 1}})").view(), o),
              StatusIs(ErrorCode::kNoMatchingDocument));
  WriteOptions wo;
  wo.basis_version = 0;
  EXPECT_THAT(c.DeleteOne(Json(R"({"_id": "nope"})").view(), wo), StatusIs(ErrorCode::kNoMatchingDocument));
  Document multi = Run(R"({"update": "orders", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "multi": true, "basisVersion": 0}]})");
  EXPECT_EQ(Str(multi.bson(), "writeErrors.0.codeName"), "BadValue") << multi.ToJson();
  Document upsert = Run(R"({"update": "orders", "updates": [{"q": {"_id": "y"}, "u": {"$set": {"a": 1}}, "upsert": true, "basisVersion": 0}]})");
  EXPECT_EQ(Str(upsert.bson(), "writeErrors.0.codeName"), "BadValue") << upsert.ToJson();
}

TEST_F(GateTest, DeleteAndFindAndModifyAreGatedToo) {
  Collection c = db_->GetCollection("q");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "v": 0})").view()));
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"v": 1}})").view()));
  WriteOptions stale;
  stale.basis_version = 0;
  EXPECT_THAT(c.DeleteOne(Json(R"({"_id": 1})").view(), stale), StatusIs(ErrorCode::kVersionConflict));
  FindOneAndModifyOptions fo;
  fo.write.basis_version = 0;
  EXPECT_THAT(c.FindOneAndUpdate(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"v": 1}})").view(), fo),
              StatusIs(ErrorCode::kVersionConflict));
  Document reply = Run(R"({"findAndModify": "q", "query": {"_id": 1}, "update": {"$inc": {"v": 1}}, "basisVersion": 0})");
  EXPECT_EQ(Str(reply.bson(), "codeName"), "VersionConflict") << reply.ToJson();
  EXPECT_EQ(Int(reply.bson(), "errInfo.currentVersion"), 1);
  fo.write.basis_version = 1;
  fo.return_after = true;
  auto ok = c.FindOneAndUpdate(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"v": 1}})").view(), fo);
  ASSERT_OK(ok);
  EXPECT_EQ(Int((**ok).bson(), "version"), 2);
  stale.basis_version = 2;
  auto del = c.DeleteOne(Json(R"({"_id": 1})").view(), stale);
  ASSERT_OK(del);
  EXPECT_EQ(del->deleted_count, 1);
}

TEST_F(GateTest, StaleBasisByReadAge) {
  Document created = Run(R"({"create": "fresh", "maxBasisAgeMs": 1000})");
  ASSERT_EQ(Int(created.bson(), "ok"), 1) << created.ToJson();
  Collection c = db_->GetCollection("fresh");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1})").view()));
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  UpdateOptions old;
  old.write.basis_version = 0;
  old.write.context.read_at_ms = now - 60000;
  auto r = c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"a": 1}})").view(), old);
  ASSERT_THAT(r, StatusIs(ErrorCode::kStaleBasis));
  ASSERT_NE(r.status().err_info(), nullptr);
  EXPECT_EQ(Int(r.status().err_info()->bson(), "currentVersion"), 0);
  // Even though the version still matches.
  old.write.context.read_at_ms = now;
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"a": 1}})").view(), old));
  // The idiom is gated as well.
  UpdateOptions idiom;
  idiom.write.context.read_at_ms = now - 60000;
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": 1, "version": 1})").view(), Json(R"({"$set": {"a": 2}})").view(), idiom),
              StatusIs(ErrorCode::kStaleBasis));
  // An ungated write is not.
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"a": 3}})").view(), idiom));
  // collMod lifts the limit for the next write, and survives reopen.
  Document mod = Run(R"({"collMod": "fresh", "maxBasisAgeMs": null})");
  ASSERT_EQ(Int(mod.bson(), "ok"), 1) << mod.ToJson();
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1, "version": 2})").view(), Json(R"({"$set": {"a": 4}})").view(), idiom));
  Run(R"({"collMod": "fresh", "maxBasisAgeMs": 5})");
  Reopen();
  Collection again = db_->GetCollection("fresh");
  EXPECT_THAT(again.UpdateOne(Json(R"({"_id": 1, "version": 3})").view(), Json(R"({"$set": {"a": 5}})").view(), idiom),
              StatusIs(ErrorCode::kStaleBasis));
}

TEST_F(GateTest, JournalHasOneEventPerCommittedWriteInOrder) {
  Collection c = db_->GetCollection("j");
  UpdateOptions o;
  o.write.context.agent_id = "a1";
  o.write.context.task_id = "t1";
  // Each write its own idempotency key (task t1, writeSeq 1, 2, ...).
  o.write.context.write_seq = 1;
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "x": 1, "y": {"z": 1}})").view(), o.write));
  o.write.context.write_seq = 2;
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"y.z": 2}})").view(), o));
  o.write.context.write_seq = 3;
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"y.z": 2}})").view(), o));  // no-op
  o.write.context.write_seq = 4;
  ASSERT_OK(c.ReplaceOne(Json(R"({"_id": 1})").view(), Json(R"({"x": 5})").view(), o));
  o.write.context.write_seq = 5;
  ASSERT_OK(c.DeleteOne(Json(R"({"_id": 1})").view(), o.write));
  ASSERT_OK(db_->GetCollection("other").InsertOne(Json(R"({"_id": 1})").view()));
  std::vector<Document> ev = Events("j");
  ASSERT_EQ(ev.size(), 4u);  // the no-op wrote nothing
  const char* ops[] = {"insert", "update", "replace", "delete"};
  const int64_t seqs[] = {1, 2, 4, 5};
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(Str(ev[i].bson(), "op"), ops[i]);
    EXPECT_EQ(Int(ev[i].bson(), "seq"), static_cast<int64_t>(i + 1));
    EXPECT_EQ(Str(ev[i].bson(), "ns"), "test.j");
    EXPECT_EQ(Str(ev[i].bson(), "writeContext.agentId"), "a1");
    EXPECT_EQ(Int(ev[i].bson(), "writeContext.writeSeq"), seqs[i]);
    EXPECT_TRUE(Has(ev[i].bson(), "at"));
  }
  EXPECT_EQ(Int(ev[1].bson(), "versionBefore"), 0);
  EXPECT_EQ(Int(ev[1].bson(), "versionAfter"), 1);
  EXPECT_THAT(Strings(ev[1].bson(), "changedPaths"), ::testing::ElementsAre("y.z"));
  EXPECT_THAT(Strings(ev[2].bson(), "changedPaths"), ::testing::UnorderedElementsAre("x", "y"));
  EXPECT_EQ(Int(ev[3].bson(), "versionBefore"), 2);
  EXPECT_EQ(Events().size(), 5u);  // all collections
  // afterSeq and limit.
  JournalQuery q;
  q.after_seq = 2;
  q.limit = 1;
  auto part = db_->ReadJournal(q);
  ASSERT_OK(part);
  ASSERT_EQ(part->events.size(), 1u);
  EXPECT_EQ(Int(part->events[0].bson(), "seq"), 3);
  EXPECT_EQ(part->last_seq, 5u);
  // The command.
  Document reply = Run(R"({"journal": "j", "afterSeq": 3, "limit": 10})");
  EXPECT_EQ(Int(reply.bson(), "lastSeq"), 5);
  EXPECT_EQ(Str(reply.bson(), "events.0.op"), "delete");
  EXPECT_FALSE(Has(reply.bson(), "events.1"));
  // Survives reopen, and numbering continues without a gap.
  Reopen();
  ASSERT_OK(db_->GetCollection("j").InsertOne(Json(R"({"_id": 2})").view()));
  std::vector<Document> all = Events();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(Int(all[5].bson(), "seq"), 6);
}

TEST_F(GateTest, RefusedGatedWritesAreConflictEventsAndStats) {
  Collection c = db_->GetCollection("s");
  ASSERT_OK(c.InsertMany({Json(R"({"_id": "hot"})"), Json(R"({"_id": "cold"})")}));
  UpdateOptions o;
  o.write.context.agent_id = "winner";
  o.write.basis_version = 0;
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$set": {"a": 1}})").view(), o));
  o.write.context.agent_id = "loser";
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(c.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$set": {"a": 2}})").view(), o),
                StatusIs(ErrorCode::kVersionConflict));
  }
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": "cold"})").view(), Json(R"({"$set": {"a": 1}})").view(), o));
  // An ungated write counts for neither.
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": "cold"})").view(), Json(R"({"$set": {"a": 2}})").view()));
  std::vector<Document> ev = Events("s");
  int conflicts = 0;
  for (const Document& e : ev) {
    if (Str(e.bson(), "op") == "conflict") {
      ++conflicts;
      EXPECT_EQ(Int(e.bson(), "basisVersion"), 0);
      EXPECT_EQ(Int(e.bson(), "versionBefore"), 1);
      EXPECT_EQ(Str(e.bson(), "writeContext.agentId"), "loser");
    }
  }
  EXPECT_EQ(conflicts, 3);
  auto stats = db_->GetConflictStats("test", "s");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->gated_writes, 5);
  EXPECT_EQ(stats->conflicts, 3);
  EXPECT_DOUBLE_EQ(stats->conflict_rate, 0.6);
  ASSERT_EQ(stats->hot_documents.size(), 1u);
  EXPECT_EQ(stats->hot_documents[0].first.ToJson(), "\"hot\"");
  EXPECT_EQ(stats->hot_documents[0].second, 3);
  ASSERT_EQ(stats->agents.size(), 1u);
  EXPECT_EQ(stats->agents[0].first, "loser");
  Document reply = Run(R"({"conflictStats": "s"})");
  EXPECT_EQ(Int(reply.bson(), "conflicts"), 3) << reply.ToJson();
  // Counting from a journal position leaves earlier events out.
  JournalQuery head;
  head.limit = 1;
  uint64_t now_seq = db_->ReadJournal(head)->last_seq;
  auto later = db_->GetConflictStats("test", "s", now_seq);
  ASSERT_OK(later);
  EXPECT_EQ(later->gated_writes, 0);
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": "hot"})").view(), Json(R"({"$set": {"a": 3}})").view(), o),
              StatusIs(ErrorCode::kVersionConflict));
  later = db_->GetConflictStats("test", "s", now_seq);
  EXPECT_EQ(later->gated_writes, 1);
  EXPECT_EQ(later->conflicts, 1);
  Document since = Run(R"({"conflictStats": "s", "afterSeq": )" + std::to_string(now_seq) + "}");
  EXPECT_EQ(Int(since.bson(), "conflicts"), 1) << since.ToJson();
  EXPECT_EQ(Str(reply.bson(), "agents.0.agentId"), "loser");
}

TEST_F(GateTest, RetentionCollectsAndReadersGetAnErrorNotAGap) {
  Options o;
  o.journal_max_events = 5;
  Reopen(o);
  Collection c = db_->GetCollection("r");
  for (int i = 0; i < 20; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT32(d, "_id", i);
    ASSERT_OK(c.InsertOne(DocumentView(d)));
    bson_destroy(d);
  }
  // The background collector runs every second; wait for it.
  JournalQuery q;
  q.limit = 0;
  StatusOr<JournalBatch> r = db_->ReadJournal(q);
  for (int i = 0; i < 100 && r.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = db_->ReadJournal(q);
  }
  ASSERT_THAT(r, StatusIs(ErrorCode::kChangeStreamHistoryLost));
  Document reply = Run(R"({"journal": 1, "afterSeq": 0})");
  EXPECT_EQ(Str(reply.bson(), "codeName"), "ChangeStreamHistoryLost") << reply.ToJson();
  // From the oldest retained event on, reading works and has no gap.
  q.after_seq = 15;
  auto tail = db_->ReadJournal(q);
  ASSERT_OK(tail);
  ASSERT_EQ(tail->events.size(), 5u);
  EXPECT_EQ(Int(tail->events[0].bson(), "seq"), 16);
  EXPECT_EQ(Int(tail->events[4].bson(), "seq"), 20);
}

TEST_F(GateTest, ManyThreadsOneDocumentThroughTheRetryHelper) {
  Collection c = db_->GetCollection("hot");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "doc", "counter": 0})").view()));
  constexpr int kThreads = 6, kWrites = 60;
  std::atomic<int64_t> attempts{0}, commits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Collection mine = db_->GetCollection("hot");
      GatedWriteOptions go;
      go.max_attempts = 10000;
      go.context.agent_id = "agent-" + std::to_string(t);
      for (int i = 0; i < kWrites; ++i) {
        auto r = mine.WriteWithVersionGate(Json(R"({"_id": "doc"})").view(), [](const Document& cur) -> StatusOr<Document> {
          // Read-modify-write in the agent: the counter it saw, plus one.
          int64_t seen = Int(cur.bson(), "counter");
          std::this_thread::yield();
          bson_t* u = bson_new();
          bson_t set;
          BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
          BSON_APPEND_INT64(&set, "counter", seen + 1);
          bson_append_document_end(u, &set);
          return Document::Adopt(u);
        }, go);
        ASSERT_OK(r);
        attempts.fetch_add(r->attempts);
        commits.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto d = c.FindOne(Json(R"({"_id": "doc"})").view());
  EXPECT_EQ(Int((**d).bson(), "counter"), kThreads * kWrites);
  EXPECT_EQ(Int((**d).bson(), "version"), kThreads * kWrites);
  auto stats = db_->GetConflictStats("test", "hot");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->conflicts, attempts.load() - commits.load());
  EXPECT_EQ(stats->gated_writes, attempts.load());
  // The document's journal versions run 1, 2, 3, ... with no gap or repeat.
  int64_t expect = 1;
  for (const Document& e : Events("hot")) {
    if (Str(e.bson(), "op") != "update") continue;
    EXPECT_EQ(Int(e.bson(), "versionAfter"), expect);
    EXPECT_EQ(Int(e.bson(), "versionBefore"), expect - 1);
    ++expect;
  }
  EXPECT_EQ(expect - 1, kThreads * kWrites);
}

TEST_F(GateTest, RetryHelperGivesUpWithTheLastConflict) {
  Collection c = db_->GetCollection("g");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "n": 0})").view()));
  GatedWriteOptions go;
  go.max_attempts = 3;
  int calls = 0;
  auto r = c.WriteWithVersionGate(Json(R"({"_id": 1})").view(), [&](const Document&) -> StatusOr<Document> {
    ++calls;
    // Someone else always writes between our read and our write.
    EXPECT_OK(db_->GetCollection("g").UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 1}})").view()));
    return Json(R"({"$set": {"mine": true}})");
  }, go);
  EXPECT_THAT(r, StatusIs(ErrorCode::kVersionConflict));
  EXPECT_EQ(calls, 3);
  ASSERT_NE(r.status().err_info(), nullptr);
  EXPECT_EQ(Int(r.status().err_info()->bson(), "currentVersion"), 3);
  EXPECT_THAT(c.WriteWithVersionGate(Json(R"({"_id": 2})").view(),
                                     [](const Document&) -> StatusOr<Document> { return Json("{}"); }),
              StatusIs(ErrorCode::kNoMatchingDocument));
  // fn's own error ends the loop without writing.
  auto abort = c.WriteWithVersionGate(Json(R"({"_id": 1})").view(), [](const Document&) -> StatusOr<Document> {
    return Status(ErrorCode::kBadValue, "agent decided not to write");
  });
  EXPECT_THAT(abort, StatusIs(ErrorCode::kBadValue));
}

}  // namespace
}  // namespace gatedb
