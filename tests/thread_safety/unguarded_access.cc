// File: tests/thread_safety/unguarded_access.cc
//
// Proof that clang's thread-safety analysis is on (GATEDB_THREAD_SAFETY):
// compiled as it is, Unguarded() reads and writes a GATEDB_GUARDED_BY member
// without its mutex, and the build must FAIL with "requires holding mutex".
// Compiled with -DGATEDB_TSA_LOCKED, the same access takes the lock and the
// build must succeed, so the failure above comes from the analysis and not
// from anything else in this file.  tests/CMakeLists.txt runs both.
#include "engine/util/mutex.h"
#include "engine/util/thread_annotations.h"

namespace {

class Counter {
 public:
  int Unguarded() {
#ifdef GATEDB_TSA_LOCKED
    gatedb::MutexLock l(&mu_);
#endif
    return ++value_;
  }

 private:
  gatedb::Mutex mu_;
  int value_ GATEDB_GUARDED_BY(mu_) = 0;
};

}  // namespace

int gatedb_thread_safety_probe() {
  Counter c;
  return c.Unguarded();
}
