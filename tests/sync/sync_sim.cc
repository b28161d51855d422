// gatedb_sync_sim: a hub and three edges, each edge with agents writing
// offline, then syncing through the hub, round after round; a model kept
// outside the databases says what every side must hold afterwards.
//
//   gatedb_sync_sim [--seed S] [--rounds N] [--agents A] [--ms M] [--batch B]
//
// The hub is `gatedb serve`'s WireServer on its own data directory (in this
// process, reached over loopback by libmongoc, as any upstream is); each
// edge is a data directory of its own, synced by gatedb::Sync.  Per round:
//
//   1. offline: A agent threads per edge (and one on the hub) write for M ms;
//   2. sync: every edge once, in an order that changes each round, then
//      every edge again;
//   3. the conflicts each edge lists are compared with the model's, then
//      resolved (for each document, the first edge to list it keeps its own
//      value, the others take the upstream's), and every edge syncs twice;
//   4. the check: the hub and every edge hold the same documents, equal to
//      the model's.
//
// The collections, one per conflict policy:
//   counters  fieldMerge + mergeIncrements: every agent $incs `n` (the hub's
//             agent too) and sets its edge's own field e<edge>; n must equal
//             every acknowledged increment, once, on every side;
//   audit     appendOnly: every agent inserts entries with ids of its own;
//             all of them, each once, on every side;
//   tasks     reject: one agent per edge sets `v`; of the edges that changed
//             a document in a round, the first to sync wins and each other
//             lists a conflict;
//   claims    sourcePriority (human > planner > agent): one agent per edge
//             sets `v` as a random source; the model replays the sync order
//             (a higher source wins the document, an equal one is a
//             conflict).
//
// Exit 0 when every check held; otherwise each violation is printed with
// the seed to rerun.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/server/wire_server.h"
#include "gatedb/db.h"
#include "gatedb/sync.h"
#include "tests/sim/sim_util.h"

namespace gatedb {
namespace {

constexpr int kEdges = 3;
constexpr int kDocs = 6;
constexpr const char* kDb = "sim";
const char* const kSources[] = {"human", "planner", "agent"};  // the claims' priority, highest first

struct Flags {
  uint64_t seed = 1;
  int rounds = 3;
  int agents = 2;
  int ms = 300;
  int batch = 7;
};

int violations = 0;
uint64_t g_seed = 0;

void Violation(const std::string& what) {
  ++violations;
  std::fprintf(stderr, "VIOLATION (seed %llu): %s\n", static_cast<unsigned long long>(g_seed), what.c_str());
}

Document Json(const std::string& s) {
  auto d = Document::FromJson(s);
  if (!d.ok()) {
    std::fprintf(stderr, "bad JSON in the simulator: %s\n", s.c_str());
    std::abort();
  }
  return std::move(*d);
}

std::string Str(const bson_t* doc, const char* path) {
  bson_iter_t it, f;
  if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &f) && BSON_ITER_HOLDS_UTF8(&f)) {
    return bson_iter_utf8(&f, nullptr);
  }
  return "";
}

int64_t Int(const bson_t* doc, const char* path) {
  bson_iter_t it, f;
  if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &f) && BSON_ITER_HOLDS_NUMBER(&f)) {
    return bson_iter_as_int64(&f);
  }
  return -1;
}

std::string DocId(const char* prefix, int i) { return std::string(prefix) + std::to_string(i); }

size_t Rank(const std::string& source) {
  for (size_t i = 0; i < 3; ++i) {
    if (source == kSources[i]) return i;
  }
  return 3;
}

// What the agents were told happened, per round.
struct Model {
  std::mutex mu;
  std::map<std::string, int64_t> n;    // counters: acknowledged increments
  std::set<std::string> audit;         // audit ids acknowledged
  // This round: per edge, the tasks and claims it changed (and the source
  // of its last claims write).
  std::set<std::string> tasks_changed[kEdges];
  std::map<std::string, std::string> claim_source[kEdges];
  // The value every side must hold after the round.
  std::map<std::string, std::string> tasks, claims;
};

// {_id: document without its version field} of one collection.
std::map<std::string, std::string> Snapshot(Database* db, const char* coll) {
  std::map<std::string, std::string> out;
  auto docs = db->GetCollection(kDb, coll).Find(Json("{}").view());
  if (!docs.ok()) {
    Violation(std::string("find ") + coll + ": " + docs.status().ToString());
    return out;
  }
  for (const Document& d : *docs) {
    bson_t* c = bson_new();
    bson_copy_to_excluding_noinit(d.bson(), c, "version", nullptr);
    Document stripped = Document::Adopt(c);
    out[Str(d.bson(), "_id")] = stripped.ToJson();
  }
  return out;
}

class Sim {
 public:
  explicit Sim(const Flags& f) : f_(f) {}

  int Run() {
    dir_ = (std::filesystem::temp_directory_path() / ("gatedb-sync-sim-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    int rc = RunIn();
    servers_stop();
    std::filesystem::remove_all(dir_);
    return rc;
  }

 private:
  void servers_stop() {
    if (server_) server_->Stop();
    server_.reset();
    for (auto& e : edges_) e.reset();
    hub_.reset();
  }

  bool Create(Database* db) {
    const char* specs[] = {
        R"({"create": "counters", "conflictPolicy": {"mode": "fieldMerge", "mergeIncrements": true}, "$db": "sim"})",
        R"({"create": "audit", "conflictPolicy": {"mode": "appendOnly"}, "$db": "sim"})",
        R"({"create": "tasks", "$db": "sim"})",
        R"({"create": "claims", "conflictPolicy": {"mode": "sourcePriority", "sourcePriority": ["human", "planner", "agent"]}, "$db": "sim"})",
    };
    for (const char* s : specs) {
      Document r = db->RunCommand(Json(s).view());
      if (Int(r.bson(), "ok") != 1) {
        Violation("create: " + r.ToJson());
        return false;
      }
    }
    return true;
  }

  SyncReport SyncEdge(int e) {
    SyncOptions o;
    o.upstream_uri = uri_;
    o.namespaces = {"sim.counters", "sim.audit", "sim.tasks", "sim.claims"};
    o.origin = "edge" + std::to_string(e);
    o.batch_size = f_.batch;
    o.pull_wait_ms = 20;
    auto s = Sync::Open(edges_[e].get(), o);
    if (!s.ok()) {
      Violation("Sync::Open edge " + std::to_string(e) + ": " + s.status().ToString());
      return SyncReport();
    }
    auto r = (*s)->RunOnce();
    if (!r.ok()) {
      Violation("sync of edge " + std::to_string(e) + ": " + r.status().ToString());
      return SyncReport();
    }
    return *r;
  }

  int RunIn() {
    auto hub = Database::Open(dir_ + "/hub");
    if (!hub.ok()) return Fail("hub: " + hub.status().ToString());
    hub_ = std::move(*hub);
    server::ServerOptions so;
    so.port = 0;
    so.quiet = true;
    so.log = [](const std::string&) {};
    auto srv = server::WireServer::Start(hub_.get(), so);
    if (!srv.ok()) return Fail("serve: " + srv.status().ToString());
    server_ = std::move(*srv);
    uri_ = "mongodb://127.0.0.1:" + std::to_string(server_->port()) + "/?directConnection=true";
    if (!Create(hub_.get())) return 1;
    for (int e = 0; e < kEdges; ++e) {
      auto db = Database::Open(dir_ + "/edge" + std::to_string(e));
      if (!db.ok()) return Fail("edge: " + db.status().ToString());
      edges_[e] = std::move(*db);
      if (!Create(edges_[e].get())) return 1;
    }
    // The first edge seeds the documents; the others take them from the hub.
    for (int i = 0; i < kDocs; ++i) {
      const std::string c = DocId("c", i), t = DocId("t", i), k = DocId("k", i);
      auto put = [&](const char* coll, const std::string& json) {
        Status s = edges_[0]->GetCollection(kDb, coll).InsertOne(Json(json).view()).status();
        if (!s.ok()) Violation(std::string("seed ") + coll + ": " + s.ToString());
      };
      put("counters", R"({"_id": ")" + c + R"(", "n": 0})");
      put("tasks", R"({"_id": ")" + t + R"(", "v": "init"})");
      put("claims", R"({"_id": ")" + k + R"(", "v": "init"})");
      model_.n[c] = 0;
      model_.tasks[t] = "init";
      model_.claims[k] = "init";
    }
    for (int e = 0; e < kEdges; ++e) SyncEdge(e);
    Check(0);
    for (int round = 1; round <= f_.rounds && violations == 0; ++round) Round(round);
    if (violations == 0) std::printf("gatedb_sync_sim: %d rounds, seed %llu: ok\n", f_.rounds,
                                     static_cast<unsigned long long>(f_.seed));
    return violations == 0 ? 0 : 1;
  }

  int Fail(const std::string& what) {
    Violation(what);
    return 1;
  }

  // One agent of edge `e` (e == kEdges: the hub's agent) for the round.
  void Agent(int round, int e, int agent, std::chrono::steady_clock::time_point until) {
    sim::Rng rng(sim::MixSeed(f_.seed, static_cast<uint64_t>(round) * 64 + static_cast<uint64_t>(e),
                              static_cast<uint64_t>(agent)));
    Database* db = e == kEdges ? hub_.get() : edges_[e].get();
    const std::string who = e == kEdges ? "hub" : "e" + std::to_string(e);
    int k = 0;
    while (std::chrono::steady_clock::now() < until) {
      ++k;
      const std::string tag = "r" + std::to_string(round) + "." + who + ".a" + std::to_string(agent) + "." + std::to_string(k);
      const uint64_t pick = rng.Uniform(100);
      const bool writer = agent == 0 && e < kEdges;  // the one that writes tasks and claims
      if (pick < 45 || (!writer && pick >= 70)) {
        const std::string id = DocId("c", static_cast<int>(rng.Uniform(kDocs)));
        const std::string field = e == kEdges ? "hub" : "e" + std::to_string(e);
        Document u = Json(R"({"$inc": {"n": 1}, "$set": {")" + field + R"(": ")" + tag + R"("}})");
        auto r = db->GetCollection(kDb, "counters").UpdateOne(Json(R"({"_id": ")" + id + R"("})").view(), u.view());
        if (!r.ok()) {
          Violation(who + " counters: " + r.status().ToString());
        } else if (r->matched_count == 1) {
          std::lock_guard<std::mutex> l(model_.mu);
          ++model_.n[id];
        } else {
          Violation(who + " counters: " + id + " not found");
        }
      } else if (pick < 70) {
        Document d = Json(R"({"_id": ")" + tag + R"(", "by": ")" + who + R"("})");
        auto r = db->GetCollection(kDb, "audit").InsertOne(d.view());
        if (!r.ok()) {
          Violation(who + " audit: " + r.status().ToString());
        } else {
          std::lock_guard<std::mutex> l(model_.mu);
          model_.audit.insert(tag);
        }
      } else if (pick < 85) {
        const std::string id = DocId("t", static_cast<int>(rng.Uniform(kDocs)));
        auto r = db->GetCollection(kDb, "tasks").UpdateOne(Json(R"({"_id": ")" + id + R"("})").view(),
                                                           Json(R"({"$set": {"v": ")" + tag + R"("}})").view());
        if (!r.ok()) {
          Violation(who + " tasks: " + r.status().ToString());
        } else {
          std::lock_guard<std::mutex> l(model_.mu);
          model_.tasks_changed[e].insert(id);
        }
      } else {
        const std::string id = DocId("k", static_cast<int>(rng.Uniform(kDocs)));
        const std::string source = kSources[rng.Uniform(3)];
        UpdateOptions uo;
        uo.write.context.agent_id = who + ".a0";
        uo.write.context.source = source;
        auto r = db->GetCollection(kDb, "claims").UpdateOne(Json(R"({"_id": ")" + id + R"("})").view(),
                                                            Json(R"({"$set": {"v": ")" + tag + R"("}})").view(), uo);
        if (!r.ok()) {
          Violation(who + " claims: " + r.status().ToString());
        } else {
          std::lock_guard<std::mutex> l(model_.mu);
          model_.claim_source[e][id] = source;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng.Uniform(2000)));
    }
  }

  std::string Value(Database* db, const char* coll, const std::string& id) {
    auto d = db->GetCollection(kDb, coll).FindOne(Json(R"({"_id": ")" + id + R"("})").view());
    if (!d.ok() || !d->has_value()) return "?";
    return Str((*d)->bson(), "v");
  }

  // The conflicts edge `e` lists: "coll/_id".
  std::set<std::string> Listed(int e) {
    std::set<std::string> out;
    auto docs = edges_[e]->GetCollection("__gatedb_sync", "conflicts").Find(Json("{}").view());
    if (!docs.ok()) {
      Violation("conflicts of edge " + std::to_string(e) + ": " + docs.status().ToString());
      return out;
    }
    for (const Document& d : *docs) {
      std::string ns = Str(d.bson(), "_id.ns");
      out.insert(ns.substr(ns.find('.') + 1) + "/" + Str(d.bson(), "_id.id"));
    }
    return out;
  }

  void Round(int round) {
    for (int e = 0; e < kEdges; ++e) {
      model_.tasks_changed[e].clear();
      model_.claim_source[e].clear();
    }
    // 1. Offline.
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(f_.ms);
    std::vector<std::thread> threads;
    for (int e = 0; e < kEdges; ++e) {
      for (int a = 0; a < f_.agents; ++a) threads.emplace_back([=] { Agent(round, e, a, until); });
    }
    threads.emplace_back([=] { Agent(round, kEdges, 0, until); });
    for (std::thread& t : threads) t.join();

    // What each edge holds now, for the model.
    std::map<std::string, std::string> own_field[kEdges], task_value[kEdges], claim_value[kEdges];
    for (int e = 0; e < kEdges; ++e) {
      for (int i = 0; i < kDocs; ++i) {
        const std::string c = DocId("c", i), t = DocId("t", i), k = DocId("k", i);
        auto d = edges_[e]->GetCollection(kDb, "counters").FindOne(Json(R"({"_id": ")" + c + R"("})").view());
        if (d.ok() && d->has_value()) own_field[e][c] = Str((*d)->bson(), ("e" + std::to_string(e)).c_str());
        task_value[e][t] = Value(edges_[e].get(), "tasks", t);
        claim_value[e][k] = Value(edges_[e].get(), "claims", k);
      }
    }
    std::map<std::string, std::string> hub_field;
    for (int i = 0; i < kDocs; ++i) {
      auto d = hub_->GetCollection(kDb, "counters").FindOne(Json(R"({"_id": ")" + DocId("c", i) + R"("})").view());
      if (d.ok() && d->has_value()) hub_field[DocId("c", i)] = Str((*d)->bson(), "hub");
    }

    // 2. Sync, in this round's order, twice.
    int order[kEdges];
    for (int i = 0; i < kEdges; ++i) order[i] = (i + round) % kEdges;
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < kEdges; ++i) SyncEdge(order[i]);
    }

    // The model replays the order.  tasks (reject): the first changer wins;
    // every later changer lists a conflict.  claims (sourcePriority): each
    // changer against what the hub got this round.
    std::set<std::string> want_conflicts[kEdges];
    std::map<std::string, int> keep_local;  // "coll/_id" -> the edge that keeps its value
    for (int i = 0; i < kDocs; ++i) {
      const std::string t = DocId("t", i);
      int winner = -1;
      for (int j = 0; j < kEdges; ++j) {
        const int e = order[j];
        if (!model_.tasks_changed[e].count(t)) continue;
        if (winner < 0) {
          winner = e;
          model_.tasks[t] = task_value[e][t];
        } else {
          want_conflicts[e].insert("tasks/" + t);
          if (!keep_local.count("tasks/" + t)) keep_local["tasks/" + t] = e;
        }
      }
      const std::string k = DocId("k", i);
      bool hub_moved = false;
      std::string hub_source;
      for (int j = 0; j < kEdges; ++j) {
        const int e = order[j];
        auto it = model_.claim_source[e].find(k);
        if (it == model_.claim_source[e].end()) continue;
        if (std::getenv("GATEDB_SIM_VERBOSE")) {
          std::printf("  %s: edge %d wrote '%s' as %s\n", k.c_str(), e, claim_value[e][k].c_str(), it->second.c_str());
        }
        if (!hub_moved || Rank(it->second) < Rank(hub_source)) {
          hub_moved = true;
          hub_source = it->second;
          model_.claims[k] = claim_value[e][k];
        } else if (Rank(it->second) == Rank(hub_source)) {
          want_conflicts[e].insert("claims/" + k);  // resolved for the upstream's value
        }
      }
    }

    // 3. The conflicts listed are the model's, no more and no fewer.
    for (int e = 0; e < kEdges; ++e) {
      std::set<std::string> listed = Listed(e);
      if (listed != want_conflicts[e]) {
        std::string l, w;
        for (const std::string& s : listed) l += s + " ";
        for (const std::string& s : want_conflicts[e]) w += s + " ";
        Violation("round " + std::to_string(round) + ", edge " + std::to_string(e) + " lists conflicts [" + l +
                  "], the model [" + w + "]");
      }
      for (const std::string& c : listed) {
        const std::string coll = c.substr(0, c.find('/')), id = c.substr(c.find('/') + 1);
        auto kl = keep_local.find(c);
        const bool local = kl != keep_local.end() && kl->second == e;
        if (local) model_.tasks[id] = task_value[e][id];
        Document r = edges_[e]->RunCommand(Json(R"({"syncResolve": ")" + coll + R"(", "_id": ")" + id +
                                                R"(", "keep": ")" + (local ? "local" : "upstream") +
                                                R"(", "$db": "sim"})")
                                               .view());
        if (Int(r.bson(), "ok") != 1) Violation("syncResolve: " + r.ToJson());
      }
    }
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < kEdges; ++i) SyncEdge(order[i]);
    }

    // 4. Every side as the model says.
    Check(round);
    for (int e = 0; e < kEdges; ++e) {
      for (const auto& [id, value] : own_field[e]) {
        auto d = hub_->GetCollection(kDb, "counters").FindOne(Json(R"({"_id": ")" + id + R"("})").view());
        const std::string got = d.ok() && d->has_value() ? Str((*d)->bson(), ("e" + std::to_string(e)).c_str()) : "?";
        if (got != value) Violation("round " + std::to_string(round) + ": " + id + ".e" + std::to_string(e) + " is '" + got + "' on the hub, '" + value + "' on its edge");
      }
    }
    for (const auto& [id, value] : hub_field) {
      auto d = edges_[0]->GetCollection(kDb, "counters").FindOne(Json(R"({"_id": ")" + id + R"("})").view());
      const std::string got = d.ok() && d->has_value() ? Str((*d)->bson(), "hub") : "?";
      if (got != value) Violation("round " + std::to_string(round) + ": " + id + ".hub is '" + got + "' on edge 0, '" + value + "' on the hub");
    }
    std::printf("round %d: %zu audit entries, conflicts listed %zu/%zu/%zu: ok\n", round, model_.audit.size(),
                want_conflicts[0].size(), want_conflicts[1].size(), want_conflicts[2].size());
  }

  // Every side holds the same documents, and the model's values.
  void Check(int round) {
    const std::string r = "round " + std::to_string(round) + ": ";
    for (const char* coll : {"counters", "audit", "tasks", "claims"}) {
      std::map<std::string, std::string> hub = Snapshot(hub_.get(), coll);
      for (int e = 0; e < kEdges; ++e) {
        std::map<std::string, std::string> edge = Snapshot(edges_[e].get(), coll);
        if (edge == hub) continue;
        for (const auto& [id, doc] : hub) {
          auto it = edge.find(id);
          if (it == edge.end()) {
            Violation(r + coll + "/" + id + " is on the hub but not on edge " + std::to_string(e));
          } else if (it->second != doc) {
            Violation(r + coll + "/" + id + " differs: hub " + doc + ", edge " + std::to_string(e) + " " + it->second);
          }
        }
        for (const auto& [id, doc] : edge) {
          if (!hub.count(id)) Violation(r + coll + "/" + id + " is on edge " + std::to_string(e) + " but not on the hub");
        }
      }
    }
    for (const auto& [id, n] : model_.n) {
      auto d = hub_->GetCollection(kDb, "counters").FindOne(Json(R"({"_id": ")" + id + R"("})").view());
      const int64_t got = d.ok() && d->has_value() ? Int((*d)->bson(), "n") : -1;
      if (got != n) Violation(r + "counter " + id + " is " + std::to_string(got) + ", increments acknowledged " + std::to_string(n));
    }
    auto audit = hub_->GetCollection(kDb, "audit").CountDocuments(Json("{}").view());
    if (!audit.ok() || *audit != static_cast<int64_t>(model_.audit.size())) {
      Violation(r + "the hub has " + (audit.ok() ? std::to_string(*audit) : audit.status().ToString()) +
                " audit entries, the model " + std::to_string(model_.audit.size()));
    }
    for (const std::string& id : model_.audit) {
      auto d = hub_->GetCollection(kDb, "audit").FindOne(Json(R"({"_id": ")" + id + R"("})").view());
      if (!d.ok() || !d->has_value()) Violation(r + "audit entry " + id + " is missing");
    }
    for (const auto& [id, v] : model_.tasks) {
      const std::string got = Value(hub_.get(), "tasks", id);
      if (got != v) Violation(r + "tasks/" + id + " is '" + got + "', the model '" + v + "'");
    }
    for (const auto& [id, v] : model_.claims) {
      const std::string got = Value(hub_.get(), "claims", id);
      if (got != v) Violation(r + "claims/" + id + " is '" + got + "', the model '" + v + "'");
    }
    for (int e = 0; e < kEdges; ++e) {
      Document st = edges_[e]->RunCommand(Json(R"({"syncStatus": 1})").view());
      bson_iter_t it, ns;
      if (bson_iter_init_find(&it, st.bson(), "namespaces") && bson_iter_recurse(&it, &ns)) {
        while (bson_iter_next(&ns)) {
          bson_t n;
          const bson_value_t* v = bson_iter_value(&ns);
          bson_init_static(&n, v->value.v_doc.data, v->value.v_doc.data_len);
          if (Int(&n, "push.pendingDocuments") != 0 || Int(&n, "conflicts") != 0) {
            Violation(r + "edge " + std::to_string(e) + " still has work: " + st.ToJson());
          }
        }
      }
    }
  }

  Flags f_;
  std::string dir_;
  std::string uri_;
  std::unique_ptr<Database> hub_;
  std::unique_ptr<server::WireServer> server_;
  std::unique_ptr<Database> edges_[kEdges];
  Model model_;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](long long min, long long max, long long* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      long long v = std::strtoll(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < min || v > max) return false;
      *out = v;
      return true;
    };
    long long v = 0;
    if (a == "--seed" && next(0, INT64_MAX, &v)) {
      f->seed = static_cast<uint64_t>(v);
    } else if (a == "--rounds" && next(1, 1000, &v)) {
      f->rounds = static_cast<int>(v);
    } else if (a == "--agents" && next(1, 16, &v)) {
      f->agents = static_cast<int>(v);
    } else if (a == "--ms" && next(1, 600000, &v)) {
      f->ms = static_cast<int>(v);
    } else if (a == "--batch" && next(1, 100000, &v)) {
      f->batch = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "usage: gatedb_sync_sim [--seed S] [--rounds N] [--agents A] [--ms M] [--batch B]\n");
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace gatedb

int main(int argc, char** argv) {
  gatedb::Flags f;
  if (!gatedb::ParseFlags(argc, argv, &f)) return 2;
  gatedb::g_seed = f.seed;
  return gatedb::Sim(f).Run();
}
