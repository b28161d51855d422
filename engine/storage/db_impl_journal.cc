// DBImpl: reading the journal, and the conflict statistics computed over it.
#include <cstring>
#include <algorithm>
#include <map>

#include "engine/document/bson_compare.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "wal/journal.h"

namespace gatedb {

namespace {

// The journal command shows PROTOCOL.md's record of each write (who, why,
// which versions, which paths): not the catalog events ("drop",
// "dropDatabase") nor the values a write changed, which the events also
// carry for change streams and sync.  False for an event it does not show.
bool AsWriteRecord(Document* e) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, e->bson(), "op") && BSON_ITER_HOLDS_UTF8(&it)) {
    std::string_view op = bson_iter_utf8(&it, nullptr);
    if (op == "drop" || op == "dropDatabase" || op == "rename") return false;
  }
  const bool has_change = bson_iter_init_find(&it, e->bson(), "fullDocument") ||
                          bson_iter_init_find(&it, e->bson(), "updatedFields");
  if (!has_change) return true;
  bson_t* out = bson_new();
  bson_copy_to_excluding_noinit(e->bson(), out, "fullDocument", "updatedFields", "removedFields", nullptr);
  *e = Document::Adopt(out);
  return true;
}

}  // namespace

StatusOr<JournalReadResult> DBImpl::ReadJournal(const JournalReadRequest& req) {
  if (!req.ns.empty()) {
    Namespace ns;
    size_t dot = req.ns.find('.');
    if (dot == std::string::npos) return Status(ErrorCode::kInvalidNamespace, "bad namespace " + req.ns);
  }
  if (req.wait_ms > 0 && journal_->last_seq() <= req.after_seq) {
    journal_->WaitForEvents(req.after_seq, std::chrono::milliseconds(req.wait_ms));
  }
  wal::Journal::ReadOptions ro;
  ro.after_seq = req.after_seq;
  ro.ns = req.ns;
  if (!req.db.empty()) ro.ns_prefix = req.db + ".";
  ro.limit = req.limit;
  ASSIGN_OR_RETURN(wal::Journal::ReadResult r, journal_->Read(ro));
  JournalReadResult out;
  out.events.reserve(r.events.size());
  for (Document& e : r.events) {
    if (AsWriteRecord(&e)) out.events.push_back(std::move(e));
  }
  out.last_seq = r.last_seq;
  out.next_after_seq = r.next_after_seq;
  out.first_seq = journal_->first_seq();
  return out;
}

StatusOr<ConflictStatsResult> DBImpl::ConflictStats(const Namespace& ns, uint64_t after_seq) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  ConflictStatsResult out;
  struct IdCount {
    Value id;
    int64_t conflicts = 0;
  };
  // Documents keyed by their _id's relaxed JSON (a stable, printable key).
  std::map<std::string, IdCount> hot;
  std::map<std::string, int64_t> agents;
  std::map<std::string, int64_t> unauthorized;
  uint64_t after = std::max<uint64_t>(after_seq, journal_->first_seq() > 0 ? journal_->first_seq() - 1 : 0);
  while (true) {
    wal::Journal::ReadOptions ro;
    ro.after_seq = after;
    ro.ns = ns.full();
    ro.limit = 4096;
    auto r = journal_->Read(ro);
    if (!r.ok()) {
      // Collected under our feet: start again from the new first event.
      if (r.status().code() == ErrorCode::kChangeStreamHistoryLost && after + 1 < journal_->first_seq()) {
        after = journal_->first_seq() - 1;
        continue;
      }
      return r.status();
    }
    for (const Document& e : r->events) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, e.bson(), "code") && BSON_ITER_HOLDS_UTF8(&it) &&
          std::strcmp(bson_iter_utf8(&it, nullptr), "Unauthorized") == 0) {
        // A refusal by permissions: counted apart from version conflicts.
        ++out.unauthorized;
        bson_iter_t agent;
        std::string agent_id;
        if (bson_iter_init(&it, e.bson()) && bson_iter_find_descendant(&it, "writeContext.agentId", &agent) &&
            BSON_ITER_HOLDS_UTF8(&agent)) {
          agent_id = bson_iter_utf8(&agent, nullptr);
        }
        ++unauthorized[agent_id];
        continue;
      }
      bool gated = bson_iter_init_find(&it, e.bson(), "gated") && BSON_ITER_HOLDS_BOOL(&it) && bson_iter_bool(&it);
      if (!gated) continue;
      ++out.gated_writes;
      if (!bson_iter_init_find(&it, e.bson(), "op") || !BSON_ITER_HOLDS_UTF8(&it) ||
          std::string(bson_iter_utf8(&it, nullptr)) != "conflict") {
        continue;
      }
      ++out.conflicts;
      if (bson_iter_init_find(&it, e.bson(), "_id") && !BSON_ITER_HOLDS_NULL(&it)) {
        Value id(*bson_iter_value(&it));
        IdCount& c = hot[id.ToJson()];
        if (c.conflicts == 0) c.id = id;
        ++c.conflicts;
      }
      bson_iter_t agent;
      std::string agent_id;
      if (bson_iter_init(&it, e.bson()) && bson_iter_find_descendant(&it, "writeContext.agentId", &agent) &&
          BSON_ITER_HOLDS_UTF8(&agent)) {
        agent_id = bson_iter_utf8(&agent, nullptr);
      }
      ++agents[agent_id];
    }
    if (r->events.empty() || r->next_after_seq >= r->last_seq) break;
    after = r->next_after_seq;
  }
  out.conflict_rate = out.gated_writes == 0 ? 0.0 : static_cast<double>(out.conflicts) / out.gated_writes;
  for (auto& [key, c] : hot) out.hot_documents.emplace_back(std::move(c.id), c.conflicts);
  for (auto& [agent, n] : agents) out.agents.emplace_back(agent, n);
  for (auto& [agent, n] : unauthorized) out.unauthorized_agents.emplace_back(agent, n);
  std::stable_sort(out.unauthorized_agents.begin(), out.unauthorized_agents.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::stable_sort(out.hot_documents.begin(), out.hot_documents.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::stable_sort(out.agents.begin(), out.agents.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kTop = 10;
  if (out.hot_documents.size() > kTop) out.hot_documents.resize(kTop);
  if (out.agents.size() > kTop) out.agents.resize(kTop);
  if (out.unauthorized_agents.size() > kTop) out.unauthorized_agents.resize(kTop);
  return out;
}

}  // namespace gatedb
