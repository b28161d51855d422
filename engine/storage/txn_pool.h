// File: engine/storage/txn_pool.h
//
// TxnPool: finished RocksDB transactions kept for the next write.  A
// pessimistic transaction is several allocations (its write batch, the
// batch's index and that index's arena, its lock tracker); RocksDB's
// BeginTransaction can reinitialize a finished one instead
// (TransactionDB::BeginTransaction's `old_txn`), which releases whatever it
// still holds (locks, snapshot, buffered writes) and applies the new
// options.  Every write of the engine takes its transaction here (Txn).
//
// Thread safety: Begin and Recycle may be called from any thread.  The pool
// must be destroyed (or Clear()ed) before its database is closed: it
// deletes the transactions it holds.
#ifndef GATEDB_ENGINE_STORAGE_TXN_POOL_H_
#define GATEDB_ENGINE_STORAGE_TXN_POOL_H_

#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>

#include <cstddef>
#include <vector>

#include "engine/util/mutex.h"

namespace gatedb {

class TxnPool {
 public:
  // Keeps at most `capacity` transactions of `db`.
  TxnPool(rocksdb::TransactionDB* db, size_t capacity);
  ~TxnPool();
  TxnPool(const TxnPool&) = delete;
  TxnPool& operator=(const TxnPool&) = delete;

  // A transaction begun with `wo` and `to`: a kept one reinitialized, or a
  // new one.  The caller owns it until it hands it to Recycle (or deletes
  // it).
  rocksdb::Transaction* Begin(const rocksdb::WriteOptions& wo,
                              const rocksdb::TransactionOptions& to = rocksdb::TransactionOptions());
  // Takes back a transaction of this pool's database that is committed or
  // rolled back: kept for a later Begin, or deleted when the pool is full
  // or the transaction's write buffer grew past kMaxKeptBatchBytes (a
  // reinitialized batch keeps its buffer's capacity).
  void Recycle(rocksdb::Transaction* txn);
  // Deletes every kept transaction.
  void Clear();

  size_t kept() const;

  static constexpr size_t kMaxKeptBatchBytes = 1u << 20;

 private:
  rocksdb::TransactionDB* const db_;
  const size_t capacity_;
  mutable Mutex mu_;
  std::vector<rocksdb::Transaction*> kept_ GATEDB_GUARDED_BY(mu_);
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_TXN_POOL_H_
