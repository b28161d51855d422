// insert, find, getMore, killCursors, update, delete, findAndModify, count,
// distinct: parsed into engine requests, answered in MongoDB's reply shapes.
#include <cstring>
#include <string>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/requests.h"
#include "engine/storage/write_reply.h"

namespace gatedb {
namespace commands {

namespace {

// Reads the collection name from the command's first field.
Status ReadTargetNamespace(const CommandContext& ctx, Namespace* ns) {
  return ReadCommandNamespace(ctx.cmd, ctx.db_name, ns);
}

std::string Ctx(const CommandContext& ctx, std::string_view field) {
  return ctx.command_name + "." + std::string(field);
}

Status ReadWriteConcern(const CommandContext& ctx, WriteOptionsInternal* w) {
  // bypassDocumentValidation is a generic field: read it with the write concern.
  bson_iter_t bypass;
  if (bson_iter_init_find(&bypass, ctx.cmd, "bypassDocumentValidation")) {
    RETURN_IF_ERROR(ReadBool(&bypass, Ctx(ctx, "bypassDocumentValidation"), &w->bypass_document_validation));
  }
  bson_iter_t it, j;
  if (bson_iter_init_find(&it, ctx.cmd, "writeConcern") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      bson_iter_recurse(&it, &j) && bson_iter_find(&j, "j")) {
    bool sync = false;
    RETURN_IF_ERROR(ReadBool(&j, "writeConcern.j", &sync));
    w->sync = sync;
  }
  // The gate checks the caller's permissions (engine/auth) first.
  w->principal = ctx.principal;
  // A retryable write runs under its session's key unless its
  // writeContext names a key of its own.
  if (!ctx.retry_task_id.empty() && w->context.task_id.empty() && !w->context.write_seq) {
    w->context.task_id = ctx.retry_task_id;
    w->context.write_seq = ctx.retry_write_seq;
  }
  return Status::OK();
}

Status CheckCollation(const bson_iter_t* it, std::string_view context) {
  Document c;
  RETURN_IF_ERROR(ReadDocument(it, context, &c));
  bson_iter_t l;
  if (bson_iter_init_find(&l, c.bson(), "locale") && BSON_ITER_HOLDS_UTF8(&l) &&
      std::strcmp(bson_iter_utf8(&l, nullptr), "simple") == 0 && bson_count_keys(c.bson()) == 1) {
    return Status::OK();
  }
  return Status(ErrorCode::kBadValue, "only the simple collation is supported");
}

// A keyed write answered from the idempotency log says so.
// hint: an index name, a key pattern, or {$natural: 1}.
Status ReadHint(const bson_iter_t* it, std::string_view context, std::optional<Value>* out) {
  if (!BSON_ITER_HOLDS_UTF8(it) && !BSON_ITER_HOLDS_DOCUMENT(it)) {
    return Status(ErrorCode::kFailedToParse, std::string(context) + " must be either a string or an object");
  }
  *out = Value(*bson_iter_value(const_cast<bson_iter_t*>(it)));
  return Status::OK();
}

void AppendReplayed(bool replayed, bson_t* reply) {
  if (replayed) BSON_APPEND_BOOL(reply, "replayed", true);
}

// Iterates an array field whose elements must be documents.
template <typename Fn>
Status ForEachDocInArray(const bson_iter_t* array_it, std::string_view context, Fn&& fn) {
  bson_t arr;
  RETURN_IF_ERROR(ReadArray(array_it, context, &arr));
  bson_iter_t it;
  bson_iter_init(&it, &arr);
  size_t i = 0;
  while (bson_iter_next(&it)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return TypeError(std::string(context) + "." + std::to_string(i), bson_iter_type(&it), "object");
    }
    RETURN_IF_ERROR(fn(i, &it));
    ++i;
  }
  return Status::OK();
}

}  // namespace

Status InsertCommand(CommandContext& ctx, bson_t* reply) {
  InsertRequest req;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  bool have_docs = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "documents") {
      have_docs = true;
      return ForEachDocInArray(it, Ctx(ctx, key), [&](size_t, bson_iter_t* d) {
        Document doc;
        RETURN_IF_ERROR(ReadDocument(d, "insert.documents", &doc));
        req.documents.push_back(std::move(doc));
        return Status::OK();
      });
    }
    if (key == "ordered") return ReadBool(it, Ctx(ctx, key), &req.ordered);
    if (key == "writeContext") return ReadWriteContext(it, &req.write.context);
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_docs) return MissingField(ctx.command_name, "documents");
  if (req.documents.empty()) {
    return Status(ErrorCode::kInvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  }
  RETURN_IF_ERROR(ReadWriteConcern(ctx, &req.write));
  req.write.scope = ctx.scope;
  req.write.command = ctx.cmd;
  // In a transaction the first failing statement ends it, ordered or not.
  if (ctx.scope != nullptr) req.ordered = true;
  ASSIGN_OR_RETURN(InsertResult result, ctx.db->Insert(req));
  AppendReply(result, /*inserted_ids=*/req.write.keyed(), reply);
  AppendReplayed(result.replayed, reply);
  return Status::OK();
}

Status ParseFind(CommandContext& ctx, FindRequest* out, CursorRequest* page) {
  CursorRequest ignored;
  if (page == nullptr) page = &ignored;
  FindRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "filter") return ReadDocument(it, c, &req.filter);
    if (key == "projection") return ReadDocument(it, c, &req.projection);
    if (key == "sort") return ReadDocument(it, c, &req.sort);
    if (key == "skip") return ReadInt64(it, c, &req.skip);
    if (key == "limit") return ReadInt64(it, c, &req.limit);
    if (key == "batchSize") {
      RETURN_IF_ERROR(ReadBatchSize(it, c, &page->batch_size));
      page->empty_first_batch = page->batch_size == 0;
      return Status::OK();
    }
    if (key == "singleBatch") return ReadBool(it, c, &page->single_batch);
    if (key == "allowDiskUse") return ReadBool(it, c, &req.allow_disk_use);
    if (key == "tailable" || key == "awaitData") {
      bool b = false;
      RETURN_IF_ERROR(ReadBool(it, c, &b));
      if (b) return Status(ErrorCode::kBadValue, "find's " + std::string(key) + " is not supported: gatedb has no capped collections");
      return Status::OK();
    }
    if (key == "noCursorTimeout" || key == "returnKey" || key == "showRecordId" || key == "allowPartialResults") {
      bool b;
      return ReadBool(it, c, &b);
    }
    if (key == "hint") return ReadHint(it, c, &req.hint);
    if (key == "let") return Status::OK();
    if (key == "min" || key == "max") return Status(ErrorCode::kBadValue, "find's " + std::string(key) + " is not supported");
    if (key == "collation") return CheckCollation(it, c);
    if (key == "lockDocuments") return ReadBool(it, c, &req.lock_documents);
    if (key == "fieldVersions") return ReadBool(it, c, &req.field_versions);
    return UnknownField(ctx.command_name, key);
  }));
  bson_iter_t mt;
  if (bson_iter_init_find(&mt, ctx.cmd, "maxTimeMS")) RETURN_IF_ERROR(ReadMaxTimeMS(&mt, &req.max_time_ms));
  if (req.lock_documents && ctx.scope == nullptr) {
    return Status(ErrorCode::kBadValue, "lockDocuments is for reads inside a transaction");
  }
  req.scope = ctx.scope;
  return Status::OK();
}

Status FindCommand(CommandContext& ctx, bson_t* reply) {
  FindRequest req;
  CursorRequest page;
  RETURN_IF_ERROR(ParseFind(ctx, &req, &page));
  // A limit smaller than the batch: the first batch is the whole result.
  if (req.limit > 0 && req.limit < page.batch_size) page.batch_size = req.limit;
  page.session = ctx.session;
  page.scope = ctx.scope;
  ASSIGN_OR_RETURN(CursorPage result, ctx.db->FindPage(req, page));
  AppendCursorReply(result, "firstBatch", req.field_versions, reply);
  return Status::OK();
}

Status GetMoreCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_INT64(&it)) return TypeError("getMore", bson_iter_type(&it), "long");
  const int64_t id = bson_iter_int64(&it);
  std::string coll;
  bool have_coll = false;
  CursorRequest page;
  page.batch_size = 0;  // getMore: as many as fit in 16 MiB
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* f) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "collection") {
      have_coll = true;
      return ReadString(f, c, &coll);
    }
    if (key == "batchSize") return ReadBatchSize(f, c, &page.batch_size);
    if (key == "term" || key == "lastKnownCommittedOpTime") return Status::OK();
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_coll) return MissingField(ctx.command_name, "collection");
  // maxTimeMS on a getMore is how long an awaitData cursor (a change
  // stream) waits; the engine refuses it for any other, as MongoDB does.
  bson_iter_t mt;
  if (bson_iter_init_find(&mt, ctx.cmd, "maxTimeMS")) RETURN_IF_ERROR(ReadMaxTimeMS(&mt, &page.max_await_ms));
  Namespace ns{ctx.db_name, coll};
  page.session = ctx.session;
  page.scope = ctx.scope;
  page.no_wait = ctx.client != nullptr && ctx.client->defer_waits;
  ASSIGN_OR_RETURN(CursorPage result, ctx.db->GetMore(id, ns.full(), page));
  AppendCursorReply(result, "nextBatch", false, reply);
  return Status::OK();
}

Status ParseAggregate(CommandContext& ctx, AggregateRequest* out, CursorRequest* page, bool* explain,
                      bool* have_cursor_out) {
  bson_iter_t first;
  bson_iter_init(&first, ctx.cmd);
  bson_iter_next(&first);
  AggregateRequest& req = *out;
  if (BSON_ITER_HOLDS_NUMBER(&first) && bson_iter_as_double(&first) == 1.0) {
    // {aggregate: 1}: a collection-less pipeline (a change stream on the
    // database, or on the deployment from admin).
    req.ns = Namespace{ctx.db_name, ""};
    req.collectionless = true;
  } else if (!BSON_ITER_HOLDS_UTF8(&first)) {
    return Status(ErrorCode::kFailedToParse,
                  "Invalid command format: the 'aggregate' field must specify a collection name or 1");
  } else {
    RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  }
  CursorRequest ignored;
  if (page == nullptr) page = &ignored;
  bool have_pipeline = false, have_cursor = false;
  *explain = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "pipeline") {
      have_pipeline = true;
      if (!BSON_ITER_HOLDS_ARRAY(it)) return TypeError(c, bson_iter_type(it), "array");
      bson_t arr;
      RETURN_IF_ERROR(ReadArray(it, c, &arr));
      req.pipeline = Document::Copy(&arr);
      return Status::OK();
    }
    if (key == "cursor") {
      have_cursor = true;
      Document cursor;
      RETURN_IF_ERROR(ReadDocument(it, c, &cursor));
      bson_iter_t f;
      bson_iter_init(&f, cursor.bson());
      while (bson_iter_next(&f)) {
        std::string k = bson_iter_key(&f);
        if (k == "batchSize") {
          RETURN_IF_ERROR(ReadBatchSize(&f, "aggregate.cursor.batchSize", &page->batch_size));
          page->empty_first_batch = page->batch_size == 0;
        } else {
          return UnknownField("aggregate.cursor", k);
        }
      }
      return Status::OK();
    }
    if (key == "allowDiskUse") return ReadBool(it, c, &req.allow_disk_use);
    if (key == "explain") return ReadBool(it, c, explain);
    if (key == "hint") return ReadHint(it, c, &req.hint);
    if (key == "collation") return CheckCollation(it, c);
    if (key == "bypassDocumentValidation") return ReadBool(it, c, &req.write.bypass_document_validation);
    if (key == "writeContext") return ReadWriteContext(it, &req.write.context);
    if (key == "let") return ReadDocument(it, c, &req.let);
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_pipeline) return MissingField(ctx.command_name, "pipeline");
  RETURN_IF_ERROR(ReadWriteConcern(ctx, &req.write));
  bson_iter_t mt;
  if (bson_iter_init_find(&mt, ctx.cmd, "maxTimeMS")) RETURN_IF_ERROR(ReadMaxTimeMS(&mt, &req.max_time_ms));
  req.scope = ctx.scope;
  if (have_cursor_out != nullptr) *have_cursor_out = have_cursor;
  return Status::OK();
}

Status AggregateCommand(CommandContext& ctx, bson_t* reply) {
  AggregateRequest req;
  CursorRequest page;
  bool explain = false, have_cursor = false;
  RETURN_IF_ERROR(ParseAggregate(ctx, &req, &page, &explain, &have_cursor));
  if (!explain && !have_cursor) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'cursor' option is required, except for aggregate with the explain argument");
  }
  if (explain) {
    ASSIGN_OR_RETURN(Document plan, ctx.db->ExplainAggregate(req, "queryPlanner"));
    bson_concat(reply, plan.bson());
    return Status::OK();
  }
  page.session = ctx.session;
  page.scope = ctx.scope;
  ASSIGN_OR_RETURN(CursorPage result, ctx.db->AggregatePage(req, page));
  AppendCursorReply(result, "firstBatch", false, reply);
  return Status::OK();
}

Status KillCursorsCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  bson_iter_t target;
  if (bson_iter_init(&target, ctx.cmd) && bson_iter_next(&target) && BSON_ITER_HOLDS_UTF8(&target) &&
      std::string_view(bson_iter_utf8(&target, nullptr)) == kCollectionlessCursorColl) {
    ns = Namespace{ctx.db_name, kCollectionlessCursorColl};  // a database's change stream
  } else {
    RETURN_IF_ERROR(ReadCommandNamespace(ctx.cmd, ctx.db_name, &ns));
  }
  std::vector<int64_t> ids;
  bool have_cursors = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key != "cursors") return UnknownField(ctx.command_name, key);
    have_cursors = true;
    bson_t arr;
    RETURN_IF_ERROR(ReadArray(it, "killCursors.cursors", &arr));
    bson_iter_t e;
    bson_iter_init(&e, &arr);
    while (bson_iter_next(&e)) {
      if (!BSON_ITER_HOLDS_INT64(&e)) return TypeError("killCursors.cursors", bson_iter_type(&e), "long");
      ids.push_back(bson_iter_int64(&e));
    }
    return Status::OK();
  }));
  if (!have_cursors) return MissingField(ctx.command_name, "cursors");
  KillCursorsResult r = ctx.db->KillCursors(ns.full(), ids);
  auto append_ids = [&](const char* name, const std::vector<int64_t>& list) {
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(reply, name, &arr);
    for (size_t i = 0; i < list.size(); ++i) BSON_APPEND_INT64(&arr, std::to_string(i).c_str(), list[i]);
    bson_append_array_end(reply, &arr);
  };
  append_ids("cursorsKilled", r.killed);
  append_ids("cursorsNotFound", r.not_found);
  append_ids("cursorsAlive", {});
  append_ids("cursorsUnknown", {});
  return Status::OK();
}

Status ParseUpdate(CommandContext& ctx, UpdateRequest* out) {
  UpdateRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  bool have_updates = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "updates") {
      have_updates = true;
      return ForEachDocInArray(it, Ctx(ctx, key), [&](size_t, bson_iter_t* d) -> Status {
        bson_iter_t f;
        bson_iter_recurse(d, &f);
        UpdateStatement stmt;
        bool have_q = false, have_u = false;
        while (bson_iter_next(&f)) {
          std::string_view k = bson_iter_key(&f);
          std::string c = "update.updates." + std::string(k);
          if (k == "q") {
            have_q = true;
            RETURN_IF_ERROR(ReadDocument(&f, c, &stmt.q));
          } else if (k == "u") {
            have_u = true;
            if (BSON_ITER_HOLDS_ARRAY(&f)) {
              return Status(ErrorCode::kFailedToParse, "aggregation pipeline updates are not supported");
            }
            RETURN_IF_ERROR(ReadDocument(&f, c, &stmt.u));
          } else if (k == "upsert") {
            RETURN_IF_ERROR(ReadBool(&f, c, &stmt.upsert));
          } else if (k == "multi") {
            RETURN_IF_ERROR(ReadBool(&f, c, &stmt.multi));
          } else if (k == "basisVersion") {
            int64_t b = 0;
            RETURN_IF_ERROR(ReadInt64(&f, c, &b));
            stmt.basis_version = b;
          } else if (k == "arrayFilters") {
            return Status(ErrorCode::kBadValue, "arrayFilters are not supported");
          } else if (k == "collation") {
            RETURN_IF_ERROR(CheckCollation(&f, c));
          } else if (k == "hint") {
            RETURN_IF_ERROR(ReadHint(&f, c, &stmt.hint));
          } else if (k == "upsertSupplied") {
            continue;
          } else {
            return UnknownField("update.updates", k);
          }
        }
        if (!have_q) return MissingField("update.updates", "q");
        if (!have_u) return MissingField("update.updates", "u");
        req.updates.push_back(std::move(stmt));
        return Status::OK();
      });
    }
    if (key == "ordered") return ReadBool(it, Ctx(ctx, key), &req.ordered);
    if (key == "writeContext") return ReadWriteContext(it, &req.write.context);
    if (key == "let") return Status::OK();
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_updates) return MissingField(ctx.command_name, "updates");
  if (req.updates.empty()) {
    return Status(ErrorCode::kInvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  }
  RETURN_IF_ERROR(ReadWriteConcern(ctx, &req.write));
  req.write.scope = ctx.scope;
  req.write.command = ctx.cmd;
  // In a transaction the first failing statement ends it, ordered or not.
  if (ctx.scope != nullptr) req.ordered = true;
  return Status::OK();
}

Status UpdateCommand(CommandContext& ctx, bson_t* reply) {
  UpdateRequest req;
  RETURN_IF_ERROR(ParseUpdate(ctx, &req));
  ASSIGN_OR_RETURN(UpdateWriteResult result, ctx.db->Update(req));
  AppendReply(result, reply);
  AppendReplayed(result.replayed, reply);
  return Status::OK();
}

Status ParseDelete(CommandContext& ctx, DeleteRequest* out) {
  DeleteRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  bool have_deletes = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "deletes") {
      have_deletes = true;
      return ForEachDocInArray(it, Ctx(ctx, key), [&](size_t, bson_iter_t* d) -> Status {
        bson_iter_t f;
        bson_iter_recurse(d, &f);
        DeleteStatement stmt;
        bool have_q = false, have_limit = false;
        while (bson_iter_next(&f)) {
          std::string_view k = bson_iter_key(&f);
          std::string c = "delete.deletes." + std::string(k);
          if (k == "q") {
            have_q = true;
            RETURN_IF_ERROR(ReadDocument(&f, c, &stmt.q));
          } else if (k == "limit") {
            have_limit = true;
            // Checked while parsing, as MongoDB: a bad limit fails the command.
            Status ls = ReadInt64(&f, c, &stmt.limit);
            if (!ls.ok() && ls.code() != ErrorCode::kTypeMismatch) ls = Status(ErrorCode::kFailedToParse, ls.reason());
            RETURN_IF_ERROR(ls);
            if (stmt.limit != 0 && stmt.limit != 1) {
              return Status(ErrorCode::kFailedToParse,
                            "The limit field in delete objects must be 0 or 1. Got " + std::to_string(stmt.limit));
            }
          } else if (k == "basisVersion") {
            int64_t b = 0;
            RETURN_IF_ERROR(ReadInt64(&f, c, &b));
            stmt.basis_version = b;
          } else if (k == "collation") {
            RETURN_IF_ERROR(CheckCollation(&f, c));
          } else if (k == "hint") {
            RETURN_IF_ERROR(ReadHint(&f, c, &stmt.hint));
          } else {
            return UnknownField("delete.deletes", k);
          }
        }
        if (!have_q) return MissingField("delete.deletes", "q");
        if (!have_limit) return MissingField("delete.deletes", "limit");
        req.deletes.push_back(std::move(stmt));
        return Status::OK();
      });
    }
    if (key == "ordered") return ReadBool(it, Ctx(ctx, key), &req.ordered);
    if (key == "writeContext") return ReadWriteContext(it, &req.write.context);
    if (key == "let") return Status::OK();
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_deletes) return MissingField(ctx.command_name, "deletes");
  if (req.deletes.empty()) {
    return Status(ErrorCode::kInvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  }
  RETURN_IF_ERROR(ReadWriteConcern(ctx, &req.write));
  req.write.scope = ctx.scope;
  req.write.command = ctx.cmd;
  // In a transaction the first failing statement ends it, ordered or not.
  if (ctx.scope != nullptr) req.ordered = true;
  return Status::OK();
}

Status DeleteCommand(CommandContext& ctx, bson_t* reply) {
  DeleteRequest req;
  RETURN_IF_ERROR(ParseDelete(ctx, &req));
  ASSIGN_OR_RETURN(DeleteWriteResult result, ctx.db->Delete(req));
  AppendReply(result, reply);
  AppendReplayed(result.replayed, reply);
  return Status::OK();
}

Status ParseFindAndModify(CommandContext& ctx, FindAndModifyRequest* out) {
  FindAndModifyRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "query") return ReadDocument(it, c, &req.query);
    if (key == "sort") return ReadDocument(it, c, &req.sort);
    if (key == "fields") return ReadDocument(it, c, &req.fields);
    if (key == "remove") return ReadBool(it, c, &req.remove);
    if (key == "new") return ReadBool(it, c, &req.return_new);
    if (key == "upsert") return ReadBool(it, c, &req.upsert);
    if (key == "update") {
      if (BSON_ITER_HOLDS_ARRAY(it)) return Status(ErrorCode::kFailedToParse, "aggregation pipeline updates are not supported");
      if (!BSON_ITER_HOLDS_DOCUMENT(it)) {
        return Status(ErrorCode::kFailedToParse, "Update argument must be either an object or an array");
      }
      Document u;
      RETURN_IF_ERROR(ReadDocument(it, c, &u));
      req.update = std::move(u);
      return Status::OK();
    }
    if (key == "arrayFilters") return Status(ErrorCode::kBadValue, "arrayFilters are not supported");
    if (key == "collation") return CheckCollation(it, c);
    if (key == "writeContext") return ReadWriteContext(it, &req.write.context);
    if (key == "basisVersion") {
      int64_t b = 0;
      RETURN_IF_ERROR(ReadInt64(it, c, &b));
      req.basis_version = b;
      return Status::OK();
    }
    if (key == "hint") return ReadHint(it, c, &req.hint);
    if (key == "let") return Status::OK();
    return UnknownField(ctx.command_name, key);
  }));
  RETURN_IF_ERROR(ReadWriteConcern(ctx, &req.write));
  req.write.scope = ctx.scope;
  req.write.command = ctx.cmd;
  return Status::OK();
}

Status FindAndModifyCommand(CommandContext& ctx, bson_t* reply) {
  FindAndModifyRequest req;
  RETURN_IF_ERROR(ParseFindAndModify(ctx, &req));
  ASSIGN_OR_RETURN(FindAndModifyResult result, ctx.db->FindAndModify(req));
  AppendReply(result, req.remove, reply);
  AppendReplayed(result.replayed, reply);
  return Status::OK();
}

Status ParseCount(CommandContext& ctx, CountRequest* out) {
  CountRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "query") {
      if (BSON_ITER_HOLDS_NULL(it)) return Status::OK();
      return ReadDocument(it, c, &req.query);
    }
    if (key == "skip" || key == "limit") {
      // count's skip and limit are plain numbers; another type is BadValue.
      if (!BSON_ITER_HOLDS_NUMBER(it)) {
        return Status(ErrorCode::kBadValue, "count's " + std::string(key) + " must be a number, not " +
                                                TypeName(bson_iter_type(it)));
      }
      return ReadInt64(it, c, key == "skip" ? &req.skip : &req.limit);
    }
    if (key == "hint") return ReadHint(it, c, &req.hint);
    if (key == "fields") return Status::OK();
    if (key == "collation") return CheckCollation(it, c);
    return UnknownField(ctx.command_name, key);
  }));
  req.scope = ctx.scope;
  return Status::OK();
}

Status CountCommand(CommandContext& ctx, bson_t* reply) {
  CountRequest req;
  RETURN_IF_ERROR(ParseCount(ctx, &req));
  ASSIGN_OR_RETURN(int64_t n, ctx.db->Count(req));
  BSON_APPEND_INT32(reply, "n", static_cast<int32_t>(n));
  return Status::OK();
}

Status ParseDistinct(CommandContext& ctx, DistinctRequest* out) {
  DistinctRequest& req = *out;
  RETURN_IF_ERROR(ReadTargetNamespace(ctx, &req.ns));
  bool have_key = false;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    std::string c = Ctx(ctx, key);
    if (key == "key") {
      have_key = true;
      return ReadString(it, c, &req.key);
    }
    if (key == "query") {
      if (BSON_ITER_HOLDS_NULL(it)) return Status::OK();
      return ReadDocument(it, c, &req.query);
    }
    if (key == "hint") return Status::OK();
    if (key == "collation") return CheckCollation(it, c);
    return UnknownField(ctx.command_name, key);
  }));
  if (!have_key) return MissingField(ctx.command_name, "key");
  req.scope = ctx.scope;
  return Status::OK();
}

Status DistinctCommand(CommandContext& ctx, bson_t* reply) {
  DistinctRequest req;
  RETURN_IF_ERROR(ParseDistinct(ctx, &req));
  ASSIGN_OR_RETURN(std::vector<Value> values, ctx.db->Distinct(req));
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "values", &arr);
  char keybuf[16];
  for (size_t i = 0; i < values.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    values[i].AppendTo(&arr, key);
  }
  bson_append_array_end(reply, &arr);
  return Status::OK();
}

}  // namespace commands
}  // namespace gatedb
