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

Status DBImpl::ChangeAuthRecord(const char* space, const std::string& db, const std::string& name, bool must_exist,
                                const Status& refusal, const Document* value) {
  const std::string key = AuthKey(db, name);
  ASSIGN_OR_RETURN(std::optional<Document> existing, GetSideRecord(nullptr, space, key));
  if (existing.has_value() != must_exist) return refusal;
  Status s = value != nullptr ? PutSideRecord(nullptr, space, key, value->bson()) : DeleteSideRecord(nullptr, space, key);
  MutexLock l(&principals_mu_);
  principals_.clear();  // every principal resolves again at its next call
  return s;
}

namespace {

// The stored record of `space` under (db, name), decoded; nullopt when none.
template <typename Record>
StatusOr<std::optional<Record>> ReadAuthRecord(DBImpl* store, const char* space, const std::string& db,
                                               const std::string& name, Status (*decode)(const bson_t*, Record*)) {
  ASSIGN_OR_RETURN(std::optional<Document> doc, store->GetSideRecord(nullptr, space, AuthKey(db, name)));
  if (!doc) return std::optional<Record>();
  Record r;
  RETURN_IF_ERROR(decode(doc->bson(), &r));
  return std::optional<Record>(std::move(r));
}

// Every record of `space` in `db` ("" = every database), by database then name.
template <typename Record>
StatusOr<std::vector<Record>> ListAuthRecords(DBImpl* store, const char* space, const std::string& db,
                                              Status (*decode)(const bson_t*, Record*)) {
  std::vector<Record> out;
  RETURN_IF_ERROR(store->ScanSideRecords(space, db.empty() ? std::string() : AuthKey(db, ""),
                                         [&](std::string_view, DocumentView v) {
                                           Record r;
                                           RETURN_IF_ERROR(decode(v.bson(), &r));
                                           out.push_back(std::move(r));
                                           return Status::OK();
                                         }));
  return out;
}

}  // namespace

Status DBImpl::CreateUser(const auth::UserRecord& user, bool first_only) {
  RETURN_IF_ERROR(ValidName("user", user.user));
  RETURN_IF_ERROR(ValidName("database", user.db));
  const Document rec = auth::EncodeUser(user);
  MutexLock l(&auth_mu_);
  if (first_only && user_count_.load(std::memory_order_acquire) > 0) {
    return Status(ErrorCode::kUnauthorized,
                  "command createUser requires authentication: the localhost exception creates the first user "
                  "only, and a user exists now");
  }
  RETURN_IF_ERROR(ChangeAuthRecord(
      kUserSpace, user.db, user.user, /*must_exist=*/false,
      Status(ErrorCode::kLocation51003, "User \"" + user.user + "@" + user.db + "\" already exists"), &rec));
  user_count_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

Status DBImpl::UpdateUser(const auth::UserRecord& user) {
  const Document rec = auth::EncodeUser(user);
  MutexLock l(&auth_mu_);
  return ChangeAuthRecord(kUserSpace, user.db, user.user, /*must_exist=*/true, UserNotFound(user.user, user.db), &rec);
}

Status DBImpl::DropUser(const std::string& user, const std::string& db) {
  MutexLock l(&auth_mu_);
  RETURN_IF_ERROR(ChangeAuthRecord(kUserSpace, db, user, /*must_exist=*/true, UserNotFound(user, db), nullptr));
  user_count_.fetch_sub(1, std::memory_order_acq_rel);
  return Status::OK();
}

StatusOr<std::optional<auth::UserRecord>> DBImpl::GetUser(const std::string& user, const std::string& db) {
  return ReadAuthRecord<auth::UserRecord>(this, kUserSpace, db, user, auth::DecodeUser);
}

StatusOr<std::vector<auth::UserRecord>> DBImpl::ListUsers(const std::string& db) {
  return ListAuthRecords<auth::UserRecord>(this, kUserSpace, db, auth::DecodeUser);
}

Status DBImpl::CreateRole(const auth::RoleRecord& role) {
  RETURN_IF_ERROR(ValidName("role", role.name.role));
  RETURN_IF_ERROR(ValidName("database", role.name.db));
  if (auth::BuiltinRole(role.name) || auth::IsBuiltinRoleName(role.name.role)) {
    return Status(ErrorCode::kBadValue, "Cannot create roles with the same name as a built-in role: " +
                                            role.name.full());
  }
  const Document rec = auth::EncodeRole(role);
  MutexLock l(&auth_mu_);
  return ChangeAuthRecord(kRoleSpace, role.name.db, role.name.role, /*must_exist=*/false,
                          Status(ErrorCode::kLocation51002, "Role \"" + role.name.full() + "\" already exists"), &rec);
}

Status DBImpl::UpdateRole(const auth::RoleRecord& role) {
  const Document rec = auth::EncodeRole(role);
  MutexLock l(&auth_mu_);
  return ChangeAuthRecord(kRoleSpace, role.name.db, role.name.role, /*must_exist=*/true,
                          RoleNotFound(role.name.role, role.name.db), &rec);
}

Status DBImpl::DropRole(const std::string& role, const std::string& db) {
  MutexLock l(&auth_mu_);
  return ChangeAuthRecord(kRoleSpace, db, role, /*must_exist=*/true, RoleNotFound(role, db), nullptr);
}

StatusOr<std::optional<auth::RoleRecord>> DBImpl::GetRole(const std::string& role, const std::string& db) {
  return ReadAuthRecord<auth::RoleRecord>(this, kRoleSpace, db, role, auth::DecodeRole);
}

StatusOr<std::vector<auth::RoleRecord>> DBImpl::ListRoles(const std::string& db) {
  return ListAuthRecords<auth::RoleRecord>(this, kRoleSpace, db, auth::DecodeRole);
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
