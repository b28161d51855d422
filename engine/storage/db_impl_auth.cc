// DBImpl: users and roles (engine/auth), kept as side records.
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"

namespace gatedb {

namespace {

constexpr char kUserSpace[] = "auth.user";
constexpr char kRoleSpace[] = "auth.role";

std::string AuthKey(const std::string& db, const std::string& name) {
  std::string k = db;
  k.push_back('\0');
  k.append(name);
  return k;
}

Status ValidName(const std::string& what, const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) {
    return Status(ErrorCode::kBadValue, what + " names must be non-empty and hold no NUL byte");
  }
  return Status::OK();
}

Status UserNotFound(const std::string& user, const std::string& db) {
  return Status(ErrorCode::kUserNotFound, "Could not find user \"" + user + "\" for db \"" + db + "\"");
}

Status RoleNotFound(const std::string& role, const std::string& db) {
  return Status(ErrorCode::kRoleNotFound, "Role \"" + role + "@" + db + "\" not found");
}

}  // namespace

Status DBImpl::LoadUserCount() {
  int64_t n = 0;
  RETURN_IF_ERROR(ScanSideRecords(kUserSpace, "", [&](std::string_view, DocumentView) {
    ++n;
    return Status::OK();
  }));
  user_count_.store(n, std::memory_order_release);
  return Status::OK();
}

Status DBImpl::PutAuthRecord(const char* space, const std::string& db, const std::string& name,
                             const Document* value) {
  Status s = value != nullptr ? PutSideRecord(nullptr, space, AuthKey(db, name), value->bson())
                              : DeleteSideRecord(nullptr, space, AuthKey(db, name));
  MutexLock l(&principals_mu_);
  principals_.clear();  // every principal resolves again at its next call
  return s;
}

Status DBImpl::CreateUser(const auth::UserRecord& user) {
  RETURN_IF_ERROR(ValidName("user", user.user));
  RETURN_IF_ERROR(ValidName("database", user.db));
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing, GetSideRecord(nullptr, kUserSpace, AuthKey(user.db, user.user)));
  if (existing) {
    return Status(ErrorCode::kLocation51003, "User \"" + user.user + "@" + user.db + "\" already exists");
  }
  Document rec = auth::EncodeUser(user);
  RETURN_IF_ERROR(PutAuthRecord(kUserSpace, user.db, user.user, &rec));
  user_count_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

Status DBImpl::UpdateUser(const auth::UserRecord& user) {
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing, GetSideRecord(nullptr, kUserSpace, AuthKey(user.db, user.user)));
  if (!existing) return UserNotFound(user.user, user.db);
  Document rec = auth::EncodeUser(user);
  return PutAuthRecord(kUserSpace, user.db, user.user, &rec);
}

Status DBImpl::DropUser(const std::string& user, const std::string& db) {
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing, GetSideRecord(nullptr, kUserSpace, AuthKey(db, user)));
  if (!existing) return UserNotFound(user, db);
  RETURN_IF_ERROR(PutAuthRecord(kUserSpace, db, user, nullptr));
  user_count_.fetch_sub(1, std::memory_order_acq_rel);
  return Status::OK();
}

StatusOr<std::optional<auth::UserRecord>> DBImpl::GetUser(const std::string& user, const std::string& db) {
  ASSIGN_OR_RETURN(std::optional<Document> rec, GetSideRecord(nullptr, kUserSpace, AuthKey(db, user)));
  if (!rec) return std::optional<auth::UserRecord>();
  auth::UserRecord u;
  RETURN_IF_ERROR(auth::DecodeUser(rec->bson(), &u));
  return std::optional<auth::UserRecord>(std::move(u));
}

StatusOr<std::vector<auth::UserRecord>> DBImpl::ListUsers(const std::string& db) {
  std::vector<auth::UserRecord> out;
  std::string prefix = db.empty() ? std::string() : AuthKey(db, "");
  RETURN_IF_ERROR(ScanSideRecords(kUserSpace, prefix, [&](std::string_view, DocumentView v) {
    auth::UserRecord u;
    RETURN_IF_ERROR(auth::DecodeUser(v.bson(), &u));
    out.push_back(std::move(u));
    return Status::OK();
  }));
  return out;
}

Status DBImpl::CreateRole(const auth::RoleRecord& role) {
  RETURN_IF_ERROR(ValidName("role", role.name.role));
  RETURN_IF_ERROR(ValidName("database", role.name.db));
  if (auth::BuiltinRole(role.name) || auth::IsBuiltinRoleName(role.name.role)) {
    return Status(ErrorCode::kBadValue, "Cannot create roles with the same name as a built-in role: " +
                                            role.name.full());
  }
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing,
                   GetSideRecord(nullptr, kRoleSpace, AuthKey(role.name.db, role.name.role)));
  if (existing) return Status(ErrorCode::kLocation51002, "Role \"" + role.name.full() + "\" already exists");
  Document rec = auth::EncodeRole(role);
  return PutAuthRecord(kRoleSpace, role.name.db, role.name.role, &rec);
}

Status DBImpl::UpdateRole(const auth::RoleRecord& role) {
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing,
                   GetSideRecord(nullptr, kRoleSpace, AuthKey(role.name.db, role.name.role)));
  if (!existing) return RoleNotFound(role.name.role, role.name.db);
  Document rec = auth::EncodeRole(role);
  return PutAuthRecord(kRoleSpace, role.name.db, role.name.role, &rec);
}

Status DBImpl::DropRole(const std::string& role, const std::string& db) {
  MutexLock l(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<Document> existing, GetSideRecord(nullptr, kRoleSpace, AuthKey(db, role)));
  if (!existing) return RoleNotFound(role, db);
  return PutAuthRecord(kRoleSpace, db, role, nullptr);
}

StatusOr<std::optional<auth::RoleRecord>> DBImpl::GetRole(const std::string& role, const std::string& db) {
  ASSIGN_OR_RETURN(std::optional<Document> rec, GetSideRecord(nullptr, kRoleSpace, AuthKey(db, role)));
  if (!rec) return std::optional<auth::RoleRecord>();
  auth::RoleRecord r;
  RETURN_IF_ERROR(auth::DecodeRole(rec->bson(), &r));
  return std::optional<auth::RoleRecord>(std::move(r));
}

StatusOr<std::vector<auth::RoleRecord>> DBImpl::ListRoles(const std::string& db) {
  std::vector<auth::RoleRecord> out;
  std::string prefix = db.empty() ? std::string() : AuthKey(db, "");
  RETURN_IF_ERROR(ScanSideRecords(kRoleSpace, prefix, [&](std::string_view, DocumentView v) {
    auth::RoleRecord r;
    RETURN_IF_ERROR(auth::DecodeRole(v.bson(), &r));
    out.push_back(std::move(r));
    return Status::OK();
  }));
  return out;
}

StatusOr<std::shared_ptr<const auth::Principal>> DBImpl::ResolvePrincipal(const std::string& user,
                                                                          const std::string& db) {
  const std::string key = AuthKey(db, user);
  {
    MutexLock l(&principals_mu_);
    auto it = principals_.find(key);
    if (it != principals_.end()) return it->second;
  }
  // Resolved under auth_mu_, so that no change lands between the reads and
  // the cache entry (a change clears the cache after writing).
  MutexLock change(&auth_mu_);
  ASSIGN_OR_RETURN(std::optional<auth::UserRecord> u, GetUser(user, db));
  if (!u) return UserNotFound(user, db);
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> p,
                   auth::Principal::Resolve(*u, [this](const auth::RoleName& n) { return GetRole(n.role, n.db); }));
  MutexLock l(&principals_mu_);
  principals_[key] = p;
  return p;
}

}  // namespace gatedb
