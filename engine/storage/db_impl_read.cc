// DBImpl: the read path (find, count, distinct) and the scans that writes
// use to find their candidates.  Reads take no locks.
#include <algorithm>

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

// Calls fn(key, record) for each document of the collection that the
// filter may match: one point read when the filter pins _id, otherwise a
// scan in _id order.  fn returns false to stop.
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

template <typename Fn>
Status ForEachCandidate(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* cf, uint32_t coll_id,
                        const bson_t* filter, Fn&& fn, Txn* txn = nullptr) {
  bson_value_t id;
  if (PointIdFromFilter(filter, &id)) return ForEachPointRead(db, cf, keys::EncodeDocKey(coll_id, id), txn, fn);
  std::string prefix = keys::CollectionPrefix(coll_id);
  std::string end = keys::CollectionUpperBound(coll_id);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  if (txn) ro.snapshot = (*txn)->GetSnapshot();
  std::unique_ptr<rocksdb::Iterator> it(txn ? (*txn)->GetIterator(ro, cf) : db->NewIterator(ro, cf));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    // A transaction's iterator does not bound its own pending writes by
    // iterate_upper_bound: stop at the collection's end explicitly.
    if (!it->key().starts_with(prefix)) break;
    RecordView rec;
    rocksdb::Slice v = it->value();
    RETURN_IF_ERROR(DecodeRecord(std::string_view(v.data(), v.size()), &rec));
    if (!fn(std::string_view(it->key().data(), it->key().size()), rec)) break;
  }
  return FromRocks(it->status());
}

Status CheckSkipLimit(int64_t skip, int64_t limit, ErrorCode code) {
  if (skip < 0) return Status(code, "skip value must be non-negative, but received: " + std::to_string(skip));
  if (limit < 0) return Status(code, "limit value must be non-negative, but received: " + std::to_string(limit));
  return Status::OK();
}

}  // namespace

Status DBImpl::CandidateKeys(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                             size_t limit, std::vector<std::string>* keys, Txn* txn) const {
  return ForEachCandidate(
      db_, docs_cf_, coll.info.id, filter,
      [&](std::string_view key, const RecordView& rec) {
        if (matcher.Matches(&rec.doc)) keys->emplace_back(key);
        return limit == 0 || keys->size() < limit;
      },
      txn);
}

Status DBImpl::MatchingDocs(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                            std::vector<std::pair<std::string, Document>>* out, Txn* txn) const {
  return ForEachCandidate(
      db_, docs_cf_, coll.info.id, filter,
      [&](std::string_view key, const RecordView& rec) {
        if (matcher.Matches(&rec.doc)) out->emplace_back(std::string(key), Document::Copy(&rec.doc));
        return true;
      },
      txn);
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

StatusOr<FindResult> DBImpl::Find(const FindRequest& req) {
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
  FindResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return result;
  Txn* txn = req.scope ? &req.scope->txn : nullptr;
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

  if (!sort) {
    int64_t skipped = 0;
    RETURN_IF_ERROR(ForEachCandidate(
        db_, docs_cf_, coll->info.id, req.filter.bson(),
        [&](std::string_view key, const RecordView& rec) {
          if (matcher && !matcher->Matches(&rec.doc)) return true;
          if (skipped < req.skip) {
            ++skipped;
            return true;
          }
          lock(key);
          emit(&rec.doc);
          emit_versions(rec);
          return req.limit == 0 || static_cast<int64_t>(result.docs.size()) < req.limit;
        },
        txn));
    RETURN_IF_ERROR(lock_status);
    return result;
  }

  struct Row {
    projection::SortKey key;
    Document doc;
    std::string doc_key;
    Document versions;
  };
  std::vector<Row> rows;
  RETURN_IF_ERROR(ForEachCandidate(
      db_, docs_cf_, coll->info.id, req.filter.bson(),
      [&](std::string_view key, const RecordView& rec) {
        if (matcher && !matcher->Matches(&rec.doc)) return true;
        Row row{projection::SortKey(), Document::Copy(&rec.doc), std::string(key),
                rec.has_field_versions && req.field_versions ? Document::Copy(&rec.field_versions) : Document()};
        sort->ExtractKey(row.doc.bson(), &row.key);
        rows.push_back(std::move(row));
        return true;
      },
      txn));
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return sort->CompareKeys(a.key, b.key) < 0; });
  size_t begin = std::min<size_t>(rows.size(), static_cast<size_t>(req.skip));
  size_t end = req.limit == 0 ? rows.size() : std::min<size_t>(rows.size(), begin + static_cast<size_t>(req.limit));
  for (size_t i = begin; i < end; ++i) {
    lock(rows[i].doc_key);
    emit(rows[i].doc.bson());
    if (req.field_versions) result.field_versions.push_back(std::move(rows[i].versions));
  }
  RETURN_IF_ERROR(lock_status);
  return result;
}

StatusOr<int64_t> DBImpl::Count(const CountRequest& req) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  RETURN_IF_ERROR(CheckSkipLimit(req.skip, req.limit < 0 ? -req.limit : req.limit, ErrorCode::kFailedToParse));
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.query.bson()));
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return int64_t{0};
  int64_t limit = req.limit < 0 ? -req.limit : req.limit;
  int64_t matched = 0;
  RETURN_IF_ERROR(ForEachCandidate(
      db_, docs_cf_, coll->info.id, req.query.bson(),
      [&](std::string_view, const RecordView& rec) {
        if (matcher->Matches(&rec.doc)) ++matched;
        return limit == 0 || matched < req.skip + limit;
      },
      req.scope ? &req.scope->txn : nullptr));
  int64_t n = std::max<int64_t>(0, matched - req.skip);
  return limit == 0 ? n : std::min(n, limit);
}

StatusOr<std::vector<Value>> DBImpl::Distinct(const DistinctRequest& req) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  if (req.key.empty()) return Status(ErrorCode::kBadValue, "distinct key must not be empty");
  if (req.key[0] == '$') return Status(ErrorCode::kBadValue, "distinct key must not start with '$'");
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.query.bson()));
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  if (!coll) return std::vector<Value>();
  projection::DistinctSet set;
  RETURN_IF_ERROR(ForEachCandidate(
      db_, docs_cf_, coll->info.id, req.query.bson(),
      [&](std::string_view, const RecordView& rec) {
        if (matcher->Matches(&rec.doc)) set.AddFromDocument(&rec.doc, req.key);
        return true;
      },
      req.scope ? &req.scope->txn : nullptr));
  std::vector<Value> values;
  values.reserve(set.size());
  for (const bson_value_t& v : set) values.emplace_back(v);
  return values;
}

}  // namespace gatedb
