// dbStats / collStats / listDatabases sizes: DBImpl::CollectionStats.
#include <rocksdb/db.h>

#include <memory>

#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/record.h"
#include "engine/util/rocks_status.h"

namespace gatedb {

StatusOr<CollectionStatsResult> DBImpl::CollectionStats(const Namespace& ns, bool count_documents) {
  auto coll = FindCollection(ns);
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "Collection [" + ns.full() + "] not found.");
  CollectionStatsResult r;
  const std::string prefix = keys::CollectionPrefix(coll->info.id);
  const std::string end = keys::CollectionUpperBound(coll->info.id);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;  // a statistics pass should not evict the working set
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, docs_cf_));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    RecordView rec;
    RETURN_IF_ERROR(DecodeRecord(std::string_view(it->value().data(), it->value().size()), &rec));
    ++r.count;
    r.data_bytes += rec.doc.len;
    if (!count_documents) break;
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  rocksdb::Range range(prefix, end);
  rocksdb::SizeApproximationOptions so;
  so.include_memtables = true;
  so.include_files = true;
  uint64_t size = 0;
  RETURN_IF_ERROR(FromRocks(db_->GetApproximateSizes(so, docs_cf_, &range, 1, &size)));
  r.storage_bytes = size;
  size = 0;
  RETURN_IF_ERROR(FromRocks(db_->GetApproximateSizes(so, index_cf_, &range, 1, &size)));
  r.index_bytes = size;
  auto indexes = ListIndexes(ns);
  if (indexes.ok()) r.num_indexes = static_cast<int>(indexes->size());
  return r;
}

void DBImpl::AppendStorageStats(const CollectionStatsResult& st, int64_t scale, bson_t* out) {
  bson_t sizes;
  BSON_APPEND_INT64(out, "size", static_cast<int64_t>(st.data_bytes) / scale);
  BSON_APPEND_INT64(out, "count", st.count);
  BSON_APPEND_INT64(out, "avgObjSize", st.count > 0 ? static_cast<int64_t>(st.data_bytes) / st.count : 0);
  BSON_APPEND_INT64(out, "storageSize", static_cast<int64_t>(st.storage_bytes) / scale);
  BSON_APPEND_INT64(out, "freeStorageSize", 0);
  BSON_APPEND_BOOL(out, "capped", false);
  BSON_APPEND_INT64(out, "nindexes", st.num_indexes);
  BSON_APPEND_INT64(out, "totalIndexSize", static_cast<int64_t>(st.index_bytes) / scale);
  BSON_APPEND_INT64(out, "totalSize", static_cast<int64_t>(st.storage_bytes + st.index_bytes) / scale);
  BSON_APPEND_DOCUMENT_BEGIN(out, "indexSizes", &sizes);  // per-index sizes are not kept
  bson_append_document_end(out, &sizes);
  BSON_APPEND_INT64(out, "scaleFactor", scale);
}

}  // namespace gatedb
