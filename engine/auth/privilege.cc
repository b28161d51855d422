#include "engine/auth/privilege.h"

#include <cstring>

#include "engine/document/bson_compare.h"

namespace gatedb {
namespace auth {

namespace {

struct ActionEntry {
  Action action;
  const char* name;
};

const ActionEntry kActions[] = {
#define GATEDB_AUTH_ACTION_ENTRY(e, name) {Action::e, name},
    GATEDB_AUTH_ACTIONS(GATEDB_AUTH_ACTION_ENTRY)
#undef GATEDB_AUTH_ACTION_ENTRY
};

Status WrongType(const std::string& field, const bson_iter_t* it, const char* want) {
  return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type '" +
                                              BsonTypeName(bson_iter_type(it)) + "', expected type '" + want + "'");
}

Status ReadStringArray(bson_iter_t* it, const std::string& field, std::vector<std::string>* out) {
  if (!BSON_ITER_HOLDS_ARRAY(it)) return WrongType(field, it, "array");
  bson_iter_t e;
  bson_iter_recurse(it, &e);
  while (bson_iter_next(&e)) {
    if (!BSON_ITER_HOLDS_UTF8(&e)) return WrongType(field + "." + bson_iter_key(&e), &e, "string");
    uint32_t n = 0;
    const char* s = bson_iter_utf8(&e, &n);
    out->emplace_back(s, n);
  }
  return Status::OK();
}

Status ParseResource(bson_iter_t* it, Resource* out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return WrongType("resource", it, "object");
  bson_iter_t f;
  bson_iter_recurse(it, &f);
  bool have_db = false, have_coll = false, cluster = false, any = false;
  while (bson_iter_next(&f)) {
    const char* k = bson_iter_key(&f);
    if (std::strcmp(k, "db") == 0 || std::strcmp(k, "collection") == 0) {
      if (!BSON_ITER_HOLDS_UTF8(&f)) return WrongType(std::string("resource.") + k, &f, "string");
      (k[0] == 'd' ? out->db : out->coll) = bson_iter_utf8(&f, nullptr);
      (k[0] == 'd' ? have_db : have_coll) = true;
    } else if (std::strcmp(k, "cluster") == 0 || std::strcmp(k, "anyResource") == 0) {
      if (!BSON_ITER_HOLDS_BOOL(&f) || !bson_iter_bool(&f)) {
        return Status(ErrorCode::kBadValue, std::string("resource.") + k + " must be true");
      }
      (k[0] == 'c' ? cluster : any) = true;
    } else {
      return Status(ErrorCode::kBadValue, std::string("unknown field in a privilege's resource: '") + k +
                                              "' (a resource is {db, collection}, {cluster: true} or "
                                              "{anyResource: true})");
    }
  }
  const int kinds = (have_db || have_coll ? 1 : 0) + (cluster ? 1 : 0) + (any ? 1 : 0);
  if (kinds != 1 || (kinds == 1 && (have_db != have_coll))) {
    return Status(ErrorCode::kBadValue,
                  "a privilege's resource is {db, collection} (both given), {cluster: true} or {anyResource: true}");
  }
  out->kind = cluster ? Resource::Kind::kCluster : any ? Resource::Kind::kAny : Resource::Kind::kNamespace;
  return Status::OK();
}

}  // namespace

const char* ActionName(Action a) {
  for (const ActionEntry& e : kActions) {
    if (e.action == a) return e.name;
  }
  return "?";
}

std::optional<Action> ActionFromName(std::string_view name) {
  for (const ActionEntry& e : kActions) {
    if (name == e.name) return e.action;
  }
  return std::nullopt;
}

bool Covers(const Resource& r, const Target& t) {
  switch (r.kind) {
    case Resource::Kind::kAny:
      return true;
    case Resource::Kind::kCluster:
      return t.cluster;
    case Resource::Kind::kNamespace:
      break;
  }
  if (t.cluster) return false;
  if (!r.db.empty() && r.db != t.db) return false;
  if (t.coll.empty()) return r.coll.empty();  // a database-level action: the database's wildcard
  if (!r.coll.empty()) return r.coll == t.coll;
  return t.coll.rfind("system.", 0) != 0;  // MongoDB's wildcard leaves out system collections
}

Status ParsePrivilege(const bson_t* doc, Privilege* out) {
  bson_iter_t it;
  bool have_resource = false, have_actions = false;
  bson_iter_init(&it, doc);
  while (bson_iter_next(&it)) {
    const std::string k = bson_iter_key(&it);
    if (k == "resource") {
      RETURN_IF_ERROR(ParseResource(&it, &out->resource));
      have_resource = true;
    } else if (k == "actions") {
      std::vector<std::string> names;
      RETURN_IF_ERROR(ReadStringArray(&it, "actions", &names));
      for (const std::string& n : names) {
        std::optional<Action> a = ActionFromName(n);
        if (!a) return Status(ErrorCode::kBadValue, "Unrecognized action privilege string: " + n);
        out->actions.set(static_cast<size_t>(*a));
      }
      have_actions = true;
    } else if (k == "fields" || k == "sources") {
      std::vector<std::string> v;
      RETURN_IF_ERROR(ReadStringArray(&it, k, &v));
      for (const std::string& s : v) {
        if (s.empty() || s.find('\0') != std::string::npos || (k == "fields" && (s[0] == '$' || s.front() == '.' ||
                                                                                 s.back() == '.' ||
                                                                                 s.find("..") != std::string::npos))) {
          return Status(ErrorCode::kBadValue, "a privilege's " + k + " entry must be a " +
                                                  (k == "fields" ? "field path" : "non-empty name") + ", not \"" + s +
                                                  "\"");
        }
      }
      (k == "fields" ? out->fields : out->sources) = std::move(v);
    } else {
      return Status(ErrorCode::kLocation40415,
                    "BSON field 'privilege." + k + "' is an unknown field (a privilege has resource, actions, and "
                    "gatedb's fields and sources)");
    }
  }
  if (!have_resource || !have_actions) {
    return Status(ErrorCode::kLocation40414,
                  std::string("BSON field 'privilege.") + (have_resource ? "actions" : "resource") +
                      "' is missing but a required field");
  }
  if ((out->fields || out->sources) && out->resource.kind == Resource::Kind::kCluster) {
    return Status(ErrorCode::kBadValue, "fields and sources apply to collections, not to the cluster resource");
  }
  return Status::OK();
}

Status ParsePrivileges(const bson_t* array, std::vector<Privilege>* out) {
  bson_iter_t it;
  bson_iter_init(&it, array);
  while (bson_iter_next(&it)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return WrongType(std::string("privileges.") + bson_iter_key(&it), &it, "object");
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    bson_t doc;
    if (!bson_init_static(&doc, data, len)) return Status(ErrorCode::kInvalidBSON, "a privilege is not BSON");
    Privilege p;
    RETURN_IF_ERROR(ParsePrivilege(&doc, &p));
    out->push_back(std::move(p));
  }
  return Status::OK();
}

void AppendPrivilege(const Privilege& p, bson_t* out, const char* key) {
  bson_t d, r, a;
  BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
  BSON_APPEND_DOCUMENT_BEGIN(&d, "resource", &r);
  switch (p.resource.kind) {
    case Resource::Kind::kAny:
      BSON_APPEND_BOOL(&r, "anyResource", true);
      break;
    case Resource::Kind::kCluster:
      BSON_APPEND_BOOL(&r, "cluster", true);
      break;
    case Resource::Kind::kNamespace:
      BSON_APPEND_UTF8(&r, "db", p.resource.db.c_str());
      BSON_APPEND_UTF8(&r, "collection", p.resource.coll.c_str());
      break;
  }
  bson_append_document_end(&d, &r);
  BSON_APPEND_ARRAY_BEGIN(&d, "actions", &a);
  int i = 0;
  for (const ActionEntry& e : kActions) {
    if (!p.actions.test(static_cast<size_t>(e.action))) continue;
    char idx[16];
    const char* ik = nullptr;
    bson_uint32_to_string(i++, &ik, idx, sizeof idx);
    BSON_APPEND_UTF8(&a, ik, e.name);
  }
  bson_append_array_end(&d, &a);
  for (const auto* list : {&p.fields, &p.sources}) {
    if (!*list) continue;
    bson_t l;
    BSON_APPEND_ARRAY_BEGIN(&d, list == &p.fields ? "fields" : "sources", &l);
    int j = 0;
    for (const std::string& s : **list) {
      char idx[16];
      const char* ik = nullptr;
      bson_uint32_to_string(j++, &ik, idx, sizeof idx);
      BSON_APPEND_UTF8(&l, ik, s.c_str());
    }
    bson_append_array_end(&d, &l);
  }
  bson_append_document_end(out, &d);
}

void AppendPrivileges(const std::vector<Privilege>& privileges, bson_t* out, const char* key) {
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(out, key, &arr);
  uint32_t i = 0;
  for (const Privilege& p : privileges) {
    char idx[16];
    const char* ik = nullptr;
    bson_uint32_to_string(i++, &ik, idx, sizeof idx);
    AppendPrivilege(p, &arr, ik);
  }
  bson_append_array_end(out, &arr);
}

bool PathAllowed(const std::optional<std::vector<std::string>>& allowed, std::string_view path) {
  if (!allowed) return true;
  for (const std::string& f : *allowed) {
    if (path.size() < f.size() || path.compare(0, f.size(), f) != 0) continue;
    if (path.size() == f.size() || path[f.size()] == '.') return true;
  }
  return false;
}

}  // namespace auth
}  // namespace gatedb
