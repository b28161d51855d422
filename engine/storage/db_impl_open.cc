// DBImpl: opening the store and the catalog of collections.
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>
#include <rocksdb/cache.h>

#include <cstring>
#include <filesystem>

#include "engine/keys/key_codec.h"
#include "engine/schema/validator.h"
#include "engine/util/coding.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/util/rocks_status.h"
#include "engine/storage/write_events.h"
#include "engine/storage/idempotency.h"
#include "wal/journal.h"

#include <rocksdb/slice_transform.h>

namespace gatedb {

namespace {

constexpr char kCatalogCf[] = "catalog";
constexpr char kDocsCf[] = "docs";
// Catalog keys.  DO NOT CHANGE.
constexpr char kCatalogNsPrefix[] = "ns:";                 // + "db.coll" -> collection BSON
constexpr char kCatalogNextIdKey[] = "meta:next_coll_id";  // -> uint32 BE

bool ValidDbName(const std::string& db) {
  if (db.empty() || db.size() >= 64) return false;
  for (char c : db) {
    if (c == '/' || c == '\\' || c == '.' || c == ' ' || c == '"' || c == '$' || c == '*' ||
        c == '<' || c == '>' || c == ':' || c == '|' || c == '?' || c == '\0')
      return false;
  }
  return true;
}

std::string EncodeCollectionInfo(const CollectionInfo& info) {
  bson_t b = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&b, "db", info.ns.db.c_str());
  BSON_APPEND_UTF8(&b, "name", info.ns.coll.c_str());
  BSON_APPEND_INT64(&b, "id", info.id);
  bson_t opts;
  BSON_APPEND_DOCUMENT_BEGIN(&b, "options", &opts);
  BSON_APPEND_UTF8(&opts, "versionField", info.options.version_field.c_str());
  if (info.options.max_basis_age_ms) BSON_APPEND_INT64(&opts, "maxBasisAgeMs", *info.options.max_basis_age_ms);
  AppendConflictPolicy(info.options.conflict_policy, &opts, "conflictPolicy");
  if (!info.options.validator.empty()) BSON_APPEND_DOCUMENT(&opts, "validator", info.options.validator.bson());
  BSON_APPEND_UTF8(&opts, "validationLevel", info.options.validation_level.c_str());
  BSON_APPEND_UTF8(&opts, "validationAction", info.options.validation_action.c_str());
  bson_append_document_end(&b, &opts);
  std::string out(reinterpret_cast<const char*>(bson_get_data(&b)), b.len);
  bson_destroy(&b);
  return out;
}

Status DecodeCollectionInfo(const rocksdb::Slice& bytes, CollectionInfo* info) {
  bson_t b;
  if (!bson_init_static(&b, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad catalog entry");
  }
  bson_iter_t it;
  if (bson_iter_init_find(&it, &b, "db") && BSON_ITER_HOLDS_UTF8(&it)) info->ns.db = bson_iter_utf8(&it, nullptr);
  if (bson_iter_init_find(&it, &b, "name") && BSON_ITER_HOLDS_UTF8(&it)) info->ns.coll = bson_iter_utf8(&it, nullptr);
  if (bson_iter_init_find(&it, &b, "id") && BSON_ITER_HOLDS_INT64(&it)) info->id = static_cast<uint32_t>(bson_iter_int64(&it));
  bson_iter_t f;
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.versionField", &f) &&
      BSON_ITER_HOLDS_UTF8(&f)) {
    info->options.version_field = bson_iter_utf8(&f, nullptr);
  }
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.maxBasisAgeMs", &f) &&
      BSON_ITER_HOLDS_INT64(&f)) {
    info->options.max_basis_age_ms = bson_iter_int64(&f);
  }
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.conflictPolicy", &f) &&
      BSON_ITER_HOLDS_DOCUMENT(&f)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&f, &len, &data);
    bson_t p;
    if (bson_init_static(&p, data, len)) RETURN_IF_ERROR(ParseConflictPolicy(&p, &info->options.conflict_policy));
  }
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.validator", &f) &&
      BSON_ITER_HOLDS_DOCUMENT(&f)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&f, &len, &data);
    StatusOr<Document> v = Document::FromBytes(data, len);
    if (!v.ok()) return Status(ErrorCode::kDataCorruptionDetected, "bad validator in the catalog");
    info->options.validator = std::move(*v);
  }
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.validationLevel", &f) &&
      BSON_ITER_HOLDS_UTF8(&f)) {
    info->options.validation_level = bson_iter_utf8(&f, nullptr);
  }
  if (bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "options.validationAction", &f) &&
      BSON_ITER_HOLDS_UTF8(&f)) {
    info->options.validation_action = bson_iter_utf8(&f, nullptr);
  }
  if (info->id == 0 || info->ns.coll.empty()) {
    return Status(ErrorCode::kDataCorruptionDetected, "incomplete catalog entry");
  }
  RETURN_IF_ERROR(CompileValidator(&info->options));
  return Status::OK();
}

}  // namespace

Status CompileValidator(CollectionOptions* o) {
  if (o->validation_level != "strict" && o->validation_level != "moderate" && o->validation_level != "off") {
    return Status(ErrorCode::kBadValue, "Enumeration value '" + o->validation_level +
                                            "' for field 'validationLevel' is not a valid value.");
  }
  if (o->validation_action != "error" && o->validation_action != "warn") {
    return Status(ErrorCode::kBadValue, "Enumeration value '" + o->validation_action +
                                            "' for field 'validationAction' is not a valid value.");
  }
  o->compiled.reset();
  if (o->validator.empty()) return Status::OK();
  ASSIGN_OR_RETURN(std::unique_ptr<schema::Validator> v, schema::Validator::Parse(o->validator.bson()));
  o->compiled = std::move(v);
  return Status::OK();
}

Status ValidateNamespace(const Namespace& ns) {
  if (!ValidDbName(ns.db)) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid database name: '" + ns.db + "'");
  }
  if (ns.coll.empty()) return Status(ErrorCode::kInvalidNamespace, "Invalid namespace specified '" + ns.full() + "'");
  if (ns.coll.find('\0') != std::string::npos || ns.coll.find('$') != std::string::npos ||
      ns.coll[0] == '.' || ns.coll.back() == '.') {
    return Status(ErrorCode::kInvalidNamespace, "Invalid collection name: '" + ns.coll + "'");
  }
  if (ns.coll.rfind("system.", 0) == 0) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid system namespace: " + ns.full());
  }
  if (ns.db.size() + 1 + ns.coll.size() > 255) {
    return Status(ErrorCode::kInvalidNamespace, "Fully qualified namespace is too long: " + ns.full());
  }
  return Status::OK();
}

DBImpl::DBImpl(const std::string& path, const Options& options) : path_(path), options_(options) {}

int64_t DBImpl::NowMs() const { return options_.clock_ms ? options_.clock_ms() : NowMillis(); }

const char DBImpl::kCatalogFormatVersionKey[] = "meta:format_version";

DBImpl::~DBImpl() {
  StopTtlMonitor();
  cursors_.reset();  // their snapshots and iterators before the database
  if (journal_) journal_->Stop();
  journal_.reset();
  if (idempotency_) idempotency_->Stop();
  idempotency_.reset();
  if (db_ != nullptr) {
    txn_pool_.reset();  // its transactions before their database
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    delete db_;
  }
}

namespace {

// RocksDB 7.8 resumes by itself after a full disk or a retryable I/O error,
// and that recovery is unsafe: the fault-injection tests saw it resume onto
// the failed WAL writer (the next write aborts the process), hang Close
// while the error persists (rocksdb#11440), and once leave the directory
// unopenable.  gatedb turns it off: after a write error the store refuses
// writes (reads still work) until it is reopened.
class NoAutoRecovery : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status /*bg_error*/,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

}  // namespace

StatusOr<std::unique_ptr<DBImpl>> DBImpl::Open(const std::string& path, const Options& options) {
  std::unique_ptr<DBImpl> impl(new DBImpl(path, options));
  RETURN_IF_ERROR(impl->OpenRocks());
  RETURN_IF_ERROR(impl->LoadCatalog());
  RETURN_IF_ERROR(impl->LoadIndexes());
  RETURN_IF_ERROR(impl->CheckKeyFormat());
  RETURN_IF_ERROR(impl->LoadUserCount());
  // Sort runs a crashed process left behind.
  std::error_code ec;
  std::filesystem::remove_all(impl->TempDir(), ec);
  impl->cursors_ = std::make_unique<CursorRegistry>(options.cursor_timeout_ms);
  DBImpl* raw = impl.get();
  impl->ttl_thread_ = std::thread([raw] { raw->TtlLoop(); });
  return impl;
}

Status DBImpl::OpenRocks() {
  rocksdb::Options opts;
  opts.create_if_missing = options_.create_if_missing;
  opts.error_if_exists = options_.error_if_exists;
  opts.create_missing_column_families = true;
  if (options_.env) opts.env = options_.env;
  opts.listeners.push_back(std::make_shared<NoAutoRecovery>());
  opts.max_bgerror_resume_count = 0;
  opts.IncreaseParallelism(2);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options_.block_cache_bytes);
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // Column families read by key (documents, the idempotency log, leases,
  // index entries) get bloom filters, in table files and in the memtable: an insert's
  // existence check and a new key's idempotency lookup are misses, and a
  // miss then costs a filter probe per level instead of a block search.
  // The journal is only scanned: no filter.
  rocksdb::ColumnFamilyOptions point_cf(opts);
  rocksdb::BlockBasedTableOptions point_table = table;
  point_table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  point_cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(point_table));
  point_cf.memtable_prefix_bloom_size_ratio = 0.02;
  point_cf.memtable_whole_key_filtering = true;

  rocksdb::TransactionDBOptions txn_opts;
  txn_opts.transaction_lock_timeout = options_.lock_timeout_ms;

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(opts)},
      {kCatalogCf, rocksdb::ColumnFamilyOptions(opts)},
      {kDocsCf, point_cf},
  };
  // The journal's keys are sequence numbers, each above the last: the
  // memtable inserts each one next to the previous insert (a hint) instead
  // of searching the skip list from its head.  Every key shares one hint:
  // a one-byte prefix, the top byte of a big-endian seq.
  rocksdb::ColumnFamilyOptions journal_cf(opts);
  journal_cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  for (const std::string& name : wal::Journal::ColumnFamilyNames()) {
    cfs.push_back({name, name == wal::Journal::ColumnFamilyNames()[0] ? journal_cf : rocksdb::ColumnFamilyOptions(opts)});
  }
  cfs.push_back({IdempotencyLog::kColumnFamily, point_cf});
  cfs.push_back({"leases", point_cf});
  // Index entries: unique keys are read whole (the unique check of every
  // insert, mostly a miss, and an equality find on a unique index).
  cfs.push_back({"indexes", point_cf});
  // Side records (DBImpl::PutSideRecord): read by key, and scanned by prefix.
  cfs.push_back({"side", point_cf});
  rocksdb::Status s = rocksdb::TransactionDB::Open(opts, txn_opts, path_, cfs, &handles_, &db_);
  if (!s.ok()) {
    db_ = nullptr;
    return Status(s.IsIOError() ? ErrorCode::kInternalError : FromRocks(s).code(),
                  "cannot open data directory '" + path_ + "': " + s.ToString());
  }
  txn_pool_ = std::make_unique<TxnPool>(db_, kKeptTransactions);
  catalog_cf_ = handles_[1];
  docs_cf_ = handles_[2];
  wal::JournalOptions jopts;
  jopts.retention_ms = options_.journal_retention_ms;
  jopts.max_events = options_.journal_max_events;
  ASSIGN_OR_RETURN(journal_, wal::Journal::Open(db_, handles_[3], handles_[4], handles_[5], jopts,
                                                [this] { return NowMs(); }));
  journal_->StartBackgroundCollector();
  idempotency_ = std::make_unique<IdempotencyLog>(db_, handles_[6], options_.idempotency_retention_sec * 1000,
                                                  [this] { return NowMs(); });
  idempotency_->StartBackgroundCollector(60 * 1000);
  leases_cf_ = handles_[7];
  index_cf_ = handles_[8];
  side_cf_ = handles_[9];
  std::unique_ptr<rocksdb::Iterator> lit(db_->NewIterator(rocksdb::ReadOptions(), leases_cf_));
  for (lit->SeekToFirst(); lit->Valid(); lit->Next()) ++lease_records_;
  return Status::OK();
}

Status DBImpl::LoadCatalog() {
  WriterLock lock(&catalog_mu_);
  std::string next;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_cf_, kCatalogNextIdKey, &next);
  if (s.ok() && next.size() == 4) {
    next_collection_id_ = DecodeFixed32BE(next.data());
  } else if (!s.ok() && !s.IsNotFound()) {
    return FromRocks(s);
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
  for (it->Seek(kCatalogNsPrefix); it->Valid() && it->key().starts_with(kCatalogNsPrefix); it->Next()) {
    auto coll = std::make_shared<Collection>();
    RETURN_IF_ERROR(DecodeCollectionInfo(it->value(), &coll->info));
    coll->set_opts(coll->info.options);
    collections_[coll->info.ns.full()] = coll;
    if (coll->info.id >= next_collection_id_) next_collection_id_ = coll->info.id + 1;
  }
  return FromRocks(it->status());
}

std::shared_ptr<DBImpl::Collection> DBImpl::FindCollection(const Namespace& ns) const {
  ReaderLock lock(&catalog_mu_);
  auto it = collections_.find(ns.full());
  return it == collections_.end() ? nullptr : it->second;
}

StatusOr<std::shared_ptr<DBImpl::Collection>> DBImpl::GetOrCreateCollection(const Namespace& ns) {
  if (auto c = FindCollection(ns)) return c;
  RETURN_IF_ERROR(ValidateNamespace(ns));
  WriterLock lock(&catalog_mu_);
  auto it = collections_.find(ns.full());
  if (it != collections_.end()) return it->second;
  std::shared_ptr<Collection> out;
  RETURN_IF_ERROR(CreateCollectionLocked(ns, CollectionOptions(), &out));
  return out;
}

Status DBImpl::CreateCollectionLocked(const Namespace& ns, const CollectionOptions& options,
                                      std::shared_ptr<Collection>* out) {
  auto coll = std::make_shared<Collection>();
  coll->info.ns = ns;
  coll->info.id = next_collection_id_;
  coll->info.options = options;
  coll->set_opts(options);
  std::string next_id;
  PutFixed32BE(&next_id, next_collection_id_ + 1);
  rocksdb::WriteBatch batch;
  batch.Put(catalog_cf_, std::string(kCatalogNsPrefix) + ns.full(), EncodeCollectionInfo(coll->info));
  batch.Put(catalog_cf_, kCatalogNextIdKey, next_id);
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch)));
  ++next_collection_id_;
  collections_[ns.full()] = coll;
  *out = coll;
  return Status::OK();
}

Status DBImpl::CreateCollection(const Namespace& ns, const CollectionOptions& given) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  CollectionOptions options = given;
  RETURN_IF_ERROR(CompileValidator(&options));
  if (options.version_field.empty() || options.version_field[0] == '$' ||
      options.version_field.find('.') != std::string::npos || options.version_field == "_id" ||
      options.version_field.find('\0') != std::string::npos) {
    return Status(ErrorCode::kInvalidOptions,
                  "versionField must be a non-empty top-level field name other than _id, without '.' or a leading '$'");
  }
  if (options.max_basis_age_ms && *options.max_basis_age_ms < 0) {
    return Status(ErrorCode::kInvalidOptions, "maxBasisAgeMs must be >= 0");
  }
  WriterLock lock(&catalog_mu_);
  if (collections_.count(ns.full())) {
    return Status(ErrorCode::kNamespaceExists, "Collection " + ns.full() + " already exists.");
  }
  std::shared_ptr<Collection> out;
  return CreateCollectionLocked(ns, options, &out);
}

Status DBImpl::DropCollection(const Namespace& ns) {
  std::shared_ptr<Collection> coll;
  {
    WriterLock lock(&catalog_mu_);
    auto it = collections_.find(ns.full());
    if (it == collections_.end()) {
      return Status(ErrorCode::kNamespaceNotFound, "ns not found: " + ns.full());
    }
    coll = it->second;
    // Writers hold the collection's drop lock shared for the length of a
    // write; waiting for it exclusively drains them.
    WriterLock drop(&coll->drop_mu);
    // The catalog entry goes in the same commit as the journal's "drop"
    // event: a change stream on the collection ends there (invalidate).
    WriteOptionsInternal plain;
    plain.sync = options_.sync;
    Txn txn(txn_pool_.get(), RocksWriteOptions(plain));
    RETURN_IF_ERROR(FromRocks(txn->Delete(catalog_cf_, std::string(kCatalogNsPrefix) + ns.full())));
    std::vector<PendingEvent> events(1);
    events[0].event = BuildDdlEvent("drop", ns.full(), NowMs());
    RETURN_IF_ERROR(CommitWithEvents(txn, &events));
    coll->dropped = true;
    collections_.erase(it);
  }
  // Collection ids are never reused, so the documents left under the old id
  // are unreachable from here on; removing them is space reclamation.
  return ReclaimCollection(coll->info.id);
}

Status DBImpl::ReclaimCollection(uint32_t collection_id) {
  std::string prefix = keys::CollectionPrefix(collection_id);
  std::string end = keys::CollectionUpperBound(collection_id);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, docs_cf_));
  rocksdb::WriteBatch batch;
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    batch.Delete(docs_cf_, it->key());
    if (batch.Count() >= 1000) {
      RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
      batch.Clear();
    }
  }
  if (batch.Count() > 0) RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
  RETURN_IF_ERROR(FromRocks(it->status()));
  // Its indexes: their definitions, then their entries (all under the
  // collection id's prefix).
  std::string ix_prefix = "ix:" + keys::CollectionPrefix(collection_id);
  std::unique_ptr<rocksdb::Iterator> cit(db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
  rocksdb::WriteBatch cbatch;
  for (cit->Seek(ix_prefix); cit->Valid() && cit->key().starts_with(ix_prefix); cit->Next()) {
    cbatch.Delete(catalog_cf_, cit->key());
  }
  RETURN_IF_ERROR(FromRocks(cit->status()));
  if (cbatch.Count() > 0) RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &cbatch)));
  return DeleteIndexRange(keys::CollectionPrefix(collection_id));
}

Status DBImpl::RenameCollection(const Namespace& from, const Namespace& to, bool drop_target) {
  RETURN_IF_ERROR(ValidateNamespace(from));
  RETURN_IF_ERROR(ValidateNamespace(to));
  if (from.full() == to.full()) return Status(ErrorCode::kIllegalOperation, "Can't rename a collection to itself");
  std::shared_ptr<Collection> replaced;
  {
    WriterLock lock(&catalog_mu_);
    auto it = collections_.find(from.full());
    if (it == collections_.end()) {
      return Status(ErrorCode::kNamespaceNotFound, "Source collection " + from.full() + " does not exist");
    }
    auto target = collections_.find(to.full());
    if (target != collections_.end()) {
      if (!drop_target) return Status(ErrorCode::kNamespaceExists, "target namespace exists: " + to.full());
      replaced = target->second;
    }
    std::shared_ptr<Collection> coll = it->second;
    // Both collections' writers are drained, as for a drop (lock order: the
    // source, then the target; nothing else holds two drop locks).
    WriterLock drop(&coll->drop_mu);
    std::unique_ptr<WriterLock> drop_replaced;
    if (replaced) drop_replaced = std::make_unique<WriterLock>(&replaced->drop_mu);
    auto renamed = std::make_shared<Collection>();
    renamed->info = coll->info;
    renamed->info.ns = to;
    renamed->info.options = *coll->opts();  // collMod's changes included
    renamed->set_opts(renamed->info.options);
    renamed->set_indexes(coll->indexes());
    WriteOptionsInternal plain;
    plain.sync = options_.sync;
    Txn txn(txn_pool_.get(), RocksWriteOptions(plain));
    RETURN_IF_ERROR(FromRocks(txn->Delete(catalog_cf_, std::string(kCatalogNsPrefix) + from.full())));
    RETURN_IF_ERROR(FromRocks(txn->Put(catalog_cf_, std::string(kCatalogNsPrefix) + to.full(), EncodeCollectionInfo(renamed->info))));
    std::vector<PendingEvent> events;
    const int64_t now = NowMs();
    if (replaced) {
      events.emplace_back();
      events.back().event = BuildDdlEvent("drop", to.full(), now);
    }
    events.emplace_back();
    const std::string to_full = to.full();
    events.back().event = BuildDdlEvent("rename", from.full(), now, &to_full);
    RETURN_IF_ERROR(CommitWithEvents(txn, &events));
    coll->dropped = true;  // writers holding it retry, and find the new name
    if (replaced) {
      replaced->drop_mu.AssertHeld();  // drop_replaced holds it
      replaced->dropped = true;
    }
    collections_.erase(it);
    collections_[to.full()] = renamed;
  }
  if (replaced) return ReclaimCollection(replaced->info.id);
  return Status::OK();
}

Status DBImpl::DropDatabase(const std::string& db) {
  bool dropped = false;
  for (const CollectionInfo& info : ListCollections(db)) {
    Status s = DropCollection(info.ns);
    if (!s.ok() && s.code() != ErrorCode::kNamespaceNotFound) return s;
    dropped |= s.ok();
  }
  if (!dropped) return Status::OK();
  // After its collections' "drop" events, one "dropDatabase" event (its ns
  // is the database's name): a change stream on the database ends there.
  WriteOptionsInternal plain;
  plain.sync = options_.sync;
  Txn txn(txn_pool_.get(), RocksWriteOptions(plain));
  std::vector<PendingEvent> events(1);
  events[0].event = BuildDdlEvent("dropDatabase", db, NowMs());
  return CommitWithEvents(txn, &events);
}

std::vector<CollectionInfo> DBImpl::ListCollections(const std::string& db) const {
  ReaderLock lock(&catalog_mu_);
  std::vector<CollectionInfo> out;
  for (const auto& [name, coll] : collections_) {
    if (coll->info.ns.db != db) continue;
    out.push_back(coll->info);
    out.back().options = *coll->opts();
  }
  return out;
}

StatusOr<CollectionInfo> DBImpl::GetCollectionInfo(const Namespace& ns) const {
  auto c = FindCollection(ns);
  if (!c) return Status(ErrorCode::kNamespaceNotFound, "ns not found: " + ns.full());
  CollectionInfo info = c->info;
  info.options = *c->opts();
  return info;
}

Status DBImpl::ModifyCollection(const Namespace& ns, const CollectionOptions& given) {
  CollectionOptions options = given;
  RETURN_IF_ERROR(CompileValidator(&options));
  WriterLock lock(&catalog_mu_);
  auto it = collections_.find(ns.full());
  if (it == collections_.end()) return Status(ErrorCode::kNamespaceNotFound, "ns not found: " + ns.full());
  if (options.version_field != it->second->opts()->version_field) {
    return Status(ErrorCode::kInvalidOptions, "versionField cannot be changed after create");
  }
  if (options.max_basis_age_ms && *options.max_basis_age_ms < 0) {
    return Status(ErrorCode::kInvalidOptions, "maxBasisAgeMs must be >= 0");
  }
  CollectionInfo info = it->second->info;
  info.options = options;
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  RETURN_IF_ERROR(FromRocks(db_->Put(wo, catalog_cf_, std::string(kCatalogNsPrefix) + ns.full(),
                                     EncodeCollectionInfo(info))));
  it->second->set_opts(options);
  return Status::OK();
}

std::vector<std::string> DBImpl::ListDatabases() const {
  ReaderLock lock(&catalog_mu_);
  std::vector<std::string> out;
  for (const auto& [name, coll] : collections_) {
    if (out.empty() || out.back() != coll->info.ns.db) out.push_back(coll->info.ns.db);
  }
  return out;
}

rocksdb::WriteOptions DBImpl::RocksWriteOptions(const WriteOptionsInternal& w) const {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync || w.sync;
  return wo;
}

}  // namespace gatedb
