// The simulated world: the workload knobs (SimConfig), the collections and
// documents they produce (Layout), and a tiny flag parser shared by
// gatedb_sim and gatedb_crash.
#ifndef GATEDB_TESTS_SIM_SIM_CONFIG_H_
#define GATEDB_TESTS_SIM_SIM_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gatedb/db.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace sim {

struct SimConfig {
  uint64_t seed = 1;
  int agents = 4;
  int docs = 8;          // per document collection
  int collections = 6;   // K; policies cycle, see PolicyFor()
  int accounts = 8;      // in the extra "accounts" collection (transfers)
  double seconds = 0;    // run length; 0 with ops == 0 means 5 s
  int64_t ops = 0;       // or this many operations per agent
  std::string think = "exp:1,tail:0.01:100";
  double lost_reply_rate = 0.05;  // of keyed writes
  double keyed_rate = 0.6;        // writes carrying (taskId, writeSeq)
  double txn_rate = 0.2;          // operations that are transactions
  double lease_rate = 0.04;       // operations that are lease sessions
  double helper_rate = 0.2;       // gated updates through WriteWithVersionGate
  int64_t lease_ttl_ms = 30000;
  int64_t max_basis_age_ms = 100;  // of the rejectMaxAge collections
  int hot_docs = 2;                // half the updates go to the first few documents
  bool sync = false;
};

enum class Policy {
  kReject,          // conflictPolicy reject
  kFieldMergeInc,   // fieldMerge with mergeIncrements
  kSourcePriority,  // sourcePriority [human, planner, agent]
  kAppendOnly,      // appendOnly: the audit log
  kFieldMerge,      // fieldMerge without mergeIncrements
  kRejectMaxAge,    // reject, and maxBasisAgeMs: long thinks get StaleBasis
};
const char* PolicyName(Policy p);
// Collection i gets policy i % 6 in the order above.
Policy PolicyFor(int index);
// Sources of sourcePriority, highest first; "bot" is unknown (ranks last).
extern const char* const kSources[4];
int SourceRank(const std::string& source);  // 0 = highest; unknown = 3

struct CollSpec {
  std::string name;
  Policy policy;
  bool merges() const { return policy == Policy::kFieldMerge || policy == Policy::kFieldMergeInc; }
  bool counter() const { return policy != Policy::kAppendOnly; }
};

// Names and shapes of everything the agents touch.  Database "sim".
//   document collections: docs "d0".."d<M-1>", fields
//     c_<agent>  $inc by that agent only (field-disjoint counters)
//     tx_<agent> $inc by that agent's transactions
//     s_<agent>  $set by that agent only (disjoint sets: must all survive merges)
//     shared     $inc by everyone (overlapping)
//     owner      $set by everyone (overlapping: last writer wins, by version)
//   appendOnly collections: audit entries {agent, op, kind}
//   "accounts": "acct0".."acct<A-1>" with "bal", moved by transfers
struct Layout {
  std::string db = "sim";
  std::vector<CollSpec> colls;
  std::vector<int> counter_colls;  // indexes of the document collections
  int audit_coll = -1;             // the first appendOnly collection, or -1
  int docs = 0;
  int accounts = 0;
  int agents = 0;
  int64_t initial_balance = 1000;
  int64_t max_basis_age_ms = 0;
  std::string accounts_name = "accounts";

  static Layout Make(const SimConfig& c);
  static std::string DocId(int d) { return "d" + std::to_string(d); }
  static std::string AccountId(int a) { return "acct" + std::to_string(a); }
  static std::string AgentId(int a) { return "a" + std::to_string(a); }
  // -1 when `coll` is not one of ours.
  int CollIndex(const std::string& ns) const;  // "sim.<name>"
  bool IsAccountsNs(const std::string& ns) const { return ns == db + "." + accounts_name; }
};

// Creates the collections with their policies and inserts every document
// (writeContext {agentId: "setup", taskId: "setup"}).
Status SetupDatabase(Database* db, const Layout& layout);

// --name value / --name=value flags with a generated --help.
class FlagSet {
 public:
  explicit FlagSet(std::string usage) : usage_(std::move(usage)) {}
  void Int(const char* name, int64_t* v, const char* help);
  void Int(const char* name, int* v, const char* help);
  void Uint(const char* name, uint64_t* v, const char* help);
  void Double(const char* name, double* v, const char* help);
  void String(const char* name, std::string* v, const char* help);
  void Bool(const char* name, bool* v, const char* help);  // --name, --name=0/1
  // False (with *error set, or "" for --help after printing it) to stop.
  bool Parse(int argc, char** argv, std::string* error);
  void PrintHelp() const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_value;
    bool is_bool = false;
    std::function<bool(const std::string&)> set;
  };
  std::string usage_;
  std::vector<Flag> flags_;
};

// The workload flags every binary shares (--sync only where it is a choice).
void AddWorkloadFlags(FlagSet* flags, SimConfig* c, bool with_sync = true);
// Back to flags, to print a command line that reproduces the run.
std::vector<std::string> WorkloadArgs(const SimConfig& c, bool with_sync = true);

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_CONFIG_H_
