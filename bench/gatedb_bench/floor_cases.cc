// Floors: the RocksDB calls one gatedb operation cannot do without, and
// nothing else.  Each floor case issues, against a TransactionDB opened with
// gatedb's options (engine/storage/db_impl_open.cc: the column families, the
// bloom filters, the block cache), the same reads and writes with values of
// the same sizes as the gatedb case it names, with every key and value
// prepared in advance: no BSON parsing or building beyond what the RocksDB
// CAS baseline does, no validation, no key encoding, no planning, no
// journal encoding.  A target ratio above a floor's ratio cannot be met on
// this stack, whatever gatedb does around RocksDB (docs/BENCHMARKS.md).
//
// What gatedb stores for one document (engine/storage/record.h, the key
// formats in engine/keys and wal/journal_format.h), emulated here:
//   docs          collection id (4 bytes) + encoded _id -> 13-byte record
//                 header + the BSON document
//   indexes       index prefix (8 bytes) + encoded value [+ encoded _id for a
//                 non-unique index] -> the encoded _id
//   journal       seq (8 bytes) -> 5 bytes + doc key + the event's BSON
//                 (an insert's holds the document; an update's, its new values)
//   idempotency   task id + write seq -> the reply and its fingerprint
// with gatedb's calls: the document's key locked by GetForUpdate and
// written untracked, a unique index key locked by GetForUpdate and written
// tracked, non-unique index entries and the journal event untracked, the
// idempotency key looked up by Get and written tracked; and, as gatedb
// does, a finished transaction reinitialized for the next write, its
// writes buffered without an index.
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"

namespace gatedb_bench {
namespace {

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.ToString());
}

void PutBE64(uint64_t v, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

// Sizes of what gatedb writes besides the document, measured in the column
// families of a BM_GatedUpdate/key:1 database (docs/BENCHMARKS.md): a
// document record 1,120 bytes (this header and the document's ~1,107), an
// insert's journal value 1,355 (the document + 248), a keyed update's 359,
// an idempotency record 141.
constexpr size_t kRecordHeader = 13;
constexpr size_t kInsertEventExtra = 248;
constexpr size_t kUpdateEvent = 359;
constexpr size_t kIdempotencyRecord = 141;

// Collection 1's key prefix: a document's key is this and its encoded _id.
const std::string kCollection("\x00\x00\x00\x01", 4);

std::string DocKey(int i) {
  std::string k = kCollection;
  k.push_back('\x3c');  // a string _id
  k += DocId(i);
  k.push_back('\0');
  return k;
}

std::string IndexKey(int index, const std::string& value, const std::string* id) {
  std::string k = kCollection;
  k.append(3, '\0');
  k.push_back(static_cast<char>(index + 1));
  k += value;
  if (id != nullptr) k += *id;
  return k;
}

std::string OrderNoValue(int i) {
  std::string v("\x28", 1);  // a number
  PutBE64(static_cast<uint64_t>(i) ^ (1ull << 63), &v);
  return v;
}

std::string TextValue(const std::string& s) {
  std::string v("\x3c", 1);
  v += s;
  v.push_back('\0');
  return v;
}

std::string Record(const bson_t* d) {
  std::string r(kRecordHeader, '\0');
  r[0] = 1;
  r.append(reinterpret_cast<const char*>(bson_get_data(d)), d->len);
  return r;
}

// One document's keys and values as gatedb stores them.
struct Prepared {
  std::string key, id, rec, event, email_key, order_key, category_key;
};

Prepared PrepareDocument(int i) {
  bson_t d = BSON_INITIALIZER;
  BuildDoc(i, &d);
  Prepared p;
  p.key = DocKey(i);
  p.id = p.key.substr(kCollection.size());
  p.rec = Record(&d);
  p.event = p.rec;
  p.event.append(kInsertEventExtra - kRecordHeader, 'e');
  p.email_key = IndexKey(0, TextValue(Email(i)), nullptr);
  p.order_key = IndexKey(1, OrderNoValue(i), &p.id);
  p.category_key = IndexKey(2, TextValue(Category(i)), &p.id);
  bson_destroy(&d);
  return p;
}

struct FloorFixture : Fixture {
  TempDir dir{"floor"};
  std::unique_ptr<rocksdb::TransactionDB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* docs = nullptr;
  rocksdb::ColumnFamilyHandle* indexes = nullptr;
  rocksdb::ColumnFamilyHandle* journal = nullptr;
  rocksdb::ColumnFamilyHandle* idempotency = nullptr;
  std::atomic<uint64_t> seq{0};
  std::atomic<int64_t> inserted{0};
  std::atomic<uint64_t> tasks{0};  // idempotency keys used
  rocksdb::Transaction* spare = nullptr;  // the write cases' transaction, reused (one thread)

  FloorFixture() {
    rocksdb::Options opts;
    opts.create_if_missing = true;
    opts.create_missing_column_families = true;
    opts.IncreaseParallelism(2);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(64u << 20);
    opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    rocksdb::ColumnFamilyOptions point(opts);
    rocksdb::BlockBasedTableOptions point_table = table;
    point_table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    point.table_factory.reset(rocksdb::NewBlockBasedTableFactory(point_table));
    point.memtable_prefix_bloom_size_ratio = 0.02;
    point.memtable_whole_key_filtering = true;
    rocksdb::ColumnFamilyOptions journal_cf(opts);
    journal_cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(opts)},
        {"docs", point},
        {"indexes", point},
        {"journal", journal_cf},
        {"idempotency", point},
    };
    rocksdb::TransactionDBOptions topts;
    topts.transaction_lock_timeout = 1000;
    rocksdb::TransactionDB* raw = nullptr;
    Check(rocksdb::TransactionDB::Open(opts, topts, dir.path(), cfs, &handles, &raw), "open");
    db.reset(raw);
    docs = handles[1];
    indexes = handles[2];
    journal = handles[3];
    idempotency = handles[4];
    Load();
  }
  ~FloorFixture() override {
    delete spare;
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (db) db->Close().PermitUncheckedError();
  }

  // The documents, their three index entries and their insert events, in
  // batches of 1000 (as gatedb's fixture holds them).
  void Load() {
    rocksdb::WriteBatch batch;
    const int n = NumDocs();
    for (int i = 0; i < n; ++i) {
      Check(AddDocument(i, &batch), "batch");
      if (batch.Count() >= 5000 || i == n - 1) {
        Check(db->Write(rocksdb::WriteOptions(), &batch), "load");
        batch.Clear();
      }
    }
  }

  rocksdb::Status AddDocument(int i, rocksdb::WriteBatchBase* w) {
    const Prepared p = PrepareDocument(i);
    std::string jkey;
    PutBE64(++seq, &jkey);
    rocksdb::Status s = w->Put(docs, p.key, p.rec);
    if (s.ok()) s = w->Put(indexes, p.email_key, p.id);
    if (s.ok()) s = w->Put(indexes, p.order_key, p.id);
    if (s.ok()) s = w->Put(indexes, p.category_key, p.id);
    if (s.ok()) s = w->Put(journal, jkey, p.event);
    return s;
  }
};

std::shared_ptr<FloorFixture> SharedFloor(const benchmark::State& state) {
  return AcquireFixture<FloorFixture>(InstanceKey("floor_reads", state), [] { return std::make_unique<FloorFixture>(); });
}

void QuietPerfCounters() { rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable); }

// ---- reads ------------------------------------------------------------------

// The document of a point read's record copied out, as a find returns it;
// false (the case failed) when the read failed.
bool CopyOut(benchmark::State& state, const rocksdb::Status& s, const rocksdb::PinnableSlice& record) {
  if (!s.ok()) {
    Fail(state, s.ToString());
    return false;
  }
  std::string copy(record.data() + kRecordHeader, record.size() - kRecordHeader);
  benchmark::DoNotOptimize(copy.data());
  return true;
}

// FindById's floor: one point read, the value copied out.
void BM_Floor_FindById(benchmark::State& state) {
  auto fx = SharedFloor(state);
  KeyPicker pick(state, 80);
  QuietPerfCounters();
  rocksdb::PinnableSlice v;
  for (auto _ : state) {
    v.Reset();
    if (!CopyOut(state, fx->db->Get(rocksdb::ReadOptions(), fx->docs, DocKey(pick.Next()), &v), v)) break;
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Floor_FindById)->UseRealTime()->Unit(benchmark::kMicrosecond);

// BM_IndexedFindEq's floor: the unique entry's point read, then the
// document's, the value copied out.
void BM_Floor_IndexedFindEq(benchmark::State& state) {
  auto fx = SharedFloor(state);
  KeyPicker pick(state, 81);
  QuietPerfCounters();
  rocksdb::PinnableSlice entry, v;
  std::string key;
  for (auto _ : state) {
    entry.Reset();
    v.Reset();
    rocksdb::Status s =
        fx->db->Get(rocksdb::ReadOptions(), fx->indexes, IndexKey(0, TextValue(Email(pick.Next())), nullptr), &entry);
    if (s.ok()) {
      key = kCollection;
      key.append(entry.data(), entry.size());
      s = fx->db->Get(rocksdb::ReadOptions(), fx->docs, key, &v);
    }
    if (!CopyOut(state, s, v)) break;
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Floor_IndexedFindEq)->UseRealTime()->Unit(benchmark::kMicrosecond);

// BM_IndexedRange100's floor: one snapshot; an iterator over orderNo's
// entries [x, x + RangeDocs()), and one over the documents, sought at the
// first and stepped after (they follow _id order); each value copied out.
void BM_Floor_IndexedRange100(benchmark::State& state) {
  auto fx = SharedFloor(state);
  KeyPicker pick(state, 82, RangeDocs());
  QuietPerfCounters();
  int64_t docs = 0;
  std::string key;
  for (auto _ : state) {
    const int x = pick.Next();
    const std::string lo = IndexKey(1, OrderNoValue(x), nullptr);
    const std::string hi = IndexKey(1, OrderNoValue(x + RangeDocs()), nullptr);
    const rocksdb::Snapshot* snap = fx->db->GetSnapshot();
    rocksdb::ReadOptions ro;
    ro.snapshot = snap;
    std::vector<std::string> out;
    {
      std::unique_ptr<rocksdb::Iterator> ix(fx->db->NewIterator(ro, fx->indexes));
      std::unique_ptr<rocksdb::Iterator> dit(fx->db->NewIterator(ro, fx->docs));
      bool first = true;
      for (ix->Seek(lo); ix->Valid() && ix->key().compare(hi) < 0; ix->Next()) {
        key = kCollection;
        key.append(ix->value().data(), ix->value().size());
        if (first) {
          dit->Seek(key);
          first = false;
        } else {
          dit->Next();
        }
        if (!dit->Valid() || dit->key() != key) break;
        out.emplace_back(dit->value().data() + kRecordHeader, dit->value().size() - kRecordHeader);
      }
    }
    fx->db->ReleaseSnapshot(snap);
    if (static_cast<int>(out.size()) != RangeDocs()) {
      Fail(state, "expected " + std::to_string(RangeDocs()) + " documents, got " + std::to_string(out.size()));
      break;
    }
    docs += static_cast<int64_t>(out.size());
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Floor_IndexedRange100)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- writes -----------------------------------------------------------------

// A write case's transaction: gatedb reinitializes finished transactions
// instead of allocating new ones (engine/storage/txn_pool.h), so the floor
// does too.  Single-threaded cases only.
rocksdb::Transaction* BeginReused(FloorFixture* fx, const rocksdb::WriteOptions& wo) {
  fx->spare = fx->db->BeginTransaction(wo, rocksdb::TransactionOptions(), fx->spare);
  // One document's write never reads its own writes back: gatedb's buffer
  // them without an index (DisableIndexing), as here.
  fx->spare->DisableIndexing();
  return fx->spare;
}

// One floor insert with the first `nidx` indexes (not inlined:
// valgrind --toggle-collect='*FloorInsertOnce*').
__attribute__((noinline)) rocksdb::Status FloorInsertOnce(FloorFixture* fx, const rocksdb::WriteOptions& wo,
                                                          const Prepared& p, int nidx) {
  rocksdb::Transaction* txn = BeginReused(fx, wo);
  std::string ignored;
  rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), fx->docs, p.key, &ignored);
  if (s.IsNotFound() && nidx > 0) s = txn->GetForUpdate(rocksdb::ReadOptions(), fx->indexes, p.email_key, &ignored);
  if (!s.IsNotFound()) return rocksdb::Status::Aborted("expected a new key: " + s.ToString());
  s = txn->PutUntracked(fx->docs, p.key, p.rec);
  if (s.ok() && nidx > 0) s = txn->Put(fx->indexes, p.email_key, p.id);
  if (s.ok() && nidx > 1) s = txn->PutUntracked(fx->indexes, p.order_key, p.id);
  if (s.ok() && nidx > 2) s = txn->PutUntracked(fx->indexes, p.category_key, p.id);
  std::string jkey;
  PutBE64(++fx->seq, &jkey);
  if (s.ok()) s = txn->PutUntracked(fx->journal, jkey, p.event);
  if (s.ok()) s = txn->Commit();
  return s;
}

// BM_InsertIndexed's floor: in one transaction, the locked existence read
// of the new _id (a miss), with indexes the locked read of the unique key
// (a miss), the document, its index entries and its journal event; commit.
// Values prepared before timing.
void BM_Floor_InsertIndexed(benchmark::State& state) {
  const int nidx = static_cast<int>(state.range(0));
  auto fx = AcquireFixture<FloorFixture>(InstanceKey("BM_Floor_InsertIndexed/indexes:" + std::to_string(nidx), state),
                                         [] { return std::make_unique<FloorFixture>(); });
  QuietPerfCounters();
  constexpr int kPrepared = 4096;
  std::vector<Prepared> prepared;
  auto prepare = [&] {
    prepared.clear();
    for (int k = 0; k < kPrepared; ++k) prepared.push_back(PrepareDocument(NumDocs() + static_cast<int>(++fx->inserted)));
  };
  prepare();
  size_t next = 0;
  rocksdb::WriteOptions wo;
  for (auto _ : state) {
    if (next == prepared.size()) {
      state.PauseTiming();
      prepare();
      next = 0;
      state.ResumeTiming();
    }
    rocksdb::Status s = FloorInsertOnce(fx.get(), wo, prepared[next++], nidx);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Floor_InsertIndexed)->ArgName("indexes")->Arg(0)->Arg(kNumIndexedFields)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

// BM_GatedUpdate's floor: the case's read of the document (a point read,
// copied out), then in one transaction the document's locked read,
// the change of one field and the version (as BM_Baseline_RocksCas does),
// the document and its journal event; with key:1 also the idempotency
// key's lookup (a miss) and its record; commit.
// One floor update (not inlined: valgrind --toggle-collect='*FloorUpdateOnce*').
// `idem_key` empty: not keyed.
__attribute__((noinline)) rocksdb::Status FloorUpdateOnce(FloorFixture* fx, const rocksdb::WriteOptions& wo,
                                                          const std::string& key, const std::string& idem_key,
                                                          double score, const std::string& event,
                                                          const std::string& idem_record, std::string* value) {
  // The case's read (GatedUpdateOnce's FindOne, for the basis version).
  rocksdb::PinnableSlice read;
  rocksdb::Status s = fx->db->Get(rocksdb::ReadOptions(), fx->docs, key, &read);
  if (!s.ok()) return s;
  std::string copy(read.data() + kRecordHeader, read.size() - kRecordHeader);
  benchmark::DoNotOptimize(copy.data());
  rocksdb::Transaction* txn = BeginReused(fx, wo);
  if (!idem_key.empty()) {
    std::string ignored;
    s = fx->db->Get(rocksdb::ReadOptions(), fx->idempotency, idem_key, &ignored);
    if (!s.IsNotFound()) return rocksdb::Status::Aborted("expected a new idempotency key: " + s.ToString());
  }
  s = txn->GetForUpdate(rocksdb::ReadOptions(), fx->docs, key, value);
  bson_t next = BSON_INITIALIZER;
  int64_t old_version = 0;
  if (s.ok() && !RewriteDoc(reinterpret_cast<const uint8_t*>(value->data()) + kRecordHeader,
                            value->size() - kRecordHeader, score, &old_version, &next)) {
    s = rocksdb::Status::Corruption("bson");
  }
  if (s.ok()) {
    std::string rec(value->data(), kRecordHeader);
    rec.append(reinterpret_cast<const char*>(bson_get_data(&next)), next.len);
    s = txn->PutUntracked(fx->docs, key, rec);
  }
  bson_destroy(&next);
  std::string jkey;
  PutBE64(++fx->seq, &jkey);
  if (s.ok()) s = txn->PutUntracked(fx->journal, jkey, event);
  if (s.ok() && !idem_key.empty()) s = txn->Put(fx->idempotency, idem_key, idem_record);
  if (s.ok()) s = txn->Commit();
  return s;
}

void BM_Floor_GatedUpdate(benchmark::State& state) {
  const bool keyed = state.range(0) != 0;
  auto fx = AcquireFixture<FloorFixture>(InstanceKey(std::string("BM_Floor_GatedUpdate/key:") + (keyed ? "1" : "0"), state),
                                         [] { return std::make_unique<FloorFixture>(); });
  KeyPicker pick(state, 83);
  QuietPerfCounters();
  rocksdb::WriteOptions wo;
  const std::string event(kUpdateEvent, 'e');
  const std::string idem_record(kIdempotencyRecord, 'r');
  std::string value, idem_key;
  double score = 0;
  for (auto _ : state) {
    if (keyed) {
      idem_key = "agent-task-1";
      PutBE64(++fx->tasks, &idem_key);
    }
    rocksdb::Status s =
        FloorUpdateOnce(fx.get(), wo, DocKey(pick.Next()), idem_key, score += 0.5, event, idem_record, &value);
    if (!s.ok()) {
      Fail(state, s.ToString());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Floor_GatedUpdate)->ArgName("key")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gatedb_bench
