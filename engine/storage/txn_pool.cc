#include "engine/storage/txn_pool.h"

#include <rocksdb/utilities/write_batch_with_index.h>
#include <rocksdb/write_batch.h>

namespace gatedb {

TxnPool::TxnPool(rocksdb::TransactionDB* db, size_t capacity) : db_(db), capacity_(capacity) {}

TxnPool::~TxnPool() { Clear(); }

rocksdb::Transaction* TxnPool::Begin(const rocksdb::WriteOptions& wo, const rocksdb::TransactionOptions& to) {
  rocksdb::Transaction* old = nullptr;
  {
    MutexLock l(&mu_);
    if (!kept_.empty()) {
      old = kept_.back();
      kept_.pop_back();
    }
  }
  // With `old`, RocksDB reinitializes it and returns it.
  return db_->BeginTransaction(wo, to, old);
}

void TxnPool::Recycle(rocksdb::Transaction* txn) {
  if (txn == nullptr) return;
  const bool small = txn->GetWriteBatch()->GetWriteBatch()->Data().capacity() <= kMaxKeptBatchBytes;
  if (small) {
    MutexLock l(&mu_);
    if (kept_.size() < capacity_) {
      kept_.push_back(txn);
      return;
    }
  }
  delete txn;
}

void TxnPool::Clear() {
  std::vector<rocksdb::Transaction*> kept;
  {
    MutexLock l(&mu_);
    kept.swap(kept_);
  }
  for (rocksdb::Transaction* txn : kept) delete txn;
}

size_t TxnPool::kept() const {
  MutexLock l(&mu_);
  return kept_.size();
}

}  // namespace gatedb
