// TxnPool (engine/storage/txn_pool.h): finished RocksDB transactions are
// reinitialized for the next write, with nothing of their last use left
// over, against a real TransactionDB.
#include "engine/storage/txn_pool.h"

#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/utilities/write_batch_with_index.h>
#include <rocksdb/write_batch.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

class TxnPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rocksdb::Options opts;
    opts.create_if_missing = true;
    rocksdb::TransactionDBOptions topts;
    topts.transaction_lock_timeout = 50;
    rocksdb::TransactionDB* raw = nullptr;
    ASSERT_TRUE(rocksdb::TransactionDB::Open(opts, topts, dir_.path(), &raw).ok());
    db_.reset(raw);
  }
  void TearDown() override {
    pool_.reset();  // its transactions before their database
    db_.reset();
  }
  TxnPool& Pool(size_t capacity = 4) {
    pool_ = std::make_unique<TxnPool>(db_.get(), capacity);
    return *pool_;
  }

  test::TempDir dir_;
  std::unique_ptr<rocksdb::TransactionDB> db_;
  std::unique_ptr<TxnPool> pool_;
};

TEST_F(TxnPoolTest, AFinishedTransactionIsReusedWithNothingLeftOver) {
  TxnPool& pool = Pool();
  rocksdb::Transaction* first = pool.Begin(rocksdb::WriteOptions());
  std::string value;
  ASSERT_TRUE(first->GetForUpdate(rocksdb::ReadOptions(), "locked", &value).IsNotFound());
  first->SetSnapshot();
  first->DisableIndexing();
  ASSERT_TRUE(first->Put("written", "1").ok());
  ASSERT_TRUE(first->Rollback().ok());
  pool.Recycle(first);
  EXPECT_EQ(1u, pool.kept());

  rocksdb::Transaction* again = pool.Begin(rocksdb::WriteOptions());
  EXPECT_EQ(first, again);  // reinitialized, not allocated
  EXPECT_EQ(0u, pool.kept());
  EXPECT_EQ(nullptr, again->GetSnapshot());
  EXPECT_EQ(0, again->GetWriteBatch()->GetWriteBatch()->Count());
  EXPECT_EQ(0u, again->GetNumKeys());
  // Indexing is back on: the transaction reads its own write.
  ASSERT_TRUE(again->Put("own", "2").ok());
  ASSERT_TRUE(again->Get(rocksdb::ReadOptions(), "own", &value).ok());
  EXPECT_EQ("2", value);
  // The rolled-back write is gone, and the key it locked is free.
  EXPECT_TRUE(db_->Get(rocksdb::ReadOptions(), "written", &value).IsNotFound());
  rocksdb::Transaction* other = pool.Begin(rocksdb::WriteOptions());
  EXPECT_NE(again, other);
  EXPECT_TRUE(other->GetForUpdate(rocksdb::ReadOptions(), "locked", &value).IsNotFound());
  ASSERT_TRUE(other->Commit().ok());
  ASSERT_TRUE(again->Commit().ok());
  EXPECT_TRUE(db_->Get(rocksdb::ReadOptions(), "own", &value).ok());
  pool.Recycle(again);
  pool.Recycle(other);
  EXPECT_EQ(2u, pool.kept());
}

TEST_F(TxnPoolTest, KeepsNoMoreThanItsCapacityNorABigBuffer) {
  TxnPool& pool = Pool(2);
  std::vector<rocksdb::Transaction*> txns;
  for (int i = 0; i < 3; ++i) txns.push_back(pool.Begin(rocksdb::WriteOptions()));
  for (rocksdb::Transaction* t : txns) {
    ASSERT_TRUE(t->Commit().ok());
    pool.Recycle(t);  // the third is deleted (ASan would see a leak otherwise)
  }
  EXPECT_EQ(2u, pool.kept());

  rocksdb::Transaction* big = pool.Begin(rocksdb::WriteOptions());
  ASSERT_TRUE(big->Put("big", std::string(TxnPool::kMaxKeptBatchBytes + 1, 'x')).ok());
  ASSERT_TRUE(big->Commit().ok());
  pool.Recycle(big);  // its batch's buffer stays that large: not kept
  EXPECT_EQ(1u, pool.kept());
  pool.Recycle(nullptr);
  EXPECT_EQ(1u, pool.kept());
  pool.Clear();
  EXPECT_EQ(0u, pool.kept());
}

// Writers on several threads increment one counter through the pool's
// transactions (GetForUpdate, Put, Commit): no transaction is handed to two
// threads at once, and no increment is lost.
TEST_F(TxnPoolTest, ConcurrentWritersShareThePoolWithoutLosingAnUpdate) {
  TxnPool& pool = Pool(3);
  constexpr int kThreads = 4;
  constexpr int kIncrements = 300;
  std::mutex mu;
  std::set<rocksdb::Transaction*> in_use;
  int handed_twice = 0;
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), "counter", "0").ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        rocksdb::Transaction* txn = pool.Begin(rocksdb::WriteOptions());
        {
          std::lock_guard<std::mutex> l(mu);
          if (!in_use.insert(txn).second) ++handed_twice;
        }
        std::string value;
        rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), "counter", &value);
        if (s.ok()) s = txn->Put("counter", std::to_string(std::stoi(value) + 1));
        if (s.ok()) s = txn->Commit();
        if (s.ok()) {
          ++done;
        } else {
          txn->Rollback().PermitUncheckedError();  // a lock timeout: try again
        }
        {
          std::lock_guard<std::mutex> l(mu);
          in_use.erase(txn);
        }
        pool.Recycle(txn);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(0, handed_twice);
  std::string value;
  ASSERT_TRUE(db_->Get(rocksdb::ReadOptions(), "counter", &value).ok());
  EXPECT_EQ(std::to_string(kThreads * kIncrements), value);
  EXPECT_LE(pool.kept(), 3u);
}

}  // namespace
}  // namespace gatedb
