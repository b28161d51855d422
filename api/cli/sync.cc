// `gatedb sync`: the data directory and an upstream (PROTOCOL.md, "Upstream
// sync"), over gatedb::Sync (gatedb/sync.h).
//
//   gatedb sync --db DIR --upstream URI --ns DB.COLL [--ns ...] [--origin NAME] (--once | --follow)
//
// --once prints one JSON summary line and exits 0 (1 on an error, with the
// error on stderr; nothing pending is lost).  --follow syncs every
// --intervalMs until SIGINT or SIGTERM, printing a line for each round that
// moved something, then the totals.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "gatedb/db.h"
#include "gatedb/sync.h"

namespace gatedb {
namespace cli {

namespace {

void PrintSyncHelp(const char* default_dir) {
  std::printf(
      "Usage: gatedb sync [--db DIR] --upstream URI --ns DB.COLL [--ns ...] (--once | --follow)\n\n"
      "Pushes this data directory's writes to the upstream (MongoDB Atlas, a replica set, or\n"
      "gatedb serve) and pulls the upstream's, each write once; what both sides changed is\n"
      "decided by the collection's conflict policy.\n\n"
      "  --db DIR          data directory (default %s)\n"
      "  --upstream URI    mongodb:// or mongodb+srv:// connection string (TLS, credentials as in it)\n"
      "  --ns DB.COLL      a collection to sync (repeatable)\n"
      "  --origin NAME     this side's name upstream (default: made once, kept in the data directory)\n"
      "  --once            one round; prints {\"pushed\": n, \"pulled\": n, \"conflicts\": n, ...}\n"
      "  --follow          keep syncing until SIGINT or SIGTERM\n"
      "  --intervalMs N    --follow: pause between rounds (default 500)\n"
      "  --batch N         documents per upstream transaction (default 500)\n"
      "  --progress        progress lines on stderr\n\n"
      "Example:\n"
      "  gatedb sync --db ./edge --upstream 'mongodb://127.0.0.1:27017/?replicaSet=gatedb' --ns shop.orders --once\n",
      default_dir);
}

}  // namespace

int RunSync(int argc, char** argv, const char* default_dir, const Options& db_options) {
  SyncOptions o;
  std::string dir = default_dir;
  bool once = false, follow = false, progress = false;
  long long interval_ms = 500;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gatedb sync: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      PrintSyncHelp(default_dir);
      return 0;
    } else if (a == "--db") {
      dir = value("--db");
    } else if (a == "--upstream") {
      o.upstream_uri = value("--upstream");
    } else if (a == "--ns") {
      o.namespaces.push_back(value("--ns"));
    } else if (a == "--origin") {
      o.origin = value("--origin");
    } else if (a == "--once") {
      once = true;
    } else if (a == "--follow") {
      follow = true;
    } else if (a == "--progress") {
      progress = true;
    } else if (a == "--intervalMs" || a == "--batch") {
      const char* v = value(a.c_str());
      char* end = nullptr;
      long long n = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || n < (a == "--batch" ? 1 : 0)) {
        std::fprintf(stderr, "gatedb sync: %s takes a number, not '%s'\n", a.c_str(), v);
        return 2;
      }
      if (a == "--batch") {
        o.batch_size = n;
      } else {
        interval_ms = n;
      }
    } else {
      std::fprintf(stderr, "gatedb sync: unknown option '%s' (see gatedb sync --help)\n", a.c_str());
      return 2;
    }
  }
  if (once == follow) {
    std::fprintf(stderr, "gatedb sync: give exactly one of --once and --follow\n");
    return 2;
  }
  if (progress) o.progress = [](const std::string& line) { std::fprintf(stderr, "gatedb sync: %s\n", line.c_str()); };
  // SIGINT and SIGTERM end --follow between rounds.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto db = Database::Open(dir, db_options);
  if (!db.ok()) {
    std::fprintf(stderr, "gatedb sync: cannot open %s: %s\n", dir.c_str(), db.status().ToString().c_str());
    return 1;
  }
  auto sync = Sync::Open(db->get(), o);
  if (!sync.ok()) {
    std::fprintf(stderr, "gatedb sync: %s\n", sync.status().ToString().c_str());
    return 1;
  }
  if (once) {
    auto r = (*sync)->RunOnce();
    if (!r.ok()) {
      std::fprintf(stderr, "gatedb sync: %s (nothing pending is lost: the next run goes on)\n",
                   r.status().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", r->ToJson().c_str());
    return 0;
  }
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });
  SyncReport total;
  int status = 0;
  while (!stop) {
    auto r = (*sync)->RunOnce();
    if (!r.ok()) {
      // Keep following: an upstream that went away may come back.
      std::fprintf(stderr, "gatedb sync: %s (retrying)\n", r.status().ToString().c_str());
    } else {
      total.pushed += r->pushed;
      total.pulled += r->pulled;
      total.merged += r->merged;
      total.conflicts += r->conflicts;
      total.skipped += r->skipped;
      if (r->pushed + r->pulled + r->merged + r->conflicts > 0) {
        std::printf("%s\n", r->ToJson().c_str());
        std::fflush(stdout);
      }
    }
    for (long long waited = 0; waited < interval_ms && !stop; waited += 20) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (waiter.joinable()) waiter.join();
  std::printf("%s\n", total.ToJson().c_str());
  return status;
}

}  // namespace cli
}  // namespace gatedb
