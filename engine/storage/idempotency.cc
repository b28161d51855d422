#include "engine/storage/idempotency.h"

#include <algorithm>
#include <cstring>

#include "engine/document/bson_writer.h"
#include "engine/util/rocks_status.h"
#include "engine/util/coding.h"

namespace gatedb {

constexpr char IdempotencyLog::kColumnFamily[];

IdempotencyLog::IdempotencyLog(rocksdb::TransactionDB* db, rocksdb::ColumnFamilyHandle* cf, int64_t retention_ms,
                               std::function<int64_t()> clock_ms)
    : db_(db), cf_(cf), retention_ms_(retention_ms), clock_ms_(std::move(clock_ms)) {}

IdempotencyLog::~IdempotencyLog() { Stop(); }

std::string IdempotencyLog::EncodeKey(const std::string& task_id, int64_t write_seq) {
  std::string key = task_id;
  key.push_back('\0');
  PutFixed64BE(&key, static_cast<uint64_t>(write_seq) ^ (uint64_t{1} << 63));
  return key;
}

Status IdempotencyLog::ValidateTaskId(const std::string& task_id) {
  if (task_id.find('\0') != std::string::npos) {
    return Status(ErrorCode::kBadValue, "writeContext.taskId must not contain a NUL byte");
  }
  return Status::OK();
}

std::string IdempotencyLog::EncodeRecord(const IdempotencyRecord& record) {
  std::string out;
  BsonWriter b(&out, 64 + record.fingerprint.size() + record.ns.size() + record.reply.bson()->len +
                         (record.agent ? record.agent->size() : 0));
  b.Binary("fp", BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(record.fingerprint.data()),
           static_cast<uint32_t>(record.fingerprint.size()));
  b.DateTime("at", record.at_ms);
  b.Utf8("ns", record.ns);
  b.Document("reply", bson_get_data(record.reply.bson()), record.reply.bson()->len);
  if (record.fingerprint_format != 1) b.Int32("fpv", record.fingerprint_format);
  if (record.agent) b.Utf8("agent", *record.agent);
  b.Finish();
  return out;
}

namespace {

Status DecodeRecord(const rocksdb::Slice& bytes, IdempotencyRecord* out) {
  bson_t b;
  if (!bson_init_static(&b, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad idempotency record");
  }
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &b, "fp") || !BSON_ITER_HOLDS_BINARY(&it)) {
    return Status(ErrorCode::kDataCorruptionDetected, "idempotency record without fingerprint");
  }
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_binary(&it, nullptr, &len, &data);
  out->fingerprint.assign(reinterpret_cast<const char*>(data), len);
  if (bson_iter_init_find(&it, &b, "at") && BSON_ITER_HOLDS_DATE_TIME(&it)) out->at_ms = bson_iter_date_time(&it);
  if (bson_iter_init_find(&it, &b, "ns") && BSON_ITER_HOLDS_UTF8(&it)) out->ns = bson_iter_utf8(&it, nullptr);
  out->fingerprint_format = 1;
  if (bson_iter_init_find(&it, &b, "fpv")) {
    if (!BSON_ITER_HOLDS_INT32(&it)) return Status(ErrorCode::kDataCorruptionDetected, "bad fingerprint format");
    out->fingerprint_format = bson_iter_int32(&it);
  }
  if (bson_iter_init_find(&it, &b, "agent")) {
    if (!BSON_ITER_HOLDS_UTF8(&it)) return Status(ErrorCode::kDataCorruptionDetected, "bad idempotency record agent");
    uint32_t n = 0;
    const char* a = bson_iter_utf8(&it, &n);
    out->agent.emplace(a, n);
  }
  if (!bson_iter_init_find(&it, &b, "reply") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
    return Status(ErrorCode::kDataCorruptionDetected, "idempotency record without reply");
  }
  bson_iter_document(&it, &len, &data);
  bson_t* reply = bson_new_from_data(data, len);
  if (reply == nullptr) return Status(ErrorCode::kDataCorruptionDetected, "bad stored reply");
  out->reply = Document::Adopt(reply);
  return Status::OK();
}

}  // namespace

StatusOr<std::optional<IdempotencyRecord>> IdempotencyLog::Lookup(const std::string& key) const {
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, key, &value);
  if (s.IsNotFound()) return std::optional<IdempotencyRecord>();
  RETURN_IF_ERROR(FromRocks(s));
  IdempotencyRecord rec;
  RETURN_IF_ERROR(DecodeRecord(value, &rec));
  return std::optional<IdempotencyRecord>(std::move(rec));
}

StatusOr<std::vector<std::pair<int64_t, IdempotencyRecord>>> IdempotencyLog::ListTask(
    const std::string& task_id) const {
  RETURN_IF_ERROR(ValidateTaskId(task_id));
  std::string prefix = task_id;
  prefix.push_back('\0');
  std::vector<std::pair<int64_t, IdempotencyRecord>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != prefix.size() + 8) continue;
    int64_t seq = static_cast<int64_t>(DecodeFixed64BE(it->key().data() + prefix.size()) ^ (uint64_t{1} << 63));
    IdempotencyRecord rec;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &rec));
    out.emplace_back(seq, std::move(rec));
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  return out;
}

void IdempotencyLog::Claim(const std::string& key) {
  MutexLock lock(&mu_);
  while (in_flight_.count(key) != 0) cv_.Wait(&mu_);
  in_flight_.insert(key);
}

void IdempotencyLog::Release(const std::string& key) {
  {
    MutexLock lock(&mu_);
    in_flight_.erase(key);
  }
  cv_.SignalAll();
}

StatusOr<uint64_t> IdempotencyLog::Collect() {
  const int64_t now = clock_ms_();
  const int64_t cutoff = now - retention_ms_;
  const int64_t session_cutoff = now - std::min(retention_ms_, kSessionRecordRetentionMs);
  const rocksdb::Slice session_prefix(kSessionTaskPrefix, sizeof(kSessionTaskPrefix) - 1);
  uint64_t collected = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  rocksdb::WriteBatch batch;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    IdempotencyRecord rec;
    const int64_t limit = it->key().starts_with(session_prefix) ? session_cutoff : cutoff;
    if (!DecodeRecord(it->value(), &rec).ok() || rec.at_ms < limit) {
      batch.Delete(cf_, it->key());
      ++collected;
      if (batch.Count() >= 1000) {
        RETURN_IF_ERROR(FromRocks(db_->GetBaseDB()->Write(rocksdb::WriteOptions(), &batch)));
        batch.Clear();
      }
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  if (batch.Count() > 0) RETURN_IF_ERROR(FromRocks(db_->GetBaseDB()->Write(rocksdb::WriteOptions(), &batch)));
  return collected;
}

void IdempotencyLog::StartBackgroundCollector(int64_t interval_ms) {
  MutexLock lock(&bg_mu_);
  if (bg_.joinable()) return;
  bg_stop_ = false;
  bg_ = std::thread([this, interval_ms] { CollectorLoop(interval_ms); });
}

void IdempotencyLog::CollectorLoop(int64_t interval_ms) {
  const std::chrono::milliseconds interval(interval_ms);
  for (;;) {
    {
      MutexLock lock(&bg_mu_);
      // The predicate is checked before the first wait too: a stop requested
      // while Collect ran ends the loop at once.
      if (bg_cv_.WaitFor(&bg_mu_, interval, [&]() GATEDB_REQUIRES(bg_mu_) { return bg_stop_; })) return;
    }
    Collect().status().PermitUnchecked();
  }
}

void IdempotencyLog::Stop() {
  std::thread t;
  {
    MutexLock lock(&bg_mu_);
    bg_stop_ = true;
    t = std::move(bg_);
  }
  bg_cv_.SignalAll();
  if (t.joinable()) t.join();
}

}  // namespace gatedb
