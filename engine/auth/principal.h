// File: engine/auth/principal.h
//
// Users, roles and the resolved identity a call runs as (a Principal).
//
// Users and roles are MongoDB's: a user is (name, database) with SCRAM
// credentials and roles; a role is (name, database) with privileges and the
// roles it inherits.  MongoDB's built-in roles keep their meaning: read,
// readWrite, dbAdmin, userAdmin and dbOwner in any database; readAnyDatabase,
// readWriteAnyDatabase, dbAdminAnyDatabase, userAdminAnyDatabase,
// clusterMonitor and root in admin.
//
// A Principal is a user with every privilege of its roles, transitively,
// flattened once when it is resolved.  It is immutable: a change of the
// user's roles is seen by the next call, which resolves again
// (DBImpl::ResolvePrincipal caches by the catalog's generation).
#ifndef GATEDB_ENGINE_AUTH_PRINCIPAL_H_
#define GATEDB_ENGINE_AUTH_PRINCIPAL_H_

#include <bson/bson.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/auth/privilege.h"
#include "gatedb/document.h"
#include "gatedb/status.h"
#include "gatedb/value.h"

namespace gatedb {
namespace auth {

struct RoleName {
  std::string role;
  std::string db;
  bool operator==(const RoleName& o) const { return role == o.role && db == o.db; }
  bool operator<(const RoleName& o) const { return db != o.db ? db < o.db : role < o.role; }
  std::string full() const { return role + "@" + db; }
};

// SCRAM-SHA-256's stored form of a password (RFC 5802): the salt, the
// iteration count, StoredKey and ServerKey (raw bytes).  The password itself
// is never stored.
struct ScramCredentials {
  int iterations = 0;
  std::string salt;
  std::string stored_key;
  std::string server_key;
  bool empty() const { return stored_key.empty(); }
};

struct UserRecord {
  std::string user;
  std::string db;
  ScramCredentials scram;
  std::vector<RoleName> roles;
  Document custom_data;  // {} when none
};

struct RoleRecord {
  RoleName name;
  std::vector<Privilege> privileges;
  std::vector<RoleName> roles;  // inherited
};

// Encoding of the stored records (BSON; field names as usersInfo shows them,
// credentials under "credentials.SCRAM-SHA-256").
Document EncodeUser(const UserRecord& u);
Status DecodeUser(const bson_t* doc, UserRecord* out);
Document EncodeRole(const RoleRecord& r);
Status DecodeRole(const bson_t* doc, RoleRecord* out);

// Parses a roles array of createUser / grantRolesToUser / createRole:
// strings (roles of `default_db`) or {role, db} documents.
Status ParseRoleNames(const bson_t* array, const std::string& default_db, std::vector<RoleName>* out);
void AppendRoleNames(const std::vector<RoleName>& roles, bson_t* out, const char* key);

// The built-in role `name`, or nullopt when it is not one (readAnyDatabase
// and the other *AnyDatabase roles, clusterMonitor and root exist in admin
// only).
std::optional<RoleRecord> BuiltinRole(const RoleName& name);
bool IsBuiltinRoleName(const std::string& role);

// Looks a user-defined role up: nullopt when there is none.
using RoleLookup = std::function<StatusOr<std::optional<RoleRecord>>(const RoleName&)>;

class Principal {
 public:
  // The user with the privileges of its roles, transitively (each role once;
  // a role that no longer exists grants nothing).
  static StatusOr<std::shared_ptr<const Principal>> Resolve(const UserRecord& user, const RoleLookup& lookup);
  // A caller that has not authenticated: no user, no privilege.
  static std::shared_ptr<const Principal> Unauthenticated();
  bool authenticated() const { return !user_.empty(); }

  const std::string& user() const { return user_; }
  const std::string& db() const { return db_; }
  std::string full_name() const { return user_ + "@" + db_; }
  const std::vector<RoleName>& roles() const { return direct_roles_; }
  const std::vector<Privilege>& privileges() const { return privileges_; }

  // Whether some privilege names database `db` (or every database).
  bool HasAnyPrivilegeOn(const std::string& db) const;
  // Whether some privilege covers collection db.coll, for any action.
  bool HasAnyPrivilegeOn(const std::string& db, const std::string& coll) const;
  // Whether some privilege grants `action` on `target`.
  bool Can(Action action, const Target& target) const;
  // Unauthorized 13 unless Can(): "not authorized on <db> to <what>", with
  // errInfo {agentId, action, ns}.
  Status Check(Action action, const Target& target, const std::string& what) const;
  // Check() on collection db.coll, or on database db when coll is empty:
  // "not authorized on <db> to <what> on <ns>" (what: the action's name
  // when empty).
  Status CheckNamespace(Action action, const std::string& db, const std::string& coll,
                        const std::string& what = std::string()) const;
  // The agent of a write this principal makes is its user: an empty
  // *agent_id becomes the user's name; another name is Unauthorized (and
  // *agent_id is the user's name still, for the refusal's record).
  Status ClaimAgent(std::string* agent_id, const char* action, const std::string& ns) const;
  // The paths a write with `action` on (db, coll) may change: nullopt for
  // every path (some granting privilege is unrestricted), else the union of
  // the granting privileges' fields.  Call after Can().
  std::optional<std::vector<std::string>> WritablePaths(Action action, const Target& target) const;
  // Whether a write with `action` on `target` may claim writeContext.source
  // `source` (an empty source is always allowed).
  bool MaySpeakFor(Action action, const Target& target, const std::string& source) const;

 private:
  std::string user_;
  std::string db_;
  std::vector<RoleName> direct_roles_;
  std::vector<Privilege> privileges_;
};

// Unauthorized 13 with MongoDB's wording and gatedb's errInfo: {agentId,
// action, ns[, path][, source][, _id]}.
Status UnauthorizedError(const std::string& agent, const char* action, const std::string& ns, const std::string& why,
                         const std::string* path = nullptr, const std::string* source = nullptr,
                         const Value* id = nullptr);

}  // namespace auth
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AUTH_PRINCIPAL_H_
