// ping, create, drop, dropDatabase, listCollections,
// listDatabases, collMod.
#include <chrono>
#include <string>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/auth/principal.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

namespace {

Status ReadCollectionName(const CommandContext& ctx, Namespace* ns) {
  return ReadCommandNamespace(ctx.cmd, ctx.db_name, ns);
}

void AppendCollectionInfo(const CollectionInfo& info, bool name_only, bson_t* out) {
  BSON_APPEND_UTF8(out, "name", info.ns.coll.c_str());
  BSON_APPEND_UTF8(out, "type", "collection");
  if (name_only) return;
  bson_t opts, inf;
  BSON_APPEND_DOCUMENT_BEGIN(out, "options", &opts);
  BSON_APPEND_UTF8(&opts, "versionField", info.options.version_field.c_str());
  if (info.options.max_basis_age_ms) BSON_APPEND_INT64(&opts, "maxBasisAgeMs", *info.options.max_basis_age_ms);
  AppendConflictPolicy(info.options.conflict_policy, &opts, "conflictPolicy");
  if (!info.options.validator.empty()) {
    BSON_APPEND_DOCUMENT(&opts, "validator", info.options.validator.bson());
    BSON_APPEND_UTF8(&opts, "validationLevel", info.options.validation_level.c_str());
    BSON_APPEND_UTF8(&opts, "validationAction", info.options.validation_action.c_str());
  }
  bson_append_document_end(out, &opts);
  BSON_APPEND_DOCUMENT_BEGIN(out, "info", &inf);
  BSON_APPEND_BOOL(&inf, "readOnly", false);
  bson_append_document_end(out, &inf);
}

}  // namespace

Status PingCommand(CommandContext& ctx, bson_t* reply) { return Status::OK(); }

Status CreateCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCollectionName(ctx, &ns));
  CollectionOptions options;
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    if (key == "versionField") {
      RETURN_IF_ERROR(ReadString(&it, "create.versionField", &options.version_field));
    } else if (key == "maxBasisAgeMs") {
      int64_t ms = 0;
      RETURN_IF_ERROR(ReadInt64(&it, "create.maxBasisAgeMs", &ms));
      options.max_basis_age_ms = ms;
    } else if (key == "conflictPolicy") {
      bson_t spec;
      Document copy;
      RETURN_IF_ERROR(ReadDocument(&it, "create.conflictPolicy", &copy));
      RETURN_IF_ERROR(ParseConflictPolicy(copy.bson(), &options.conflict_policy));
      (void)spec;
    } else if (key == "validator") {
      RETURN_IF_ERROR(ReadDocument(&it, "create.validator", &options.validator));
    } else if (key == "validationLevel") {
      RETURN_IF_ERROR(ReadString(&it, "create.validationLevel", &options.validation_level));
    } else if (key == "validationAction") {
      RETURN_IF_ERROR(ReadString(&it, "create.validationAction", &options.validation_action));
    } else if (key == "capped" || key == "size" || key == "max" || key == "timeseries" ||
               key == "clusteredIndex" || key == "viewOn" || key == "pipeline" ||
               key == "changeStreamPreAndPostImages" || key == "storageEngine" || key == "indexOptionDefaults" ||
               key == "expireAfterSeconds" || key == "collation") {
      return Status(ErrorCode::kInvalidOptions, "create option '" + std::string(key) + "' is not supported by gatedb");
    } else {
      return UnknownField("create", key);
    }
  }
  return ctx.db->CreateCollection(ns, options);
}

Status DropCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCollectionName(ctx, &ns));
  RETURN_IF_ERROR(ctx.db->DropCollection(ns));
  BSON_APPEND_UTF8(reply, "ns", ns.full().c_str());
  return Status::OK();
}

namespace {

// "db.coll" as a command names a namespace.  Errors: InvalidNamespace.
Status ParseFullNamespace(std::string_view full, const char* field, Namespace* out) {
  const size_t dot = full.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == full.size()) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid " + std::string(field) + " namespace: " + std::string(full));
  }
  out->db = std::string(full.substr(0, dot));
  out->coll = std::string(full.substr(dot + 1));
  return Status::OK();
}

}  // namespace

// {renameCollection: "db.from", to: "db.to", dropTarget}, on admin.
Status RenameCollectionCommand(CommandContext& ctx, bson_t* reply) {
  (void)reply;
  if (ctx.db_name != "admin") {
    return Status(ErrorCode::kUnauthorized, "renameCollection may only be run against the admin database.");
  }
  bson_iter_t first;
  if (!bson_iter_init(&first, ctx.cmd) || !bson_iter_next(&first) || !BSON_ITER_HOLDS_UTF8(&first)) {
    return TypeError("renameCollection", bson_iter_type(&first), "string");
  }
  Namespace from, to;
  RETURN_IF_ERROR(ParseFullNamespace(bson_iter_utf8(&first, nullptr), "source", &from));
  bool have_to = false, drop_target = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "to") {
      if (!BSON_ITER_HOLDS_UTF8(it)) return TypeError("renameCollection.to", bson_iter_type(it), "string");
      have_to = true;
      return ParseFullNamespace(bson_iter_utf8(it, nullptr), "target", &to);
    }
    if (key == "dropTarget") return ReadBool(it, "renameCollection.dropTarget", &drop_target);
    if (key == "stayTemp") {
      bool ignored = false;  // gatedb has no temporary collections
      return ReadBool(it, "renameCollection.stayTemp", &ignored);
    }
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_to) return MissingField(ctx.command_name, "to");
  return ctx.db->RenameCollection(from, to, drop_target);
}

Status DropDatabaseCommand(CommandContext& ctx, bson_t* reply) {
  RETURN_IF_ERROR(ctx.db->DropDatabase(ctx.db_name));
  BSON_APPEND_UTF8(reply, "dropped", ctx.db_name.c_str());
  return Status::OK();
}

Status ListCollectionsCommand(CommandContext& ctx, bson_t* reply) {
  Document filter;
  bool name_only = false;
  bool authorized_only = false;
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    if (key == "filter") {
      RETURN_IF_ERROR(ReadDocument(&it, "listCollections.filter", &filter));
    } else if (key == "nameOnly") {
      RETURN_IF_ERROR(ReadBool(&it, "listCollections.nameOnly", &name_only));
    } else if (key == "authorizedCollections") {
      RETURN_IF_ERROR(ReadBool(&it, "listCollections.authorizedCollections", &authorized_only));
    } else if (key == "cursor") {
      Document ignored;
      RETURN_IF_ERROR(ReadDocument(&it, "listCollections.cursor", &ignored));
    } else {
      return UnknownField("listCollections", key);
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(filter.bson()));
  bson_t cursor, batch;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "cursor", &cursor);
  BSON_APPEND_INT64(&cursor, "id", 0);
  std::string ns = ctx.db_name + ".$cmd.listCollections";
  BSON_APPEND_UTF8(&cursor, "ns", ns.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cursor, "firstBatch", &batch);
  uint32_t i = 0;
  char keybuf[16];
  // MongoDB's authorizedCollections: a caller without listCollections on
  // the database sees the collections it holds some privilege on.
  const bool filtered = ctx.principal && !ctx.principal->Can(auth::Action::kListCollections,
                                                              auth::Target::Database(ctx.db_name));
  if (filtered && !authorized_only) {
    return ctx.principal->Check(auth::Action::kListCollections, auth::Target::Database(ctx.db_name),
                                "execute command listCollections on " + ctx.db_name +
                                    " (authorizedCollections: true lists the collections it may use)");
  }
  for (const CollectionInfo& info : ctx.db->ListCollections(ctx.db_name)) {
    if (filtered && !ctx.principal->HasAnyPrivilegeOn(info.ns.db, info.ns.coll)) continue;
    bson_t entry = BSON_INITIALIZER;
    AppendCollectionInfo(info, name_only, &entry);
    if (matcher->Matches(&entry)) {
      const char* key;
      bson_uint32_to_string(i++, &key, keybuf, sizeof keybuf);
      BSON_APPEND_DOCUMENT(&batch, key, &entry);
    }
    bson_destroy(&entry);
  }
  bson_append_array_end(&cursor, &batch);
  bson_append_document_end(reply, &cursor);
  return Status::OK();
}

Status ListDatabasesCommand(CommandContext& ctx, bson_t* reply) {
  bool name_only = false;
  Document filter;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "nameOnly") return ReadBool(it, "listDatabases.nameOnly", &name_only);
    if (key == "filter") return ReadDocument(it, "listDatabases.filter", &filter);
    if (key == "authorizedDatabases") return Status::OK();  // always, for callers without listDatabases
    return UnknownField(ctx.command_name, key);
  }));
  std::unique_ptr<query::Matcher> matcher;
  if (!filter.empty()) {
    ASSIGN_OR_RETURN(matcher, query::Matcher::Parse(filter.bson()));
  }
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "databases", &arr);
  uint32_t i = 0;
  char keybuf[16];
  int64_t total = 0;
  // A caller without listDatabases on the server sees the databases it
  // holds some privilege on (MongoDB's authorizedDatabases).
  const bool filtered = ctx.principal && !ctx.principal->Can(auth::Action::kListDatabases, auth::Target::Cluster());
  for (const std::string& db : ctx.db->ListDatabases()) {
    if (filtered && !ctx.principal->HasAnyPrivilegeOn(db)) continue;
    int64_t size = 0;
    bool empty = true;
    for (const CollectionInfo& info : ctx.db->ListCollections(db)) {
      // Sizes are estimates and `empty` needs one document: no full count.
      auto stats = ctx.db->CollectionStats(info.ns, /*count_documents=*/false);
      if (!stats.ok()) continue;  // dropped meanwhile
      size += static_cast<int64_t>(stats->storage_bytes + stats->index_bytes);
      if (stats->count > 0) empty = false;
    }
    bson_t* entry = bson_new();
    BSON_APPEND_UTF8(entry, "name", db.c_str());
    if (!name_only) {
      BSON_APPEND_INT64(entry, "sizeOnDisk", size);
      BSON_APPEND_BOOL(entry, "empty", empty);
    }
    bool keep = matcher == nullptr || matcher->Matches(entry);
    if (keep) {
      const char* key;
      bson_uint32_to_string(i++, &key, keybuf, sizeof keybuf);
      BSON_APPEND_DOCUMENT(&arr, key, entry);
      total += size;
    }
    bson_destroy(entry);
  }
  bson_append_array_end(reply, &arr);
  if (!name_only) {
    BSON_APPEND_INT64(reply, "totalSize", total);
    BSON_APPEND_INT64(reply, "totalSizeMb", total / (1024 * 1024));
  }
  return Status::OK();
}

// dbStats: MongoDB's shape over CollectionStats; scale divides the sizes.
Status DbStatsCommand(CommandContext& ctx, bson_t* reply) {
  int64_t scale = 1;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "scale") return ReadInt64(it, "dbStats.scale", &scale);
    if (key == "freeStorage") return Status::OK();
    return UnknownField(ctx.command_name, key);
  }));
  if (scale <= 0) return Status(ErrorCode::kBadValue, "Scale factor must be greater than zero");
  int64_t collections = 0, objects = 0, data = 0, storage = 0, indexes = 0, index_size = 0;
  for (const CollectionInfo& info : ctx.db->ListCollections(ctx.db_name)) {
    auto stats = ctx.db->CollectionStats(info.ns);
    if (!stats.ok()) continue;
    ++collections;
    objects += stats->count;
    data += static_cast<int64_t>(stats->data_bytes);
    storage += static_cast<int64_t>(stats->storage_bytes);
    indexes += stats->num_indexes;
    index_size += static_cast<int64_t>(stats->index_bytes);
  }
  BSON_APPEND_UTF8(reply, "db", ctx.db_name.c_str());
  BSON_APPEND_INT64(reply, "collections", collections);
  BSON_APPEND_INT64(reply, "views", 0);
  BSON_APPEND_INT64(reply, "objects", objects);
  BSON_APPEND_DOUBLE(reply, "avgObjSize", objects > 0 ? static_cast<double>(data) / objects : 0.0);
  BSON_APPEND_DOUBLE(reply, "dataSize", static_cast<double>(data) / scale);
  BSON_APPEND_DOUBLE(reply, "storageSize", static_cast<double>(storage) / scale);
  BSON_APPEND_INT64(reply, "indexes", indexes);
  BSON_APPEND_DOUBLE(reply, "indexSize", static_cast<double>(index_size) / scale);
  BSON_APPEND_DOUBLE(reply, "totalSize", static_cast<double>(storage + index_size) / scale);
  BSON_APPEND_INT64(reply, "scaleFactor", scale);
  return Status::OK();
}

// collStats (deprecated in MongoDB 6.2 for $collStats, still answered).
Status CollStatsCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCollectionName(ctx, &ns));
  int64_t scale = 1;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "scale") return ReadInt64(it, "collStats.scale", &scale);
    return UnknownField(ctx.command_name, key);
  }));
  if (scale <= 0) return Status(ErrorCode::kBadValue, "Scale factor must be greater than zero");
  ASSIGN_OR_RETURN(CollectionStatsResult stats, ctx.db->CollectionStats(ns));
  BSON_APPEND_UTF8(reply, "ns", ns.full().c_str());
  DBImpl::AppendStorageStats(stats, scale, reply);
  return Status::OK();
}

Status CollModCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCollectionName(ctx, &ns));
  ASSIGN_OR_RETURN(CollectionInfo info, ctx.db->GetCollectionInfo(ns));
  CollectionOptions options = info.options;
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    if (key == "versionField") {
      std::string vf;
      RETURN_IF_ERROR(ReadString(&it, "collMod.versionField", &vf));
      if (vf != info.options.version_field) {
        return Status(ErrorCode::kInvalidOptions,
                      "versionField cannot be changed after create: the collection's documents carry '" +
                          info.options.version_field + "'");
      }
    } else if (key == "conflictPolicy") {
      Document copy;
      RETURN_IF_ERROR(ReadDocument(&it, "collMod.conflictPolicy", &copy));
      RETURN_IF_ERROR(ParseConflictPolicy(copy.bson(), &options.conflict_policy));
    } else if (key == "maxBasisAgeMs") {
      if (BSON_ITER_HOLDS_NULL(&it)) {
        options.max_basis_age_ms.reset();
      } else {
        int64_t ms = 0;
        RETURN_IF_ERROR(ReadInt64(&it, "collMod.maxBasisAgeMs", &ms));
        options.max_basis_age_ms = ms;
      }
    } else if (key == "validator") {
      RETURN_IF_ERROR(ReadDocument(&it, "collMod.validator", &options.validator));
    } else if (key == "validationLevel") {
      RETURN_IF_ERROR(ReadString(&it, "collMod.validationLevel", &options.validation_level));
    } else if (key == "validationAction") {
      RETURN_IF_ERROR(ReadString(&it, "collMod.validationAction", &options.validation_action));
    } else {
      return UnknownField("collMod", key);
    }
  }
  return ctx.db->ModifyCollection(ns, options);
}

}  // namespace commands
}  // namespace gatedb
