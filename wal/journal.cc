#include "wal/journal.h"

#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/snapshot.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <utility>

#include "engine/util/rocks_status.h"
#include "wal/journal_format.h"

namespace gatedb {
namespace wal {

namespace {

// Deletes per WriteBatch when collecting.
constexpr size_t kCollectBatchSize = 1000;


Status Corrupt(const std::string& what) {
  return Status(ErrorCode::kDataCorruptionDetected, "journal: " + what);
}

std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

int64_t SystemClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Copies the BSON bytes of a "journal" value into a Document.
Status ParseEvent(uint64_t seq, std::string_view value, std::string_view* doc_key, Document* out) {
  std::string_view bytes;
  if (!DecodeEventValue(value, doc_key, &bytes)) {
    return Corrupt("malformed event at seq " + std::to_string(seq));
  }
  bson_t* b = bson_new_from_data(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (b == nullptr) return Corrupt("malformed event BSON at seq " + std::to_string(seq));
  *out = Document::Adopt(b);
  return Status::OK();
}

// The value of a top-level UTF-8 field, or false.
bool GetUtf8(const bson_t* b, const char* field, std::string_view* out) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, b, field) || !BSON_ITER_HOLDS_UTF8(&it)) return false;
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  *out = std::string_view(s, len);
  return true;
}

Status CollectedError(uint64_t after_seq, uint64_t first) {
  return Status(ErrorCode::kChangeStreamHistoryLost, "journal events after seq " + std::to_string(after_seq) +
                                           " were collected; the oldest retained is " +
                                           std::to_string(first));
}

}  // namespace

struct Journal::EncodedEvent {
  std::string key;
  std::string value;
  bool indexed = false;
  std::string doc_index_key;
  std::string doc_index_value;
};

std::vector<std::string> Journal::ColumnFamilyNames() {
  return {kJournalCfName, kJournalDocCfName, kJournalMetaCfName};
}

Journal::Journal(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* journal_cf,
                 rocksdb::ColumnFamilyHandle* doc_cf, rocksdb::ColumnFamilyHandle* meta_cf,
                 const JournalOptions& opts, std::function<int64_t()> clock_ms)
    : db_(db),
      journal_cf_(journal_cf),
      doc_cf_(doc_cf),
      meta_cf_(meta_cf),
      opts_(opts),
      clock_ms_(clock_ms ? std::move(clock_ms) : std::function<int64_t()>(SystemClockMs)) {}

Journal::~Journal() { Stop(); }

StatusOr<std::unique_ptr<Journal>> Journal::Open(rocksdb::TransactionDB* db,
                                                 rocksdb::ColumnFamilyHandle* journal_cf,
                                                 rocksdb::ColumnFamilyHandle* doc_cf,
                                                 rocksdb::ColumnFamilyHandle* meta_cf,
                                                 const JournalOptions& opts,
                                                 std::function<int64_t()> clock_ms) {
  if (db == nullptr || journal_cf == nullptr || doc_cf == nullptr || meta_cf == nullptr) {
    return Status(ErrorCode::kBadValue, "journal: a null database or column family");
  }
  if (opts.retention_ms < 0) {
    return Status(ErrorCode::kBadValue, "journal: retention_ms must not be negative");
  }
  if (opts.collect_interval_ms <= 0) {
    return Status(ErrorCode::kBadValue, "journal: collect_interval_ms must be positive");
  }

  uint64_t first = 1;
  std::string meta;
  rocksdb::Status rs = db->Get(rocksdb::ReadOptions(), meta_cf, kMetaFirstSeqKey, &meta);
  if (rs.ok()) {
    if (!DecodeFirstSeq(meta, &first) || first == 0) return Corrupt("malformed first_seq record");
  } else if (!rs.IsNotFound()) {
    return FromRocks(rs);
  }

  uint64_t last_key = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), journal_cf));
    it->SeekToLast();
    if (it->Valid() && !DecodeSeqKey(ToView(it->key()), &last_key)) {
      return Corrupt("a key that is not a seq in the journal column family");
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
  }

  std::unique_ptr<Journal> j(new Journal(db, journal_cf, doc_cf, meta_cf, opts, std::move(clock_ms)));
  // Everything collected: the journal is empty but seqs must not restart.
  uint64_t last = std::max(last_key, first - 1);
  j->allocated_ = last;
  {
    // No other thread sees j yet; the lock is for the analysis.
    MutexLock l(&j->mu_);
    j->published_ = last;
    j->first_ = first;
  }
  return j;
}

// ---- Writing ----------------------------------------------------------------

uint64_t Journal::AllocateSeq() { return ++allocated_; }

void Journal::ReleaseSeq(uint64_t seq) {
  assert(seq == allocated_);
  if (seq == allocated_) --allocated_;
}

void Journal::Published(uint64_t seq) {
  {
    MutexLock l(&mu_);
    assert(seq > published_ && seq <= allocated_);
    if (seq > published_) published_ = seq;
  }
  published_cv_.SignalAll();
}

namespace {

// What an event's top level holds, for deciding whether it can be stored as
// it stands.
struct EventShape {
  bool malformed = false;
  bool at_not_date = false;  // an "at" that is not a BSON date
  bool has_at = false;
  bool conflict = false;     // "op": "conflict"
  bool placeholder = false;  // the first field is an int64 "seq"
  int seq_fields = 0;
  // The writer's events: stored as their own bytes, the seq written into
  // the placeholder.
  bool StoredAsIs() const { return placeholder && seq_fields == 1 && has_at; }
};

EventShape ScanEvent(const bson_t* event) {
  EventShape shape;
  bson_iter_t it;
  if (!bson_iter_init(&it, event)) {
    shape.malformed = true;
    return shape;
  }
  bool first = true;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (std::strcmp(key, kFieldSeq) == 0) {
      ++shape.seq_fields;
      shape.placeholder = first && BSON_ITER_HOLDS_INT64(&it);
    } else if (std::strcmp(key, kFieldAt) == 0) {
      shape.at_not_date |= !BSON_ITER_HOLDS_DATE_TIME(&it);
      shape.has_at = true;
    } else if (std::strcmp(key, kFieldOp) == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
      shape.conflict = std::strcmp(bson_iter_utf8(&it, nullptr), kOpConflict) == 0;
    }
    first = false;
  }
  return shape;
}

// The value of an event stored as it stands, its placeholder still 0.
void EncodeAsIs(const bson_t* event, std::string_view doc_key, std::string* value) {
  value->clear();
  value->reserve(kEventHeaderSize + doc_key.size() + event->len);
  EncodeEventValue(doc_key, bson_get_data(event), event->len, value);
}

// Writes seq into the placeholder of a value from EncodeAsIs: its 8 bytes
// follow the header, the document key, the BSON length, the type byte and
// "seq\0".
void WriteSeq(uint64_t seq, std::string_view doc_key, std::string* value) {
  const size_t at = kEventHeaderSize + doc_key.size() + 4 + 1 + sizeof(kFieldSeq);
  assert(value->size() >= at + 8);
  int64_t le = BSON_UINT64_TO_LE(seq);
  std::memcpy(&(*value)[at], &le, sizeof le);
}

Status CheckSeq(uint64_t seq) {
  if (seq == 0 || seq > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status(ErrorCode::kBadValue, "journal: seq out of range");
  }
  return Status::OK();
}

}  // namespace

Status Journal::Encode(uint64_t seq, const bson_t* event, std::string_view doc_key,
                       int64_t version_after, bool index_doc, EncodedEvent* out) const {
  if (event == nullptr) return Status(ErrorCode::kBadValue, "journal: null event");
  RETURN_IF_ERROR(CheckSeq(seq));
  if (doc_key.size() > std::numeric_limits<uint32_t>::max()) {
    return Status(ErrorCode::kBadValue, "journal: document key too long");
  }
  if (index_doc && doc_key.empty()) {
    return Status(ErrorCode::kBadValue, "journal: index_doc needs a document key");
  }

  // One scan: what the event holds, and whether it can be stored as it is.
  // The writer's events start with an int64 "seq" placeholder and carry a
  // date "at": those are stored as their own bytes with the seq written into
  // the placeholder; anything else is rebuilt with "seq" first (a "seq"
  // elsewhere dropped) and "at" stamped when missing.
  const EventShape shape = ScanEvent(event);
  if (shape.malformed) return Status(ErrorCode::kBadValue, "journal: malformed event");
  if (shape.at_not_date) return Status(ErrorCode::kBadValue, "journal: the event's \"at\" must be a date");
  if (index_doc && shape.conflict) {
    return Status(ErrorCode::kBadValue, "journal: conflict events are not indexed per document");
  }

  out->key = EncodeSeqKey(seq);
  if (shape.StoredAsIs()) {
    EncodeAsIs(event, doc_key, &out->value);
    WriteSeq(seq, doc_key, &out->value);
  } else {
    bson_t b;
    bson_init(&b);
    bool ok = BSON_APPEND_INT64(&b, kFieldSeq, static_cast<int64_t>(seq));
    bson_iter_t it;
    bson_iter_init(&it, event);
    while (ok && bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (std::strcmp(key, kFieldSeq) == 0) continue;
      ok = bson_append_iter(&b, key, static_cast<int>(bson_iter_key_len(&it)), &it);
    }
    if (ok && !shape.has_at) ok = BSON_APPEND_DATE_TIME(&b, kFieldAt, clock_ms_());
    if (!ok) {
      bson_destroy(&b);
      return Status(ErrorCode::kBadValue, "journal: event too large");
    }
    out->value.clear();
    EncodeEventValue(doc_key, bson_get_data(&b), b.len, &out->value);
    bson_destroy(&b);
  }
  out->indexed = index_doc;
  if (index_doc) {
    out->doc_index_key = EncodeDocIndexKey(doc_key, seq);
    out->doc_index_value = EncodeDocIndexValue(version_after);
  }
  return Status::OK();
}

Status Journal::AddToTransaction(rocksdb::Transaction* txn, uint64_t seq, const bson_t* event,
                                 std::string_view doc_key, int64_t version_after, bool index_doc) {
  if (txn == nullptr) return Status(ErrorCode::kBadValue, "journal: null transaction");
  EncodedEvent e;
  RETURN_IF_ERROR(Encode(seq, event, doc_key, version_after, index_doc, &e));
  RETURN_IF_ERROR(FromRocks(txn->PutUntracked(journal_cf_, e.key, e.value)));
  if (e.indexed) RETURN_IF_ERROR(FromRocks(txn->PutUntracked(doc_cf_, e.doc_index_key, e.doc_index_value)));
  return Status::OK();
}

void Journal::PrepareWriterEvent(const bson_t* event, std::string_view doc_key, std::string* value) {
  EncodeAsIs(event, doc_key, value);
}

void Journal::BeginWriterValue(std::string_view doc_key, std::string* value) {
  value->clear();
  EncodeEventValueHeader(doc_key, value);
}

Status Journal::AddPreparedToTransaction(rocksdb::Transaction* txn, uint64_t seq, std::string_view doc_key,
                                         std::string* value) {
#ifndef NDEBUG
  std::string_view key, bson;
  assert(DecodeEventValue(*value, &key, &bson) && key == doc_key);
  bson_t event;
  assert(bson_init_static(&event, reinterpret_cast<const uint8_t*>(bson.data()), bson.size()));
  const EventShape shape = ScanEvent(&event);
  assert(shape.StoredAsIs() && !shape.at_not_date);
#endif
  RETURN_IF_ERROR(CheckSeq(seq));
  WriteSeq(seq, doc_key, value);
  return FromRocks(txn->PutUntracked(journal_cf_, EncodeSeqKey(seq), *value));
}

Status Journal::AddToBatch(rocksdb::WriteBatch* batch, uint64_t seq, const bson_t* event,
                           std::string_view doc_key, int64_t version_after, bool index_doc) {
  if (batch == nullptr) return Status(ErrorCode::kBadValue, "journal: null batch");
  EncodedEvent e;
  RETURN_IF_ERROR(Encode(seq, event, doc_key, version_after, index_doc, &e));
  RETURN_IF_ERROR(FromRocks(batch->Put(journal_cf_, e.key, e.value)));
  if (e.indexed) RETURN_IF_ERROR(FromRocks(batch->Put(doc_cf_, e.doc_index_key, e.doc_index_value)));
  return Status::OK();
}

// ---- Reading ----------------------------------------------------------------

uint64_t Journal::last_seq() const {
  MutexLock l(&mu_);
  return published_;
}

uint64_t Journal::first_seq() const {
  MutexLock l(&mu_);
  return first_;
}

StatusOr<Journal::ReadResult> Journal::Read(const ReadOptions& opts) const {
  ReadResult r;
  // Order matters: last published first (so every event up to it is in the
  // iterator's snapshot), then the iterator, then first_seq (so every event
  // from it on is still in the snapshot: collection advances first_seq
  // before it deletes).
  r.last_seq = last_seq();
  r.next_after_seq = std::max(opts.after_seq, r.last_seq);
  if (opts.after_seq >= r.last_seq) return r;

  std::string upper = EncodeSeqKey(r.last_seq + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, journal_cf_));
  uint64_t first = first_seq();
  if (opts.after_seq + 1 < first) return CollectedError(opts.after_seq, first);

  uint64_t expected = opts.after_seq + 1;
  it->Seek(EncodeSeqKey(expected));
  for (; it->Valid(); it->Next(), ++expected) {
    uint64_t seq = 0;
    if (!DecodeSeqKey(ToView(it->key()), &seq)) return Corrupt("a key that is not a seq");
    if (seq != expected) return Corrupt("event " + std::to_string(expected) + " is missing");
    std::string_view doc_key;
    Document event;
    RETURN_IF_ERROR(ParseEvent(seq, ToView(it->value()), &doc_key, &event));
    if (!opts.ns.empty() || !opts.ns_prefix.empty()) {
      std::string_view ns;
      if (!GetUtf8(event.bson(), kFieldNs, &ns)) continue;
      if (!opts.ns.empty() && ns != opts.ns) continue;
      if (!opts.ns_prefix.empty() && ns.substr(0, opts.ns_prefix.size()) != opts.ns_prefix) continue;
    }
    r.events.push_back(std::move(event));
    if (opts.limit != 0 && r.events.size() >= opts.limit) {
      r.next_after_seq = seq;
      return r;
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  if (expected <= r.last_seq) return Corrupt("event " + std::to_string(expected) + " is missing");
  return r;
}

bool Journal::WaitForEvents(uint64_t after_seq, std::chrono::milliseconds timeout) const {
  MutexLock l(&mu_);
  return published_cv_.WaitFor(&mu_, timeout, [&]() GATEDB_REQUIRES(mu_) { return published_ > after_seq; });
}

Status Journal::EventsForDocument(std::string_view doc_key, int64_t after_version,
                                  std::vector<Document>* events) const {
  events->clear();
  if (doc_key.empty()) return Status(ErrorCode::kBadValue, "journal: empty document key");

  rocksdb::ManagedSnapshot snap(db_);
  // Read after taking the snapshot: entries with seq >= first are all in it.
  const uint64_t first = first_seq();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.snapshot();
  rocksdb::Slice lower(doc_key.data(), doc_key.size());
  ro.iterate_lower_bound = &lower;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, doc_cf_));

  // Newest first.  The walk stops at the first event at or below
  // after_version, at the boundary of an earlier life of the document (an
  // older event with a version not below the next one's: the document was
  // deleted and inserted again since), or where the retained entries end.
  struct Entry {
    uint64_t seq;
    int64_t version;
  };
  std::vector<Entry> found;
  bool complete = false;
  it->SeekForPrev(EncodeDocIndexKey(doc_key, std::numeric_limits<uint64_t>::max()));
  for (; it->Valid(); it->Prev()) {
    uint64_t seq = 0;
    // Skips entries of other documents whose key starts with doc_key.
    if (!DecodeDocIndexKey(ToView(it->key()), doc_key, &seq)) continue;
    if (seq < first) break;  // collected, not yet deleted
    int64_t version = 0;
    if (!DecodeDocIndexValue(ToView(it->value()), &version)) {
      return Corrupt("malformed document index entry for seq " + std::to_string(seq));
    }
    if (version <= after_version || (!found.empty() && version >= found.back().version)) {
      complete = true;
      break;
    }
    found.push_back({seq, version});
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  // The retained entries ended: complete when nothing was ever collected, or
  // when the oldest event found made version after_version + 1.
  if (!complete) {
    complete = first == 1 || (!found.empty() && after_version < std::numeric_limits<int64_t>::max() &&
                              found.back().version == after_version + 1);
  }
  if (!complete) {
    return Status(ErrorCode::kChangeStreamHistoryLost,
                  "journal: the history of the document after version " + std::to_string(after_version) +
                      " is no longer complete; events before seq " + std::to_string(first) +
                      " were collected");
  }

  std::vector<Document> out;
  out.reserve(found.size());
  rocksdb::ReadOptions get_ro;
  get_ro.snapshot = snap.snapshot();
  std::string value;
  for (auto e = found.rbegin(); e != found.rend(); ++e) {
    rocksdb::Status rs = db_->Get(get_ro, journal_cf_, EncodeSeqKey(e->seq), &value);
    if (rs.IsNotFound()) return Corrupt("indexed event " + std::to_string(e->seq) + " is missing");
    RETURN_IF_ERROR(FromRocks(rs));
    std::string_view stored_key;
    Document event;
    RETURN_IF_ERROR(ParseEvent(e->seq, value, &stored_key, &event));
    out.push_back(std::move(event));
  }
  *events = std::move(out);
  return Status::OK();
}

// ---- Retention ----------------------------------------------------------------

Status Journal::Collect() {
  MutexLock collect_lock(&collect_mu_);
  const int64_t now = clock_ms_();
  const uint64_t last = last_seq();
  const uint64_t first = first_seq();

  uint64_t target = first;
  if (opts_.max_events > 0 && last >= first && last - first + 1 > opts_.max_events) {
    target = last - opts_.max_events + 1;
  }
  if (opts_.retention_ms > 0 && target <= last) {
    const int64_t cutoff = now - opts_.retention_ms;
    std::string upper = EncodeSeqKey(last + 1);
    rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, journal_cf_));
    for (it->Seek(EncodeSeqKey(target)); it->Valid(); it->Next()) {
      uint64_t seq = 0;
      if (!DecodeSeqKey(ToView(it->key()), &seq)) return Corrupt("a key that is not a seq");
      if (seq != target) return Corrupt("event " + std::to_string(target) + " is missing");
      std::string_view doc_key;
      Document event;
      RETURN_IF_ERROR(ParseEvent(seq, ToView(it->value()), &doc_key, &event));
      bson_iter_t at;
      // An "at" that is not a date cannot be judged; it does not hold back
      // the events after it.
      if (bson_iter_init_find(&at, event.bson(), kFieldAt) && BSON_ITER_HOLDS_DATE_TIME(&at) &&
          bson_iter_date_time(&at) >= cutoff) {
        break;
      }
      target = seq + 1;
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
  }

  if (target > first) {
    // First the boundary, so that no reader can see the gap being made.
    rocksdb::WriteBatch meta;
    RETURN_IF_ERROR(FromRocks(meta.Put(meta_cf_, kMetaFirstSeqKey, EncodeFirstSeq(target))));
    RETURN_IF_ERROR(FromRocks(db_->GetBaseDB()->Write(rocksdb::WriteOptions(), &meta)));
    MutexLock l(&mu_);
    first_ = target;
  }
  return DeleteCollected(target);
}

Status Journal::DeleteCollected(uint64_t new_first) {
  // deleted_below_ starts at 0 after Open, so the first call also finishes a
  // deletion that a crash interrupted.
  if (deleted_below_ >= new_first) return Status::OK();
  std::string lower = EncodeSeqKey(deleted_below_);
  std::string upper = EncodeSeqKey(new_first);
  rocksdb::Slice lower_slice(lower), upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, journal_cf_));
  rocksdb::DB* base = db_->GetBaseDB();
  rocksdb::WriteBatch batch;
  size_t n = 0;
  for (it->Seek(lower); it->Valid(); it->Next()) {
    uint64_t seq = 0;
    if (!DecodeSeqKey(ToView(it->key()), &seq)) return Corrupt("a key that is not a seq");
    std::string_view doc_key, bson;
    if (!DecodeEventValue(ToView(it->value()), &doc_key, &bson)) {
      return Corrupt("malformed event at seq " + std::to_string(seq));
    }
    RETURN_IF_ERROR(FromRocks(batch.Delete(journal_cf_, it->key())));
    // Whether the event was indexed is not recorded; a delete of an absent
    // entry is harmless.
    if (!doc_key.empty()) RETURN_IF_ERROR(FromRocks(batch.Delete(doc_cf_, EncodeDocIndexKey(doc_key, seq))));
    if (++n % kCollectBatchSize == 0) {
      RETURN_IF_ERROR(FromRocks(base->Write(rocksdb::WriteOptions(), &batch)));
      batch.Clear();
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  if (batch.Count() > 0) RETURN_IF_ERROR(FromRocks(base->Write(rocksdb::WriteOptions(), &batch)));
  deleted_below_ = new_first;
  return Status::OK();
}

void Journal::StartBackgroundCollector() {
  MutexLock l(&bg_mu_);
  if (bg_thread_.joinable()) return;
  bg_stop_ = false;
  bg_thread_ = std::thread([this] { CollectorLoop(); });
}

void Journal::Stop() {
  std::thread t;
  {
    MutexLock l(&bg_mu_);
    bg_stop_ = true;
    t = std::move(bg_thread_);
  }
  bg_cv_.SignalAll();
  if (t.joinable()) t.join();
}

Status Journal::last_collect_status() const {
  MutexLock l(&bg_mu_);
  return bg_status_;
}

void Journal::CollectorLoop() {
  const std::chrono::milliseconds interval(opts_.collect_interval_ms);
  for (;;) {
    {
      MutexLock l(&bg_mu_);
      // The predicate is checked before the first wait: a stop requested
      // while Collect ran ends the loop at once.
      if (bg_cv_.WaitFor(&bg_mu_, interval, [&]() GATEDB_REQUIRES(bg_mu_) { return bg_stop_; })) return;
    }
    Status s = Collect();
    MutexLock l(&bg_mu_);
    bg_status_ = std::move(s);
  }
}

}  // namespace wal
}  // namespace gatedb
