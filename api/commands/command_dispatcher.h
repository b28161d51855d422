// File: api/commands/command_dispatcher.h
//
// The one command dispatcher: MongoDB command BSON in, BSON reply out.  Every
// door (Database::RunCommand, the CLI, later the wire listener) ends here.
// The dispatcher parses each command into the engine's request structs
// (engine/storage/requests.h) and calls the same DBImpl entry points as the
// typed C++ API.
//
// Thread safety: Run() may be called concurrently.
#ifndef GATEDB_API_COMMANDS_COMMAND_DISPATCHER_H_
#define GATEDB_API_COMMANDS_COMMAND_DISPATCHER_H_

#include <bson/bson.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/storage/cursor.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {

class DBImpl;
struct FindRequest;
struct CountRequest;
struct DistinctRequest;
struct UpdateRequest;
struct DeleteRequest;
struct FindAndModifyRequest;
struct AggregateRequest;
class TxnManager;
struct WriteScope;
namespace auth {
class Principal;
class ScramServer;
}  // namespace auth

// What the wire server knows of itself, for the commands that describe the
// server (serverStatus, getCmdLineOpts, getLog).  Implemented by
// api/server; in-process callers have none.
class ServerInfo {
 public:
  virtual ~ServerInfo() = default;
  // serverStatus's server-wide fields: connections, network, uptime.
  virtual void AppendServerStatus(bson_t* reply) const = 0;
  // getCmdLineOpts's argv and parsed.
  virtual void AppendCmdLineOpts(bson_t* reply) const = 0;
  // getLog "global": the server's most recent log lines, oldest first.
  virtual std::vector<std::string> RecentLog() const = 0;
};

// Who sends a command over the wire server (one per connection).  The
// dispatcher's commands read it; in-process callers pass none.
struct ClientInfo {
  int64_t connection_id = 0;
  std::string peer;      // the client's address ("127.0.0.1:53122") or "unix:<path>"
  std::string me;        // the address clients dial ("127.0.0.1:27017"): hello's me/hosts/primary
  std::string set_name;  // the replica set presented (PROTOCOL.md: "gatedb" unless --replSet)
  const ServerInfo* server = nullptr;
  // A change stream's getMore answers at once instead of waiting (the wire
  // server waits for the journal itself, without holding a worker).
  bool defer_waits = false;
  // Authentication on this connection (saslStart, saslContinue, logout):
  // the server owns it, the SASL commands change it.  Null: the server
  // does not authenticate (every caller is the owner).
  struct Auth* auth = nullptr;
};

// A connection's authentication state (ClientInfo::auth).  Commands run on
// one connection one at a time, so the SASL commands change it unlocked.
struct Auth {
  // The server was started with --auth: callers must authenticate even
  // before any user exists.  With users, they must anyway.
  bool enforce = false;
  // The peer is on loopback (MongoDB's localhost exception: with --auth and
  // no user yet, a loopback client may create the first user).
  bool loopback = false;
  // Who authenticated (user, database); empty before.
  std::string user;
  std::string user_db;
  // The SASL conversation in progress, by conversationId.
  int32_t conversation_id = 0;
  std::shared_ptr<auth::ScramServer> conversation;
  std::string conversation_db;
  bool skip_empty_exchange = false;
};

namespace commands {

// What one command invocation sees.
struct CommandContext {
  DBImpl* db = nullptr;
  // Set inside a transaction: the command's reads and writes join it.
  // (A keyed write needs nothing here: the engine runs the idempotency
  // protocol for any request whose write context holds taskId and writeSeq.)
  WriteScope* scope = nullptr;
  std::string session;       // the lsid document's bytes; empty without one
  std::string db_name;       // from $db; "test" when absent
  std::string command_name;  // the first field's name
  const bson_t* cmd = nullptr;
  TxnManager* txns = nullptr;
  const ClientInfo* client = nullptr;  // null in process
  // Who calls (engine/auth/principal.h): null for the owner, who may do
  // anything; the dispatcher checks each command against it, and the write
  // gate each write.
  std::shared_ptr<const auth::Principal> principal;
  // The owner's rights come from MongoDB's localhost exception (a loopback
  // client, no user yet): createUser may create the first user only.
  bool localhost_exception = false;
  // A retryable write (lsid and txnNumber outside a transaction): the
  // idempotency key it runs under when its writeContext names none, so a
  // driver's retry returns the first reply and never applies twice.
  std::string retry_task_id;  // empty: not a retryable write
  int64_t retry_write_seq = 0;
};

// A command writes its success fields into `reply` (the dispatcher adds
// ok: 1) or returns an error Status (the dispatcher builds the {ok: 0} reply
// and drops anything partly written).
using CommandFn = Status (*)(CommandContext& ctx, bson_t* reply);

// CRUD (crud_commands.cc).
// Parsers shared by the commands and explain: fill the request from ctx.cmd.
// `page` (may be null) gets batchSize and singleBatch.
Status ParseFind(CommandContext& ctx, FindRequest* out, CursorRequest* page = nullptr);
Status ParseCount(CommandContext& ctx, CountRequest* out);
// aggregate: `explain` is set when the command asks for explain: true;
// `page` (may be null) gets cursor.batchSize; `have_cursor` (may be null)
// whether it had the `cursor` field the command (not explain) requires.
// Errors: as the command's.
Status ParseAggregate(CommandContext& ctx, AggregateRequest* out, CursorRequest* page, bool* explain,
                      bool* have_cursor = nullptr);
Status ParseDistinct(CommandContext& ctx, DistinctRequest* out);
Status ParseUpdate(CommandContext& ctx, UpdateRequest* out);
Status ParseDelete(CommandContext& ctx, DeleteRequest* out);
Status ParseFindAndModify(CommandContext& ctx, FindAndModifyRequest* out);

Status InsertCommand(CommandContext& ctx, bson_t* reply);
Status CreateIndexesCommand(CommandContext& ctx, bson_t* reply);
Status ListIndexesCommand(CommandContext& ctx, bson_t* reply);
Status DropIndexesCommand(CommandContext& ctx, bson_t* reply);
Status ExplainCommand(CommandContext& ctx, bson_t* reply);
Status FindCommand(CommandContext& ctx, bson_t* reply);
Status GetMoreCommand(CommandContext& ctx, bson_t* reply);
Status AggregateCommand(CommandContext& ctx, bson_t* reply);
Status KillCursorsCommand(CommandContext& ctx, bson_t* reply);
Status UpdateCommand(CommandContext& ctx, bson_t* reply);
Status DeleteCommand(CommandContext& ctx, bson_t* reply);
Status FindAndModifyCommand(CommandContext& ctx, bson_t* reply);
Status CountCommand(CommandContext& ctx, bson_t* reply);
Status DistinctCommand(CommandContext& ctx, bson_t* reply);

// Collections and the server (collection_commands.cc).
Status PingCommand(CommandContext& ctx, bson_t* reply);
Status HelloCommand(CommandContext& ctx, bson_t* reply);
Status BuildInfoCommand(CommandContext& ctx, bson_t* reply);
Status CreateCommand(CommandContext& ctx, bson_t* reply);
Status DropCommand(CommandContext& ctx, bson_t* reply);
Status DropDatabaseCommand(CommandContext& ctx, bson_t* reply);
Status RenameCollectionCommand(CommandContext& ctx, bson_t* reply);
Status ListCollectionsCommand(CommandContext& ctx, bson_t* reply);
Status ListDatabasesCommand(CommandContext& ctx, bson_t* reply);
Status DbStatsCommand(CommandContext& ctx, bson_t* reply);
Status CollStatsCommand(CommandContext& ctx, bson_t* reply);
Status CollModCommand(CommandContext& ctx, bson_t* reply);

// What drivers and shells ask of a server (server_commands.cc).
Status GetParameterCommand(CommandContext& ctx, bson_t* reply);
Status GetLogCommand(CommandContext& ctx, bson_t* reply);
Status HostInfoCommand(CommandContext& ctx, bson_t* reply);
Status ServerStatusCommand(CommandContext& ctx, bson_t* reply);
Status ConnectionStatusCommand(CommandContext& ctx, bson_t* reply);
Status ReplSetGetStatusCommand(CommandContext& ctx, bson_t* reply);
Status WhatsMyUriCommand(CommandContext& ctx, bson_t* reply);
Status GetCmdLineOptsCommand(CommandContext& ctx, bson_t* reply);
Status EndSessionsCommand(CommandContext& ctx, bson_t* reply);
Status KillSessionsCommand(CommandContext& ctx, bson_t* reply);
Status KillAllSessionsCommand(CommandContext& ctx, bson_t* reply);

// gatedb's extension commands (gate_commands.cc).
Status JournalCommand(CommandContext& ctx, bson_t* reply);
Status ConflictStatsCommand(CommandContext& ctx, bson_t* reply);
Status SyncStatusCommand(CommandContext& ctx, bson_t* reply);
Status SyncResolveCommand(CommandContext& ctx, bson_t* reply);
Status IdempotencyStatusCommand(CommandContext& ctx, bson_t* reply);
Status AcquireLeaseCommand(CommandContext& ctx, bson_t* reply);
Status RenewLeaseCommand(CommandContext& ctx, bson_t* reply);
Status ReleaseLeaseCommand(CommandContext& ctx, bson_t* reply);

// Users, roles and authentication (auth_commands.cc).
Status CreateUserCommand(CommandContext& ctx, bson_t* reply);
Status UpdateUserCommand(CommandContext& ctx, bson_t* reply);
Status DropUserCommand(CommandContext& ctx, bson_t* reply);
Status UsersInfoCommand(CommandContext& ctx, bson_t* reply);
Status GrantRolesToUserCommand(CommandContext& ctx, bson_t* reply);
Status RevokeRolesFromUserCommand(CommandContext& ctx, bson_t* reply);
Status CreateRoleCommand(CommandContext& ctx, bson_t* reply);
Status UpdateRoleCommand(CommandContext& ctx, bson_t* reply);
Status DropRoleCommand(CommandContext& ctx, bson_t* reply);
Status RolesInfoCommand(CommandContext& ctx, bson_t* reply);
Status GrantPrivilegesToRoleCommand(CommandContext& ctx, bson_t* reply);
Status RevokePrivilegesFromRoleCommand(CommandContext& ctx, bson_t* reply);
Status SaslStartCommand(CommandContext& ctx, bson_t* reply);
Status SaslContinueCommand(CommandContext& ctx, bson_t* reply);
Status LogoutCommand(CommandContext& ctx, bson_t* reply);
// saslStart's work for the fields of `cmd` (saslStart itself, or hello's
// speculativeAuthenticate) against users of `db`.
Status SaslStartFields(CommandContext& ctx, const bson_t* cmd, const std::string& db, bson_t* reply);

// Whether ctx.principal may run the command (command_auth.cc): every
// command but the writes, which the write gate checks itself.
// Errors: Unauthorized.
Status AuthorizeCommand(const CommandContext& ctx);

}  // namespace commands

class CommandDispatcher {
 public:
  CommandDispatcher(DBImpl* db, TxnManager* txns) : db_(db), txns_(txns) {}

  // Runs `cmd` and returns its reply; never fails and never throws: every
  // error, including an unknown command (CommandNotFound) and an internal
  // fault (InternalError), is an {ok: 0} reply.  `client` (may be null)
  // describes the wire connection the command came on; `principal` (null:
  // the owner) is who runs it (with client->auth, the connection's
  // authenticated user instead).
  Document Run(const bson_t* cmd, const ClientInfo* client = nullptr,
               std::shared_ptr<const auth::Principal> principal = nullptr);

  // The {ok: 0} reply of `s`.
  static Document ErrorReplyFor(const Status& s);

  // Whether `cmd` is a retryable write as drivers send one (insert, update,
  // delete or findAndModify with lsid and txnNumber, outside a
  // transaction): its retryable errors carry RetryableWriteError.
  static bool IsRetryableWrite(const bson_t* cmd);

 private:
  // commitTransaction / abortTransaction.
  Document EndTransaction(commands::CommandContext& ctx, bool commit);

  DBImpl* db_;
  TxnManager* txns_;
};

}  // namespace gatedb

#endif  // GATEDB_API_COMMANDS_COMMAND_DISPATCHER_H_
