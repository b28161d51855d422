// gatedb_sim: the agent simulator.  N agent threads read, think and write
// through the version gate over M documents in K collections (one conflict
// policy each), with idempotency keys, lost replies, transactions and
// leases; an expected-state model outside the database records what every
// agent was told, and after the run (and after every reopen) the checker
// compares the store and its journal with it (sim_check.h lists the
// invariants).  Exits 1 on any violation, printing the seed and a command
// line that repeats the run's random choices (thread timing differs).
//
//   gatedb_sim --seed 7 --agents 4 --seconds 3 --reopen 1
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/sim/sim_agent.h"
#include "tests/sim/sim_check.h"
#include "tests/sim/sim_config.h"
#include "tests/sim/sim_model.h"
#include "tests/sim/sim_ops.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace sim {
namespace {

struct RunFlags {
  int reopen = 0;
  std::string dir;
  bool keep = false;
};

std::string MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gatedb_sim.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

std::unique_ptr<Database> OpenOrDie(const std::string& path, const SimConfig& cfg) {
  Options o;
  o.sync = cfg.sync;
  auto db = Database::Open(path, o);
  if (!db.ok()) {
    std::fprintf(stderr, "gatedb_sim: cannot open %s: %s\n", path.c_str(), db.status().ToString().c_str());
    return nullptr;
  }
  return std::move(db).value();
}

// Intruders (--intruders N): agents that run the same operations as the
// others through a handle acting as a user who may read everything and
// write nothing (MongoDB's readAnyDatabase).  Every write they try must be
// refused with Unauthorized, and none may land: the model never hears of
// them, so the full checks find anything that did.
class IntruderSink : public Sink {
 public:
  explicit IntruderSink(Violations* v) : v_(v) {}
  void Begin(const Op&) override {}
  void Executed(const Op& op, const OpResult& r) override {
    if (r.outcome == Outcome::kDeclined) return;  // its own decision from what it read: no write
    ++tried_;
    if (r.outcome == Outcome::kError && r.error.find("Unauthorized") != std::string::npos) {
      ++refused_;
    } else {
      v_->Add("intruder " + op.AgentId() + "'s " + OutcomeName(r.outcome) + " was not refused as Unauthorized: " +
              r.error);
    }
  }
  void End(const Op&) override {}
  void Lease(const LeaseInterval& l) override {
    v_->Add("intruder " + std::to_string(l.agent) + " held a lease");
  }
  int64_t tried() const { return tried_.load(); }
  int64_t refused() const { return refused_.load(); }

 private:
  Violations* v_;
  std::atomic<int64_t> tried_{0}, refused_{0};
};

Status MakeIntruders(Database* db, int first, int n) {
  for (int i = first; i < first + n; ++i) {
    auto cmd = Document::FromJson(R"({"createUser": ")" + Layout::AgentId(i) +
                                  R"(", "pwd": "x", "roles": ["readAnyDatabase"], "$db": "admin"})");
    if (!cmd.ok()) return cmd.status();
    Document r = db->RunCommand(cmd->view());
    bson_iter_t it;
    if (!bson_iter_init_find(&it, r.bson(), "ok") || bson_iter_as_double(&it) != 1.0) {
      return Status(ErrorCode::kInternalError, "createUser for an intruder: " + r.ToJson());
    }
  }
  return Status::OK();
}

// Re-sends each agent's latest committed keyed writes after a reopen: each
// must answer with its stored reply and change nothing.
void ReplayAfterReopen(Database* db, const Layout& layout, const std::vector<std::unique_ptr<Agent>>& agents,
                       Model* model, Violations* v) {
  JournalQuery head;
  head.limit = 1;
  auto before = db->ReadJournal(head);
  for (const auto& agent : agents) {
    for (const Op& op : agent->recent_keyed()) {
      OpResult r = ExecuteOp(db, layout, op, false, nullptr);
      model->Record(op, r, v);
      model->stats.reopen_replays++;
      if (r.outcome != Outcome::kError && !ResendOutcomeOk(op, r.outcome)) {
        v->Add("after reopen, re-sending committed " + op.Describe(layout) + " got " + OutcomeName(r.outcome) +
               " instead of its stored reply");
      }
    }
  }
  auto after = db->ReadJournal(head);
  if (!before.ok() || !after.ok()) {
    v->Add("cannot read the journal around the replays: " + (before.ok() ? after.status() : before.status()).ToString());
  } else if (before->last_seq != after->last_seq) {
    v->Add("re-sending committed keyed writes after a reopen added journal events (seq " +
           std::to_string(before->last_seq) + " -> " + std::to_string(after->last_seq) + ")");
  }
}

int Main(int argc, char** argv) {
  SimConfig cfg;
  cfg.seed = 0;
  RunFlags run;
  FlagSet flags(
      "gatedb_sim: N agents read, think and write through gatedb's version gate; an expected-state model\n"
      "outside the database checks every invariant after the run and after each reopen.\n\n"
      "  gatedb_sim [--seed S] [--agents N] [--docs M] [--collections K] [--seconds T | --ops N] [--reopen R] ...\n\n"
      "Exit status: 0 when every check passed, 1 on a violation, 2 on bad flags or a failed setup.");
  AddWorkloadFlags(&flags, &cfg);
  flags.Double("seconds", &cfg.seconds, "run this long (default 5 s unless --ops)");
  flags.Int("ops", &cfg.ops, "or run this many operations per agent");
  flags.Int("reopen", &run.reopen,
            "close and reopen the database this many times: the run is split into as many phases, each ended by a "
            "check, a reopen, a check and re-sent keyed writes");
  flags.String("dir", &run.dir, "data directory (must be empty or absent); default: a fresh temporary directory");
  flags.Bool("keep", &run.keep, "keep the data directory even when every check passes");
  int intruders = 0;
  flags.Int("intruders", &intruders,
            "also run this many agents as a read-only user: every write they try must be refused (Unauthorized) "
            "and none may land");
  std::string error;
  if (!flags.Parse(argc, argv, &error)) {
    if (error.empty()) return 0;
    std::fprintf(stderr, "gatedb_sim: %s\n", error.c_str());
    return 2;
  }
  auto think = ThinkDist::Parse(cfg.think, &error);
  if (!think) {
    std::fprintf(stderr, "gatedb_sim: %s\n", error.c_str());
    return 2;
  }
  if (cfg.agents < 1 || cfg.agents > 1000 || cfg.docs < 1 || cfg.collections < 1 || cfg.accounts < 0 ||
      run.reopen < 0 || cfg.seconds < 0 || cfg.ops < 0) {
    std::fprintf(stderr, "gatedb_sim: --agents 1..1000, --docs >= 1, --collections >= 1, others >= 0\n");
    return 2;
  }
  if (cfg.seconds == 0 && cfg.ops == 0) cfg.seconds = 5;
  if (cfg.seed == 0) cfg.seed = static_cast<uint64_t>(NowMs());

  bool made_dir = run.dir.empty();
  if (made_dir) {
    run.dir = MakeTempDir();
    if (run.dir.empty()) {
      std::perror("gatedb_sim: mkdtemp");
      return 2;
    }
  } else {
    std::error_code ec;
    if (std::filesystem::exists(run.dir, ec) && !std::filesystem::is_empty(run.dir, ec)) {
      std::fprintf(stderr, "gatedb_sim: --dir %s is not empty (the model starts from a fresh database)\n",
                   run.dir.c_str());
      return 2;
    }
  }
  std::string repro = argv[0];
  for (const std::string& a : WorkloadArgs(cfg)) repro += " " + a;
  repro += cfg.ops > 0 ? " --ops=" + std::to_string(cfg.ops) : " --seconds=" + std::to_string(cfg.seconds);
  repro += " --reopen=" + std::to_string(run.reopen);

  Layout layout = Layout::Make(cfg);
  std::string policies;
  for (const CollSpec& c : layout.colls) policies += (policies.empty() ? "" : ", ") + c.name;
  std::printf("gatedb_sim: seed %llu, %d agents, %d docs in each of %s, %d accounts, think %s, %s\n",
              static_cast<unsigned long long>(cfg.seed), cfg.agents, cfg.docs, policies.c_str(), cfg.accounts,
              cfg.think.c_str(), run.dir.c_str());
  std::fflush(stdout);

  Violations v;
  Model model(layout);
  ModelSink sink(&model, &v);
  std::unique_ptr<Database> db = OpenOrDie(run.dir, cfg);
  if (!db) return 2;
  Status setup = SetupDatabase(db.get(), layout);
  if (!setup.ok()) {
    std::fprintf(stderr, "gatedb_sim: setup failed: %s\n", setup.ToString().c_str());
    return 2;
  }
  std::vector<std::unique_ptr<Agent>> agents;
  for (int a = 0; a < cfg.agents; ++a) {
    agents.push_back(std::make_unique<Agent>(a, 0, cfg.seed, layout, cfg, *think, true, &sink, &model.stats, &v));
  }
  // Intruders report to their own sink; what they find of their own
  // (refused leases, fields that never changed) is theirs alone.
  Violations intruder_noise;
  SimStats intruder_stats;
  IntruderSink intruder_sink(&v);
  std::vector<std::unique_ptr<Agent>> intruder_agents;
  if (intruders < 0 || intruders > 100) {
    std::fprintf(stderr, "gatedb_sim: --intruders 0..100\n");
    return 2;
  }
  if (intruders > 0) {
    Status made = MakeIntruders(db.get(), cfg.agents, intruders);
    if (!made.ok()) {
      std::fprintf(stderr, "gatedb_sim: %s\n", made.ToString().c_str());
      return 2;
    }
    for (int a = cfg.agents; a < cfg.agents + intruders; ++a) {
      intruder_agents.push_back(std::make_unique<Agent>(a, 0, cfg.seed, layout, cfg, *think, true, &intruder_sink,
                                                        &intruder_stats, &intruder_noise));
    }
  }

  int phases = std::max(1, run.reopen);
  int64_t invariants = 0, checks = 0, merges = 0, events = 0;
  int64_t start = SteadyMs();
  auto check = [&](const std::string& when) {
    v.set_context(when);
    CheckOptions co;
    CheckResult r = CheckAll(db.get(), model, co, &v);
    invariants += r.invariants;
    merges = r.facts.merges;
    events = r.facts.events;
    ++checks;
    // Every refusal by permissions is an intruder's, and each refused
    // attempt left exactly one such event.
    int64_t refusals = 0;
    for (const auto& [agent, n] : r.facts.unauthorized) {
      refusals += n;
      bool intruder = false;
      for (int a = cfg.agents; a < cfg.agents + intruders; ++a) intruder |= agent == Layout::AgentId(a);
      if (!intruder) v.Add("agent " + agent + " was refused by permissions, and it is not an intruder");
    }
    if (refusals != intruder_sink.refused()) {
      v.Add("the journal holds " + std::to_string(refusals) + " refusals by permissions, the intruders saw " +
            std::to_string(intruder_sink.refused()));
    }
  };
  for (int phase = 0; phase < phases; ++phase) {
    v.set_context("phase " + std::to_string(phase + 1));
    std::atomic<bool> stop{false};
    int64_t ops = cfg.ops > 0 ? (cfg.ops * (phase + 1)) / phases - (cfg.ops * phase) / phases : 0;
    std::vector<std::thread> threads;
    for (auto& agent : agents) threads.emplace_back([&, a = agent.get()] { a->Run(db.get(), stop, ops); });
    for (auto& agent : intruder_agents) {
      threads.emplace_back([&, a = agent.get()] {
        auto as = db->As(Identity{Layout::AgentId(a->index()), "admin"});
        if (!as.ok()) {
          v.Add("intruder handle: " + as.status().ToString());
          return;
        }
        a->Run(as->get(), stop, ops);
      });
    }
    if (cfg.ops == 0) {
      int64_t until = start + static_cast<int64_t>(cfg.seconds * 1000 * (phase + 1) / phases);
      while (SteadyMs() < until) SleepMicros(std::min<int64_t>(20000, (until - SteadyMs()) * 1000 + 1));
      stop = true;
    }
    for (auto& t : threads) t.join();
    check("after phase " + std::to_string(phase + 1));
    if (phase < run.reopen) {
      db.reset();
      db = OpenOrDie(run.dir, cfg);
      if (!db) return 2;
      check("after reopen " + std::to_string(phase + 1));
      v.set_context("replays after reopen " + std::to_string(phase + 1));
      ReplayAfterReopen(db.get(), layout, agents, &model, &v);
      if (phase + 1 == phases) check("after the replays of reopen " + std::to_string(phase + 1));
    }
  }
  double secs = (SteadyMs() - start) / 1000.0;
  db.reset();

  std::printf("gatedb_sim: %.1f s, %d reopens, %lld journal events\n", secs, run.reopen,
              static_cast<long long>(events));
  std::printf("%s", FormatStats(model.stats, merges).c_str());
  std::printf("  invariants      %lld checked in %lld full checks\n", static_cast<long long>(invariants),
              static_cast<long long>(checks));
  if (intruders > 0) {
    std::printf("  intruders       %d, %lld writes tried, %lld refused as Unauthorized\n", intruders,
                static_cast<long long>(intruder_sink.tried()), static_cast<long long>(intruder_sink.refused()));
    if (intruder_sink.tried() == 0) v.Add("the intruders tried no write");
  }
  if (v.count() > 0) {
    std::printf("gatedb_sim: FAILED with %lld violations; the first:\n", static_cast<long long>(v.count()));
    for (const std::string& m : v.First(10)) std::printf("  %s\n", m.c_str());
    std::string all = run.dir + "/violations.txt";
    if (v.WriteAll(all)) std::printf("all of them (the first 1000): %s\n", all.c_str());
    std::printf("seed: %llu\ndata directory kept: %s\nreproduce (same random choices; thread timing differs):\n  %s\n",
                static_cast<unsigned long long>(cfg.seed), run.dir.c_str(), repro.c_str());
    return 1;
  }
  std::printf("gatedb_sim: OK (seed %llu)\n", static_cast<unsigned long long>(cfg.seed));
  if (made_dir && !run.keep) {
    std::error_code ec;
    std::filesystem::remove_all(run.dir, ec);
  }
  return 0;
}

}  // namespace
}  // namespace sim
}  // namespace gatedb

int main(int argc, char** argv) { return gatedb::sim::Main(argc, argv); }
