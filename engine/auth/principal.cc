#include "engine/auth/principal.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/document/bson_compare.h"

namespace gatedb {
namespace auth {

namespace {

ActionSet Actions(std::initializer_list<Action> list) {
  ActionSet s;
  for (Action a : list) s.set(static_cast<size_t>(a));
  return s;
}

const ActionSet& ReadActions() {
  static const ActionSet s = Actions({Action::kFind, Action::kListCollections, Action::kListIndexes,
                                      Action::kCollStats, Action::kDbStats, Action::kChangeStream});
  return s;
}

const ActionSet& ReadWriteActions() {
  static const ActionSet s = ReadActions() | Actions({Action::kInsert, Action::kUpdate, Action::kRemove,
                                                      Action::kCreateCollection, Action::kCreateIndex,
                                                      Action::kDropCollection, Action::kDropIndex,
                                                      Action::kRenameCollectionSameDB});
  return s;
}

const ActionSet& DbAdminActions() {
  static const ActionSet s =
      Actions({Action::kCollMod, Action::kCollStats, Action::kCreateCollection, Action::kCreateIndex,
               Action::kDbStats, Action::kDropCollection, Action::kDropDatabase, Action::kDropIndex,
               Action::kListCollections, Action::kListIndexes, Action::kRenameCollectionSameDB});
  return s;
}

const ActionSet& UserAdminActions() {
  static const ActionSet s = Actions({Action::kCreateUser, Action::kDropUser, Action::kViewUser,
                                      Action::kChangePassword, Action::kGrantRole, Action::kRevokeRole,
                                      Action::kCreateRole, Action::kDropRole, Action::kViewRole});
  return s;
}

Privilege OnDb(const std::string& db, const ActionSet& actions) {
  Privilege p;
  p.resource.kind = Resource::Kind::kNamespace;
  p.resource.db = db;
  p.actions = actions;
  return p;
}

Privilege OnCluster(const ActionSet& actions) {
  Privilege p;
  p.resource.kind = Resource::Kind::kCluster;
  p.actions = actions;
  return p;
}

struct Builtin {
  const char* name;
  bool admin_only;
};

const Builtin kBuiltins[] = {
    {"read", false},
    {"readWrite", false},
    {"dbAdmin", false},
    {"userAdmin", false},
    {"dbOwner", false},
    {"readAnyDatabase", true},
    {"readWriteAnyDatabase", true},
    {"dbAdminAnyDatabase", true},
    {"userAdminAnyDatabase", true},
    {"clusterMonitor", true},
    {"root", true},
};

Status WrongType(const std::string& field, const bson_iter_t* it, const char* want) {
  return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type '" +
                                              BsonTypeName(bson_iter_type(it)) + "', expected type '" + want + "'");
}

void AppendBinary(bson_t* out, const char* key, const std::string& bytes) {
  bson_append_binary(out, key, -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(bytes.data()),
                     static_cast<uint32_t>(bytes.size()));
}

bool ReadBinary(const bson_t* doc, const char* dotted, std::string* out) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, dotted, &f) || !BSON_ITER_HOLDS_BINARY(&f)) {
    return false;
  }
  bson_subtype_t sub;
  uint32_t n = 0;
  const uint8_t* data = nullptr;
  bson_iter_binary(&f, &sub, &n, &data);
  out->assign(reinterpret_cast<const char*>(data), n);
  return true;
}

Status SubDocument(bson_iter_t* it, bson_t* out) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (BSON_ITER_HOLDS_ARRAY(it)) {
    bson_iter_array(it, &len, &data);
  } else {
    bson_iter_document(it, &len, &data);
  }
  if (!bson_init_static(out, data, len)) return Status(ErrorCode::kInvalidBSON, "not BSON");
  return Status::OK();
}

}  // namespace

bool IsBuiltinRoleName(const std::string& role) {
  for (const Builtin& b : kBuiltins) {
    if (role == b.name) return true;
  }
  return false;
}

std::optional<RoleRecord> BuiltinRole(const RoleName& name) {
  const Builtin* found = nullptr;
  for (const Builtin& b : kBuiltins) {
    if (name.role == b.name) found = &b;
  }
  if (found == nullptr || (found->admin_only && name.db != "admin")) return std::nullopt;
  RoleRecord r;
  r.name = name;
  const std::string& db = name.db;
  const std::string& role = name.role;
  const ActionSet list_dbs = Actions({Action::kListDatabases});
  if (role == "read") {
    r.privileges.push_back(OnDb(db, ReadActions()));
  } else if (role == "readWrite") {
    r.privileges.push_back(OnDb(db, ReadWriteActions()));
  } else if (role == "dbAdmin") {
    r.privileges.push_back(OnDb(db, DbAdminActions()));
  } else if (role == "userAdmin") {
    r.privileges.push_back(OnDb(db, UserAdminActions()));
  } else if (role == "dbOwner") {
    r.privileges.push_back(OnDb(db, ReadWriteActions() | DbAdminActions() | UserAdminActions()));
  } else if (role == "readAnyDatabase") {
    r.privileges.push_back(OnDb("", ReadActions()));
    r.privileges.push_back(OnCluster(list_dbs));
  } else if (role == "readWriteAnyDatabase") {
    r.privileges.push_back(OnDb("", ReadWriteActions()));
    r.privileges.push_back(OnCluster(list_dbs));
  } else if (role == "dbAdminAnyDatabase") {
    r.privileges.push_back(OnDb("", DbAdminActions()));
    r.privileges.push_back(OnCluster(list_dbs));
  } else if (role == "userAdminAnyDatabase") {
    r.privileges.push_back(OnDb("", UserAdminActions()));
    r.privileges.push_back(OnCluster(list_dbs));
  } else if (role == "clusterMonitor") {
    r.privileges.push_back(OnCluster(Actions({Action::kServerStatus, Action::kHostInfo, Action::kGetLog,
                                              Action::kGetCmdLineOpts, Action::kGetParameter,
                                              Action::kReplSetGetStatus, Action::kListDatabases, Action::kInprog})));
    r.privileges.push_back(OnDb("", Actions({Action::kCollStats, Action::kDbStats, Action::kListCollections,
                                             Action::kListIndexes})));
  } else {  // root
    Privilege all;
    all.resource.kind = Resource::Kind::kAny;
    all.actions.set();
    r.privileges.push_back(std::move(all));
  }
  return r;
}

Status ParseRoleNames(const bson_t* array, const std::string& default_db, std::vector<RoleName>* out) {
  bson_iter_t it;
  bson_iter_init(&it, array);
  while (bson_iter_next(&it)) {
    RoleName name;
    if (BSON_ITER_HOLDS_UTF8(&it)) {
      name.role = bson_iter_utf8(&it, nullptr);
      name.db = default_db;
    } else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_t d;
      RETURN_IF_ERROR(SubDocument(&it, &d));
      bson_iter_t f;
      bson_iter_init(&f, &d);
      bool have_role = false, have_db = false;
      while (bson_iter_next(&f)) {
        const std::string k = bson_iter_key(&f);
        if (k != "role" && k != "db") {
          return Status(ErrorCode::kBadValue, "a role is {role, db}; unknown field '" + k + "'");
        }
        if (!BSON_ITER_HOLDS_UTF8(&f)) return WrongType("roles." + k, &f, "string");
        (k == "role" ? name.role : name.db) = bson_iter_utf8(&f, nullptr);
        (k == "role" ? have_role : have_db) = true;
      }
      if (!have_role || !have_db) {
        return Status(ErrorCode::kBadValue, "a role document names both role and db: {role: \"...\", db: \"...\"}");
      }
    } else {
      return Status(ErrorCode::kBadValue, "a role is a name or {role, db}, not " +
                                              std::string(BsonTypeName(bson_iter_type(&it))));
    }
    if (name.role.empty() || name.db.empty() || name.role.find('\0') != std::string::npos) {
      return Status(ErrorCode::kBadValue, "role and database names must be non-empty");
    }
    if (std::find(out->begin(), out->end(), name) == out->end()) out->push_back(std::move(name));
  }
  return Status::OK();
}

void AppendRoleNames(const std::vector<RoleName>& roles, bson_t* out, const char* key) {
  bson_t a;
  BSON_APPEND_ARRAY_BEGIN(out, key, &a);
  uint32_t i = 0;
  for (const RoleName& r : roles) {
    char idx[16];
    const char* ik = nullptr;
    bson_uint32_to_string(i++, &ik, idx, sizeof idx);
    bson_t d;
    BSON_APPEND_DOCUMENT_BEGIN(&a, ik, &d);
    BSON_APPEND_UTF8(&d, "role", r.role.c_str());
    BSON_APPEND_UTF8(&d, "db", r.db.c_str());
    bson_append_document_end(&a, &d);
  }
  bson_append_array_end(out, &a);
}

Document EncodeUser(const UserRecord& u) {
  bson_t* out = bson_new();
  const std::string id = u.db + "." + u.user;
  BSON_APPEND_UTF8(out, "_id", id.c_str());
  BSON_APPEND_UTF8(out, "user", u.user.c_str());
  BSON_APPEND_UTF8(out, "db", u.db.c_str());
  bson_t creds, scram;
  BSON_APPEND_DOCUMENT_BEGIN(out, "credentials", &creds);
  if (!u.scram.empty()) {
    BSON_APPEND_DOCUMENT_BEGIN(&creds, "SCRAM-SHA-256", &scram);
    BSON_APPEND_INT32(&scram, "iterationCount", u.scram.iterations);
    AppendBinary(&scram, "salt", u.scram.salt);
    AppendBinary(&scram, "storedKey", u.scram.stored_key);
    AppendBinary(&scram, "serverKey", u.scram.server_key);
    bson_append_document_end(&creds, &scram);
  }
  bson_append_document_end(out, &creds);
  AppendRoleNames(u.roles, out, "roles");
  if (!u.custom_data.empty()) BSON_APPEND_DOCUMENT(out, "customData", u.custom_data.bson());
  return Document::Adopt(out);
}

Status DecodeUser(const bson_t* doc, UserRecord* out) {
  bson_iter_t it;
  auto str = [&](const char* key, std::string* dst) {
    if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it)) *dst = bson_iter_utf8(&it, nullptr);
  };
  str("user", &out->user);
  str("db", &out->db);
  if (out->user.empty() || out->db.empty()) return Status(ErrorCode::kDataCorruptionDetected, "a stored user has no name");
  if (bson_iter_init(&it, doc)) {
    bson_iter_t f;
    if (bson_iter_find_descendant(&it, "credentials.SCRAM-SHA-256.iterationCount", &f) && BSON_ITER_HOLDS_INT32(&f)) {
      out->scram.iterations = bson_iter_int32(&f);
      ReadBinary(doc, "credentials.SCRAM-SHA-256.salt", &out->scram.salt);
      ReadBinary(doc, "credentials.SCRAM-SHA-256.storedKey", &out->scram.stored_key);
      ReadBinary(doc, "credentials.SCRAM-SHA-256.serverKey", &out->scram.server_key);
    }
  }
  if (bson_iter_init_find(&it, doc, "roles") && BSON_ITER_HOLDS_ARRAY(&it)) {
    bson_t roles;
    RETURN_IF_ERROR(SubDocument(&it, &roles));
    RETURN_IF_ERROR(ParseRoleNames(&roles, out->db, &out->roles));
  }
  if (bson_iter_init_find(&it, doc, "customData") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    bson_t cd;
    RETURN_IF_ERROR(SubDocument(&it, &cd));
    out->custom_data = Document::Copy(&cd);
  }
  return Status::OK();
}

Document EncodeRole(const RoleRecord& r) {
  bson_t* out = bson_new();
  const std::string id = r.name.db + "." + r.name.role;
  BSON_APPEND_UTF8(out, "_id", id.c_str());
  BSON_APPEND_UTF8(out, "role", r.name.role.c_str());
  BSON_APPEND_UTF8(out, "db", r.name.db.c_str());
  AppendPrivileges(r.privileges, out, "privileges");
  AppendRoleNames(r.roles, out, "roles");
  return Document::Adopt(out);
}

Status DecodeRole(const bson_t* doc, RoleRecord* out) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, "role") && BSON_ITER_HOLDS_UTF8(&it)) out->name.role = bson_iter_utf8(&it, nullptr);
  if (bson_iter_init_find(&it, doc, "db") && BSON_ITER_HOLDS_UTF8(&it)) out->name.db = bson_iter_utf8(&it, nullptr);
  if (out->name.role.empty() || out->name.db.empty()) {
    return Status(ErrorCode::kDataCorruptionDetected, "a stored role has no name");
  }
  if (bson_iter_init_find(&it, doc, "privileges") && BSON_ITER_HOLDS_ARRAY(&it)) {
    bson_t privs;
    RETURN_IF_ERROR(SubDocument(&it, &privs));
    RETURN_IF_ERROR(ParsePrivileges(&privs, &out->privileges));
  }
  if (bson_iter_init_find(&it, doc, "roles") && BSON_ITER_HOLDS_ARRAY(&it)) {
    bson_t roles;
    RETURN_IF_ERROR(SubDocument(&it, &roles));
    RETURN_IF_ERROR(ParseRoleNames(&roles, out->name.db, &out->roles));
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<const Principal>> Principal::Resolve(const UserRecord& user, const RoleLookup& lookup) {
  auto p = std::make_shared<Principal>();
  p->user_ = user.user;
  p->db_ = user.db;
  p->direct_roles_ = user.roles;
  std::set<RoleName> seen;
  std::vector<RoleName> todo = user.roles;
  while (!todo.empty()) {
    RoleName name = std::move(todo.back());
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    std::optional<RoleRecord> role = BuiltinRole(name);
    if (!role) {
      ASSIGN_OR_RETURN(role, lookup(name));
    }
    if (!role) continue;  // dropped since it was granted: grants nothing
    for (Privilege& priv : role->privileges) p->privileges_.push_back(std::move(priv));
    for (RoleName& inherited : role->roles) todo.push_back(std::move(inherited));
  }
  return std::shared_ptr<const Principal>(std::move(p));
}

std::shared_ptr<const Principal> Principal::Unauthenticated() {
  static const std::shared_ptr<const Principal> none = std::make_shared<const Principal>();
  return none;
}

bool Principal::HasAnyPrivilegeOn(const std::string& db) const {
  for (const Privilege& p : privileges_) {
    if (p.actions.none()) continue;
    if (p.resource.kind == Resource::Kind::kAny) return true;
    if (p.resource.kind == Resource::Kind::kNamespace && (p.resource.db.empty() || p.resource.db == db)) return true;
  }
  return false;
}

bool Principal::HasAnyPrivilegeOn(const std::string& db, const std::string& coll) const {
  const Target t = Target::Collection(db, coll);
  for (const Privilege& p : privileges_) {
    if (p.actions.any() && Covers(p.resource, t)) return true;
  }
  return false;
}

bool Principal::Can(Action action, const Target& target) const {
  const size_t bit = static_cast<size_t>(action);
  for (const Privilege& p : privileges_) {
    if (p.actions.test(bit) && Covers(p.resource, target)) return true;
  }
  return false;
}

Status Principal::Check(Action action, const Target& target, const std::string& what) const {
  if (Can(action, target)) return Status::OK();
  const std::string ns = target.cluster ? std::string("the server") : target.coll.empty() ? target.db
                                                                                          : target.db + "." + target.coll;
  if (!authenticated()) {
    return UnauthorizedError(user_, ActionName(action), ns, "command requires authentication (" + what + ")");
  }
  return UnauthorizedError(user_, ActionName(action), ns,
                           "not authorized on " + (target.cluster ? std::string("admin") : target.db) + " to " + what);
}

Status Principal::CheckNamespace(Action action, const std::string& db, const std::string& coll,
                                 const std::string& what) const {
  const std::string verb = what.empty() ? std::string(ActionName(action)) : what;
  if (coll.empty()) return Check(action, Target::Database(db), verb + " on " + db);
  return Check(action, Target::Collection(db, coll), verb + " on " + db + "." + coll);
}

Status Principal::ClaimAgent(std::string* agent_id, const char* action, const std::string& ns) const {
  if (agent_id->empty() || *agent_id == user_) {
    *agent_id = user_;
    return Status::OK();
  }
  const std::string claimed = std::move(*agent_id);
  *agent_id = user_;
  return UnauthorizedError(user_, action, ns,
                           "writeContext.agentId \"" + claimed + "\" names another agent than the authenticated "
                           "user \"" + user_ + "@" + db_ + "\": the authenticated user is the agent");
}

std::optional<std::vector<std::string>> Principal::WritablePaths(Action action, const Target& target) const {
  const size_t bit = static_cast<size_t>(action);
  std::vector<std::string> paths;
  for (const Privilege& p : privileges_) {
    if (!p.actions.test(bit) || !Covers(p.resource, target)) continue;
    if (!p.fields) return std::nullopt;
    paths.insert(paths.end(), p.fields->begin(), p.fields->end());
  }
  return paths;
}

bool Principal::MaySpeakFor(Action action, const Target& target, const std::string& source) const {
  if (source.empty()) return true;
  const size_t bit = static_cast<size_t>(action);
  for (const Privilege& p : privileges_) {
    if (!p.actions.test(bit) || !Covers(p.resource, target)) continue;
    if (!p.sources || std::find(p.sources->begin(), p.sources->end(), source) != p.sources->end()) return true;
  }
  return false;
}

Status UnauthorizedError(const std::string& agent, const char* action, const std::string& ns, const std::string& why,
                         const std::string* path, const std::string* source, const Value* id) {
  bson_t* info = bson_new();
  BSON_APPEND_UTF8(info, "agentId", agent.c_str());
  BSON_APPEND_UTF8(info, "action", action);
  BSON_APPEND_UTF8(info, "ns", ns.c_str());
  if (path != nullptr) BSON_APPEND_UTF8(info, "path", path->c_str());
  if (source != nullptr) BSON_APPEND_UTF8(info, "source", source->c_str());
  if (id != nullptr) id->AppendTo(info, "_id");
  return Status(ErrorCode::kUnauthorized, why, std::make_shared<const Document>(Document::Adopt(info)));
}

}  // namespace auth
}  // namespace gatedb
