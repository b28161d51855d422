// DBImpl: the store's key format version (engine/keys/key_format.h) and the
// migration of a version-1 directory.
//
// The catalog's "meta:format_version" holds the version as uint32 BE.  A
// directory without it was written before versions were recorded: version
// 1, whose keys encode a decimal128 as its nearest 80-bit long double.
// Version 2 encodes decimals exactly; the two differ only in keys holding a
// decimal that no 64-bit binary value equals ("inexact"), so the migration
// touches only those:
//   1. documents whose _id holds an inexact decimal (at any depth) move to
//      their version-2 key, each document with its lease in one batch;
//   2. every secondary index of a collection in which some document holds
//      an inexact decimal anywhere, and every index whose partial filter
//      holds one, is rebuilt: its entries deleted, then built again from
//      the documents (BuildIndex), so keys and the _id encodings in entry
//      values are version 2; other indexes hold no decimal-dependent bytes
//      and stay;
//   3. the version record is written (synced), last.
// Each step is idempotent (a document already at its version-2 key is
// skipped; a rebuild starts by deleting what a previous attempt built), and
// until step 3 the directory still says version 1, so a process killed at
// any point migrates again at the next open.  Journal records keep the
// document key they were written with (the journal is history; its
// per-document index is only read for records of the first record format),
// and api-level side records (sync's bases, keyed by an encoded _id) are not
// re-keyed.
#include <atomic>
#include <string>

#include "engine/index/index_keys.h"
#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"
#include "engine/util/coding.h"
#include "engine/util/rocks_status.h"

namespace gatedb {

namespace {

std::atomic<int> stop_migration_after{-1};

constexpr size_t kMigrationBatch = 1000;  // documents re-keyed per write

}  // namespace

void DBImpl::TEST_StopMigrationAfter(int steps) { stop_migration_after.store(steps); }

Status DBImpl::CheckKeyFormat() {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_cf_, kCatalogFormatVersionKey, &value);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s);
  uint32_t version = 1;
  if (s.ok()) {
    if (value.size() != 4) return Status(ErrorCode::kDataCorruptionDetected, "a malformed key format version record");
    version = DecodeFixed32BE(value.data());
  }
  if (version == kKeyFormatVersion) return Status::OK();
  if (version > kKeyFormatVersion) {
    return Status(ErrorCode::kIllegalOperation, "data directory '" + path_ + "' has key format version " +
                                                    std::to_string(version) + ", written by a newer gatedb; this one "
                                                    "reads versions 1 and " + std::to_string(kKeyFormatVersion));
  }
  bool any_collection = false;
  {
    ReaderLock lock(&catalog_mu_);
    any_collection = !collections_.empty();
  }
  if (any_collection) RETURN_IF_ERROR(MigrateKeyFormat());
  std::string record;
  PutFixed32BE(&record, kKeyFormatVersion);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Put(wo, catalog_cf_, kCatalogFormatVersionKey, record));
}

Status DBImpl::MigrateKeyFormat() {
  std::vector<std::shared_ptr<Collection>> colls;
  {
    ReaderLock lock(&catalog_mu_);
    for (const auto& [name, coll] : collections_) colls.push_back(coll);
  }
  int steps = 0;
  for (const std::shared_ptr<Collection>& coll : colls) RETURN_IF_ERROR(MigrateCollectionKeys(*coll, &steps));
  return Status::OK();
}

Status DBImpl::MigrateCollectionKeys(const Collection& coll, int* steps) {
  auto step = [&]() -> Status {
    ++*steps;
    const int stop = stop_migration_after.load();
    if (stop >= 0 && *steps >= stop) {
      return Status(ErrorCode::kInternalError, "TEST_StopMigrationAfter: the migration stopped at step " +
                                                   std::to_string(*steps));
    }
    return Status::OK();
  };
  const std::string prefix = keys::CollectionPrefix(coll.info.id);
  const std::string end = keys::CollectionUpperBound(coll.info.id);
  bool holds_inexact = false;
  {
    // The iterator reads one implicit snapshot: the keys written below are
    // not met again.
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper(end);
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, docs_cf_));
    rocksdb::WriteBatch batch;
    size_t moved = 0;
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      RecordView rec;
      RETURN_IF_ERROR(DecodeRecord(std::string_view(it->value().data(), it->value().size()), &rec));
      if (!keys::HasInexactDecimal(&rec.doc)) continue;
      holds_inexact = true;
      bson_value_t id;
      if (!GetId(&rec.doc, &id) || !keys::HasInexactDecimal(id)) continue;
      const std::string key = keys::EncodeDocKey(coll.info.id, id);
      if (rocksdb::Slice(key) == it->key()) continue;  // migrated by an earlier attempt
      RETURN_IF_ERROR(FromRocks(batch.Put(docs_cf_, key, it->value())));
      RETURN_IF_ERROR(FromRocks(batch.Delete(docs_cf_, it->key())));
      std::string lease;
      rocksdb::Status ls = db_->Get(rocksdb::ReadOptions(), leases_cf_, it->key(), &lease);
      if (ls.ok()) {
        RETURN_IF_ERROR(FromRocks(batch.Put(leases_cf_, key, lease)));
        RETURN_IF_ERROR(FromRocks(batch.Delete(leases_cf_, it->key())));
      } else if (!ls.IsNotFound()) {
        return FromRocks(ls);
      }
      if (++moved % kMigrationBatch == 0) {
        RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
        batch.Clear();
        RETURN_IF_ERROR(step());
      }
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
    if (batch.Count() > 0) {
      RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
      RETURN_IF_ERROR(step());
    }
  }
  std::shared_ptr<const IndexCatalog> indexes = coll.indexes();
  for (const std::shared_ptr<const IndexEntry>& e : indexes->entries) {
    // A partial filter with such a decimal chose its documents inexactly.
    const bool filter_inexact = e->spec.has_partial_filter() && keys::HasInexactDecimal(e->spec.partial_filter.bson());
    if (!holds_inexact && !filter_inexact) continue;
    RETURN_IF_ERROR(DeleteIndexRange(index::IndexPrefix(coll.info.id, e->spec.id)));
    RETURN_IF_ERROR(step());
    RETURN_IF_ERROR(BuildIndex(coll, e, {}));
    RETURN_IF_ERROR(step());
  }
  return Status::OK();
}

}  // namespace gatedb
