// File: gatedb/transaction.h
//
// Snapshot transactions across documents and collections.  Reads inside a
// transaction see the snapshot taken when it started plus its own writes;
// a write-write conflict with another transaction or a single-document
// write aborts it with WriteConflict (retry the whole transaction:
// Database::WithTransaction does).  Everything it writes (documents, their
// journal events, which share its id, and an idempotency record when the
// commit carries a key) commits in one atomic step or not at all.
//
// Snapshot isolation still allows write skew: two transactions that each
// read A and B and each write a different one both commit.  Prevent it with
// a locking read (FindOptions::lock_documents), which puts what it reads in
// the transaction's write set.
//
// A Transaction is used by one thread at a time; it aborts when destroyed
// uncommitted, and when it outlives TransactionOptions::lifetime_ms.
//
//   auto txn = db->StartTransaction();
//   gatedb::WriteOptions w;
//   w.txn = txn->get();
//   accounts.UpdateOne(from, debit, {false, w});
//   ledger.InsertOne(entry, w);
//   gatedb::Status s = (*txn)->Commit();
#ifndef GATEDB_TRANSACTION_H_
#define GATEDB_TRANSACTION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {

struct TransactionOptions {
  // Aborted (and its locks freed) after this long, as MongoDB's
  // transactionLifetimeLimitSeconds.  Default: 60000
  int64_t lifetime_ms = 60 * 1000;
  // The most it may write (documents, events) before TransactionTooLarge.
  // Default: 16 MiB
  size_t max_bytes = 16u << 20;
  // fsync the commit.  Default: false
  bool sync = false;
};

// True for errors after which the whole transaction may simply be run
// again (MongoDB's TransientTransactionError label): WriteConflict, and
// NoSuchTransaction for a transaction aborted under it.
bool IsTransientTransactionError(const Status& s);

class Transaction {
 public:
  struct Impl;  // internal
  explicit Transaction(std::shared_ptr<Impl> impl);
  ~Transaction();  // aborts when still active
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Commits everything atomically.  Errors: NoSuchTransaction (aborted,
  // e.g. by a conflict or its lifetime), TransactionCommitted is never
  // returned for a repeated Commit (it answers OK again).
  Status Commit();
  // An idempotent commit: with context.task_id and context.write_seq the
  // commit is recorded in the idempotency log in the same atomic step; a
  // commit under a key already used (a retry after a lost reply, even from
  // a re-run transaction) commits nothing new and answers OK with
  // replayed() true.
  Status Commit(const WriteContext& context);
  // Errors: NoSuchTransaction when nothing is active; TransactionCommitted.
  Status Abort();

  bool active() const;
  bool committed() const;
  bool replayed() const;
  const std::string& id() const;

  Impl* impl() { return impl_.get(); }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace gatedb

#endif  // GATEDB_TRANSACTION_H_
