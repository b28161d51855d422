// Side records (DBImpl::PutSideRecord): a feature's keyed BSON records in
// the "side" column family, each key "<space>\0<key>".
#include <rocksdb/utilities/transaction_db.h>

#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"

namespace gatedb {

namespace {

std::string SideKey(std::string_view space, std::string_view key) {
  std::string k;
  k.reserve(space.size() + 1 + key.size());
  k.append(space);
  k.push_back('\0');
  k.append(key);
  return k;
}

Status BadSpace(std::string_view space) {
  if (space.empty() || space.find('\0') != std::string_view::npos) {
    return Status(ErrorCode::kBadValue, "a side record's space must be a non-empty name without NUL");
  }
  return Status::OK();
}

// A stored record's bytes as BSON (records only ever come from
// PutSideRecord's BSON, under RocksDB's block checksums: the framing is
// checked, not every element again).
Status ViewRecord(std::string_view space, const char* data, size_t size, bson_t* out) {
  if (!bson_init_static(out, reinterpret_cast<const uint8_t*>(data), size)) {
    return Status(ErrorCode::kDataCorruptionDetected, "a side record of " + std::string(space) + " is not BSON");
  }
  return Status::OK();
}

}  // namespace

// A write of its own is as durable as the store's writes (Options::sync).
rocksdb::WriteOptions DBImpl::SideWriteOptions() const {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return wo;
}

Status DBImpl::PutSideRecord(WriteScope* scope, std::string_view space, std::string_view key, const bson_t* value) {
  RETURN_IF_ERROR(BadSpace(space));
  const std::string k = SideKey(space, key);
  rocksdb::Slice v(reinterpret_cast<const char*>(bson_get_data(value)), value->len);
  if (scope != nullptr) return FromRocks(scope->txn->Put(side_cf_, k, v));
  return FromRocks(db_->Put(SideWriteOptions(), side_cf_, k, v));
}

Status DBImpl::DeleteSideRecord(WriteScope* scope, std::string_view space, std::string_view key) {
  RETURN_IF_ERROR(BadSpace(space));
  const std::string k = SideKey(space, key);
  if (scope != nullptr) return FromRocks(scope->txn->Delete(side_cf_, k));
  return FromRocks(db_->Delete(SideWriteOptions(), side_cf_, k));
}

Status DBImpl::WriteSideRecords(const std::vector<SideRecordWrite>& writes) {
  rocksdb::WriteBatch batch;
  for (const SideRecordWrite& w : writes) {
    RETURN_IF_ERROR(BadSpace(w.space));
    const std::string k = SideKey(w.space, w.key);
    rocksdb::Status rs = w.value ? batch.Put(side_cf_, k, rocksdb::Slice(reinterpret_cast<const char*>(w.value->data()), w.value->size()))
                                 : batch.Delete(side_cf_, k);
    RETURN_IF_ERROR(FromRocks(rs));
  }
  return FromRocks(db_->Write(SideWriteOptions(), &batch));
}

StatusOr<std::optional<Document>> DBImpl::GetSideRecord(WriteScope* scope, std::string_view space,
                                                        std::string_view key) {
  RETURN_IF_ERROR(BadSpace(space));
  const std::string k = SideKey(space, key);
  std::string value;
  bool found = false;
  if (scope != nullptr) {
    RETURN_IF_ERROR(scope->txn.GetForUpdate(side_cf_, k, &value, &found));
  } else {
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), side_cf_, k, &value);
    if (!rs.ok() && !rs.IsNotFound()) return FromRocks(rs);
    found = rs.ok();
  }
  if (!found) return std::optional<Document>();
  bson_t v;
  RETURN_IF_ERROR(ViewRecord(space, value.data(), value.size(), &v));
  return std::optional<Document>(Document::Copy(&v));
}

Status DBImpl::ScanSideRecords(std::string_view space, std::string_view prefix,
                               const std::function<Status(std::string_view key, DocumentView value)>& fn) {
  RETURN_IF_ERROR(BadSpace(space));
  const std::string start = SideKey(space, prefix);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), side_cf_));
  for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
    bson_t v;
    RETURN_IF_ERROR(ViewRecord(space, it->value().data(), it->value().size(), &v));
    std::string_view key(it->key().data() + space.size() + 1, it->key().size() - space.size() - 1);
    RETURN_IF_ERROR(fn(key, DocumentView(&v)));
  }
  return FromRocks(it->status());
}

}  // namespace gatedb
