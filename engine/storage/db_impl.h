// File: engine/storage/db_impl.h
//
// DBImpl: one open gatedb data directory.  It owns the RocksDB
// TransactionDB, the catalog of collections, and the engine entry points
// that every door (typed C++ API, command dispatcher) calls with the
// request structs of requests.h.
//
// Concurrency: every public method is thread-safe.  A single-document write
// is one pessimistic RocksDB transaction: the document's key is locked with
// GetForUpdate, the filter is re-checked on the locked, latest value, the
// update is applied, and the commit is one atomic write.  Two writers of one
// document therefore serialize and never lose an update.  Reads never lock.
#ifndef GATEDB_ENGINE_STORAGE_DB_IMPL_H_
#define GATEDB_ENGINE_STORAGE_DB_IMPL_H_

#include <rocksdb/utilities/transaction_db.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/storage/requests.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {

namespace query {
class Matcher;
}
namespace update {
class UpdateDriver;
}

class DBImpl {
 public:
  // Errors: InternalError / DataCorruptionDetected from RocksDB (for example
  // when another process holds the directory's lock).
  static StatusOr<std::unique_ptr<DBImpl>> Open(const std::string& path, const Options& options);
  ~DBImpl();

  DBImpl(const DBImpl&) = delete;
  DBImpl& operator=(const DBImpl&) = delete;

  // Catalog.
  // Errors: InvalidNamespace, NamespaceExists, InvalidOptions.
  Status CreateCollection(const Namespace& ns, const CollectionOptions& options);
  // Errors: NamespaceNotFound.
  Status DropCollection(const Namespace& ns);
  // Collections of one database, by name.
  std::vector<CollectionInfo> ListCollections(const std::string& db) const;
  // Errors: NamespaceNotFound.
  StatusOr<CollectionInfo> GetCollectionInfo(const Namespace& ns) const;
  std::vector<std::string> ListDatabases() const;
  // Drops every collection of `db`.
  Status DropDatabase(const std::string& db);

  // CRUD.  A whole-request error (bad namespace, unparsable filter in a
  // read) is the Status; a per-statement error of a write is a WriteError in
  // the result.
  StatusOr<InsertResult> Insert(const InsertRequest& req);
  StatusOr<UpdateWriteResult> Update(const UpdateRequest& req);
  StatusOr<DeleteWriteResult> Delete(const DeleteRequest& req);
  StatusOr<FindResult> Find(const FindRequest& req);
  StatusOr<FindAndModifyResult> FindAndModify(const FindAndModifyRequest& req);
  StatusOr<int64_t> Count(const CountRequest& req);
  // Distinct values, sorted in BSON order.
  StatusOr<std::vector<Value>> Distinct(const DistinctRequest& req);

  const Options& options() const { return options_; }

 private:
  struct Collection;  // catalog entry plus its drop lock
  struct WriteOutcome;

  DBImpl(const std::string& path, const Options& options);
  Status OpenRocks();
  Status LoadCatalog();

  // The collection, or null when it does not exist.
  std::shared_ptr<Collection> FindCollection(const Namespace& ns) const;
  // The collection, created (as MongoDB does on first write) when missing.
  StatusOr<std::shared_ptr<Collection>> GetOrCreateCollection(const Namespace& ns);
  // REQUIRES: catalog_mu_ held exclusively.
  Status CreateCollectionLocked(const Namespace& ns, const CollectionOptions& options,
                                std::shared_ptr<Collection>* out);

  rocksdb::WriteOptions RocksWriteOptions(const WriteOptionsInternal& w) const;

  // Keys of the documents that match right now (read without locks), at
  // most `limit` (0: all).  Uses a point lookup when the filter pins _id.
  Status CandidateKeys(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                       size_t limit, std::vector<std::string>* keys) const;
  // Matching documents (copies) with their keys, for sorted selection.
  Status MatchingDocs(const Collection& coll, const bson_t* filter, const query::Matcher& matcher,
                      std::vector<std::pair<std::string, Document>>* out) const;

  // One document's read-modify-write under its lock: re-checks `matcher` on
  // the latest value, applies `driver`, bumps the version when the document
  // changed, commits.  Retries internally on lock conflicts.
  Status UpdateDocument(const Collection& coll, const std::string& key, const query::Matcher& matcher,
                        const update::UpdateDriver& driver, const WriteOptionsInternal& w,
                        WriteOutcome* out);
  // The insert half of an upsert: the query's equality fields, then the
  // update applied as an insert.  Sets out->raced when another writer
  // inserted the same _id first (the caller retries as an update).
  Status UpsertDocument(const Collection& coll, const bson_t* query, const update::UpdateDriver& driver,
                        const WriteOptionsInternal& w, WriteOutcome* out);
  Status DeleteDocument(const Collection& coll, const std::string& key, const query::Matcher& matcher,
                        const WriteOptionsInternal& w, WriteOutcome* out);

  Status UpdateStatementImpl(const Collection& coll, const UpdateStatement& stmt, size_t index,
                             const WriteOptionsInternal& w, UpdateWriteResult* result);
  Status DeleteStatementImpl(const Collection& coll, const DeleteStatement& stmt,
                             const WriteOptionsInternal& w, int64_t* n);

  const std::string path_;
  const Options options_;

  rocksdb::TransactionDB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* catalog_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* docs_cf_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;

  mutable std::shared_mutex catalog_mu_;
  std::map<std::string, std::shared_ptr<Collection>> collections_;  // GUARDED_BY(catalog_mu_), key: full ns
  uint32_t next_collection_id_ = 1;                                 // GUARDED_BY(catalog_mu_)
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_DB_IMPL_H_
