// syncStatus and syncResolve: what upstream sync (gatedb/sync.h) has pending
// and the conflicts it left, read from the data directory's sync state
// (api/src/sync_state.h); they need no connection to the upstream.
#include <set>
#include <string>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "api/src/sync_state.h"
#include "engine/storage/db_impl.h"

namespace gatedb {
namespace commands {

namespace {

StatusOr<std::vector<Document>> FindState(DBImpl* db, const char* coll, Document filter) {
  FindRequest req;
  req.ns = Namespace{sync_state::kDb, coll};
  req.filter = std::move(filter);
  ASSIGN_OR_RETURN(FindResult r, db->Find(req));
  return std::move(r.docs);
}

int64_t IntOr(const bson_t* doc, const char* key, int64_t dflt) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
  return dflt;
}

}  // namespace

// {syncStatus: 1} -> {namespaces: [{ns, push: {pushSeq, pendingDocuments},
// pull: {initialized, resumeToken}, conflicts}], conflicts: [{ns, _id,
// local, upstream, base, policy, at}], origin}
Status SyncStatusCommand(CommandContext& ctx, bson_t* reply) {
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t*) -> Status {
    return UnknownField(ctx.command_name, key);
  }));
  ASSIGN_OR_RETURN(std::vector<Document> checkpoints, FindState(ctx.db, sync_state::kCheckpoints, Document()));
  ASSIGN_OR_RETURN(std::vector<Document> conflicts, FindState(ctx.db, sync_state::kConflicts, Document()));
  std::string origin;
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "namespaces", &arr);
  uint32_t i = 0;
  for (const Document& ck : checkpoints) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, ck.bson(), "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
    std::string ns = bson_iter_utf8(&it, nullptr);
    if (ns == sync_state::kOriginId) {
      bson_iter_t name;
      if (bson_iter_init_find(&name, ck.bson(), "name") && BSON_ITER_HOLDS_UTF8(&name)) {
        origin = bson_iter_utf8(&name, nullptr);
      }
      continue;
    }
    const int64_t push_seq = IntOr(ck.bson(), "pushSeq", 0);
    std::set<std::string> ids;
    uint64_t upto = 0;
    RETURN_IF_ERROR(sync_state::PendingPush(ctx.db, ns, static_cast<uint64_t>(push_seq),
                                            [&](const Value& id, std::string_view) { ids.insert(id.ToJson()); }, &upto));
    int64_t in_conflict = 0;
    for (const Document& c : conflicts) {
      bson_iter_t cns;
      if (bson_iter_init(&cns, c.bson()) && bson_iter_find_descendant(&cns, "_id.ns", &cns) &&
          BSON_ITER_HOLDS_UTF8(&cns) && ns == bson_iter_utf8(&cns, nullptr)) {
        ++in_conflict;
      }
    }
    bson_t entry, push, pull;
    const std::string key = std::to_string(i++);
    BSON_APPEND_DOCUMENT_BEGIN(&arr, key.c_str(), &entry);
    BSON_APPEND_UTF8(&entry, "ns", ns.c_str());
    BSON_APPEND_DOCUMENT_BEGIN(&entry, "push", &push);
    BSON_APPEND_INT64(&push, "pushSeq", push_seq);
    BSON_APPEND_INT64(&push, "pendingDocuments", static_cast<int64_t>(ids.size()));
    bson_append_document_end(&entry, &push);
    BSON_APPEND_DOCUMENT_BEGIN(&entry, "pull", &pull);
    bson_iter_t f;
    BSON_APPEND_BOOL(&pull, "initialized", bson_iter_init_find(&f, ck.bson(), "initialized") && bson_iter_as_bool(&f));
    if (bson_iter_init_find(&f, ck.bson(), "token")) {
      bson_append_value(&pull, "resumeToken", -1, bson_iter_value(&f));
    } else {
      BSON_APPEND_NULL(&pull, "resumeToken");
    }
    bson_append_document_end(&entry, &pull);
    BSON_APPEND_INT64(&entry, "conflicts", in_conflict);
    bson_append_document_end(&arr, &entry);
  }
  bson_append_array_end(reply, &arr);
  if (!origin.empty()) BSON_APPEND_UTF8(reply, "origin", origin.c_str());
  bson_t list;
  BSON_APPEND_ARRAY_BEGIN(reply, "conflicts", &list);
  i = 0;
  for (const Document& c : conflicts) {
    bson_t entry;
    const std::string key = std::to_string(i++);
    BSON_APPEND_DOCUMENT_BEGIN(&list, key.c_str(), &entry);
    bson_iter_t it, sub;
    if (bson_iter_init(&it, c.bson()) && bson_iter_find_descendant(&it, "_id.ns", &sub)) {
      bson_append_value(&entry, "ns", -1, bson_iter_value(&sub));
    }
    if (bson_iter_init(&it, c.bson()) && bson_iter_find_descendant(&it, "_id.id", &sub)) {
      bson_append_value(&entry, "_id", -1, bson_iter_value(&sub));
    }
    for (const char* k : {"local", "upstream", "base", "policy", "at"}) {
      if (bson_iter_init_find(&it, c.bson(), k)) bson_append_value(&entry, k, -1, bson_iter_value(&it));
    }
    bson_append_document_end(&list, &entry);
  }
  bson_append_array_end(reply, &list);
  return Status::OK();
}

// {syncResolve: <collection>, _id, keep: "local" | "upstream"}: ends a
// conflict sync left.  "upstream" makes the document here the upstream's;
// "local" keeps this side's and lets the next sync push it over the
// upstream's.  One local transaction.
Status SyncResolveCommand(CommandContext& ctx, bson_t* reply) {
  Namespace ns;
  RETURN_IF_ERROR(ReadCommandNamespace(ctx.cmd, ctx.db_name, &ns));
  std::optional<Value> id;
  std::string keep;
  RETURN_IF_ERROR(ForEachCommandField(ctx.cmd, [&](std::string_view key, bson_iter_t* it) -> Status {
    if (key == "_id") {
      id = Value(*bson_iter_value(it));
      return Status::OK();
    }
    if (key == "keep") {
      if (!BSON_ITER_HOLDS_UTF8(it)) return TypeError("syncResolve.keep", bson_iter_type(it), "string");
      keep = bson_iter_utf8(it, nullptr);
      return Status::OK();
    }
    return UnknownField(ctx.command_name, key);
  }));
  if (!id) return MissingField(ctx.command_name, "_id");
  if (keep != "local" && keep != "upstream") {
    return Status(ErrorCode::kBadValue, "syncResolve.keep must be \"local\" or \"upstream\"");
  }
  bson_t* kf = bson_new();
  bson_t k;
  BSON_APPEND_DOCUMENT_BEGIN(kf, "_id", &k);
  BSON_APPEND_UTF8(&k, "ns", ns.full().c_str());
  id->AppendTo(&k, "id");
  bson_append_document_end(kf, &k);
  Document key = Document::Adopt(kf);
  ASSIGN_OR_RETURN(std::vector<Document> found, FindState(ctx.db, sync_state::kConflicts, Document::Copy(key.bson())));
  if (found.empty()) {
    return Status(ErrorCode::kNoSuchKey, "no sync conflict on " + ns.full() + " _id: " + id->ToJson());
  }
  const Document& conflict = found[0];
  ScopePtr scope = ctx.db->BeginTransaction("syncResolve", TransactionLimits(), false);
  WriteOptionsInternal w;
  w.scope = scope.get();
  w.context.agent_id = sync_state::kAgent;
  w.context.source = keep == "upstream" ? "upstream" : "";
  bson_t* idf = bson_new();
  id->AppendTo(idf, "_id");
  Document id_filter = Document::Adopt(idf);
  if (keep == "upstream") {
    bson_iter_t up;
    const bool has_up = bson_iter_init_find(&up, conflict.bson(), "upstream") && BSON_ITER_HOLDS_DOCUMENT(&up);
    // Delete what is here, then write the upstream's document: one commit.
    DeleteRequest del;
    del.ns = ns;
    del.deletes.push_back(DeleteStatement{Document::Copy(id_filter.bson()), 1, std::nullopt, std::nullopt});
    del.write = w;
    ASSIGN_OR_RETURN(DeleteWriteResult dr, ctx.db->Delete(del));
    if (!dr.write_errors.empty()) return dr.write_errors[0].status;
    if (has_up) {
      const bson_value_t* v = bson_iter_value(&up);
      ASSIGN_OR_RETURN(Document doc, Document::FromBytes(v->value.v_doc.data, v->value.v_doc.data_len));
      InsertRequest ins;
      ins.ns = ns;
      ins.documents.push_back(std::move(doc));
      ins.write = w;
      ASSIGN_OR_RETURN(InsertResult ir, ctx.db->Insert(ins));
      if (!ir.write_errors.empty()) return ir.write_errors[0].status;
    }
  }
  // The base: no longer in conflict; "local" leaves it pending for the push.
  ASSIGN_OR_RETURN(sync_state::Base base, sync_state::LoadBase(ctx.db, scope.get(), ns.full(), *id));
  const bool was_pending = base.pending;
  base.exists = true;
  base.conflict = false;
  base.pending = keep == "local";
  RETURN_IF_ERROR(sync_state::SaveBase(ctx.db, scope.get(), ns.full(), *id, base, was_pending));
  DeleteRequest dc;
  dc.ns = Namespace{sync_state::kDb, sync_state::kConflicts};
  dc.deletes.push_back(DeleteStatement{Document::Copy(key.bson()), 1, std::nullopt, std::nullopt});
  dc.write = w;
  ASSIGN_OR_RETURN(DeleteWriteResult cr, ctx.db->Delete(dc));
  if (!cr.write_errors.empty()) return cr.write_errors[0].status;
  bool replayed = false;
  RETURN_IF_ERROR(ctx.db->CommitTransaction(scope.get(), nullptr, nullptr, &replayed));
  BSON_APPEND_UTF8(reply, "kept", keep.c_str());
  return Status::OK();
}

}  // namespace commands
}  // namespace gatedb
