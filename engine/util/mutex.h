// File: engine/util/mutex.h
//
// Mutexes, scoped locks and a condition variable annotated for clang's
// thread-safety analysis (engine/util/thread_annotations.h).  Thin wrappers
// over std::mutex, std::shared_mutex and std::condition_variable: same cost,
// same behaviour; what they add is that the compiler knows which lock a
// function takes and releases.
//
//   class Counter {
//    public:
//     void Add(int n) GATEDB_EXCLUDES(mu_) {
//       MutexLock l(&mu_);
//       value_ += n;
//       cv_.SignalAll();
//     }
//     void WaitAbove(int n) GATEDB_EXCLUDES(mu_) {
//       MutexLock l(&mu_);
//       while (value_ <= n) cv_.Wait(&mu_);
//     }
//    private:
//     Mutex mu_;
//     CondVar cv_;
//     int value_ GATEDB_GUARDED_BY(mu_) = 0;
//   };
//
// Waiting with a predicate: the analysis checks a lambda as a function of its
// own, which does not know that the waiter holds the mutex, so a predicate
// that reads guarded members says that it needs the lock:
//
//     cv_.WaitFor(&mu_, timeout, [&]() GATEDB_REQUIRES(mu_) { return value_ > n; });
//
// (CondVar calls the predicate only with the mutex held.)  The plain loop
// above needs no annotation on the condition.
#ifndef GATEDB_ENGINE_UTIL_MUTEX_H_
#define GATEDB_ENGINE_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "engine/util/thread_annotations.h"

namespace gatedb {

class CondVar;

// An exclusive lock over std::mutex.  Not recursive.
class GATEDB_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() GATEDB_ACQUIRE() { mu_.lock(); }
  void Unlock() GATEDB_RELEASE() { mu_.unlock(); }
  // True when the lock was taken.
  bool TryLock() GATEDB_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the calling thread holds the lock (for code it
  // cannot follow, such as a callback that runs under the lock).  Checks
  // nothing at run time: std::mutex does not know its owner.
  void AssertHeld() const GATEDB_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A reader-writer lock over std::shared_mutex: one writer (Lock) or any
// number of readers (LockShared).  Not recursive in either mode.
class GATEDB_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() GATEDB_ACQUIRE() { mu_.lock(); }
  void Unlock() GATEDB_RELEASE() { mu_.unlock(); }
  bool TryLock() GATEDB_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  void LockShared() GATEDB_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() GATEDB_RELEASE_SHARED() { mu_.unlock_shared(); }
  bool TryLockShared() GATEDB_TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

  // As Mutex::AssertHeld: for the analysis only.
  void AssertHeld() const GATEDB_ASSERT_CAPABILITY(this) {}
  void AssertSharedHeld() const GATEDB_ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex for its scope.
class GATEDB_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) GATEDB_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() GATEDB_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds a SharedMutex exclusively for its scope.
class GATEDB_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) GATEDB_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() GATEDB_RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope.
class GATEDB_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) GATEDB_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() GATEDB_RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable for Mutex.  Every wait takes the Mutex, which the
// caller holds; the wait releases it while blocked and holds it again when
// it returns (also on a timeout and on a spurious wake-up).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Blocks until signalled (or a spurious wake-up): check the condition in
  // a loop.
  void Wait(Mutex* mu) GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    cv_.wait(l.lock);
  }
  // Blocks until signalled, a spurious wake-up, or `deadline`.  False when
  // it returned because the deadline passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline)
      GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    return cv_.wait_until(l.lock, deadline) == std::cv_status::no_timeout;
  }
  // The same with a timeout from now.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout) GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    return cv_.wait_for(l.lock, timeout) == std::cv_status::no_timeout;
  }

  // Blocks until pred() is true.  pred runs with *mu held (see the top of
  // this file about annotating it).
  template <class Predicate>
  void Wait(Mutex* mu, Predicate pred) GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    cv_.wait(l.lock, std::move(pred));
  }
  // Blocks until pred() is true or `deadline` passes; returns pred() (its
  // value at the end, so true means the condition holds).
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline, Predicate pred)
      GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    return cv_.wait_until(l.lock, deadline, std::move(pred));
  }
  // The same with a timeout from now.
  template <class Rep, class Period, class Predicate>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout, Predicate pred)
      GATEDB_REQUIRES(mu) {
    Adopted l(mu);
    return cv_.wait_for(l.lock, timeout, std::move(pred));
  }

  // Wakes one waiter / every waiter.  The mutex need not be held.
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // Lends the held std::mutex to std::condition_variable as a unique_lock for
  // one wait and takes it back, so that the caller still holds the mutex
  // afterwards (even if the wait throws).
  struct Adopted {
    explicit Adopted(Mutex* mu) : lock(mu->mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    Adopted(const Adopted&) = delete;
    Adopted& operator=(const Adopted&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_UTIL_MUTEX_H_
