// The expected state, kept outside the database (as db_stress's expected
// state is): what the agents were told.  Every execution of an operation
// is recorded with its outcome; the model derives from those alone what
// the store must hold, and the checker (sim_check.h) compares.
//
// The model never reads the database, with one exception: after a crash,
// an operation whose reply the dead child never reported is "in flight",
// and the journal decides whether it committed (ResolveInFlight), within
// the bounds the crash driver checks first.
#ifndef GATEDB_TESTS_SIM_SIM_MODEL_H_
#define GATEDB_TESTS_SIM_SIM_MODEL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/sim/sim_config.h"
#include "tests/sim/sim_ops.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace sim {

// An agent held the lease of a document from version v0 to v1: every
// journal event of the document in (v0, v1] must be the holder's.
struct LeaseInterval {
  int coll = -1, doc = -1, agent = -1;
  int64_t v0 = 0, v1 = 0;
  std::string Serialize() const;
  static std::optional<LeaseInterval> Parse(const std::string& text);
};

// What an operation did, over all its executions.
struct OpState {
  OpKind kind = OpKind::kUpdate;
  bool keyed = false;
  bool gated = false;       // a gated write (counted by conflictStats)
  bool sets_owner = false;
  bool with_audit = false;  // kTxnPair
  int8_t commits = 0;       // fresh commits (more than one is a duplicate effect)
  int32_t conflicts = 0;    // refused gated attempts: journal conflict events
  uint16_t coll = 0;
  int ExpectedEvents() const { return ExpectedEventsOf(kind, with_audit); }
};

// Counters for the summary.  Atomic: agents add to them directly.
struct SimStats {
  std::atomic<int64_t> ops{0}, executions{0};
  std::atomic<int64_t> updates{0}, gated{0}, helper{0}, helper_attempts{0}, keyed{0};
  std::atomic<int64_t> commits{0}, replays{0}, conflicts{0}, stale_basis{0};
  std::atomic<int64_t> lease_refusals{0}, lock_timeouts{0}, append_only_refusals{0}, key_reuse{0};
  std::atomic<int64_t> lost_replies{0};
  std::atomic<int64_t> audit_inserts{0};
  std::atomic<int64_t> transfers{0}, txn_pairs{0}, txn_commits{0}, txn_declined{0}, txn_gave_up{0},
      txn_lease_refusals{0}, txn_attempts{0};
  std::atomic<int64_t> lease_sessions{0}, lease_acquire_refused{0}, lease_writes{0};
  std::atomic<int64_t> online_checks{0};
  std::atomic<int64_t> inflight{0}, inflight_applied{0}, inflight_retried{0};
  std::atomic<int64_t> reopen_replays{0};
};

// The human-readable lines of a summary.  `merges`: stale writes the
// policies let through, counted from the journal.
std::string FormatStats(const SimStats& s, int64_t merges);

class Model {
 public:
  explicit Model(const Layout& layout);

  // One execution of `op` returned `r`.  A second fresh commit of one
  // operation (a duplicate effect) and a replay of an operation that never
  // committed are violations.
  void Record(const Op& op, const OpResult& r, Violations* v);
  void RecordLease(const LeaseInterval& l);
  // After a crash: `op` was in flight; the journal holds `applied` (its
  // write events) and `journal_conflicts` conflict events for it.
  void ResolveInFlight(const Op& op, bool applied, int journal_conflicts, Violations* v);

  // The expected state.  Callers hold no lock: read it only while no agent
  // runs (the checker runs between phases).
  int64_t OwnCounter(int coll, int doc, int agent) const { return Cell(coll, doc).c[agent]; }
  int64_t TxnCounter(int coll, int doc, int agent) const { return Cell(coll, doc).tx[agent]; }
  int64_t OwnSet(int coll, int doc, int agent) const { return Cell(coll, doc).s[agent]; }  // -1: never set
  int64_t Shared(int coll, int doc) const { return Cell(coll, doc).shared; }
  int64_t Balance(int account) const { return balances_[account]; }
  int64_t CollConflicts(int coll) const { return coll_conflicts_[coll]; }
  int64_t CollGatedCommits(int coll) const { return coll_gated_commits_[coll]; }
  const std::unordered_map<uint64_t, OpState>& ops() const { return ops_; }
  const std::map<std::string, std::set<int64_t>>& keyed_commits() const { return keyed_commits_; }
  const std::vector<LeaseInterval>& leases() const { return leases_; }
  const Layout& layout() const { return layout_; }

  SimStats stats;

 private:
  struct DocCell {
    std::vector<int64_t> c, tx, s;
    int64_t shared = 0;
  };
  const DocCell& Cell(int coll, int doc) const { return cells_[coll][doc]; }
  void ApplyEffects(const Op& op);
  OpState& StateFor(const Op& op);

  const Layout layout_;
  std::mutex mu_;
  std::vector<std::vector<DocCell>> cells_;  // [collection][document]; empty for appendOnly ones
  std::vector<int64_t> balances_;
  std::vector<int64_t> coll_conflicts_, coll_gated_commits_;
  // Only operations that committed or were refused by the gate: the others
  // left nothing in the store to compare.
  std::unordered_map<uint64_t, OpState> ops_;
  std::map<std::string, std::set<int64_t>> keyed_commits_;  // taskId -> writeSeqs stored
  std::vector<LeaseInterval> leases_;
};

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_MODEL_H_
