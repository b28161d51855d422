#include "api/src/txn_manager.h"

#include <algorithm>

namespace gatedb {

namespace {

Status NoSuchTransaction(const Transaction::Impl* t) GATEDB_REQUIRES(t->mu) {
  std::string why = t->abort_reason.ok() ? "" : ": " + t->abort_reason.reason();
  if (t->state == Transaction::Impl::State::kCommitted) {
    return Status(ErrorCode::kNoSuchTransaction, "transaction " + t->id + " has been committed");
  }
  return Status(ErrorCode::kNoSuchTransaction, "transaction " + t->id + " has been aborted" + why);
}

void AbortLocked(Transaction::Impl* t, Status reason) GATEDB_REQUIRES(t->mu) {
  if (t->state != Transaction::Impl::State::kActive) return;
  t->state = Transaction::Impl::State::kAborted;
  t->abort_reason = std::move(reason);
  t->scope.reset();  // rolls back, frees locks
}

}  // namespace

bool IsTransientTransactionError(const Status& s) {
  return s.code() == ErrorCode::kWriteConflict || s.code() == ErrorCode::kNoSuchTransaction;
}

Transaction::Transaction(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Transaction::~Transaction() {
  MutexLock lock(&impl_->mu);
  AbortLocked(impl_.get(), Status(ErrorCode::kNoSuchTransaction, "the Transaction was destroyed uncommitted"));
}

bool Transaction::active() const {
  MutexLock lock(&impl_->mu);
  return impl_->state == Impl::State::kActive;
}
bool Transaction::committed() const {
  MutexLock lock(&impl_->mu);
  return impl_->state == Impl::State::kCommitted;
}
bool Transaction::replayed() const {
  MutexLock lock(&impl_->mu);
  return impl_->replayed;
}
const std::string& Transaction::id() const { return impl_->id; }

Status Transaction::Commit() { return impl_->manager->Commit(impl_.get(), nullptr); }
Status Transaction::Commit(const WriteContext& context) { return impl_->manager->Commit(impl_.get(), &context); }
Status Transaction::Abort() { return impl_->manager->Abort(impl_.get()); }

// (clang does not analyse constructors and destructors: the body of this one
// is correct because lock_ holds t->mu from before it runs.)
TxnUse::TxnUse(Transaction::Impl* t, int64_t now_ms) : t_(t), lock_(&t->mu) {
  if (t_->state == Transaction::Impl::State::kActive && now_ms - t_->started_ms > t_->lifetime_ms) {
    AbortLocked(t_, Status(ErrorCode::kTransactionExceededLifetimeLimitSeconds,
                           "the transaction exceeded its lifetime limit of " + std::to_string(t_->lifetime_ms) + " ms"));
  }
  if (t_->state == Transaction::Impl::State::kCommitted) {
    status_ = Status(ErrorCode::kTransactionCommitted, "transaction " + t_->id + " has been committed");
  } else if (t_->state != Transaction::Impl::State::kActive) {
    status_ = NoSuchTransaction(t_);
  }
}

// lock_ releases t_->mu.
TxnUse::~TxnUse() = default;

void TxnUse::AbortOnError(const Status& s) {
  // Held through lock_ (see scope()).
  t_->mu.AssertHeld();
  if (!s.ok()) AbortLocked(t_, s);
}

TxnManager::TxnManager(DBImpl* db) : db_(db) { reaper_ = std::thread([this] { ReaperLoop(); }); }

TxnManager::~TxnManager() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  reaper_.join();
  MutexLock lock(&mu_);
  for (auto& w : live_) {
    if (auto t = w.lock()) {
      MutexLock tl(&t->mu);
      AbortLocked(t.get(), Status(ErrorCode::kNoSuchTransaction, "the database was closed"));
    }
  }
}

void TxnManager::ReaperLoop() {
  for (;;) {
    int64_t now = 0;
    std::vector<std::shared_ptr<Transaction::Impl>> check;
    {
      MutexLock lock(&mu_);
      // The predicate is checked before the first wait too: a stop requested
      // during a pass ends the loop at once.
      if (cv_.WaitFor(&mu_, std::chrono::milliseconds(200), [&]() GATEDB_REQUIRES(mu_) { return stop_; })) return;
      now = db_->NowMs();
      for (auto it = live_.begin(); it != live_.end();) {
        if (auto t = it->lock()) {
          check.push_back(std::move(t));
          ++it;
        } else {
          it = live_.erase(it);
        }
      }
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now - it->second.last_use_ms > 30 * 60 * 1000) {
          it = sessions_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& t : check) {
      // An expired transaction is aborted even while idle, freeing its locks;
      // one in use (its mu held) is left to its next operation.
      if (!t->mu.TryLock()) continue;
      if (t->state == Transaction::Impl::State::kActive && now - t->started_ms > t->lifetime_ms) {
        AbortLocked(t.get(), Status(ErrorCode::kTransactionExceededLifetimeLimitSeconds,
                                    "the transaction exceeded its lifetime limit of " +
                                        std::to_string(t->lifetime_ms) + " ms"));
      }
      t->mu.Unlock();
    }
  }
}

std::shared_ptr<Transaction::Impl> TxnManager::Begin(const TransactionOptions& options,
                                                     std::shared_ptr<const auth::Principal> principal) {
  auto t = std::make_shared<Transaction::Impl>();
  t->manager = this;
  t->principal = std::move(principal);
  // Before live_ shares t with the reaper, which reads them.
  t->started_ms = db_->NowMs();
  t->lifetime_ms = options.lifetime_ms;
  {
    MutexLock lock(&mu_);
    t->id = "txn-" + std::to_string(db_->NowMs()) + "-" + std::to_string(next_id_++);
    live_.push_back(t);
  }
  TransactionLimits limits;
  // RocksDB's own expiry is a backstop a little after ours.
  limits.lifetime_ms = options.lifetime_ms + 1000;
  limits.max_bytes = options.max_bytes;
  limits.lock_timeout_ms = db_->options().lock_timeout_ms;
  ScopePtr scope = db_->BeginTransaction(t->id, limits, options.sync || db_->options().sync);
  MutexLock lock(&t->mu);  // the reaper can already reach t through live_
  t->scope = std::move(scope);
  return t;
}

Status TxnManager::CommittedBefore(const WriteContext& context, const auth::Principal* principal, bool sync,
                                   bool* committed) {
  return db_->TransactionCommittedBefore(context, principal, sync, committed);
}

Status TxnManager::Commit(Transaction::Impl* t, const WriteContext* context, bool* replayed_out) {
  MutexLock lock(&t->mu);
  Status s = CommitLocked(t, context);
  if (replayed_out != nullptr) *replayed_out = s.ok() && t->replayed;
  return s;
}

Status TxnManager::CommitLocked(Transaction::Impl* t, const WriteContext* context) {
  const bool keyed = context != nullptr && !context->task_id.empty() && context->write_seq;
  if (t->state == Transaction::Impl::State::kCommitted) {
    // A retried commit; under an idempotency key it is a replay.
    if (keyed) t->replayed = true;
    return Status::OK();
  }
  if (t->state == Transaction::Impl::State::kActive && db_->NowMs() - t->started_ms > t->lifetime_ms) {
    AbortLocked(t, Status(ErrorCode::kTransactionExceededLifetimeLimitSeconds,
                          "the transaction exceeded its lifetime limit of " + std::to_string(t->lifetime_ms) + " ms"));
  }
  if (t->state != Transaction::Impl::State::kActive) return NoSuchTransaction(t);
  bool replayed = false;
  Status s = db_->CommitTransaction(t->scope.get(), keyed ? context : nullptr, t->principal.get(), &replayed);
  if (!s.ok()) {
    AbortLocked(t, s);
    return s;
  }
  if (replayed) {
    // Committed before under this key: this run commits nothing new.
    AbortLocked(t, Status(ErrorCode::kNoSuchTransaction, "replaced by the stored commit"));
    t->replayed = true;
  }
  t->state = Transaction::Impl::State::kCommitted;
  t->scope.reset();
  return Status::OK();
}

Status TxnManager::Abort(Transaction::Impl* t) {
  MutexLock lock(&t->mu);
  if (t->state == Transaction::Impl::State::kCommitted) {
    return Status(ErrorCode::kTransactionCommitted, "transaction " + t->id + " has been committed");
  }
  if (t->state == Transaction::Impl::State::kAborted) return NoSuchTransaction(t);
  AbortLocked(t, Status(ErrorCode::kNoSuchTransaction, "aborted by the client"));
  return Status::OK();
}

StatusOr<std::shared_ptr<Transaction::Impl>> TxnManager::ForCommand(const std::string& lsid, int64_t txn_number,
                                                                    bool start,
                                                                    std::shared_ptr<const auth::Principal> principal) {
  std::shared_ptr<Transaction::Impl> old;
  std::shared_ptr<Transaction::Impl> result;
  {
    MutexLock lock(&mu_);
    Session& s = sessions_[lsid];
    s.last_use_ms = db_->NowMs();
    if (txn_number < s.txn_number) {
      return Status(ErrorCode::kTransactionTooOld, "txnNumber " + std::to_string(txn_number) +
                                                       " is less than last txnNumber " + std::to_string(s.txn_number) +
                                                       " seen in this session");
    }
    if (start) {
      if (txn_number == s.txn_number) {
        return Status(ErrorCode::kConflictingOperationInProgress,
                      "transaction " + std::to_string(txn_number) + " has already been started in this session");
      }
      old = std::move(s.txn);
      s.txn_number = txn_number;
    } else {
      if (txn_number != s.txn_number || !s.txn) {
        return Status(ErrorCode::kNoSuchTransaction,
                      "given transaction number " + std::to_string(txn_number) +
                          " does not match any in-progress transactions");
      }
      return s.txn;
    }
  }
  if (old) Abort(old.get()).PermitUnchecked();  // a newer transaction replaces it
  TransactionOptions topts;
  topts.lifetime_ms = db_->options().transaction_lifetime_ms;
  result = Begin(topts, std::move(principal));
  MutexLock lock(&mu_);
  sessions_[lsid].txn = result;
  return result;
}

StatusOr<std::shared_ptr<Transaction::Impl>> TxnManager::ForEnd(const std::string& lsid, int64_t txn_number) {
  MutexLock lock(&mu_);
  auto it = sessions_.find(lsid);
  if (it != sessions_.end() && txn_number < it->second.txn_number) {
    return Status(ErrorCode::kTransactionTooOld, "txnNumber " + std::to_string(txn_number) +
                                                     " is less than last txnNumber " +
                                                     std::to_string(it->second.txn_number) + " seen in this session");
  }
  if (it == sessions_.end() || it->second.txn_number != txn_number || !it->second.txn) {
    return Status(ErrorCode::kNoSuchTransaction, "given transaction number " + std::to_string(txn_number) +
                                                     " does not match any in-progress transactions");
  }
  it->second.last_use_ms = db_->NowMs();
  return it->second.txn;
}

Status TxnManager::NoteRetryableWrite(const std::string& lsid, int64_t txn_number) {
  std::shared_ptr<Transaction::Impl> old;
  {
    MutexLock lock(&mu_);
    Session& s = sessions_[lsid];
    s.last_use_ms = db_->NowMs();
    if (txn_number < s.txn_number) {
      return Status(ErrorCode::kTransactionTooOld, "Retryable write with txnNumber " + std::to_string(txn_number) +
                                                       " is prohibited on session because a newer retryable write "
                                                       "with txnNumber " +
                                                       std::to_string(s.txn_number) + " has already started");
    }
    if (txn_number > s.txn_number) {
      old = std::move(s.txn);
      s.txn_number = txn_number;
    }
  }
  if (old) Abort(old.get()).PermitUnchecked();  // a newer txnNumber ends the open transaction
  return Status::OK();
}

size_t TxnManager::EndSessions(const std::vector<std::string>& lsids, bool all) {
  std::vector<std::shared_ptr<Transaction::Impl>> open;
  {
    MutexLock lock(&mu_);
    std::vector<std::map<std::string, Session>::iterator> ending;
    if (all) {
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) ending.push_back(it);
    } else {
      for (const std::string& lsid : lsids) {
        auto it = sessions_.find(lsid);
        // A list may name a session twice: erase it once.
        if (it != sessions_.end() && std::find(ending.begin(), ending.end(), it) == ending.end()) {
          ending.push_back(it);
        }
      }
    }
    for (auto it : ending) {
      if (it->second.txn) open.push_back(std::move(it->second.txn));
      sessions_.erase(it);
    }
  }
  size_t aborted = 0;
  for (auto& t : open) {
    if (Abort(t.get()).ok()) ++aborted;
  }
  return aborted;
}

}  // namespace gatedb
