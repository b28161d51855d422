#include "tests/sim/sim_model.h"

#include <sstream>

namespace gatedb {
namespace sim {

std::string LeaseInterval::Serialize() const {
  return std::to_string(coll) + " " + std::to_string(doc) + " " + std::to_string(agent) + " " + std::to_string(v0) +
         " " + std::to_string(v1);
}

std::optional<LeaseInterval> LeaseInterval::Parse(const std::string& text) {
  std::istringstream in(text);
  LeaseInterval l;
  in >> l.coll >> l.doc >> l.agent >> l.v0 >> l.v1;
  if (!in) return std::nullopt;
  return l;
}


Model::Model(const Layout& layout) : layout_(layout) {
  cells_.resize(layout.colls.size());
  for (int c : layout.counter_colls) {
    cells_[c].resize(layout.docs);
    for (DocCell& cell : cells_[c]) {
      cell.c.assign(layout.agents, 0);
      cell.tx.assign(layout.agents, 0);
      cell.s.assign(layout.agents, -1);
    }
  }
  balances_.assign(layout.accounts, layout.initial_balance);
  coll_conflicts_.assign(layout.colls.size(), 0);
  coll_gated_commits_.assign(layout.colls.size(), 0);
}

OpState& Model::StateFor(const Op& op) {
  auto [it, inserted] = ops_.try_emplace(op.key());
  if (inserted) {
    OpState& st = it->second;
    st.kind = op.kind;
    st.keyed = op.keyed;
    st.gated = op.gated_write();
    st.sets_owner = op.kind == OpKind::kUpdate && op.set_owner;
    st.with_audit = op.with_audit;
    st.coll = static_cast<uint16_t>(op.coll < 0 ? 0 : op.coll);
  }
  return it->second;
}

void Model::ApplyEffects(const Op& op) {
  switch (op.kind) {
    case OpKind::kUpdate: {
      DocCell& cell = cells_[op.coll][op.doc];
      cell.c[op.agent] += op.inc_own;
      cell.shared += op.inc_shared;
      if (op.set_own) cell.s[op.agent] = op.SetValue();
      if (op.gated_write()) ++coll_gated_commits_[op.coll];
      break;
    }
    case OpKind::kTransfer:
      balances_[op.from] -= op.amount;
      balances_[op.to] += op.amount;
      break;
    case OpKind::kTxnPair:
      ++cells_[op.coll][op.doc].tx[op.agent];
      ++cells_[op.coll2][op.doc2].tx[op.agent];
      break;
    case OpKind::kAuditInsert:
    case OpKind::kAppendOnlyWrite:
      break;
  }
  if (op.keyed) keyed_commits_[op.KeyedTaskId()].insert(op.n);
}

void Model::Record(const Op& op, const OpResult& r, Violations* v) {
  stats.executions++;
  std::lock_guard<std::mutex> l(mu_);
  switch (r.outcome) {
    case Outcome::kCommitted: {
      stats.commits++;
      if (op.is_txn()) stats.txn_commits++;
      OpState& st = StateFor(op);
      if (st.commits > 0) {
        v->Add("duplicate effect: " + op.Describe(layout_) + " committed a second time (a retry of a keyed write ran again)");
        break;
      }
      st.commits = 1;
      ApplyEffects(op);
      break;
    }
    case Outcome::kReplayed:
    case Outcome::kKeyReuse: {
      if (r.outcome == Outcome::kReplayed) {
        stats.replays++;
      } else {
        stats.key_reuse++;
      }
      auto it = ops_.find(op.key());
      if (it == ops_.end() || it->second.commits == 0) {
        v->Add(std::string(r.outcome == Outcome::kReplayed ? "replayed" : "IdempotencyKeyReuse for") +
               " an operation that never committed: " + op.Describe(layout_));
      } else if (r.outcome == Outcome::kKeyReuse && !op.helper) {
        // The same command under the same key must replay, not be refused.
        v->Add("IdempotencyKeyReuse for the identical command: " + op.Describe(layout_));
      }
      break;
    }
    case Outcome::kConflict: break;
    case Outcome::kLeaseHeld:
      stats.lease_refusals++;
      if (op.is_txn()) stats.txn_lease_refusals++;
      break;
    case Outcome::kLockTimeout: stats.lock_timeouts++; break;
    case Outcome::kAppendOnlyRefused: stats.append_only_refusals++; break;
    case Outcome::kDeclined: stats.txn_declined++; break;
    case Outcome::kTxnGaveUp: stats.txn_gave_up++; break;
    case Outcome::kError: v->Add(r.error); break;
  }
  if (op.is_txn()) stats.txn_attempts += r.attempts;
  if (op.helper) stats.helper_attempts += r.attempts;
  if (r.conflicts > 0) {
    OpState& st = StateFor(op);
    st.conflicts += r.conflicts;
    coll_conflicts_[op.coll] += r.conflicts;
    stats.conflicts += r.conflicts;
    stats.stale_basis += r.stale_basis;
  }
}

void Model::RecordLease(const LeaseInterval& l) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.push_back(l);
}

void Model::ResolveInFlight(const Op& op, bool applied, int journal_conflicts, Violations* v) {
  std::lock_guard<std::mutex> l(mu_);
  stats.inflight++;
  auto it = ops_.find(op.key());
  int commits = it == ops_.end() ? 0 : it->second.commits;
  int acked_conflicts = it == ops_.end() ? 0 : it->second.conflicts;
  if (applied) stats.inflight_applied++;
  if (applied && commits == 0) {
    StateFor(op).commits = 1;
    ApplyEffects(op);
  } else if (!applied && commits > 0) {
    v->Add("acknowledged write lost in the crash: " + op.Describe(layout_));
  }
  if (journal_conflicts < acked_conflicts) {
    v->Add("acknowledged conflicts lost in the crash: " + op.Describe(layout_) + " saw " +
           std::to_string(acked_conflicts) + ", the journal holds " + std::to_string(journal_conflicts));
    return;
  }
  int extra = journal_conflicts - acked_conflicts;
  // The unreported execution made at most as many attempts as it may.
  int most = op.helper ? op.helper_max_attempts : (op.gated_write() ? 1 : 0);
  if (extra > most) {
    v->Add("in-flight " + op.Describe(layout_) + " left " + std::to_string(extra) +
           " unreported conflict events; one execution makes at most " + std::to_string(most));
  }
  if (extra > 0) {
    StateFor(op).conflicts += extra;
    coll_conflicts_[op.coll] += extra;
    stats.conflicts += extra;
  }
}

std::string FormatStats(const SimStats& s, int64_t merges) {
  auto n = [](const std::atomic<int64_t>& v) { return std::to_string(v.load()); };
  std::string out;
  out += "  operations      " + n(s.ops) + " (" + n(s.executions) + " executions), " + n(s.keyed) + " keyed\n";
  out += "  updates         " + n(s.updates) + ", gated " + n(s.gated) + ", through WriteWithVersionGate " +
         n(s.helper) + " (" + n(s.helper_attempts) + " attempts)\n";
  out += "  committed       " + n(s.commits) + " executions took effect\n";
  out += "  conflicts       " + n(s.conflicts) + " refused gated attempts (" + n(s.stale_basis) + " StaleBasis)\n";
  out += "  merges          " + std::to_string(merges) + " stale writes let through by fieldMerge / sourcePriority\n";
  out += "  retries         " + n(s.lost_replies) + " lost replies re-sent, " + n(s.replays) + " replays, " +
         n(s.key_reuse) + " IdempotencyKeyReuse (helper retries)\n";
  out += "  transactions    " + n(s.txn_commits) + " committed (" + n(s.transfers) + " transfers, " + n(s.txn_pairs) +
         " pairs started), " + n(s.txn_attempts) + " attempts, " + n(s.txn_declined) + " declined, " +
         n(s.txn_gave_up) + " gave up, " + n(s.txn_lease_refusals) + " refused by leases\n";
  out += "  leases          " + n(s.lease_sessions) + " sessions (" + n(s.lease_writes) + " holder writes), " +
         n(s.lease_acquire_refused) + " acquisitions refused, " + n(s.lease_refusals) + " writes refused LeaseHeld\n";
  out += "  appendOnly      " + n(s.audit_inserts) + " inserts, " + n(s.append_only_refusals) + " rewrites refused\n";
  out += "  other refusals  " + n(s.lock_timeouts) + " lock timeouts (WriteConflict)\n";
  out += "  online checks   " + n(s.online_checks) + " own-field reads\n";
  if (s.inflight.load() > 0) {
    out += "  crash recovery  " + n(s.inflight) + " in flight at the kill, " + n(s.inflight_applied) + " had committed, " +
           n(s.inflight_retried) + " keyed ones re-sent\n";
  }
  if (s.reopen_replays.load() > 0) out += "  after reopen    " + n(s.reopen_replays) + " keyed writes re-sent\n";
  return out;
}

}  // namespace sim
}  // namespace gatedb
