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
// Every fetched document is matched against the whole filter, except when
// the one index scan is exact (index::IndexScan::exact: its bounds are the
// filter); otherwise bounds only narrow the search.  Outside a transaction
// an index plan reads one RocksDB snapshot for its keys and documents: the
// caller's when it gives one (an aggregate across its getMores), else its
// own, taken after the catalog it planned with; inside a transaction it
// reads through the transaction (its snapshot and its own writes).
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
// of _id, the entries of one value of a non-unique index): then stepping
// one iterator from each document to the next is several times cheaper
// than a point read that searches the memtable and every level from the
// top again.  A scan of key ranges starts with an iterator; a scan of whole
// unique keys starts with point reads and switches to an iterator at the
// first ascending key.  Either goes back to point reads when the iterator
// keeps missing, and tries the iterator again after an ascending key.
class DocFetcher {
 public:
  DocFetcher(rocksdb::TransactionDB* db, Txn* txn, rocksdb::ColumnFamilyHandle* cf, const rocksdb::ReadOptions& ro,
             bool iterate_first)
      : db_(db), txn_(txn), cf_(cf), ro_(ro), run_to_iterate_(iterate_first ? 0 : kRunToIterate) {}

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
        run_to_iterate_ = kRunToIterate;
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
    if (ascending_ >= run_to_iterate_) {
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
  static constexpr int kRunToIterate = 1;  // ascending keys before iterating
  static constexpr int kMaxSteps = 2;      // entries stepped over per key
  static constexpr int kMaxMisses = 3;     // consecutive misses before point reads again

  rocksdb::TransactionDB* db_;
  Txn* txn_;
  rocksdb::ColumnFamilyHandle* cf_;
  const rocksdb::ReadOptions& ro_;
  int run_to_iterate_;  // ascending keys before iterating: 0 (at once) or kRunToIterate
  std::unique_ptr<rocksdb::Iterator> it_;
  rocksdb::PinnableSlice pinned_;
  std::string last_;
  int ascending_ = 0;
  int misses_ = 0;
};

}  // namespace

namespace {

// IDHACK: one point read.
class PointExecutor : public DBImpl::PlanExecutor {
 public:
  PointExecutor(rocksdb::TransactionDB* db, Txn* txn, rocksdb::ColumnFamilyHandle* cf, const rocksdb::ReadOptions& ro,
                std::string key, DBImpl::PlanStats* st)
      : db_(db), txn_(txn), cf_(cf), ro_(ro), key_(std::move(key)), st_(st != nullptr ? st : &own_stats_) {}

  StatusOr<bool> Next(std::string_view* key, RecordView* rec) override {
    if (done_) return false;
    done_ = true;
    rocksdb::Status s = txn_ ? (*txn_)->Get(ro_, cf_, key_, &value_) : db_->Get(ro_, cf_, key_, &value_);
    ++st_->keys_examined;
    if (s.IsNotFound()) return false;
    RETURN_IF_ERROR(FromRocks(s));
    ++st_->docs_examined;
    RETURN_IF_ERROR(DecodeRecord(std::string_view(value_.data(), value_.size()), rec));
    *key = key_;
    return true;
  }

 private:
  rocksdb::TransactionDB* db_;
  Txn* txn_;
  rocksdb::ColumnFamilyHandle* cf_;
  rocksdb::ReadOptions ro_;
  std::string key_;
  DBImpl::PlanStats own_stats_;  // when the caller keeps none
  DBImpl::PlanStats* st_;
  rocksdb::PinnableSlice value_;
  bool done_ = false;
};

// COLLSCAN: every document of the collection in _id order.  The iterator
// reads one implicit snapshot (or the transaction's).
class CollScanExecutor : public DBImpl::PlanExecutor {
 public:
  CollScanExecutor(rocksdb::TransactionDB* db, Txn* txn, rocksdb::ColumnFamilyHandle* cf, rocksdb::ReadOptions ro,
                   uint32_t collection_id, DBImpl::PlanStats* st)
      : prefix_(keys::CollectionPrefix(collection_id)),
        end_(keys::CollectionUpperBound(collection_id)),
        upper_(end_),
        ro_(ro),
        st_(st != nullptr ? st : &own_stats_) {
    ro_.iterate_upper_bound = &upper_;
    it_.reset(txn ? (*txn)->GetIterator(ro_, cf) : db->NewIterator(ro_, cf));
    it_->Seek(prefix_);
  }

  StatusOr<bool> Next(std::string_view* key, RecordView* rec) override {
    if (started_) it_->Next();
    started_ = true;
    // A transaction's iterator does not bound its own pending writes by
    // iterate_upper_bound: stop at the collection's end explicitly.
    if (!it_->Valid() || !it_->key().starts_with(prefix_)) {
      RETURN_IF_ERROR(FromRocks(it_->status()));
      return false;
    }
    ++st_->docs_examined;
    rocksdb::Slice v = it_->value();
    RETURN_IF_ERROR(DecodeRecord(std::string_view(v.data(), v.size()), rec));
    *key = std::string_view(it_->key().data(), it_->key().size());
    return true;
  }

 private:
  const std::string prefix_;
  const std::string end_;
  rocksdb::Slice upper_;
  rocksdb::ReadOptions ro_;
  DBImpl::PlanStats own_stats_;
  DBImpl::PlanStats* st_;
  std::unique_ptr<rocksdb::Iterator> it_;
  bool started_ = false;
};

// IXSCAN and OR: the entries of one or more index scans, each entry's
// document fetched (once, when entries may repeat).  Holds the catalog the
// scans point into and, outside a transaction, the snapshot that keeps
// entries and documents consistent.
class IndexExecutor : public DBImpl::PlanExecutor {
 public:
  IndexExecutor(rocksdb::TransactionDB* db, Txn* txn, rocksdb::ColumnFamilyHandle* docs_cf,
                rocksdb::ColumnFamilyHandle* index_cf, rocksdb::ReadOptions ro,
                std::unique_ptr<ScopedSnapshot> snapshot, std::shared_ptr<const IndexCatalog> catalog,
                std::vector<index::IndexScan> scans, bool exact, uint32_t collection_id, DBImpl::PlanStats* st)
      : db_(db),
        txn_(txn),
        index_cf_(index_cf),
        snapshot_(std::move(snapshot)),
        ro_(ro),
        catalog_(std::move(catalog)),
        scans_(std::move(scans)),
        dedupe_(scans_.size() > 1 || scans_[0].index->multikey),
        exact_(exact),
        fetcher_(db, txn, docs_cf, ro_, !scans_[0].point_keys),
        st_(st != nullptr ? st : &own_stats_),
        doc_key_(keys::CollectionPrefix(collection_id)),
        prefix_size_(doc_key_.size()) {}

  StatusOr<bool> Next(std::string_view* key, RecordView* rec) override {
    for (;;) {
      rocksdb::Slice entry;
      ASSIGN_OR_RETURN(bool more, NextEntry(&entry));
      if (!more) return false;
      ++st_->keys_examined;
      doc_key_.resize(prefix_size_);  // the collection's prefix stays
      doc_key_.append(entry.data(), entry.size());
      if (dedupe_ && !seen_.insert(doc_key_).second) continue;
      bool found = false;
      rocksdb::Slice value;
      RETURN_IF_ERROR(fetcher_.Fetch(doc_key_, &found, &value));
      if (!found) continue;  // an entry without its document cannot be in one snapshot; be safe
      ++st_->docs_examined;
      RETURN_IF_ERROR(DecodeRecord(std::string_view(value.data(), value.size()), rec));
      *key = doc_key_;
      return true;
    }
  }

  bool exact() const override { return exact_; }

 private:
  // The next index entry's value (the document's _id encoding), in scan order.
  StatusOr<bool> NextEntry(rocksdb::Slice* entry) {
    while (scan_ < scans_.size()) {
      const index::IndexScan& scan = scans_[scan_];
      const size_t n = scan.ranges.size();
      if (scan.point_keys) {  // whole unique keys: point reads of the entries
        while (range_ < n) {
          const index::KeyRange& r = scan.ranges[scan.reverse ? n - 1 - range_ : range_];
          ++range_;
          point_.Reset();
          rocksdb::Status s = txn_ ? (*txn_)->Get(ro_, index_cf_, r.start, &point_)
                                   : db_->Get(ro_, index_cf_, r.start, &point_);
          if (s.IsNotFound()) continue;
          RETURN_IF_ERROR(FromRocks(s));
          *entry = point_;
          return true;
        }
      } else {
        if (it_ == nullptr) {
          it_.reset(txn_ ? (*txn_)->GetIterator(ro_, index_cf_) : db_->NewIterator(ro_, index_cf_));
        }
        while (range_ < n) {
          if (!scan.reverse) {
            const index::KeyRange& r = scan.ranges[range_];
            if (!positioned_) {
              it_->Seek(r.start);
              positioned_ = true;
            } else {
              it_->Next();
            }
            if (it_->Valid() && it_->key().compare(r.end) < 0) {
              *entry = it_->value();
              return true;
            }
          } else {
            const index::KeyRange& r = scan.ranges[n - 1 - range_];
            if (!positioned_) {
              it_->SeekForPrev(r.end);
              if (it_->Valid() && it_->key().compare(r.end) >= 0) it_->Prev();
              positioned_ = true;
            } else {
              it_->Prev();
            }
            if (it_->Valid() && it_->key().compare(r.start) >= 0) {
              *entry = it_->value();
              return true;
            }
          }
          RETURN_IF_ERROR(FromRocks(it_->status()));
          ++range_;
          positioned_ = false;
        }
      }
      ++scan_;
      range_ = 0;
      positioned_ = false;
    }
    return false;
  }

  rocksdb::TransactionDB* db_;
  Txn* txn_;
  rocksdb::ColumnFamilyHandle* index_cf_;
  std::unique_ptr<ScopedSnapshot> snapshot_;  // before ro_'s users: released last
  rocksdb::ReadOptions ro_;
  std::shared_ptr<const IndexCatalog> catalog_;  // the scans' IndexSpecs live in it
  std::vector<index::IndexScan> scans_;
  const bool dedupe_;
  const bool exact_;
  DocFetcher fetcher_;
  DBImpl::PlanStats own_stats_;
  DBImpl::PlanStats* st_;
  std::unique_ptr<rocksdb::Iterator> it_;
  rocksdb::PinnableSlice point_;
  size_t scan_ = 0;
  size_t range_ = 0;
  bool positioned_ = false;
  std::unordered_set<std::string> seen_;
  std::string doc_key_;  // the collection's prefix, then the current entry's _id
  const size_t prefix_size_;
};

}  // namespace

StatusOr<std::unique_ptr<DBImpl::PlanExecutor>> DBImpl::OpenPlan(const Collection& coll, const bson_t* filter,
                                                                 const bson_t* sort, const index::Hint* hint, Txn* txn,
                                                                 PlanStats* stats, bool* sorted,
                                                                 const rocksdb::Snapshot* snapshot) const {
  QuietRocksPerfCounters();
  if (sorted) *sorted = false;
  PlanStats* st = stats;  // null: each executor counts for itself
  rocksdb::ReadOptions ro;
  ro.snapshot = txn ? (*txn)->GetSnapshot() : snapshot;  // null outside snapshot transactions: the latest

  auto collection_scan = [&]() -> std::unique_ptr<PlanExecutor> {
    if (stats) stats->plan = SimpleStage("COLLSCAN", filter);
    return std::make_unique<CollScanExecutor>(db_, txn, docs_cf_, ro, coll.info.id, st);
  };

  std::shared_ptr<const IndexCatalog> cat = coll.indexes();
  std::vector<const index::IndexSpec*> specs;
  specs.reserve(cat->entries.size());
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
    return std::unique_ptr<PlanExecutor>(
        std::make_unique<PointExecutor>(db_, txn, docs_cf_, ro, keys::EncodeDocKey(coll.info.id, id), st));
  }
  if (forced_natural || specs.empty()) return collection_scan();

  // One snapshot for the index entries and the documents they name: the
  // transaction's, the caller's (an aggregate's, across its getMores), or
  // one of the plan's own.
  std::unique_ptr<ScopedSnapshot> snap;
  if (txn == nullptr && snapshot == nullptr) {
    snap = std::make_unique<ScopedSnapshot>(db_);
    ro.snapshot = snap->get();
    // The catalog was read before this snapshot.  If it changed in between
    // (an index turned multikey: MarkMultikey sets the flag before the
    // write that needs it commits, so the snapshot may hold that write's
    // array entries), plan again on the newer catalog, whose flags are then
    // no older than the entries the snapshot holds.
    if (coll.indexes() != cat) return OpenPlan(coll, filter, sort, hint, txn, stats, sorted, snapshot);
  }
  auto count_keys = [&](const index::IndexScan& scan) -> int64_t {
    int64_t n = 0;
    std::unique_ptr<rocksdb::Iterator> it(txn ? (*txn)->GetIterator(ro, index_cf_) : db_->NewIterator(ro, index_cf_));
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
  const bool exact = !is_or && chosen[0].exact;
  if (stats) {
    // As MongoDB's: a FETCH over exact bounds shows no filter (none is applied).
    bson_t none = BSON_INITIALIZER;
    stats->plan = is_or ? OrStage(filter, chosen) : FetchStage(exact ? &none : filter, IxscanStage(chosen[0]).bson());
  }
  if (sorted && !is_or) *sorted = chosen[0].provides_sort;
  return std::unique_ptr<PlanExecutor>(std::make_unique<IndexExecutor>(
      db_, txn, docs_cf_, index_cf_, ro, std::move(snap), std::move(cat), std::move(chosen), exact, coll.info.id, st));
}

Status DBImpl::ForEachCandidate(const Collection& coll, const bson_t* filter, const bson_t* sort,
                                const index::Hint* hint, Txn* txn, PlanStats* stats, bool* sorted,
                                const CandidateFn& fn) const {
  ASSIGN_OR_RETURN(std::unique_ptr<PlanExecutor> exec, OpenPlan(coll, filter, sort, hint, txn, stats, sorted));
  if (stats != nullptr && stats->plan_only) return Status::OK();
  std::string_view key;
  RecordView rec;
  for (;;) {
    ASSIGN_OR_RETURN(bool more, exec->Next(&key, &rec));
    if (!more || !fn(key, rec)) return Status::OK();
  }
}

}  // namespace gatedb
