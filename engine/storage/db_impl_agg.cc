// DBImpl: aggregate.  The pipeline's leading $match / $sort / $limit become
// a find (so they use the query planner and its indexes); the rest of the
// stages (engine/agg) pull from that find's cursor source a batch at a time.
#include <limits>

#include "engine/agg/pipeline.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"

namespace gatedb {

namespace {

// A find's cursor source as the pipeline's input stream.
class FindStream : public agg::DocStream {
 public:
  explicit FindStream(std::unique_ptr<CursorSource> find) : find_(std::move(find)) {}
  StatusOr<bool> Next(Document* out) override {
    if (pos_ == batch_.docs.size()) {
      if (find_->exhausted()) return false;
      batch_ = CursorBatch();
      pos_ = 0;
      RETURN_IF_ERROR(find_->NextBatch(kPull, kMaxBatchBytes, &batch_));
      if (batch_.docs.empty()) return false;
    }
    *out = std::move(batch_.docs[pos_++]);
    return true;
  }

 private:
  static constexpr int64_t kPull = 64;  // documents per pull from the find
  std::unique_ptr<CursorSource> find_;
  CursorBatch batch_;
  size_t pos_ = 0;
};

}  // namespace

class DBImpl::AggregateSource : public CursorSource {
 public:
  explicit AggregateSource(DBImpl* db) : db_(db) {}

  // Parses the pipeline; `leading` gets its find part.
  Status Parse(const AggregateRequest& req, FindRequest* leading) {
    RETURN_IF_ERROR(ValidateNamespace(req.ns));
    agg::PipelineOptions opts;
    opts.allow_disk_use = req.allow_disk_use;
    opts.temp_dir = db_->TempDir();
    opts.max_memory_bytes = db_->options_.sort_memory_bytes;
    opts.now_ms = db_->NowMs();
    ASSIGN_OR_RETURN(pipeline_, agg::Pipeline::Parse(req.pipeline.bson(), opts));
    agg::LeadingQuery q = pipeline_->TakeLeadingQuery();
    leading->ns = req.ns;
    leading->filter = std::move(q.filter);
    leading->sort = std::move(q.sort);
    leading->limit = q.limit;
    leading->hint = req.hint;
    leading->scope = req.scope;
    leading->allow_disk_use = req.allow_disk_use;
    leading->max_time_ms = req.max_time_ms;
    return Status::OK();
  }

  Status Open(const AggregateRequest& req) {
    FindRequest find;
    RETURN_IF_ERROR(Parse(req, &find));
    ASSIGN_OR_RETURN(std::unique_ptr<CursorSource> source, db_->OpenFind(find));
    pipeline_->SetSource(std::make_unique<FindStream>(std::move(source)));
    return Status::OK();
  }

  Status NextBatch(int64_t max_docs, size_t max_bytes, CursorBatch* out) override {
    const size_t first = out->docs.size();
    while (max_docs == 0 || static_cast<int64_t>(out->docs.size() - first) < max_docs) {
      if (!pending_) {
        if (done_) break;
        Status s;
        StatusOr<bool> more = pipeline_->Next(&pending_doc_);
        if (!more.ok()) {
          done_ = true;
          pipeline_.reset();
          return more.status();
        }
        if (!*more) {
          done_ = true;
          pipeline_.reset();  // releases the find's snapshot and any spill files
          break;
        }
        pending_ = true;
      }
      if (out->docs.size() > first && out->bytes + pending_doc_.size() > max_bytes) break;
      pending_ = false;
      out->bytes += pending_doc_.size();
      out->docs.push_back(std::move(pending_doc_));
    }
    return Status::OK();
  }

  bool exhausted() const override { return done_ && !pending_; }

  agg::Pipeline* pipeline() { return pipeline_.get(); }

 private:
  DBImpl* db_;
  std::unique_ptr<agg::Pipeline> pipeline_;
  bool done_ = false;
  bool pending_ = false;
  Document pending_doc_;
};

StatusOr<CursorPage> DBImpl::AggregatePage(const AggregateRequest& req, const CursorRequest& page) {
  auto source = std::make_unique<AggregateSource>(this);
  RETURN_IF_ERROR(source->Open(req));
  return FirstPage(std::move(source), req.ns.full(), page);
}

StatusOr<Document> DBImpl::ExplainAggregate(const AggregateRequest& req, const std::string& verbosity) {
  AggregateSource source(this);
  ExplainRequest ex;
  RETURN_IF_ERROR(source.Parse(req, &ex.find));
  ex.kind = ExplainRequest::Kind::kFind;
  ex.verbosity = verbosity;
  ASSIGN_OR_RETURN(Document find_plan, Explain(ex));
  bson_t* out = bson_new();
  BSON_APPEND_UTF8(out, "explainVersion", "1");
  bson_t stages, first, cursor;
  BSON_APPEND_ARRAY_BEGIN(out, "stages", &stages);
  BSON_APPEND_DOCUMENT_BEGIN(&stages, "0", &first);
  BSON_APPEND_DOCUMENT_BEGIN(&first, "$cursor", &cursor);
  bson_iter_t it;
  bson_iter_init(&it, find_plan.bson());
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (std::string(key) == "queryPlanner" || std::string(key) == "executionStats") {
      bson_append_value(&cursor, key, -1, bson_iter_value(&it));
    }
  }
  bson_append_document_end(&first, &cursor);
  bson_append_document_end(&stages, &first);
  // The other stages, numbered after $cursor.
  bson_t rest = BSON_INITIALIZER;
  source.pipeline()->Serialize(&rest);
  bson_iter_init(&it, &rest);
  uint32_t i = 1;
  while (bson_iter_next(&it)) {
    BSON_APPEND_VALUE(&stages, std::to_string(i++).c_str(), bson_iter_value(&it));
  }
  bson_destroy(&rest);
  bson_append_array_end(out, &stages);
  return Document::Adopt(out);
}

}  // namespace gatedb
