// `gatedb serve`: the wire-protocol server over a data directory
// (PROTOCOL.md, "The wire-protocol server").
//
//   gatedb serve --db DIR [--port N] [--bind ADDR[,ADDR]] [--socket PATH] [--replSet NAME] ...
//
// Prints "listening on HOST:PORT" (and "listening on PATH") once it
// accepts connections; SIGINT or SIGTERM stops it cleanly (exit 0).
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/server/wire_server.h"
#include "gatedb/db.h"

namespace gatedb {
namespace cli {

namespace {

void PrintServeHelp(const char* default_dir) {
  std::printf(
      "Usage: gatedb serve [--db DIR] [options]\n\n"
      "Serves the data directory over MongoDB's wire protocol, to mongosh and MongoDB's drivers.\n"
      "Prints 'listening on HOST:PORT' when ready; SIGINT or SIGTERM stops it cleanly (exit 0).\n\n"
      "  --db DIR               data directory (default %s)\n"
      "  --port N               TCP port (default 27017; 0 takes a free port)\n"
      "  --bind ADDR[,ADDR]     addresses to listen on (default 127.0.0.1); 'localhost' is 127.0.0.1\n"
      "  --socket PATH          also listen on a Unix domain socket (mode 0600)\n"
      "  --replSet NAME         the replica set name presented to drivers (default gatedb)\n"
      "  --auth                 clients authenticate (SCRAM-SHA-256, users made with createUser) before\n"
      "                         anything but hello and ping; with no user yet, a loopback client may\n"
      "                         create the first one.  Once users exist, clients authenticate anyway.\n"
      "  --allowRemoteNoAuth    allow binding to non-loopback addresses without --auth: anyone who\n"
      "                         reaches them may read and write\n"
      "  --tlsCertificateKeyFile PATH\n"
      "                         serve TCP clients over TLS only (1.2 or later): PATH is a PEM file with\n"
      "                         the certificate (then its chain) and its unencrypted private key.  The\n"
      "                         Unix socket stays plaintext.\n"
      "  --tlsCAFile PATH       with --tlsCertificateKeyFile: ask clients for a certificate and refuse\n"
      "                         one not signed by these PEM authorities (clients without one are served)\n"
      "  --tlsMode MODE         requireTLS (needs --tlsCertificateKeyFile) or disabled (the default\n"
      "                         without it; with it, the certificate options are ignored)\n"
      "  --maxConns N           connections served at once (default 1000); more are refused\n"
      "  --workers N            threads running commands (default 8)\n"
      "  --readTimeoutMs N      a message must arrive whole within N ms of its first byte (default 30000)\n"
      "  --idleTimeoutMs N      close connections idle for N ms (default 0: never)\n"
      "  --quiet                no log line per connection opened or closed\n"
      "  --setParameter transactionLifetimeLimitSeconds=N\n"
      "                         abort a session's transaction still open after N s, releasing its\n"
      "                         locks (default 60, as MongoDB)\n\n"
      "Example:\n"
      "  gatedb serve --db ./gatedb-data --port 27017 &\n"
      "  mongosh 'mongodb://127.0.0.1:27017/test' --eval 'db.orders.insertOne({_id: 1})'\n"
      "  gatedb serve --db ./gatedb-data --tlsCertificateKeyFile server.pem &\n"
      "  mongosh 'mongodb://localhost:27017/test?tls=true&tlsCAFile=ca.pem' --eval 'db.orders.findOne()'\n",
      default_dir);
}

bool ParseInt(const char* s, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0') return false;
  *out = v;
  return true;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Many connections need many descriptors: take the hard limit.
void RaiseDescriptorLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int RunServe(int argc, char** argv, const char* default_dir, const Options& default_db_options) {
  Options db_options = default_db_options;
  server::ServerOptions opts;
  std::string dir = default_dir;
  std::string tls_mode;  // --tlsMode, when given
  for (int i = 0; i < argc; ++i) opts.argv.push_back(argv[i]);
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gatedb serve: %s needs a value\n", what);
        std::exit(1);
      }
      return argv[++i];
    };
    auto need_int = [&](const char* what, long long min, long long max) {
      const char* s = need(what);
      long long v = 0;
      if (!ParseInt(s, &v) || v < min || v > max) {
        std::fprintf(stderr, "gatedb serve: %s needs an integer from %lld to %lld, got '%s'\n", what, min, max, s);
        std::exit(1);
      }
      return v;
    };
    if (a == "--help" || a == "-h") {
      PrintServeHelp(default_dir);
      return 0;
    } else if (a == "--db") {
      dir = need("--db");
    } else if (a == "--port") {
      opts.port = static_cast<int>(need_int("--port", 0, 65535));
    } else if (a == "--bind" || a == "--bind_ip") {
      opts.bind = SplitComma(need("--bind"));
    } else if (a == "--socket") {
      opts.socket_path = need("--socket");
    } else if (a == "--replSet") {
      opts.set_name = need("--replSet");
      if (opts.set_name.empty()) {
        std::fprintf(stderr, "gatedb serve: --replSet needs a name\n");
        return 1;
      }
    } else if (a == "--auth") {
      opts.auth = true;
    } else if (a == "--allowRemoteNoAuth") {
      opts.allow_remote_without_auth = true;
    } else if (a == "--tlsCertificateKeyFile") {
      opts.tls_certificate_key_file = need("--tlsCertificateKeyFile");
    } else if (a == "--tlsCAFile") {
      opts.tls_ca_file = need("--tlsCAFile");
    } else if (a == "--tlsMode") {
      tls_mode = need("--tlsMode");
      if (tls_mode != "requireTLS" && tls_mode != "disabled") {
        std::fprintf(stderr, "gatedb serve: --tlsMode is requireTLS or disabled, got '%s' (allowTLS and preferTLS "
                             "are not supported)\n", tls_mode.c_str());
        return 1;
      }
    } else if (a == "--maxConns") {
      opts.max_connections = static_cast<size_t>(need_int("--maxConns", 1, 1000000));
    } else if (a == "--workers") {
      opts.worker_threads = static_cast<int>(need_int("--workers", 1, 1024));
    } else if (a == "--readTimeoutMs") {
      opts.read_timeout_ms = need_int("--readTimeoutMs", 1, 24LL * 3600 * 1000);
    } else if (a == "--idleTimeoutMs") {
      opts.idle_timeout_ms = need_int("--idleTimeoutMs", 0, 365LL * 24 * 3600 * 1000);
    } else if (a == "--quiet") {
      opts.quiet = true;
    } else if (a == "--setParameter") {
      std::string p = need("--setParameter");
      const std::string kLifetime = "transactionLifetimeLimitSeconds=";
      long long v = 0;
      if (p.compare(0, kLifetime.size(), kLifetime) != 0) {
        std::fprintf(stderr, "gatedb serve: unknown parameter '%s' (only transactionLifetimeLimitSeconds=N)\n",
                     p.c_str());
        return 1;
      }
      if (!ParseInt(p.c_str() + kLifetime.size(), &v) || v < 1 || v > 24LL * 3600) {
        std::fprintf(stderr, "gatedb serve: transactionLifetimeLimitSeconds needs an integer from 1 to 86400, got '%s'\n",
                     p.c_str() + kLifetime.size());
        return 1;
      }
      db_options.transaction_lifetime_ms = v * 1000;
    } else {
      std::fprintf(stderr, "gatedb serve: unknown option '%s' (see gatedb serve --help)\n", a.c_str());
      return 1;
    }
  }
  if (tls_mode == "requireTLS" && opts.tls_certificate_key_file.empty()) {
    std::fprintf(stderr, "gatedb serve: --tlsMode requireTLS needs --tlsCertificateKeyFile\n");
    return 1;
  }
  if (tls_mode == "disabled") {
    opts.tls_certificate_key_file.clear();
    opts.tls_ca_file.clear();
  }
  opts.db_path = dir;
  RaiseDescriptorLimit();
  // SIGINT and SIGTERM are taken by sigwait below: block them before any
  // thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto db = Database::Open(dir, db_options);
  if (!db.ok()) {
    std::fprintf(stderr, "gatedb serve: %s\n", db.status().ToString().c_str());
    return 1;
  }
  auto srv = server::WireServer::Start(db->get(), opts);
  if (!srv.ok()) {
    std::fprintf(stderr, "gatedb serve: %s\n", srv.status().ToString().c_str());
    return 1;
  }
  for (const std::string& where : (*srv)->listening()) std::printf("listening on %s\n", where.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "gatedb serve: %s received: finishing the commands in flight and closing %s\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", dir.c_str());
  (*srv)->Stop();
  srv->reset();
  db->reset();
  std::fprintf(stderr, "gatedb serve: stopped cleanly\n");
  return 0;
}

}  // namespace cli
}  // namespace gatedb
