// File: api/src/txn_manager.h (internal)
//
// The live snapshot transactions of one Database, for both doors: the C++
// Transaction objects and the command sessions (lsid + txnNumber).  A
// background reaper aborts transactions that outlive their lifetime and
// frees their locks; sessions idle for 30 minutes are forgotten.
//
// Locks (annotated for clang's thread-safety analysis, engine/util/mutex.h):
// Transaction::Impl::mu serializes the operations of one transaction;
// TxnManager::mu_ guards the manager's tables.  Order: mu_ is never taken
// with a transaction's mu held; only ~TxnManager takes a transaction's mu
// with mu_ held.
#ifndef GATEDB_API_SRC_TXN_MANAGER_H_
#define GATEDB_API_SRC_TXN_MANAGER_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/storage/db_impl.h"
#include "engine/util/mutex.h"
#include "engine/util/thread_annotations.h"
#include "gatedb/document.h"
#include "gatedb/transaction.h"

namespace gatedb {

struct Transaction::Impl {
  enum class State { kActive, kCommitted, kAborted };

  Mutex mu;  // one operation at a time
  State state GATEDB_GUARDED_BY(mu) = State::kActive;
  ScopePtr scope GATEDB_GUARDED_BY(mu);  // null once finished
  Status abort_reason GATEDB_GUARDED_BY(mu);  // why it was aborted
  // The commit was answered from the idempotency log.
  bool replayed GATEDB_GUARDED_BY(mu) = false;
  // Set by TxnManager::Begin before the Impl is shared (id, manager: before
  // the reaper can see it; started_ms, lifetime_ms likewise), constant after.
  std::string id;
  // The user it acts as (null: the owner); a keyed commit claims its agent.
  std::shared_ptr<const auth::Principal> principal;
  int64_t started_ms = 0;
  int64_t lifetime_ms = 0;
  class TxnManager* manager = nullptr;
};

// An operation inside a transaction: holds the transaction's mu for its
// lifetime (a scoped capability: the analysis knows `t->mu` is held from
// construction to destruction).
class GATEDB_SCOPED_CAPABILITY TxnUse {
 public:
  TxnUse(Transaction::Impl* t, int64_t now_ms) GATEDB_ACQUIRE(t->mu);
  ~TxnUse() GATEDB_RELEASE();
  TxnUse(const TxnUse&) = delete;
  TxnUse& operator=(const TxnUse&) = delete;

  // NoSuchTransaction (finished, aborted, expired), or OK with scope().
  const Status& status() const { return status_; }
  // Callers hold `t->mu` through this TxnUse; the analysis cannot name the
  // lock by the TxnUse's member (t_->mu is not the caller's `t->mu`), so the
  // body asserts it instead of a GATEDB_REQUIRES the callers could not meet.
  WriteScope* scope() const {
    t_->mu.AssertHeld();
    return t_->scope.get();
  }
  // Aborts the transaction after a failed operation, as MongoDB does.
  void AbortOnError(const Status& s);

 private:
  Transaction::Impl* const t_;
  MutexLock lock_;  // t_->mu, for the TxnUse's lifetime
  Status status_;
};

// Runs fn(scope) inside `txn` (scope null without one); a failure aborts
// the transaction, as MongoDB does.  fn returns a Status or a StatusOr.
inline const Status& StatusOfResult(const Status& s) { return s; }
template <typename T>
const Status& StatusOfResult(const StatusOr<T>& s) {
  return s.status();
}
template <typename Fn>
auto InTxn(Transaction* txn, DBImpl* db, Fn&& fn) -> decltype(fn(nullptr)) {
  if (txn == nullptr) return fn(nullptr);
  TxnUse use(txn->impl(), db->NowMs());
  if (!use.status().ok()) return use.status();
  auto r = fn(use.scope());
  if (!r.ok()) use.AbortOnError(StatusOfResult(r));
  return r;
}

class TxnManager {
 public:
  explicit TxnManager(DBImpl* db);
  ~TxnManager();

  std::shared_ptr<Transaction::Impl> Begin(const TransactionOptions& options,
                                           std::shared_ptr<const auth::Principal> principal) GATEDB_EXCLUDES(mu_);
  // Commits; with a keyed context, idempotently (see Transaction::Commit).
  // *replayed (when given): the commit was answered from the idempotency log.
  Status Commit(Transaction::Impl* t, const WriteContext* context, bool* replayed = nullptr) GATEDB_EXCLUDES(t->mu);
  Status Abort(Transaction::Impl* t) GATEDB_EXCLUDES(t->mu);
  // Whether a transaction committed under `context`'s key already (then a
  // re-run must not run its statements again: they could meet its own
  // effects, an insert's DuplicateKey).  With `sync`, answers once that
  // commit is durable.  Errors: IdempotencyKeyReuse, BadValue (task id),
  // WriteConcernFailed.
  Status CommittedBefore(const WriteContext& context, const auth::Principal* principal, bool sync, bool* committed);

  // The command door.  A session is its lsid's bytes.
  struct Session {
    int64_t txn_number = -1;
    std::shared_ptr<Transaction::Impl> txn;
    int64_t last_use_ms = 0;
  };
  // For a command of `txn_number` in session `lsid`: starts a transaction
  // (start) acting as `principal`, or finds the active one.  Errors as
  // MongoDB's: TransactionTooOld, NoSuchTransaction,
  // ConflictingOperationInProgress.
  StatusOr<std::shared_ptr<Transaction::Impl>> ForCommand(const std::string& lsid, int64_t txn_number, bool start,
                                                          std::shared_ptr<const auth::Principal> principal)
      GATEDB_EXCLUDES(mu_);
  // The transaction of a commitTransaction / abortTransaction.
  StatusOr<std::shared_ptr<Transaction::Impl>> ForEnd(const std::string& lsid, int64_t txn_number)
      GATEDB_EXCLUDES(mu_);

  // A retryable write of `txn_number` in session `lsid` (outside a
  // transaction): an older number than the session's newest is
  // TransactionTooOld, as in MongoDB; a newer one becomes the session's
  // newest and aborts its open transaction; the same number is a retry.
  Status NoteRetryableWrite(const std::string& lsid, int64_t txn_number) GATEDB_EXCLUDES(mu_);

  // endSessions / killSessions: forgets the sessions `lsids` (all sessions
  // when `all`), aborting their open transactions.  Returns how many
  // transactions it aborted.
  size_t EndSessions(const std::vector<std::string>& lsids, bool all) GATEDB_EXCLUDES(mu_);

  DBImpl* db() { return db_; }

 private:
  void ReaperLoop() GATEDB_EXCLUDES(mu_);
  Status CommitLocked(Transaction::Impl* t, const WriteContext* context) GATEDB_REQUIRES(t->mu);

  DBImpl* const db_;
  Mutex mu_;
  std::vector<std::weak_ptr<Transaction::Impl>> live_ GATEDB_GUARDED_BY(mu_);
  std::map<std::string, Session> sessions_ GATEDB_GUARDED_BY(mu_);
  uint64_t next_id_ GATEDB_GUARDED_BY(mu_) = 1;
  bool stop_ GATEDB_GUARDED_BY(mu_) = false;
  CondVar cv_;  // signalled by ~TxnManager
  std::thread reaper_;  // started by the constructor, joined by the destructor
};

}  // namespace gatedb

#endif  // GATEDB_API_SRC_TXN_MANAGER_H_
