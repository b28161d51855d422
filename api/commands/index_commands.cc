// createIndexes, listIndexes, dropIndexes and explain: thin translations
// over DBImpl (engine/storage/db_impl_index.cc, db_impl_explain.cc).
#include <string>
#include <vector>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

Status CreateIndexesCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCommandNamespace(ctx.cmd, ctx.db_name, &ns));
  std::vector<Document> specs;
  bool have_indexes = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "indexes") {
      have_indexes = true;
      if (!BSON_ITER_HOLDS_ARRAY(it)) return TypeError("createIndexes.indexes", bson_iter_type(it), "array");
      bson_iter_t elems;
      bson_iter_recurse(it, &elems);
      while (bson_iter_next(&elems)) {
        if (!BSON_ITER_HOLDS_DOCUMENT(&elems)) {
          return TypeError("createIndexes.indexes", bson_iter_type(&elems), "object");
        }
        Document spec;
        RETURN_IF_ERROR(ReadDocument(&elems, "createIndexes.indexes", &spec));
        specs.push_back(std::move(spec));
      }
      return Status::OK();
    }
    if (key == "commitQuorum") return Status::OK();
    return UnknownField("createIndexes", key);
  }));
  if (!have_indexes) return MissingField("createIndexes", "indexes");
  ASSIGN_OR_RETURN(CreateIndexesResult r, ctx.db->CreateIndexes(ns, specs));
  BSON_APPEND_INT32(reply, "numIndexesBefore", r.num_indexes_before);
  BSON_APPEND_INT32(reply, "numIndexesAfter", r.num_indexes_after);
  if (r.all_existed) BSON_APPEND_UTF8(reply, "note", "all indexes already exist");
  BSON_APPEND_BOOL(reply, "createdCollectionAutomatically", r.created_collection);
  return Status::OK();
}

Status ListIndexesCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCommandNamespace(ctx.cmd, ctx.db_name, &ns));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "cursor") {
      Document ignored;
      return ReadDocument(it, "listIndexes.cursor", &ignored);
    }
    if (key == "includeBuildUUIDs" || key == "includeIndexBuildInfo") {
      bool b;
      return ReadBool(it, "listIndexes." + std::string(key), &b);
    }
    return UnknownField("listIndexes", key);
  }));
  ASSIGN_OR_RETURN(std::vector<Document> indexes, ctx.db->ListIndexes(ns));
  bson_t cursor, batch;
  BSON_APPEND_DOCUMENT_BEGIN(reply, "cursor", &cursor);
  BSON_APPEND_INT64(&cursor, "id", 0);
  BSON_APPEND_UTF8(&cursor, "ns", ns.full().c_str());
  BSON_APPEND_ARRAY_BEGIN(&cursor, "firstBatch", &batch);
  for (size_t i = 0; i < indexes.size(); ++i) {
    BSON_APPEND_DOCUMENT(&batch, std::to_string(i).c_str(), indexes[i].bson());
  }
  bson_append_array_end(&cursor, &batch);
  bson_append_document_end(reply, &cursor);
  return Status::OK();
}

Status DropIndexesCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCommandNamespace(ctx.cmd, ctx.db_name, &ns));
  std::vector<std::string> names;
  std::optional<Document> key_pattern;
  bool have_index = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key != "index") return UnknownField(ctx.command_name, key);
    have_index = true;
    if (BSON_ITER_HOLDS_UTF8(it)) {
      names.emplace_back(bson_iter_utf8(it, nullptr));
      return Status::OK();
    }
    if (BSON_ITER_HOLDS_DOCUMENT(it)) {
      Document d;
      RETURN_IF_ERROR(ReadDocument(it, "dropIndexes.index", &d));
      key_pattern = std::move(d);
      return Status::OK();
    }
    if (BSON_ITER_HOLDS_ARRAY(it)) {
      bson_iter_t elems;
      bson_iter_recurse(it, &elems);
      while (bson_iter_next(&elems)) {
        if (!BSON_ITER_HOLDS_UTF8(&elems)) return TypeError("dropIndexes.index", bson_iter_type(&elems), "string");
        names.emplace_back(bson_iter_utf8(&elems, nullptr));
      }
      return Status::OK();
    }
    return Status(ErrorCode::kTypeMismatch, "dropIndexes.index must be a string, an array of strings or an object");
  }));
  if (!have_index) return MissingField(ctx.command_name, "index");
  ASSIGN_OR_RETURN(int was, ctx.db->DropIndexes(ns, names, key_pattern ? &*key_pattern : nullptr));
  BSON_APPEND_INT32(reply, "nIndexesWas", was);
  return Status::OK();
}

Status ExplainCommand(CommandContext& ctx, bson_t* reply) {
  ExplainRequest req;
  Document inner;
  bool have_inner = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "verbosity") return ReadString(it, "explain.verbosity", &req.verbosity);
    return UnknownField("explain", key);
  }));
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return TypeError("explain", bson_iter_type(&it), "object");
  RETURN_IF_ERROR(ReadDocument(&it, "explain", &inner));
  bson_iter_t first;
  have_inner = bson_iter_init(&first, inner.bson()) && bson_iter_next(&first);
  if (!have_inner) return Status(ErrorCode::kFailedToParse, "explain command requires a nested object");
  CommandContext sub = ctx;
  sub.cmd = inner.bson();
  sub.command_name = bson_iter_key(&first);
  sub.scope = nullptr;
  req.command = inner;
  const std::string& name = sub.command_name;
  // A write is explained by its query part, as a find of what it would change.
  auto query_part = [&](ExplainRequest::Kind kind, const Namespace& ns, const Document& filter, bool one,
                        const std::optional<Value>& hint) {
    req.kind = kind;
    req.find.ns = ns;
    req.find.filter = filter;
    req.find.limit = one ? 1 : 0;
    req.find.hint = hint;
  };
  if (name == "find") {
    RETURN_IF_ERROR(ParseFind(sub, &req.find));
    req.kind = ExplainRequest::Kind::kFind;
  } else if (name == "count") {
    RETURN_IF_ERROR(ParseCount(sub, &req.count));
    req.kind = ExplainRequest::Kind::kCount;
  } else if (name == "distinct") {
    RETURN_IF_ERROR(ParseDistinct(sub, &req.distinct));
    req.kind = ExplainRequest::Kind::kDistinct;
  } else if (name == "update") {
    UpdateRequest u;
    RETURN_IF_ERROR(ParseUpdate(sub, &u));
    const UpdateStatement& st = u.updates[0];
    query_part(ExplainRequest::Kind::kUpdate, u.ns, st.q, !st.multi, st.hint);
  } else if (name == "delete") {
    DeleteRequest d;
    RETURN_IF_ERROR(ParseDelete(sub, &d));
    const DeleteStatement& st = d.deletes[0];
    query_part(ExplainRequest::Kind::kDelete, d.ns, st.q, st.limit != 0, st.hint);
  } else if (name == "findAndModify" || name == "findandmodify") {
    FindAndModifyRequest f;
    RETURN_IF_ERROR(ParseFindAndModify(sub, &f));
    query_part(ExplainRequest::Kind::kFindAndModify, f.ns, f.query, true, f.hint);
    req.find.sort = f.sort;  // the document it would pick is the first in this order
  } else if (name == "aggregate") {
    AggregateRequest a;
    bool ignored = false;
    RETURN_IF_ERROR(ParseAggregate(sub, &a, nullptr, &ignored));
    ASSIGN_OR_RETURN(Document out, ctx.db->ExplainAggregate(a, req.verbosity));
    bson_concat(reply, out.bson());
    return Status::OK();
  } else {
    return Status(ErrorCode::kCommandNotFound, "Explain failed due to unknown command: " + name);
  }
  ASSIGN_OR_RETURN(Document out, ctx.db->Explain(req));
  bson_concat(reply, out.bson());
  return Status::OK();
}

}  // namespace commands
}  // namespace gatedb
