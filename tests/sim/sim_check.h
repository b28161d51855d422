// The checker: compares the store with the expected-state model, and the
// journal with both.  Runs while no agent writes (after a phase, after a
// reopen, after a crash).
//
// Invariants (each violation names the document, field or operation):
//  no lost update    every counter field (c_<agent>, tx_<agent>, shared,
//                    account balances) equals the sum of the increments
//                    the agents were told committed
//  no duplicate      every operation has exactly its write events in the
//                    journal once if it committed and none if not, so no
//                    (taskId, writeSeq) applied twice; the idempotency log
//                    holds exactly the committed keyed writes
//  merges            every agent's own $set field holds its last committed
//                    value (disjoint fields written concurrently all
//                    survive), and a stale write the policy let through
//                    wrote no path changed after its basis (fieldMerge) or
//                    outranked the last writer (sourcePriority); reject
//                    lets nothing stale through
//  owner             the shared $set field holds the value of the last
//                    journal event that changed it
//  transactions      balances sum to the initial total and none is
//                    negative; each transaction has all of its events
//                    (sharing one txn id) or none
//  versions          per document, journal events chain versionBefore ->
//                    versionAfter with no gap from the insert to the
//                    document's version; journal seqs have no gap
//  journal == model  write events == committed writes, per operation
//  conflicts         conflict events and conflictStats (per collection and
//                    per operation) equal the refused attempts the agents saw
//  leases            inside a held lease interval every event is the holder's
//  appendOnly        audit entries are never changed or removed
#ifndef GATEDB_TESTS_SIM_SIM_CHECK_H_
#define GATEDB_TESTS_SIM_SIM_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <map>

#include "gatedb/db.h"
#include "tests/sim/sim_model.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace sim {

// What the journal says, gathered in one pass.
struct JournalFacts {
  struct PerOp {
    int32_t writes = 0;      // write events
    int32_t conflicts = 0;   // conflict events
    int32_t gated = 0;       // write events marked gated
    int32_t txn_events = 0;  // write events carrying a txn id
    std::string txn_id;
  };
  std::unordered_map<uint64_t, PerOp> per_op;
  int64_t events = 0, setup_events = 0;
  // Writes refused by permissions (code Unauthorized), by agent: only
  // gatedb_sim's intruders are ever refused that way.
  std::map<std::string, int64_t> unauthorized;
  uint64_t last_seq = 0;
  std::vector<int64_t> coll_conflicts, coll_gated_writes, coll_merges;
  int64_t merges = 0;
  // Versions by the journal: [collection][document], -1 when never seen.
  std::vector<std::vector<int64_t>> doc_version;
  std::vector<int64_t> account_version;
  // The operation whose event last changed `owner`, per document.
  std::vector<std::vector<std::optional<uint64_t>>> last_owner;
  int64_t invariants = 0;  // individual checks made during the scan
};

struct CheckOptions {
  // Look up this many tasks' stored idempotency records (0: none).
  size_t idempotency_tasks = 5000;
};

struct CheckResult {
  int64_t invariants = 0;
  JournalFacts facts;
};

// Reads the whole journal (paging with next_after_seq) and checks what it
// can on its own: seq and version chains, policy decisions, leases.
Status ScanJournal(Database* db, const Model& model, JournalFacts* facts, Violations* v);

// Everything: ScanJournal, then the documents, balances, audit entries,
// per-operation events, conflict statistics and idempotency records
// against the model.
// `scanned`: the facts of a ScanJournal just made (with this model's lease
// intervals), to skip reading the journal again.
CheckResult CheckAll(Database* db, const Model& model, const CheckOptions& options, Violations* v,
                     const JournalFacts* scanned = nullptr);

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_CHECK_H_
