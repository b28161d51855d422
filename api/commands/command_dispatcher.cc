#include "api/commands/command_dispatcher.h"

#include <cstring>
#include <exception>
#include <string_view>

#include "api/commands/command_util.h"
#include "api/src/txn_manager.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/idempotency.h"

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
    {"aggregate", commands::AggregateCommand},
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
    {"createIndexes", commands::CreateIndexesCommand},
    {"listIndexes", commands::ListIndexesCommand},
    {"dropIndexes", commands::DropIndexesCommand},
    {"deleteIndexes", commands::DropIndexesCommand},
    {"explain", commands::ExplainCommand},
    {"drop", commands::DropCommand},
    {"dropDatabase", commands::DropDatabaseCommand},
    {"renameCollection", commands::RenameCollectionCommand},
    {"listCollections", commands::ListCollectionsCommand},
    {"listDatabases", commands::ListDatabasesCommand},
    {"dbStats", commands::DbStatsCommand},
    {"dbstats", commands::DbStatsCommand},
    {"collStats", commands::CollStatsCommand},
    {"collMod", commands::CollModCommand},
    {"journal", commands::JournalCommand},
    {"conflictStats", commands::ConflictStatsCommand},
    {"syncStatus", commands::SyncStatusCommand},
    {"syncResolve", commands::SyncResolveCommand},
    {"idempotencyStatus", commands::IdempotencyStatusCommand},
    {"acquireLease", commands::AcquireLeaseCommand},
    {"renewLease", commands::RenewLeaseCommand},
    {"releaseLease", commands::ReleaseLeaseCommand},
    {"getParameter", commands::GetParameterCommand},
    {"getLog", commands::GetLogCommand},
    {"hostInfo", commands::HostInfoCommand},
    {"serverStatus", commands::ServerStatusCommand},
    {"connectionStatus", commands::ConnectionStatusCommand},
    {"replSetGetStatus", commands::ReplSetGetStatusCommand},
    {"whatsmyuri", commands::WhatsMyUriCommand},
    {"getCmdLineOpts", commands::GetCmdLineOptsCommand},
    {"endSessions", commands::EndSessionsCommand},
    {"killSessions", commands::KillSessionsCommand},
    {"killAllSessions", commands::KillAllSessionsCommand},
    {"createUser", commands::CreateUserCommand},
    {"updateUser", commands::UpdateUserCommand},
    {"dropUser", commands::DropUserCommand},
    {"usersInfo", commands::UsersInfoCommand},
    {"grantRolesToUser", commands::GrantRolesToUserCommand},
    {"revokeRolesFromUser", commands::RevokeRolesFromUserCommand},
    {"createRole", commands::CreateRoleCommand},
    {"updateRole", commands::UpdateRoleCommand},
    {"dropRole", commands::DropRoleCommand},
    {"rolesInfo", commands::RolesInfoCommand},
    {"grantPrivilegesToRole", commands::GrantPrivilegesToRoleCommand},
    {"revokePrivilegesFromRole", commands::RevokePrivilegesFromRoleCommand},
    {"saslStart", commands::SaslStartCommand},
    {"saslContinue", commands::SaslContinueCommand},
    {"logout", commands::LogoutCommand},
    {"commitTransaction", commands::PingCommand},  // handled before dispatch
    {"abortTransaction", commands::PingCommand},   // handled before dispatch
};

Document ErrorReply(const Status& s) {
  bson_t* reply = bson_new();
  commands::AppendError(s, reply);
  Document out = Document::Adopt(reply);
  // MongoDB's NonResumableChangeStreamError category: a driver must not
  // resume a change stream after these.
  if (s.code() == ErrorCode::kChangeStreamFatalError || s.code() == ErrorCode::kChangeStreamHistoryLost) {
    return commands::WithErrorLabel(out, "NonResumableChangeStreamError");
  }
  return out;
}

// Inside a transaction: MongoDB's label on errors after which the whole
// transaction may be retried.
Document TxnErrorReply(const Status& s) {
  Document reply = ErrorReply(s);
  if (!IsTransientTransactionError(s)) return reply;
  return commands::WithErrorLabel(reply, "TransientTransactionError");
}

bool IsRetryableWriteName(std::string_view name) {
  return name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
         name == "findandmodify";
}

// The idempotency task a session's retryable writes run under:
// "lsid:<id as hex>" (and ":<uid as hex>" for an lsid that carries one).
std::string SessionTaskId(const std::string& lsid_bytes) {
  static const char kHex[] = "0123456789abcdef";
  auto hex = [](const uint8_t* p, size_t n, std::string* out) {
    for (size_t i = 0; i < n; ++i) {
      out->push_back(kHex[p[i] >> 4]);
      out->push_back(kHex[p[i] & 0xF]);
    }
  };
  std::string out = IdempotencyLog::kSessionTaskPrefix;
  bson_t lsid;
  if (!bson_init_static(&lsid, reinterpret_cast<const uint8_t*>(lsid_bytes.data()), lsid_bytes.size())) {
    hex(reinterpret_cast<const uint8_t*>(lsid_bytes.data()), lsid_bytes.size(), &out);
    return out;
  }
  bool any = false;
  bson_iter_t it;
  for (const char* field : {"id", "uid"}) {
    if (!bson_iter_init_find(&it, &lsid, field) || !BSON_ITER_HOLDS_BINARY(&it)) continue;
    bson_subtype_t sub;
    uint32_t n = 0;
    const uint8_t* data = nullptr;
    bson_iter_binary(&it, &sub, &n, &data);
    if (any) out.push_back(':');
    hex(data, n, &out);
    any = true;
  }
  if (!any) hex(reinterpret_cast<const uint8_t*>(lsid_bytes.data()), lsid_bytes.size(), &out);
  return out;
}

bool AllowedInTransaction(const std::string& name) {
  return name == "find" || name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
         name == "findandmodify" || name == "count" || name == "distinct" || name == "getMore" || name == "aggregate" ||
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

bool CommandDispatcher::IsRetryableWrite(const bson_t* cmd) {
  bson_iter_t it;
  if (cmd == nullptr || !bson_iter_init(&it, cmd) || !bson_iter_next(&it)) return false;
  if (!IsRetryableWriteName(bson_iter_key(&it))) return false;
  // Run's own test: session fields that parse, lsid and txnNumber, and no
  // transaction field.
  SessionFields session;
  return ReadSessionFields(cmd, &session).ok() && session.has_lsid && session.txn_number &&
         !session.autocommit.has_value() && !session.start;
}

Document CommandDispatcher::ErrorReplyFor(const Status& s) { return ErrorReply(s); }

Document CommandDispatcher::Run(const bson_t* cmd, const ClientInfo* client,
                                std::shared_ptr<const auth::Principal> principal) {
  try {
    bson_iter_t it;
    if (cmd == nullptr || !bson_iter_init(&it, cmd) || !bson_iter_next(&it)) {
      return ErrorReply(Status(ErrorCode::kFailedToParse, "empty command object"));
    }
    commands::CommandContext ctx;
    ctx.db = db_;
    ctx.txns = txns_;
    ctx.client = client;
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
    // Who runs it: on a connection that authenticates, its user (or nobody
    // yet); else the caller's principal (null: the owner).
    if (client != nullptr && client->auth != nullptr && (client->auth->enforce || db_->HasUsers())) {
      principal = auth::Principal::Unauthenticated();
      if (!client->auth->user.empty()) {
        auto p = db_->ResolvePrincipal(client->auth->user, client->auth->user_db);
        if (p.ok()) principal = *p;  // a user dropped since it authenticated is nobody
      } else if (ctx.command_name == "createUser" && client->auth->loopback && !db_->HasUsers()) {
        // MongoDB's localhost exception: with --auth and no user yet, a
        // client on this machine creates the first one, as the owner.  The
        // engine checks "no user yet" again under the lock it creates the
        // user with: two loopback clients racing here get one user in.
        principal = nullptr;
        ctx.localhost_exception = true;
      }
    }
    ctx.principal = std::move(principal);
    if (ctx.principal) {
      Status allowed = commands::AuthorizeCommand(ctx);
      if (!allowed.ok()) return ErrorReply(allowed);
    }
    SessionFields session;
    Status ss = ReadSessionFields(cmd, &session);
    if (!ss.ok()) return ErrorReply(ss);
    if (session.has_lsid) ctx.session = session.lsid;
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
      auto txn = txns_->ForCommand(session.lsid, *session.txn_number, session.start, ctx.principal);
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
    // A retryable write: (lsid, txnNumber) is its idempotency key, so the
    // driver's retry after a lost reply gets the first reply back.
    if (session.txn_number && IsRetryableWriteName(ctx.command_name)) {
      Status order = txns_->NoteRetryableWrite(session.lsid, *session.txn_number);
      if (!order.ok()) return ErrorReply(order);
      ctx.retry_task_id = SessionTaskId(session.lsid);
      ctx.retry_write_seq = *session.txn_number;
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
  bool replayed = false;
  Status s = txns_->Commit(txn->get(), keyed ? &wc : nullptr, &replayed);
  if (!s.ok()) {
    // The commit may or may not have happened (it reached RocksDB but its
    // fsync failed, or it ran out of time): MongoDB's label tells the
    // driver to retry commitTransaction, not the whole transaction.
    if (s.code() == ErrorCode::kWriteConcernFailed || s.code() == ErrorCode::kMaxTimeMSExpired) {
      return commands::WithErrorLabel(ErrorReply(s), "UnknownTransactionCommitResult");
    }
    return TxnErrorReply(s);
  }
  bson_t* reply = bson_new();
  if (replayed) BSON_APPEND_BOOL(reply, "replayed", true);
  BSON_APPEND_DOUBLE(reply, "ok", 1.0);
  return Document::Adopt(reply);
}

}  // namespace gatedb
