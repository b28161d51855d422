#include "api/src/sync_state.h"

#include <algorithm>
#include <string_view>

#include "engine/storage/db_impl.h"

namespace gatedb {
namespace sync_state {

Status PendingPush(DBImpl* db, const std::string& ns, uint64_t after,
                   const std::function<void(const Value&, std::string_view source)>& add, uint64_t* upto) {
  JournalReadRequest q;
  q.ns = ns;
  q.after_seq = after;
  q.limit = 10000;
  *upto = after;
  for (;;) {
    ASSIGN_OR_RETURN(JournalReadResult r, db->ReadJournal(q));
    for (const Document& e : r.events) {
      bson_iter_t it, agent;
      if (bson_iter_init(&it, e.bson()) && bson_iter_find_descendant(&it, "writeContext.agentId", &agent) &&
          BSON_ITER_HOLDS_UTF8(&agent) && std::string_view(bson_iter_utf8(&agent, nullptr)) == kAgent) {
        continue;  // sync's own writes: pulled, not to be pushed back
      }
      if (bson_iter_init_find(&it, e.bson(), "op") && BSON_ITER_HOLDS_UTF8(&it) &&
          std::string_view(bson_iter_utf8(&it, nullptr)) == "conflict") {
        continue;
      }
      std::string_view source;
      bson_iter_t src;
      if (bson_iter_init(&src, e.bson()) && bson_iter_find_descendant(&src, "writeContext.source", &src) &&
          BSON_ITER_HOLDS_UTF8(&src)) {
        source = bson_iter_utf8(&src, nullptr);
      }
      if (bson_iter_init_find(&it, e.bson(), "_id")) add(Value(*bson_iter_value(&it)), source);
    }
    *upto = std::max<uint64_t>(*upto, r.next_after_seq);
    if (r.events.empty() || r.next_after_seq >= r.last_seq) break;
    q.after_seq = r.next_after_seq;
  }
  FindRequest pending;
  pending.ns = Namespace{kDb, kBase};
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "_id.ns", ns.c_str());
  BSON_APPEND_BOOL(f, "pending", true);
  pending.filter = Document::Adopt(f);
  ASSIGN_OR_RETURN(FindResult found, db->Find(pending));
  for (const Document& p : found.docs) {
    bson_iter_t it, id;
    if (bson_iter_init(&it, p.bson()) && bson_iter_find_descendant(&it, "_id.id", &id)) add(Value(*bson_iter_value(&id)), "");
  }
  return Status::OK();
}

}  // namespace sync_state
}  // namespace gatedb
