// gatedb's extension commands of the write protocol: journal and
// conflictStats (PROTOCOL.md, "Extension commands").
#include <algorithm>
#include <optional>
#include <string>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "engine/auth/principal.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/idempotency.h"

namespace gatedb {
namespace commands {

Status JournalCommand(CommandContext& ctx, bson_t* reply) {
  JournalReadRequest req;
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (BSON_ITER_HOLDS_UTF8(&it)) {
    Namespace ns{ctx.db_name, bson_iter_utf8(&it, nullptr)};
    RETURN_IF_ERROR(ValidateNamespace(ns));
    req.ns = ns.full();
  } else {
    int64_t all = 0;
    Status s = ReadInt64(&it, "journal", &all);
    if (!s.ok() || all != 1) {
      return Status(ErrorCode::kBadValue,
                    "journal takes a collection name, or 1 for every collection of the database");
    }
    req.db = ctx.db_name;
  }
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    int64_t v = 0;
    if (key == "afterSeq" || key == "limit" || key == "waitMs") {
      RETURN_IF_ERROR(ReadInt64(&it, "journal." + std::string(key), &v));
      if (v < 0) return Status(ErrorCode::kBadValue, "journal." + std::string(key) + " must be >= 0");
      if (key == "afterSeq") req.after_seq = static_cast<uint64_t>(v);
      if (key == "limit") req.limit = static_cast<size_t>(v);
      if (key == "waitMs") req.wait_ms = std::min<int64_t>(v, 60000);
    } else {
      return UnknownField("journal", key);
    }
  }
  ASSIGN_OR_RETURN(JournalReadResult r, ctx.db->ReadJournal(req));
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(reply, "events", &arr);
  char keybuf[16];
  for (size_t i = 0; i < r.events.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    BSON_APPEND_DOCUMENT(&arr, key, r.events[i].bson());
  }
  bson_append_array_end(reply, &arr);
  BSON_APPEND_INT64(reply, "lastSeq", static_cast<int64_t>(r.last_seq));
  BSON_APPEND_INT64(reply, "nextAfterSeq", static_cast<int64_t>(r.next_after_seq));
  BSON_APPEND_INT64(reply, "firstSeq", static_cast<int64_t>(r.first_seq));
  return Status::OK();
}

Status ConflictStatsCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_UTF8(&it)) return TypeError("conflictStats", bson_iter_type(&it), "string");
  Namespace ns{ctx.db_name, bson_iter_utf8(&it, nullptr)};
  int64_t after = 0;
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    if (key == "afterSeq") {
      RETURN_IF_ERROR(ReadInt64(&it, "conflictStats.afterSeq", &after));
      if (after < 0) return Status(ErrorCode::kBadValue, "conflictStats.afterSeq must be >= 0");
      continue;
    }
    return UnknownField("conflictStats", key);
  }
  ASSIGN_OR_RETURN(ConflictStatsResult r, ctx.db->ConflictStats(ns, static_cast<uint64_t>(after)));
  BSON_APPEND_INT64(reply, "gatedWrites", r.gated_writes);
  BSON_APPEND_INT64(reply, "conflicts", r.conflicts);
  BSON_APPEND_DOUBLE(reply, "conflictRate", r.conflict_rate);
  bson_t arr;
  char keybuf[16];
  BSON_APPEND_ARRAY_BEGIN(reply, "hotDocuments", &arr);
  for (size_t i = 0; i < r.hot_documents.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    bson_t d;
    BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &d);
    r.hot_documents[i].first.AppendTo(&d, "_id");
    BSON_APPEND_INT64(&d, "conflicts", r.hot_documents[i].second);
    bson_append_document_end(&arr, &d);
  }
  bson_append_array_end(reply, &arr);
  // Each agent refused at least once: its version conflicts and its
  // refusals by permissions, most refused first.
  struct AgentCounts {
    std::string agent;
    int64_t conflicts = 0;
    int64_t unauthorized = 0;
  };
  std::vector<AgentCounts> agents;
  auto entry = [&](const std::string& agent) -> AgentCounts& {
    for (AgentCounts& a : agents) {
      if (a.agent == agent) return a;
    }
    agents.push_back(AgentCounts{agent});
    return agents.back();
  };
  for (const auto& [agent, n] : r.agents) entry(agent).conflicts = n;
  for (const auto& [agent, n] : r.unauthorized_agents) entry(agent).unauthorized = n;
  std::stable_sort(agents.begin(), agents.end(), [](const AgentCounts& a, const AgentCounts& b) {
    return a.conflicts + a.unauthorized > b.conflicts + b.unauthorized;
  });
  // (unauthorized appears once there are refusals by permissions, so that
  // the reply keeps PROTOCOL.md's shape without them)
  if (r.unauthorized > 0) BSON_APPEND_INT64(reply, "unauthorized", r.unauthorized);
  BSON_APPEND_ARRAY_BEGIN(reply, "agents", &arr);
  for (size_t i = 0; i < agents.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    bson_t d;
    BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &d);
    BSON_APPEND_UTF8(&d, "agentId", agents[i].agent.c_str());
    BSON_APPEND_INT64(&d, "conflicts", agents[i].conflicts);
    if (agents[i].unauthorized > 0) BSON_APPEND_INT64(&d, "unauthorized", agents[i].unauthorized);
    bson_append_document_end(&arr, &d);
  }
  bson_append_array_end(reply, &arr);
  return Status::OK();
}

Status IdempotencyStatusCommand(CommandContext& ctx, bson_t* reply) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  std::string task_id;
  RETURN_IF_ERROR(ReadString(&it, "idempotencyStatus", &task_id));
  while (bson_iter_next(&it)) {
    if (!IsGenericCommandField(bson_iter_key(&it))) return UnknownField("idempotencyStatus", bson_iter_key(&it));
  }
  ASSIGN_OR_RETURN(auto writes, ctx.db->IdempotencyStatus(task_id));
  bson_t arr;
  char keybuf[16];
  BSON_APPEND_ARRAY_BEGIN(reply, "writes", &arr);
  for (size_t i = 0; i < writes.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    bson_t w;
    BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &w);
    BSON_APPEND_INT64(&w, "writeSeq", writes[i].first);
    BSON_APPEND_DATE_TIME(&w, "at", writes[i].second.at_ms);
    BSON_APPEND_UTF8(&w, "ns", writes[i].second.ns.c_str());
    BSON_APPEND_DOCUMENT(&w, "reply", writes[i].second.reply.bson());
    bson_append_document_end(&arr, &w);
  }
  bson_append_array_end(reply, &arr);
  return Status::OK();
}

namespace {

// acquireLease / renewLease / releaseLease:
//   {<cmd>: <collection>, _id: <value>, ttlMs: <n>, writeContext: {agentId}}
Status LeaseCommandImpl(CommandContext& ctx, bson_t* reply, int op) {
  bson_iter_t it;
  bson_iter_init(&it, ctx.cmd);
  bson_iter_next(&it);
  if (!BSON_ITER_HOLDS_UTF8(&it)) return TypeError(ctx.command_name, bson_iter_type(&it), "string");
  Namespace ns{ctx.db_name, bson_iter_utf8(&it, nullptr)};
  std::optional<Value> id;
  int64_t ttl = 15000;  // the write-protocol article suggests 10 to 30 s
  WriteContext wc;
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (IsGenericCommandField(key)) continue;
    if (key == "_id") {
      id = Value(*bson_iter_value(&it));
    } else if (key == "ttlMs" && op != 2) {
      RETURN_IF_ERROR(ReadInt64(&it, ctx.command_name + ".ttlMs", &ttl));
    } else if (key == "writeContext") {
      RETURN_IF_ERROR(ReadWriteContext(&it, &wc));
    } else {
      return UnknownField(ctx.command_name, key);
    }
  }
  if (!id) return MissingField(ctx.command_name, "_id");
  // The authenticated user is the agent: it holds leases in its own name.
  if (ctx.principal) RETURN_IF_ERROR(ctx.principal->ClaimAgent(&wc.agent_id, "update", ns.full()));
  StatusOr<LeaseInfo> r = op == 0   ? ctx.db->AcquireLease(ns, id->get(), ttl, wc.agent_id)
                          : op == 1 ? ctx.db->RenewLease(ns, id->get(), ttl, wc.agent_id)
                                    : ctx.db->ReleaseLease(ns, id->get(), wc.agent_id);
  RETURN_IF_ERROR(r.status());
  if (op == 2) {
    BSON_APPEND_BOOL(reply, "released", r->released);
    return Status::OK();
  }
  BSON_APPEND_UTF8(reply, "holder", r->holder.c_str());
  BSON_APPEND_DATE_TIME(reply, "expiresAt", r->expires_at_ms);
  return Status::OK();
}

}  // namespace

Status AcquireLeaseCommand(CommandContext& ctx, bson_t* reply) { return LeaseCommandImpl(ctx, reply, 0); }
Status RenewLeaseCommand(CommandContext& ctx, bson_t* reply) { return LeaseCommandImpl(ctx, reply, 1); }
Status ReleaseLeaseCommand(CommandContext& ctx, bson_t* reply) { return LeaseCommandImpl(ctx, reply, 2); }

}  // namespace commands
}  // namespace gatedb
