// DBImpl: the read path (find, count, distinct) and the scans that writes
// use to find their candidates.  Reads take no locks.
#include <algorithm>

#include "engine/index/planner.h"
#include "engine/keys/key_codec.h"
#include "engine/projection/paths.h"
#include "engine/projection/projection.h"
#include "engine/projection/sort.h"
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
  rocksdb::PinnableSlice value;
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
  return ForEachCandidate(coll, filter, nullptr, hint, txn, nullptr, nullptr,
                          [&](std::string_view key, const RecordView& rec) {
                            if (matcher.Matches(&rec.doc)) keys->emplace_back(key);
                            return limit == 0 || keys->size() < limit;
                          });
}

Status DBImpl::MatchingDocs(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                            std::vector<std::pair<std::string, Document>>* out, Txn* txn,
                            const index::Hint* hint) const {
  return ForEachCandidate(coll, filter, nullptr, hint, txn, nullptr, nullptr,
                          [&](std::string_view key, const RecordView& rec) {
                            if (matcher.Matches(&rec.doc)) out->emplace_back(std::string(key), Document::Copy(&rec.doc));
                            return true;
                          });
}

StatusOr<std::optional<Document>> DBImpl::FindById(const Namespace& ns, const bson_value_t& id, WriteScope* scope) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  std::shared_ptr<Collection> coll = FindCollection(ns);
  if (!coll) return std::optional<Document>();
  std::optional<Document> out;
  RETURN_IF_ERROR(ForEachPointRead(db_, docs_cf_, keys::EncodeDocKey(coll->info.id, id),
                                   scope != nullptr ? &scope->txn : nullptr,
                                   [&](std::string_view, const RecordView& rec) { out = Document::Copy(&rec.doc); }));
  return out;
}

StatusOr<FindResult> DBImpl::Find(const FindRequest& req) { return FindWithStats(req, nullptr); }

StatusOr<FindResult> DBImpl::FindWithStats(const FindRequest& req, PlanStats* stats) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  RETURN_IF_ERROR(CheckSkipLimit(req.skip, req.limit, ErrorCode::kLocation51024));
  // Null for {_id: v} alone: the point read is the whole match.
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, ParseFilter(req.filter.bson()));
  ASSIGN_OR_RETURN(std::unique_ptr<projection::Projection> proj,
                   projection::Projection::Parse(req.projection.bson()));
  std::unique_ptr<projection::SortSpec> sort;
  if (!req.sort.empty()) {
    ASSIGN_OR_RETURN(sort, projection::SortSpec::Parse(req.sort.bson()));
  }
  std::optional<index::Hint> hint;
  if (req.hint) {
    ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(req.hint->get()));
    hint = std::move(h);
  }
  FindResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return result;
  Txn* txn = req.scope ? &req.scope->txn : nullptr;
  RETURN_IF_ERROR(CatchUpIndexes(req.scope));
  Status lock_status;
  // A locking read takes each returned document into the write set.
  auto lock = [&](std::string_view key) {
    if (!req.lock_documents || txn == nullptr || !lock_status.ok()) return;
    std::string ignored;
    rocksdb::ReadOptions ro;
    ro.snapshot = (*txn)->GetSnapshot();
    lock_status = FromRocks((*txn)->GetForUpdate(ro, docs_cf_, rocksdb::Slice(key.data(), key.size()), &ignored));
  };

  auto emit_versions = [&](const RecordView& rec) {
    if (req.field_versions) {
      result.field_versions.push_back(rec.has_field_versions ? Document::Copy(&rec.field_versions) : Document());
    }
  };
  auto emit = [&](const bson_t* doc) {
    if (proj->is_identity()) {
      result.docs.push_back(Document::Copy(doc));
    } else {
      bson_t* out = bson_new();
      proj->Apply(doc, out);
      result.docs.push_back(Document::Adopt(out));
    }
  };

  // Streams in plan order: no sort, or an index that gives the sort's order.
  // (The index path is decided inside ForEachCandidate; rows are collected
  // until it says whether the order is the sort's.)
  struct Row {
    projection::SortKey key;
    Document doc;
    std::string doc_key;
    Document versions;
  };
  std::vector<Row> rows;
  bool sorted = false;
  int64_t skipped = 0;
  RETURN_IF_ERROR(ForEachCandidate(
      *coll, req.filter.bson(), sort ? req.sort.bson() : nullptr, hint ? &*hint : nullptr, txn, stats, &sorted,
      [&](std::string_view key, const RecordView& rec) {
        if (matcher && !matcher->Matches(&rec.doc)) return true;
        if (!sort || sorted) {
          if (skipped < req.skip) {
            ++skipped;
            return true;
          }
          lock(key);
          emit(&rec.doc);
          emit_versions(rec);
          return req.limit == 0 || static_cast<int64_t>(result.docs.size()) < req.limit;
        }
        Row row{projection::SortKey(), Document::Copy(&rec.doc), std::string(key),
                rec.has_field_versions && req.field_versions ? Document::Copy(&rec.field_versions) : Document()};
        sort->ExtractKey(row.doc.bson(), &row.key);
        rows.push_back(std::move(row));
        return true;
      }));
  if (sort && !sorted) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const Row& a, const Row& b) { return sort->CompareKeys(a.key, b.key) < 0; });
    size_t begin = std::min<size_t>(rows.size(), static_cast<size_t>(req.skip));
    size_t end = req.limit == 0 ? rows.size() : std::min<size_t>(rows.size(), begin + static_cast<size_t>(req.limit));
    for (size_t i = begin; i < end; ++i) {
      lock(rows[i].doc_key);
      emit(rows[i].doc.bson());
      if (req.field_versions) result.field_versions.push_back(std::move(rows[i].versions));
    }
    if (stats) {
      bson_t* st = bson_new();
      BSON_APPEND_UTF8(st, "stage", "SORT");
      BSON_APPEND_DOCUMENT(st, "sortPattern", req.sort.bson());
      BSON_APPEND_UTF8(st, "type", "simple");
      BSON_APPEND_DOCUMENT(st, "inputStage", stats->plan.bson());
      stats->plan = Document::Adopt(st);
    }
  }
  RETURN_IF_ERROR(lock_status);
  return result;
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
  RETURN_IF_ERROR(ForEachCandidate(*coll, req.query.bson(), nullptr, hint ? &*hint : nullptr,
                                   req.scope ? &req.scope->txn : nullptr, stats, nullptr,
                                   [&](std::string_view, const RecordView& rec) {
                                     if (matcher->Matches(&rec.doc)) ++matched;
                                     return limit == 0 || matched < req.skip + limit;
                                   }));
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
  RETURN_IF_ERROR(ForEachCandidate(*coll, req.query.bson(), nullptr, nullptr, req.scope ? &req.scope->txn : nullptr,
                                   stats, nullptr, [&](std::string_view, const RecordView& rec) {
                                     if (matcher->Matches(&rec.doc)) set.AddFromDocument(&rec.doc, req.key);
                                     return true;
                                   }));
  std::vector<Value> values;
  values.reserve(set.size());
  for (const bson_value_t& v : set) values.emplace_back(v);
  return values;
}

}  // namespace gatedb
