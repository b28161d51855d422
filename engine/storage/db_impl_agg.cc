// DBImpl: aggregate.  The pipeline's leading $match / $sort / $limit become
// a find (so they use the query planner and its indexes); the rest of the
// stages (engine/agg) pull from that find's cursor source a batch at a time.
// AggregateHost is the pipeline's way to other collections: $lookup reads
// at the snapshot the aggregate's own find reads (outside a transaction, a
// RocksDB snapshot the aggregate holds), and $out and $merge write through
// Update, Insert and Delete: the write gate, per document.
#include <cstring>
#include <limits>

#include "engine/agg/pipeline.h"
#include "engine/agg/stage.h"
#include "engine/document/bson_compare.h"
#include "engine/index/index_spec.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"

namespace gatedb {

namespace {

// A find's cursor source as the pipeline's input stream.  Every stage's
// input comes through one, so it is where the aggregate's maxTimeMS is
// checked: *deadline (steady ms, 0: none) is the current batch's.
class FindStream : public agg::DocStream {
 public:
  FindStream(std::unique_ptr<CursorSource> find, const int64_t* deadline)
      : find_(std::move(find)), deadline_(deadline) {}
  StatusOr<bool> Next(Document* out) override {
    if (*deadline_ > 0 && (++ticks_ & 63) == 0 && SteadyNowMs() > *deadline_) {
      return Status(ErrorCode::kMaxTimeMSExpired, "operation exceeded time limit");
    }
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
  const int64_t* deadline_;
  uint32_t ticks_ = 0;
  CursorBatch batch_;
  size_t pos_ = 0;
};

// The first write error of a write result, as the aggregate's error.
Status FirstWriteError(const std::vector<WriteError>& errors) {
  return errors.empty() ? Status::OK() : errors.front().status;
}

// `doc` without its top-level field `field` (the store-owned version).
Document Without(const Document& doc, const std::string& field) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc.bson(), field.c_str())) return doc;
  bson_t* o = bson_new();
  bson_copy_to_excluding_noinit(doc.bson(), o, field.c_str(), nullptr);
  return Document::Adopt(o);
}

}  // namespace

class DBImpl::AggregateHost : public agg::Host {
 public:
  AggregateHost(DBImpl* db, const AggregateRequest& req) : db_(db), scope_(req.scope), write_(req.write) {
    write_.scope = nullptr;
    write_.context.write_seq.reset();  // each write is its own, never a keyed replay
    write_.command = nullptr;
    if (scope_ == nullptr) snapshot_ = db_->db_->GetSnapshot();
  }
  ~AggregateHost() override {
    if (snapshot_ != nullptr) db_->db_->ReleaseSnapshot(snapshot_);
  }
  AggregateHost(const AggregateHost&) = delete;
  AggregateHost& operator=(const AggregateHost&) = delete;

  const rocksdb::Snapshot* snapshot() const { return snapshot_; }
  // The steady-clock time past which reads fail with MaxTimeMSExpired (0:
  // none); the aggregate sets it for each batch.
  int64_t* deadline() { return &deadline_; }
  void set_db(std::string db) { dbname_ = std::move(db); }
  void set_allow_disk_use(bool b) { allow_disk_use_ = b; }

  StatusOr<std::unique_ptr<agg::DocStream>> Read(const std::string& coll, const agg::LeadingQuery& q) override {
    // Every collection a pipeline reads ($lookup's, $unionWith's, ...) is
    // the caller's to read; its writes ($out, $merge) pass the gate.
    if (write_.principal) {
      RETURN_IF_ERROR(write_.principal->Check(auth::Action::kFind, auth::Target::Collection(dbname_, coll),
                                              "find in " + dbname_ + "." + coll));
    }
    FindRequest find;
    find.ns = Namespace{dbname_, coll};
    find.filter = q.filter;
    find.sort = q.sort;
    find.limit = q.limit;
    find.scope = scope_;
    find.snapshot = snapshot_;
    find.allow_disk_use = allow_disk_use_;
    ASSIGN_OR_RETURN(std::unique_ptr<CursorSource> source, db_->OpenFind(find));
    return std::unique_ptr<agg::DocStream>(std::make_unique<FindStream>(std::move(source), &deadline_));
  }

  Status ReplaceContents(const std::string& dbname, const std::string& coll, agg::DocStream* by_id) override {
    const Namespace ns{dbname, coll};
    RETURN_IF_ERROR(ValidateNamespace(ns));
    // The target's documents in _id order, as they are now (a scan of its
    // own: what $out writes is not read back).
    std::shared_ptr<Collection> target = db_->FindCollection(ns);
    std::unique_ptr<PlanExecutor> scan;
    if (target) {
      bson_t all = BSON_INITIALIZER;
      ASSIGN_OR_RETURN(scan, db_->OpenPlan(*target, &all, nullptr, nullptr, nullptr, nullptr, nullptr));
    }
    const std::string version_field = target ? target->opts()->version_field : std::string("version");
    UpdateRequest upserts;
    DeleteRequest deletes;
    upserts.ns = deletes.ns = ns;
    upserts.write = deletes.write = write_;
    auto flush = [&]() -> Status {
      if (!upserts.updates.empty()) {
        ASSIGN_OR_RETURN(UpdateWriteResult r, db_->Update(upserts));
        RETURN_IF_ERROR(FirstWriteError(r.write_errors));
        upserts.updates.clear();
      }
      if (!deletes.deletes.empty()) {
        ASSIGN_OR_RETURN(DeleteWriteResult r, db_->Delete(deletes));
        RETURN_IF_ERROR(FirstWriteError(r.write_errors));
        deletes.deletes.clear();
      }
      return Status::OK();
    };
    Document out, prev;
    bool have_out = false, have_prev = false, have_target = false;
    bson_value_t out_id, target_id, prev_id;
    std::string_view key;
    RecordView rec;
    Document target_id_holder;
    auto next_out = [&]() -> Status {
      if (have_out) {
        prev = std::move(out);
        have_prev = true;
      }
      ASSIGN_OR_RETURN(have_out, by_id->Next(&out));
      if (!have_out) return Status::OK();
      GetId(out.bson(), &out_id);
      if (have_prev) {
        GetId(prev.bson(), &prev_id);
        if (CompareValues(prev_id, out_id) == 0) {
          return Status(ErrorCode::kDuplicateKey, "E11000 duplicate key error collection: " + ns.full() +
                                                      " index: _id_ (two results of $out have one _id)");
        }
      }
      return Status::OK();
    };
    auto next_target = [&]() -> Status {
      if (!scan) return Status::OK();
      ASSIGN_OR_RETURN(have_target, scan->Next(&key, &rec));
      if (have_target) {
        target_id_holder = Document::Copy(&rec.doc);  // rec is valid until the next call only
        GetId(target_id_holder.bson(), &target_id);
      }
      return Status::OK();
    };
    RETURN_IF_ERROR(next_out());
    RETURN_IF_ERROR(next_target());
    while (have_out || have_target) {
      const int cmp = !have_target ? -1 : !have_out ? 1 : CompareValues(out_id, target_id);
      if (cmp <= 0) {
        UpdateStatement st;
        bson_t* q = bson_new();
        bson_append_value(q, "_id", 3, &out_id);
        st.q = Document::Adopt(q);
        st.u = Without(out, version_field);
        st.upsert = true;
        upserts.updates.push_back(std::move(st));
        RETURN_IF_ERROR(next_out());
        if (cmp == 0) RETURN_IF_ERROR(next_target());
      } else {
        DeleteStatement st;
        bson_t* q = bson_new();
        bson_append_value(q, "_id", 3, &target_id);
        st.q = Document::Adopt(q);
        st.limit = 1;
        deletes.deletes.push_back(std::move(st));
        RETURN_IF_ERROR(next_target());
      }
      if (upserts.updates.size() + deletes.deletes.size() >= kWriteBatch) RETURN_IF_ERROR(flush());
    }
    RETURN_IF_ERROR(flush());
    if (!target) {
      // An empty result still leaves the collection, as MongoDB's $out does.
      Status s = db_->CreateCollection(ns, CollectionOptions());
      if (!s.ok() && s.code() != ErrorCode::kNamespaceExists) return s;
    }
    return Status::OK();
  }

  Status Merge(const agg::MergeSpec& spec, std::vector<Document>* docs) override {
    const Namespace ns{spec.db, spec.coll};
    RETURN_IF_ERROR(ValidateNamespace(ns));
    std::shared_ptr<Collection> target = db_->FindCollection(ns);
    const std::string version_field = target ? target->opts()->version_field : std::string("version");
    using Matched = agg::MergeSpec::Matched;
    using NotMatched = agg::MergeSpec::NotMatched;
    if (spec.when_matched == Matched::kFail) {
      // Insert: an existing match is a duplicate key (of _id, or of the
      // unique index on `on`).
      InsertRequest ins;
      ins.ns = ns;
      ins.write = write_;
      for (Document& d : *docs) ins.documents.push_back(Without(d, version_field));
      ASSIGN_OR_RETURN(InsertResult r, db_->Insert(ins));
      return FirstWriteError(r.write_errors);
    }
    if (spec.when_matched == Matched::kKeepExisting && spec.when_not_matched == NotMatched::kDiscard) {
      return Status::OK();  // nothing to write either way
    }
    UpdateRequest up;
    up.ns = ns;
    up.write = write_;
    for (Document& d : *docs) {
      UpdateStatement st;
      bson_t* q = bson_new();
      for (const std::string& f : spec.on) {
        bson_iter_t it, v;
        if (bson_iter_init(&it, d.bson()) && bson_iter_find_descendant(&it, f.c_str(), &v)) {
          bson_append_value(q, f.c_str(), -1, bson_iter_value(&v));
        }
      }
      st.q = Document::Adopt(q);
      Document body = Without(d, version_field);
      if (spec.when_matched == Matched::kReplace) {
        st.u = std::move(body);
      } else {
        bson_t* u = bson_new();
        BSON_APPEND_DOCUMENT(u, spec.when_matched == Matched::kMerge ? "$set" : "$setOnInsert", body.bson());
        st.u = Document::Adopt(u);
      }
      st.upsert = spec.when_not_matched == NotMatched::kInsert;
      up.updates.push_back(std::move(st));
    }
    ASSIGN_OR_RETURN(UpdateWriteResult r, db_->Update(up));
    RETURN_IF_ERROR(FirstWriteError(r.write_errors));
    if (spec.when_not_matched == NotMatched::kFail && r.n < static_cast<int64_t>(docs->size())) {
      return Status(ErrorCode::kMergeStageNoMatchingDocument,
                    "$merge could not find a matching document in the target collection for at least one "
                    "document in the source collection");
    }
    return Status::OK();
  }

  StatusOr<bool> HasUniqueIndexOn(const std::string& dbname, const std::string& coll,
                                  const std::vector<std::string>& fields) override {
    std::shared_ptr<Collection> target = db_->FindCollection(Namespace{dbname, coll});
    if (!target) return false;
    std::shared_ptr<const IndexCatalog> cat = target->indexes();
    for (const auto& e : cat->entries) {
      const index::IndexSpec& spec = e->spec;
      if (!spec.ready || !spec.unique || spec.has_partial_filter() || spec.fields.size() != fields.size()) continue;
      bool all = true;
      for (const std::string& f : fields) {
        bool found = false;
        for (const index::IndexField& k : spec.fields) found = found || k.path == f;
        all = all && found;
      }
      if (all) return true;
    }
    return false;
  }

 private:
  static constexpr size_t kWriteBatch = 256;
  DBImpl* db_;
  WriteScope* scope_;
  WriteOptionsInternal write_;
  const rocksdb::Snapshot* snapshot_ = nullptr;
  int64_t deadline_ = 0;
  std::string dbname_;
  bool allow_disk_use_ = false;
};

class DBImpl::AggregateSource : public CursorSource {
 public:
  explicit AggregateSource(DBImpl* db) : db_(db) {}

  // Parses the pipeline; `leading` gets its find part.
  Status Parse(const AggregateRequest& req, FindRequest* leading) {
    RETURN_IF_ERROR(ValidateNamespace(req.ns));
    // A leading $collStats is the pipeline's source: one document about the
    // collection; the rest of the pipeline runs over it.
    Document rest;
    const bson_t* stages = req.pipeline.bson();
    {
      bson_iter_t it, st;
      if (bson_iter_init(&it, stages) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
          bson_iter_recurse(&it, &st) && bson_iter_next(&st) && std::strcmp(bson_iter_key(&st), "$collStats") == 0) {
        ASSIGN_OR_RETURN(Document stats, CollStatsDocument(req.ns, &st));
        collstats_.push_back(std::move(stats));
        bson_t* tail = bson_new();
        uint32_t i = 0;
        char keybuf[16];
        while (bson_iter_next(&it)) {
          const char* k;
          size_t klen = bson_uint32_to_string(i++, &k, keybuf, sizeof keybuf);
          bson_append_iter(tail, k, static_cast<int>(klen), &it);
        }
        rest = Document::Adopt(tail);
        stages = rest.bson();
      }
    }
    host_ = std::make_unique<AggregateHost>(db_, req);
    host_->set_db(req.ns.db);
    host_->set_allow_disk_use(req.allow_disk_use);
    agg::PipelineOptions opts;
    opts.allow_disk_use = req.allow_disk_use;
    opts.temp_dir = db_->TempDir();
    opts.max_memory_bytes = db_->options_.sort_memory_bytes;
    opts.now_ms = db_->NowMs();
    opts.host = host_.get();
    opts.in_transaction = req.scope != nullptr;
    opts.db = req.ns.db;
    if (!req.let.empty()) RETURN_IF_ERROR(agg::BindLet(req.let.bson(), &opts));
    ASSIGN_OR_RETURN(pipeline_, agg::Pipeline::Parse(stages, opts));
    agg::LeadingQuery q = pipeline_->TakeLeadingQuery();
    leading->ns = req.ns;
    leading->filter = std::move(q.filter);
    leading->sort = std::move(q.sort);
    leading->limit = q.limit;
    leading->hint = req.hint;
    leading->scope = req.scope;
    leading->snapshot = host_->snapshot();
    leading->allow_disk_use = req.allow_disk_use;
    // The time limit is the whole pipeline's (NextBatch), not the find's.
    max_time_ms_ = req.max_time_ms;
    if (max_time_ms_ < 0) return Status(ErrorCode::kBadValue, "maxTimeMS must be non-negative");
    return Status::OK();
  }

  Status Open(const AggregateRequest& req) {
    FindRequest find;
    RETURN_IF_ERROR(Parse(req, &find));
    if (!collstats_.empty()) {
      // The stages after $collStats run over its one document; a $match
      // right behind it was taken as the leading query: apply it here (a
      // sort or limit of one document changes nothing).
      if (!find.filter.empty()) {
        ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> m, query::Matcher::Parse(find.filter.bson()));
        if (!m->Matches(collstats_[0].bson())) collstats_.clear();
      }
      pipeline_->SetSource(std::make_unique<agg::VectorStream>(&collstats_));
      return Status::OK();
    }
    ASSIGN_OR_RETURN(std::unique_ptr<CursorSource> source, db_->OpenFind(find));
    pipeline_->SetSource(std::make_unique<FindStream>(std::move(source), host_->deadline()));
    return Status::OK();
  }

  Status NextBatch(int64_t max_docs, size_t max_bytes, CursorBatch* out) override {
    if (done_ || max_time_ms_ == 0) return Fill(max_docs, max_bytes, out);
    const int64_t started = SteadyNowMs();
    *host_->deadline() = started + (max_time_ms_ - time_used_ms_);
    Status s = Fill(max_docs, max_bytes, out);
    time_used_ms_ += SteadyNowMs() - started;
    if (host_) *host_->deadline() = 0;
    return s;
  }

  bool exhausted() const override { return done_ && !pending_; }

  // $collStats: {storageStats: {scale}, count: {}}; latencyStats and
  // queryExecStats (which need per-operation counters gatedb does not keep)
  // are refused by name.
  StatusOr<Document> CollStatsDocument(const Namespace& ns, bson_iter_t* spec) {
    if (!BSON_ITER_HOLDS_DOCUMENT(spec)) {
      return Status(ErrorCode::kTypeMismatch, "$collStats must take a nested object");
    }
    bool storage = false, count = false;
    int64_t scale = 1;
    bson_iter_t f;
    bson_iter_recurse(spec, &f);
    while (bson_iter_next(&f)) {
      std::string_view k = bson_iter_key(&f);
      if (k == "storageStats") {
        storage = true;
        bson_iter_t o;
        if (BSON_ITER_HOLDS_DOCUMENT(&f) && bson_iter_recurse(&f, &o) && bson_iter_find(&o, "scale")) {
          if (!BSON_ITER_HOLDS_NUMBER(&o) || bson_iter_as_int64(&o) <= 0) {
            return Status(ErrorCode::kBadValue, "scale factor must be a positive number");
          }
          scale = bson_iter_as_int64(&o);
        }
      } else if (k == "count") {
        count = true;
      } else if (k == "latencyStats" || k == "queryExecStats") {
        return Status(ErrorCode::kBadValue, "$collStats " + std::string(k) + " is not supported by gatedb");
      } else {
        return Status(ErrorCode::kLocation40415, "BSON field '$collStats." + std::string(k) + "' is an unknown field.");
      }
    }
    ASSIGN_OR_RETURN(CollectionStatsResult st, db_->CollectionStats(ns));
    bson_t* out = bson_new();
    BSON_APPEND_UTF8(out, "ns", ns.full().c_str());
    BSON_APPEND_DATE_TIME(out, "localTime", db_->NowMs());
    if (storage) {
      bson_t ss;
      BSON_APPEND_DOCUMENT_BEGIN(out, "storageStats", &ss);
      AppendStorageStats(st, scale, &ss);
      bson_append_document_end(out, &ss);
    }
    if (count) {
      bson_t c;
      BSON_APPEND_DOCUMENT_BEGIN(out, "count", &c);
      BSON_APPEND_INT64(&c, "count", st.count);
      bson_append_document_end(out, &c);
    }
    return Document::Adopt(out);
  }

  agg::Pipeline* pipeline() { return pipeline_.get(); }

 private:
  Status Fill(int64_t max_docs, size_t max_bytes, CursorBatch* out) {
    const size_t first = out->docs.size();
    while (max_docs == 0 || static_cast<int64_t>(out->docs.size() - first) < max_docs) {
      if (!pending_) {
        if (done_) break;
        Status s;
        StatusOr<bool> more = pipeline_->Next(&pending_doc_);
        if (!more.ok()) {
          Finish();
          return more.status();
        }
        if (!*more) {
          Finish();  // releases the snapshot and any spill files now
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

  void Finish() {
    done_ = true;
    pipeline_.reset();  // before the host: its reads hold the host's snapshot
    host_.reset();
  }

  DBImpl* db_;
  std::unique_ptr<AggregateHost> host_;  // declared before pipeline_: destroyed after it
  std::unique_ptr<agg::Pipeline> pipeline_;
  std::vector<Document> collstats_;  // $collStats' one document, when it leads
  bool done_ = false;
  bool pending_ = false;
  Document pending_doc_;
  int64_t max_time_ms_ = 0, time_used_ms_ = 0;
};

bool IsChangeStreamPipeline(const Document& pipeline);  // db_impl_change_stream.cc

namespace {

// {aggregate: 1} with a pipeline that needs a collection: MongoDB's error.
Status NeedsCollection(const Document& pipeline) {
  std::string first = "$match";
  bson_iter_t it, stage;
  if (bson_iter_init(&it, pipeline.bson()) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      bson_iter_recurse(&it, &stage) && bson_iter_next(&stage)) {
    first = bson_iter_key(&stage);
  }
  return Status(ErrorCode::kInvalidNamespace,
                "{aggregate: 1} is not valid for '" + first + "'; a collection is required.");
}

}  // namespace

StatusOr<CursorPage> DBImpl::AggregatePage(const AggregateRequest& req, const CursorRequest& page) {
  if (IsChangeStreamPipeline(req.pipeline)) return ChangeStreamPage(req, page);
  if (req.collectionless) return NeedsCollection(req.pipeline);
  auto source = std::make_unique<AggregateSource>(this);
  RETURN_IF_ERROR(source->Open(req));
  if (source->pipeline()->writes()) {
    // $out and $merge write now, whatever the batch size; their cursor is
    // empty.
    CursorBatch none;
    RETURN_IF_ERROR(source->NextBatch(0, std::numeric_limits<size_t>::max(), &none));
  }
  return FirstPage(std::move(source), req.ns.full(), page);
}

StatusOr<Document> DBImpl::ExplainAggregate(const AggregateRequest& req, const std::string& verbosity) {
  if (IsChangeStreamPipeline(req.pipeline)) {
    return Status(ErrorCode::kIllegalOperation, "explain of a $changeStream pipeline is not supported by gatedb");
  }
  if (req.collectionless) return NeedsCollection(req.pipeline);
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
    const std::string index = std::to_string(i++);  // the macro reads its key twice
    BSON_APPEND_VALUE(&stages, index.c_str(), bson_iter_value(&it));
  }
  bson_destroy(&rest);
  bson_append_array_end(out, &stages);
  return Document::Adopt(out);
}

}  // namespace gatedb
