// gatedb_crash: the kill -9 crash driver.  Each round it starts itself as
// a child process (posix_spawn of /proc/self/exe --child: no fork of a
// multithreaded parent) that runs the simulator's agents with durable
// writes (Options::sync) on one data directory, and kills it with SIGKILL
// at a random moment.  The child logs every operation to an append-only
// acknowledgement file, one write(2) per line:
//
//   I <op>             before the operation's first execution
//   O <key> <result>   after each execution returned (the write call came
//                      back; "committed" only when it came back OK)
//   E <key>            after its last execution
//   L <lease interval> after a completed lease session
//
// The parent then reopens the database and checks what must hold across a
// crash: every acknowledged write is present, each counter lies between the
// acknowledged increments and those plus the in-flight operations' (at most
// one per agent), versions chain without a gap, no operation applied twice,
// totals are conserved; it resolves the in-flight operations from the
// journal, runs the whole checker (sim_check.h), re-sends the in-flight
// keyed operations (each must apply at most once: a replay when it had
// committed), and checks again.  The next round continues on the same data
// directory with a fresh seed derived from --seed.
//
//   gatedb_crash --seed 7 --rounds 20
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/sim/sim_agent.h"
#include "tests/sim/sim_check.h"
#include "tests/sim/sim_config.h"
#include "tests/sim/sim_model.h"
#include "tests/sim/sim_ops.h"
#include "tests/sim/sim_util.h"

extern char** environ;

namespace gatedb {
namespace sim {
namespace {

struct CrashFlags {
  int rounds = 20;
  std::string dir;
  bool keep = false;
  int64_t kill_min_ms = 50;
  int64_t kill_max_ms = 600;
  // Rounds whose child is killed while it opens (recovers) the store.
  double kill_in_open_rate = 0.1;
  // Child mode (internal).
  bool child = false;
  std::string ack;
  int round = 0;
  int64_t child_max_seconds = 120;
};

// ---- the child ----

class AckLogSink : public Sink {
 public:
  explicit AckLogSink(int fd) : fd_(fd) {}
  void Begin(const Op& op) override { Line("I " + op.Serialize()); }
  void Executed(const Op& op, const OpResult& r) override {
    Line("O " + std::to_string(op.key()) + " " + r.Serialize());
  }
  void End(const Op& op) override { Line("E " + std::to_string(op.key())); }
  void Lease(const LeaseInterval& l) override { Line("L " + l.Serialize()); }
  void Ready() { Line("READY"); }

 private:
  // One write(2) per line on an O_APPEND descriptor: lines of concurrent
  // agents never interleave, and a line is in the page cache (so survives
  // the kill) once the call returns.
  void Line(std::string s) {
    s += '\n';
    if (write(fd_, s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(3);
  }
  int fd_;
};

int ChildMain(const SimConfig& cfg, const CrashFlags& cf) {
  int fd = open(cf.ack.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror("gatedb_crash child: open ack log");
    return 3;
  }
  std::string error;
  auto think = ThinkDist::Parse(cfg.think, &error);
  if (!think) return 3;
  Options o;
  o.sync = true;  // durable: an acknowledged write must survive the kill
  auto db = Database::Open(cf.dir, o);
  if (!db.ok()) {
    std::fprintf(stderr, "gatedb_crash child: open %s: %s\n", cf.dir.c_str(), db.status().ToString().c_str());
    return 3;
  }
  Layout layout = Layout::Make(cfg);
  Violations v;
  v.set_context("child of round " + std::to_string(cf.round));
  SimStats stats;
  AckLogSink sink(fd);
  std::vector<std::unique_ptr<Agent>> agents;
  for (int a = 0; a < cfg.agents; ++a) {
    // The agents do not know their own fields' values from previous
    // rounds: they learn them from their first read.
    agents.push_back(
        std::make_unique<Agent>(a, cf.round, cfg.seed, layout, cfg, *think, false, &sink, &stats, &v));
  }
  sink.Ready();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& agent : agents) threads.emplace_back([&, a = agent.get()] { a->Run(db->get(), stop, 0); });
  int64_t start = SteadyMs();
  pid_t parent = getppid();
  while (true) {
    SleepMicros(10000);
    // An online violation (an agent's own fields) ends the child: the
    // parent reports it.
    if (v.count() > 0) {
      std::fflush(stderr);
      _exit(2);
    }
    if (getppid() != parent) _exit(5);  // the driver is gone
    if (SteadyMs() - start > cf.child_max_seconds * 1000) _exit(4);
  }
}

// ---- the parent ----

struct RoundLog {
  bool ready = false;
  int64_t ops_done = 0;
  std::map<uint64_t, Op> in_flight;  // I without E
};

void ParseAckLog(const std::string& path, const Layout& layout, Model* model, Violations* v, RoundLog* log) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  std::map<int, uint64_t> agent_pending;
  std::set<uint64_t> executed;  // operations with an O line: a second one is a lost-reply retry
  SimStats& st = model->stats;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a line the kill cut short: never acknowledged
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "READY") {
      log->ready = true;
      continue;
    }
    if (line.size() < 2) {
      v->Add("malformed ack line '" + line + "'");
      continue;
    }
    std::string rest = line.substr(2);
    switch (line[0]) {
      case 'I': {
        auto op = Op::Parse(rest);
        if (!op) {
          v->Add("malformed ack line '" + line + "'");
          break;
        }
        if (agent_pending.count(op->agent) != 0) {
          v->Add("agent " + op->AgentId() + " began " + op->Describe(layout) + " with another in flight");
        }
        agent_pending[op->agent] = op->key();
        log->in_flight[op->key()] = *op;
        st.ops++;
        if (op->keyed) st.keyed++;
        if (op->kind == OpKind::kUpdate) {
          st.updates++;
          if (op->gated_write()) st.gated++;
          if (op->helper) st.helper++;
        }
        if (op->kind == OpKind::kTransfer) st.transfers++;
        if (op->kind == OpKind::kTxnPair) st.txn_pairs++;
        if (op->kind == OpKind::kAuditInsert) st.audit_inserts++;
        break;
      }
      case 'O': {
        std::istringstream ks(rest);
        uint64_t key = 0;
        ks >> key;
        std::string result_text;
        std::getline(ks, result_text);
        auto r = OpResult::Parse(result_text);
        auto it = log->in_flight.find(key);
        if (!r || it == log->in_flight.end()) {
          v->Add("malformed or unmatched ack line '" + line + "'");
          break;
        }
        if (r->outcome == Outcome::kError) r->error = it->second.Describe(layout) + ": failed in the child";
        if (!executed.insert(key).second) st.lost_replies++;
        model->Record(it->second, *r, v);
        break;
      }
      case 'E': {
        uint64_t key = std::strtoull(rest.c_str(), nullptr, 10);
        auto it = log->in_flight.find(key);
        if (it == log->in_flight.end()) {
          v->Add("unmatched ack line '" + line + "'");
          break;
        }
        agent_pending.erase(it->second.agent);
        log->in_flight.erase(it);
        ++log->ops_done;
        break;
      }
      case 'L': {
        auto l = LeaseInterval::Parse(rest);
        if (!l) {
          v->Add("malformed ack line '" + line + "'");
        } else {
          model->RecordLease(*l);
          st.lease_sessions++;
        }
        break;
      }
      default:
        v->Add("malformed ack line '" + line + "'");
    }
  }
}

// Before the journal resolves them: every counter holds at least what was
// acknowledged and at most that plus the in-flight operations' share.
int64_t CheckBounds(Database* db, const Model& m, const std::vector<Op>& in_flight, Violations* v) {
  const Layout& L = m.layout();
  int64_t checked = 0;
  auto unacked = [&](const Op& op) {
    auto it = m.ops().find(op.key());
    return it == m.ops().end() || it->second.commits == 0;
  };
  for (int c : L.counter_colls) {
    auto docs = db->GetCollection(L.db, L.colls[c].name).Find(Document().view());
    if (!docs.ok()) {
      v->Add("cannot read " + L.colls[c].name + ": " + docs.status().ToString());
      continue;
    }
    for (const Document& d : *docs) {
      auto id = StrField(d.bson(), "_id");
      int doc = -1;
      for (int i = 0; i < L.docs; ++i) {
        if (id && *id == Layout::DocId(i)) doc = i;
      }
      if (doc < 0) continue;  // the full check reports it
      auto bound = [&](const std::string& field, int64_t lo, int64_t slack) {
        int64_t got = IntField(d.bson(), field.c_str()).value_or(0);
        ++checked;
        if (got < lo || got > lo + slack) {
          v->Add("after the crash " + L.colls[c].name + "/" + Layout::DocId(doc) + " " + field + " = " +
                 std::to_string(got) + ", outside [acknowledged " + std::to_string(lo) + ", + in flight " +
                 std::to_string(lo + slack) + "]");
        }
      };
      int64_t shared_slack = 0;
      for (int a = 0; a < L.agents; ++a) {
        int64_t c_slack = 0, tx_slack = 0;
        for (const Op& op : in_flight) {
          if (op.agent != a || !unacked(op)) continue;
          if (op.kind == OpKind::kUpdate && op.coll == c && op.doc == doc) c_slack += op.inc_own;
          if (op.kind == OpKind::kTxnPair && ((op.coll == c && op.doc == doc) || (op.coll2 == c && op.doc2 == doc))) {
            ++tx_slack;
          }
        }
        bound("c_" + Layout::AgentId(a), m.OwnCounter(c, doc, a), c_slack);
        bound("tx_" + Layout::AgentId(a), m.TxnCounter(c, doc, a), tx_slack);
      }
      for (const Op& op : in_flight) {
        if (op.kind == OpKind::kUpdate && op.coll == c && op.doc == doc && unacked(op)) shared_slack += op.inc_shared;
      }
      bound("shared", m.Shared(c, doc), shared_slack);
    }
  }
  auto accts = db->GetCollection(L.db, L.accounts_name).Find(Document().view());
  if (accts.ok()) {
    int64_t total = 0;
    for (const Document& d : *accts) {
      auto id = StrField(d.bson(), "_id");
      int64_t bal = IntField(d.bson(), "bal").value_or(0);
      total += bal;
      for (int a = 0; a < L.accounts; ++a) {
        if (!id || *id != Layout::AccountId(a)) continue;
        int64_t out = 0, in = 0;
        for (const Op& op : in_flight) {
          if (op.kind != OpKind::kTransfer || !unacked(op)) continue;
          if (op.from == a) out += op.amount;
          if (op.to == a) in += op.amount;
        }
        ++checked;
        if (bal < m.Balance(a) - out || bal > m.Balance(a) + in) {
          v->Add("after the crash " + *id + " bal = " + std::to_string(bal) + ", outside [" +
                 std::to_string(m.Balance(a) - out) + ", " + std::to_string(m.Balance(a) + in) + "]");
        }
      }
    }
    ++checked;
    if (total != L.initial_balance * L.accounts) {
      v->Add("after the crash the balances sum to " + std::to_string(total) + ", not " +
             std::to_string(L.initial_balance * L.accounts));
    }
  }
  return checked;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  buf[n] = '\0';
  return buf;
}

int ParentMain(int argc, char** argv, SimConfig cfg, CrashFlags cf) {
  if (cfg.seed == 0) cfg.seed = static_cast<uint64_t>(NowMs());
  bool made_dir = cf.dir.empty();
  if (made_dir) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gatedb_crash.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      std::perror("gatedb_crash: mkdtemp");
      return 2;
    }
    cf.dir = buf.data();
  } else {
    std::error_code ec;
    if (std::filesystem::exists(cf.dir, ec) && !std::filesystem::is_empty(cf.dir, ec)) {
      std::fprintf(stderr, "gatedb_crash: --dir %s is not empty (the model starts from a fresh database)\n",
                   cf.dir.c_str());
      return 2;
    }
  }
  std::string data = cf.dir + "/db";
  std::filesystem::create_directories(cf.dir + "/acks");
  std::string exe = SelfExe();
  std::string repro = std::string(argv[0]);
  for (const std::string& a : WorkloadArgs(cfg, false)) repro += " " + a;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", cf.kill_in_open_rate);
  repro += " --rounds=" + std::to_string(cf.rounds) + " --kill-in-open-rate=" + rate + " --kill-min-ms=" + std::to_string(cf.kill_min_ms) +
           " --kill-max-ms=" + std::to_string(cf.kill_max_ms);
  (void)argc;

  Layout layout = Layout::Make(cfg);
  std::printf("gatedb_crash: seed %llu, %d rounds, %d agents, %d docs x %zu collections, kill after %lld..%lld ms, %s\n",
              static_cast<unsigned long long>(cfg.seed), cf.rounds, cfg.agents, cfg.docs, layout.colls.size(),
              static_cast<long long>(cf.kill_min_ms), static_cast<long long>(cf.kill_max_ms), cf.dir.c_str());
  std::fflush(stdout);
  Violations v;
  Model model(layout);
  Options opts;
  opts.sync = true;
  {
    auto db = Database::Open(data, opts);
    if (!db.ok()) {
      std::fprintf(stderr, "gatedb_crash: open %s: %s\n", data.c_str(), db.status().ToString().c_str());
      return 2;
    }
    Status s = SetupDatabase(db->get(), layout);
    if (!s.ok()) {
      std::fprintf(stderr, "gatedb_crash: setup: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  Rng rng(MixSeed(cfg.seed, 0xc7a54));
  int64_t start = SteadyMs(), invariants = 0, merges = 0, events = 0;
  int failed_round = -1;
  std::string failed_child;
  for (int round = 0; round < cf.rounds && failed_round < 0; ++round) {
    v.set_context("round " + std::to_string(round));
    int64_t round_start = SteadyMs();
    SimConfig child_cfg = cfg;
    child_cfg.seed = MixSeed(cfg.seed, static_cast<uint64_t>(round) + 1);
    std::string ack = cf.dir + "/acks/round-" + std::to_string(round) + ".log";
    std::vector<std::string> args = {exe, "--child", "--dir=" + data, "--ack=" + ack, "--round=" + std::to_string(round)};
    for (const std::string& a : WorkloadArgs(child_cfg, false)) args.push_back(a);
    std::string child_cmd;
    for (const std::string& a : args) child_cmd += (child_cmd.empty() ? "" : " ") + a;
    std::vector<char*> cargv;
    for (std::string& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    // The child's stderr goes to a file beside its ack log: its online
    // violations are read back from there.
    std::string err = cf.dir + "/acks/round-" + std::to_string(round) + ".err";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      std::fprintf(stderr, "gatedb_crash: posix_spawn: %s\n", std::strerror(rc));
      return 2;
    }
    // Kill at a random moment after the child has opened the store, or
    // now and then while it opens it (RocksDB's recovery must survive a
    // kill too).
    bool in_open = rng.Chance(cf.kill_in_open_rate);
    int64_t delay = in_open ? rng.Range(0, 40) : rng.Range(cf.kill_min_ms, cf.kill_max_ms);
    int status = 0;
    bool exited = false;
    int64_t deadline = SteadyMs() + 60000;
    while (!in_open) {
      std::ifstream in(ack);
      std::string first;
      if (std::getline(in, first) && first == "READY") break;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      if (SteadyMs() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        std::fprintf(stderr, "gatedb_crash: the child never became ready\n");
        return 2;
      }
      SleepMicros(2000);
    }
    if (!exited) {
      int64_t until = SteadyMs() + delay;
      while (SteadyMs() < until) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
        SleepMicros(std::min<int64_t>(5000, (until - SteadyMs()) * 1000 + 1));
      }
    }
    if (!exited) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    int child_violations = 0;
    {
      std::ifstream errs(err);
      std::string line;
      while (std::getline(errs, line)) {
        if (line.rfind("VIOLATION: ", 0) == 0) {
          v.Add("in the child: " + line.substr(11));
          ++child_violations;
        } else if (!line.empty()) {
          std::fprintf(stderr, "child of round %d: %s\n", round, line.c_str());
        }
      }
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
      if (WIFSIGNALED(status)) {
        v.Add("the child died of signal " + std::to_string(WTERMSIG(status)) + " (its stderr: " + err + ")");
      } else if (WEXITSTATUS(status) != 2 || child_violations == 0) {
        v.Add("the child ended by itself with status " + std::to_string(WEXITSTATUS(status)) + " (its stderr: " +
              err + ")");
      }
      failed_round = round;
      failed_child = child_cmd;
      break;
    }

    RoundLog log;
    ParseAckLog(ack, layout, &model, &v, &log);
    std::vector<Op> in_flight;
    for (const auto& [key, op] : log.in_flight) in_flight.push_back(op);
    auto db = Database::Open(data, opts);
    if (!db.ok()) {
      v.Add("cannot reopen after the kill: " + db.status().ToString());
      failed_round = round;
      failed_child = child_cmd;
      break;
    }
    int64_t round_invariants = CheckBounds(db->get(), model, in_flight, &v);
    // The journal says which in-flight operations committed.
    JournalFacts facts;
    Status scan = ScanJournal(db->get(), model, &facts, &v);
    if (!scan.ok()) v.Add("cannot read the journal: " + scan.ToString());
    int applied = 0, resent = 0;
    for (const Op& op : in_flight) {
      auto it = facts.per_op.find(op.key());
      int writes = it == facts.per_op.end() ? 0 : it->second.writes;
      int conflicts = it == facts.per_op.end() ? 0 : it->second.conflicts;
      model.ResolveInFlight(op, writes > 0, conflicts, &v);
      if (writes > 0) ++applied;
    }
    CheckOptions co;
    CheckResult r1 = CheckAll(db->get(), model, co, &v, scan.ok() ? &facts : nullptr);
    // Re-send the in-flight keyed operations, as an agent resuming its
    // task would: each applies at most once.
    v.set_context("round " + std::to_string(round) + " re-sends");
    for (const Op& op : in_flight) {
      if (!op.keyed) continue;
      bool had_committed = false;
      auto it = model.ops().find(op.key());
      if (it != model.ops().end()) had_committed = it->second.commits > 0;
      OpResult r = ExecuteOp(db->get(), layout, op, true, nullptr);
      model.Record(op, r, &v);
      model.stats.inflight_retried++;
      ++resent;
      if (had_committed && r.outcome != Outcome::kError && !ResendOutcomeOk(op, r.outcome)) {
        v.Add("re-sending " + op.Describe(layout) + ", which committed before the kill, got " +
              OutcomeName(r.outcome) + " instead of its stored reply");
      }
    }
    round_invariants += facts.invariants + r1.invariants;
    merges = r1.facts.merges;
    events = r1.facts.events;
    if (resent > 0) {
      // (Nothing was sent otherwise: the store is as just checked.)
      v.set_context("round " + std::to_string(round) + " after re-sends");
      CheckResult r2 = CheckAll(db->get(), model, co, &v);
      round_invariants += r2.invariants;
      merges = r2.facts.merges;
      events = r2.facts.events;
    }
    db->reset();
    invariants += round_invariants;
    std::printf("round %3d: killed %s %4lld ms, %5lld ops acknowledged, %d in flight (%d had committed, %d re-sent), "
                "journal %lld events, %lld invariants, %.1f s%s\n",
                round, in_open ? "while opening, after" : "after", static_cast<long long>(delay),
                static_cast<long long>(log.ops_done),
                static_cast<int>(in_flight.size()), applied, resent, static_cast<long long>(events),
                static_cast<long long>(round_invariants), (SteadyMs() - round_start) / 1000.0,
                v.count() > 0 ? "  VIOLATIONS" : "");
    std::fflush(stdout);
    if (v.count() > 0) {
      failed_round = round;
      failed_child = child_cmd;
    }
  }
  std::printf("gatedb_crash: %.1f s\n", (SteadyMs() - start) / 1000.0);
  std::printf("%s", FormatStats(model.stats, merges).c_str());
  std::printf("  invariants      %lld checked\n", static_cast<long long>(invariants));
  if (v.count() > 0) {
    std::printf("gatedb_crash: FAILED in round %d with %lld violations; the first:\n", failed_round,
                static_cast<long long>(v.count()));
    for (const std::string& m : v.First(10)) std::printf("  %s\n", m.c_str());
    std::string all = cf.dir + "/violations.txt";
    if (v.WriteAll(all)) std::printf("all of them (the first 1000): %s\n", all.c_str());
    std::printf("seed: %llu\ndata directory kept: %s (acknowledgement logs in acks/)\n"
                "reproduce (same seeds and kill times; thread timing differs):\n  %s\n"
                "the failing round's child:\n  %s\n",
                static_cast<unsigned long long>(cfg.seed), cf.dir.c_str(), repro.c_str(), failed_child.c_str());
    return 1;
  }
  std::printf("gatedb_crash: OK (seed %llu)\n", static_cast<unsigned long long>(cfg.seed));
  if (made_dir && !cf.keep) {
    std::error_code ec;
    std::filesystem::remove_all(cf.dir, ec);
  }
  return 0;
}

int Main(int argc, char** argv) {
  SimConfig cfg;
  cfg.seed = 0;
  cfg.lease_ttl_ms = 3000;  // a killed holder's lease must not block the next rounds for long
  CrashFlags cf;
  FlagSet flags(
      "gatedb_crash: runs the simulator's agents in a child process with durable writes, kills it with SIGKILL\n"
      "at a random moment, reopens and checks every invariant that holds across a crash; repeats.\n\n"
      "  gatedb_crash [--seed S] [--rounds R] [--agents N] ...\n\n"
      "Exit status: 0 when every check passed, 1 on a violation, 2 on bad flags or a failed setup.");
  AddWorkloadFlags(&flags, &cfg, /*with_sync=*/false);  // the child always writes durably
  flags.Int("rounds", &cf.rounds, "kill -9 rounds, each continuing on the same data directory");
  flags.String("dir", &cf.dir, "directory for the data (db/) and the acknowledgement logs (acks/); default: a fresh "
                               "temporary directory, removed on success");
  flags.Bool("keep", &cf.keep, "keep the directory even when every check passes");
  flags.Int("kill-min-ms", &cf.kill_min_ms, "kill the child at least this long after it opened the store");
  flags.Int("kill-max-ms", &cf.kill_max_ms, "and at most this long");
  flags.Double("kill-in-open-rate", &cf.kill_in_open_rate,
               "share of rounds whose child is killed 0..40 ms after its start, while it opens the store");
  flags.Bool("child", &cf.child, "(internal) run as the child: agents writing until killed");
  flags.String("ack", &cf.ack, "(internal) the child's acknowledgement log");
  flags.Int("round", &cf.round, "(internal) the child's round");
  flags.Int("child-max-seconds", &cf.child_max_seconds, "(internal) a child never outlives this");
  std::string error;
  if (!flags.Parse(argc, argv, &error)) {
    if (error.empty()) return 0;
    std::fprintf(stderr, "gatedb_crash: %s\n", error.c_str());
    return 2;
  }
  if (!ThinkDist::Parse(cfg.think, &error)) {
    std::fprintf(stderr, "gatedb_crash: %s\n", error.c_str());
    return 2;
  }
  if (cfg.agents < 1 || cfg.agents > 1000 || cfg.docs < 1 || cfg.collections < 1 || cfg.accounts < 0 ||
      cf.rounds < 0 || cf.kill_min_ms < 0 || cf.kill_max_ms < cf.kill_min_ms) {
    std::fprintf(stderr, "gatedb_crash: --agents 1..1000, --docs >= 1, --collections >= 1, kill-min <= kill-max\n");
    return 2;
  }
  cfg.sync = true;
  if (cf.child) return ChildMain(cfg, cf);
  return ParentMain(argc, argv, cfg, cf);
}

}  // namespace
}  // namespace sim
}  // namespace gatedb

int main(int argc, char** argv) { return gatedb::sim::Main(argc, argv); }
