// DBImpl: choosing and running a query plan.  Every read (find, count,
// distinct) and every write's search for its documents comes through
// ForEachCandidate, which picks one of:
//   IDHACK    the filter pins _id: one point read;
//   IXSCAN    one index's key ranges (engine/index/planner.h), each entry's
//             document fetched;
//   OR        one index scan per branch of a top-level $or, deduplicated;
//   COLLSCAN  every document in _id order.
// Choosing among candidates: each candidate index scan counts the keys its
// ranges hold, up to kTrialKeys (a bounded trial, like MongoDB's race of
// candidate plans, but counting keys instead of results); the fewest wins,
// ties going to the scan that provides the sort, then to the one with more
// bounded fields, then to the earlier index.  A $or plan costs the sum of
// its branches' best counts.  An index plan is chosen whenever one exists.
// A hint forces an index ({$natural: 1} a collection scan).
//
// Every fetched document is matched against the whole filter: index bounds
// only narrow the search.  Outside a transaction an index plan reads one
// RocksDB snapshot for its keys and documents; inside one it reads through
// the transaction (its snapshot and its own writes).
#include <algorithm>
#include <unordered_set>

#include "engine/index/index_keys.h"
#include "engine/index/planner.h"
#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"

namespace gatedb {

namespace {

constexpr int64_t kTrialKeys = 10001;

Document IxscanStage(const index::IndexScan& scan) {
  const index::IndexSpec& spec = *scan.index;
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "stage", "IXSCAN");
  BSON_APPEND_DOCUMENT(d, "keyPattern", spec.key.bson());
  BSON_APPEND_UTF8(d, "indexName", spec.name.c_str());
  BSON_APPEND_BOOL(d, "isMultiKey", spec.multikey);
  BSON_APPEND_BOOL(d, "isUnique", spec.unique);
  BSON_APPEND_BOOL(d, "isSparse", spec.sparse);
  BSON_APPEND_BOOL(d, "isPartial", spec.has_partial_filter());
  BSON_APPEND_INT32(d, "indexVersion", 2);
  BSON_APPEND_UTF8(d, "direction", scan.reverse ? "backward" : "forward");
  BSON_APPEND_DOCUMENT(d, "indexBounds", scan.bounds.bson());
  return Document::Adopt(d);
}

Document FetchStage(const bson_t* filter, const bson_t* input) {
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "stage", "FETCH");
  if (!bson_empty(filter)) BSON_APPEND_DOCUMENT(d, "filter", filter);
  BSON_APPEND_DOCUMENT(d, "inputStage", input);
  return Document::Adopt(d);
}

Document OrStage(const bson_t* filter, const std::vector<index::IndexScan>& scans) {
  bson_t* orst = bson_new();
  BSON_APPEND_UTF8(orst, "stage", "OR");
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(orst, "inputStages", &arr);
  for (size_t i = 0; i < scans.size(); ++i) {
    Document ix = IxscanStage(scans[i]);
    BSON_APPEND_DOCUMENT(&arr, std::to_string(i).c_str(), ix.bson());
  }
  bson_append_array_end(orst, &arr);
  Document out = FetchStage(filter, orst);
  bson_destroy(orst);
  return out;
}

Document SimpleStage(const char* stage, const bson_t* filter) {
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "stage", stage);
  if (filter != nullptr && !bson_empty(filter)) BSON_APPEND_DOCUMENT(d, "filter", filter);
  if (std::string(stage) == "COLLSCAN") BSON_APPEND_UTF8(d, "direction", "forward");
  return Document::Adopt(d);
}

// Releases a snapshot taken for one plan.
class ScopedSnapshot {
 public:
  explicit ScopedSnapshot(rocksdb::TransactionDB* db) : db_(db), snap_(db->GetSnapshot()) {}
  ~ScopedSnapshot() { db_->ReleaseSnapshot(snap_); }
  const rocksdb::Snapshot* get() const { return snap_; }

 private:
  rocksdb::TransactionDB* db_;
  const rocksdb::Snapshot* snap_;
};

// Reads the documents an index scan names, by key.  Index order often
// follows the documents' own order (a field that grows with _id, a range
// of _id): then stepping one iterator from each document to the next is
// several times cheaper than a point read that searches the memtable and
// every level from the top again.  It starts with point reads; after a run
// of ascending keys it switches to an iterator, and back to point reads
// when the iterator keeps missing.
class DocFetcher {
 public:
  DocFetcher(rocksdb::TransactionDB* db, Txn* txn, rocksdb::ColumnFamilyHandle* cf, const rocksdb::ReadOptions& ro)
      : db_(db), txn_(txn), cf_(cf), ro_(ro) {}

  // Sets *found and, when found, *value (valid until the next call).
  Status Fetch(const std::string& key, bool* found, rocksdb::Slice* value) {
    *found = false;
    if (it_ != nullptr) {
      // Step at most kMaxSteps entries toward `key`; past it or too far: a miss.
      for (int steps = 0; it_->Valid() && steps <= kMaxSteps; ++steps) {
        int c = it_->key().compare(key);
        if (c == 0) {
          misses_ = 0;
          *found = true;
          *value = it_->value();
          it_->Next();  // most likely the next key asked for
          return Status::OK();
        }
        if (c > 0) break;
        it_->Next();
      }
      RETURN_IF_ERROR(FromRocks(it_->status()));
      if (++misses_ >= kMaxMisses) {
        it_.reset();
        ascending_ = 0;
      } else {
        it_->Seek(key);
        RETURN_IF_ERROR(FromRocks(it_->status()));
        if (it_->Valid() && it_->key() == key) {
          *found = true;
          *value = it_->value();
          it_->Next();
        }
        last_ = key;
        return Status::OK();
      }
    }
    ascending_ = !last_.empty() && key > last_ ? ascending_ + 1 : 0;
    last_ = key;
    if (ascending_ >= kRunToIterate) {
      it_.reset(txn_ != nullptr ? (*txn_)->GetIterator(ro_, cf_) : db_->NewIterator(ro_, cf_));
      misses_ = 0;
      it_->Seek(key);
      RETURN_IF_ERROR(FromRocks(it_->status()));
      if (it_->Valid() && it_->key() == key) {
        *found = true;
        *value = it_->value();
        it_->Next();
      }
      return Status::OK();
    }
    pinned_.Reset();
    rocksdb::Status s = txn_ != nullptr ? (*txn_)->Get(ro_, cf_, key, &pinned_) : db_->Get(ro_, cf_, key, &pinned_);
    if (s.IsNotFound()) return Status::OK();
    RETURN_IF_ERROR(FromRocks(s));
    *found = true;
    *value = pinned_;
    return Status::OK();
  }

 private:
  static constexpr int kRunToIterate = 4;  // ascending keys before iterating
  static constexpr int kMaxSteps = 2;      // entries stepped over per key
  static constexpr int kMaxMisses = 3;     // consecutive misses before point reads again

  rocksdb::TransactionDB* db_;
  Txn* txn_;
  rocksdb::ColumnFamilyHandle* cf_;
  const rocksdb::ReadOptions& ro_;
  std::unique_ptr<rocksdb::Iterator> it_;
  rocksdb::PinnableSlice pinned_;
  std::string last_;
  int ascending_ = 0;
  int misses_ = 0;
};

}  // namespace

Status DBImpl::ForEachCandidate(const Collection& coll, const bson_t* filter, const bson_t* sort,
                                const index::Hint* hint, Txn* txn, PlanStats* stats, bool* sorted,
                                const CandidateFn& fn) const {
  if (sorted) *sorted = false;
  PlanStats local;
  PlanStats* st = stats ? stats : &local;
  rocksdb::ReadOptions ro;
  if (txn) ro.snapshot = (*txn)->GetSnapshot();  // null outside snapshot transactions

  auto point_read = [&](const std::string& key) -> Status {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = txn ? (*txn)->Get(ro, docs_cf_, key, &value) : db_->Get(ro, docs_cf_, key, &value);
    ++st->keys_examined;
    if (s.IsNotFound()) return Status::OK();
    RETURN_IF_ERROR(FromRocks(s));
    ++st->docs_examined;
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(std::string_view(value.data(), value.size()), &rec));
    fn(key, rec);
    return Status::OK();
  };
  auto collection_scan = [&]() -> Status {
    if (stats) stats->plan = SimpleStage("COLLSCAN", filter);
    std::string prefix = keys::CollectionPrefix(coll.info.id);
    std::string end = keys::CollectionUpperBound(coll.info.id);
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions sro = ro;
    sro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(txn ? (*txn)->GetIterator(sro, docs_cf_) : db_->NewIterator(sro, docs_cf_));
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      // A transaction's iterator does not bound its own pending writes by
      // iterate_upper_bound: stop at the collection's end explicitly.
      if (!it->key().starts_with(prefix)) break;
      ++st->docs_examined;
      RecordView rec;
      rocksdb::Slice v = it->value();
      RETURN_IF_ERROR(DecodeRecord(std::string_view(v.data(), v.size()), &rec));
      if (!fn(std::string_view(it->key().data(), it->key().size()), rec)) break;
    }
    return FromRocks(it->status());
  };

  std::shared_ptr<const IndexCatalog> cat = coll.indexes();
  std::vector<const index::IndexSpec*> specs;
  for (const auto& e : cat->entries) {
    if (e->spec.ready) specs.push_back(&e->spec);
  }
  const index::IndexSpec* forced = nullptr;
  bool forced_natural = false;
  if (hint != nullptr && !hint->empty()) {
    if (hint->natural) {
      forced_natural = true;
    } else {
      ASSIGN_OR_RETURN(forced, index::ResolveHint(*hint, specs));
      if (forced == nullptr) forced_natural = true;  // the _id index: _id order
    }
  }
  bson_value_t id;
  if (forced == nullptr && !forced_natural && PointIdFromFilter(filter, &id)) {
    if (stats) stats->plan = SimpleStage("IDHACK", nullptr);
    return point_read(keys::EncodeDocKey(coll.info.id, id));
  }
  if (forced_natural || specs.empty()) return collection_scan();

  // One snapshot for the index entries and the documents they name.
  std::optional<ScopedSnapshot> snap;
  if (txn == nullptr) {
    snap.emplace(db_);
    ro.snapshot = snap->get();
  }
  auto new_index_iter = [&]() -> std::unique_ptr<rocksdb::Iterator> {
    return std::unique_ptr<rocksdb::Iterator>(txn ? (*txn)->GetIterator(ro, index_cf_)
                                                  : db_->NewIterator(ro, index_cf_));
  };
  auto count_keys = [&](const index::IndexScan& scan) -> int64_t {
    int64_t n = 0;
    std::unique_ptr<rocksdb::Iterator> it = new_index_iter();
    for (const index::KeyRange& r : scan.ranges) {
      for (it->Seek(r.start); it->Valid() && it->key().compare(r.end) < 0 && n < kTrialKeys; it->Next()) ++n;
      if (n >= kTrialKeys) break;
    }
    return n;
  };
  auto better = [](const index::IndexScan& a, int64_t ca, const index::IndexScan& b, int64_t cb) {
    if (ca != cb) return ca < cb;
    if (a.provides_sort != b.provides_sort) return a.provides_sort;
    return a.bounded_fields > b.bounded_fields;
  };

  std::vector<index::IndexScan> chosen;
  bool is_or = false;
  if (forced != nullptr) {
    chosen.push_back(index::ScanForIndex(coll.info.id, filter, sort, *forced, stats != nullptr));
  } else {
    index::PlanCandidates cands = index::PlanQuery(coll.info.id, filter, sort, specs, stats != nullptr);
    if (cands.single.empty() && cands.or_branches.empty()) return collection_scan();
    // A lone candidate needs no trial.
    const bool trial = cands.single.size() + (cands.or_branches.empty() ? 0 : 1) > 1;
    int64_t best_cost = -1;
    size_t best = 0;
    for (size_t i = 0; i < cands.single.size(); ++i) {
      int64_t c = trial ? count_keys(cands.single[i]) : 0;
      if (best_cost < 0 || better(cands.single[i], c, cands.single[best], best_cost)) {
        best = i;
        best_cost = c;
      }
    }
    std::vector<index::IndexScan> or_scans;
    int64_t or_cost = 0;
    for (auto& branch : cands.or_branches) {
      size_t b = 0;
      int64_t bc = -1;
      for (size_t i = 0; i < branch.size(); ++i) {
        int64_t c = count_keys(branch[i]);
        if (bc < 0 || better(branch[i], c, branch[b], bc)) {
          b = i;
          bc = c;
        }
      }
      or_cost += bc;
      or_scans.push_back(std::move(branch[b]));
    }
    if (!or_scans.empty() && (cands.single.empty() || or_cost < best_cost)) {
      is_or = true;
      chosen = std::move(or_scans);
      if (stats) {
        for (const auto& s : cands.single) stats->rejected.push_back(FetchStage(filter, IxscanStage(s).bson()));
      }
    } else {
      if (stats) {
        for (size_t i = 0; i < cands.single.size(); ++i) {
          if (i != best) stats->rejected.push_back(FetchStage(filter, IxscanStage(cands.single[i]).bson()));
        }
        if (!or_scans.empty()) stats->rejected.push_back(OrStage(filter, or_scans));
      }
      chosen.push_back(std::move(cands.single[best]));
    }
  }
  if (stats) stats->plan = is_or ? OrStage(filter, chosen) : FetchStage(filter, IxscanStage(chosen[0]).bson());
  if (sorted && !is_or) *sorted = chosen[0].provides_sort;

  const std::string coll_prefix = keys::CollectionPrefix(coll.info.id);
  bool dedupe = is_or || chosen[0].index->multikey;
  std::unordered_set<std::string> seen;
  bool stop = false;
  DocFetcher fetcher(db_, txn, docs_cf_, ro);
  std::string doc_key;
  auto visit = [&](const rocksdb::Slice& idenc) -> Status {
    ++st->keys_examined;
    doc_key.assign(coll_prefix);
    doc_key.append(idenc.data(), idenc.size());
    if (dedupe && !seen.insert(doc_key).second) return Status::OK();
    bool found = false;
    rocksdb::Slice value;
    RETURN_IF_ERROR(fetcher.Fetch(doc_key, &found, &value));
    if (!found) return Status::OK();
    ++st->docs_examined;
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(std::string_view(value.data(), value.size()), &rec));
    if (!fn(doc_key, rec)) stop = true;
    return Status::OK();
  };
  for (const index::IndexScan& scan : chosen) {
    if (scan.point_keys) {  // whole unique keys: point reads of the entries
      rocksdb::PinnableSlice entry;
      const size_t n = scan.ranges.size();
      for (size_t i = 0; i < n && !stop; ++i) {
        const index::KeyRange& r = scan.ranges[scan.reverse ? n - 1 - i : i];
        entry.Reset();
        rocksdb::Status s = txn ? (*txn)->Get(ro, index_cf_, r.start, &entry) : db_->Get(ro, index_cf_, r.start, &entry);
        if (s.IsNotFound()) continue;
        RETURN_IF_ERROR(FromRocks(s));
        RETURN_IF_ERROR(visit(entry));
      }
      if (stop) break;
      continue;
    }
    std::unique_ptr<rocksdb::Iterator> it = new_index_iter();
    if (!scan.reverse) {
      for (const index::KeyRange& r : scan.ranges) {
        for (it->Seek(r.start); !stop && it->Valid() && it->key().compare(r.end) < 0; it->Next()) {
          RETURN_IF_ERROR(visit(it->value()));
        }
        if (stop) break;
      }
    } else {
      for (auto r = scan.ranges.rbegin(); r != scan.ranges.rend() && !stop; ++r) {
        it->SeekForPrev(r->end);
        if (it->Valid() && it->key().compare(r->end) >= 0) it->Prev();
        for (; !stop && it->Valid() && it->key().compare(r->start) >= 0; it->Prev()) {
          RETURN_IF_ERROR(visit(it->value()));
        }
      }
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
    if (stop) break;
  }
  return Status::OK();
}

}  // namespace gatedb
