#include "tests/sim/sim_check.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace gatedb {
namespace sim {

namespace {

std::optional<std::string> SubStr(const bson_t* doc, const char* path) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &f) || !BSON_ITER_HOLDS_UTF8(&f)) {
    return std::nullopt;
  }
  return std::string(bson_iter_utf8(&f, nullptr));
}

std::optional<int64_t> SubInt(const bson_t* doc, const char* path) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &f) || !BSON_ITER_HOLDS_NUMBER(&f)) {
    return std::nullopt;
  }
  return bson_iter_as_int64(&f);
}

bool BoolField(const bson_t* doc, const char* key) {
  bson_iter_t it;
  return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_BOOL(&it) && bson_iter_bool(&it);
}

// "d12" -> 12 (with prefix "d"); -1 when it is not one of ours.
int IndexOf(const std::optional<std::string>& id, const char* prefix, int limit) {
  if (!id) return -1;
  size_t plen = std::char_traits<char>::length(prefix);
  if (id->size() <= plen || id->compare(0, plen, prefix) != 0) return -1;
  int n = 0;
  for (size_t i = plen; i < id->size(); ++i) {
    char ch = (*id)[i];
    if (ch < '0' || ch > '9' || n > 100000000) return -1;
    n = n * 10 + (ch - '0');
  }
  return n < limit ? n : -1;
}

// Two dotted paths overlap when equal or one is a parent of the other.
bool Overlap(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return true;  // "" is the whole document
  const std::string& s = a.size() < b.size() ? a : b;
  const std::string& l = a.size() < b.size() ? b : a;
  return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '.');
}

// Fields only ever changed with $inc: what mergeIncrements lets merge.
bool IncOnlyField(const std::string& p) {
  return p == "shared" || p.compare(0, 2, "c_") == 0 || p.compare(0, 3, "tx_") == 0;
}

std::string Where(const std::string& ns, const std::string& id_json) { return ns + " _id " + id_json; }

}  // namespace

Status ScanJournal(Database* db, const Model& model, JournalFacts* f, Violations* v) {
  const Layout& L = model.layout();
  const size_t K = L.colls.size();
  f->coll_conflicts.assign(K, 0);
  f->coll_gated_writes.assign(K, 0);
  f->coll_merges.assign(K, 0);
  f->doc_version.assign(K, {});
  f->last_owner.assign(K, {});
  struct DocTrack {
    std::map<std::string, int64_t> changed;  // path -> version it last changed at
    std::string last_source;
  };
  std::vector<std::vector<DocTrack>> track(K);
  for (int c : L.counter_colls) {
    f->doc_version[c].assign(L.docs, -1);
    f->last_owner[c].assign(L.docs, std::nullopt);
    track[c].resize(L.docs);
  }
  f->account_version.assign(L.accounts, -1);
  std::unordered_map<std::string, int64_t> audit_version;
  // Non-empty lease intervals per document, by v0.  (Legitimate ones never
  // overlap: nobody else writes while one is held.)
  std::map<std::pair<int, int>, std::vector<LeaseInterval>> leases;
  for (const LeaseInterval& l : model.leases()) {
    if (l.v1 > l.v0) leases[{l.coll, l.doc}].push_back(l);
  }
  for (auto& [doc, list] : leases) {
    std::sort(list.begin(), list.end(), [](const LeaseInterval& a, const LeaseInterval& b) { return a.v0 < b.v0; });
  }

  uint64_t after = 0;
  int64_t expect_seq = 1;
  while (true) {
    JournalQuery q;
    q.after_seq = after;
    q.limit = 1000;
    ASSIGN_OR_RETURN(JournalBatch batch, db->ReadJournal(q));
    for (const Document& ev : batch.events) {
      const bson_t* e = ev.bson();
      auto seq = IntField(e, "seq");
      ++f->invariants;
      if (!seq || *seq != expect_seq) {
        v->Add("journal gap: expected seq " + std::to_string(expect_seq) + ", read " + ev.ToJson());
      }
      if (seq) expect_seq = *seq + 1;
      ++f->events;
      std::string op = StrField(e, "op").value_or("");
      std::string ns = StrField(e, "ns").value_or("");
      // Only audit entries (ObjectIds) and messages need the _id as JSON.
      auto id_json = [e] { return ValueJson(e, "_id"); };
      std::string task = SubStr(e, "writeContext.taskId").value_or("");
      std::string agent = SubStr(e, "writeContext.agentId").value_or("");
      std::string source = SubStr(e, "writeContext.source").value_or("");
      std::optional<int64_t> write_seq = SubInt(e, "writeContext.writeSeq");
      int c = L.CollIndex(ns);
      bool acct = L.IsAccountsNs(ns);
      if (op == "conflict" && StrField(e, "code").value_or("") == "Unauthorized") {
        // A write refused by permissions changed nothing and belongs to no
        // operation of the model; gatedb_sim counts them against its intruders.
        ++f->unauthorized[agent];
        ++f->invariants;
        if (BoolField(e, "gated") && !IntField(e, "basisVersion")) v->Add("malformed refusal event: " + ev.ToJson());
        continue;
      }
      if (c < 0 && !acct) {
        v->Add("journal event of an unknown namespace: " + ev.ToJson());
        continue;
      }
      bool setup = task == "setup";
      std::optional<uint64_t> key = setup ? std::nullopt : ParseOpKey(task, write_seq);
      ++f->invariants;
      if (!setup && !key) {
        v->Add("journal event names no operation (writeContext lost?): " + ev.ToJson());
        continue;
      }
      if (key && agent != Layout::AgentId(static_cast<int>((*key >> 32) & 0xffff))) {
        v->Add("journal event's agentId does not match its task: " + ev.ToJson());
      }
      JournalFacts::PerOp* po = key ? &f->per_op[*key] : nullptr;
      if (setup) ++f->setup_events;

      // The document's version chain.
      int64_t* version = nullptr;
      DocTrack* tr = nullptr;
      int doc = -1;
      if (acct) {
        int a = IndexOf(StrField(e, "_id"), "acct", L.accounts);
        if (a >= 0) version = &f->account_version[a];
      } else if (L.colls[c].counter()) {
        doc = IndexOf(StrField(e, "_id"), "d", L.docs);
        if (doc >= 0) {
          version = &f->doc_version[c][doc];
          tr = &track[c][doc];
        }
      } else {
        version = &audit_version.try_emplace(id_json(), -1).first->second;
      }
      if (version == nullptr) {
        v->Add("journal event for a document the simulation never made: " + ev.ToJson());
        continue;
      }
      auto before = IntField(e, "versionBefore");
      auto after_v = IntField(e, "versionAfter");
      auto basis = IntField(e, "basisVersion");
      bool gated = BoolField(e, "gated");

      if (op == "conflict") {
        if (po) ++po->conflicts;
        if (c >= 0) ++f->coll_conflicts[c];
        std::string code = StrField(e, "code").value_or("");
        f->invariants += 2;
        if (!gated || !before || !after_v || *before != *after_v || !basis) {
          v->Add("malformed conflict event: " + ev.ToJson());
        } else if (code == "VersionConflict") {
          // Refused under the document's lock: it names the version then,
          // which no later event has changed yet.
          if (*before != *version) {
            v->Add("conflict event at version " + std::to_string(*before) + " but " + Where(ns, id_json()) +
                   " is at " + std::to_string(*version) + " in the journal: " + ev.ToJson());
          }
          if (*basis >= *before) v->Add("conflict event for a basis that was not stale: " + ev.ToJson());
        } else if (code == "StaleBasis") {
          if (*before > *version) v->Add("StaleBasis event from a future version: " + ev.ToJson());
        } else {
          v->Add("conflict event with code '" + code + "': " + ev.ToJson());
        }
        continue;
      }

      if (po) {
        ++po->writes;
        if (gated) ++po->gated;
        auto txn = StrField(e, "txn");
        if (txn) {
          ++po->txn_events;
          if (po->txn_id.empty()) {
            po->txn_id = *txn;
          } else if (po->txn_id != *txn) {
            ++f->invariants;
            v->Add("one operation's events belong to two transactions (" + po->txn_id + ", " + *txn +
                   "): " + ev.ToJson());
          }
        }
      }
      ++f->invariants;
      if (op == "insert") {
        if (*version != -1 || before || !after_v || *after_v != 0) {
          v->Add("insert event breaks the version chain of " + Where(ns, id_json()) + " (at " +
                 std::to_string(*version) + "): " + ev.ToJson());
        }
        *version = 0;
      } else if (op == "update") {
        if (!before || !after_v || *before != *version || *after_v != *version + 1) {
          v->Add("update event breaks the version chain of " + Where(ns, id_json()) + " (at " +
                 std::to_string(*version) + "): " + ev.ToJson());
        }
        *version = *version + 1;
      } else {
        v->Add("journal event '" + op + "' the simulation never makes: " + ev.ToJson());
        continue;
      }
      if (gated && c >= 0) ++f->coll_gated_writes[c];
      if (tr == nullptr) continue;

      // The policy's decision on a stale write it let through.
      std::vector<std::string> changed = StrArray(e, "changedPaths");
      bool merged = BoolField(e, "merged");
      if (gated && basis && before) {
        f->invariants += 2;
        if (*basis > *before) {
          v->Add("a write based on a future version went through: " + ev.ToJson());
        } else if (*basis < *before) {
          ++f->coll_merges[c];
          ++f->merges;
          if (!merged) v->Add("a stale write went through without merged: true: " + ev.ToJson());
          const CollSpec& spec = L.colls[c];
          if (spec.merges()) {
            for (const std::string& p : changed) {
              if (spec.policy == Policy::kFieldMergeInc && IncOnlyField(p)) continue;
              for (const auto& [q, at] : tr->changed) {
                if (at > *basis && Overlap(p, q)) {
                  v->Add("fieldMerge let a stale write change '" + p + "', which changed at version " +
                         std::to_string(at) + " after its basis " + std::to_string(*basis) + ": " + ev.ToJson());
                }
              }
            }
          } else if (spec.policy == Policy::kSourcePriority) {
            if (!(SourceRank(source) < SourceRank(tr->last_source))) {
              v->Add("sourcePriority let '" + source + "' overwrite stale over last writer '" + tr->last_source +
                     "': " + ev.ToJson());
            }
          } else {
            v->Add(std::string(PolicyName(spec.policy)) + " let a stale write through: " + ev.ToJson());
          }
        } else if (merged) {
          v->Add("merged: true on a write at its basis: " + ev.ToJson());
        }
      } else if (merged) {
        v->Add("merged: true on an ungated write: " + ev.ToJson());
      }
      for (const std::string& p : changed) {
        tr->changed[p] = *version;
        if (p == "owner") f->last_owner[c][doc] = key;
      }
      tr->last_source = source;

      // Leases: inside an interval only the holder writes.
      auto lit = leases.find({c, doc});
      if (lit != leases.end()) {
        const std::vector<LeaseInterval>& list = lit->second;
        auto next = std::upper_bound(list.begin(), list.end(), *version - 1,
                                     [](int64_t ver, const LeaseInterval& l) { return ver < l.v0; });
        if (next != list.begin()) {
          const LeaseInterval& l = *(next - 1);
          ++f->invariants;
          if (*version > l.v0 && *version <= l.v1 && agent != Layout::AgentId(l.agent)) {
            v->Add("lease held by " + Layout::AgentId(l.agent) + " over versions (" + std::to_string(l.v0) + ", " +
                   std::to_string(l.v1) + "] of " + Where(ns, id_json()) + ", but '" + agent + "' wrote version " +
                   std::to_string(*version) + ": " + ev.ToJson());
          }
        }
      }
    }
    if (batch.events.empty() || batch.next_after_seq >= batch.last_seq) {
      f->last_seq = batch.last_seq;
      break;
    }
    after = batch.next_after_seq;
  }
  ++f->invariants;
  if (static_cast<uint64_t>(expect_seq - 1) != f->last_seq) {
    v->Add("journal read ended at seq " + std::to_string(expect_seq - 1) + " but lastSeq is " +
           std::to_string(f->last_seq));
  }
  return Status::OK();
}

namespace {

class Checker {
 public:
  Checker(Database* db, const Model& model, Violations* v) : db_(db), m_(model), L_(model.layout()), v_(v) {}

  void Expect(bool ok, const std::string& what) {
    ++invariants_;
    if (!ok) v_->Add(what);
  }

  void Documents(const JournalFacts& f) {
    for (int c : L_.counter_colls) {
      const std::string& name = L_.colls[c].name;
      auto docs = db_->GetCollection(L_.db, name).Find(Document().view());
      if (!docs.ok()) {
        v_->Add("cannot read " + name + ": " + docs.status().ToString());
        continue;
      }
      std::vector<bool> seen(L_.docs, false);
      for (const Document& d : *docs) {
        const bson_t* b = d.bson();
        int doc = IndexOf(StrField(b, "_id"), "d", L_.docs);
        if (doc < 0 || seen[doc]) {
          v_->Add(name + " holds a document the simulation never made (or twice): " + d.ToJson());
          continue;
        }
        seen[doc] = true;
        std::string where = name + "/" + Layout::DocId(doc);
        Expect(IntField(b, "version").value_or(-2) == f.doc_version[c][doc],
               where + ": version " + ValueJson(b, "version") + " but the journal's chain ends at " +
                   std::to_string(f.doc_version[c][doc]));
        Expect(IntField(b, "shared").value_or(-1) == m_.Shared(c, doc),
               "lost or duplicated update: " + where + " shared = " + ValueJson(b, "shared") + ", the agents " +
                   "committed increments summing to " + std::to_string(m_.Shared(c, doc)));
        for (int a = 0; a < L_.agents; ++a) {
          std::string cf = "c_" + Layout::AgentId(a), tf = "tx_" + Layout::AgentId(a), sf = "s_" + Layout::AgentId(a);
          Expect(IntField(b, cf.c_str()).value_or(0) == m_.OwnCounter(c, doc, a),
                 "lost or duplicated update: " + where + " " + cf + " = " + ValueJson(b, cf.c_str()) +
                     ", committed increments sum to " + std::to_string(m_.OwnCounter(c, doc, a)));
          Expect(IntField(b, tf.c_str()).value_or(0) == m_.TxnCounter(c, doc, a),
                 "lost or duplicated transaction write: " + where + " " + tf + " = " + ValueJson(b, tf.c_str()) +
                     ", committed transactions: " + std::to_string(m_.TxnCounter(c, doc, a)));
          int64_t want = m_.OwnSet(c, doc, a);
          auto got = IntField(b, sf.c_str());
          Expect(want < 0 ? !got : got && *got == want,
                 "lost merged field: " + where + " " + sf + " = " + (got ? ValueJson(b, sf.c_str()) : "missing") +
                     ", the agent's last committed $set wrote " + (want < 0 ? "nothing" : KeyString(want)));
        }
        auto owner = StrField(b, "owner");
        const std::optional<uint64_t>& last = f.last_owner[c][doc];
        Expect(last ? owner && *owner == OwnerValueOf(*last) : !owner,
               where + " owner = " + owner.value_or("missing") + ", but the last journal event changing it is " +
                   (last ? KeyString(*last) : "none"));
        bson_iter_t it;
        bson_iter_init(&it, b);
        while (bson_iter_next(&it)) {
          std::string k = bson_iter_key(&it);
          bool known = k == "_id" || k == "version" || k == "shared" || k == "owner";
          for (const char* p : {"c_a", "tx_a", "s_a"}) {
            size_t pl = std::char_traits<char>::length(p);
            if (k.compare(0, pl, p) == 0 && IndexOf(k.substr(pl - 1), "a", L_.agents) >= 0) known = true;
          }
          Expect(known, where + " has a field no agent writes: " + k);
        }
      }
      for (int doc = 0; doc < L_.docs; ++doc) Expect(seen[doc], name + "/" + Layout::DocId(doc) + " is missing");
    }
  }

  void Accounts(const JournalFacts& f) {
    auto docs = db_->GetCollection(L_.db, L_.accounts_name).Find(Document().view());
    if (!docs.ok()) {
      v_->Add("cannot read accounts: " + docs.status().ToString());
      return;
    }
    int64_t total = 0;
    std::vector<bool> seen(L_.accounts, false);
    for (const Document& d : *docs) {
      const bson_t* b = d.bson();
      int a = IndexOf(StrField(b, "_id"), "acct", L_.accounts);
      if (a < 0 || seen[a]) {
        v_->Add("accounts holds an unknown document: " + d.ToJson());
        continue;
      }
      seen[a] = true;
      int64_t bal = IntField(b, "bal").value_or(INT64_MIN);
      total += bal;
      Expect(bal == m_.Balance(a), "transfer lost or doubled: " + Layout::AccountId(a) + " bal = " +
                                       std::to_string(bal) + ", committed transfers leave " +
                                       std::to_string(m_.Balance(a)));
      Expect(bal >= 0, "negative balance (write skew?): " + d.ToJson());
      Expect(IntField(b, "version").value_or(-2) == f.account_version[a],
             Layout::AccountId(a) + " version does not match its journal chain: " + d.ToJson());
    }
    for (int a = 0; a < L_.accounts; ++a) Expect(seen[a], Layout::AccountId(a) + " is missing");
    Expect(total == L_.initial_balance * L_.accounts,
           "transaction totals not conserved: balances sum to " + std::to_string(total) + ", not " +
               std::to_string(L_.initial_balance * L_.accounts));
  }

  void Audit() {
    if (L_.audit_coll < 0) return;
    std::map<std::string, int> expected;
    for (const auto& [key, st] : m_.ops()) {
      if (st.commits > 0 && (st.kind == OpKind::kAuditInsert || (st.kind == OpKind::kTxnPair && st.with_audit))) {
        expected[KeyString(key)] = 0;
      }
    }
    for (const CollSpec& spec : L_.colls) {
      if (spec.policy != Policy::kAppendOnly) continue;
      auto docs = db_->GetCollection(L_.db, spec.name).Find(Document().view());
      if (!docs.ok()) {
        v_->Add("cannot read " + spec.name + ": " + docs.status().ToString());
        continue;
      }
      for (const Document& d : *docs) {
        const bson_t* b = d.bson();
        Expect(IntField(b, "version").value_or(-1) == 0 && !IntField(b, "tampered"),
               "an appendOnly entry was changed: " + d.ToJson());
        auto op = StrField(b, "op").value_or("?");
        auto it = expected.find(op);
        if (it == expected.end() || &spec != &L_.colls[L_.audit_coll]) {
          v_->Add(spec.name + " holds an entry of an operation that never committed: " + d.ToJson());
          continue;
        }
        ++it->second;
      }
    }
    for (const auto& [op, n] : expected) {
      Expect(n == 1, "audit entry of committed " + op + " present " + std::to_string(n) + " times");
    }
  }

  void Operations(const JournalFacts& f) {
    int64_t setup = static_cast<int64_t>(L_.counter_colls.size()) * L_.docs + L_.accounts;
    Expect(f.setup_events == setup,
           "setup inserts in the journal: " + std::to_string(f.setup_events) + ", made " + std::to_string(setup));
    for (const auto& [key, st] : m_.ops()) {
      auto it = f.per_op.find(key);
      JournalFacts::PerOp none;
      const JournalFacts::PerOp& po = it == f.per_op.end() ? none : it->second;
      int want = st.commits > 0 ? st.ExpectedEvents() : 0;
      std::string name = KeyString(key);
      if (st.commits > 0) {
        Expect(po.writes == want, "committed " + name + " has " + std::to_string(po.writes) +
                                      " journal write events, expected " + std::to_string(want) +
                                      (po.writes > want ? " (applied twice?)" : " (lost or half-applied)"));
      } else {
        Expect(po.writes == 0, name + " was never acknowledged as committed but has " + std::to_string(po.writes) +
                                   " journal write events");
      }
      Expect(po.conflicts == st.conflicts, name + ": the agent saw " + std::to_string(st.conflicts) +
                                               " refused attempts, the journal holds " +
                                               std::to_string(po.conflicts) + " conflict events");
      bool txn = st.kind == OpKind::kTransfer || st.kind == OpKind::kTxnPair;
      Expect(po.txn_events == (txn ? po.writes : 0),
             name + ": " + std::to_string(po.txn_events) + " of its " + std::to_string(po.writes) +
                 " events carry a txn id");
      Expect(po.gated == (st.gated ? po.writes : 0),
             name + ": " + std::to_string(po.gated) + " of its " + std::to_string(po.writes) + " events are gated");
    }
    for (const auto& [key, po] : f.per_op) {
      if (m_.ops().count(key) != 0) continue;
      Expect(po.writes == 0 && po.conflicts == 0,
             "the journal holds " + std::to_string(po.writes) + " write and " + std::to_string(po.conflicts) +
                 " conflict events of " + KeyString(key) + ", which no agent saw commit or refused");
    }
  }

  void Conflicts(const JournalFacts& f) {
    for (size_t c = 0; c < L_.colls.size(); ++c) {
      const std::string& name = L_.colls[c].name;
      int64_t conflicts = m_.CollConflicts(static_cast<int>(c));
      int64_t commits = m_.CollGatedCommits(static_cast<int>(c));
      Expect(f.coll_conflicts[c] == conflicts, name + ": " + std::to_string(f.coll_conflicts[c]) +
                                                   " conflict events, the agents saw " + std::to_string(conflicts) +
                                                   " refused attempts");
      Expect(f.coll_gated_writes[c] == commits, name + ": " + std::to_string(f.coll_gated_writes[c]) +
                                                    " gated write events, the agents committed " +
                                                    std::to_string(commits));
      auto stats = db_->GetConflictStats(L_.db, name);
      if (!stats.ok()) {
        v_->Add("GetConflictStats(" + name + "): " + stats.status().ToString());
        continue;
      }
      Expect(stats->conflicts == conflicts, name + ": conflictStats counts " + std::to_string(stats->conflicts) +
                                                " conflicts, the agents saw " + std::to_string(conflicts));
      Expect(stats->gated_writes == conflicts + commits,
             name + ": conflictStats counts " + std::to_string(stats->gated_writes) + " gated writes, the agents made " +
                 std::to_string(conflicts + commits));
    }
  }

  void Idempotency(size_t max_tasks) {
    // Every task, or an even sample of them across the whole run.
    const auto& all = m_.keyed_commits();
    size_t stride = max_tasks == 0 ? 0 : (all.size() + max_tasks - 1) / max_tasks;
    size_t i = 0;
    for (const auto& [task, seqs] : all) {
      if (stride == 0 || i++ % stride != 0) continue;
      auto stored = db_->IdempotencyStatus(task);
      if (!stored.ok()) {
        v_->Add("IdempotencyStatus(" + task + "): " + stored.status().ToString());
        continue;
      }
      std::set<int64_t> got;
      for (const auto& w : *stored) got.insert(w.write_seq);
      std::string want_s, got_s;
      for (int64_t s : seqs) want_s += " " + std::to_string(s);
      for (int64_t s : got) got_s += " " + std::to_string(s);
      Expect(got == seqs, "idempotency log of task " + task + " holds writeSeqs [" + got_s +
                              " ], the committed keyed writes are [" + want_s + " ]");
    }
  }

  int64_t invariants() const { return invariants_; }

 private:
  Database* db_;
  const Model& m_;
  const Layout& L_;
  Violations* v_;
  int64_t invariants_ = 0;
};

}  // namespace

CheckResult CheckAll(Database* db, const Model& model, const CheckOptions& options, Violations* v,
                     const JournalFacts* scanned) {
  CheckResult out;
  if (scanned != nullptr) {
    out.facts = *scanned;
    out.facts.invariants = 0;  // counted by the caller's scan
  } else {
    Status s = ScanJournal(db, model, &out.facts, v);
    if (!s.ok()) {
      v->Add("cannot read the journal: " + s.ToString());
      return out;
    }
  }
  Checker c(db, model, v);
  c.Documents(out.facts);
  c.Accounts(out.facts);
  c.Audit();
  c.Operations(out.facts);
  c.Conflicts(out.facts);
  c.Idempotency(options.idempotency_tasks);
  out.invariants = out.facts.invariants + c.invariants();
  return out;
}

}  // namespace sim
}  // namespace gatedb
