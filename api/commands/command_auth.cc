// What each command needs of its caller (MongoDB's per-command privilege
// checks), in one table.  Writes (insert, update, delete, findAndModify and
// what aggregate's $out and $merge write) are not checked here: the write
// gate checks them itself, paths and sources included, and journals a
// refusal.
#include <cstring>
#include <string>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/auth/principal.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

namespace {

using auth::Action;
using auth::Target;

enum class On {
  kNone,        // anyone authenticated
  kCollection,  // the collection the command's first field names, in $db
  kDatabase,    // $db
  kCluster,     // the server
  kGate,        // the write gate decides
};

struct Rule {
  const char* command;
  On on;
  Action action;
};

// Every command of the dispatcher's table, by what it needs.
const Rule kRules[] = {
    {"insert", On::kGate, Action::kInsert},
    {"update", On::kGate, Action::kUpdate},
    {"delete", On::kGate, Action::kRemove},
    {"findAndModify", On::kGate, Action::kUpdate},
    {"findandmodify", On::kGate, Action::kUpdate},
    {"find", On::kCollection, Action::kFind},
    {"count", On::kCollection, Action::kFind},
    {"distinct", On::kCollection, Action::kFind},
    {"aggregate", On::kCollection, Action::kFind},  // ({aggregate: 1}: the database)
    {"getMore", On::kCollection, Action::kFind},     // its `collection`
    {"explain", On::kCollection, Action::kFind},     // the explained command's
    {"conflictStats", On::kCollection, Action::kFind},
    {"create", On::kCollection, Action::kCreateCollection},
    {"createIndexes", On::kCollection, Action::kCreateIndex},
    {"listIndexes", On::kCollection, Action::kListIndexes},
    {"dropIndexes", On::kCollection, Action::kDropIndex},
    {"deleteIndexes", On::kCollection, Action::kDropIndex},
    {"drop", On::kCollection, Action::kDropCollection},
    {"collStats", On::kCollection, Action::kCollStats},
    {"collMod", On::kCollection, Action::kCollMod},
    {"acquireLease", On::kCollection, Action::kUpdate},
    {"renewLease", On::kCollection, Action::kUpdate},
    {"releaseLease", On::kCollection, Action::kUpdate},
    {"renameCollection", On::kCollection, Action::kRenameCollectionSameDB},  // both namespaces
    {"dropDatabase", On::kDatabase, Action::kDropDatabase},
    {"listCollections", On::kNone, Action::kListCollections},  // checked (and filtered) by the command
    {"dbStats", On::kDatabase, Action::kDbStats},
    {"dbstats", On::kDatabase, Action::kDbStats},
    {"createUser", On::kDatabase, Action::kCreateUser},
    {"updateUser", On::kDatabase, Action::kChangePassword},  // and grant/revoke for roles (the command)
    {"dropUser", On::kDatabase, Action::kDropUser},
    {"usersInfo", On::kDatabase, Action::kViewUser},         // one's own: always (the command)
    {"grantRolesToUser", On::kDatabase, Action::kGrantRole},
    {"revokeRolesFromUser", On::kDatabase, Action::kRevokeRole},
    {"createRole", On::kDatabase, Action::kCreateRole},
    {"updateRole", On::kDatabase, Action::kCreateRole},
    {"dropRole", On::kDatabase, Action::kDropRole},
    {"rolesInfo", On::kDatabase, Action::kViewRole},
    {"grantPrivilegesToRole", On::kDatabase, Action::kGrantRole},
    {"revokePrivilegesFromRole", On::kDatabase, Action::kRevokeRole},
    // The journal and the idempotency log span collections, sync the whole
    // store: the server's (root's).
    {"journal", On::kCluster, Action::kFind},
    {"idempotencyStatus", On::kCluster, Action::kFind},
    {"syncStatus", On::kCluster, Action::kFind},
    {"syncResolve", On::kCluster, Action::kUpdate},
    {"listDatabases", On::kNone, Action::kListDatabases},  // filtered to what the caller may see
    {"serverStatus", On::kCluster, Action::kServerStatus},
    {"hostInfo", On::kCluster, Action::kHostInfo},
    {"getLog", On::kCluster, Action::kGetLog},
    {"getCmdLineOpts", On::kCluster, Action::kGetCmdLineOpts},
    {"getParameter", On::kCluster, Action::kGetParameter},
    {"replSetGetStatus", On::kCluster, Action::kReplSetGetStatus},
    {"killAllSessions", On::kCluster, Action::kKillAnySession},
    {"buildInfo", On::kNone, Action::kFind},
    {"buildinfo", On::kNone, Action::kFind},
    {"connectionStatus", On::kNone, Action::kFind},
    {"whatsmyuri", On::kNone, Action::kFind},
    {"killCursors", On::kNone, Action::kFind},
    {"endSessions", On::kNone, Action::kFind},
    {"killSessions", On::kNone, Action::kFind},
    {"commitTransaction", On::kNone, Action::kFind},  // its writes were checked
    {"abortTransaction", On::kNone, Action::kFind},
};

// What an unauthenticated caller may run: the handshake, authentication, ping.
bool OpenToAll(const std::string& name) {
  return name == "hello" || name == "isMaster" || name == "ismaster" || name == "ping" || name == "saslStart" ||
         name == "saslContinue" || name == "logout";
}

std::string FirstString(const bson_t* cmd) {
  bson_iter_t it;
  if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_UTF8(&it)) return std::string();
  return bson_iter_utf8(&it, nullptr);
}

std::string StringField(const bson_t* cmd, const char* name) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, cmd, name) || !BSON_ITER_HOLDS_UTF8(&it)) return std::string();
  return bson_iter_utf8(&it, nullptr);
}

// "not authorized on <db> to execute command <name> on <ns>".
Status CheckCommandNs(const auth::Principal& p, Action a, const std::string& db, const std::string& coll,
                      const std::string& command) {
  return p.CheckNamespace(a, db, coll, "execute command " + command);
}

}  // namespace

Status AuthorizeCommand(const CommandContext& ctx) {
  const auth::Principal& p = *ctx.principal;
  const std::string& name = ctx.command_name;
  if (OpenToAll(name)) return Status::OK();
  if (!p.authenticated()) {
    // (MongoDB's localhost exception runs as the owner: the dispatcher.)
    return auth::UnauthorizedError("", name.c_str(), ctx.db_name,
                                   "command " + name + " requires authentication");
  }
  const Rule* rule = nullptr;
  for (const Rule& r : kRules) {
    if (name == r.command) {
      rule = &r;
      break;
    }
  }
  if (rule == nullptr) {
    // A command the table does not name: the server's, root's alone.
    return p.Check(Action::kInprog, Target::Cluster(), "execute command " + name);
  }
  switch (rule->on) {
    case On::kNone:
    case On::kGate:
      return Status::OK();
    case On::kCluster:
      return p.Check(rule->action, Target::Cluster(), "execute command " + name);
    case On::kDatabase:
      if (name == "usersInfo") {
        // One's own user: always.
        bson_iter_t it;
        bson_iter_init(&it, ctx.cmd);
        bson_iter_next(&it);
        if (BSON_ITER_HOLDS_UTF8(&it) && p.user() == bson_iter_utf8(&it, nullptr) && p.db() == ctx.db_name) {
          return Status::OK();
        }
      }
      return CheckCommandNs(p, rule->action, ctx.db_name, "", name);
    case On::kCollection:
      break;
  }
  if (name == "renameCollection") {
    // {renameCollection: "db.a", to: "db.b"} on admin: both namespaces.
    for (const std::string& full : {FirstString(ctx.cmd), StringField(ctx.cmd, "to")}) {
      size_t dot = full.find('.');
      if (dot == std::string::npos) continue;  // the command refuses it
      RETURN_IF_ERROR(CheckCommandNs(p, rule->action, full.substr(0, dot), full.substr(dot + 1), name));
    }
    return Status::OK();
  }
  if (name == "getMore") return CheckCommandNs(p, Action::kFind, ctx.db_name, StringField(ctx.cmd, "collection"), name);
  if (name == "explain") {
    bson_iter_t it, inner;
    if (bson_iter_init_find(&it, ctx.cmd, "explain") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
        bson_iter_recurse(&it, &inner) && bson_iter_next(&inner) && BSON_ITER_HOLDS_UTF8(&inner)) {
      return CheckCommandNs(p, Action::kFind, ctx.db_name, bson_iter_utf8(&inner, nullptr), name);
    }
    return CheckCommandNs(p, Action::kFind, ctx.db_name, "", name);
  }
  std::string coll = FirstString(ctx.cmd);
  if (name == "aggregate" && coll.empty()) {
    // {aggregate: 1}: every collection of the database (a change stream of
    // the whole deployment on admin: every database).
    if (ctx.db_name == "admin") return p.Check(Action::kFind, Target::Cluster(), "execute command aggregate");
    return CheckCommandNs(p, Action::kFind, ctx.db_name, "", name);
  }
  return CheckCommandNs(p, rule->action, ctx.db_name, coll, name);
}

}  // namespace commands
}  // namespace gatedb
