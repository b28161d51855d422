#include "api/commands/command_dispatcher.h"

#include <cstring>
#include <exception>
#include <string_view>

#include "api/commands/command_util.h"
#include "api/commands/fingerprint.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/idempotency.h"
#include "api/src/txn_manager.h"

namespace gatedb {

namespace {

struct CommandEntry {
  const char* name;
  commands::CommandFn fn;
};

// Every command gatedb answers.  Names are MongoDB's; aliases as MongoDB's.
const CommandEntry kCommands[] = {
    {"insert", commands::InsertCommand},
    {"find", commands::FindCommand},
    {"getMore", commands::GetMoreCommand},
    {"killCursors", commands::KillCursorsCommand},
    {"update", commands::UpdateCommand},
    {"delete", commands::DeleteCommand},
    {"findAndModify", commands::FindAndModifyCommand},
    {"findandmodify", commands::FindAndModifyCommand},
    {"count", commands::CountCommand},
    {"distinct", commands::DistinctCommand},
    {"ping", commands::PingCommand},
    {"hello", commands::HelloCommand},
    {"isMaster", commands::HelloCommand},
    {"ismaster", commands::HelloCommand},
    {"buildInfo", commands::BuildInfoCommand},
    {"buildinfo", commands::BuildInfoCommand},
    {"create", commands::CreateCommand},
    {"drop", commands::DropCommand},
    {"dropDatabase", commands::DropDatabaseCommand},
    {"listCollections", commands::ListCollectionsCommand},
    {"listDatabases", commands::ListDatabasesCommand},
    {"collMod", commands::CollModCommand},
    {"journal", commands::JournalCommand},
    {"conflictStats", commands::ConflictStatsCommand},
    {"idempotencyStatus", commands::IdempotencyStatusCommand},
    {"acquireLease", commands::AcquireLeaseCommand},
    {"renewLease", commands::RenewLeaseCommand},
    {"releaseLease", commands::ReleaseLeaseCommand},
    {"commitTransaction", commands::PingCommand},  // handled before dispatch
    {"abortTransaction", commands::PingCommand},   // handled before dispatch
};

bool IsKeyableWrite(const std::string& name) {
  return name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
         name == "findandmodify";
}

// Whether a keyed write took effect, so that its reply is stored: it
// inserted, matched, upserted or removed something.  A write refused as a
// whole (conflict, validation) leaves nothing, so a retry with a fresh
// basis can run.
bool TookEffect(const bson_t* reply) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply, "n") && bson_iter_as_int64(&it) > 0) return true;
  bson_iter_t leo;
  if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "lastErrorObject.n", &leo) &&
      bson_iter_as_int64(&leo) > 0) {
    return true;
  }
  return false;
}

Document ErrorReply(const Status& s) {
  bson_t* reply = bson_new();
  commands::AppendError(s, reply);
  return Document::Adopt(reply);
}

// Inside a transaction: MongoDB's label on errors after which the whole
// transaction may be retried.
Document TxnErrorReply(const Status& s) {
  bson_t* reply = bson_new();
  commands::AppendError(s, reply);
  if (IsTransientTransactionError(s)) {
    bson_t labels;
    BSON_APPEND_ARRAY_BEGIN(reply, "errorLabels", &labels);
    BSON_APPEND_UTF8(&labels, "0", "TransientTransactionError");
    bson_append_array_end(reply, &labels);
  }
  return Document::Adopt(reply);
}

bool AllowedInTransaction(const std::string& name) {
  return name == "find" || name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
         name == "findandmodify" || name == "count" || name == "distinct" || name == "getMore" ||
         name == "killCursors";
}

// The session fields of a command.
struct SessionFields {
  bool has_lsid = false;
  std::string lsid;  // the lsid document's bytes
  std::optional<int64_t> txn_number;
  std::optional<bool> autocommit;
  bool start = false;
};

Status ReadSessionFields(const bson_t* cmd, SessionFields* out) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, cmd, "lsid")) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return commands::TypeError("lsid", bson_iter_type(&it), "object");
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    out->has_lsid = true;
    out->lsid.assign(reinterpret_cast<const char*>(data), len);
  }
  if (bson_iter_init_find(&it, cmd, "txnNumber")) {
    int64_t n = 0;
    RETURN_IF_ERROR(commands::ReadInt64(&it, "txnNumber", &n));
    if (n < 0) return Status(ErrorCode::kInvalidOptions, "txnNumber must be >= 0");
    out->txn_number = n;
  }
  if (bson_iter_init_find(&it, cmd, "autocommit")) {
    bool b = true;
    RETURN_IF_ERROR(commands::ReadBool(&it, "autocommit", &b));
    out->autocommit = b;
  }
  if (bson_iter_init_find(&it, cmd, "startTransaction")) {
    RETURN_IF_ERROR(commands::ReadBool(&it, "startTransaction", &out->start));
    if (!out->start) return Status(ErrorCode::kInvalidOptions, "startTransaction must be true");
  }
  return Status::OK();
}

}  // namespace

Document CommandDispatcher::Run(const bson_t* cmd) {
  try {
    bson_iter_t it;
    if (cmd == nullptr || !bson_iter_init(&it, cmd) || !bson_iter_next(&it)) {
      return ErrorReply(Status(ErrorCode::kFailedToParse, "empty command object"));
    }
    commands::CommandContext ctx;
    ctx.db = db_;
    ctx.cmd = cmd;
    ctx.command_name = bson_iter_key(&it);
    ctx.db_name = "test";
    bson_iter_t dbit;
    if (bson_iter_init_find(&dbit, cmd, "$db")) {
      Status s = commands::ReadString(&dbit, "$db", &ctx.db_name);
      if (!s.ok()) return ErrorReply(s);
    }
    commands::CommandFn fn = nullptr;
    for (const CommandEntry& e : kCommands) {
      if (ctx.command_name == e.name) {
        fn = e.fn;
        break;
      }
    }
    if (fn == nullptr) {
      return ErrorReply(Status(ErrorCode::kCommandNotFound, "no such command: '" + ctx.command_name + "'"));
    }
    SessionFields session;
    Status ss = ReadSessionFields(cmd, &session);
    if (!ss.ok()) return ErrorReply(ss);
    if (session.txn_number && !session.has_lsid) {
      return ErrorReply(Status(ErrorCode::kInvalidOptions, "txnNumber may only be provided for operations inside a session (lsid)"));
    }
    if (ctx.command_name == "commitTransaction" || ctx.command_name == "abortTransaction") {
      if (!session.has_lsid || !session.txn_number) {
        return ErrorReply(Status(ErrorCode::kInvalidOptions, ctx.command_name + " needs lsid and txnNumber"));
      }
      return EndTransaction(ctx, ctx.command_name == "commitTransaction");
    }
    if (session.autocommit.has_value() || session.start) {
      if (session.autocommit.value_or(true)) {
        return ErrorReply(Status(ErrorCode::kInvalidOptions,
                                 "a command in a transaction needs autocommit: false (autocommit: true is not allowed)"));
      }
      if (!session.has_lsid || !session.txn_number) {
        return ErrorReply(Status(ErrorCode::kInvalidOptions, "a transaction needs lsid and txnNumber"));
      }
      if (!AllowedInTransaction(ctx.command_name)) {
        return ErrorReply(Status(ErrorCode::kOperationNotSupportedInTransaction,
                                 "Cannot run '" + ctx.command_name + "' in a multi-document transaction."));
      }
      auto txn = txns_->ForCommand(session.lsid, *session.txn_number, session.start);
      if (!txn.ok()) return TxnErrorReply(txn.status());
      TxnUse use(txn->get(), db_->NowMs());
      if (!use.status().ok()) return TxnErrorReply(use.status());
      ctx.scope = use.scope();
      bson_t* reply = bson_new();
      Status s = fn(ctx, reply);
      if (!s.ok()) {
        bson_destroy(reply);
        use.AbortOnError(s);
        return TxnErrorReply(s);
      }
      // A failed statement aborts the transaction; a write conflict is the
      // command's error, with the transient label.
      bson_iter_t we, e;
      if (bson_iter_init_find(&we, reply, "writeErrors") && bson_iter_recurse(&we, &e) && bson_iter_next(&e)) {
        bson_iter_t code;
        int c = bson_iter_recurse(&e, &code) && bson_iter_find(&code, "code") ? bson_iter_int32(&code) : 0;
        std::string msg;
        bson_iter_t m;
        if (bson_iter_recurse(&e, &m) && bson_iter_find(&m, "errmsg")) msg = bson_iter_utf8(&m, nullptr);
        Status failed(static_cast<ErrorCode>(c), msg);
        use.AbortOnError(failed);
        if (failed.code() == ErrorCode::kWriteConflict) {
          bson_destroy(reply);
          return TxnErrorReply(failed);
        }
      }
      BSON_APPEND_DOUBLE(reply, "ok", 1.0);
      return Document::Adopt(reply);
    }
    if (IsKeyableWrite(ctx.command_name)) {
      bson_iter_t wcit;
      if (bson_iter_init_find(&wcit, cmd, "writeContext")) {
        WriteContext wc;
        Status s = commands::ReadWriteContext(&wcit, &wc);
        if (!s.ok()) return ErrorReply(s);
        if (!wc.task_id.empty() && wc.write_seq) return RunKeyed(ctx, fn, wc);
      }
    }
    bson_t* reply = bson_new();
    Status s = fn(ctx, reply);
    if (!s.ok()) {
      bson_destroy(reply);
      return ErrorReply(s);
    }
    BSON_APPEND_DOUBLE(reply, "ok", 1.0);
    return Document::Adopt(reply);
  } catch (const std::exception& e) {
    return ErrorReply(Status(ErrorCode::kInternalError, std::string("internal error: ") + e.what()));
  } catch (...) {
    return ErrorReply(Status(ErrorCode::kInternalError, "internal error"));
  }
}

Document CommandDispatcher::EndTransaction(commands::CommandContext& ctx, bool commit) {
  SessionFields session;
  ReadSessionFields(ctx.cmd, &session).PermitUnchecked();
  auto txn = txns_->ForEnd(session.lsid, *session.txn_number);
  if (!txn.ok()) return TxnErrorReply(txn.status());
  if (!commit) {
    Status s = txns_->Abort(txn->get());
    if (!s.ok()) return TxnErrorReply(s);
    bson_t* reply = bson_new();
    BSON_APPEND_DOUBLE(reply, "ok", 1.0);
    return Document::Adopt(reply);
  }
  WriteContext wc;
  bool keyed = false;
  bson_iter_t it;
  if (bson_iter_init_find(&it, ctx.cmd, "writeContext")) {
    Status s = commands::ReadWriteContext(&it, &wc);
    if (!s.ok()) return ErrorReply(s);
    keyed = !wc.task_id.empty() && wc.write_seq.has_value();
  }
  Status s = txns_->Commit(txn->get(), keyed ? &wc : nullptr);
  if (!s.ok()) return TxnErrorReply(s);
  bson_t* reply = bson_new();
  if ((*txn)->replayed) BSON_APPEND_BOOL(reply, "replayed", true);
  BSON_APPEND_DOUBLE(reply, "ok", 1.0);
  return Document::Adopt(reply);
}

Document CommandDispatcher::RunKeyed(commands::CommandContext& ctx, commands::CommandFn fn, const WriteContext& wc) {
  Status valid = IdempotencyLog::ValidateTaskId(wc.task_id);
  if (!valid.ok()) return ErrorReply(valid);
  IdempotencyLog* log = db_->idempotency();
  std::string key = IdempotencyLog::EncodeKey(wc.task_id, *wc.write_seq);
  bool sync = false;  // writeConcern {j: true}
  bson_iter_t it, j;
  if (bson_iter_init_find(&it, ctx.cmd, "writeConcern") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      bson_iter_recurse(&it, &j) && bson_iter_find(&j, "j")) {
    sync = bson_iter_as_bool(&j);
  }
  std::string fp = commands::CommandFingerprint(ctx.cmd);
  // One request per key at a time: a concurrent duplicate waits here and
  // then replays the stored reply.
  IdempotencyLog::ClaimGuard claim(log, key);
  auto stored = log->Lookup(key);
  if (!stored.ok()) return ErrorReply(stored.status());
  if (stored->has_value()) {
    const IdempotencyRecord& rec = **stored;
    if (rec.fingerprint != fp) {
      bson_t* info = bson_new();
      BSON_APPEND_UTF8(info, "taskId", wc.task_id.c_str());
      BSON_APPEND_INT64(info, "writeSeq", *wc.write_seq);
      BSON_APPEND_DATE_TIME(info, "firstUsedAt", rec.at_ms);
      BSON_APPEND_UTF8(info, "ns", rec.ns.c_str());
      return ErrorReply(Status(ErrorCode::kIdempotencyKeyReuse,
                               "idempotency key (taskId: \"" + wc.task_id + "\", writeSeq: " +
                                   std::to_string(*wc.write_seq) +
                                   ") was already used for a different command; use a new writeSeq",
                               std::make_shared<const Document>(Document::Adopt(info))));
    }
    // A durable retry is answered once what it replays is durable.
    Status durable = db_->SyncCommitted(sync);
    if (!durable.ok()) return ErrorReply(durable);
    bson_t* reply = bson_copy(rec.reply.bson());
    BSON_APPEND_BOOL(reply, "replayed", true);
    return Document::Adopt(reply);
  }

  WriteOptionsInternal w;
  w.context = wc;
  w.sync = sync;
  std::unique_ptr<WriteScope> scope = db_->BeginScope(w);
  ctx.scope = scope.get();
  ctx.keyed = true;
  bson_t* reply = bson_new();
  Status s = fn(ctx, reply);
  if (!s.ok()) {
    bson_destroy(reply);
    return ErrorReply(s);  // the scope rolls back: nothing happened, nothing stored
  }
  BSON_APPEND_DOUBLE(reply, "ok", 1.0);
  Document out = Document::Adopt(reply);
  if (TookEffect(out.bson())) {
    IdempotencyRecord rec;
    rec.fingerprint = fp;
    rec.at_ms = db_->NowMs();
    bson_iter_t target;
    bson_iter_init(&target, ctx.cmd);
    bson_iter_next(&target);
    rec.ns = ctx.db_name + "." + (BSON_ITER_HOLDS_UTF8(&target) ? bson_iter_utf8(&target, nullptr) : "");
    rec.reply = out;
    s = db_->CommitScope(scope.get(), log->cf(), key, IdempotencyLog::EncodeRecord(rec));
  } else {
    s = db_->CommitScope(scope.get());
  }
  if (!s.ok()) return ErrorReply(s);
  return out;
}

}  // namespace gatedb
