// An agent: one thread looping read -> think -> write through the gate,
// with idempotency keys, lost replies, transactions and leases, as
// SimConfig asks.  It reports every operation to a Sink (the in-process
// model, or the crash child's acknowledgement log) and checks online what
// only it can know: its own fields (c_<agent>, tx_<agent>, s_<agent>),
// which no one else writes, must read back exactly as it left them.
#ifndef GATEDB_TESTS_SIM_SIM_AGENT_H_
#define GATEDB_TESTS_SIM_SIM_AGENT_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "gatedb/db.h"
#include "tests/sim/sim_config.h"
#include "tests/sim/sim_model.h"
#include "tests/sim/sim_ops.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace sim {

// Where an agent reports.  Calls come from the agent's own thread.
class Sink {
 public:
  virtual ~Sink() = default;
  // Before the operation's first execution: from here until End, a crash
  // leaves the operation "in flight".
  virtual void Begin(const Op& op) = 0;
  // After each execution returned (a lost reply makes two).
  virtual void Executed(const Op& op, const OpResult& r) = 0;
  virtual void End(const Op& op) = 0;
  // A completed lease session.
  virtual void Lease(const LeaseInterval& l) = 0;
};

// The in-process simulator's sink: straight into the model.
class ModelSink : public Sink {
 public:
  ModelSink(Model* model, Violations* v) : model_(model), v_(v) {}
  void Begin(const Op&) override {}
  void Executed(const Op& op, const OpResult& r) override { model_->Record(op, r, v_); }
  void End(const Op&) override {}
  void Lease(const LeaseInterval& l) override { model_->RecordLease(l); }

 private:
  Model* model_;
  Violations* v_;
};

class Agent {
 public:
  // `own_known`: the agent knows its own fields' values from the start
  // (a fresh database: all zero).  A crash child learns them from its
  // first read of each document instead.
  Agent(int index, int round, uint64_t seed, const Layout& layout, const SimConfig& config, const ThinkDist& think,
        bool own_known, Sink* sink, SimStats* stats, Violations* v);

  // Runs operations until `stop` is set or `max_ops` (0: no limit) ran.
  // May be called again after a reopen, with another Database.
  void Run(Database* db, const std::atomic<bool>& stop, int64_t max_ops);

  // Recently committed keyed operations, for the replay check after a
  // reopen.
  const std::deque<Op>& recent_keyed() const { return recent_keyed_; }
  int index() const { return index_; }

 private:
  struct Own {
    int64_t c = 0, tx = 0, s = -1;
    bool known = true;
  };
  struct Executions {
    OpResult first;
    std::optional<OpResult> retry;  // after a lost reply
    bool applied() const { return first.applied() || (retry && retry->applied()); }
  };

  void Step();
  void DoUpdate();
  void DoAudit();
  void DoTransfer();
  void DoTxnPair();
  void DoLeaseSession();
  // One read of a document: its version (or nullopt after a violation).
  std::optional<int64_t> Read(int coll, int doc);
  void Observe(int coll, int doc, const bson_t* current);
  Op NewOp(OpKind kind);
  void FillUpdate(Op* op);
  int PickCounterColl() { return layout_.counter_colls[rng_.Uniform(layout_.counter_colls.size())]; }
  int PickDoc();
  void Think() { SleepMicros(think_.SampleMicros(&rng_)); }
  // Executes op, and once more when its reply is "lost"; reports both.
  Executions Execute(Op op);
  void Apply(const Op& op, const OpResult& r);

  const int index_;
  const int round_;
  const Layout& layout_;
  const SimConfig& config_;
  const ThinkDist& think_;
  Sink* sink_;
  SimStats* stats_;
  Violations* v_;
  Rng rng_;
  Database* db_ = nullptr;
  uint32_t next_n_ = 0;
  std::vector<std::vector<Own>> own_;  // [collection][document]
  std::deque<Op> recent_keyed_;
};

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_AGENT_H_
