// File: engine/auth/privilege.h
//
// MongoDB's authorization model (users, roles, privileges) plus gatedb's
// field and source rules, as values: nothing here reads or writes the store
// (engine/storage/db_impl_auth.cc keeps the records; this decides).
//
// A privilege is {resource, actions} as MongoDB's createRole takes it, and
// two gatedb fields:
//   fields:  [path, ...]  the paths a write under this privilege may change
//                         (a path inside a listed one counts; a parent does
//                         not).  Absent: every path.
//   sources: [name, ...]  the writeContext.source values a write under this
//                         privilege may claim (conflictPolicy sourcePriority
//                         ranks writers by it).  Absent: any source.
// Several privileges matching one write combine as a union: the write is
// allowed when the paths it changes are all allowed by the privileges that
// grant its action (an unrestricted one allows every path).
#ifndef GATEDB_ENGINE_AUTH_PRIVILEGE_H_
#define GATEDB_ENGINE_AUTH_PRIVILEGE_H_

#include <bson/bson.h>

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace auth {

// MongoDB's action names.
#define GATEDB_AUTH_ACTIONS(X)                                                                                  \
  X(kFind, "find")                                                                                              \
  X(kInsert, "insert")                                                                                          \
  X(kUpdate, "update")                                                                                          \
  X(kRemove, "remove")                                                                                          \
  X(kChangeStream, "changeStream")                                                                              \
  X(kCreateCollection, "createCollection")                                                                      \
  X(kDropCollection, "dropCollection")                                                                          \
  X(kCreateIndex, "createIndex")                                                                                \
  X(kDropIndex, "dropIndex")                                                                                    \
  X(kCollMod, "collMod")                                                                                        \
  X(kListCollections, "listCollections")                                                                        \
  X(kListIndexes, "listIndexes")                                                                                \
  X(kCollStats, "collStats")                                                                                    \
  X(kDbStats, "dbStats")                                                                                        \
  X(kDropDatabase, "dropDatabase")                                                                              \
  X(kRenameCollectionSameDB, "renameCollectionSameDB")                                                          \
  X(kCreateUser, "createUser")                                                                                  \
  X(kDropUser, "dropUser")                                                                                      \
  X(kViewUser, "viewUser")                                                                                      \
  X(kChangePassword, "changePassword")                                                                          \
  X(kGrantRole, "grantRole")                                                                                    \
  X(kRevokeRole, "revokeRole")                                                                                  \
  X(kCreateRole, "createRole")                                                                                  \
  X(kDropRole, "dropRole")                                                                                      \
  X(kViewRole, "viewRole")                                                                                      \
  X(kListDatabases, "listDatabases")                                                                            \
  X(kServerStatus, "serverStatus")                                                                              \
  X(kHostInfo, "hostInfo")                                                                                      \
  X(kGetLog, "getLog")                                                                                          \
  X(kGetCmdLineOpts, "getCmdLineOpts")                                                                          \
  X(kGetParameter, "getParameter")                                                                              \
  X(kReplSetGetStatus, "replSetGetStatus")                                                                      \
  X(kKillAnySession, "killAnySession")                                                                          \
  X(kInprog, "inprog")

enum class Action : uint8_t {
#define GATEDB_AUTH_ACTION_ENUM(e, name) e,
  GATEDB_AUTH_ACTIONS(GATEDB_AUTH_ACTION_ENUM)
#undef GATEDB_AUTH_ACTION_ENUM
      kCount
};

const char* ActionName(Action a);
std::optional<Action> ActionFromName(std::string_view name);

using ActionSet = std::bitset<static_cast<size_t>(Action::kCount)>;

// What a privilege applies to, as MongoDB's resource documents:
//   {db: "shop", collection: "orders"}  one collection
//   {db: "shop", collection: ""}        every collection of shop (and shop itself)
//   {db: "", collection: "orders"}      orders in every database
//   {db: "", collection: ""}            every collection of every database
//   {cluster: true}                     the server (serverStatus, listDatabases, ...)
//   {anyResource: true}                 everything
struct Resource {
  enum class Kind : uint8_t { kNamespace, kCluster, kAny };
  Kind kind = Kind::kNamespace;
  std::string db;    // "" = any database
  std::string coll;  // "" = any collection
  bool operator==(const Resource& o) const { return kind == o.kind && db == o.db && coll == o.coll; }
};

struct Privilege {
  Resource resource;
  ActionSet actions;
  std::optional<std::vector<std::string>> fields;   // gatedb: writable paths
  std::optional<std::vector<std::string>> sources;  // gatedb: sources it speaks for
};

// What a check is about: a collection ("db", "coll"), a database ("db", ""),
// or the server (cluster).
struct Target {
  std::string db;
  std::string coll;
  bool cluster = false;
  static Target Collection(std::string db, std::string coll) { return Target{std::move(db), std::move(coll), false}; }
  static Target Database(std::string db) { return Target{std::move(db), std::string(), false}; }
  static Target Cluster() { return Target{std::string(), std::string(), true}; }
};

// Whether `r` covers `t` (MongoDB's resource pattern matching; the
// collection wildcard covers no system.* collection).
bool Covers(const Resource& r, const Target& t);

// Parses one privilege document ({resource, actions[, fields][, sources]}).
// Errors: BadValue (unknown action, malformed resource), TypeMismatch,
// Location40415 (an unknown field).
Status ParsePrivilege(const bson_t* doc, Privilege* out);
Status ParsePrivileges(const bson_t* array, std::vector<Privilege>* out);
void AppendPrivilege(const Privilege& p, bson_t* out, const char* key);
// The privileges as an array under `key`.
void AppendPrivileges(const std::vector<Privilege>& privileges, bson_t* out, const char* key);

// Whether a write changing `path` is allowed by `allowed` (nullopt: all):
// path equal to or inside a listed path.
bool PathAllowed(const std::optional<std::vector<std::string>>& allowed, std::string_view path);

}  // namespace auth
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AUTH_PRIVILEGE_H_
