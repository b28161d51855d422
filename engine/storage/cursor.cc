#include "engine/storage/cursor.h"

#include <chrono>

namespace gatedb {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

CursorRegistry::Lease::Lease(Lease&& o) noexcept
    : registry_(o.registry_), id_(o.id_), ns_(std::move(o.ns_)), source_(std::move(o.source_)) {
  o.registry_ = nullptr;
}

CursorRegistry::Lease& CursorRegistry::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (registry_ != nullptr) {  // the cursor it held dies, as in the destructor
      source_.reset();
      registry_->Put(this);
    }
    registry_ = o.registry_;
    id_ = o.id_;
    ns_ = std::move(o.ns_);
    source_ = std::move(o.source_);
    o.registry_ = nullptr;
  }
  return *this;
}

CursorRegistry::Lease::~Lease() {
  if (registry_ != nullptr) {
    source_.reset();  // an unreturned lease kills its cursor
    registry_->Put(this);
  }
}

int64_t CursorRegistry::Lease::Return() {
  if (registry_ == nullptr) return 0;
  if (source_ != nullptr && source_->exhausted()) source_.reset();
  int64_t id = source_ != nullptr ? id_ : 0;
  registry_->Put(this);
  registry_ = nullptr;
  return id;
}

CursorRegistry::CursorRegistry(int64_t timeout_ms) : timeout_ms_(timeout_ms), rng_(std::random_device{}()) {}

CursorRegistry::~CursorRegistry() = default;

CursorRegistry::Lease CursorRegistry::Register(std::unique_ptr<CursorSource> source, std::string ns, Owner owner,
                                               int64_t now_ms) {
  Lease lease;
  MutexLock l(&mu_);
  int64_t id = 0;
  do {
    id = static_cast<int64_t>(rng_() >> 1);  // positive, as MongoDB's ids look to drivers
  } while (id == 0 || cursors_.count(id) != 0);
  Entry& e = cursors_[id];
  e.ns = ns;
  e.owner = std::move(owner);
  e.last_used_ms = now_ms;
  lease.registry_ = this;
  lease.id_ = id;
  lease.ns_ = std::move(ns);
  lease.source_ = std::move(source);
  return lease;
}

StatusOr<CursorRegistry::Lease> CursorRegistry::Checkout(int64_t id, const std::string& ns, const Owner& owner,
                                                         int64_t now_ms) {
  MutexLock l(&mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end() || it->second.killed) {
    return Status(ErrorCode::kCursorNotFound, "cursor id " + std::to_string(id) + " not found");
  }
  Entry& e = it->second;
  if (e.source == nullptr) {
    return Status(ErrorCode::kCursorInUse, "cursor id " + std::to_string(id) + " is already in use");
  }
  if (e.ns != ns) {
    return Status(ErrorCode::kUnauthorized, "Requested getMore on namespace '" + ns + "', but cursor belongs to a "
                                            "different namespace " + e.ns);
  }
  if (!e.owner.session.empty() && e.owner.session != owner.session) {
    return Status(ErrorCode::kLocation50738, "Cannot run getMore on cursor " + std::to_string(id) +
                                                 ", which was created in a session, " +
                                                 (owner.session.empty() ? "without a session" : "in another session"));
  }
  if (e.owner.scope != owner.scope) {
    return Status(ErrorCode::kOperationNotSupportedInTransaction,
                  "Cannot run getMore on cursor " + std::to_string(id) +
                      (e.owner.scope != nullptr ? ", which was created in a transaction, outside it"
                                                : ", which was not created in a transaction, in a transaction"));
  }
  e.last_used_ms = now_ms;
  Lease lease;
  lease.registry_ = this;
  lease.id_ = id;
  lease.ns_ = e.ns;
  lease.source_ = std::move(e.source);
  return lease;
}

void CursorRegistry::Put(Lease* lease) {
  std::unique_ptr<CursorSource> dead;  // destroyed outside the lock
  MutexLock l(&mu_);
  auto it = cursors_.find(lease->id_);
  if (it == cursors_.end()) {
    dead = std::move(lease->source_);
    return;
  }
  if (lease->source_ == nullptr || it->second.killed) {
    dead = std::move(lease->source_);
    cursors_.erase(it);
    return;
  }
  it->second.source = std::move(lease->source_);
}

bool CursorRegistry::Kill(int64_t id, const std::string& ns) {
  std::unique_ptr<CursorSource> dead;
  MutexLock l(&mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end() || it->second.killed || it->second.ns != ns) return false;
  if (it->second.source == nullptr) {  // checked out: dies when its lease ends
    it->second.killed = true;
    return true;
  }
  dead = std::move(it->second.source);
  cursors_.erase(it);
  return true;
}

size_t CursorRegistry::KillWhere(const std::function<bool(const Entry&)>& match) {
  std::vector<std::unique_ptr<CursorSource>> dead;  // destroyed after the lock is released
  size_t n = 0;
  MutexLock l(&mu_);
  for (auto it = cursors_.begin(); it != cursors_.end();) {
    if (it->second.killed || !match(it->second)) {
      ++it;
      continue;
    }
    ++n;
    if (it->second.source == nullptr) {  // checked out: its command is running; dies when its lease ends
      it->second.killed = true;
      ++it;
      continue;
    }
    dead.push_back(std::move(it->second.source));
    it = cursors_.erase(it);
  }
  return n;
}

void CursorRegistry::KillOwnedBy(const WriteScope* scope) {
  KillWhere([scope](const Entry& e) { return e.owner.scope == scope; });
}

size_t CursorRegistry::KillSession(const std::string& lsid) {
  return KillWhere([&lsid](const Entry& e) {
    return !e.owner.session.empty() && (lsid.empty() || e.owner.session == lsid);
  });
}

size_t CursorRegistry::Sweep(int64_t now_ms) {
  std::vector<std::unique_ptr<CursorSource>> dead;
  MutexLock l(&mu_);
  for (auto it = cursors_.begin(); it != cursors_.end();) {
    if (it->second.source != nullptr && now_ms - it->second.last_used_ms > timeout_ms_) {
      dead.push_back(std::move(it->second.source));
      it = cursors_.erase(it);
    } else {
      ++it;
    }
  }
  return dead.size();
}

size_t CursorRegistry::size() const {
  MutexLock l(&mu_);
  return cursors_.size();
}

}  // namespace gatedb
