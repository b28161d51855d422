// The task-level idempotency log: a (taskId, writeSeq) key runs once, its
// reply is stored atomically with its effects, retries replay it.
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/storage/db_impl.h"
#include "engine/storage/idempotency.h"
#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

constexpr auto Int = test::IntAt;
constexpr auto Str = test::StrAt;

using test::Json;
using test::StatusIs;

bool Replayed(const Document& reply) {
  bson_iter_t it;
  return bson_iter_init_find(&it, reply.bson(), "replayed") && bson_iter_as_bool(&it);
}
// The reply without its trailing `replayed: true`.
Document WithoutReplayed(const Document& reply) {
  bson_t* out = bson_new();
  bson_copy_to_excluding_noinit(reply.bson(), out, "replayed", nullptr);
  return Document::Adopt(out);
}

class IdempotencyTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(int64_t retention_sec = 3600) {
    db_.reset();
    Options o;
    o.clock_ms = [this] { return now_ms_.load(); };
    o.idempotency_retention_sec = retention_sec;
    auto db = Database::Open(dir_.path(), o);
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  Document Run(const std::string& json) { return db_->RunCommand(Json(json).view()); }
  int64_t Counter(const char* id = "c") {
    bson_t* f = bson_new();
    BSON_APPEND_UTF8(f, "_id", id);
    Document fd = Document::Adopt(f);
    auto d = db_->GetCollection("k").FindOne(fd.view());
    EXPECT_OK(d);
    return d.ok() && d->has_value() ? Int((**d).bson(), "n") : -1;
  }
  uint64_t JournalLength() {
    JournalQuery q;
    q.limit = 0;
    auto r = db_->ReadJournal(q);
    EXPECT_OK(r);
    return r.ok() ? r->last_seq : 0;
  }

  std::atomic<int64_t> now_ms_{1700000000000};
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(IdempotencyTest, ReplayReturnsTheIdenticalReplyAndChangesNothing) {
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  Document first = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}],
                           "writeContext": {"agentId": "a", "taskId": "t", "writeSeq": 1}})");
  ASSERT_EQ(Int(first.bson(), "nModified"), 1) << first.ToJson();
  EXPECT_FALSE(Replayed(first));
  uint64_t journal = JournalLength();
  // The same command, fields in another order, another agent name (the
  // write context is not part of the fingerprint), another session field.
  Document again = Run(R"({"update": "k", "lsid": {"id": 1}, "updates": [{"u": {"$inc": {"n": 1}}, "q": {"_id": "c"}}],
                           "writeContext": {"writeSeq": 1, "taskId": "t", "agentId": "b"}})");
  EXPECT_TRUE(Replayed(again)) << again.ToJson();
  EXPECT_TRUE(BinaryEqual(WithoutReplayed(again).view(), first.view())) << again.ToJson() << " vs " << first.ToJson();
  EXPECT_EQ(Counter(), 1);
  EXPECT_EQ(JournalLength(), journal);
  auto d = db_->GetCollection("k").FindOne(Json(R"({"_id": "c"})").view());
  EXPECT_EQ(Int((**d).bson(), "version"), 1);
  // Survives reopen.
  Reopen();
  Document after = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}],
                           "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_TRUE(Replayed(after));
  EXPECT_EQ(Counter(), 1);
}

TEST_F(IdempotencyTest, AnotherCommandUnderTheSameKeyIsRefused) {
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}], "writeContext": {"taskId": "t", "writeSeq": 1}})");
  Document other = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 5}}}], "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_EQ(Str(other.bson(), "codeName"), "IdempotencyKeyReuse") << other.ToJson();
  EXPECT_EQ(Str(other.bson(), "errInfo.taskId"), "t");
  EXPECT_EQ(Int(other.bson(), "errInfo.writeSeq"), 1);
  EXPECT_EQ(Int(other.bson(), "errInfo.firstUsedAt"), now_ms_.load());
  EXPECT_EQ(Counter(), 1);
  // Another collection is another command too.
  Document moved = Run(R"({"update": "k2", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}], "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_EQ(Str(moved.bson(), "codeName"), "IdempotencyKeyReuse");
}

TEST_F(IdempotencyTest, RefusedWritesStoreNothingSoTheKeyCanBeRetried) {
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}]})");  // version 1
  Document stale = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 10}}, "basisVersion": 0}],
                           "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_EQ(Str(stale.bson(), "writeErrors.0.codeName"), "VersionConflict") << stale.ToJson();
  auto status = db_->IdempotencyStatus("t");
  ASSERT_OK(status);
  EXPECT_TRUE(status->empty());
  // A validation failure stores nothing either.
  Document bad = Run(R"({"insert": "k", "documents": [{"_id": "c"}], "writeContext": {"taskId": "t", "writeSeq": 2}})");
  EXPECT_EQ(Str(bad.bson(), "writeErrors.0.codeName"), "DuplicateKey");
  EXPECT_TRUE(db_->IdempotencyStatus("t")->empty());
  // The same key with a fresh basis now runs (a different command: the
  // basis changed, and nothing was stored under the key).
  Document fresh = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 10}}, "basisVersion": 1}],
                           "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_EQ(Int(fresh.bson(), "nModified"), 1) << fresh.ToJson();
  EXPECT_FALSE(Replayed(fresh));
  EXPECT_EQ(Counter(), 11);
  auto listed = db_->IdempotencyStatus("t");
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].write_seq, 1);
  Document cmd = Run(R"({"idempotencyStatus": "t"})");
  EXPECT_EQ(Int(cmd.bson(), "writes.0.writeSeq"), 1) << cmd.ToJson();
  EXPECT_EQ(Int(cmd.bson(), "writes.0.reply.nModified"), 1);
}

TEST_F(IdempotencyTest, KeysExpireAfterTheRetention) {
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  const char* cmd = R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}], "writeContext": {"taskId": "t", "writeSeq": 1}})";
  Run(cmd);
  now_ms_ += 1800 * 1000;  // half the retention
  auto collected = db_->CollectIdempotencyRecords();
  ASSERT_OK(collected);
  EXPECT_EQ(*collected, 0u);
  EXPECT_TRUE(Replayed(Run(cmd)));
  now_ms_ += 3600 * 1000;  // past it
  collected = db_->CollectIdempotencyRecords();
  ASSERT_OK(collected);
  EXPECT_EQ(*collected, 1u);
  // The key is forgotten: the write runs again (the version gate and unique
  // keys are what protect a retry this late).
  EXPECT_FALSE(Replayed(Run(cmd)));
  EXPECT_EQ(Counter(), 2);
}

// A driver's retryable writes (lsid + txnNumber) are kept for an hour, as
// long as a retry within the session's lifetime can ask; other keys for
// the whole retention.  "lsid:" task ids are the sessions' own.
TEST_F(IdempotencyTest, SessionRecordsExpireAfterAnHour) {
  Reopen(7 * 24 * 3600);
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  const char* session_cmd = R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}],
      "lsid": {"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}}, "txnNumber": 1})";
  const char* task_cmd = R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}], "writeContext": {"taskId": "t", "writeSeq": 1}})";
  Run(session_cmd);
  Run(task_cmd);
  EXPECT_TRUE(Replayed(Run(session_cmd)));
  now_ms_ += 30 * 60 * 1000;  // within the hour: both stay
  auto collected = db_->CollectIdempotencyRecords();
  ASSERT_OK(collected);
  EXPECT_EQ(*collected, 0u);
  EXPECT_TRUE(Replayed(Run(session_cmd)));
  now_ms_ += 31 * 60 * 1000;  // past the hour: the session's goes, the task's stays
  collected = db_->CollectIdempotencyRecords();
  ASSERT_OK(collected);
  EXPECT_EQ(*collected, 1u);  // the session's
  EXPECT_TRUE(Replayed(Run(task_cmd)));
  EXPECT_FALSE(Replayed(Run(session_cmd)));
  EXPECT_EQ(Counter(), 3);
  Document bad = Run(R"({"insert": "k", "documents": [{"_id": 9}], "writeContext": {"taskId": "lsid:mine", "writeSeq": 1}})");
  EXPECT_EQ(Str(bad.bson(), "codeName"), "BadValue") << bad.ToJson();
}

TEST_F(IdempotencyTest, PartialSuccessIsStoredAsGiven) {
  Run(R"({"insert": "k", "documents": [{"_id": 2}]})");
  const char* cmd = R"({"insert": "k", "ordered": false, "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}], "writeContext": {"taskId": "t", "writeSeq": 1}})";
  Document first = Run(cmd);
  EXPECT_EQ(Int(first.bson(), "n"), 2) << first.ToJson();
  EXPECT_EQ(Str(first.bson(), "writeErrors.0.codeName"), "DuplicateKey");
  Run(R"({"delete": "k", "deletes": [{"q": {"_id": 2}, "limit": 1}]})");
  Document again = Run(cmd);
  EXPECT_TRUE(Replayed(again));
  EXPECT_TRUE(BinaryEqual(WithoutReplayed(again).view(), first.view()));
  auto n = db_->GetCollection("k").CountDocuments(Json("{}").view());
  EXPECT_EQ(*n, 2);  // 1 and 3; the replay did not insert 2
}

TEST_F(IdempotencyTest, ManyThreadsFiringOneKeyExecuteOnce) {
  Run(R"({"insert": "k", "documents": [{"_id": "c", "n": 0}]})");
  constexpr int kThreads = 8;
  std::vector<Document> replies(kThreads);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      replies[t] = Run(R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}], "writeContext": {"taskId": "t", "writeSeq": 9}})");
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(Counter(), 1);
  int executed = 0;
  for (const Document& r : replies) {
    if (!Replayed(r)) ++executed;
    EXPECT_TRUE(BinaryEqual(WithoutReplayed(r).view(), WithoutReplayed(replies[0]).view())) << r.ToJson();
  }
  EXPECT_EQ(executed, 1);
}

TEST_F(IdempotencyTest, LostReplyRetriedThreeTimesHasOneEffect) {
  // The seeds' scenario: the agent's write succeeds, the reply is lost, the
  // agent retries three times.
  Collection orders = db_->GetCollection("k");
  ASSERT_OK(orders.InsertOne(Json(R"({"_id": "refund", "n": 0, "refunded": 0})").view()));
  UpdateOptions o;
  o.write.context.agent_id = "refund-agent";
  o.write.context.task_id = "task-7781";
  o.write.context.write_seq = 3;
  std::vector<UpdateResult> results;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto r = orders.UpdateOne(Json(R"({"_id": "refund"})").view(),
                              Json(R"({"$inc": {"refunded": 50, "n": 1}})").view(), o);
    ASSERT_OK(r);
    results.push_back(*r);
  }
  auto d = orders.FindOne(Json(R"({"_id": "refund"})").view());
  EXPECT_EQ(Int((**d).bson(), "refunded"), 50);
  EXPECT_EQ(Int((**d).bson(), "version"), 1);
  EXPECT_FALSE(results[0].replayed);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].matched_count, 1);
    EXPECT_EQ(results[i].modified_count, 1);
    if (i > 0) {
      EXPECT_TRUE(results[i].replayed);
    }
  }
  // Inserts without an _id get theirs once, and the replay reports it.
  WriteOptions w;
  w.context.task_id = "task-7781";
  w.context.write_seq = 4;
  auto ins1 = orders.InsertOne(Json(R"({"kind": "ledger"})").view(), w);
  auto ins2 = orders.InsertOne(Json(R"({"kind": "ledger"})").view(), w);
  ASSERT_OK(ins1);
  ASSERT_OK(ins2);
  EXPECT_TRUE(ins2->replayed);
  EXPECT_EQ(ins1->inserted_id.ToJson(), ins2->inserted_id.ToJson());
  EXPECT_EQ(*orders.CountDocuments(Json(R"({"kind": "ledger"})").view()), 1);
  // And a keyed VersionConflict reaches the C++ caller with its errInfo.
  o.write.context.write_seq = 5;
  o.write.basis_version = 0;
  auto stale = orders.UpdateOne(Json(R"({"_id": "refund"})").view(), Json(R"({"$set": {"x": 1}})").view(), o);
  ASSERT_THAT(stale, StatusIs(ErrorCode::kVersionConflict));
  ASSERT_NE(stale.status().err_info(), nullptr);
  EXPECT_EQ(Int(stale.status().err_info()->bson(), "currentVersion"), 1);
}

// The child: keyed increments (task "crash", writeSeq i), announcing each
// key on the pipe BEFORE sending it.  Never returns.
[[noreturn]] void KeyedChild(const std::string& path, int fd) {
  auto db = Database::Open(path);
  if (!db.ok()) _exit(3);
  for (int64_t i = 0;; ++i) {
    if (write(fd, &i, sizeof i) != sizeof i) _exit(6);
    std::string cmd = R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}, "upsert": true}], "writeContext": {"taskId": "crash", "writeSeq": )" +
                      std::to_string(i) + "}}";
    Document reply = (*db)->RunCommand(test::Json(cmd).view());
    bson_iter_t it;
    if (!bson_iter_init_find(&it, reply.bson(), "ok") || bson_iter_as_double(&it) != 1.0) _exit(4);
  }
}

TEST(IdempotencyCrashTest, RetriesAfterKill9RunEachKeyExactlyOnce) {
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::TempDir dir;
    test::KilledChild k = test::RunAndKill([&](int fd) { KeyedChild(dir.path(), fd); }, 10, 5 + 17 * round);
    ASSERT_TRUE(k.started);
    ASSERT_TRUE(k.killed) << "child exited with " << k.exit_code;
    const int64_t last_sent = k.last;

    auto db = Database::Open(dir.path());
    ASSERT_OK(db);
    int replayed = 0;
    for (int64_t i = 0; i <= last_sent; ++i) {
      std::string cmd = R"({"update": "k", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}, "upsert": true}], "writeContext": {"taskId": "crash", "writeSeq": )" +
                        std::to_string(i) + "}}";
      Document reply = (*db)->RunCommand(test::Json(cmd).view());
      ASSERT_EQ(Int(reply.bson(), "ok"), 1) << reply.ToJson();
      bson_iter_t it;
      if (bson_iter_init_find(&it, reply.bson(), "replayed")) ++replayed;
    }
    // Every key the child sent is applied exactly once: before the kill
    // (replayed now) or now.
    auto d = (*db)->GetCollection("k").FindOne(test::Json(R"({"_id": "c"})").view());
    ASSERT_OK(d);
    ASSERT_TRUE(d->has_value());
    EXPECT_EQ(Int((**d).bson(), "n"), last_sent + 1);
    EXPECT_GE(replayed, last_sent - 1);  // all but the one or two in flight were done before the kill
  }
}

}  // namespace
}  // namespace gatedb
