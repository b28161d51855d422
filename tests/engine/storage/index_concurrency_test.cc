// Secondary indexes under concurrency, on a real RocksDB store in a
// temporary directory: racing inserts of one unique key, concurrent updates
// that move unique keys, index writes inside snapshot transactions, and an
// index build racing with writers.  Index results are always checked
// against a forced collection scan (hint {$natural: 1}), and the index's
// whole content against the documents (a hinted scan of the whole index with
// an empty filter returns one document per entry, so a stale or missing
// entry shows up as a duplicate or a missing document).
//
// Suites named *Regression cover bugs these tests found and that are fixed;
// suites named *Bug reproduce bugs still open when they were written.
#include <bson/bson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/storage/db_impl.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using index_test::IdOf;
using index_test::NameHint;
using index_test::NaturalHint;

using test::Json;

const Namespace kNs{"test", "ixc"};

std::unique_ptr<DBImpl> OpenDb(const std::string& path, const Options& opts = Options()) {
  auto db = DBImpl::Open(path, opts);
  EXPECT_OK(db);
  if (!db.ok()) return nullptr;
  return std::move(db).value();
}


// _ids of what Find returns, in the order returned (duplicates kept).
std::vector<int64_t> FindIds(DBImpl* db, const Document& filter, const std::optional<Value>& hint = std::nullopt,
                             WriteScope* scope = nullptr) {
  FindRequest req;
  req.ns = kNs;
  req.filter = filter;
  req.hint = hint;
  req.scope = scope;
  auto r = db->Find(req);
  EXPECT_OK(r) << filter.ToJson();
  std::vector<int64_t> out;
  if (!r.ok()) return out;
  for (const Document& d : r->docs) out.push_back(IdOf(d.bson()));
  return out;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

bool HasDuplicates(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) != v.end();
}

Document Eq(const char* field, int64_t v) {
  bson_t* d = bson_new();
  BSON_APPEND_INT64(d, field, v);
  return Document::Adopt(d);
}

Document SetDoc(const char* field, int64_t v) {
  bson_t* d = bson_new();
  bson_t s;
  BSON_APPEND_DOCUMENT_BEGIN(d, "$set", &s);
  BSON_APPEND_INT64(&s, field, v);
  bson_append_document_end(d, &s);
  return Document::Adopt(d);
}

Status CreateIndex(DBImpl* db, const std::string& spec_json) {
  return db->CreateIndexes(kNs, {Json(spec_json)}).status();
}

bool ListsIndex(DBImpl* db, const std::string& name) {
  auto list = db->ListIndexes(kNs);
  EXPECT_OK(list);
  if (!list.ok()) return false;
  for (const Document& d : *list) {
    if (test::StrAt(d.bson(), "name") == name) return true;
  }
  return false;
}

// Inserts one document; the statement's status (OK when inserted).
Status InsertOne(DBImpl* db, const Document& doc, WriteScope* scope = nullptr) {
  InsertRequest req;
  req.ns = kNs;
  req.documents.push_back(doc);
  req.write.scope = scope;
  auto r = db->Insert(req);
  if (!r.ok()) return r.status();
  if (!r->write_errors.empty()) return r->write_errors[0].status;
  if (r->n != 1) return Status(ErrorCode::kInternalError, "n != 1 without a write error");
  return Status::OK();
}

// One update statement; *n gets the matched count.
Status UpdateOne(DBImpl* db, const Document& q, const Document& u, int64_t* n = nullptr,
                 WriteScope* scope = nullptr) {
  UpdateRequest req;
  req.ns = kNs;
  UpdateStatement st;
  st.q = q;
  st.u = u;
  req.updates.push_back(std::move(st));
  req.write.scope = scope;
  auto r = db->Update(req);
  if (!r.ok()) return r.status();
  if (n) *n = r->n;
  if (!r->write_errors.empty()) return r->write_errors[0].status;
  return Status::OK();
}

Status DeleteOne(DBImpl* db, const Document& q, int64_t* n = nullptr, WriteScope* scope = nullptr) {
  DeleteRequest req;
  req.ns = kNs;
  DeleteStatement st;
  st.q = q;
  st.limit = 1;
  req.deletes.push_back(std::move(st));
  req.write.scope = scope;
  auto r = db->Delete(req);
  if (!r.ok()) return r.status();
  if (n) *n = r->n;
  if (!r->write_errors.empty()) return r->write_errors[0].status;
  return Status::OK();
}

// {field: current value} of every document, by a forced collection scan.
std::map<int64_t, int64_t> ScanField(DBImpl* db, const char* field) {
  FindRequest req;
  req.ns = kNs;
  req.hint = NaturalHint();
  auto r = db->Find(req);
  EXPECT_OK(r);
  std::map<int64_t, int64_t> out;
  if (!r.ok()) return out;
  for (const Document& d : r->docs) out[IdOf(d.bson())] = test::IntAt(d.bson(), field);
  return out;
}

// A reusable barrier for `n` threads.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t gen = gen_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int waiting_ = 0;
  int64_t gen_ = 0;
};

// ---- 1. Racing inserts of one unique key -----------------------------------

TEST(IndexUniqueRace, ExactlyOneInsertPerKeyWinsAndTheOthersGetDuplicateKey) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"k": 1}, "name": "k_1", "unique": true})"));
  // A second, non-unique index: a refused insert must leave no entry there
  // either.
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"t": 1}, "name": "t_1"})"));

  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  // outcome[round][thread]: the statement's code.
  std::vector<std::vector<ErrorCode>> outcome(kRounds, std::vector<ErrorCode>(kThreads, ErrorCode::kOK));
  Barrier barrier(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        barrier.Wait();
        bson_t* d = bson_new();
        BSON_APPEND_INT64(d, "_id", int64_t{r} * 100 + t);
        BSON_APPEND_INT64(d, "k", 1000 + r);
        BSON_APPEND_INT64(d, "t", t);
        outcome[r][t] = InsertOne(db.get(), Document::Adopt(d)).code();
      }
    });
  }
  for (auto& th : threads) th.join();

  std::map<int, int64_t> winner;  // round -> _id
  for (int r = 0; r < kRounds; ++r) {
    int wins = 0;
    for (int t = 0; t < kThreads; ++t) {
      if (outcome[r][t] == ErrorCode::kOK) {
        ++wins;
        winner[r] = int64_t{r} * 100 + t;
      } else {
        EXPECT_EQ(outcome[r][t], ErrorCode::kDuplicateKey)
            << "round " << r << " thread " << t << ": " << ErrorCodeName(outcome[r][t]);
      }
    }
    EXPECT_EQ(wins, 1) << "round " << r;
  }

  // Through the index (the planner's choice and the hint) and by a scan:
  // exactly the winner.
  for (int r = 0; r < kRounds; ++r) {
    std::vector<int64_t> want{winner[r]};
    EXPECT_EQ(FindIds(db.get(), Eq("k", 1000 + r)), want) << "round " << r;
    EXPECT_EQ(FindIds(db.get(), Eq("k", 1000 + r), NameHint("k_1")), want) << "round " << r;
    EXPECT_EQ(FindIds(db.get(), Eq("k", 1000 + r), NaturalHint()), want) << "round " << r;
  }
  // One entry per document in each index, none for a refused insert.
  std::vector<int64_t> all = Sorted(FindIds(db.get(), Json("{}"), NaturalHint()));
  ASSERT_EQ(all.size(), static_cast<size_t>(kRounds));
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("k_1"))), all);
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("t_1"))), all);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(Sorted(FindIds(db.get(), Eq("t", t))), Sorted(FindIds(db.get(), Eq("t", t), NaturalHint())));
  }
  // A key already taken stays taken.
  EXPECT_THAT(InsertOne(db.get(), Json(R"({"_id": -1, "k": {"$numberLong": "1000"}})")),
              test::StatusIs(ErrorCode::kDuplicateKey));
}

// ---- 2. Concurrent updates that move unique keys ----------------------------

TEST(IndexUniqueMove, ConcurrentMovesNeverDuplicateAValueNorLoseAnEntry) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"k": 1}, "name": "k_1", "unique": true})"));

  constexpr int kDocs = 24;
  constexpr int64_t kBase = 100;
  constexpr int kValues = 36;  // values kBase .. kBase + kValues - 1
  for (int i = 0; i < kDocs; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT64(d, "_id", i);
    BSON_APPEND_INT64(d, "k", kBase + i);
    ASSERT_OK(InsertOne(db.get(), Document::Adopt(d)));
  }

  constexpr int kThreads = 4;
  constexpr int kRounds = 25;
  constexpr int kOpsPerRound = 40;
  std::atomic<int64_t> moved{0}, refused_dup{0};
  std::atomic<int> unexpected{0};
  std::mutex err_mu;
  std::string first_error;
  auto note = [&](const Status& s, const char* what) {
    if (s.ok()) return;
    if (s.code() == ErrorCode::kDuplicateKey) {
      ++refused_dup;
      return;
    }
    if (s.code() == ErrorCode::kWriteConflict) return;  // retries ran out: allowed
    ++unexpected;
    std::lock_guard<std::mutex> lock(err_mu);
    if (first_error.empty()) first_error = std::string(what) + ": " + s.ToString();
  };

  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(1000 * round + t);
        for (int op = 0; op < kOpsPerRound; ++op) {
          const int64_t doc = rng() % kDocs;
          const int64_t to = kBase + rng() % kValues;
          int64_t n = 0;
          switch (rng() % 4) {
            case 0:
            case 1: {  // by _id
              Status s = UpdateOne(db.get(), Eq("_id", doc), SetDoc("k", to), &n);
              note(s, "update by _id");
              if (s.ok() && n == 1) ++moved;
              break;
            }
            case 2: {  // by the indexed value: the candidate is found through the index
              const int64_t from = kBase + rng() % kValues;
              Status s = UpdateOne(db.get(), Eq("k", from), SetDoc("k", to), &n);
              note(s, "update by k");
              if (s.ok() && n == 1) ++moved;
              break;
            }
            default: {  // delete, then insert again under a free value
              Status s = DeleteOne(db.get(), Eq("_id", doc), &n);
              note(s, "delete");
              if (!s.ok() || n != 1) break;
              for (int attempt = 0;; ++attempt) {
                bson_t* d = bson_new();
                BSON_APPEND_INT64(d, "_id", doc);
                BSON_APPEND_INT64(d, "k", kBase + (to - kBase + attempt) % kValues);
                Status is = InsertOne(db.get(), Document::Adopt(d));
                if (is.ok()) break;
                // A taken value: try the next one (free ones always exist).
                if (is.code() != ErrorCode::kDuplicateKey || attempt > 10 * kValues) {
                  ++unexpected;
                  std::lock_guard<std::mutex> lock(err_mu);
                  if (first_error.empty()) first_error = "reinsert: " + is.ToString();
                  break;
                }
              }
              break;
            }
          }
        }
      });
    }
    for (auto& th : threads) th.join();

    SCOPED_TRACE("after round " + std::to_string(round));
    std::map<int64_t, int64_t> by_id = ScanField(db.get(), "k");
    ASSERT_EQ(by_id.size(), static_cast<size_t>(kDocs));
    std::map<int64_t, int64_t> holder;  // value -> _id
    for (const auto& [id, k] : by_id) {
      auto [it, fresh] = holder.emplace(k, id);
      ASSERT_TRUE(fresh) << "documents " << it->second << " and " << id << " both hold k=" << k;
    }
    // Every document is found by its current value, through the index.
    for (const auto& [id, k] : by_id) {
      ASSERT_EQ(FindIds(db.get(), Eq("k", k)), std::vector<int64_t>{id}) << "k=" << k;
    }
    // A free value finds nothing; and it can be taken (no stale entry holds it).
    for (int64_t v = kBase; v < kBase + kValues; ++v) {
      if (holder.count(v)) continue;
      ASSERT_TRUE(FindIds(db.get(), Eq("k", v), NameHint("k_1")).empty()) << "k=" << v;
    }
    // The index holds exactly one entry per document.
    std::vector<int64_t> through_index = FindIds(db.get(), Json("{}"), NameHint("k_1"));
    ASSERT_FALSE(HasDuplicates(through_index));
    ASSERT_EQ(through_index.size(), static_cast<size_t>(kDocs));
  }
  EXPECT_EQ(unexpected.load(), 0) << first_error;
  EXPECT_GT(moved.load(), 0);
  EXPECT_GT(refused_dup.load(), 0);
  // Every free value can still be taken: nothing stale blocks it.
  std::map<int64_t, int64_t> by_id = ScanField(db.get(), "k");
  std::set<int64_t> held;
  for (const auto& [id, k] : by_id) held.insert(k);
  int64_t next_id = 1000;
  for (int64_t v = kBase; v < kBase + kValues; ++v) {
    if (held.count(v)) continue;
    bson_t* d = bson_new();
    BSON_APPEND_INT64(d, "_id", next_id++);
    BSON_APPEND_INT64(d, "k", v);
    EXPECT_OK(InsertOne(db.get(), Document::Adopt(d))) << "k=" << v;
  }
}

// ---- 3. Index writes in snapshot transactions -------------------------------

class IndexTxnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options opts;
    opts.lock_timeout_ms = 200;  // an outside writer blocked by a transaction gives up soon
    db_ = OpenDb(dir_.path(), opts);
    ASSERT_NE(db_, nullptr);
    ASSERT_OK(CreateIndex(db_.get(), R"({"key": {"u": 1}, "name": "u_1", "unique": true})"));
    ASSERT_OK(CreateIndex(db_.get(), R"({"key": {"k": 1}, "name": "k_1"})"));
    ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 1, "u": 10, "k": 100})")));
  }
  ScopePtr Begin(const std::string& id) {
    TransactionLimits limits;
    limits.lock_timeout_ms = 200;
    return db_->BeginTransaction(id, limits, false);
  }
  Status Commit(WriteScope* s) {
    bool replayed = false;
    return db_->CommitTransaction(s, nullptr, nullptr, &replayed);
  }
  // The index's whole content agrees with the documents (outside any scope).
  void CheckIndexesWhole() {
    std::vector<int64_t> all = Sorted(FindIds(db_.get(), Json("{}"), NaturalHint()));
    EXPECT_EQ(Sorted(FindIds(db_.get(), Json("{}"), NameHint("u_1"))), all);
    EXPECT_EQ(Sorted(FindIds(db_.get(), Json("{}"), NameHint("k_1"))), all);
  }

  test::TempDir dir_;
  std::unique_ptr<DBImpl> db_;
};

TEST_F(IndexTxnTest, OwnIndexWritesAreVisibleInsideOnlyUntilCommit) {
  ScopePtr s = Begin("t1");
  ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 2, "u": 20, "k": 200})"), s.get()));
  int64_t n = 0;
  ASSERT_OK(UpdateOne(db_.get(), Json(R"({"_id": 1})"), Json(R"({"$set": {"u": 11, "k": 101}})"), &n, s.get()));
  ASSERT_EQ(n, 1);

  const std::vector<int64_t> none;
  const std::vector<int64_t> one{1}, two{2};
  // Inside: its own writes, through the planner's index, the hinted index
  // and a scan alike.
  for (const std::optional<Value>& h : {std::optional<Value>(), std::optional<Value>(NameHint("u_1"))}) {
    EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 20})"), h, s.get()), two);
    EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 11})"), h, s.get()), one);
    EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})"), h, s.get()), none);
  }
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 200})"), std::nullopt, s.get()), two);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 100})"), NameHint("k_1"), s.get()), none);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": {"$gte": 100}})"), NameHint("k_1"), s.get()),
            (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 20})"), NaturalHint(), s.get()), two);
  // Whole-index scans inside the scope: one entry per document, old ones gone.
  EXPECT_EQ(Sorted(FindIds(db_.get(), Json("{}"), NameHint("u_1"), s.get())), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Sorted(FindIds(db_.get(), Json("{}"), NameHint("k_1"), s.get())), (std::vector<int64_t>{1, 2}));

  // Outside: nothing of it yet.
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 20})")), none);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 11})")), none);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})")), one);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 200})")), none);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 100})")), one);
  CheckIndexesWhole();

  ASSERT_OK(Commit(s.get()));
  s.reset();
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 20})")), two);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 11})")), one);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})")), none);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 101})")), one);
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 100})")), none);
  CheckIndexesWhole();
  // The committed keys are taken; the one given up is free.
  EXPECT_THAT(InsertOne(db_.get(), Json(R"({"_id": 3, "u": 20})")), test::StatusIs(ErrorCode::kDuplicateKey));
  EXPECT_THAT(InsertOne(db_.get(), Json(R"({"_id": 3, "u": 11})")), test::StatusIs(ErrorCode::kDuplicateKey));
  EXPECT_OK(InsertOne(db_.get(), Json(R"({"_id": 3, "u": 10})")));
}

// Index scans fetch documents by stepping an iterator when the keys ascend
// (engine/storage/db_impl_plan.cc, DocFetcher) and read whole unique keys by
// point reads.  Both must see exactly what the scope sees: its own inserts,
// updates and deletes inside, the committed state outside.
TEST_F(IndexTxnTest, RangeAndPointScansSeeTheScopesOwnDocumentWrites) {
  for (int64_t i = 10; i < 60; ++i) {  // k and u ascend with _id
    bson_t* d = bson_new();
    BSON_APPEND_INT64(d, "_id", i);
    BSON_APPEND_INT64(d, "u", 1000 + i);
    BSON_APPEND_INT64(d, "k", 2000 + i);
    ASSERT_OK(InsertOne(db_.get(), Document::Adopt(d)));
  }
  auto range = [](int64_t lo, int64_t hi) {
    std::vector<int64_t> v;
    for (int64_t i = lo; i < hi; ++i) v.push_back(i);
    return v;
  };
  const Document k_range = Json(R"({"k": {"$gte": 2010, "$lt": 2060}})");
  EXPECT_EQ(FindIds(db_.get(), k_range), range(10, 60));

  ScopePtr s = Begin("t3");
  int64_t n = 0;
  // Delete every fifth document, move one out of the range, add one in it.
  for (int64_t i = 10; i < 60; i += 5) {
    ASSERT_OK(DeleteOne(db_.get(), Eq("_id", i), &n, s.get()));
    ASSERT_EQ(n, 1);
  }
  ASSERT_OK(UpdateOne(db_.get(), Json(R"({"_id": 33})"), Json(R"({"$set": {"k": 9999}})"), &n, s.get()));
  ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 70, "u": 1070, "k": 2045})"), s.get()));
  std::vector<int64_t> inside;
  for (int64_t i : range(10, 60)) {
    if (i % 5 != 0 && i != 33) inside.push_back(i);
  }
  inside.push_back(70);
  EXPECT_EQ(Sorted(FindIds(db_.get(), k_range, std::nullopt, s.get())), inside);
  EXPECT_EQ(Sorted(FindIds(db_.get(), k_range, NameHint("k_1"), s.get())), inside);
  // Whole unique keys, forward and (through a descending sort) backward.
  const Document u_in = Json(R"({"u": {"$in": [1015, 1016, 1033, 1070, 1071]}})");
  EXPECT_EQ(Sorted(FindIds(db_.get(), u_in, std::nullopt, s.get())), (std::vector<int64_t>{16, 33, 70}));
  EXPECT_EQ(Sorted(FindIds(db_.get(), u_in)), (std::vector<int64_t>{15, 16, 33}));
  // Outside the scope: the committed documents only.
  EXPECT_EQ(FindIds(db_.get(), k_range), range(10, 60));
  ASSERT_OK(Commit(s.get()));
  s.reset();
  EXPECT_EQ(Sorted(FindIds(db_.get(), k_range)), inside);
  CheckIndexesWhole();
}

TEST_F(IndexTxnTest, AbortedTransactionLeavesNoIndexEntries) {
  ScopePtr s = Begin("t2");
  ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 5, "u": 50, "k": 500})"), s.get()));
  ASSERT_OK(UpdateOne(db_.get(), Json(R"({"_id": 1})"), Json(R"({"$set": {"u": 51}})"), nullptr, s.get()));
  // While it is open, an outside writer cannot take its keys (the key is
  // locked): whatever the error, it must not be inserted.
  Status blocked = InsertOne(db_.get(), Json(R"({"_id": 6, "u": 50})"));
  EXPECT_FALSE(blocked.ok()) << "a unique key written by an open transaction was given to another document";
  s.reset();  // rolls back

  EXPECT_TRUE(FindIds(db_.get(), Json(R"({"_id": 5})")).empty());
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})")), std::vector<int64_t>{1});
  EXPECT_TRUE(FindIds(db_.get(), Json(R"({"u": 51})")).empty());
  EXPECT_TRUE(FindIds(db_.get(), Json(R"({"k": 500})"), NameHint("k_1")).empty());
  CheckIndexesWhole();
  // The keys it wrote are free.
  EXPECT_OK(InsertOne(db_.get(), Json(R"({"_id": 6, "u": 50, "k": 500})")));
  EXPECT_OK(InsertOne(db_.get(), Json(R"({"_id": 7, "u": 51})")));
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 50})")), std::vector<int64_t>{6});
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 500})")), std::vector<int64_t>{6});
  CheckIndexesWhole();
}

TEST_F(IndexTxnTest, CommittedTransactionKeyRefusesALaterInsert) {
  ScopePtr s = Begin("t3");
  ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 8, "u": 80})"), s.get()));
  EXPECT_FALSE(InsertOne(db_.get(), Json(R"({"_id": 9, "u": 80})")).ok());
  ASSERT_OK(Commit(s.get()));
  s.reset();
  EXPECT_THAT(InsertOne(db_.get(), Json(R"({"_id": 9, "u": 80})")), test::StatusIs(ErrorCode::kDuplicateKey));
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 80})"), NaturalHint()), std::vector<int64_t>{8});
  CheckIndexesWhole();
}

TEST_F(IndexTxnTest, SnapshotDoesNotSeeIndexEntriesCommittedAfterIt) {
  ScopePtr s = Begin("t4");
  // Pin the snapshot with a read.
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})"), std::nullopt, s.get()), std::vector<int64_t>{1});
  ASSERT_OK(InsertOne(db_.get(), Json(R"({"_id": 12, "u": 120, "k": 100})")));
  ASSERT_OK(UpdateOne(db_.get(), Json(R"({"_id": 1})"), Json(R"({"$set": {"u": 13}})")));
  EXPECT_TRUE(FindIds(db_.get(), Json(R"({"u": 120})"), std::nullopt, s.get()).empty());
  EXPECT_TRUE(FindIds(db_.get(), Json(R"({"u": 13})"), std::nullopt, s.get()).empty());
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"u": 10})"), std::nullopt, s.get()), std::vector<int64_t>{1});
  EXPECT_EQ(FindIds(db_.get(), Json(R"({"k": 100})"), NameHint("k_1"), s.get()), std::vector<int64_t>{1});
  EXPECT_EQ(Sorted(FindIds(db_.get(), Json(R"({"k": 100})"))), (std::vector<int64_t>{1, 12}));
}

// Regression (found by this file at f2c162a, fixed in c4ac06a): the first
// multikey write of an index published multikey: true to the in-memory
// catalog before its transaction committed, and staged the durable catalog
// change in that transaction.  When the transaction was rolled back, the
// on-disk definition kept multikey: false while memory said true, so no
// later array write recorded it again.  After a reopen the index was taken
// as single-valued: bounds on one path were intersected and the results not
// deduplicated, so a range query returned a document once per key, and
// {a: {$gt: 3, $lt: 4}} missed [3, 4].
TEST(IndexTxnRegression, AbortedFirstMultikeyWriteKeepsTheMultikeyFlagAfterReopen) {
  test::TempDir dir;
  {
    std::unique_ptr<DBImpl> db = OpenDb(dir.path());
    ASSERT_NE(db, nullptr);
    ASSERT_OK(CreateIndex(db.get(), R"({"key": {"a": 1}, "name": "a_1"})"));
    ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 1, "a": 5})")));
    {
      ScopePtr s = db->BeginTransaction("mk", TransactionLimits(), false);
      ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 2, "a": [1, 2]})"), s.get()));
    }  // rolled back
    ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 3, "a": [3, 4]})")));
    // Before the reopen the in-memory flag is right.
    EXPECT_EQ(Sorted(FindIds(db.get(), Json(R"({"a": {"$gte": 0}})"))), (std::vector<int64_t>{1, 3}));
  }
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(ListsIndex(db.get(), "a_1"));
  EXPECT_EQ(Sorted(FindIds(db.get(), Json(R"({"a": {"$gte": 0}})"), NaturalHint())), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Sorted(FindIds(db.get(), Json(R"({"a": {"$gte": 0}})"))), (std::vector<int64_t>{1, 3}))
      << "the index lost its multikey flag: a document is returned once per array element";
  EXPECT_EQ(FindIds(db.get(), Json(R"({"a": {"$gt": 3, "$lt": 4}})")), std::vector<int64_t>{3})
      << "the index lost its multikey flag: its bounds were intersected";
}

// ---- 4. Index build racing with writers -------------------------------------

TEST(IndexBuildRace, BuildConcurrentWithWritersIndexesEveryCurrentValue) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  constexpr int kDocs = 20000;
  constexpr int kKValues = 100;
  {
    InsertRequest req;
    req.ns = kNs;
    for (int i = 0; i < kDocs; ++i) {
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", i);
      BSON_APPEND_INT64(d, "k", i % kKValues);
      BSON_APPEND_INT64(d, "u", i);  // unique
      req.documents.push_back(Document::Adopt(d));
    }
    auto r = db->Insert(req);
    ASSERT_OK(r);
    ASSERT_EQ(r->n, kDocs);
  }

  std::atomic<bool> building{false}, stop{false};
  // Where the build is (documents done in the index being built): most
  // writes go to the documents its next chunk reads, to race with it there.
  std::atomic<int64_t> build_pos{0};
  std::atomic<int64_t> writes_during_build{0};
  std::atomic<int> unexpected{0};
  std::mutex err_mu;
  std::string first_error;
  constexpr int kWriters = 2;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(77 + w);
      int64_t next_u = 1000000 * (w + 1);
      int64_t next_id = 1000000 * (w + 1);
      while (!stop.load()) {
        const int64_t doc =
            rng() % 4 != 0 ? (build_pos.load() + static_cast<int64_t>(rng() % 1000)) % kDocs : rng() % kDocs;
        Status s;
        int64_t n = 0;
        switch (rng() % 8) {
          case 0:  // a new document
            {
              bson_t* d = bson_new();
              BSON_APPEND_INT64(d, "_id", next_id++);
              BSON_APPEND_INT64(d, "k", rng() % kKValues);
              BSON_APPEND_INT64(d, "u", next_u++);
              s = InsertOne(db.get(), Document::Adopt(d));
            }
            break;
          case 1:
            s = DeleteOne(db.get(), Eq("_id", doc), &n);
            break;
          case 2: {  // k and u together
            bson_t* u = bson_new();
            bson_t set;
            BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
            BSON_APPEND_INT64(&set, "k", rng() % kKValues);
            BSON_APPEND_INT64(&set, "u", next_u++);
            bson_append_document_end(u, &set);
            s = UpdateOne(db.get(), Eq("_id", doc), Document::Adopt(u), &n);
            break;
          }
          default:
            s = UpdateOne(db.get(), Eq("_id", doc), SetDoc("k", rng() % kKValues), &n);
            break;
        }
        if (!s.ok() && s.code() != ErrorCode::kWriteConflict) {
          ++unexpected;
          std::lock_guard<std::mutex> lock(err_mu);
          if (first_error.empty()) first_error = s.ToString();
        }
        if (s.ok() && building.load()) ++writes_during_build;
      }
    });
  }
  // Let the writers get going, then build both indexes while they write.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  building = true;
  auto created = db->CreateIndexes(kNs, {Json(R"({"key": {"k": 1}, "name": "k_1"})"),
                                         Json(R"({"key": {"u": 1}, "name": "u_1", "unique": true})"),
                                         Json(R"({"key": {"k": 1, "u": -1}, "name": "k_1_u_-1"})")},
                                   [&](uint64_t done) { build_pos = static_cast<int64_t>(done); });
  building = false;
  // A little more writing against the ready indexes.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& th : writers) th.join();
  ASSERT_OK(created);
  EXPECT_EQ(created->num_indexes_after, 4);
  EXPECT_EQ(unexpected.load(), 0) << first_error;
  EXPECT_GT(writes_during_build.load(), 0) << "no write overlapped the build";

  std::map<int64_t, int64_t> k_of = ScanField(db.get(), "k");
  std::map<int64_t, int64_t> u_of = ScanField(db.get(), "u");
  std::map<int64_t, std::vector<int64_t>> by_k;
  for (const auto& [id, k] : k_of) by_k[k].push_back(id);
  // Every current value of k finds exactly its documents through the index
  // (so no document is missing there, and none is found by an old value).
  for (int64_t k = 0; k < kKValues; ++k) {
    EXPECT_EQ(Sorted(FindIds(db.get(), Eq("k", k))), by_k[k]) << "k=" << k;
  }
  // Every document through the unique index by its current u.
  for (const auto& [id, u] : u_of) {
    std::vector<int64_t> got = FindIds(db.get(), Eq("u", u));
    if (got != std::vector<int64_t>{id}) {
      ADD_FAILURE() << "u=" << u << " of document " << id << " found " << got.size() << " documents";
      break;
    }
  }
  // The old values of u (the initial ones, where a writer changed them) find nothing.
  int64_t changed = 0;
  for (const auto& [id, u] : u_of) {
    if (id < kDocs && u != id) {
      ++changed;
      EXPECT_TRUE(FindIds(db.get(), Eq("u", id), NameHint("u_1")).empty()) << "old u=" << id;
    }
  }
  EXPECT_GT(changed, 0);
  // A range through each index counts what a collection scan counts.
  const Document range = Json(R"({"k": {"$gte": 10, "$lt": 60}})");
  std::vector<int64_t> ix = FindIds(db.get(), range, NameHint("k_1"));
  EXPECT_FALSE(HasDuplicates(ix));
  EXPECT_EQ(Sorted(ix), Sorted(FindIds(db.get(), range, NaturalHint())));
  EXPECT_EQ(Sorted(FindIds(db.get(), range)), Sorted(ix));
  const Document urange = Json(R"({"u": {"$gte": 5000, "$lt": 1500000}})");
  EXPECT_EQ(Sorted(FindIds(db.get(), urange, NameHint("u_1"))), Sorted(FindIds(db.get(), urange, NaturalHint())));
  // One entry per document in each index.
  std::vector<int64_t> all = Sorted(FindIds(db.get(), Json("{}"), NaturalHint()));
  std::vector<int64_t> whole_k = FindIds(db.get(), Json("{}"), NameHint("k_1"));
  std::vector<int64_t> whole_u = FindIds(db.get(), Json("{}"), NameHint("u_1"));
  std::vector<int64_t> whole_ku = FindIds(db.get(), Json("{}"), NameHint("k_1_u_-1"));
  EXPECT_EQ(whole_k.size(), all.size());
  EXPECT_EQ(whole_u.size(), all.size());
  EXPECT_EQ(whole_ku.size(), all.size());
  EXPECT_EQ(Sorted(whole_k), all);
  EXPECT_EQ(Sorted(whole_u), all);
  EXPECT_EQ(Sorted(whole_ku), all);
  // The compound index by its leading field and by both.
  for (int64_t k = 0; k < kKValues; k += 7) {
    EXPECT_EQ(Sorted(FindIds(db.get(), Eq("k", k), NameHint("k_1_u_-1"))), by_k[k]) << "k=" << k;
  }
  for (const auto& [id, u] : u_of) {
    if (id % 50 != 0) continue;
    bson_t* q = bson_new();
    BSON_APPEND_INT64(q, "k", k_of[id]);
    BSON_APPEND_INT64(q, "u", u);
    EXPECT_EQ(FindIds(db.get(), Document::Adopt(q), NameHint("k_1_u_-1")), std::vector<int64_t>{id});
  }
}

// Regression (found by this file at f2c162a, fixed in c4ac06a): a build
// registers the index while "no write is in flight" (the collection's drop
// lock), but a snapshot transaction's writes are in flight across calls: a
// document it inserted before the registration was neither indexed by the
// transaction (the index did not exist) nor by the build (it reads committed
// documents only), and the commit landed it without an entry.  Queries
// through the index missed it; a unique index let a second document take
// its value.
TEST(IndexBuildRegression, DocumentOfATransactionOpenAcrossTheBuildIsIndexed) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 1, "k": 1, "u": 1})")));
  ScopePtr s = db->BeginTransaction("across", TransactionLimits(), false);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 2, "k": 7, "u": 7})"), s.get()));
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"k": 1}, "name": "k_1"})"));
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"u": 1}, "name": "u_1", "unique": true})"));
  // While the transaction is open, another writer takes u: 7.  Either this
  // or the commit below must be refused.
  Status outside = InsertOne(db.get(), Json(R"({"_id": 3, "u": 7})"));
  bool replayed = false;
  Status commit = db->CommitTransaction(s.get(), nullptr, nullptr, &replayed);
  s.reset();
  EXPECT_FALSE(outside.ok() && commit.ok()) << "two documents hold u: 7 under a unique index";
  if (commit.ok()) {
    EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})"), NaturalHint()), std::vector<int64_t>{2});
    EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})")), std::vector<int64_t>{2})
        << "the transaction's document is missing from the index built while it was open";
  }
  std::vector<int64_t> all = Sorted(FindIds(db.get(), Json("{}"), NaturalHint()));
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("k_1"))), all);
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("u_1"))), all);
}

// A transaction reads its own writes, also through an index built while it
// was open: a document it inserted before the index existed is found by an
// equality query through the index, inside the transaction.
TEST(IndexBuildCatchUp, TransactionFindsItsEarlierDocumentThroughAnIndexBuiltWhileItIsOpen) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 1, "k": 1})")));
  ScopePtr s = db->BeginTransaction("own", TransactionLimits(), false);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 2, "k": 7})"), s.get()));
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"k": 1}, "name": "k_1"})"));
  EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})"), NaturalHint(), s.get()), std::vector<int64_t>{2});
  EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})"), std::nullopt, s.get()), std::vector<int64_t>{2})
      << "inside the transaction, a query through the new index misses the transaction's own document";
  bool replayed = false;
  ASSERT_OK(db->CommitTransaction(s.get(), nullptr, nullptr, &replayed));
  s.reset();
  EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})")), std::vector<int64_t>{2});
}

// A document a transaction inserted before an index existed, and then
// updated (after the index was built) in fields the index does not watch:
// the update skips the index (it touches none of its fields) and the
// commit's catch-up (CatchUpIndexes) skips the document (its last write saw
// the index), so nothing gives the document its entries: queries through
// the index miss it, and a unique index lets another document take its value.
TEST(IndexBuildCatchUp, TransactionDocumentUpdatedAfterTheBuildInOtherFieldsIsIndexedAtCommit) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 1, "k": 1, "u": 1, "other": 0})")));
  ScopePtr s = db->BeginTransaction("late", TransactionLimits(), false);
  ASSERT_OK(InsertOne(db.get(), Json(R"({"_id": 2, "k": 7, "u": 7, "other": 0})"), s.get()));
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"k": 1}, "name": "k_1"})"));
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"u": 1}, "name": "u_1", "unique": true})"));
  int64_t n = 0;
  ASSERT_OK(UpdateOne(db.get(), Json(R"({"_id": 2})"), Json(R"({"$set": {"other": 1}})"), &n, s.get()));
  ASSERT_EQ(n, 1);
  bool replayed = false;
  ASSERT_OK(db->CommitTransaction(s.get(), nullptr, nullptr, &replayed));
  s.reset();
  EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})"), NaturalHint()), std::vector<int64_t>{2});
  EXPECT_EQ(FindIds(db.get(), Json(R"({"k": 7})")), std::vector<int64_t>{2})
      << "the transaction's document is missing from k_1";
  EXPECT_EQ(FindIds(db.get(), Json(R"({"u": 7})")), std::vector<int64_t>{2})
      << "the transaction's document is missing from u_1";
  // Its unique value is taken.
  EXPECT_THAT(InsertOne(db.get(), Json(R"({"_id": 3, "u": 7})")), test::StatusIs(ErrorCode::kDuplicateKey));
  std::vector<int64_t> all = Sorted(FindIds(db.get(), Json("{}"), NaturalHint()));
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("k_1"))), all);
  EXPECT_EQ(Sorted(FindIds(db.get(), Json("{}"), NameHint("u_1"))), all);
}

// Regression (found by this file at f2c162a, fixed in c4ac06a): a writer's
// first multikey write during a build staged the index's catalog record
// (ready: false) in its own transaction and locked that key; with the
// transaction still open at the end of the build, the flip to ready (a plain
// write of the same key) timed out on that lock (WriteConflict) and
// createIndexes failed, but the not-ready index stayed in the in-memory
// catalog: a second createIndexes then reported "all indexes already exist"
// while the index was neither listed nor usable.
TEST(IndexBuildRegression, FailedFlipToReadyDoesNotLeaveAZombieIndex) {
  test::TempDir dir;
  Options opts;
  opts.lock_timeout_ms = 100;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path(), opts);
  ASSERT_NE(db, nullptr);
  {
    InsertRequest req;
    req.ns = kNs;
    for (int i = 0; i < 1500; ++i) {
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", i);
      BSON_APPEND_INT64(d, "a", i);
      req.documents.push_back(Document::Adopt(d));
    }
    ASSERT_OK(db->Insert(req));
  }
  ScopePtr s;
  Status in_txn;
  auto created = db->CreateIndexes(kNs, {Json(R"({"key": {"a": 1}, "name": "a_1"})")}, [&](uint64_t) {
    if (s) return;
    // The index is registered now: a transaction begun here writes its first array.
    s = db->BeginTransaction("mk", TransactionLimits(), false);
    in_txn = InsertOne(db.get(), Json(R"({"_id": 100000, "a": [1, 2]})"), s.get());
  });
  ASSERT_TRUE(s != nullptr);
  ASSERT_OK(in_txn);
  bool replayed = false;
  Status commit = db->CommitTransaction(s.get(), nullptr, nullptr, &replayed);
  s.reset();
  if (created.ok()) {
    // The index is there and, with the array document committed, multikey.
    EXPECT_TRUE(ListsIndex(db.get(), "a_1"));
  } else {
    SCOPED_TRACE("createIndexes failed with " + created.status().ToString());
    // The failed createIndexes must leave nothing behind: asked again, it
    // builds the index.
    auto again = db->CreateIndexes(kNs, {Json(R"({"key": {"a": 1}, "name": "a_1"})")});
    ASSERT_OK(again);
    EXPECT_FALSE(again->all_existed) << "the failed build left a not-ready index that blocks a new one";
    EXPECT_TRUE(ListsIndex(db.get(), "a_1")) << "createIndexes succeeded but the index is not listed";
  }
  if (ListsIndex(db.get(), "a_1")) {
    const Document q = Json(R"({"a": {"$gte": 0, "$lte": 2000}})");
    EXPECT_EQ(Sorted(FindIds(db.get(), q, NameHint("a_1"))), Sorted(FindIds(db.get(), q, NaturalHint())));
  }
}

// Index creation and removal racing with writers whose documents make the
// index multikey: a writer records the first multikey document while it
// holds the collection's drop lock shared, and creation takes that lock
// exclusively; the two must not wait on each other (a deadlock here hangs
// the test), and every round ends with an index that agrees with a scan.
TEST(IndexDdlRace, CreateAndDropRacingFirstMultikeyWritesNeitherDeadlockNorDiverge) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path());
  ASSERT_NE(db, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> next_id{0};
  std::thread writer([&] {
    // Bounded: every round builds over all of them (and TSan is slow).
    while (!stop.load() && next_id.load() < 3000) {
      int id = next_id++;
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", id);
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(d, "m", &arr);
      BSON_APPEND_INT64(&arr, "0", id % 7);
      BSON_APPEND_INT64(&arr, "1", id % 7 + 100);
      bson_append_array_end(d, &arr);
      Status s = InsertOne(db.get(), Document::Adopt(d));
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
  });
  for (int round = 0; round < 12; ++round) {
    ASSERT_OK(CreateIndex(db.get(), R"({"key": {"m": 1}, "name": "m_1"})"));
    ASSERT_OK(db->DropIndexes(kNs, {"m_1"}, nullptr));
  }
  stop = true;
  writer.join();
  EXPECT_GT(next_id.load(), 12);
  ASSERT_OK(CreateIndex(db.get(), R"({"key": {"m": 1}, "name": "m_1"})"));
  const Document q = Json(R"({"m": {"$gte": 3, "$lte": 103}})");
  EXPECT_EQ(Sorted(FindIds(db.get(), q, NameHint("m_1"))), Sorted(FindIds(db.get(), q, NaturalHint())));
}

}  // namespace
}  // namespace gatedb
