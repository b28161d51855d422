#include "api/commands/command_dispatcher.h"

#include <cstring>
#include <exception>
#include <string_view>

#include "api/commands/command_util.h"

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
};

Document ErrorReply(const Status& s) {
  bson_t* reply = bson_new();
  commands::AppendError(s, reply);
  return Document::Adopt(reply);
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

}  // namespace gatedb
