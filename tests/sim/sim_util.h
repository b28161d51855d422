// Small pieces shared by the agent simulator (gatedb_sim) and the crash
// driver (gatedb_crash): a seeded random generator, the think-time
// distribution, the violation log, and BSON accessors.
//
// Everything here uses only the public gatedb API (api/include/gatedb):
// the simulator is a user of the store, as RocksDB's db_stress is.
#ifndef GATEDB_TESTS_SIM_SIM_UTIL_H_
#define GATEDB_TESTS_SIM_SIM_UTIL_H_

#include <bson/bson.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace sim {

// A deterministic generator: the same seed gives the same choices on every
// platform (std::mt19937_64 is fully specified; the distributions below are
// ours, because the standard library's are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t Next() { return gen_(); }
  // Uniform in [0, n); n > 0.
  uint64_t Uniform(uint64_t n) { return Next() % n; }
  // Uniform in [lo, hi].
  int64_t Range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(Uniform(static_cast<uint64_t>(hi - lo + 1))); }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  bool Chance(double p) { return Unit() < p; }

 private:
  std::mt19937_64 gen_;
};

// Mixes seed material into one well-spread 64-bit seed (splitmix64), so
// that seed+1 and agent+1 do not give correlated streams.
uint64_t MixSeed(uint64_t a, uint64_t b = 0, uint64_t c = 0);

// How long an agent thinks between its read and its write:
//   "0"                        no think time
//   "exp:MEAN"                 exponential, MEAN milliseconds
//   "exp:MEAN,tail:P:SCALE"    and with probability P a long tail on top: a
//                              Pareto delay (alpha 1.5) of scale SCALE ms,
//                              capped at 20 * SCALE
// Long tails matter: they are what makes a basis stale, and what
// maxBasisAgeMs refuses.
class ThinkDist {
 public:
  static std::optional<ThinkDist> Parse(const std::string& spec, std::string* error);
  // Microseconds.
  int64_t SampleMicros(Rng* rng) const;
  const std::string& spec() const { return spec_; }
  bool none() const { return mean_ms_ <= 0 && tail_prob_ <= 0; }

 private:
  std::string spec_ = "0";
  double mean_ms_ = 0;
  double tail_prob_ = 0;
  double tail_scale_ms_ = 0;
};

void SleepMicros(int64_t us);
int64_t NowMs();        // wall clock, ms since the epoch (writeContext.readAt)
int64_t SteadyMs();     // monotonic, for deadlines

// Every broken invariant goes here.  Thread-safe.  The first messages are
// also printed at once, so that a run that hangs afterwards still says why.
class Violations {
 public:
  void Add(const std::string& what);
  int64_t count() const { return count_.load(); }
  std::vector<std::string> First(size_t n) const;
  // Writes every kept message (the first 1000) to `path`.
  bool WriteAll(const std::string& path) const;
  // A label printed with each message (the round, the phase).
  void set_context(const std::string& ctx);

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  std::string context_;
  std::atomic<int64_t> count_{0};
};

// BSON accessors for top-level fields.
std::optional<int64_t> IntField(const bson_t* doc, const char* key);
std::optional<std::string> StrField(const bson_t* doc, const char* key);
std::vector<std::string> StrArray(const bson_t* doc, const char* key);
// Relaxed JSON of one top-level value ("" when missing).
std::string ValueJson(const bson_t* doc, const char* key);
// Relaxed JSON of a whole document.
std::string BsonJson(const bson_t* doc);

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_UTIL_H_
