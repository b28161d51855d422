// File: engine/storage/idempotency.h
//
// The task-level idempotency log: (taskId, writeSeq) -> the command's
// fingerprint, the reply it got, and when.  A keyed write command runs at
// most once per key: its record is written in the same RocksDB transaction
// as its effects (WriteScope), so after any crash either both are there or
// neither is.  Concurrent requests with one key are serialized in-process
// (Claim) so that exactly one executes and the others replay its reply.
//
// Column family "idempotency":
//   key   = taskId bytes + 0x00 + writeSeq (int64, sign-flipped, 8 bytes BE)
//   value = BSON {fp: BinData(0, 16 bytes XXH3-128), at: date, ns: string,
//                 reply: document, fpv: int32}                  DO NOT CHANGE
//   fpv: the fingerprint's format (engine/storage/fingerprint.h); records
//   without it were written before format 2 and hold format 1.
//
// Thread safety: all methods may be called concurrently.  The locks are
// annotated for clang's thread-safety analysis (engine/util/mutex.h).
#ifndef GATEDB_ENGINE_STORAGE_IDEMPOTENCY_H_
#define GATEDB_ENGINE_STORAGE_IDEMPOTENCY_H_

#include <rocksdb/utilities/transaction_db.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/util/mutex.h"
#include "engine/util/thread_annotations.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {

struct IdempotencyRecord {
  std::string fingerprint;  // 16 bytes
  int fingerprint_format = 1;
  int64_t at_ms = 0;
  std::string ns;
  // The writeContext.agentId of the write that stored it; nullopt in records
  // written before agents were recorded.  A caller acting as a user replays
  // only its own agent's records (DBImpl::StoredReply).
  std::optional<std::string> agent;
  Document reply;
};

class IdempotencyLog {
 public:
  static constexpr char kColumnFamily[] = "idempotency";
  // Task ids of retryable writes sent by drivers: "lsid:" + the session id
  // (api/commands).  A driver retries within its session's lifetime
  // (logicalSessionTimeoutMinutes, 30), so these records are collected
  // after kSessionRecordRetentionMs, not the full retention: every driver
  // write is a retryable write, and MongoDB too keeps only what a retry
  // can still ask for.
  static constexpr char kSessionTaskPrefix[] = "lsid:";
  static constexpr int64_t kSessionRecordRetentionMs = 60LL * 60 * 1000;

  IdempotencyLog(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* cf, int64_t retention_ms,
                 std::function<int64_t()> clock_ms);
  ~IdempotencyLog();

  static std::string EncodeKey(const std::string& task_id, int64_t write_seq);
  // Errors: BadValue for a task id holding a NUL byte.
  static Status ValidateTaskId(const std::string& task_id);
  static std::string EncodeRecord(const IdempotencyRecord& record);

  // The stored record for the key, if any.  Errors: DataCorruptionDetected.
  StatusOr<std::optional<IdempotencyRecord>> Lookup(const std::string& key) const;

  // Every stored write of a task, by writeSeq.
  StatusOr<std::vector<std::pair<int64_t, IdempotencyRecord>>> ListTask(const std::string& task_id) const;

  // Claims the key for this thread: returns when no other request with the
  // key is executing.  Pair every Claim with Release (use ClaimGuard).
  void Claim(const std::string& key) GATEDB_EXCLUDES(mu_);
  void Release(const std::string& key) GATEDB_EXCLUDES(mu_);

  // Holds a claim on one key for its scope.  Not a scoped capability: a
  // claim is an entry of in_flight_, not a lock the analysis could track
  // (mu_ is held only inside Claim and Release, never across the scope).
  class ClaimGuard {
   public:
    ClaimGuard(IdempotencyLog* log, std::string key) : log_(log), key_(std::move(key)) { log_->Claim(key_); }
    ~ClaimGuard() { log_->Release(key_); }
    ClaimGuard(const ClaimGuard&) = delete;
    ClaimGuard& operator=(const ClaimGuard&) = delete;

   private:
    IdempotencyLog* log_;
    std::string key_;
  };

  rocksdb::ColumnFamilyHandle* cf() const { return cf_; }
  int64_t now_ms() const { return clock_ms_(); }

  // Deletes records older than the retention.  Does not take any lock that
  // writers hold; a key collected while its retry is in flight behaves as
  // never seen (the version gate and unique keys still apply).
  StatusOr<uint64_t> Collect();
  // Starts a thread that calls Collect() every interval_ms.  No-op when one
  // is running.
  void StartBackgroundCollector(int64_t interval_ms) GATEDB_EXCLUDES(bg_mu_);
  // Stops and joins the collector thread.  Idempotent.
  void Stop() GATEDB_EXCLUDES(bg_mu_);

 private:
  void CollectorLoop(int64_t interval_ms) GATEDB_EXCLUDES(bg_mu_);

  rocksdb::TransactionDB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  const int64_t retention_ms_;
  const std::function<int64_t()> clock_ms_;

  Mutex mu_;
  CondVar cv_;  // signalled by Release
  std::set<std::string> in_flight_ GATEDB_GUARDED_BY(mu_);  // the claimed keys

  Mutex bg_mu_;
  CondVar bg_cv_;  // signalled by Stop
  bool bg_stop_ GATEDB_GUARDED_BY(bg_mu_) = false;
  std::thread bg_ GATEDB_GUARDED_BY(bg_mu_);  // joined outside bg_mu_
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_IDEMPOTENCY_H_
