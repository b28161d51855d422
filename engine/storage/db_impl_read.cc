// DBImpl: the read path (find, count, distinct) and the scans that writes
// use to find their candidates.  Reads take no locks.
#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/document/document_arena.h"
#include "engine/index/planner.h"
#include "engine/keys/key_codec.h"
#include "engine/projection/paths.h"
#include "engine/projection/projection.h"
#include "engine/projection/sort.h"
#include "engine/projection/sorter.h"
#include "engine/storage/cursor.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"
#include "engine/util/rocks_status.h"

namespace gatedb {

namespace {

// Calls fn(key, record) for the document under `key`, if there is one.
template <typename Fn>
Status ForEachPointRead(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* cf, const std::string& key,
                        Txn* txn, Fn&& fn) {
  QuietRocksPerfCounters();
  ReadBuffer<rocksdb::PinnableSlice> buffer;
  rocksdb::PinnableSlice& value = *buffer.get();
  rocksdb::ReadOptions point;
  if (txn) point.snapshot = (*txn)->GetSnapshot();  // null outside snapshot transactions
  rocksdb::Status s = txn ? (*txn)->Get(point, cf, key, &value) : db->Get(point, cf, key, &value);
  if (s.IsNotFound()) return Status::OK();
  RETURN_IF_ERROR(FromRocks(s));
  RecordView rec;
  RETURN_IF_ERROR(DecodeRecord(std::string_view(value.data(), value.size()), &rec));
  fn(key, rec);
  return Status::OK();
}

Status CheckSkipLimit(int64_t skip, int64_t limit, ErrorCode code) {
  if (skip < 0) return Status(code, "skip value must be non-negative, but received: " + std::to_string(skip));
  if (limit < 0) return Status(code, "limit value must be non-negative, but received: " + std::to_string(limit));
  return Status::OK();
}

}  // namespace

Status DBImpl::CandidateKeys(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                             size_t limit, std::vector<std::string>* keys, Txn* txn, const index::Hint* hint) const {
  Status failed;
  RETURN_IF_ERROR(ForEachCandidate(coll, filter, nullptr, hint, txn, nullptr, nullptr,
                                   [&](std::string_view key, const RecordView& rec) {
                                     StatusOr<bool> m = MatchOrError(matcher, &rec.doc);
                                     if (!m.ok()) {
                                       failed = m.status();
                                       return false;
                                     }
                                     if (*m) keys->emplace_back(key);
                                     return limit == 0 || keys->size() < limit;
                                   }));
  return failed;
}

Status DBImpl::MatchingDocs(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                            std::vector<std::pair<std::string, Document>>* out, Txn* txn,
                            const index::Hint* hint) const {
  Status failed;
  internal::DocumentArena arena;
  RETURN_IF_ERROR(ForEachCandidate(coll, filter, nullptr, hint, txn, nullptr, nullptr,
                                   [&](std::string_view key, const RecordView& rec) {
                                     StatusOr<bool> m = MatchOrError(matcher, &rec.doc);
                                     if (!m.ok()) {
                                       failed = m.status();
                                       return false;
                                     }
                                     if (*m) out->emplace_back(std::string(key), arena.Copy(&rec.doc));
                                     return true;
                                   }));
  return failed;
}

StatusOr<std::optional<Document>> DBImpl::FindById(const Namespace& ns, const bson_value_t& id, WriteScope* scope,
                                                   Document* writer) {
  // A collection that exists has a valid name: only a miss needs the check.
  std::shared_ptr<Collection> coll = FindCollection(ns);
  if (!coll) {
    RETURN_IF_ERROR(ValidateNamespace(ns));
    return std::optional<Document>();
  }
  std::optional<Document> out;
  RETURN_IF_ERROR(ForEachPointRead(db_, docs_cf_, keys::EncodeDocKey(coll->info.id, id),
                                   scope != nullptr ? &scope->txn : nullptr,
                                   [&](std::string_view, const RecordView& rec) {
                                     out = Document::Copy(&rec.doc);
                                     if (writer != nullptr && rec.has_writer) {
                                       bson_t w;
                                       rec.Writer(&w);
                                       *writer = Document::Copy(&w);
                                     }
                                   }));
  return out;
}

// find as a cursor source: the plan's candidates, matched, skipped,
// limited, sorted (by the plan's order, or a Sorter), locked when asked,
// projected; one document at a time.
class DBImpl::FindSource : public CursorSource {
 public:
  explicit FindSource(const DBImpl* db) : db_(db) {}

  Status Open(const FindRequest& req, PlanStats* stats) {
    RETURN_IF_ERROR(ValidateNamespace(req.ns));
    RETURN_IF_ERROR(CheckSkipLimit(req.skip, req.limit, ErrorCode::kLocation51024));
    if (req.max_time_ms < 0) return Status(ErrorCode::kBadValue, "maxTimeMS must be non-negative");
    // A plain filter cannot fail to parse: it is parsed after planning, and
    // not at all when the plan's index scan is exact.  Any other is parsed
    // first, so that its errors come before those of the rest.
    const bool plain = index::PlainFilter(req.filter.bson());
    if (!plain) {
      ASSIGN_OR_RETURN(matcher_, ParseFilter(req.filter.bson()));
    }
    ASSIGN_OR_RETURN(proj_, projection::Projection::Parse(req.projection.bson()));
    if (!req.sort.empty()) {
      ASSIGN_OR_RETURN(sort_, projection::SortSpec::Parse(req.sort.bson()));
    }
    std::optional<index::Hint> hint;
    if (req.hint) {
      ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(req.hint->get()));
      hint = std::move(h);
    }
    skip_ = req.skip;
    limit_ = req.limit;
    max_time_ms_ = req.max_time_ms;
    field_versions_ = req.field_versions;
    lock_ = req.lock_documents && req.scope != nullptr;
    coll_ = db_->FindCollection(req.ns);
    if (!coll_) {
      done_ = true;
      return Status::OK();
    }
    txn_ = req.scope ? &req.scope->txn : nullptr;
    RETURN_IF_ERROR(const_cast<DBImpl*>(db_)->CatchUpIndexes(req.scope));
    bool sorted = false;
    ASSIGN_OR_RETURN(exec_, db_->OpenPlan(*coll_, req.filter.bson(), sort_ ? req.sort.bson() : nullptr,
                                          hint ? &*hint : nullptr, txn_, stats, &sorted, req.snapshot));
    // Null for {_id: v} alone (the point read is the whole match) and for
    // an exact plan.
    if (plain && !exec_->exact()) {
      ASSIGN_OR_RETURN(matcher_, ParseFilter(req.filter.bson()));
    }
    if (sort_ && !sorted) {
      projection::SorterOptions so;
      so.max_memory_bytes = db_->options_.sort_memory_bytes;
      so.allow_disk_use = req.allow_disk_use;
      so.temp_dir = db_->TempDir();
      // Top-k: only skip + limit rows can ever be returned.
      if (limit_ > 0 && skip_ <= std::numeric_limits<int64_t>::max() - limit_) so.limit = skip_ + limit_;
      sorter_ = std::make_unique<projection::Sorter>(sort_.get(), so);
      blocking_sort_ = true;
    }
    return Status::OK();
  }

  // The plan does not give the sort's order: a Sorter does.
  bool blocking_sort() const { return blocking_sort_; }

  Status NextBatch(int64_t max_docs, size_t max_bytes, CursorBatch* out) override {
    const int64_t started = SteadyNowMs();
    const int64_t deadline = max_time_ms_ > 0 ? started + (max_time_ms_ - time_used_ms_) : 0;
    Status s = FillBatch(max_docs, max_bytes, deadline, out);
    time_used_ms_ += SteadyNowMs() - started;
    if (!s.ok()) Close();
    return s;
  }

  bool exhausted() const override { return done_ && !pending_; }

 private:
  Status FillBatch(int64_t max_docs, size_t max_bytes, int64_t deadline, CursorBatch* out) {
    const size_t first = out->docs.size();
    if (first == 0) out->docs.reserve(max_docs > 0 ? std::min<int64_t>(max_docs, kReserveDocs) : kReserveDocs);
    while (max_docs == 0 || static_cast<int64_t>(out->docs.size() - first) < max_docs) {
      if (!pending_) {
        ASSIGN_OR_RETURN(bool more, NextDoc(deadline));
        if (!more) break;
      }
      if (out->docs.size() > first && out->bytes + pending_doc_.size() > max_bytes) break;  // the next batch's
      pending_ = false;
      out->bytes += pending_doc_.size();
      out->docs.push_back(std::move(pending_doc_));
      if (field_versions_) out->field_versions.push_back(std::move(pending_versions_));
    }
    return Status::OK();
  }

  // Produces the next result into pending_doc_ (and pending_versions_).
  StatusOr<bool> NextDoc(int64_t deadline) {
    if (done_) return false;
    if (limit_ > 0 && returned_ >= limit_) {
      Close();
      return false;
    }
    if (sorter_ != nullptr && !sorted_) RETURN_IF_ERROR(FillSorter(deadline));
    for (;;) {
      if (deadline > 0 && (++ticks_ & 255) == 0 && SteadyNowMs() > deadline) return TimeLimitExceeded();
      Document doc;
      std::string extra;     // the sorter's row: holds the key
      std::string_view key;  // the document's key, for Lock
      Document versions;
      if (sorter_ != nullptr) {
        ASSIGN_OR_RETURN(bool more, sorter_->Next(&doc, &extra));
        if (!more) {
          Close();
          return false;
        }
        // extra: u32 key size, key, field versions' BSON (when asked).
        uint32_t n = 0;
        std::memcpy(&n, extra.data(), sizeof n);
        key = std::string_view(extra).substr(sizeof n, n);
        if (extra.size() > sizeof n + n) {
          StatusOr<Document> v = Document::FromBytes(reinterpret_cast<const uint8_t*>(extra.data()) + sizeof n + n,
                                                     extra.size() - sizeof n - n);
          if (v.ok()) versions = std::move(*v);
        }
      } else {
        std::string_view k;
        RecordView rec;
        ASSIGN_OR_RETURN(bool more, exec_->Next(&k, &rec));
        if (!more) {
          Close();
          return false;
        }
        if (matcher_) {
          ASSIGN_OR_RETURN(bool match, Match(&rec.doc));
          if (!match) continue;
        }
        if (skipped_ < skip_) {
          ++skipped_;
          continue;
        }
        doc = arena_.Copy(&rec.doc);
        key = k;
        if (field_versions_ && rec.has_field_versions) versions = Document::Copy(&rec.field_versions);
      }
      if (sorter_ != nullptr && skipped_ < skip_) {
        ++skipped_;
        continue;
      }
      if (lock_) RETURN_IF_ERROR(Lock(key));
      ++returned_;
      if (limit_ > 0 && returned_ >= limit_) Close();  // the last one: no cursor left open for it
      if (proj_->is_identity()) {
        pending_doc_ = std::move(doc);
      } else {
        bson_t* projected = bson_new();
        proj_->Apply(doc.bson(), projected);
        pending_doc_ = Document::Adopt(projected);
      }
      pending_versions_ = std::move(versions);
      pending_ = true;
      return true;
    }
  }

  Status FillSorter(int64_t deadline) {
    std::string_view k;
    RecordView rec;
    for (;;) {
      if (deadline > 0 && (++ticks_ & 255) == 0 && SteadyNowMs() > deadline) return TimeLimitExceeded();
      ASSIGN_OR_RETURN(bool more, exec_->Next(&k, &rec));
      if (!more) break;
      if (matcher_) {
        ASSIGN_OR_RETURN(bool match, Match(&rec.doc));
        if (!match) continue;
      }
      std::string extra;
      uint32_t n = static_cast<uint32_t>(k.size());
      extra.append(reinterpret_cast<const char*>(&n), sizeof n);
      extra.append(k);
      if (field_versions_ && rec.has_field_versions) {
        extra.append(reinterpret_cast<const char*>(bson_get_data(&rec.field_versions)), rec.field_versions.len);
      }
      RETURN_IF_ERROR(sorter_->Add(Document::Copy(&rec.doc), std::move(extra)));
    }
    exec_.reset();  // the rows are in the sorter: release the snapshot
    sorted_ = true;
    return sorter_->Finish();
  }

  // $expr's evaluation errors fail the query, as in MongoDB.
  StatusOr<bool> Match(const bson_t* doc) {
    return MatchOrError(*matcher_, doc);
  }

  // A locking read takes each returned document into the write set.
  Status Lock(std::string_view key) {
    if (!lock_) return Status::OK();
    std::string ignored;
    rocksdb::ReadOptions ro;
    ro.snapshot = (*txn_)->GetSnapshot();
    rocksdb::Status s = (*txn_)->GetForUpdate(ro, db_->docs_cf_, rocksdb::Slice(key.data(), key.size()), &ignored);
    if (s.IsNotFound()) return Status::OK();
    return FromRocks(s);
  }

  Status TimeLimitExceeded() { return Status(ErrorCode::kMaxTimeMSExpired, "operation exceeded time limit"); }

  void Close() {
    done_ = true;
    exec_.reset();
    sorter_.reset();
  }

  const DBImpl* db_;
  std::unique_ptr<query::Matcher> matcher_;
  std::unique_ptr<projection::Projection> proj_;
  std::unique_ptr<projection::SortSpec> sort_;
  std::shared_ptr<Collection> coll_;
  Txn* txn_ = nullptr;
  std::unique_ptr<PlanExecutor> exec_;
  std::unique_ptr<projection::Sorter> sorter_;
  bool sorted_ = false;
  bool blocking_sort_ = false;
  int64_t skip_ = 0, limit_ = 0, skipped_ = 0, returned_ = 0;
  int64_t max_time_ms_ = 0, time_used_ms_ = 0;
  uint32_t ticks_ = 0;
  bool field_versions_ = false;
  bool lock_ = false;
  bool done_ = false;
  bool pending_ = false;
  Document pending_doc_;
  Document pending_versions_;
  static constexpr int64_t kReserveDocs = 16;  // a batch's first allocation
  internal::DocumentArena arena_;  // the results' copies (the sorter's rows are not: a top-k would keep few of many)
};

StatusOr<FindResult> DBImpl::Find(const FindRequest& req) { return FindWithStats(req, nullptr); }

StatusOr<FindResult> DBImpl::FindWithStats(const FindRequest& req, PlanStats* stats) {
  FindSource source(this);
  RETURN_IF_ERROR(source.Open(req, stats));
  CursorBatch batch;
  if (stats == nullptr || !stats->plan_only) {
    RETURN_IF_ERROR(source.NextBatch(0, std::numeric_limits<size_t>::max(), &batch));
  }
  if (stats && source.blocking_sort() && !stats->plan.empty()) {
    bson_t* st = bson_new();
    BSON_APPEND_UTF8(st, "stage", "SORT");
    BSON_APPEND_DOCUMENT(st, "sortPattern", req.sort.bson());
    BSON_APPEND_UTF8(st, "type", "simple");
    BSON_APPEND_DOCUMENT(st, "inputStage", stats->plan.bson());
    stats->plan = Document::Adopt(st);
  }
  FindResult result;
  result.docs = std::move(batch.docs);
  result.field_versions = std::move(batch.field_versions);
  return result;
}

StatusOr<std::unique_ptr<CursorSource>> DBImpl::OpenFind(const FindRequest& req) {
  auto source = std::make_unique<FindSource>(this);
  RETURN_IF_ERROR(source->Open(req, nullptr));
  return std::unique_ptr<CursorSource>(std::move(source));
}

StatusOr<CursorPage> DBImpl::FindPage(const FindRequest& req, const CursorRequest& page) {
  ASSIGN_OR_RETURN(std::unique_ptr<CursorSource> source, OpenFind(req));
  return FirstPage(std::move(source), req.ns.full(), page);
}

StatusOr<CursorPage> DBImpl::FirstPage(std::unique_ptr<CursorSource> source, std::string ns,
                                       const CursorRequest& page) {
  CursorPage out;
  out.ns = ns;
  if (!page.empty_first_batch) RETURN_IF_ERROR(source->NextBatch(page.batch_size, kMaxBatchBytes, &out.batch));
  if (source->exhausted() || page.single_batch) return out;
  CursorRegistry::Owner owner{page.session, page.scope};
  CursorRegistry::Lease lease = cursors_->Register(std::move(source), std::move(ns), owner, SteadyNowMs());
  if (page.scope != nullptr) page.scope->cursors = cursors_.get();
  out.cursor_id = lease.Return();
  return out;
}

StatusOr<CursorPage> DBImpl::GetMore(int64_t id, const std::string& ns, const CursorRequest& page) {
  CursorRegistry::Owner owner{page.session, page.scope};
  ASSIGN_OR_RETURN(CursorRegistry::Lease lease, cursors_->Checkout(id, ns, owner, SteadyNowMs()));
  CursorPage out;
  out.ns = ns;
  if (page.max_await_ms >= 0) {
    if (!lease.source()->tailable()) {
      lease.Return();
      return Status(ErrorCode::kBadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor");
    }
    lease.source()->SetAwaitTime(page.no_wait ? 0 : page.max_await_ms);
  } else if (page.no_wait && lease.source()->tailable()) {
    lease.source()->SetAwaitTime(0);
  }
  // An error kills the cursor (the lease is dropped unreturned).
  RETURN_IF_ERROR(lease.source()->NextBatch(page.batch_size, kMaxBatchBytes, &out.batch));
  out.cursor_id = lease.Return();
  return out;
}

KillCursorsResult DBImpl::KillCursors(const std::string& ns, const std::vector<int64_t>& ids) {
  KillCursorsResult r;
  for (int64_t id : ids) {
    if (cursors_->Kill(id, ns)) {
      r.killed.push_back(id);
    } else {
      r.not_found.push_back(id);
    }
  }
  return r;
}

StatusOr<int64_t> DBImpl::Count(const CountRequest& req) { return CountWithStats(req, nullptr); }

StatusOr<int64_t> DBImpl::CountWithStats(const CountRequest& req, PlanStats* stats) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  RETURN_IF_ERROR(CheckSkipLimit(req.skip, req.limit < 0 ? -req.limit : req.limit, ErrorCode::kFailedToParse));
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.query.bson()));
  std::optional<index::Hint> hint;
  if (req.hint) {
    ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(req.hint->get()));
    hint = std::move(h);
  }
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return int64_t{0};
  RETURN_IF_ERROR(CatchUpIndexes(req.scope));
  int64_t limit = req.limit < 0 ? -req.limit : req.limit;
  int64_t matched = 0;
  Status failed;
  RETURN_IF_ERROR(ForEachCandidate(*coll, req.query.bson(), nullptr, hint ? &*hint : nullptr,
                                   req.scope ? &req.scope->txn : nullptr, stats, nullptr,
                                   [&](std::string_view, const RecordView& rec) {
                                     StatusOr<bool> m = MatchOrError(*matcher, &rec.doc);
                                     if (!m.ok()) {
                                       failed = m.status();
                                       return false;
                                     }
                                     if (*m) ++matched;
                                     return limit == 0 || matched < req.skip + limit;
                                   }));
  RETURN_IF_ERROR(failed);
  int64_t n = std::max<int64_t>(0, matched - req.skip);
  return limit == 0 ? n : std::min(n, limit);
}

StatusOr<std::vector<Value>> DBImpl::Distinct(const DistinctRequest& req) { return DistinctWithStats(req, nullptr); }

StatusOr<std::vector<Value>> DBImpl::DistinctWithStats(const DistinctRequest& req, PlanStats* stats) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  if (req.key.empty()) return Status(ErrorCode::kBadValue, "distinct key must not be empty");
  if (req.key[0] == '$') return Status(ErrorCode::kBadValue, "distinct key must not start with '$'");
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.query.bson()));
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return std::vector<Value>();
  RETURN_IF_ERROR(CatchUpIndexes(req.scope));
  projection::DistinctSet set;
  Status failed;
  RETURN_IF_ERROR(ForEachCandidate(*coll, req.query.bson(), nullptr, nullptr, req.scope ? &req.scope->txn : nullptr,
                                   stats, nullptr, [&](std::string_view, const RecordView& rec) {
                                     StatusOr<bool> m = MatchOrError(*matcher, &rec.doc);
                                     if (!m.ok()) {
                                       failed = m.status();
                                       return false;
                                     }
                                     if (*m) set.AddFromDocument(&rec.doc, req.key);
                                     return true;
                                   }));
  RETURN_IF_ERROR(failed);
  std::vector<Value> values;
  values.reserve(set.size());
  for (const bson_value_t& v : set) values.emplace_back(v);
  return values;
}

}  // namespace gatedb
