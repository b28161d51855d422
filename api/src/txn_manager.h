// File: api/src/txn_manager.h (internal)
//
// The live snapshot transactions of one Database, for both doors: the C++
// Transaction objects and the command sessions (lsid + txnNumber).  A
// background reaper aborts transactions that outlive their lifetime and
// frees their locks; sessions idle for 30 minutes are forgotten.
#ifndef GATEDB_API_SRC_TXN_MANAGER_H_
#define GATEDB_API_SRC_TXN_MANAGER_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/storage/db_impl.h"
#include "gatedb/document.h"
#include "gatedb/transaction.h"

namespace gatedb {

struct Transaction::Impl {
  std::mutex mu;  // one operation at a time
  enum class State { kActive, kCommitted, kAborted } state = State::kActive;
  ScopePtr scope;  // GUARDED_BY(mu); null once finished
  std::string id;
  int64_t started_ms = 0;
  int64_t lifetime_ms = 0;
  Status abort_reason;   // why it was aborted
  bool replayed = false; // the commit was answered from the idempotency log
  class TxnManager* manager = nullptr;
};

// An operation inside a transaction: holds the transaction for its length.
class TxnUse {
 public:
  TxnUse(Transaction::Impl* t, int64_t now_ms);
  // NoSuchTransaction (finished, aborted, expired), or OK with scope().
  const Status& status() const { return status_; }
  WriteScope* scope() const { return t_->scope.get(); }
  // Aborts the transaction after a failed operation, as MongoDB does.
  void AbortOnError(const Status& s);

 private:
  Transaction::Impl* t_;
  std::unique_lock<std::mutex> lock_;
  Status status_;
};

class TxnManager {
 public:
  explicit TxnManager(DBImpl* db);
  ~TxnManager();

  std::shared_ptr<Transaction::Impl> Begin(const TransactionOptions& options);
  // Commits; with a keyed context, idempotently (see Transaction::Commit).
  Status Commit(Transaction::Impl* t, const WriteContext* context);
  Status Abort(Transaction::Impl* t);
  // Whether a transaction committed under `context`'s key already (then a
  // re-run must not run its statements again: they could meet its own
  // effects, an insert's DuplicateKey).  With `sync`, answers once that
  // commit is durable.  Errors: IdempotencyKeyReuse, BadValue (task id),
  // WriteConcernFailed.
  Status CommittedBefore(const WriteContext& context, bool sync, bool* committed);

  // The command door.  A session is its lsid's bytes.
  struct Session {
    int64_t txn_number = -1;
    std::shared_ptr<Transaction::Impl> txn;
    int64_t last_use_ms = 0;
  };
  // For a command of `txn_number` in session `lsid`: starts a transaction
  // (start), or finds the active one.  Errors as MongoDB's:
  // TransactionTooOld, NoSuchTransaction, ConflictingOperationInProgress.
  StatusOr<std::shared_ptr<Transaction::Impl>> ForCommand(const std::string& lsid, int64_t txn_number, bool start);
  // The transaction of a commitTransaction / abortTransaction.
  StatusOr<std::shared_ptr<Transaction::Impl>> ForEnd(const std::string& lsid, int64_t txn_number);

  DBImpl* db() { return db_; }

 private:
  void ReaperLoop();

  DBImpl* const db_;
  std::mutex mu_;
  std::vector<std::weak_ptr<Transaction::Impl>> live_;  // GUARDED_BY(mu_)
  std::map<std::string, Session> sessions_;             // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                                // GUARDED_BY(mu_)
  bool stop_ = false;                                   // GUARDED_BY(mu_)
  std::condition_variable cv_;
  std::thread reaper_;
};

}  // namespace gatedb

#endif  // GATEDB_API_SRC_TXN_MANAGER_H_
