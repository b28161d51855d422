#include "tests/sim/sim_agent.h"

#include <algorithm>

namespace gatedb {
namespace sim {

namespace {

constexpr size_t kRecentKeyed = 8;
constexpr int kHelperMaxAttempts = 5;

Value IdValue(const std::string& id) {
  bson_t* b = bson_new();
  BSON_APPEND_UTF8(b, "_id", id.c_str());
  bson_iter_t it;
  bson_iter_init_find(&it, b, "_id");
  Value v(*bson_iter_value(&it));
  bson_destroy(b);
  return v;
}

}  // namespace

Agent::Agent(int index, int round, uint64_t seed, const Layout& layout, const SimConfig& config,
             const ThinkDist& think, bool own_known, Sink* sink, SimStats* stats, Violations* v)
    : index_(index),
      round_(round),
      layout_(layout),
      config_(config),
      think_(think),
      sink_(sink),
      stats_(stats),
      v_(v),
      rng_(MixSeed(seed, static_cast<uint64_t>(round), static_cast<uint64_t>(index))) {
  own_.resize(layout.colls.size());
  for (int c : layout.counter_colls) {
    own_[c].resize(layout.docs);
    for (Own& o : own_[c]) o.known = own_known;
  }
}

void Agent::Run(Database* db, const std::atomic<bool>& stop, int64_t max_ops) {
  db_ = db;
  for (int64_t i = 0; !stop.load() && (max_ops <= 0 || i < max_ops); ++i) Step();
}

void Agent::Step() {
  double u = rng_.Unit();
  bool can_pair = layout_.counter_colls.size() * layout_.docs >= 2;
  if (u < config_.txn_rate && (layout_.accounts >= 2 || can_pair)) {
    if (layout_.accounts >= 2 && (!can_pair || rng_.Chance(0.6))) {
      DoTransfer();
    } else {
      DoTxnPair();
    }
  } else if (u < config_.txn_rate + config_.lease_rate && !layout_.counter_colls.empty()) {
    DoLeaseSession();
  } else if (layout_.audit_coll >= 0 && (layout_.counter_colls.empty() || rng_.Chance(0.12))) {
    DoAudit();
  } else if (!layout_.counter_colls.empty()) {
    DoUpdate();
  }
}

int Agent::PickDoc() {
  int hot = std::max(1, std::min(config_.hot_docs, layout_.docs));
  return static_cast<int>(rng_.Chance(0.5) ? rng_.Uniform(hot) : rng_.Uniform(layout_.docs));
}

Op Agent::NewOp(OpKind kind) {
  Op op;
  op.kind = kind;
  op.round = round_;
  op.agent = index_;
  op.n = next_n_++;
  op.keyed = rng_.Chance(config_.keyed_rate);
  op.source = kSources[rng_.Uniform(4)];
  stats_->ops++;
  if (op.keyed) stats_->keyed++;
  return op;
}

void Agent::Observe(int coll, int doc, const bson_t* current) {
  Own& o = own_[coll][doc];
  std::string me = Layout::AgentId(index_);
  int64_t c = IntField(current, ("c_" + me).c_str()).value_or(0);
  int64_t tx = IntField(current, ("tx_" + me).c_str()).value_or(0);
  int64_t s = IntField(current, ("s_" + me).c_str()).value_or(-1);
  if (!o.known) {
    o = Own{c, tx, s, true};
    return;
  }
  stats_->online_checks++;
  if (c != o.c || tx != o.tx || s != o.s) {
    v_->Add("agent " + me + " reads its own fields of " + layout_.colls[coll].name + "/" + Layout::DocId(doc) +
            " as c=" + std::to_string(c) + " tx=" + std::to_string(tx) + " s=" + std::to_string(s) +
            ", but its committed writes left c=" + std::to_string(o.c) + " tx=" + std::to_string(o.tx) +
            " s=" + std::to_string(o.s) + ": " + BsonJson(current));
    o = Own{c, tx, s, true};  // report each divergence once
  }
}

std::optional<int64_t> Agent::Read(int coll, int doc) {
  auto cur = db_->GetCollection(layout_.db, layout_.colls[coll].name).FindOne(IdFilter(Layout::DocId(doc)).view());
  if (!cur.ok() || !cur->has_value()) {
    v_->Add("cannot read " + layout_.colls[coll].name + "/" + Layout::DocId(doc) + ": " +
            (cur.ok() ? std::string("missing") : cur.status().ToString()));
    return std::nullopt;
  }
  Observe(coll, doc, (*cur)->bson());
  auto version = IntField((*cur)->bson(), "version");
  if (!version) v_->Add("document without a version: " + (*cur)->ToJson());
  return version;
}

void Agent::FillUpdate(Op* op) {
  // Field-disjoint ($inc/$set of the agent's own fields) and overlapping
  // ($inc shared, $set owner) changes, at least one of them.
  do {
    op->inc_own = rng_.Chance(0.7) ? rng_.Range(1, 3) : 0;
    op->inc_shared = rng_.Chance(0.4) ? rng_.Range(1, 5) : 0;
    op->set_own = rng_.Chance(0.4);
    op->set_owner = rng_.Chance(0.25);
  } while (op->inc_own == 0 && op->inc_shared == 0 && !op->set_own && !op->set_owner);
}

void Agent::Apply(const Op& op, const OpResult& r) {
  if (r.outcome == Outcome::kError) {
    // What happened is unknown: stop checking the documents it touched
    // until they are read again (the violation is already reported).
    if (op.coll >= 0 && op.doc >= 0 && layout_.colls[op.coll].counter()) own_[op.coll][op.doc].known = false;
    if (op.kind == OpKind::kTxnPair) own_[op.coll2][op.doc2].known = false;
    return;
  }
  if (!r.applied()) return;
  if (op.kind == OpKind::kUpdate) {
    Own& o = own_[op.coll][op.doc];
    o.c += op.inc_own;
    if (op.set_own) o.s = op.SetValue();
  } else if (op.kind == OpKind::kTxnPair) {
    ++own_[op.coll][op.doc].tx;
    ++own_[op.coll2][op.doc2].tx;
  }
  if (op.keyed) {
    recent_keyed_.push_back(op);
    if (recent_keyed_.size() > kRecentKeyed) recent_keyed_.pop_front();
  }
}

Agent::Executions Agent::Execute(Op op) {
  ReadObserver observer = [this](int coll, int doc, const Document& current) { Observe(coll, doc, current.bson()); };
  sink_->Begin(op);
  Executions ex;
  ex.first = ExecuteOp(db_, layout_, op, config_.sync, observer);
  sink_->Executed(op, ex.first);
  Apply(op, ex.first);
  if (op.keyed && ex.first.outcome != Outcome::kError && rng_.Chance(config_.lost_reply_rate)) {
    // The reply is "lost": the agent sends the same command under the same
    // key.  It must replay a committed write, never apply it again.
    stats_->lost_replies++;
    ex.retry = ExecuteOp(db_, layout_, op, config_.sync, observer);
    sink_->Executed(op, *ex.retry);
    Apply(op, *ex.retry);
    if (ex.first.applied()) {
      Outcome o = ex.retry->outcome;
      bool ok = ResendOutcomeOk(op, o);
      if (!ok && o != Outcome::kError) {
        v_->Add("the retry of committed " + op.Describe(layout_) + " after a lost reply got " + OutcomeName(o) +
                " instead of the stored reply");
      }
    }
  }
  sink_->End(op);
  return ex;
}

void Agent::DoUpdate() {
  Op op = NewOp(OpKind::kUpdate);
  op.coll = PickCounterColl();
  op.doc = PickDoc();
  std::optional<int64_t> version = Read(op.coll, op.doc);
  if (!version) return;
  op.read_at_ms = NowMs();
  Think();
  double mode = rng_.Unit();
  if (mode < config_.helper_rate) {
    op.helper = true;
    op.helper_max_attempts = kHelperMaxAttempts;
    op.read_at_ms = 0;
    stats_->helper++;
  } else if (rng_.Chance(0.75)) {
    op.gated = true;
    op.basis = *version;
  }
  if (op.gated_write()) stats_->gated++;
  stats_->updates++;
  FillUpdate(&op);
  Execute(op);
}

void Agent::DoAudit() {
  if (rng_.Chance(0.15)) {
    // An agent trying to rewrite the audit log: always refused.
    Op op = NewOp(OpKind::kAppendOnlyWrite);
    op.coll = layout_.audit_coll;
    op.ao_mode = static_cast<int>(rng_.Uniform(3));
    Execute(op);
    return;
  }
  Op op = NewOp(OpKind::kAuditInsert);
  op.coll = layout_.audit_coll;
  op.explicit_id = rng_.Chance(0.3);
  stats_->audit_inserts++;
  Execute(op);
}

void Agent::DoTransfer() {
  Op op = NewOp(OpKind::kTransfer);
  op.from = static_cast<int>(rng_.Uniform(layout_.accounts));
  op.to = static_cast<int>(rng_.Uniform(layout_.accounts - 1));
  if (op.to >= op.from) ++op.to;
  op.amount = rng_.Range(1, 200);
  op.lock_read = rng_.Chance(0.5);
  if (rng_.Chance(0.2)) op.txn_think_us = std::min<int64_t>(think_.SampleMicros(&rng_), 20000);
  stats_->transfers++;
  Think();
  Execute(op);
}

void Agent::DoTxnPair() {
  Op op = NewOp(OpKind::kTxnPair);
  op.coll = PickCounterColl();
  op.doc = PickDoc();
  do {
    op.coll2 = PickCounterColl();
    op.doc2 = PickDoc();
  } while (op.coll2 == op.coll && op.doc2 == op.doc);
  op.with_audit = layout_.audit_coll >= 0;
  if (rng_.Chance(0.2)) op.txn_think_us = std::min<int64_t>(think_.SampleMicros(&rng_), 20000);
  stats_->txn_pairs++;
  Think();
  Execute(op);
}

void Agent::DoLeaseSession() {
  int coll = PickCounterColl();
  int doc = PickDoc();
  Collection c = db_->GetCollection(layout_.db, layout_.colls[coll].name);
  std::string me = Layout::AgentId(index_);
  std::string where = layout_.colls[coll].name + "/" + Layout::DocId(doc);
  Value id = IdValue(Layout::DocId(doc));
  int64_t start = SteadyMs();
  auto lease = c.AcquireLease(id, config_.lease_ttl_ms, me);
  if (!lease.ok()) {
    const Status& s = lease.status();
    auto holder = s.err_info() ? StrField(s.err_info()->bson(), "holder") : std::nullopt;
    if (s.code() == ErrorCode::kLeaseHeld && holder && *holder != me) {
      stats_->lease_acquire_refused++;
    } else if (s.code() == ErrorCode::kWriteConflict) {
      stats_->lease_acquire_refused++;  // a transaction held the document's lock
    } else {
      v_->Add("AcquireLease(" + where + ") by " + me + ": " + s.ToString());
    }
    return;
  }
  if (lease->holder != me) v_->Add("AcquireLease(" + where + ") returned holder " + lease->holder);
  stats_->lease_sessions++;
  auto expired = [&] { return SteadyMs() - start >= config_.lease_ttl_ms; };
  std::optional<int64_t> v0 = Read(coll, doc);
  int committed = 0;
  int writes = static_cast<int>(rng_.Range(1, 3));
  for (int i = 0; i < writes && v0; ++i) {
    Op op = NewOp(OpKind::kUpdate);
    op.coll = coll;
    op.doc = doc;
    std::optional<int64_t> version = Read(coll, doc);
    if (!version) break;
    op.read_at_ms = NowMs();
    if (rng_.Chance(0.5)) {
      op.gated = true;  // nobody else can move the version: must go through
      op.basis = *version;
      stats_->gated++;
    }
    FillUpdate(&op);
    stats_->updates++;
    stats_->lease_writes++;
    Executions ex = Execute(op);
    if (ex.applied()) ++committed;
    Outcome o = ex.first.outcome;
    if (!expired() && (o == Outcome::kLeaseHeld || o == Outcome::kConflict)) {
      v_->Add("lease holder " + me + " of " + where + " was refused (" + OutcomeName(o) + "): " +
              op.Describe(layout_));
    }
  }
  std::optional<int64_t> v1 = Read(coll, doc);
  if (v0 && v1 && !expired()) {
    stats_->online_checks++;
    if (*v1 - *v0 != committed) {
      v_->Add("while " + me + " held the lease of " + where + " its version went " + std::to_string(*v0) + " -> " +
              std::to_string(*v1) + " but the holder committed " + std::to_string(committed) + " writes");
    }
    sink_->Lease(LeaseInterval{coll, doc, index_, *v0, *v1});
  }
  auto released = c.ReleaseLease(id, me);
  if (!released.ok()) {
    v_->Add("ReleaseLease(" + where + ") by its holder " + me + ": " + released.status().ToString());
  } else if (!released->released && !expired()) {
    v_->Add("ReleaseLease(" + where + ") by its holder " + me + " found no live lease");
  }
}

}  // namespace sim
}  // namespace gatedb
