#include "tests/sim/sim_ops.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace gatedb {
namespace sim {

namespace {

constexpr uint32_t kOpsPerTask = 16;  // keyed writes share a task 16 at a time

std::string OwnField(const char* prefix, int agent) { return prefix + Layout::AgentId(agent); }

Document IncDoc(const std::string& field, int64_t by) {
  bson_t* u = bson_new();
  bson_t inc;
  BSON_APPEND_DOCUMENT_BEGIN(u, "$inc", &inc);
  BSON_APPEND_INT64(&inc, field.c_str(), by);
  bson_append_document_end(u, &inc);
  return Document::Adopt(u);
}

Document UpdateDoc(const Op& op) {
  bson_t* u = bson_new();
  if (op.inc_own != 0 || op.inc_shared != 0) {
    bson_t inc;
    BSON_APPEND_DOCUMENT_BEGIN(u, "$inc", &inc);
    if (op.inc_own != 0) BSON_APPEND_INT64(&inc, OwnField("c_", op.agent).c_str(), op.inc_own);
    if (op.inc_shared != 0) BSON_APPEND_INT64(&inc, "shared", op.inc_shared);
    bson_append_document_end(u, &inc);
  }
  if (op.set_own || op.set_owner) {
    bson_t set;
    BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
    if (op.set_own) BSON_APPEND_INT64(&set, OwnField("s_", op.agent).c_str(), op.SetValue());
    if (op.set_owner) BSON_APPEND_UTF8(&set, "owner", op.OwnerValue().c_str());
    bson_append_document_end(u, &set);
  }
  return Document::Adopt(u);
}

OpResult Error(const Op& op, const Layout& layout, const std::string& what) {
  OpResult r;
  r.outcome = Outcome::kError;
  r.error = op.Describe(layout) + ": " + what;
  return r;
}

// What a failed single write means.  `gated`: the attempt carried a basis.
OpResult Classify(const Layout& layout, const Op& op, const Status& s, bool gated) {
  OpResult r;
  const CollSpec& spec = layout.colls[op.coll];
  switch (s.code()) {
    case ErrorCode::kVersionConflict: {
      if (!gated) return Error(op, layout, "VersionConflict on an ungated write: " + s.ToString());
      // A refusal must be for a genuinely stale basis (the document moved on).
      const Document* info = s.err_info();
      auto cur = info ? IntField(info->bson(), "currentVersion") : std::nullopt;
      auto basis = info ? IntField(info->bson(), "basisVersion") : std::nullopt;
      if (!cur || !basis || *cur <= *basis) {
        return Error(op, layout, "VersionConflict without a newer current version: " + s.ToString() +
                                     (info ? " errInfo " + info->ToJson() : std::string()));
      }
      if (spec.merges() && info) {
        // fieldMerge refuses only for paths this write changes (less the
        // increments, with mergeIncrements) that changed after the basis.
        std::vector<std::string> fields = StrArray(info->bson(), "conflictingFields");
        std::vector<std::string> mine;
        if (spec.policy == Policy::kFieldMerge) {
          if (op.inc_own != 0) mine.push_back(OwnField("c_", op.agent));
          if (op.inc_shared != 0) mine.push_back("shared");
        }
        if (op.set_own) mine.push_back(OwnField("s_", op.agent));
        if (op.set_owner) mine.push_back("owner");
        bool ok = !fields.empty();
        for (const std::string& f : fields) ok &= std::find(mine.begin(), mine.end(), f) != mine.end();
        if (!ok) return Error(op, layout, "fieldMerge refused for fields it does not write: " + info->ToJson());
      }
      if (spec.policy == Policy::kSourcePriority && info) {
        // Refused although the writer outranks the last writer?
        auto last = StrField(info->bson(), "lastWriterSource");
        if (last && SourceRank(op.source) < SourceRank(*last)) {
          return Error(op, layout, "sourcePriority refused '" + op.source + "' over last writer '" + *last + "'");
        }
      }
      r.outcome = Outcome::kConflict;
      r.conflicts = 1;
      return r;
    }
    case ErrorCode::kStaleBasis:
      if (!gated || spec.policy != Policy::kRejectMaxAge) {
        return Error(op, layout, "StaleBasis outside a maxBasisAgeMs collection: " + s.ToString());
      }
      r.outcome = Outcome::kConflict;
      r.conflicts = 1;
      r.stale_basis = 1;
      return r;
    case ErrorCode::kLeaseHeld: {
      const Document* info = s.err_info();
      auto holder = info ? StrField(info->bson(), "holder") : std::nullopt;
      if (!holder || *holder == op.AgentId()) {
        return Error(op, layout, "LeaseHeld refusing the holder itself: " + s.ToString());
      }
      r.outcome = Outcome::kLeaseHeld;
      return r;
    }
    case ErrorCode::kWriteConflict:
      r.outcome = Outcome::kLockTimeout;
      return r;
    case ErrorCode::kIdempotencyKeyReuse:
      if (!op.keyed) return Error(op, layout, "IdempotencyKeyReuse without a key: " + s.ToString());
      r.outcome = Outcome::kKeyReuse;
      return r;
    case ErrorCode::kAppendOnlyCollection:
      if (spec.policy != Policy::kAppendOnly) return Error(op, layout, "AppendOnlyCollection: " + s.ToString());
      r.outcome = Outcome::kAppendOnlyRefused;
      return r;
    default:
      return Error(op, layout, "unexpected error " + s.ToString());
  }
}

OpResult ExecUpdate(Database* db, const Layout& layout, const Op& op, bool sync, const ReadObserver& observer) {
  Collection c = db->GetCollection(layout.db, layout.colls[op.coll].name);
  Document filter = IdFilter(Layout::DocId(op.doc));
  Document update = UpdateDoc(op);
  if (op.helper) {
    int calls = 0;
    GatedWriteOptions go;
    go.max_attempts = op.helper_max_attempts;
    go.context = op.WriteCtx();
    go.context.read_at_ms.reset();  // the helper stamps each of its reads
    go.sync = sync;
    auto r = c.WriteWithVersionGate(
        filter.view(),
        [&](const Document& current) -> StatusOr<Document> {
          ++calls;
          if (observer) observer(op.coll, op.doc, current);
          return update;
        },
        go);
    if (r.ok()) {
      OpResult out;
      out.outcome = Outcome::kCommitted;
      out.attempts = calls;
      out.conflicts = calls - 1;
      if (r->attempts != calls) {
        return Error(op, layout, "WriteWithVersionGate reports " + std::to_string(r->attempts) + " attempts for " +
                                     std::to_string(calls) + " calls");
      }
      if (r->matched_count != 1 || r->modified_count != 1) {
        return Error(op, layout, "helper write matched " + std::to_string(r->matched_count) + ", modified " +
                                     std::to_string(r->modified_count));
      }
      return out;
    }
    // Every call but the last was refused; the last one failed with r.
    OpResult out = Classify(layout, op, r.status(), true);
    out.attempts = calls;
    if (out.outcome != Outcome::kError) out.conflicts += calls - 1;
    return out;
  }
  UpdateOptions uo;
  uo.write.sync = sync;
  uo.write.context = op.WriteCtx();
  if (op.gated) uo.write.basis_version = op.basis;
  auto r = c.UpdateOne(filter.view(), update.view(), uo);
  if (!r.ok()) {
    OpResult out = Classify(layout, op, r.status(), op.gated);
    out.attempts = 1;
    return out;
  }
  if (r->matched_count != 1 || r->modified_count != 1) {
    return Error(op, layout, "update matched " + std::to_string(r->matched_count) + ", modified " +
                                 std::to_string(r->modified_count) + (r->replayed ? " (replayed)" : ""));
  }
  if (r->replayed && !op.keyed) return Error(op, layout, "an unkeyed write was replayed");
  OpResult out;
  out.outcome = r->replayed ? Outcome::kReplayed : Outcome::kCommitted;
  out.attempts = 1;
  return out;
}

OpResult ExecAuditInsert(Database* db, const Layout& layout, const Op& op, bool sync) {
  Collection c = db->GetCollection(layout.db, layout.colls[op.coll].name);
  bson_t* d = bson_new();
  if (op.explicit_id) BSON_APPEND_UTF8(d, "_id", ("au." + KeyString(op.key())).c_str());
  BSON_APPEND_UTF8(d, "agent", op.AgentId().c_str());
  BSON_APPEND_UTF8(d, "op", KeyString(op.key()).c_str());
  BSON_APPEND_UTF8(d, "kind", "insert");
  Document doc = Document::Adopt(d);
  WriteOptions w;
  w.sync = sync;
  w.context = op.WriteCtx();
  auto r = c.InsertOne(doc.view(), w);
  if (!r.ok()) {
    OpResult out = Classify(layout, op, r.status(), false);
    out.attempts = 1;
    return out;
  }
  if (r->replayed && !op.keyed) return Error(op, layout, "an unkeyed insert was replayed");
  OpResult out;
  out.outcome = r->replayed ? Outcome::kReplayed : Outcome::kCommitted;
  out.attempts = 1;
  return out;
}

OpResult ExecAppendOnlyWrite(Database* db, const Layout& layout, const Op& op, bool sync) {
  Collection c = db->GetCollection(layout.db, layout.colls[op.coll].name);
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "agent", op.AgentId().c_str());
  Document filter = Document::Adopt(f);
  StatusOr<int64_t> changed = Status(ErrorCode::kInternalError, "not run");
  if (op.ao_mode == 2) {
    WriteOptions w;
    w.sync = sync;
    w.context = op.WriteCtx();
    auto r = c.DeleteOne(filter.view(), w);
    changed = r.ok() ? StatusOr<int64_t>(r->deleted_count) : StatusOr<int64_t>(r.status());
  } else {
    UpdateOptions uo;
    uo.write.sync = sync;
    uo.write.context = op.WriteCtx();
    if (op.ao_mode == 1) uo.write.basis_version = 0;  // an audit entry is always at version 0
    auto r = c.UpdateOne(filter.view(), IncDoc("tampered", 1).view(), uo);
    changed = r.ok() ? StatusOr<int64_t>(r->modified_count) : StatusOr<int64_t>(r.status());
  }
  if (changed.ok()) {
    return Error(op, layout, "an appendOnly collection accepted an update or delete (changed " +
                                 std::to_string(*changed) + ")");
  }
  OpResult out = Classify(layout, op, changed.status(), op.ao_mode == 1);
  if (out.outcome != Outcome::kAppendOnlyRefused && out.outcome != Outcome::kError) {
    return Error(op, layout, "appendOnly write refused with " + changed.status().ToString() +
                                 " instead of AppendOnlyCollection");
  }
  out.attempts = 1;
  return out;
}

// Runs `body` in transactions until it commits, the agent declines, or a
// non-transient error.  Keyed operations commit under their key (and may be
// replayed); unkeyed ones go through Database::WithTransaction.
OpResult ExecTxn(Database* db, const Layout& layout, const Op& op, bool sync,
                 const std::function<Status(Transaction&, bool* declined)>& body) {
  TransactionOptions topts;
  topts.sync = sync;
  OpResult out;
  bool declined = false;
  Status s;
  if (!op.keyed) {
    WithTransactionOptions wo;
    wo.transaction = topts;
    wo.timeout_ms = 10000;
    s = db->WithTransaction(
        [&](Transaction& t) {
          ++out.attempts;
          declined = false;
          return body(t, &declined);
        },
        wo);
    if (s.ok()) {
      out.outcome = Outcome::kCommitted;
      return out;
    }
  } else {
    int64_t deadline = SteadyMs() + 10000;
    for (int attempt = 0;; ++attempt) {
      auto t = db->StartTransaction(topts);
      if (!t.ok()) return Error(op, layout, "StartTransaction: " + t.status().ToString());
      ++out.attempts;
      declined = false;
      s = body(**t, &declined);
      if (s.ok()) {
        s = (*t)->Commit(op.CommitCtx());
        if (s.ok()) {
          out.outcome = (*t)->replayed() ? Outcome::kReplayed : Outcome::kCommitted;
          return out;
        }
      } else if ((*t)->active()) {
        (*t)->Abort().PermitUnchecked();  // the agent's decision; a failed statement aborted it already
      }
      if (declined || !IsTransientTransactionError(s) || SteadyMs() >= deadline) break;
      SleepMicros(1000 * (1 + std::min(attempt, 20)));
    }
  }
  if (declined) {
    out.outcome = Outcome::kDeclined;
    return out;
  }
  if (IsTransientTransactionError(s)) {
    out.outcome = Outcome::kTxnGaveUp;
    return out;
  }
  if (s.code() == ErrorCode::kLeaseHeld) {
    const Document* info = s.err_info();
    auto holder = info ? StrField(info->bson(), "holder") : std::nullopt;
    if (!holder || *holder == op.AgentId()) return Error(op, layout, "LeaseHeld refusing the holder: " + s.ToString());
    out.outcome = Outcome::kLeaseHeld;
    return out;
  }
  return Error(op, layout, "transaction failed: " + s.ToString());
}

OpResult ExecTransfer(Database* db, const Layout& layout, const Op& op, bool sync) {
  Collection accts = db->GetCollection(layout.db, layout.accounts_name);
  Document from = IdFilter(Layout::AccountId(op.from));
  Document to = IdFilter(Layout::AccountId(op.to));
  return ExecTxn(db, layout, op, sync, [&](Transaction& t, bool* declined) -> Status {
    FindOptions fo;
    fo.txn = &t;
    fo.lock_documents = op.lock_read;
    ASSIGN_OR_RETURN(std::optional<Document> src, accts.FindOne(from.view(), fo));
    if (!src) return Status(ErrorCode::kInternalError, "account " + Layout::AccountId(op.from) + " is missing");
    auto bal = IntField(src->bson(), "bal");
    if (!bal) return Status(ErrorCode::kInternalError, "account without a balance: " + src->ToJson());
    if (*bal < op.amount) {
      *declined = true;
      return Status(ErrorCode::kBadValue, "insufficient balance");
    }
    SleepMicros(op.txn_think_us);
    UpdateOptions uo;
    uo.write.txn = &t;
    uo.write.context = op.StatementCtx();
    ASSIGN_OR_RETURN(UpdateResult a, accts.UpdateOne(from.view(), IncDoc("bal", -op.amount).view(), uo));
    ASSIGN_OR_RETURN(UpdateResult b, accts.UpdateOne(to.view(), IncDoc("bal", op.amount).view(), uo));
    if (a.modified_count != 1 || b.modified_count != 1) {
      return Status(ErrorCode::kInternalError, "a transfer statement modified nothing");
    }
    return Status::OK();
  });
}

OpResult ExecTxnPair(Database* db, const Layout& layout, const Op& op, bool sync) {
  Collection c1 = db->GetCollection(layout.db, layout.colls[op.coll].name);
  Collection c2 = db->GetCollection(layout.db, layout.colls[op.coll2].name);
  Document f1 = IdFilter(Layout::DocId(op.doc));
  Document f2 = IdFilter(Layout::DocId(op.doc2));
  Document inc = IncDoc(OwnField("tx_", op.agent), 1);
  return ExecTxn(db, layout, op, sync, [&](Transaction& t, bool*) -> Status {
    UpdateOptions uo;
    uo.write.txn = &t;
    uo.write.context = op.StatementCtx();
    ASSIGN_OR_RETURN(UpdateResult a, c1.UpdateOne(f1.view(), inc.view(), uo));
    SleepMicros(op.txn_think_us);
    ASSIGN_OR_RETURN(UpdateResult b, c2.UpdateOne(f2.view(), inc.view(), uo));
    if (a.modified_count != 1 || b.modified_count != 1) {
      return Status(ErrorCode::kInternalError, "a transaction statement modified nothing");
    }
    if (op.with_audit) {
      bson_t* d = bson_new();
      BSON_APPEND_UTF8(d, "agent", op.AgentId().c_str());
      BSON_APPEND_UTF8(d, "op", KeyString(op.key()).c_str());
      BSON_APPEND_UTF8(d, "kind", "txn");
      Document doc = Document::Adopt(d);
      WriteOptions w;
      w.txn = &t;
      w.context = op.StatementCtx();
      RETURN_IF_ERROR(db->GetCollection(layout.db, layout.colls[layout.audit_coll].name).InsertOne(doc.view(), w).status());
    }
    return Status::OK();
  });
}

}  // namespace

bool ResendOutcomeOk(const Op& op, Outcome o) {
  if (op.helper) return o == Outcome::kKeyReuse;
  if (op.is_txn()) {
    return o == Outcome::kReplayed || o == Outcome::kDeclined || o == Outcome::kLeaseHeld || o == Outcome::kTxnGaveUp;
  }
  return o == Outcome::kReplayed;
}

Document IdFilter(const std::string& id) {
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return Document::Adopt(f);
}

std::string Op::OpTaskId() const {
  return "r" + std::to_string(round) + ".a" + std::to_string(agent) + ".o" + std::to_string(n);
}

std::string Op::KeyedTaskId() const {
  return "r" + std::to_string(round) + ".a" + std::to_string(agent) + ".t" + std::to_string(n / kOpsPerTask);
}

WriteContext Op::WriteCtx() const {
  WriteContext c;
  c.agent_id = AgentId();
  c.source = source;
  if (keyed) {
    c.task_id = KeyedTaskId();
    c.write_seq = n;
  } else {
    c.task_id = OpTaskId();
  }
  if (read_at_ms != 0) c.read_at_ms = read_at_ms;
  return c;
}

WriteContext Op::StatementCtx() const {
  WriteContext c;
  c.agent_id = AgentId();
  c.source = source;
  c.task_id = OpTaskId();
  return c;
}

WriteContext Op::CommitCtx() const {
  WriteContext c;
  c.agent_id = AgentId();
  c.task_id = KeyedTaskId();
  c.write_seq = n;
  return c;
}

std::string Op::OwnerValue() const { return OwnerValueOf(key()); }

std::string OwnerValueOf(uint64_t key) { return "w:" + KeyString(key); }

int ExpectedEventsOf(OpKind kind, bool with_audit) {
  switch (kind) {
    case OpKind::kUpdate:
    case OpKind::kAuditInsert:
      return 1;
    case OpKind::kAppendOnlyWrite:
      return 0;
    case OpKind::kTransfer:
      return 2;
    case OpKind::kTxnPair:
      return with_audit ? 3 : 2;
  }
  return 0;
}

std::string KeyString(uint64_t key) {
  return "r" + std::to_string(key >> 48) + ".a" + std::to_string((key >> 32) & 0xffff) + ".o" +
         std::to_string(key & 0xffffffffu);
}

std::optional<uint64_t> ParseOpKey(const std::string& task_id, std::optional<int64_t> write_seq) {
  unsigned round = 0, agent = 0, num = 0;
  char kind = 0;
  int used = 0;
  if (std::sscanf(task_id.c_str(), "r%u.a%u.%c%u%n", &round, &agent, &kind, &num, &used) != 4 ||
      used != static_cast<int>(task_id.size()) || round > 0xffff || agent > 0xffff) {
    return std::nullopt;
  }
  if (kind == 'o' && !write_seq) return Op::MakeKey(round, agent, num);
  if (kind == 't' && write_seq && *write_seq >= 0 && *write_seq <= 0xffffffffLL &&
      static_cast<uint64_t>(*write_seq) / kOpsPerTask == num) {
    return Op::MakeKey(round, agent, static_cast<uint32_t>(*write_seq));
  }
  return std::nullopt;
}

std::string Op::Serialize() const {
  std::ostringstream o;
  o << static_cast<int>(kind) << ' ' << round << ' ' << agent << ' ' << n << ' ' << keyed << ' '
    << (source.empty() ? "-" : source) << ' ' << read_at_ms << ' ' << coll << ' ' << doc << ' ' << gated << ' '
    << basis << ' ' << helper << ' ' << helper_max_attempts << ' ' << inc_own << ' ' << inc_shared << ' ' << set_own
    << ' ' << set_owner << ' ' << ao_mode << ' ' << explicit_id << ' ' << from << ' ' << to << ' ' << amount << ' '
    << lock_read << ' ' << coll2 << ' ' << doc2 << ' ' << with_audit << ' ' << txn_think_us;
  return o.str();
}

std::optional<Op> Op::Parse(const std::string& text) {
  std::istringstream in(text);
  Op op;
  int kind = 0;
  in >> kind >> op.round >> op.agent >> op.n >> op.keyed >> op.source >> op.read_at_ms >> op.coll >> op.doc >>
      op.gated >> op.basis >> op.helper >> op.helper_max_attempts >> op.inc_own >> op.inc_shared >> op.set_own >>
      op.set_owner >> op.ao_mode >> op.explicit_id >> op.from >> op.to >> op.amount >> op.lock_read >> op.coll2 >>
      op.doc2 >> op.with_audit >> op.txn_think_us;
  if (!in || kind < 1 || kind > 5) return std::nullopt;
  op.kind = static_cast<OpKind>(kind);
  if (op.source == "-") op.source.clear();
  return op;
}

std::string Op::Describe(const Layout& layout) const {
  std::string s = KeyString(key()) + (keyed ? " (key " + KeyedTaskId() + "#" + std::to_string(n) + ")" : "");
  auto coll_name = [&](int c) { return c >= 0 && c < static_cast<int>(layout.colls.size()) ? layout.colls[c].name : "?"; };
  switch (kind) {
    case OpKind::kUpdate:
      s += " update " + coll_name(coll) + "/" + Layout::DocId(doc);
      if (helper) s += " via WriteWithVersionGate";
      if (gated) s += " basis " + std::to_string(basis);
      break;
    case OpKind::kAuditInsert:
      s += " audit insert into " + coll_name(coll);
      break;
    case OpKind::kAppendOnlyWrite:
      s += " update/delete in appendOnly " + coll_name(coll);
      break;
    case OpKind::kTransfer:
      s += " transfer " + std::to_string(amount) + " " + Layout::AccountId(from) + " -> " + Layout::AccountId(to);
      break;
    case OpKind::kTxnPair:
      s += " txn pair " + coll_name(coll) + "/" + Layout::DocId(doc) + " + " + coll_name(coll2) + "/" +
           Layout::DocId(doc2);
      break;
  }
  return s;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kCommitted: return "committed";
    case Outcome::kReplayed: return "replayed";
    case Outcome::kConflict: return "conflict";
    case Outcome::kLeaseHeld: return "leaseHeld";
    case Outcome::kLockTimeout: return "lockTimeout";
    case Outcome::kAppendOnlyRefused: return "appendOnlyRefused";
    case Outcome::kKeyReuse: return "keyReuse";
    case Outcome::kDeclined: return "declined";
    case Outcome::kTxnGaveUp: return "txnGaveUp";
    case Outcome::kError: return "error";
  }
  return "?";
}

std::string OpResult::Serialize() const {
  return std::to_string(static_cast<int>(outcome)) + " " + std::to_string(conflicts) + " " +
         std::to_string(stale_basis) + " " + std::to_string(attempts);
}

std::optional<OpResult> OpResult::Parse(const std::string& text) {
  std::istringstream in(text);
  OpResult r;
  int outcome = -1;
  in >> outcome >> r.conflicts >> r.stale_basis >> r.attempts;
  if (!in || outcome < 0 || outcome > static_cast<int>(Outcome::kError)) return std::nullopt;
  r.outcome = static_cast<Outcome>(outcome);
  return r;
}

OpResult ExecuteOp(Database* db, const Layout& layout, const Op& op, bool sync, const ReadObserver& observer) {
  switch (op.kind) {
    case OpKind::kUpdate: return ExecUpdate(db, layout, op, sync, observer);
    case OpKind::kAuditInsert: return ExecAuditInsert(db, layout, op, sync);
    case OpKind::kAppendOnlyWrite: return ExecAppendOnlyWrite(db, layout, op, sync);
    case OpKind::kTransfer: return ExecTransfer(db, layout, op, sync);
    case OpKind::kTxnPair: return ExecTxnPair(db, layout, op, sync);
  }
  return Error(op, layout, "unknown operation kind");
}

}  // namespace sim
}  // namespace gatedb
