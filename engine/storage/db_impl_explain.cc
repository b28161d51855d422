// DBImpl::Explain: MongoDB's explain output for the plans of
// db_impl_plan.cc.  queryPlanner shows the winning plan (stage names as
// MongoDB's: IDHACK, COLLSCAN, FETCH, IXSCAN, OR, SORT, SKIP, LIMIT,
// PROJECTION_DEFAULT, COUNT, UPDATE, DELETE, EOF) and the rejected
// candidates without running the query, as MongoDB's; executionStats and
// allPlansExecution also run the read (a write is never run: its query
// part is, as a dry run without locks) and report nReturned,
// totalKeysExamined and totalDocsExamined.
#include <chrono>

#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"

namespace gatedb {

namespace {

Document Wrap(const char* stage, const bson_t* input, const char* field = nullptr, int64_t amount = 0,
              const bson_t* doc_field = nullptr, const char* doc_name = nullptr) {
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "stage", stage);
  if (field != nullptr) BSON_APPEND_INT64(d, field, amount);
  if (doc_field != nullptr) BSON_APPEND_DOCUMENT(d, doc_name, doc_field);
  BSON_APPEND_DOCUMENT(d, "inputStage", input);
  return Document::Adopt(d);
}

}  // namespace

StatusOr<Document> DBImpl::Explain(const ExplainRequest& req) {
  if (req.verbosity != "queryPlanner" && req.verbosity != "executionStats" && req.verbosity != "allPlansExecution") {
    return Status(ErrorCode::kBadValue, "verbosity string must be one of {'queryPlanner', 'executionStats', "
                                        "'allPlansExecution'}");
  }
  PlanStats stats;
  stats.plan_only = req.verbosity == "queryPlanner";
  int64_t n_returned = 0;
  auto started = std::chrono::steady_clock::now();
  const Namespace* ns = &req.find.ns;
  const Document* filter = &req.find.filter;
  switch (req.kind) {
    case ExplainRequest::Kind::kFind: {
      const FindRequest& f = req.find;
      ASSIGN_OR_RETURN(FindResult r, FindWithStats(f, &stats));
      n_returned = static_cast<int64_t>(r.docs.size());
      if (stats.plan.empty()) break;
      if (f.skip > 0) stats.plan = Wrap("SKIP", stats.plan.bson(), "skipAmount", f.skip);
      if (f.limit > 0) stats.plan = Wrap("LIMIT", stats.plan.bson(), "limitAmount", f.limit);
      if (!f.projection.empty()) {
        stats.plan = Wrap("PROJECTION_DEFAULT", stats.plan.bson(), nullptr, 0, f.projection.bson(), "transformBy");
      }
      break;
    }
    case ExplainRequest::Kind::kCount: {
      ns = &req.count.ns;
      filter = &req.count.query;
      ASSIGN_OR_RETURN(int64_t n, CountWithStats(req.count, &stats));
      (void)n;
      if (!stats.plan.empty()) stats.plan = Wrap("COUNT", stats.plan.bson());
      break;
    }
    case ExplainRequest::Kind::kDistinct: {
      ns = &req.distinct.ns;
      filter = &req.distinct.query;
      ASSIGN_OR_RETURN(std::vector<Value> values, DistinctWithStats(req.distinct, &stats));
      n_returned = static_cast<int64_t>(values.size());
      break;
    }
    case ExplainRequest::Kind::kUpdate:
    case ExplainRequest::Kind::kDelete:
    case ExplainRequest::Kind::kFindAndModify: {
      // The query part alone, as a find: nothing is written, nothing returned.
      ASSIGN_OR_RETURN(FindResult r, FindWithStats(req.find, &stats));
      (void)r;
      if (stats.plan.empty()) break;
      const char* stage = req.kind == ExplainRequest::Kind::kDelete ? "DELETE" : "UPDATE";
      stats.plan = Wrap(stage, stats.plan.bson());
      break;
    }
  }
  const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now() - started).count();
  if (stats.plan.empty()) {
    bson_t* eof = bson_new();
    BSON_APPEND_UTF8(eof, "stage", "EOF");
    stats.plan = Document::Adopt(eof);
  }
  bson_t* out = bson_new();
  BSON_APPEND_UTF8(out, "explainVersion", "1");
  bson_t qp, arr;
  BSON_APPEND_DOCUMENT_BEGIN(out, "queryPlanner", &qp);
  BSON_APPEND_UTF8(&qp, "namespace", ns->full().c_str());
  BSON_APPEND_BOOL(&qp, "indexFilterSet", false);
  BSON_APPEND_DOCUMENT(&qp, "parsedQuery", filter->bson());
  BSON_APPEND_DOCUMENT(&qp, "winningPlan", stats.plan.bson());
  BSON_APPEND_ARRAY_BEGIN(&qp, "rejectedPlans", &arr);
  for (size_t i = 0; i < stats.rejected.size(); ++i) {
    BSON_APPEND_DOCUMENT(&arr, std::to_string(i).c_str(), stats.rejected[i].bson());
  }
  bson_append_array_end(&qp, &arr);
  bson_append_document_end(out, &qp);
  if (req.verbosity != "queryPlanner") {
    bson_t es;
    BSON_APPEND_DOCUMENT_BEGIN(out, "executionStats", &es);
    BSON_APPEND_BOOL(&es, "executionSuccess", true);
    BSON_APPEND_INT64(&es, "nReturned", n_returned);
    BSON_APPEND_INT64(&es, "executionTimeMillis", elapsed_ms);
    BSON_APPEND_INT64(&es, "totalKeysExamined", stats.keys_examined);
    BSON_APPEND_INT64(&es, "totalDocsExamined", stats.docs_examined);
    BSON_APPEND_DOCUMENT(&es, "executionStages", stats.plan.bson());
    if (req.verbosity == "allPlansExecution") {
      bson_t all = BSON_INITIALIZER;
      BSON_APPEND_ARRAY(&es, "allPlansExecution", &all);
    }
    bson_append_document_end(out, &es);
  }
  if (!req.command.empty()) BSON_APPEND_DOCUMENT(out, "command", req.command.bson());
  return Document::Adopt(out);
}

}  // namespace gatedb
