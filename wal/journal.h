// File: wal/journal.h
//
// Journal: gatedb's record of every write (not RocksDB's WAL).  One event per
// committed write, written by the engine in the SAME RocksDB transaction (or
// WriteBatch) as the data, keyed by a global, gap-free sequence number; plus
// "conflict" events for refused writes.  It feeds the `journal` command,
// conflict statistics, change feeds and, per document, "which events changed
// it since version v".  Byte layouts: wal/journal_format.h.
//
// Writing an event (the engine's commit path):
//
//   std::lock_guard<std::mutex> l(commit_mu);      // the engine's own mutex
//   uint64_t seq = journal->AllocateSeq();
//   Status s = journal->AddToTransaction(txn, seq, event, doc_key, v, true);
//   (or PrepareWriterEvent before the lock, AddPreparedToTransaction here)
//   if (s.ok()) s = FromRocks(txn->Commit());
//   if (s.ok()) journal->Published(seq); else journal->ReleaseSeq(seq);
//
// Concurrency:
//   - AllocateSeq, ReleaseSeq and Published REQUIRE the caller's commit mutex:
//     one commit at a time holds a seq, so seqs are published in order and a
//     failed commit gives its seq back before anyone else takes the next.
//     (The journal cannot name that mutex, so clang's thread-safety analysis
//     does not check this one; the journal's own locks below are checked.)
//   - AddToTransaction / AddToBatch / PrepareWriterEvent /
//     AddPreparedToTransaction only encode; they touch no journal state.
//   - Read, WaitForEvents, EventsForDocument, Collect, last_seq and first_seq
//     may be called from any thread at any time, without the commit mutex.
//     Collect never takes the commit mutex, so it never blocks writers.
//   - A reader never sees a gap: events are read up to the last PUBLISHED
//     seq, and collection advances first_seq before it deletes anything, so a
//     reader asking for collected events gets an error instead.
//
// Lifetime: the Journal borrows the TransactionDB and its column families;
// destroy the Journal (which stops its collector thread) before them.
#ifndef GATEDB_WAL_JOURNAL_H_
#define GATEDB_WAL_JOURNAL_H_

#include <bson/bson.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/util/mutex.h"
#include "engine/util/thread_annotations.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace wal {

struct JournalOptions {
  // Events whose "at" is older than now - retention_ms are collected.
  // 0: no age limit.  Negative: BadValue at Open.
  // Default: 7 days.
  int64_t retention_ms = 7LL * 24 * 3600 * 1000;
  // At most this many events are kept (the oldest are collected first).
  // 0: no count limit.
  // Default: 0.
  uint64_t max_events = 0;
  // How often the background collector (StartBackgroundCollector) runs.
  // Must be positive.
  // Default: 1000 ms.
  int64_t collect_interval_ms = 1000;
};

class Journal {
 public:
  // The column families the engine must open for the journal, in this order:
  // {"journal", "journal_doc", "journal_meta"}.
  static std::vector<std::string> ColumnFamilyNames();

  // Opens the journal over already-opened column families and recovers the
  // last seq (the last key of "journal", or first_seq - 1 when everything
  // was collected) and the first retained seq ("journal_meta").
  // `clock_ms` returns milliseconds since the Unix epoch; null: the system
  // clock.  It stamps "at" on events that lack one and drives retention.
  // Errors: BadValue (null db or column family, bad options),
  // DataCorruptionDetected (a malformed key or meta record), InternalError
  // (a RocksDB error).
  static StatusOr<std::unique_ptr<Journal>> Open(rocksdb::TransactionDB* db,
                                                 rocksdb::ColumnFamilyHandle* journal_cf,
                                                 rocksdb::ColumnFamilyHandle* doc_cf,
                                                 rocksdb::ColumnFamilyHandle* meta_cf,
                                                 const JournalOptions& opts,
                                                 std::function<int64_t()> clock_ms = nullptr);

  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  // Stops the background collector.
  ~Journal();

  // ---- Writing.  REQUIRES: the caller's commit mutex is held from
  // AllocateSeq until Published or ReleaseSeq.

  // Reserves the next seq: last allocated + 1.
  uint64_t AllocateSeq();
  // The commit holding `seq` failed (or was never attempted): the seq is
  // free again and the next AllocateSeq returns it.  A transaction holding
  // several seqs releases them last first.
  // REQUIRES: seq is the last allocated and not published.
  void ReleaseSeq(uint64_t seq);
  // The commit holding `seq` succeeded: readers may now see every seq up to
  // it (a transaction that holds several seqs publishes its last one); wakes
  // WaitForEvents.  REQUIRES: every seq up to `seq` is committed; seq is
  // allocated and above last_seq().
  void Published(uint64_t seq) GATEDB_EXCLUDES(mu_);

  // Adds the event's puts to `txn` with PutUntracked (journal keys are unique
  // and need no locks), so that the event commits or rolls back with the
  // data.  The stored event is a copy of `event` whose first field is
  // "seq": seq (an int64; a "seq" already in `event` is dropped), with "at"
  // set to the clock (a BSON date) when `event` has none.  An event that
  // already starts with an int64 "seq" placeholder and holds its date "at"
  // is stored without being rebuilt: only the placeholder is overwritten
  // (the writer's fast path).
  //   doc_key: the document's storage key; may be empty (no document).
  //   version_after, index_doc: when index_doc, a "journal_doc" entry
  //     (doc_key, seq) -> version_after is written, so EventsForDocument
  //     finds the event.  Index only events that give the document a new
  //     version: within one life of a document (insert .. delete) the
  //     indexed versions must grow by exactly 1 per event, starting wherever
  //     the insert puts them (the engine: 0).
  // REQUIRES: seq came from AllocateSeq and is not published.
  // Errors: BadValue (null event; an "at" that is not a date; index_doc with
  // an empty doc_key or on an "op": "conflict" event; doc_key over 4 GiB),
  // or the RocksDB error of the put (InternalError / WriteConflict).
  Status AddToTransaction(rocksdb::Transaction* txn, uint64_t seq, const bson_t* event,
                          std::string_view doc_key, int64_t version_after, bool index_doc);
  // The writer's path, in two steps: the event is encoded into its value
  // before the commit mutex is taken, and only its seq is written in under
  // it.  PrepareWriterEvent encodes `event` as it stands, its seq
  // placeholder still 0; AddPreparedToTransaction writes `seq` into the
  // placeholder and puts the value, as AddToTransaction with index_doc
  // false would.
  // REQUIRES (PrepareWriterEvent): `event` starts with the int64 "seq"
  // placeholder, holds no other "seq" and holds a date "at", as the
  // engine's event builders (engine/storage/write_events.h) make every
  // event; a debug build checks it.  doc_key as for AddToTransaction.
  // REQUIRES (AddPreparedToTransaction): seq as for AddToTransaction;
  // `value` came from PrepareWriterEvent (or BeginWriterValue) with this
  // doc_key; a debug build checks its event's shape again.
  static void PrepareWriterEvent(const bson_t* event, std::string_view doc_key, std::string* value);
  // PrepareWriterEvent without the event as a bson_t: *value is reset to
  // the value's header and doc_key, and the caller appends the event's BSON
  // (engine/storage/write_events.h: EncodeWriteEvent), as PrepareWriterEvent
  // requires it to be.
  static void BeginWriterValue(std::string_view doc_key, std::string* value);
  Status AddPreparedToTransaction(rocksdb::Transaction* txn, uint64_t seq, std::string_view doc_key,
                                  std::string* value);
  // The same for a plain WriteBatch (conflict events, written outside a
  // transaction).  Errors: as AddToTransaction.
  Status AddToBatch(rocksdb::WriteBatch* batch, uint64_t seq, const bson_t* event,
                    std::string_view doc_key, int64_t version_after, bool index_doc);

  // ---- Reading.  Any thread.

  // The last published seq (0 when no event was ever written).
  uint64_t last_seq() const GATEDB_EXCLUDES(mu_);
  // The first retained seq: 1 when nothing was ever collected; last_seq() + 1
  // when everything was.
  uint64_t first_seq() const GATEDB_EXCLUDES(mu_);

  struct ReadOptions {
    // Events with seq > after_seq.  Default: 0 (from the start).
    uint64_t after_seq = 0;
    // "" = all namespaces; otherwise only events whose "ns" field equals it.
    std::string ns;
    // "" = no prefix filter; otherwise only events whose "ns" starts with it
    // ("db." for every collection of one database).
    std::string ns_prefix;
    // At most this many events; 0 = no limit.  Default: 100.
    size_t limit = 100;
  };
  struct ReadResult {
    // In seq order, each with "seq" first.
    std::vector<Document> events;
    // The journal's last published seq when the read began.
    uint64_t last_seq = 0;
    // Pass as the next after_seq to continue without re-scanning: the seq of
    // the last event returned when `limit` was reached, otherwise last_seq
    // (every event up to it was examined).
    uint64_t next_after_seq = 0;
  };
  // Events with seq > after_seq, in seq order, never past the last published
  // seq.  Errors: ChangeStreamHistoryLost when after_seq + 1 < first_seq() (events after
  // after_seq were collected; never a silent gap); DataCorruptionDetected
  // (a malformed or missing event below last_seq); InternalError (RocksDB).
  StatusOr<ReadResult> Read(const ReadOptions& opts) const GATEDB_EXCLUDES(mu_);

  // Blocks until last_seq() > after_seq or `timeout` passes.  True when there
  // are events after after_seq.
  bool WaitForEvents(uint64_t after_seq, std::chrono::milliseconds timeout) const
      GATEDB_EXCLUDES(mu_);

  // The indexed events of one document (by its storage key) whose
  // version_after > after_version, oldest first, within the document's
  // current life (events before its latest re-insert are not returned).
  // after_version = -1 asks for the whole life (insert included).
  // On error *events is left empty.
  // Errors: ChangeStreamHistoryLost when that history is not complete any more (an event
  // in the range was collected), or cannot be proven complete because every
  // event of the document at or after after_version was collected; callers
  // that know the document's current version should not ask when it equals
  // after_version.  DataCorruptionDetected, InternalError as Read.
  Status EventsForDocument(std::string_view doc_key, int64_t after_version,
                           std::vector<Document>* events) const GATEDB_EXCLUDES(mu_);

  // ---- Retention.  Any thread; concurrent calls are serialized.

  // Collects (deletes) the oldest events: those whose "at" is older than
  // clock - retention_ms (stopping at the first younger event: collection
  // removes a prefix of the journal), and beyond max_events.  Writes the new
  // first_seq to "journal_meta" FIRST, so readers get NoSuchKey rather than a
  // gap, then deletes the events and their "journal_doc" entries in batches
  // of ~1000 through the base DB.  Never takes the commit mutex, never
  // collects an unpublished seq.  Also finishes a deletion that a crash
  // interrupted.  Errors: DataCorruptionDetected, InternalError.
  Status Collect() GATEDB_EXCLUDES(collect_mu_, mu_);

  // Starts a thread that calls Collect() every collect_interval_ms (errors
  // are kept in last_collect_status()).  No-op when already running.
  void StartBackgroundCollector() GATEDB_EXCLUDES(bg_mu_);
  // Stops and joins the collector thread.  Idempotent.
  void Stop() GATEDB_EXCLUDES(bg_mu_);
  // The Status of the collector thread's latest Collect().
  Status last_collect_status() const GATEDB_EXCLUDES(bg_mu_);

 private:
  Journal(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* journal_cf,
          rocksdb::ColumnFamilyHandle* doc_cf, rocksdb::ColumnFamilyHandle* meta_cf,
          const JournalOptions& opts, std::function<int64_t()> clock_ms);

  struct EncodedEvent;
  Status Encode(uint64_t seq, const bson_t* event, std::string_view doc_key, int64_t version_after,
                bool index_doc, EncodedEvent* out) const;
  // REQUIRES: new_first is the first_seq in journal_meta.
  Status DeleteCollected(uint64_t new_first) GATEDB_REQUIRES(collect_mu_);
  void CollectorLoop() GATEDB_EXCLUDES(bg_mu_);

  // Constant after construction.
  rocksdb::TransactionDB* const db_;
  rocksdb::ColumnFamilyHandle* const journal_cf_;
  rocksdb::ColumnFamilyHandle* const doc_cf_;
  rocksdb::ColumnFamilyHandle* const meta_cf_;
  const JournalOptions opts_;
  const std::function<int64_t()> clock_ms_;

  // Protected by the caller's commit mutex (not annotated: the journal does
  // not know that mutex).
  uint64_t allocated_ = 0;  // last allocated seq

  mutable Mutex mu_;
  mutable CondVar published_cv_;  // signalled by Published
  uint64_t published_ GATEDB_GUARDED_BY(mu_) = 0;  // last published seq
  uint64_t first_ GATEDB_GUARDED_BY(mu_) = 1;      // first retained seq

  Mutex collect_mu_;  // serializes Collect
  // Every event below it is deleted.
  uint64_t deleted_below_ GATEDB_GUARDED_BY(collect_mu_) = 0;

  mutable Mutex bg_mu_;
  CondVar bg_cv_;
  bool bg_stop_ GATEDB_GUARDED_BY(bg_mu_) = false;
  Status bg_status_ GATEDB_GUARDED_BY(bg_mu_);
  std::thread bg_thread_ GATEDB_GUARDED_BY(bg_mu_);  // joined outside bg_mu_
};

}  // namespace wal
}  // namespace gatedb

#endif  // GATEDB_WAL_JOURNAL_H_
