// Internal to engine/storage: the parts of DBImpl shared by its .cc files.
#ifndef GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_
#define GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_

#include <shared_mutex>

#include "engine/storage/db_impl.h"

namespace gatedb {

struct DBImpl::Collection {
  CollectionInfo info;  // constant after creation
  // Writers hold it shared for the length of a write; drop takes it
  // exclusively, so no write lands in a dropped collection.
  std::shared_mutex drop_mu;
  bool dropped = false;  // GUARDED_BY(drop_mu)
};

struct DBImpl::WriteOutcome {
  bool matched = false;   // a document matched (and was locked)
  bool modified = false;  // it changed (update) or was removed (delete)
  bool raced = false;     // upsert: another writer inserted this _id first
  bool want_before = false;
  bool want_after = false;
  Document before;  // the old document, when want_before
  Document after;   // the new document, when want_after
  std::optional<Value> upserted_id;
};

// How many times a single-document write retries a lock conflict before
// reporting WriteConflict.
constexpr int kMaxWriteRetries = 20;

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_DB_IMPL_INTERNAL_H_
