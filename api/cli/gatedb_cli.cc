// The gatedb command-line tool.  `run` and `demo` use only the public API
// (gatedb/*.h); `serve` is the wire server (api/server, serve.cc).
//
//   gatedb run   [--db DIR] [-c JSON]      commands as Extended JSON, one per line
//   gatedb demo  [--db DIR] [--agents N] [--docs N] [--seconds S] [--think-ms MS] [--seed N]
//   gatedb serve [--db DIR] [--port N] [--bind ADDR] [--socket PATH] ...
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gatedb/db.h"

namespace gatedb {
namespace cli {
int RunServe(int argc, char** argv, const char* default_dir, const Options& db_options);
int RunSync(int argc, char** argv, const char* default_dir, const Options& db_options);
}  // namespace cli
}  // namespace gatedb

namespace {

constexpr char kDefaultDir[] = "./gatedb-data";

void PrintMainHelp() {
  std::printf(
      "gatedb: an embedded document store with version gating, MongoDB's commands and data model.\n\n"
      "Usage:\n"
      "  gatedb run  [--db DIR] [-c JSON]   run MongoDB commands given as Extended JSON, one per line\n"
      "                                     on standard input (or one with -c); one reply per line\n"
      "  gatedb demo [--db DIR] [options]   concurrent agents update shared orders through the version\n"
      "                                     gate; prints what was stopped and checks no update was lost\n"
      "  gatedb serve [--db DIR] [options]  serve the data directory over MongoDB's wire protocol\n"
      "                                     (mongosh, the drivers); 'gatedb serve --help'\n"
      "  gatedb sync [--db DIR] --upstream URI --ns DB.COLL (--once | --follow)\n"
      "                                     push and pull with an upstream (Atlas, a replica set, or\n"
      "                                     gatedb serve); 'gatedb sync --help'\n"
      "  gatedb help | --help               this text; 'gatedb run --help', 'gatedb demo --help'\n\n"
      "The data directory defaults to %s.\n",
      kDefaultDir);
}

void PrintRunHelp() {
  std::printf(
      "Usage: gatedb run [--db DIR] [-c JSON]\n\n"
      "Reads one command per line as Extended JSON (canonical or relaxed), runs it, and prints its\n"
      "reply as one line of relaxed Extended JSON.  Blank lines and lines starting with '#' are\n"
      "skipped.  A line that is not valid JSON gets a FailedToParse reply naming the line; the\n"
      "following lines still run.  A command may carry \"$db\" (default \"test\").\n\n"
      "  --db DIR   data directory (default %s)\n"
      "  -c JSON    run this one command instead of reading standard input\n\n"
      "Example:\n"
      "  echo '{\"insert\": \"orders\", \"documents\": [{\"_id\": 1, \"qty\": 2}]}' | gatedb run\n",
      kDefaultDir);
}

void PrintDemoHelp() {
  std::printf(
      "Usage: gatedb demo [--db DIR] [--agents N] [--docs N] [--seconds S] [--think-ms MS] [--seed N]\n\n"
      "Simulated agents (threads) work on a few shared order documents: read the order with its\n"
      "version, think a random few milliseconds, then write through the version gate (the retry\n"
      "helper: basisVersion; on VersionConflict reread and decide again), or with --idiom the\n"
      "MongoDB way ({_id, version} in the filter, $inc: {version: 1}, reread on n: 0).\n"
      "At the end the demo checks that every order's total equals the sum\n"
      "of the committed increments and its version equals the number of committed writes.\n\n"
      "  --db DIR        data directory (default %s); the demo uses collection demo.orders\n"
      "  --agents N      agent threads (default 8)\n"
      "  --docs N        shared order documents (default 4)\n"
      "  --seconds S     how long the agents work (default 3)\n"
      "  --think-ms MS   longest think time between read and write (default 5)\n"
      "  --idiom         write the MongoDB way ({_id, version} filter) instead of basisVersion\n"
      "  --seed N        random seed (default: from the clock)\n",
      kDefaultDir);
}

gatedb::Document ParseErrorReply(size_t line_no, const std::string& reason) {
  bson_t* reply = bson_new();
  BSON_APPEND_DOUBLE(reply, "ok", 0.0);
  std::string msg = "line " + std::to_string(line_no) + ": " + reason;
  BSON_APPEND_UTF8(reply, "errmsg", msg.c_str());
  BSON_APPEND_INT32(reply, "code", static_cast<int>(gatedb::ErrorCode::kFailedToParse));
  BSON_APPEND_UTF8(reply, "codeName", "FailedToParse");
  return gatedb::Document::Adopt(reply);
}

bool RunOne(gatedb::Database* db, const std::string& line, size_t line_no) {
  gatedb::StatusOr<gatedb::Document> cmd = gatedb::Document::FromJson(line);
  gatedb::Document reply =
      cmd.ok() ? db->RunCommand(cmd->view()) : ParseErrorReply(line_no, cmd.status().reason());
  std::string out = reply.ToJson();
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  bson_iter_t it;
  return bson_iter_init_find(&it, reply.bson(), "ok") && bson_iter_as_double(&it) == 1.0;
}

int RunCommandLoop(gatedb::Database* db, const char* single) {
  if (single != nullptr) return RunOne(db, single, 1) ? 0 : 1;
  std::string line;
  size_t line_no = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    RunOne(db, line, line_no);
  }
  return 0;
}

struct DemoConfig {
  int agents = 8;
  int docs = 4;
  double seconds = 3;
  int think_ms = 5;
  uint64_t seed = 0;
  bool idiom = false;  // the MongoDB filter idiom instead of the retry helper
};

gatedb::Document IdFilter(const std::string& id) {
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return gatedb::Document::Adopt(f);
}

int RunDemo(gatedb::Database* db, const DemoConfig& cfg) {
  const char* kDb = "demo";
  const char* kColl = "orders";
  gatedb::Status drop = db->DropCollection(kDb, kColl);
  if (!drop.ok() && drop.code() != gatedb::ErrorCode::kNamespaceNotFound) {
    std::fprintf(stderr, "demo: %s\n", drop.ToString().c_str());
    return 1;
  }
  gatedb::Collection orders = db->GetCollection(kDb, kColl);
  for (int d = 0; d < cfg.docs; ++d) {
    bson_t* doc = bson_new();
    std::string id = "order_" + std::to_string(1001 + d);
    BSON_APPEND_UTF8(doc, "_id", id.c_str());
    BSON_APPEND_UTF8(doc, "status", "open");
    BSON_APPEND_INT64(doc, "total", 0);
    BSON_APPEND_UTF8(doc, "lastAgent", "");
    gatedb::Document owned = gatedb::Document::Adopt(doc);
    auto r = orders.InsertOne(owned.view());
    if (!r.ok()) {
      std::fprintf(stderr, "demo: insert failed: %s\n", r.status().ToString().c_str());
      return 1;
    }
  }

  std::printf("gatedb demo: %d agents, %d shared orders, %.1f s, think 0-%d ms, data in %s.%s\n", cfg.agents,
              cfg.docs, cfg.seconds, cfg.think_ms, kDb, kColl);
  std::printf("agents write %s\n", cfg.idiom ? "the MongoDB way: {_id, version} in the filter, reread on n: 0"
                                              : "through the version gate: basisVersion, reread on VersionConflict");
  std::atomic<bool> stop{false};
  std::atomic<int64_t> attempts{0}, committed{0}, stale{0}, retries{0}, errors{0};
  std::mutex model_mu;
  std::map<std::string, std::pair<int64_t, int64_t>> model;  // id -> (sum of committed increments, writes)

  auto record_commit = [&](const std::string& id, int64_t amount) {
    committed.fetch_add(1);
    std::lock_guard<std::mutex> l(model_mu);
    model[id].first += amount;
    model[id].second += 1;
  };

  // The write protocol: the retry helper reads the order with its version,
  // calls back to decide the update (the agent "thinks" here), writes with
  // basisVersion, and on a VersionConflict rereads and decides again.
  auto gated_agent = [&](int agent_no) {
    std::mt19937_64 rng(cfg.seed + static_cast<uint64_t>(agent_no) * 7919);
    gatedb::GatedWriteOptions go;
    go.max_attempts = 1000;
    go.context.agent_id = "agent-" + std::to_string(agent_no);
    go.context.source = "demo";
    int64_t task = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      std::string id = "order_" + std::to_string(1001 + rng() % cfg.docs);
      int64_t amount = 1 + static_cast<int64_t>(rng() % 100);
      go.context.task_id = go.context.agent_id + "-task-" + std::to_string(++task);
      auto decide = [&](const gatedb::Document&) -> gatedb::StatusOr<gatedb::Document> {
        if (cfg.think_ms > 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % (cfg.think_ms * 1000 + 1)));
        }
        bson_t* update = bson_new();
        bson_t inc, set;
        BSON_APPEND_DOCUMENT_BEGIN(update, "$inc", &inc);
        BSON_APPEND_INT64(&inc, "total", amount);
        bson_append_document_end(update, &inc);
        BSON_APPEND_DOCUMENT_BEGIN(update, "$set", &set);
        BSON_APPEND_UTF8(&set, "lastAgent", go.context.agent_id.c_str());
        bson_append_document_end(update, &set);
        return gatedb::Document::Adopt(update);
      };
      auto r = orders.WriteWithVersionGate(IdFilter(id).view(), decide, go);
      if (!r.ok()) {
        errors.fetch_add(1);
        break;
      }
      attempts.fetch_add(r->attempts);
      stale.fetch_add(r->attempts - 1);
      retries.fetch_add(r->attempts - 1);
      if (r->modified_count == 1) record_commit(id, amount);
    }
  };

  // The MongoDB idiom: {_id, version} in the filter, $inc: {version: 1};
  // n: 0 means another agent wrote first.
  auto idiom_agent = [&](int agent_no) {
    std::mt19937_64 rng(cfg.seed + static_cast<uint64_t>(agent_no) * 7919);
    std::string agent_id = "agent-" + std::to_string(agent_no);
    while (!stop.load(std::memory_order_relaxed)) {
      std::string id = "order_" + std::to_string(1001 + rng() % cfg.docs);
      int64_t amount = 1 + static_cast<int64_t>(rng() % 100);
      bool first_try = true;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!first_try) retries.fetch_add(1);
        first_try = false;
        auto read = orders.FindOne(IdFilter(id).view());
        if (!read.ok() || !read->has_value()) {
          errors.fetch_add(1);
          break;
        }
        bson_iter_t it;
        int64_t version = 0;
        if (bson_iter_init_find(&it, (*read)->bson(), "version")) version = bson_iter_as_int64(&it);
        if (cfg.think_ms > 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % (cfg.think_ms * 1000 + 1)));
        }
        bson_t* filter = bson_new();
        BSON_APPEND_UTF8(filter, "_id", id.c_str());
        BSON_APPEND_INT64(filter, "version", version);
        bson_t* update = bson_new();
        bson_t inc, set;
        BSON_APPEND_DOCUMENT_BEGIN(update, "$inc", &inc);
        BSON_APPEND_INT64(&inc, "total", amount);
        BSON_APPEND_INT32(&inc, "version", 1);
        bson_append_document_end(update, &inc);
        BSON_APPEND_DOCUMENT_BEGIN(update, "$set", &set);
        BSON_APPEND_UTF8(&set, "lastAgent", agent_id.c_str());
        bson_append_document_end(update, &set);
        gatedb::Document f = gatedb::Document::Adopt(filter), u = gatedb::Document::Adopt(update);
        attempts.fetch_add(1);
        gatedb::UpdateOptions uo;
        uo.write.context.agent_id = agent_id;
        uo.write.context.source = "demo";
        auto r = orders.UpdateOne(f.view(), u.view(), uo);
        if (!r.ok()) {
          errors.fetch_add(1);
          break;
        }
        if (r->matched_count == 1) {
          record_commit(id, amount);
          break;
        }
        stale.fetch_add(1);  // n: 0 -- another agent wrote first; reread and retry
      }
    }
  };

  // The journal outlives dropped collections: count only this run's events.
  uint64_t journal_start = 0;
  {
    gatedb::JournalQuery q;
    q.limit = 1;
    auto head = db->ReadJournal(q);
    if (head.ok()) journal_start = head->last_seq;
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int a = 0; a < cfg.agents; ++a) {
    if (cfg.idiom) {
      threads.emplace_back(idiom_agent, a);
    } else {
      threads.emplace_back(gated_agent, a);
    }
  }
  bool tty = isatty(STDOUT_FILENO);
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(tty ? 200 : 1000));
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s  %5.1f s  attempts %lld  committed %lld  stale stopped %lld%s", tty ? "\r" : "", elapsed,
                static_cast<long long>(attempts.load()), static_cast<long long>(committed.load()),
                static_cast<long long>(stale.load()), tty ? "" : "\n");
    std::fflush(stdout);
    if (elapsed >= cfg.seconds) break;
  }
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (tty) std::printf("\n");

  // The invariant: no lost update.
  bool ok = errors.load() == 0;
  int64_t version_sum = 0;
  for (int d = 0; d < cfg.docs; ++d) {
    std::string id = "order_" + std::to_string(1001 + d);
    auto doc = orders.FindOne(IdFilter(id).view());
    if (!doc.ok() || !doc->has_value()) {
      ok = false;
      continue;
    }
    bson_iter_t it;
    int64_t total = bson_iter_init_find(&it, (*doc)->bson(), "total") ? bson_iter_as_int64(&it) : -1;
    int64_t version = bson_iter_init_find(&it, (*doc)->bson(), "version") ? bson_iter_as_int64(&it) : -1;
    auto expect = model[id];
    if (total != expect.first || version != expect.second) {
      ok = false;
      std::printf("  MISMATCH %s: total %lld (expected %lld), version %lld (expected %lld)\n", id.c_str(),
                  static_cast<long long>(total), static_cast<long long>(expect.first),
                  static_cast<long long>(version), static_cast<long long>(expect.second));
    }
    version_sum += version;
  }
  std::printf("\nagents              %d\n", cfg.agents);
  std::printf("orders              %d\n", cfg.docs);
  std::printf("write attempts      %lld\n", static_cast<long long>(attempts.load()));
  std::printf("committed writes    %lld\n", static_cast<long long>(committed.load()));
  std::printf("stale writes stopped %lld (%s)\n", static_cast<long long>(stale.load()),
              cfg.idiom ? "the gate answered n: 0" : "VersionConflict, then reread");
  auto stats = db->GetConflictStats(kDb, kColl, journal_start);
  if (stats.ok()) {
    std::printf("conflict rate       %.1f%% of %lld gated writes (conflictStats, from the journal)\n",
                100.0 * stats->conflict_rate, static_cast<long long>(stats->gated_writes));
  }
  std::printf("retries             %lld\n", static_cast<long long>(retries.load()));
  std::printf("errors              %lld\n", static_cast<long long>(errors.load()));
  std::printf("throughput          %.0f committed writes/s, %.0f attempts/s\n", committed.load() / elapsed,
              attempts.load() / elapsed);
  std::printf("invariant           %s: sum of versions %lld == committed writes %lld; totals == committed increments\n",
              ok && version_sum == committed.load() ? "HOLDS" : "VIOLATED", static_cast<long long>(version_sum),
              static_cast<long long>(committed.load()));
  return ok && version_sum == committed.load() ? 0 : 2;
}

gatedb::Options CliOptions() {
  gatedb::Options options;
  // Index builds over large collections report their progress on stderr.
  options.index_build_progress = [](const std::string& ns, const std::string& index, uint64_t done,
                                    uint64_t total) {
    if (total < 10000) return;
    std::fprintf(stderr, "building index %s on %s: %llu/%llu documents (%d%%)\n", index.c_str(), ns.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 static_cast<int>(100 * done / total));
  };
  return options;
}

bool ParseInt(const char* s, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sub = argc > 1 ? argv[1] : "";
  if (sub.empty() || sub == "help" || sub == "--help" || sub == "-h") {
    PrintMainHelp();
    return sub.empty() ? 1 : 0;
  }
  if (sub == "serve") return gatedb::cli::RunServe(argc, argv, kDefaultDir, CliOptions());
  if (sub == "sync") return gatedb::cli::RunSync(argc, argv, kDefaultDir, CliOptions());
  if (sub != "run" && sub != "demo") {
    std::fprintf(stderr, "gatedb: unknown subcommand '%s' (see gatedb --help)\n", sub.c_str());
    return 1;
  }
  std::string dir = kDefaultDir;
  const char* single = nullptr;
  DemoConfig demo;
  demo.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gatedb %s: %s needs a value\n", sub.c_str(), what);
        std::exit(1);
      }
      return argv[++i];
    };
    long long v = 0;
    auto need_int = [&](const char* what, long long min) {
      const char* s = need(what);
      if (!ParseInt(s, &v) || v < min) {
        std::fprintf(stderr, "gatedb %s: %s needs an integer >= %lld, got '%s'\n", sub.c_str(), what, min, s);
        std::exit(1);
      }
      return v;
    };
    if (a == "--help" || a == "-h") {
      sub == "run" ? PrintRunHelp() : PrintDemoHelp();
      return 0;
    } else if (a == "--db") {
      dir = need("--db");
    } else if (sub == "run" && a == "-c") {
      single = need("-c");
    } else if (sub == "demo" && a == "--agents") {
      demo.agents = static_cast<int>(need_int("--agents", 1));
    } else if (sub == "demo" && a == "--docs") {
      demo.docs = static_cast<int>(need_int("--docs", 1));
    } else if (sub == "demo" && a == "--seconds") {
      demo.seconds = static_cast<double>(need_int("--seconds", 1));
    } else if (sub == "demo" && a == "--think-ms") {
      demo.think_ms = static_cast<int>(need_int("--think-ms", 0));
    } else if (sub == "demo" && a == "--idiom") {
      demo.idiom = true;
    } else if (sub == "demo" && a == "--seed") {
      demo.seed = static_cast<uint64_t>(need_int("--seed", 0));
    } else {
      std::fprintf(stderr, "gatedb %s: unknown option '%s' (see gatedb %s --help)\n", sub.c_str(), a.c_str(),
                   sub.c_str());
      return 1;
    }
  }
  auto db = gatedb::Database::Open(dir, CliOptions());
  if (!db.ok()) {
    std::fprintf(stderr, "gatedb: %s\n", db.status().ToString().c_str());
    return 1;
  }
  if (sub == "run") return RunCommandLoop(db->get(), single);
  return RunDemo(db->get(), demo);
}
