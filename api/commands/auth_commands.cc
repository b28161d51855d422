// Users, roles and authentication: MongoDB's user-management commands
// (createUser, usersInfo, grantRolesToUser, createRole, ...) over the
// store's user and role records (DBImpl, engine/auth), and the SASL
// commands that authenticate a wire connection (saslStart, saslContinue,
// logout; SCRAM-SHA-256 through libgsasl).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/auth/principal.h"
#include "engine/auth/scram.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

namespace {

using auth::RoleName;

// The command's first value as a name ({createUser: "alice"}).
Status CommandName(const CommandContext& ctx, std::string* out) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  RETURN_IF_ERROR(ReadString(&it, ctx.command_name, out));
  if (out->empty()) return Status(ErrorCode::kBadValue, ctx.command_name + " needs a non-empty name");
  return Status::OK();
}

// Each role exists (built-in or made with createRole) and, for a caller
// with a principal, is one it may grant or revoke (`action` on the role's
// database): nobody hands out more than it administers.
Status CheckGrantable(const CommandContext& ctx, const std::vector<RoleName>& roles, auth::Action action) {
  for (const RoleName& r : roles) {
    if (!auth::BuiltinRole(r)) {
      ASSIGN_OR_RETURN(std::optional<auth::RoleRecord> role, ctx.db->GetRole(r.role, r.db));
      if (!role) return Status(ErrorCode::kRoleNotFound, "Could not find role: " + r.full());
    }
    if (ctx.principal) {
      RETURN_IF_ERROR(ctx.principal->Check(action, auth::Target::Database(r.db),
                                           std::string(auth::ActionName(action)) + " " + r.full()));
    }
  }
  return Status::OK();
}

Status ReadRoles(const bson_iter_t* it, const CommandContext& ctx, std::vector<RoleName>* out) {
  bson_t arr;
  RETURN_IF_ERROR(ReadArray(it, ctx.command_name + ".roles", &arr));
  return auth::ParseRoleNames(&arr, ctx.db_name, out);
}

Status ReadPrivileges(const bson_iter_t* it, const CommandContext& ctx, std::vector<auth::Privilege>* out) {
  bson_t arr;
  RETURN_IF_ERROR(ReadArray(it, ctx.command_name + ".privileges", &arr));
  return auth::ParsePrivileges(&arr, out);
}

// SCRAM-SHA-256 only: MongoDB's SCRAM-SHA-1 (MD5-digested passwords) is
// refused by name.
Status ReadMechanisms(const bson_iter_t* it, const CommandContext& ctx) {
  bson_t arr;
  RETURN_IF_ERROR(ReadArray(it, ctx.command_name + ".mechanisms", &arr));
  bson_iter_t m;
  bson_iter_init(&m, &arr);
  int n = 0;
  while (bson_iter_next(&m)) {
    ++n;
    if (!BSON_ITER_HOLDS_UTF8(&m)) return TypeError(ctx.command_name + ".mechanisms", bson_iter_type(&m), "string");
    std::string mech = bson_iter_utf8(&m, nullptr);
    if (mech != auth::kScramMechanism) {
      return Status(ErrorCode::kBadValue, "mechanism " + mech + " is not supported: gatedb stores SCRAM-SHA-256 "
                                                                "credentials only");
    }
  }
  if (n == 0) return Status(ErrorCode::kBadValue, "mechanisms field must not be empty");
  return Status::OK();
}

Status ReadPassword(const bson_iter_t* it, const CommandContext& ctx, auth::ScramCredentials* out) {
  std::string pwd;
  RETURN_IF_ERROR(ReadString(it, ctx.command_name + ".pwd", &pwd));
  ASSIGN_OR_RETURN(*out, auth::MakeScramCredentials(pwd));
  return Status::OK();
}

Status ReadDigest(const bson_iter_t* it, const CommandContext& ctx) {
  bool digest = true;
  RETURN_IF_ERROR(ReadBool(it, ctx.command_name + ".digestPassword", &digest));
  if (!digest) return Status(ErrorCode::kBadValue, "Use of SCRAM-SHA-256 requires undigested passwords");
  return Status::OK();
}

// One entry of usersInfo's reply.
void AppendUser(const auth::UserRecord& u, bool credentials, const CommandContext& ctx, bool privileges,
                bson_t* out, const char* key) {
  bson_t d;
  BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
  const std::string id = u.db + "." + u.user;
  BSON_APPEND_UTF8(&d, "_id", id.c_str());
  BSON_APPEND_UTF8(&d, "user", u.user.c_str());
  BSON_APPEND_UTF8(&d, "db", u.db.c_str());
  auth::AppendRoleNames(u.roles, &d, "roles");
  AppendStringArray(&d, "mechanisms", {auth::kScramMechanism});
  if (!u.custom_data.empty()) BSON_APPEND_DOCUMENT(&d, "customData", u.custom_data.bson());
  if (credentials && !u.scram.empty()) {
    bson_t c, s;
    BSON_APPEND_DOCUMENT_BEGIN(&d, "credentials", &c);
    BSON_APPEND_DOCUMENT_BEGIN(&c, "SCRAM-SHA-256", &s);
    BSON_APPEND_INT32(&s, "iterationCount", u.scram.iterations);
    for (const auto& [name, bytes] : {std::pair<const char*, const std::string*>{"salt", &u.scram.salt},
                                      {"storedKey", &u.scram.stored_key}, {"serverKey", &u.scram.server_key}}) {
      bson_append_binary(&s, name, -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(bytes->data()),
                         static_cast<uint32_t>(bytes->size()));
    }
    bson_append_document_end(&c, &s);
    bson_append_document_end(&d, &c);
  }
  if (privileges) {
    auto p = auth::Principal::Resolve(u, [&](const RoleName& n) { return ctx.db->GetRole(n.role, n.db); });
    if (p.ok()) auth::AppendPrivileges((*p)->privileges(), &d, "inheritedPrivileges");
  }
  bson_append_document_end(out, &d);
}

// usersInfo's and rolesInfo's argument: 1 (every one of $db), a name, a
// {user|role, db} document, or an array of those.
Status ReadNames(const bson_iter_t* it, const CommandContext& ctx, const char* kind, bool* all,
                 std::vector<std::pair<std::string, std::string>>* out) {
  auto one = [&](const bson_iter_t* v) -> Status {
    if (BSON_ITER_HOLDS_UTF8(v)) {
      out->emplace_back(bson_iter_utf8(v, nullptr), ctx.db_name);
      return Status::OK();
    }
    if (BSON_ITER_HOLDS_DOCUMENT(v)) {
      bson_iter_t f;
      bson_iter_recurse(v, &f);
      std::string name, db;
      while (bson_iter_next(&f)) {
        const std::string k = bson_iter_key(&f);
        if (k != kind && k != "db") return Status(ErrorCode::kBadValue, std::string("a ") + kind + " is {" + kind + ", db}");
        RETURN_IF_ERROR(ReadString(&f, ctx.command_name + "." + k, k == "db" ? &db : &name));
      }
      if (name.empty() || db.empty()) return Status(ErrorCode::kBadValue, std::string("a ") + kind + " is {" + kind + ", db}");
      out->emplace_back(name, db);
      return Status::OK();
    }
    return TypeError(ctx.command_name, bson_iter_type(v), "string or object");
  };
  if (BSON_ITER_HOLDS_ARRAY(it)) {
    bson_iter_t e;
    bson_iter_recurse(it, &e);
    while (bson_iter_next(&e)) RETURN_IF_ERROR(one(&e));
    return Status::OK();
  }
  if (BSON_ITER_HOLDS_NUMBER(it)) {
    if (bson_iter_as_int64(it) != 1) return Status(ErrorCode::kBadValue, ctx.command_name + " takes 1, a name or names");
    *all = true;
    return Status::OK();
  }
  return one(it);
}

// The database a name of another database may be read in: only with the
// view action there too.
Status CheckView(const CommandContext& ctx, const std::string& db, auth::Action action) {
  if (!ctx.principal || db == ctx.db_name) return Status::OK();
  return ctx.principal->Check(action, auth::Target::Database(db), "view " + db + "'s users and roles");
}

}  // namespace

Status CreateUserCommand(CommandContext& ctx, bson_t* reply) {
  auth::UserRecord u;
  u.db = ctx.db_name;
  RETURN_IF_ERROR(CommandName(ctx, &u.user));
  bool have_pwd = false, have_roles = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "pwd") {
      have_pwd = true;
      return ReadPassword(it, ctx, &u.scram);
    }
    if (key == "roles") {
      have_roles = true;
      return ReadRoles(it, ctx, &u.roles);
    }
    if (key == "customData") return ReadDocument(it, "createUser.customData", &u.custom_data);
    if (key == "mechanisms") return ReadMechanisms(it, ctx);
    if (key == "digestPassword") return ReadDigest(it, ctx);
    return UnknownField("createUser", key);
  }));
  if (!have_roles) return MissingField("createUser", "roles");
  if (!have_pwd) {
    return Status(ErrorCode::kBadValue, "Must provide a 'pwd' field for all user documents (gatedb authenticates "
                                        "with SCRAM-SHA-256 only)");
  }
  if (ctx.db_name == "local" || ctx.db_name == "config" || ctx.db_name == "$external") {
    return Status(ErrorCode::kBadValue, "Cannot create users in the " + ctx.db_name + " database");
  }
  RETURN_IF_ERROR(CheckGrantable(ctx, u.roles, auth::Action::kGrantRole));
  return ctx.db->CreateUser(u, /*first_only=*/ctx.localhost_exception);
}

Status UpdateUserCommand(CommandContext& ctx, bson_t* reply) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  ASSIGN_OR_RETURN(std::optional<auth::UserRecord> existing, ctx.db->GetUser(name, ctx.db_name));
  if (!existing) return Status(ErrorCode::kUserNotFound, "Could not find user \"" + name + "\" for db \"" + ctx.db_name + "\"");
  auth::UserRecord u = *existing;
  bool any = false, roles_changed = false;
  std::vector<RoleName> roles;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    any = true;
    if (key == "pwd") return ReadPassword(it, ctx, &u.scram);
    if (key == "roles") {
      roles_changed = true;
      return ReadRoles(it, ctx, &roles);
    }
    if (key == "customData") return ReadDocument(it, "updateUser.customData", &u.custom_data);
    if (key == "mechanisms") return ReadMechanisms(it, ctx);
    if (key == "digestPassword") return ReadDigest(it, ctx);
    any = false;
    return UnknownField("updateUser", key);
  }));
  if (!any) return Status(ErrorCode::kBadValue, "Must specify at least one field to update in updateUser");
  if (roles_changed) {
    std::vector<RoleName> added, removed;
    for (const RoleName& r : roles) {
      if (std::find(u.roles.begin(), u.roles.end(), r) == u.roles.end()) added.push_back(r);
    }
    for (const RoleName& r : u.roles) {
      if (std::find(roles.begin(), roles.end(), r) == roles.end()) removed.push_back(r);
    }
    RETURN_IF_ERROR(CheckGrantable(ctx, added, auth::Action::kGrantRole));
    if (ctx.principal) {
      for (const RoleName& r : removed) {
        RETURN_IF_ERROR(ctx.principal->Check(auth::Action::kRevokeRole, auth::Target::Database(r.db), "revoke " + r.full()));
      }
    }
    u.roles = std::move(roles);
  }
  return ctx.db->UpdateUser(u);
}

Status DropUserCommand(CommandContext& ctx, bson_t* reply) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t*) -> Status {
    return UnknownField("dropUser", key);
  }));
  return ctx.db->DropUser(name, ctx.db_name);
}

Status UsersInfoCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  bool all = false, credentials = false, privileges = false, for_all_dbs = false;
  std::vector<std::pair<std::string, std::string>> names;
  RETURN_IF_ERROR(ReadNames(&it, ctx, "user", &all, &names));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* f) -> Status {
    if (key == "showCredentials") return ReadBool(f, "usersInfo.showCredentials", &credentials);
    if (key == "showPrivileges") return ReadBool(f, "usersInfo.showPrivileges", &privileges);
    if (key == "showAuthenticationRestrictions" || key == "showCustomData") return Status::OK();
    if (key == "forAllDBs") return ReadBool(f, "usersInfo.forAllDBs", &for_all_dbs);
    if (key == "filter") return Status::OK();
    return UnknownField("usersInfo", key);
  }));
  std::vector<auth::UserRecord> users;
  if (all || for_all_dbs) {
    if (for_all_dbs) RETURN_IF_ERROR(CheckView(ctx, "", auth::Action::kViewUser));
    ASSIGN_OR_RETURN(users, ctx.db->ListUsers(for_all_dbs ? std::string() : ctx.db_name));
  } else {
    for (const auto& [user, db] : names) {
      const bool self = ctx.principal && ctx.principal->user() == user && ctx.principal->db() == db;
      if (!self) RETURN_IF_ERROR(CheckView(ctx, db, auth::Action::kViewUser));
      ASSIGN_OR_RETURN(std::optional<auth::UserRecord> u, ctx.db->GetUser(user, db));
      if (u) users.push_back(std::move(*u));
    }
  }
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "users", &arr);
  uint32_t i = 0;
  for (const auth::UserRecord& u : users) {
    char idx[16];
    const char* ik = nullptr;
    bson_uint32_to_string(i++, &ik, idx, sizeof idx);
    AppendUser(u, credentials, ctx, privileges, &arr, ik);
  }
  bson_append_array_end(reply, &arr);
  return Status::OK();
}

namespace {

Status ChangeUserRoles(CommandContext& ctx, bool grant) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  std::vector<RoleName> roles;
  bool have_roles = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "roles") {
      have_roles = true;
      return ReadRoles(it, ctx, &roles);
    }
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_roles) return MissingField(ctx.command_name, "roles");
  ASSIGN_OR_RETURN(std::optional<auth::UserRecord> u, ctx.db->GetUser(name, ctx.db_name));
  if (!u) return Status(ErrorCode::kUserNotFound, "Could not find user \"" + name + "\" for db \"" + ctx.db_name + "\"");
  RETURN_IF_ERROR(CheckGrantable(ctx, roles, grant ? auth::Action::kGrantRole : auth::Action::kRevokeRole));
  for (const RoleName& r : roles) {
    auto at = std::find(u->roles.begin(), u->roles.end(), r);
    if (grant && at == u->roles.end()) u->roles.push_back(r);
    if (!grant && at != u->roles.end()) u->roles.erase(at);
  }
  return ctx.db->UpdateUser(*u);
}

Status ChangeRolePrivileges(CommandContext& ctx, bool grant) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  std::vector<auth::Privilege> privileges;
  bool have = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "privileges") {
      have = true;
      return ReadPrivileges(it, ctx, &privileges);
    }
    return UnknownField(ctx.command_name, key);
  }));
  if (!have) return MissingField(ctx.command_name, "privileges");
  ASSIGN_OR_RETURN(std::optional<auth::RoleRecord> role, ctx.db->GetRole(name, ctx.db_name));
  if (!role) return Status(ErrorCode::kRoleNotFound, "Role \"" + name + "@" + ctx.db_name + "\" not found");
  for (const auth::Privilege& p : privileges) {
    auto same = std::find_if(role->privileges.begin(), role->privileges.end(), [&](const auth::Privilege& q) {
      return q.resource == p.resource && q.fields == p.fields && q.sources == p.sources;
    });
    if (grant) {
      if (same != role->privileges.end()) {
        same->actions |= p.actions;
      } else {
        role->privileges.push_back(p);
      }
    } else if (same != role->privileges.end()) {
      same->actions &= ~p.actions;
      if (same->actions.none()) role->privileges.erase(same);
    }
  }
  return ctx.db->UpdateRole(*role);
}

// createRole's and updateRole's body.
Status ReadRoleBody(CommandContext& ctx, auth::RoleRecord* role, bool* have_privileges, bool* have_roles) {
  return ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "privileges") {
      *have_privileges = true;
      role->privileges.clear();
      return ReadPrivileges(it, ctx, &role->privileges);
    }
    if (key == "roles") {
      *have_roles = true;
      role->roles.clear();
      return ReadRoles(it, ctx, &role->roles);
    }
    if (key == "authenticationRestrictions") return Status::OK();
    return UnknownField(ctx.command_name, key);
  });
}

}  // namespace

Status GrantRolesToUserCommand(CommandContext& ctx, bson_t*) { return ChangeUserRoles(ctx, true); }
Status RevokeRolesFromUserCommand(CommandContext& ctx, bson_t*) { return ChangeUserRoles(ctx, false); }
Status GrantPrivilegesToRoleCommand(CommandContext& ctx, bson_t*) { return ChangeRolePrivileges(ctx, true); }
Status RevokePrivilegesFromRoleCommand(CommandContext& ctx, bson_t*) { return ChangeRolePrivileges(ctx, false); }

Status CreateRoleCommand(CommandContext& ctx, bson_t* reply) {
  auth::RoleRecord role;
  role.name.db = ctx.db_name;
  RETURN_IF_ERROR(CommandName(ctx, &role.name.role));
  bool have_privileges = false, have_roles = false;
  RETURN_IF_ERROR(ReadRoleBody(ctx, &role, &have_privileges, &have_roles));
  if (!have_privileges) return MissingField("createRole", "privileges");
  if (!have_roles) return MissingField("createRole", "roles");
  RETURN_IF_ERROR(CheckGrantable(ctx, role.roles, auth::Action::kGrantRole));
  return ctx.db->CreateRole(role);
}

Status UpdateRoleCommand(CommandContext& ctx, bson_t* reply) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  ASSIGN_OR_RETURN(std::optional<auth::RoleRecord> role, ctx.db->GetRole(name, ctx.db_name));
  if (!role) return Status(ErrorCode::kRoleNotFound, "Role \"" + name + "@" + ctx.db_name + "\" not found");
  bool have_privileges = false, have_roles = false;
  RETURN_IF_ERROR(ReadRoleBody(ctx, &*role, &have_privileges, &have_roles));
  if (!have_privileges && !have_roles) {
    return Status(ErrorCode::kBadValue, "Must specify at least one field to update in updateRole");
  }
  RETURN_IF_ERROR(CheckGrantable(ctx, role->roles, auth::Action::kGrantRole));
  return ctx.db->UpdateRole(*role);
}

Status DropRoleCommand(CommandContext& ctx, bson_t* reply) {
  std::string name;
  RETURN_IF_ERROR(CommandName(ctx, &name));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t*) -> Status {
    return UnknownField("dropRole", key);
  }));
  if (auth::IsBuiltinRoleName(name)) return Status(ErrorCode::kBadValue, "Cannot drop built-in role " + name);
  return ctx.db->DropRole(name, ctx.db_name);
}

Status RolesInfoCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  bool all = false, privileges = false, builtin = false;
  std::vector<std::pair<std::string, std::string>> names;
  RETURN_IF_ERROR(ReadNames(&it, ctx, "role", &all, &names));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* f) -> Status {
    if (key == "showPrivileges") {
      // true or "asUserFragment" (shown as true here)
      privileges = BSON_ITER_HOLDS_UTF8(f) || bson_iter_as_bool(f);
      return Status::OK();
    }
    if (key == "showBuiltinRoles") return ReadBool(f, "rolesInfo.showBuiltinRoles", &builtin);
    if (key == "showAuthenticationRestrictions") return Status::OK();
    return UnknownField("rolesInfo", key);
  }));
  std::vector<auth::RoleRecord> roles;
  if (all) {
    if (builtin) {
      for (const char* b : {"read", "readWrite", "dbAdmin", "userAdmin", "dbOwner", "readAnyDatabase",
                            "readWriteAnyDatabase", "dbAdminAnyDatabase", "userAdminAnyDatabase", "clusterMonitor",
                            "root"}) {
        if (auto r = auth::BuiltinRole(RoleName{b, ctx.db_name})) roles.push_back(std::move(*r));
      }
    }
    ASSIGN_OR_RETURN(std::vector<auth::RoleRecord> custom, ctx.db->ListRoles(ctx.db_name));
    for (auto& r : custom) roles.push_back(std::move(r));
  } else {
    for (const auto& [role, db] : names) {
      RETURN_IF_ERROR(CheckView(ctx, db, auth::Action::kViewRole));
      if (auto b = auth::BuiltinRole(RoleName{role, db})) {
        roles.push_back(std::move(*b));
        continue;
      }
      ASSIGN_OR_RETURN(std::optional<auth::RoleRecord> r, ctx.db->GetRole(role, db));
      if (r) roles.push_back(std::move(*r));
    }
  }
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "roles", &arr);
  uint32_t i = 0;
  for (const auth::RoleRecord& r : roles) {
    char idx[16];
    const char* ik = nullptr;
    bson_uint32_to_string(i++, &ik, idx, sizeof idx);
    bson_t d;
    BSON_APPEND_DOCUMENT_BEGIN(&arr, ik, &d);
    const std::string id = r.name.db + "." + r.name.role;
    BSON_APPEND_UTF8(&d, "_id", id.c_str());
    BSON_APPEND_UTF8(&d, "role", r.name.role.c_str());
    BSON_APPEND_UTF8(&d, "db", r.name.db.c_str());
    BSON_APPEND_BOOL(&d, "isBuiltin", auth::BuiltinRole(r.name).has_value());
    auth::AppendRoleNames(r.roles, &d, "roles");
    if (privileges) auth::AppendPrivileges(r.privileges, &d, "privileges");
    bson_append_document_end(&arr, &d);
  }
  bson_append_array_end(reply, &arr);
  return Status::OK();
}

// ---------------------------------------------------------------- SASL

namespace {

Status NotOnAConnection(const CommandContext& ctx) {
  return Status(ErrorCode::kCommandNotSupported,
                ctx.command_name + " authenticates a wire connection; in process, open the database with "
                                   "Options::identity or use Database::As");
}

// The payload of a SASL command: BinData (drivers) or a string (the legacy
// shell).
Status ReadPayload(const bson_t* cmd, const std::string& command, std::string* out) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, cmd, "payload")) return MissingField(command, "payload");
  if (BSON_ITER_HOLDS_BINARY(&it)) {
    bson_subtype_t sub;
    uint32_t n = 0;
    const uint8_t* data = nullptr;
    bson_iter_binary(&it, &sub, &n, &data);
    out->assign(reinterpret_cast<const char*>(data), n);
    return Status::OK();
  }
  if (BSON_ITER_HOLDS_UTF8(&it)) {
    uint32_t n = 0;
    const char* s = bson_iter_utf8(&it, &n);
    out->assign(s, n);
    return Status::OK();
  }
  return TypeError(command + ".payload", bson_iter_type(&it), "binData");
}

void AppendPayload(bson_t* reply, const std::string& payload) {
  bson_append_binary(reply, "payload", -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(payload.data()),
                     static_cast<uint32_t>(payload.size()));
}

// Runs one step of the connection's conversation and writes the reply.
Status Step(CommandContext& ctx, Auth& auth, const std::string& payload, bool skip_empty_exchange, bson_t* reply) {
  auth::ScramServer& conv = *auth.conversation;
  StatusOr<std::string> answer = conv.Step(payload);
  if (!answer.ok()) {
    auth.conversation.reset();
    return answer.status();
  }
  bool done = false;
  if (conv.done()) {
    auth.user = conv.user();
    auth.user_db = auth.conversation_db;
    // Without skipEmptyExchange the client sends one more, empty message.
    done = skip_empty_exchange;
    if (done) auth.conversation.reset();
  }
  BSON_APPEND_INT32(reply, "conversationId", auth.conversation_id);
  BSON_APPEND_BOOL(reply, "done", done);
  AppendPayload(reply, *answer);
  return Status::OK();
}

}  // namespace

Status SaslStartFields(CommandContext& ctx, const bson_t* cmd, const std::string& db, bson_t* reply) {
  Auth* auth = ctx.client != nullptr ? ctx.client->auth : nullptr;
  if (auth == nullptr) return NotOnAConnection(ctx);
  std::string mechanism, payload;
  bool skip_empty = false;
  bson_iter_t it;
  if (!bson_iter_init_find(&it, cmd, "mechanism")) return MissingField("saslStart", "mechanism");
  RETURN_IF_ERROR(ReadString(&it, "saslStart.mechanism", &mechanism));
  if (mechanism != auth::kScramMechanism) {
    return Status(ErrorCode::kBadValue, "Received authentication for mechanism " + mechanism +
                                            " which is not enabled: gatedb supports SCRAM-SHA-256");
  }
  RETURN_IF_ERROR(ReadPayload(cmd, "saslStart", &payload));
  bson_iter_t opts, skip;
  if (bson_iter_init_find(&opts, cmd, "options") && BSON_ITER_HOLDS_DOCUMENT(&opts) &&
      bson_iter_recurse(&opts, &skip) && bson_iter_find(&skip, "skipEmptyExchange")) {
    skip_empty = bson_iter_as_bool(&skip);
  }
  DBImpl* store = ctx.db;
  const std::string user_db = db;
  auth->conversation = std::make_shared<auth::ScramServer>(
      [store, user_db](const std::string& user) -> std::optional<auth::ScramCredentials> {
        auto u = store->GetUser(user, user_db);
        if (!u.ok() || !*u || (*u)->scram.empty()) return std::nullopt;
        return (*u)->scram;
      });
  auth->conversation_db = db;
  auth->skip_empty_exchange = skip_empty;
  ++auth->conversation_id;
  return Step(ctx, *auth, payload, skip_empty, reply);
}

Status SaslStartCommand(CommandContext& ctx, bson_t* reply) {
  return SaslStartFields(ctx, ctx.cmd, ctx.db_name, reply);
}

Status SaslContinueCommand(CommandContext& ctx, bson_t* reply) {
  Auth* auth = ctx.client != nullptr ? ctx.client->auth : nullptr;
  if (auth == nullptr) return NotOnAConnection(ctx);
  bson_iter_t it;
  int64_t id = 0;
  if (!bson_iter_init_find(&it, ctx.cmd, "conversationId")) return MissingField("saslContinue", "conversationId");
  RETURN_IF_ERROR(ReadInt64(&it, "saslContinue.conversationId", &id));
  if (!auth->conversation || id != auth->conversation_id) {
    return Status(ErrorCode::kProtocolError, "No SASL session state found (conversationId " + std::to_string(id) + ")");
  }
  std::string payload;
  RETURN_IF_ERROR(ReadPayload(ctx.cmd, "saslContinue", &payload));
  if (auth->conversation->done()) {
    // The empty message that ends a conversation without skipEmptyExchange.
    const bool ok = auth->conversation->succeeded() && payload.empty();
    auth->conversation.reset();
    if (!ok) {
      auth->user.clear();
      return Status(ErrorCode::kAuthenticationFailed, "Authentication failed.");
    }
    BSON_APPEND_INT32(reply, "conversationId", auth->conversation_id);
    BSON_APPEND_BOOL(reply, "done", true);
    AppendPayload(reply, std::string());
    return Status::OK();
  }
  return Step(ctx, *auth, payload, auth->skip_empty_exchange, reply);
}

Status LogoutCommand(CommandContext& ctx, bson_t* reply) {
  if (ctx.client != nullptr && ctx.client->auth != nullptr) {
    ctx.client->auth->user.clear();
    ctx.client->auth->user_db.clear();
    ctx.client->auth->conversation.reset();
  }
  return Status::OK();
}

}  // namespace commands
}  // namespace gatedb
