// DBImpl: the TTL monitor.  Every Options::ttl_interval_ms (60 s, as
// MongoDB's) a background thread finds, through each TTL index
// (expireAfterSeconds), the documents whose indexed date is older than now -
// expireAfterSeconds, and deletes them with ordinary delete statements: the
// write gate decides each (leases and conflict policies apply; an
// appendOnly collection keeps its documents), and the journal records each
// with writeContext {agentId: "gatedb.ttl", source: "ttl"}.  As in MongoDB,
// only dates expire (an array expires by its earliest date), and a document
// may outlive its time by up to one interval.
#include <algorithm>
#include <chrono>

#include "engine/index/planner.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/record.h"

namespace gatedb {

namespace {

constexpr size_t kTtlBatch = 1000;

}  // namespace

// The background monitor: TTL passes every ttl_interval_ms (when on), and
// the sweep of idle cursors at least every minute (sooner when their
// timeout is shorter).
void DBImpl::TtlLoop() {
  const int64_t ttl = options_.ttl_interval_ms;
  const int64_t sweep = std::max<int64_t>(10, std::min<int64_t>(options_.cursor_timeout_ms, 60 * 1000));
  const std::chrono::milliseconds interval(ttl > 0 ? std::min(ttl, sweep) : sweep);
  int64_t next_ttl = SteadyNowMs() + ttl;
  for (;;) {
    {
      MutexLock l(&ttl_mu_);
      if (ttl_cv_.WaitFor(&ttl_mu_, interval, [&]() GATEDB_REQUIRES(ttl_mu_) { return ttl_stop_; })) return;
    }
    const int64_t now = SteadyNowMs();
    cursors_->Sweep(now);
    if (ttl > 0 && now >= next_ttl) {
      // A failed pass (a write error, a full disk) is retried at the next one.
      StatusOr<int64_t> n = RunTtlPass();
      (void)n;
      next_ttl = now + ttl;
    }
  }
}

void DBImpl::StopTtlMonitor() {
  {
    MutexLock l(&ttl_mu_);
    ttl_stop_ = true;
  }
  ttl_cv_.SignalAll();
  if (ttl_thread_.joinable()) ttl_thread_.join();
}

StatusOr<int64_t> DBImpl::RunTtlPass() {
  std::vector<std::shared_ptr<Collection>> colls;
  {
    ReaderLock l(&catalog_mu_);
    for (const auto& [name, coll] : collections_) colls.push_back(coll);
  }
  int64_t deleted = 0;
  for (const std::shared_ptr<Collection>& coll : colls) {
    std::shared_ptr<const IndexCatalog> cat = coll->indexes();
    for (const auto& e : cat->entries) {
      if (!e->spec.ready || !e->spec.expire_after_seconds) continue;
      const std::string& path = e->spec.fields[0].path;
      const int64_t cutoff = NowMs() - *e->spec.expire_after_seconds * 1000;
      bson_t* f = bson_new();
      bson_t cond;
      bson_append_document_begin(f, path.c_str(), -1, &cond);
      BSON_APPEND_DATE_TIME(&cond, "$lt", cutoff);
      bson_append_document_end(f, &cond);
      Document filter = Document::Adopt(f);
      ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(filter.bson()));
      index::Hint hint;
      hint.name = e->spec.name;
      for (;;) {
        // A batch of expired _ids, then their deletion, each statement
        // re-checking the date under the document's lock.
        std::vector<Value> ids;
        RETURN_IF_ERROR(ForEachCandidate(*coll, filter.bson(), nullptr, &hint, nullptr, nullptr, nullptr,
                                         [&](std::string_view, const RecordView& rec) {
                                           if (!matcher->Matches(&rec.doc)) return true;
                                           bson_iter_t it;
                                           if (bson_iter_init_find(&it, &rec.doc, "_id")) {
                                             ids.emplace_back(*bson_iter_value(&it));
                                           }
                                           return ids.size() < kTtlBatch;
                                         }));
        if (ids.empty()) break;
        DeleteRequest req;
        req.ns = coll->info.ns;
        req.ordered = false;
        req.write.context.agent_id = "gatedb.ttl";
        req.write.context.source = "ttl";
        for (const Value& id : ids) {
          bson_t* q = bson_new();
          id.AppendTo(q, "_id");
          bson_append_document_begin(q, path.c_str(), -1, &cond);
          BSON_APPEND_DATE_TIME(&cond, "$lt", cutoff);
          bson_append_document_end(q, &cond);
          DeleteStatement st;
          st.q = Document::Adopt(q);
          st.limit = 1;
          req.deletes.push_back(std::move(st));
        }
        ASSIGN_OR_RETURN(DeleteWriteResult r, Delete(req));
        deleted += r.n;
        // Documents the gate kept (a lease, an appendOnly collection) would
        // come back in the next batch: stop at a batch that deleted nothing
        // new or was the last.
        if (r.n == 0 || ids.size() < kTtlBatch) break;
      }
    }
  }
  return deleted;
}

}  // namespace gatedb
