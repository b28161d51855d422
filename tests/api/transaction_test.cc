// Snapshot transactions through the C++ API: the classic anomalies, a bank
// under concurrency, limits, the lifecycle, the idempotent commit, and
// atomicity across a kill -9.
#include <unistd.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

constexpr auto Int = test::IntAt;

using test::Json;
using test::StatusIs;

Document IdDoc(const std::string& id) {
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return Document::Adopt(f);
}

Document IncDoc(const char* field, int64_t by) {
  bson_t* u = bson_new();
  bson_t inc;
  BSON_APPEND_DOCUMENT_BEGIN(u, "$inc", &inc);
  BSON_APPEND_INT64(&inc, field, by);
  bson_append_document_end(u, &inc);
  return Document::Adopt(u);
}

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  int64_t Field(const std::string& coll, const std::string& id, const char* field, Transaction* txn = nullptr) {
    FindOptions o;
    o.txn = txn;
    auto d = db_->GetCollection(coll).FindOne(IdDoc(id).view(), o);
    EXPECT_OK(d);
    return d.ok() && d->has_value() ? Int((**d).bson(), field) : -1;
  }
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(TransactionTest, NoDirtyReads) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 1})").view()));
  auto a = db_->StartTransaction();
  auto b = db_->StartTransaction();
  ASSERT_OK(a);
  ASSERT_OK(b);
  UpdateOptions in_a;
  in_a.write.txn = a->get();
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 10).view(), in_a));
  EXPECT_EQ(Field("t", "x", "v", a->get()), 11);  // its own write
  EXPECT_EQ(Field("t", "x", "v"), 1);              // not outside
  EXPECT_EQ(Field("t", "x", "v", b->get()), 1);    // nor in another transaction
  ASSERT_OK((*a)->Commit());
  EXPECT_EQ(Field("t", "x", "v"), 11);
  EXPECT_EQ(Field("t", "x", "v", b->get()), 1);    // b's snapshot predates the commit
}

TEST_F(TransactionTest, RepeatableReadsAndNoReadSkew) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertMany({Json(R"({"_id": "x", "v": 50})"), Json(R"({"_id": "y", "v": 50})")}));
  auto t = db_->StartTransaction();
  ASSERT_OK(t);
  int64_t x = Field("t", "x", "v", t->get());
  // Another writer moves 10 from x to y and commits in between.
  ASSERT_OK(db_->WithTransaction([&](Transaction& other) {
    UpdateOptions o;
    o.write.txn = &other;
    RETURN_IF_ERROR(c.UpdateOne(IdDoc("x").view(), IncDoc("v", -10).view(), o).status());
    return c.UpdateOne(IdDoc("y").view(), IncDoc("v", 10).view(), o).status();
  }));
  EXPECT_EQ(Field("t", "x", "v", t->get()), x);          // repeatable
  EXPECT_EQ(x + Field("t", "y", "v", t->get()), 100);    // no read skew
  CountOptions co;
  co.txn = t->get();
  EXPECT_EQ(*c.CountDocuments(Json(R"({"v": 50})").view(), co), 2);
  EXPECT_EQ(*c.CountDocuments(Json(R"({"v": 50})").view()), 0);
  ASSERT_OK((*t)->Commit());
}

TEST_F(TransactionTest, LostUpdateIsAWriteConflict) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "n", "v": 0})").view()));
  auto a = db_->StartTransaction();
  auto b = db_->StartTransaction();
  int64_t seen_a = Field("t", "n", "v", a->get());
  int64_t seen_b = Field("t", "n", "v", b->get());
  UpdateOptions oa, ob;
  oa.write.txn = a->get();
  ob.write.txn = b->get();
  bson_t* set = BCON_NEW("$set", "{", "v", BCON_INT64(seen_a + 1), "}");
  ASSERT_OK(c.UpdateOne(IdDoc("n").view(), DocumentView(set), oa));
  ASSERT_OK((*a)->Commit());
  bson_destroy(set);
  set = BCON_NEW("$set", "{", "v", BCON_INT64(seen_b + 1), "}");
  auto r = c.UpdateOne(IdDoc("n").view(), DocumentView(set), ob);
  bson_destroy(set);
  EXPECT_THAT(r, StatusIs(ErrorCode::kWriteConflict));
  EXPECT_TRUE(IsTransientTransactionError(r.status()));
  EXPECT_FALSE((*b)->active());  // aborted
  EXPECT_THAT((*b)->Commit(), StatusIs(ErrorCode::kNoSuchTransaction));
  EXPECT_EQ(Field("t", "n", "v"), 1);
  // A plain write that lands after a transaction's snapshot also wins.
  auto t = db_->StartTransaction();
  Field("t", "n", "v", t->get());
  ASSERT_OK(c.UpdateOne(IdDoc("n").view(), IncDoc("v", 1).view()));
  UpdateOptions ot;
  ot.write.txn = t->get();
  EXPECT_THAT(c.UpdateOne(IdDoc("n").view(), IncDoc("v", 1).view(), ot), StatusIs(ErrorCode::kWriteConflict));
  EXPECT_EQ(Field("t", "n", "v"), 2);
}

TEST_F(TransactionTest, AGatedRefusalInsideATransactionIsStillCounted) {
  // Found by gatedb_sim: the refusal aborts the transaction, and its conflict
  // event used to be rolled back with it, so conflictStats missed it.
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "g", "v": 0})").view()));
  ASSERT_OK(c.UpdateOne(IdDoc("g").view(), IncDoc("v", 1).view()));  // now at version 1
  auto t = db_->StartTransaction();
  UpdateOptions o;
  o.write.txn = t->get();
  o.write.basis_version = 0;
  o.write.context.agent_id = "txn-agent";
  EXPECT_THAT(c.UpdateOne(IdDoc("g").view(), IncDoc("v", 1).view(), o), StatusIs(ErrorCode::kVersionConflict));
  (*t)->Abort().PermitUnchecked();
  auto stats = db_->GetConflictStats("test", "t");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->conflicts, 1);
  ASSERT_EQ(stats->agents.size(), 1u);
  EXPECT_EQ(stats->agents[0].first, "txn-agent");
  EXPECT_EQ(Field("t", "g", "v"), 1);  // the transaction wrote nothing
}

TEST_F(TransactionTest, WriteSkewAllowedUnderSnapshotAndPreventedByLockingReads) {
  Collection c = db_->GetCollection("oncall");
  auto reset = [&] {
    ASSERT_OK(c.DeleteMany(Json("{}").view()));
    ASSERT_OK(c.InsertMany({Json(R"({"_id": "alice", "on": true})"), Json(R"({"_id": "bob", "on": true})")}));
  };
  // Each doctor goes off call if someone else is still on call.
  auto go_off = [&](Transaction* t, const char* who, bool lock) -> Status {
    FindOptions fo;
    fo.txn = t;
    fo.lock_documents = lock;
    ASSIGN_OR_RETURN(std::vector<Document> on, c.Find(Json(R"({"on": true})").view(), fo));
    if (on.size() < 2) return Status::OK();
    UpdateOptions uo;
    uo.write.txn = t;
    return c.UpdateOne(IdDoc(who).view(), Json(R"({"$set": {"on": false}})").view(), uo).status();
  };
  reset();
  {
    auto a = db_->StartTransaction();
    auto b = db_->StartTransaction();
    ASSERT_OK(go_off(a->get(), "alice", false));
    ASSERT_OK(go_off(b->get(), "bob", false));
    ASSERT_OK((*a)->Commit());
    ASSERT_OK((*b)->Commit());
    EXPECT_EQ(*c.CountDocuments(Json(R"({"on": true})").view()), 0) << "snapshot isolation allows the skew";
  }
  reset();
  {
    auto a = db_->StartTransaction();
    auto b = db_->StartTransaction();
    ASSERT_OK(go_off(a->get(), "alice", true));
    // b's locking read waits for a's locks, then fails (a holds them).
    Status sb = go_off(b->get(), "bob", true);
    EXPECT_THAT(sb, StatusIs(ErrorCode::kWriteConflict));
    ASSERT_OK((*a)->Commit());
    EXPECT_EQ(*c.CountDocuments(Json(R"({"on": true})").view()), 1) << "the locking read prevents the skew";
  }
}

TEST_F(TransactionTest, BankTotalsNeverChange) {
  Collection accts = db_->GetCollection("bank", "accounts");
  constexpr int kAccounts = 8;
  constexpr int64_t kInitial = 1000;
  for (int i = 0; i < kAccounts; ++i) {
    bson_t* d = BCON_NEW("_id", BCON_INT32(i), "bal", BCON_INT64(kInitial));
    ASSERT_OK(accts.InsertOne(DocumentView(d)));
    bson_destroy(d);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> transfers{0}, reads{0}, bad_reads{0}, failures{0};
  auto transfer = [&](int seed) {
    std::mt19937 rng(seed);
    while (!stop) {
      int from = rng() % kAccounts, to = rng() % kAccounts;
      int64_t amount = 1 + rng() % 50;
      Status s = db_->WithTransaction([&](Transaction& t) -> Status {
        UpdateOptions o;
        o.write.txn = &t;
        bson_t* f = BCON_NEW("_id", BCON_INT32(from));
        bson_t* g = BCON_NEW("_id", BCON_INT32(to));
        Status r = accts.UpdateOne(DocumentView(f), IncDoc("bal", -amount).view(), o).status();
        if (r.ok()) r = accts.UpdateOne(DocumentView(g), IncDoc("bal", amount).view(), o).status();
        bson_destroy(f);
        bson_destroy(g);
        return r;
      });
      if (s.ok()) transfers++; else failures++;
    }
  };
  auto reader = [&] {
    while (!stop) {
      Status s = db_->WithTransaction([&](Transaction& t) -> Status {
        FindOptions fo;
        fo.txn = &t;
        ASSIGN_OR_RETURN(std::vector<Document> all, accts.Find(Json("{}").view(), fo));
        int64_t total = 0;
        for (const Document& d : all) total += Int(d.bson(), "bal");
        if (total != kAccounts * kInitial) bad_reads++;
        reads++;
        return Status::OK();
      });
      if (!s.ok()) failures++;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back(transfer, i + 1);
  threads.emplace_back(reader);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(transfers.load(), 10);
  EXPECT_GT(reads.load(), 5);
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  auto all = accts.Find(Json("{}").view());
  int64_t total = 0;
  for (const Document& d : *all) total += Int(d.bson(), "bal");
  EXPECT_EQ(total, kAccounts * kInitial);
}

TEST_F(TransactionTest, LifecycleErrors) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  {
    auto t = db_->StartTransaction();
    UpdateOptions o;
    o.write.txn = t->get();
    ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o));
    // destroyed uncommitted: aborted, its lock freed
  }
  EXPECT_EQ(Field("t", "x", "v"), 0);
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view()));  // no lock left behind
  auto t = db_->StartTransaction();
  ASSERT_OK((*t)->Abort());
  EXPECT_THAT((*t)->Commit(), StatusIs(ErrorCode::kNoSuchTransaction));
  EXPECT_THAT((*t)->Abort(), StatusIs(ErrorCode::kNoSuchTransaction));
  auto u = db_->StartTransaction();
  ASSERT_OK((*u)->Commit());
  ASSERT_OK((*u)->Commit());  // a retried commit answers OK again
  EXPECT_THAT((*u)->Abort(), StatusIs(ErrorCode::kTransactionCommitted));
  FindOptions fo;
  fo.txn = u->get();
  EXPECT_THAT(c.Find(Json("{}").view(), fo), StatusIs(ErrorCode::kTransactionCommitted));
  FindOptions lock_without_txn;
  lock_without_txn.lock_documents = true;
  EXPECT_THAT(c.Find(Json("{}").view(), lock_without_txn), StatusIs(ErrorCode::kBadValue));
}

TEST_F(TransactionTest, LifetimeLimitAbortsAndFreesLocks) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  TransactionOptions opts;
  opts.lifetime_ms = 100;
  auto t = db_->StartTransaction(opts);
  UpdateOptions o;
  o.write.txn = t->get();
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the reaper runs every 200 ms
  EXPECT_FALSE((*t)->active());
  // Its lock is gone: a plain write goes through at once.
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 5).view()));
  EXPECT_EQ(Field("t", "x", "v"), 5);
  EXPECT_THAT((*t)->Commit(), StatusIs(ErrorCode::kNoSuchTransaction));
}

// A session's transaction (started by a command, as a driver or a late,
// reordered request starts one) that nobody finishes is aborted after
// Options::transaction_lifetime_ms, and its locks go with it.
TEST(SessionTransactionLifetime, AnAbandonedSessionTransactionIsAbortedAndItsLocksFreed) {
  test::TempDir dir;
  Options o;
  o.transaction_lifetime_ms = 300;
  auto db = Database::Open(dir.path(), o);
  ASSERT_OK(db);
  Document p = (*db)->RunCommand(Json(R"({"getParameter": 1, "transactionLifetimeLimitSeconds": 1, "$db": "admin"})").view());
  EXPECT_EQ(test::IntAt(p.bson(), "transactionLifetimeLimitSeconds"), 1) << p.ToJson();
  Collection c = (*db)->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  Document r = (*db)->RunCommand(Json(R"({"update": "t", "updates": [{"q": {"_id": "x"}, "u": {"$inc": {"v": 1}}}],
      "lsid": {"id": 7}, "txnNumber": 1, "startTransaction": true, "autocommit": false, "$db": "test"})").view());
  ASSERT_EQ(test::IntAt(r.bson(), "nModified"), 1) << r.ToJson();
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // the reaper runs every 200 ms
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 5).view()));
  auto d = c.FindOne(IdDoc("x").view());
  ASSERT_OK(d);
  EXPECT_EQ(Int((**d).bson(), "v"), 5) << "the abandoned increment never committed";
  Document commit = (*db)->RunCommand(
      Json(R"({"commitTransaction": 1, "lsid": {"id": 7}, "txnNumber": 1, "autocommit": false, "$db": "admin"})").view());
  EXPECT_EQ(test::IntAt(commit.bson(), "ok"), 0) << commit.ToJson();
  Options bad;
  bad.transaction_lifetime_ms = 0;
  EXPECT_THAT(Database::Open(dir.path() + "/other", bad).status(), StatusIs(ErrorCode::kBadValue));
}

TEST_F(TransactionTest, SizeLimitIsAClearError) {
  Collection c = db_->GetCollection("big");
  TransactionOptions opts;
  opts.max_bytes = 64 * 1024;
  auto t = db_->StartTransaction(opts);
  WriteOptions w;
  w.txn = t->get();
  std::string pad(4000, 'p');
  Status last;
  for (int i = 0; i < 100 && last.ok(); ++i) {
    bson_t* d = BCON_NEW("_id", BCON_INT32(i), "pad", BCON_UTF8(pad.c_str()));
    last = c.InsertOne(DocumentView(d), w).status();
    bson_destroy(d);
  }
  EXPECT_THAT(last, StatusIs(ErrorCode::kTransactionTooLarge));
  EXPECT_FALSE((*t)->active());
  EXPECT_EQ(*c.CountDocuments(Json("{}").view()), 0);
}

TEST_F(TransactionTest, GatesInsideATransactionHoldAtCommit) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  auto t = db_->StartTransaction();
  UpdateOptions o;
  o.write.txn = t->get();
  o.write.basis_version = 0;
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o));
  // Inside, the document is now at version 1 in the transaction's view.
  o.write.basis_version = 0;
  EXPECT_THAT(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o), StatusIs(ErrorCode::kVersionConflict));
  // That refusal aborted the transaction: nothing of it is committed.
  EXPECT_THAT((*t)->Commit(), StatusIs(ErrorCode::kNoSuchTransaction));
  EXPECT_EQ(Field("t", "x", "v"), 0);
  auto u = db_->StartTransaction();
  UpdateOptions ou;
  ou.write.txn = u->get();
  ou.write.basis_version = 0;
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), ou));
  ou.write.basis_version = 1;
  ASSERT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), ou));
  ASSERT_OK((*u)->Commit());
  EXPECT_EQ(Field("t", "x", "v"), 2);
  EXPECT_EQ(Field("t", "x", "version"), 2);
}

TEST_F(TransactionTest, IdempotentCommitAnswersARetriedTransaction) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  WriteContext key;
  key.task_id = "order-42";
  key.write_seq = 1;
  WithTransactionOptions wo;
  wo.commit_context = key;
  auto body = [&](Transaction& t) {
    UpdateOptions o;
    o.write.txn = &t;
    return c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o).status();
  };
  ASSERT_OK(db_->WithTransaction(body, wo));
  // The agent did not see the reply and runs the whole transaction again.
  auto again = db_->StartTransaction();
  ASSERT_OK(body(**again));
  ASSERT_OK((*again)->Commit(key));
  EXPECT_TRUE((*again)->replayed());
  EXPECT_EQ(Field("t", "x", "v"), 1);
  auto stored = db_->IdempotencyStatus("order-42");
  ASSERT_OK(stored);
  EXPECT_EQ(stored->size(), 1u);
}

TEST_F(TransactionTest, WithTransactionRetriesOnlyTransientErrors) {
  Collection c = db_->GetCollection("t");
  ASSERT_OK(c.InsertOne(Json(R"({"_id": "x", "v": 0})").view()));
  int calls = 0;
  Status s = db_->WithTransaction([&](Transaction& t) -> Status {
    ++calls;
    UpdateOptions o;
    o.write.txn = &t;
    RETURN_IF_ERROR(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o).status());
    return Status(ErrorCode::kBadValue, "the agent changed its mind");
  });
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(Field("t", "x", "v"), 0);
  // A conflict on the first run is retried, and the retry commits.
  calls = 0;
  s = db_->WithTransaction([&](Transaction& t) -> Status {
    ++calls;
    FindOptions fo;
    fo.txn = &t;
    RETURN_IF_ERROR(c.Find(IdDoc("x").view(), fo).status());
    if (calls == 1) {
      // Someone else writes after this transaction's snapshot.
      EXPECT_OK(c.UpdateOne(IdDoc("x").view(), IncDoc("v", 100).view()));
    }
    UpdateOptions o;
    o.write.txn = &t;
    return c.UpdateOne(IdDoc("x").view(), IncDoc("v", 1).view(), o).status();
  });
  ASSERT_OK(s);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(Field("t", "x", "v"), 101);
  // The time bound ends a function that always conflicts.
  WithTransactionOptions quick;
  quick.timeout_ms = 50;
  calls = 0;
  s = db_->WithTransaction([&](Transaction&) -> Status {
    ++calls;
    return Status(ErrorCode::kWriteConflict, "always");
  }, quick);
  EXPECT_THAT(s, StatusIs(ErrorCode::kWriteConflict));
  EXPECT_GT(calls, 1);
}

TEST_F(TransactionTest, Issue8FuzzWriterBlockedByAnOpenTransactionGetsWriteConflict) {
  // Found by fuzz_command_json: a plain upsert of a document locked by an
  // open transaction retried its timed-out lock wait 20 times (21 s).  It
  // waits one lock timeout and reports WriteConflict.
  Collection c = db_->GetCollection("t");
  auto t = db_->StartTransaction();
  WriteOptions w;
  w.txn = t->get();
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 4})").view(), w));
  UpdateOptions up;
  up.upsert = true;
  auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(c.UpdateOne(Json(R"({"_id": 4})").view(), Json(R"({"$set": {"a": 1}})").view(), up),
              StatusIs(ErrorCode::kWriteConflict));
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("waited_seconds", std::to_string(waited));
  ASSERT_OK((*t)->Commit());
  ASSERT_OK(c.UpdateOne(Json(R"({"_id": 4})").view(), Json(R"({"$set": {"a": 1}})").view(), up));
}

TEST_F(TransactionTest, JournalEventsOfATransactionShareItsId) {
  auto t = db_->StartTransaction();
  WriteOptions w;
  w.txn = t->get();
  ASSERT_OK(db_->GetCollection("a").InsertOne(Json(R"({"_id": 1})").view(), w));
  ASSERT_OK(db_->GetCollection("b").InsertOne(Json(R"({"_id": 1})").view(), w));
  JournalQuery q;
  q.limit = 0;
  EXPECT_TRUE(db_->ReadJournal(q)->events.empty());  // nothing before commit
  ASSERT_OK((*t)->Commit());
  auto events = db_->ReadJournal(q);
  ASSERT_EQ(events->events.size(), 2u);
  for (const Document& e : events->events) {
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "txn"));
    EXPECT_EQ(std::string(bson_iter_utf8(&it, nullptr)), (*t)->id());
  }
}

// The child commits transfers: accounts.a -= x and ledger insert {_id: i,
// amount: x}, in one transaction each.  Never returns.
[[noreturn]] void TransferChild(const std::string& path, int fd) {
  auto db = Database::Open(path);
  if (!db.ok()) _exit(3);
  Collection accts = (*db)->GetCollection("accounts");
  Collection ledger = (*db)->GetCollection("ledger");
  for (int64_t i = 0;; ++i) {
    Status s = (*db)->WithTransaction([&](Transaction& t) -> Status {
      WriteOptions w;
      w.txn = &t;
      UpdateOptions uo;
      uo.write = w;
      RETURN_IF_ERROR(accts.UpdateOne(IdDoc("a").view(), IncDoc("bal", -(i % 7 + 1)).view(), uo).status());
      bson_t* e = BCON_NEW("_id", BCON_INT64(i), "amount", BCON_INT64(i % 7 + 1));
      Status r = ledger.InsertOne(DocumentView(e), w).status();
      bson_destroy(e);
      return r;
    });
    if (!s.ok()) _exit(4);
    if (write(fd, &i, sizeof i) != sizeof i) _exit(6);
  }
}

TEST(TransactionCrashTest, EveryTransactionWhollyPresentOrAbsent) {
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::TempDir dir;
    {
      auto db = Database::Open(dir.path());
      ASSERT_OK(db);
      ASSERT_OK((*db)->GetCollection("accounts").InsertOne(test::Json(R"({"_id": "a", "bal": 100000})").view()));
    }
    test::KilledChild k = test::RunAndKill([&](int fd) { TransferChild(dir.path(), fd); }, 10, 3 + 23 * round);
    ASSERT_TRUE(k.started);
    ASSERT_TRUE(k.killed);
    const int64_t last = k.last;

    auto db = Database::Open(dir.path());
    ASSERT_OK(db);
    auto entries = (*db)->GetCollection("ledger").Find(test::Json("{}").view());
    ASSERT_OK(entries);
    int64_t spent = 0;
    for (const Document& e : *entries) spent += Int(e.bson(), "amount");
    auto acct = (*db)->GetCollection("accounts").FindOne(test::Json(R"({"_id": "a"})").view());
    ASSERT_OK(acct);
    // Each transfer is wholly there or wholly absent.
    EXPECT_EQ(Int((**acct).bson(), "bal"), 100000 - spent);
    EXPECT_EQ(Int((**acct).bson(), "version"), static_cast<int64_t>(entries->size()));
    EXPECT_GE(static_cast<int64_t>(entries->size()), last + 1);  // acknowledged ones are all there
    // And the journal agrees: two events per transaction, sharing its id.
    JournalQuery q;
    q.limit = 0;
    auto journal = (*db)->ReadJournal(q);
    ASSERT_OK(journal);
    std::map<std::string, int> per_txn;
    for (const Document& e : journal->events) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, e.bson(), "txn")) per_txn[bson_iter_utf8(&it, nullptr)]++;
    }
    EXPECT_EQ(per_txn.size(), entries->size());
    for (const auto& [id, n] : per_txn) EXPECT_EQ(n, 2) << id;
  }
}

}  // namespace
}  // namespace gatedb
