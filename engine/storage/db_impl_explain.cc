// DBImpl::Explain: MongoDB's explain output for the plans of
// db_impl_plan.cc.  queryPlanner shows the winning plan (stage names as
// MongoDB's: IDHACK, COLLSCAN, FETCH, IXSCAN, OR, SORT, SKIP, LIMIT,
// PROJECTION_DEFAULT, COUNT, UPDATE, DELETE, EOF) and the rejected
// candidates; executionStats and allPlansExecution also run the read (a
// write is never run: its query part is, as a dry run without locks) and
// report nReturned, totalKeysExamined and totalDocsExamined.
#include <chrono>

#include "engine/index/planner.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/record.h"

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
  int64_t n_returned = 0;
  auto started = std::chrono::steady_clock::now();
  switch (req.kind) {
    case ExplainRequest::Kind::kFind: {
      FindRequest f;
      f.ns = req.ns;
      f.filter = req.filter;
      f.projection = req.projection;
      f.sort = req.sort;
      f.skip = req.skip;
      f.limit = req.limit;
      f.hint = req.hint;
      ASSIGN_OR_RETURN(FindResult r, FindWithStats(f, &stats));
      n_returned = static_cast<int64_t>(r.docs.size());
      if (stats.plan.empty()) break;
      if (req.skip > 0) stats.plan = Wrap("SKIP", stats.plan.bson(), "skipAmount", req.skip);
      if (req.limit > 0) stats.plan = Wrap("LIMIT", stats.plan.bson(), "limitAmount", req.limit);
      if (!req.projection.empty()) {
        stats.plan = Wrap("PROJECTION_DEFAULT", stats.plan.bson(), nullptr, 0, req.projection.bson(), "transformBy");
      }
      break;
    }
    case ExplainRequest::Kind::kCount: {
      CountRequest c;
      c.ns = req.ns;
      c.query = req.filter;
      c.skip = req.skip;
      c.limit = req.limit;
      c.hint = req.hint;
      ASSIGN_OR_RETURN(int64_t n, CountWithStats(c, &stats));
      (void)n;
      if (!stats.plan.empty()) stats.plan = Wrap("COUNT", stats.plan.bson());
      break;
    }
    case ExplainRequest::Kind::kDistinct: {
      DistinctRequest d;
      d.ns = req.ns;
      d.key = req.distinct_key;
      d.query = req.filter;
      ASSIGN_OR_RETURN(std::vector<Value> values, DistinctWithStats(d, &stats));
      n_returned = static_cast<int64_t>(values.size());
      break;
    }
    case ExplainRequest::Kind::kUpdate:
    case ExplainRequest::Kind::kDelete:
    case ExplainRequest::Kind::kFindAndModify: {
      RETURN_IF_ERROR(ValidateNamespace(req.ns));
      ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.filter.bson()));
      std::optional<index::Hint> hint;
      if (req.hint) {
        ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(req.hint->get()));
        hint = std::move(h);
      }
      std::shared_ptr<Collection> coll = FindCollection(req.ns);
      if (!coll) break;
      int64_t matched = 0;
      const bool one = !req.multi;
      RETURN_IF_ERROR(ForEachCandidate(*coll, req.filter.bson(), nullptr, hint ? &*hint : nullptr, nullptr, &stats,
                                       nullptr, [&](std::string_view, const RecordView& rec) {
                                         if (matcher->Matches(&rec.doc)) ++matched;
                                         return !(one && matched > 0);
                                       }));
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
  BSON_APPEND_UTF8(&qp, "namespace", req.ns.full().c_str());
  BSON_APPEND_BOOL(&qp, "indexFilterSet", false);
  BSON_APPEND_DOCUMENT(&qp, "parsedQuery", req.filter.bson());
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
