// What drivers and shells ask of a server beside CRUD: hello (isMaster),
// buildInfo, getParameter, getLog, hostInfo, serverStatus,
// connectionStatus, whatsmyuri, getCmdLineOpts, and the session commands
// endSessions, killSessions, killAllSessions.
//
// Over the wire server (ctx.client set) hello presents the primary of a
// single-node replica set, so drivers allow sessions, transactions and
// retryable writes; in process it answers as a standalone server.
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/auth/principal.h"
#include "api/src/txn_manager.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

namespace {

// MongoDB 7.0's wire version: OP_MSG, sessions, transactions and
// retryable writes, without the 8.0 bulkWrite command gatedb lacks.
constexpr int32_t kMaxWireVersion = 21;
constexpr const char* kMongoVersion = "7.0.0";
constexpr const char* kGatedbVersion = "0.2.0";
constexpr int32_t kSessionTimeoutMinutes = 30;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// The lsid documents of endSessions / killSessions, as the bytes sessions
// are keyed by.
Status ReadSessionList(const CommandContext& ctx, std::vector<std::string>* out) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_ARRAY(&it)) return TypeError(ctx.command_name, bson_iter_type(&it), "array");
  bson_iter_t e;
  bson_iter_recurse(&it, &e);
  while (bson_iter_next(&e)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&e)) return TypeError(ctx.command_name + " element", bson_iter_type(&e), "object");
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&e, &len, &data);
    out->emplace_back(reinterpret_cast<const char*>(data), len);
  }
  return Status::OK();
}

void EndSessions(CommandContext& ctx, const std::vector<std::string>& lsids, bool all) {
  if (ctx.txns != nullptr) ctx.txns->EndSessions(lsids, all);
  if (all) {
    ctx.db->KillSessionCursors("");
  } else {
    for (const std::string& lsid : lsids) {
      if (!lsid.empty()) ctx.db->KillSessionCursors(lsid);
    }
  }
}

}  // namespace

Status HelloCommand(CommandContext& ctx, bson_t* reply) {
  const bool legacy = ctx.command_name != "hello";
  bson_iter_t it;
  bool hello_ok = bson_iter_init_find(&it, ctx.cmd, "helloOk") && bson_iter_as_bool(&it);
  if (hello_ok) BSON_APPEND_BOOL(reply, "helloOk", true);
  BSON_APPEND_BOOL(reply, legacy ? "ismaster" : "isWritablePrimary", true);
  const ClientInfo* c = ctx.client;
  if (c != nullptr) {
    std::vector<std::string> hosts = {c->me};
    AppendStringArray(reply, "hosts", hosts);
    BSON_APPEND_UTF8(reply, "setName", c->set_name.c_str());
    BSON_APPEND_INT32(reply, "setVersion", 1);
    BSON_APPEND_BOOL(reply, "secondary", false);
    BSON_APPEND_UTF8(reply, "primary", c->me.c_str());
    BSON_APPEND_UTF8(reply, "me", c->me.c_str());
  }
  BSON_APPEND_INT32(reply, "maxBsonObjectSize", 16 * 1024 * 1024);
  BSON_APPEND_INT32(reply, "maxMessageSizeBytes", 48000000);
  BSON_APPEND_INT32(reply, "maxWriteBatchSize", 100000);
  BSON_APPEND_DATE_TIME(reply, "localTime", NowMillis());
  BSON_APPEND_INT32(reply, "logicalSessionTimeoutMinutes", kSessionTimeoutMinutes);
  if (c != nullptr) BSON_APPEND_INT64(reply, "connectionId", c->connection_id);
  BSON_APPEND_INT32(reply, "minWireVersion", 0);
  BSON_APPEND_INT32(reply, "maxWireVersion", kMaxWireVersion);
  BSON_APPEND_BOOL(reply, "readOnly", false);
  // Authentication in the handshake: the mechanisms of a user drivers ask
  // about ("db.user"), and a first SASL step sent along (MongoDB 4.4's
  // speculativeAuthenticate), answered with the conversation's next step.
  if (bson_iter_init_find(&it, ctx.cmd, "saslSupportedMechs") && BSON_ITER_HOLDS_UTF8(&it)) {
    std::string name = bson_iter_utf8(&it, nullptr);
    size_t dot = name.find('.');
    if (dot != std::string::npos) {
      auto u = ctx.db->GetUser(name.substr(dot + 1), name.substr(0, dot));
      if (u.ok() && *u) AppendStringArray(reply, "saslSupportedMechs", {"SCRAM-SHA-256"});
    }
  }
  if (bson_iter_init_find(&it, ctx.cmd, "speculativeAuthenticate") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      ctx.client != nullptr && ctx.client->auth != nullptr) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    bson_t spec;
    if (bson_init_static(&spec, data, len)) {
      std::string db = "admin";
      bson_iter_t d;
      if (bson_iter_init_find(&d, &spec, "db") && BSON_ITER_HOLDS_UTF8(&d)) db = bson_iter_utf8(&d, nullptr);
      bson_t step = BSON_INITIALIZER;
      // A failed speculative step leaves the reply without the field: the
      // driver then authenticates with saslStart, and gets the error there.
      if (SaslStartFields(ctx, &spec, db, &step).ok()) BSON_APPEND_DOCUMENT(reply, "speculativeAuthenticate", &step);
      bson_destroy(&step);
    }
  }
  return Status::OK();
}

Status BuildInfoCommand(CommandContext& ctx, bson_t* reply) {
  BSON_APPEND_UTF8(reply, "version", kMongoVersion);
  BSON_APPEND_UTF8(reply, "gitVersion", "gatedb");
  BSON_APPEND_UTF8(reply, "gatedbVersion", kGatedbVersion);
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "versionArray", &arr);
  BSON_APPEND_INT32(&arr, "0", 7);
  BSON_APPEND_INT32(&arr, "1", 0);
  BSON_APPEND_INT32(&arr, "2", 0);
  BSON_APPEND_INT32(&arr, "3", 0);
  bson_append_array_end(reply, &arr);
  AppendStringArray(reply, "modules", {});
  AppendStringArray(reply, "storageEngines", {"rocksdb"});
  BSON_APPEND_UTF8(reply, "javascriptEngine", "none");
  BSON_APPEND_INT32(reply, "bits", 64);
  BSON_APPEND_BOOL(reply, "debug", false);
  BSON_APPEND_INT32(reply, "maxBsonObjectSize", 16 * 1024 * 1024);
  return Status::OK();
}

Status GetParameterCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  bool all = BSON_ITER_HOLDS_UTF8(&it) && std::strcmp(bson_iter_utf8(&it, nullptr), "*") == 0;
  if (!all && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    bson_iter_t a;
    all = bson_iter_recurse(&it, &a) && bson_iter_find(&a, "allParameters") && bson_iter_as_bool(&a);
  }
  const Options& opts = ctx.db->options();
  struct Param {
    const char* name;
    void (*append)(const Options&, bson_t*, const char*);
  };
  static const Param kParams[] = {
      {"featureCompatibilityVersion",
       [](const Options&, bson_t* out, const char* k) {
         bson_t d;
         bson_append_document_begin(out, k, -1, &d);
         BSON_APPEND_UTF8(&d, "version", "7.0");
         bson_append_document_end(out, &d);
       }},
      {"authenticationMechanisms",
       [](const Options&, bson_t* out, const char* k) {
         bson_t a;
         bson_append_array_begin(out, k, -1, &a);
         BSON_APPEND_UTF8(&a, "0", "SCRAM-SHA-256");
         bson_append_array_end(out, &a);
       }},
      {"cursorTimeoutMillis",
       [](const Options& o, bson_t* out, const char* k) { bson_append_int64(out, k, -1, o.cursor_timeout_ms); }},
      {"localLogicalSessionTimeoutMinutes",
       [](const Options&, bson_t* out, const char* k) { bson_append_int32(out, k, -1, kSessionTimeoutMinutes); }},
      {"maxBSONDepth", [](const Options&, bson_t* out, const char* k) { bson_append_int32(out, k, -1, 200); }},
      {"transactionLifetimeLimitSeconds",
       [](const Options& o, bson_t* out, const char* k) {
         bson_append_int32(out, k, -1, static_cast<int32_t>(std::max<int64_t>(1, o.transaction_lifetime_ms / 1000)));
       }},
  };
  bool found = false;
  for (const Param& p : kParams) {
    bson_iter_t f;
    if (all || bson_iter_init_find(&f, ctx.cmd, p.name)) {
      p.append(opts, reply, p.name);
      found = true;
    }
  }
  if (!found) return Status(ErrorCode::kInvalidOptions, "no option found to get");
  return Status::OK();
}

Status GetLogCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_UTF8(&it)) return TypeError("getLog", bson_iter_type(&it), "string");
  std::string_view name = bson_iter_utf8(&it, nullptr);
  if (name == "*") {
    AppendStringArray(reply, "names", {"global", "startupWarnings"});
    return Status::OK();
  }
  std::vector<std::string> lines;
  if (name == "global") {
    if (ctx.client != nullptr && ctx.client->server != nullptr) lines = ctx.client->server->RecentLog();
  } else if (name != "startupWarnings") {
    return Status(ErrorCode::kBadValue, "no RamLog named: " + std::string(name));
  }
  BSON_APPEND_INT32(reply, "totalLinesWritten", static_cast<int32_t>(lines.size()));
  AppendStringArray(reply, "log", lines);
  return Status::OK();
}

Status HostInfoCommand(CommandContext& ctx, bson_t* reply) {
  struct utsname u;
  std::memset(&u, 0, sizeof u);
  uname(&u);
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  int64_t mem_mb = pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size / (1024 * 1024) : 0;
  bson_t sys, os, extra;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "system", &sys);
  BSON_APPEND_DATE_TIME(&sys, "currentTime", NowMillis());
  BSON_APPEND_UTF8(&sys, "hostname", HostName().c_str());
  BSON_APPEND_INT32(&sys, "cpuAddrSize", 64);
  BSON_APPEND_INT64(&sys, "memSizeMB", mem_mb);
  BSON_APPEND_INT32(&sys, "numCores", static_cast<int32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  BSON_APPEND_UTF8(&sys, "cpuArch", u.machine);
  bson_append_document_end(reply, &sys);
  BSON_APPEND_DOCUMENT_BEGIN(reply, "os", &os);
  BSON_APPEND_UTF8(&os, "type", u.sysname);
  BSON_APPEND_UTF8(&os, "name", u.sysname);
  BSON_APPEND_UTF8(&os, "version", u.release);
  bson_append_document_end(reply, &os);
  BSON_APPEND_DOCUMENT_BEGIN(reply, "extra", &extra);
  BSON_APPEND_UTF8(&extra, "versionString", u.version);
  bson_append_document_end(reply, &extra);
  return Status::OK();
}

Status ServerStatusCommand(CommandContext& ctx, bson_t* reply) {
  BSON_APPEND_UTF8(reply, "host", HostName().c_str());
  BSON_APPEND_UTF8(reply, "version", kMongoVersion);
  BSON_APPEND_UTF8(reply, "gatedbVersion", kGatedbVersion);
  BSON_APPEND_UTF8(reply, "process", "gatedb");
  BSON_APPEND_INT64(reply, "pid", static_cast<int64_t>(getpid()));
  BSON_APPEND_DATE_TIME(reply, "localTime", NowMillis());
  if (ctx.client != nullptr && ctx.client->server != nullptr) ctx.client->server->AppendServerStatus(reply);
  bson_t metrics, cursor, open, engine;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "metrics", &metrics);
  BSON_APPEND_DOCUMENT_BEGIN(&metrics, "cursor", &cursor);
  BSON_APPEND_DOCUMENT_BEGIN(&cursor, "open", &open);
  BSON_APPEND_INT64(&open, "total", static_cast<int64_t>(ctx.db->OpenCursors()));
  bson_append_document_end(&cursor, &open);
  bson_append_document_end(&metrics, &cursor);
  bson_append_document_end(reply, &metrics);
  BSON_APPEND_DOCUMENT_BEGIN(reply, "storageEngine", &engine);
  BSON_APPEND_UTF8(&engine, "name", "rocksdb");
  BSON_APPEND_BOOL(&engine, "supportsCommittedReads", true);
  BSON_APPEND_BOOL(&engine, "persistent", true);
  bson_append_document_end(reply, &engine);
  return Status::OK();
}

// rs.status(): the one member, primary.  In process there is no replica
// set, as on a standalone mongod.
Status ReplSetGetStatusCommand(CommandContext& ctx, bson_t* reply) {
  if (ctx.client == nullptr) return Status(ErrorCode::kNoReplicationEnabled, "not running with --replSet");
  const int64_t now = NowMillis();
  BSON_APPEND_UTF8(reply, "set", ctx.client->set_name.c_str());
  BSON_APPEND_DATE_TIME(reply, "date", now);
  BSON_APPEND_INT32(reply, "myState", 1);
  BSON_APPEND_INT32(reply, "term", 1);
  BSON_APPEND_INT32(reply, "heartbeatIntervalMillis", 2000);
  BSON_APPEND_INT32(reply, "majorityVoteCount", 1);
  BSON_APPEND_INT32(reply, "writeMajorityCount", 1);
  BSON_APPEND_INT32(reply, "votingMembersCount", 1);
  bson_t members, m;
  BSON_APPEND_ARRAY_BEGIN(reply, "members", &members);
  BSON_APPEND_DOCUMENT_BEGIN(&members, "0", &m);
  BSON_APPEND_INT32(&m, "_id", 0);
  BSON_APPEND_UTF8(&m, "name", ctx.client->me.c_str());
  BSON_APPEND_DOUBLE(&m, "health", 1.0);
  BSON_APPEND_INT32(&m, "state", 1);
  BSON_APPEND_UTF8(&m, "stateStr", "PRIMARY");
  BSON_APPEND_BOOL(&m, "self", true);
  bson_append_document_end(&members, &m);
  bson_append_array_end(reply, &members);
  return Status::OK();
}

Status ConnectionStatusCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bool privileges = bson_iter_init_find(&it, ctx.cmd, "showPrivileges") && bson_iter_as_bool(&it);
  bson_t auth, users, roles;
  const auth::Principal* p = ctx.principal && ctx.principal->authenticated() ? ctx.principal.get() : nullptr;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "authInfo", &auth);
  BSON_APPEND_ARRAY_BEGIN(&auth, "authenticatedUsers", &users);
  if (p != nullptr) {
    bson_t u;
    BSON_APPEND_DOCUMENT_BEGIN(&users, "0", &u);
    BSON_APPEND_UTF8(&u, "user", p->user().c_str());
    BSON_APPEND_UTF8(&u, "db", p->db().c_str());
    bson_append_document_end(&users, &u);
  }
  bson_append_array_end(&auth, &users);
  if (p != nullptr) {
    auth::AppendRoleNames(p->roles(), &auth, "authenticatedUserRoles");
  } else {
    BSON_APPEND_ARRAY_BEGIN(&auth, "authenticatedUserRoles", &roles);
    bson_append_array_end(&auth, &roles);
  }
  if (privileges) {
    auth::AppendPrivileges(p != nullptr ? p->privileges() : std::vector<auth::Privilege>(), &auth,
                           "authenticatedUserPrivileges");
  }
  bson_append_document_end(reply, &auth);
  return Status::OK();
}

Status WhatsMyUriCommand(CommandContext& ctx, bson_t* reply) {
  BSON_APPEND_UTF8(reply, "you", ctx.client != nullptr ? ctx.client->peer.c_str() : "in-process");
  return Status::OK();
}

Status GetCmdLineOptsCommand(CommandContext& ctx, bson_t* reply) {
  if (ctx.client != nullptr && ctx.client->server != nullptr) {
    ctx.client->server->AppendCmdLineOpts(reply);
    return Status::OK();
  }
  bson_t argv, parsed;
  BSON_APPEND_ARRAY_BEGIN(reply, "argv", &argv);
  bson_append_array_end(reply, &argv);
  BSON_APPEND_DOCUMENT_BEGIN(reply, "parsed", &parsed);
  bson_append_document_end(reply, &parsed);
  return Status::OK();
}

Status EndSessionsCommand(CommandContext& ctx, bson_t* reply) {
  std::vector<std::string> lsids;
  RETURN_IF_ERROR(ReadSessionList(ctx, &lsids));
  EndSessions(ctx, lsids, /*all=*/false);
  return Status::OK();
}

Status KillSessionsCommand(CommandContext& ctx, bson_t* reply) {
  std::vector<std::string> lsids;
  RETURN_IF_ERROR(ReadSessionList(ctx, &lsids));
  EndSessions(ctx, lsids, /*all=*/false);
  return Status::OK();
}

Status KillAllSessionsCommand(CommandContext& ctx, bson_t* reply) {
  // [] kills every session; a list of users names whose sessions die, and
  // without authentication every session belongs to the same nobody.
  std::vector<std::string> users;
  RETURN_IF_ERROR(ReadSessionList(ctx, &users));
  EndSessions(ctx, {}, /*all=*/true);
  return Status::OK();
}

}  // namespace commands
}  // namespace gatedb
