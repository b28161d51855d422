// DBImpl: secondary indexes.  Their definitions live in the catalog column
// family, their entries in "indexes" (layout: engine/index/index_keys.h).
// Every document write stages its index changes in its own transaction
// (UpdateIndexes), so a document, its journal event and its index entries
// commit together or not at all.
//
// Building over existing documents: the index is registered first with
// ready: false while the collection's drop lock is held exclusively (no
// write is in flight, and every later write maintains it), then the
// documents are indexed in chunks, each chunk one transaction that locks the
// documents it reads (so a chunk and a concurrent write of the same document
// serialize, and the chunk indexes the latest version).  The flip to ready
// makes the planner use it.  A failed build is removed; an index found not
// ready at open (a build cut short) is removed too: after a crash an index
// is complete or absent.
#include <algorithm>
#include <set>

#include "engine/index/index_keys.h"
#include "engine/keys/key_codec.h"
#include "engine/keys/key_format.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"
#include "engine/util/coding.h"
#include "engine/document/bson_compare.h"

namespace gatedb {

namespace {

constexpr char kIndexCatalogPrefix[] = "ix:";     // + collection id (4 BE) + name -> EncodeIndexSpec
constexpr char kIndexNextIdPrefix[] = "ixnext:";  // + collection id (4 BE) -> next index id (4 BE)
constexpr size_t kBuildChunk = 1000;

std::string IndexCatalogPrefix(uint32_t coll_id) {
  std::string k(kIndexCatalogPrefix);
  PutFixed32BE(&k, coll_id);
  return k;
}
std::string IndexCatalogKey(uint32_t coll_id, const std::string& name) { return IndexCatalogPrefix(coll_id) + name; }
std::string IndexNextIdKey(uint32_t coll_id) {
  std::string k(kIndexNextIdPrefix);
  PutFixed32BE(&k, coll_id);
  return k;
}

void CollectFilterPaths(const bson_t* filter, std::vector<std::string>* out, int depth) {
  bson_iter_t it;
  if (depth > 8 || !bson_iter_init(&it, filter)) return;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (key[0] != '$') {
      out->emplace_back(key);
      continue;
    }
    if (!BSON_ITER_HOLDS_ARRAY(&it)) continue;
    bson_iter_t elems;
    bson_iter_recurse(&it, &elems);
    while (bson_iter_next(&elems)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&elems)) continue;
      uint32_t len;
      const uint8_t* data;
      bson_iter_document(&elems, &len, &data);
      bson_t sub;
      if (bson_init_static(&sub, data, len)) CollectFilterPaths(&sub, out, depth + 1);
    }
  }
}

StatusOr<std::shared_ptr<const IndexEntry>> MakeEntry(index::IndexSpec spec) {
  auto entry = std::make_shared<IndexEntry>();
  if (spec.has_partial_filter()) {
    ASSIGN_OR_RETURN(entry->partial, query::Matcher::Parse(spec.partial_filter.bson()));
    CollectFilterPaths(spec.partial_filter.bson(), &entry->watched_paths, 0);
  }
  for (const index::IndexField& f : spec.fields) entry->watched_paths.push_back(f.path);
  entry->spec = std::move(spec);
  return std::shared_ptr<const IndexEntry>(std::move(entry));
}

bool PathsOverlap(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty() || a == b) return true;
  if (a.size() < b.size()) return b.compare(0, a.size(), a) == 0 && b[a.size()] == '.';
  return a.compare(0, b.size(), b) == 0 && a[b.size()] == '.';
}

bool Touches(const IndexEntry& e, const std::vector<std::string>& changed, const std::string& version_field) {
  for (const std::string& w : e.watched_paths) {
    if (PathsOverlap(w, version_field)) return true;  // the version changes with every write
    for (const std::string& p : changed) {
      if (PathsOverlap(w, p)) return true;
    }
  }
  return false;
}

Status IndexDuplicateKey(const Namespace& ns, const index::IndexSpec& spec, const index::IndexKey& key) {
  bson_t* ei = bson_new();
  BSON_APPEND_DOCUMENT(ei, "keyPattern", spec.key.bson());
  bson_t kv;
  BSON_APPEND_DOCUMENT_BEGIN(ei, "keyValue", &kv);
  index::AppendKeyValue(spec, key, &kv);
  bson_append_document_end(ei, &kv);
  std::string text = "{ ";
  for (size_t i = 0; i < spec.fields.size() && i < key.values.size(); ++i) {
    if (i > 0) text += ", ";
    text += spec.fields[i].path + ": " + Value(key.values[i]).ToJson();
  }
  text += " }";
  return Status(ErrorCode::kDuplicateKey,
                "E11000 duplicate key error collection: " + ns.full() + " index: " + spec.name + " dup key: " + text,
                std::make_shared<const Document>(Document::Adopt(ei)));
}

}  // namespace

Status DBImpl::LoadIndexes() {
  std::map<uint32_t, std::shared_ptr<Collection>> by_id;
  {
    ReaderLock lock(&catalog_mu_);
    for (const auto& [name, coll] : collections_) by_id[coll->info.id] = coll;
  }
  std::map<uint32_t, std::vector<std::shared_ptr<const IndexEntry>>> found;
  std::vector<std::pair<std::shared_ptr<Collection>, index::IndexSpec>> unfinished;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
  const size_t plen = sizeof(kIndexCatalogPrefix) - 1;
  for (it->Seek(kIndexCatalogPrefix); it->Valid() && it->key().starts_with(kIndexCatalogPrefix); it->Next()) {
    if (it->key().size() < plen + 4) continue;
    uint32_t coll_id = DecodeFixed32BE(it->key().data() + plen);
    auto coll = by_id.find(coll_id);
    ASSIGN_OR_RETURN(index::IndexSpec spec, index::DecodeIndexSpec(std::string_view(it->value().data(), it->value().size())));
    if (coll == by_id.end()) continue;  // a dropped collection's leftover
    if (!spec.ready) {
      unfinished.emplace_back(coll->second, std::move(spec));
      continue;
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const IndexEntry> entry, MakeEntry(std::move(spec)));
    found[coll_id].push_back(std::move(entry));
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  for (auto& [coll_id, entries] : found) {
    auto cat = std::make_shared<IndexCatalog>();
    cat->entries = std::move(entries);
    by_id[coll_id]->set_indexes(std::move(cat));
  }
  // A build cut short by a crash: remove what it wrote.
  for (auto& [coll, spec] : unfinished) {
    RETURN_IF_ERROR(DeleteIndexRange(index::IndexPrefix(coll->info.id, spec.id)));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocks(db_->Delete(wo, catalog_cf_, IndexCatalogKey(coll->info.id, spec.name))));
  }
  return Status::OK();
}

Status DBImpl::DeleteIndexRange(const std::string& prefix) {
  std::string end = index::PrefixSuccessor(prefix);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, index_cf_));
  rocksdb::WriteBatch batch;
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    batch.Delete(index_cf_, it->key());
    if (batch.Count() >= 1000) {
      RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
      batch.Clear();
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  if (batch.Count() > 0) RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch)));
  return Status::OK();
}

Status DBImpl::MarkMultikey(Collection& coll, const std::string& name) {
  MutexLock lock(&coll.index_mu);
  std::shared_ptr<const IndexCatalog> cur = coll.indexes();
  auto next = std::make_shared<IndexCatalog>(*cur);
  for (auto& e : next->entries) {
    if (e->spec.name != name || e->spec.multikey) continue;
    index::IndexSpec spec = e->spec;
    spec.multikey = true;
    // Written at once, outside the writer's transaction: the flag only ever
    // turns on, and a flag set by a write that then aborts is merely
    // conservative.  It precedes the write in RocksDB's log, so a recovered
    // write always finds it.  The planner sees it before the write commits.
    RETURN_IF_ERROR(
        FromRocks(db_->Put(rocksdb::WriteOptions(), catalog_cf_, IndexCatalogKey(coll.info.id, name),
                           index::EncodeIndexSpec(spec))));
    ASSIGN_OR_RETURN(e, MakeEntry(std::move(spec)));
    coll.set_indexes(std::move(next));
    return Status::OK();
  }
  return Status::OK();
}

Status DBImpl::AddIndexEntries(const Collection& coll, const IndexEntry& e, Txn& txn, std::string_view doc_key,
                               const bson_t* doc) {
  if (e.partial && !e.partial->Matches(doc)) return Status::OK();
  std::vector<index::IndexKey> keys_out;
  bool multikey = false;
  RETURN_IF_ERROR(index::GenerateKeys(e.spec, doc, &keys_out, &multikey));
  const std::string idenc(doc_key.substr(keys::kCollectionIdSize));
  const std::string prefix = index::IndexPrefix(coll.info.id, e.spec.id);
  for (const index::IndexKey& k : keys_out) {
    std::string key = prefix + k.body;
    if (e.spec.unique) {
      std::string holder;
      bool taken = false;
      RETURN_IF_ERROR(txn.GetForUpdate(index_cf_, key, &holder, &taken));
      if (taken && holder != idenc) return IndexDuplicateKey(coll.info.ns, e.spec, k);
    }
  }
  index_entry_writes_.fetch_add(keys_out.size(), std::memory_order_relaxed);
  for (const index::IndexKey& k : keys_out) {
    std::string key = prefix + k.body;
    if (e.spec.unique) {
      RETURN_IF_ERROR(FromRocks(txn->Put(index_cf_, key, idenc)));
    } else {
      RETURN_IF_ERROR(FromRocks(txn->PutUntracked(index_cf_, key + idenc, idenc)));
    }
  }
  if (multikey && !e.spec.multikey) RETURN_IF_ERROR(MarkMultikey(const_cast<Collection&>(coll), e.spec.name));
  return Status::OK();
}

Status DBImpl::CatchUpIndexes(WriteScope* scope) {
  if (scope == nullptr || scope->indexed_writes.empty()) return Status::OK();
  bool changed = false;
  for (const auto& [coll, cat] : scope->synced_catalogs) {
    if (coll->indexes() != cat) changed = true;
  }
  if (!changed) return Status::OK();
  for (auto& entry : scope->indexed_writes) {
    // (Not a structured binding: C++17 lambdas cannot capture one.)
    const std::string& doc_key = entry.first;
    WriteScope::IndexedWrite& w = entry.second;
    std::shared_ptr<const IndexCatalog> cur = w.coll->indexes();
    if (cur == w.seen) continue;
    auto has = [](const IndexCatalog& c, uint32_t id) {
      return std::any_of(c.entries.begin(), c.entries.end(), [&](const auto& e) { return e->spec.id == id; });
    };
    std::optional<RecordView> rec;
    std::string value;
    bool gone = false;
    auto load = [&]() -> Status {
      if (rec || gone) return Status::OK();
      rocksdb::Status rs = scope->txn->Get(rocksdb::ReadOptions(), docs_cf_, doc_key, &value);
      if (rs.IsNotFound()) {
        gone = true;  // deleted by the scope: it has no entries to add or remove
        return Status::OK();
      }
      RETURN_IF_ERROR(FromRocks(rs));
      rec.emplace();
      return DecodeRecord(value, &*rec);
    };
    // Registered since the document's first write: add its entries.
    for (const auto& e : cur->entries) {
      if (has(*w.seen, e->spec.id)) continue;
      RETURN_IF_ERROR(load());
      if (gone) break;
      RETURN_IF_ERROR(AddIndexEntries(*w.coll, *e, scope->txn, doc_key, &rec->doc));
    }
    // Dropped since: the entries the scope staged for it are those of the
    // document's current version; unstage them.
    for (const auto& e : w.seen->entries) {
      if (has(*cur, e->spec.id)) continue;
      RETURN_IF_ERROR(load());
      if (gone) break;
      if (e->partial && !e->partial->Matches(&rec->doc)) continue;
      std::vector<index::IndexKey> keys_out;
      bool multikey = false;
      if (!index::GenerateKeys(e->spec, &rec->doc, &keys_out, &multikey).ok()) continue;
      const std::string prefix = index::IndexPrefix(w.coll->info.id, e->spec.id);
      const std::string idenc = doc_key.substr(keys::kCollectionIdSize);
      for (const index::IndexKey& k : keys_out) {
        std::string key = prefix + k.body;
        if (!e->spec.unique) key += idenc;
        RETURN_IF_ERROR(FromRocks(scope->txn->DeleteUntracked(index_cf_, key)));
      }
    }
    w.seen = cur;
  }
  for (auto& [coll, cat] : scope->synced_catalogs) cat = coll->indexes();
  return Status::OK();
}

Status DBImpl::UpdateIndexes(const Collection& coll, Txn& txn, std::string_view doc_key, const bson_t* old_doc,
                             const bson_t* new_doc, const std::vector<std::string>* changed,
                             const WriteOptionsInternal& w) {
  std::shared_ptr<const IndexCatalog> cat = coll.indexes();
  if (w.scope != nullptr) {
    // The first write of a document decides what its entries are missing;
    // later writes maintain what the first one did (and what catch-ups add).
    w.scope->indexed_writes.emplace(std::string(doc_key),
                                    WriteScope::IndexedWrite{const_cast<Collection&>(coll).shared_from_this(), cat});
    w.scope->synced_catalogs.emplace(&coll, cat);
  }
  if (cat->entries.empty()) return Status::OK();
  const std::string idenc(doc_key.substr(keys::kCollectionIdSize));
  const std::string& vf = coll.opts()->version_field;
  struct Change {
    std::string key;
    bool put;
    bool unique;
  };
  std::vector<Change> changes;
  std::vector<std::string> now_multikey;
  std::vector<index::IndexKey> old_keys, new_keys;
  for (const auto& e : cat->entries) {
    if (changed != nullptr && old_doc != nullptr && new_doc != nullptr && !Touches(*e, *changed, vf)) continue;
    const index::IndexSpec& spec = e->spec;
    bool multikey = false;
    old_keys.clear();
    new_keys.clear();
    if (old_doc != nullptr && (!e->partial || e->partial->Matches(old_doc))) {
      bool ignored = false;
      if (!index::GenerateKeys(spec, old_doc, &old_keys, &ignored).ok()) old_keys.clear();
    }
    if (new_doc != nullptr && (!e->partial || e->partial->Matches(new_doc))) {
      RETURN_IF_ERROR(index::GenerateKeys(spec, new_doc, &new_keys, &multikey));
    }
    if (multikey && !spec.multikey) now_multikey.push_back(spec.name);
    const std::string prefix = index::IndexPrefix(coll.info.id, spec.id);
    // Both lists are sorted by body: walk them together.
    size_t i = 0, j = 0;
    while (i < old_keys.size() || j < new_keys.size()) {
      int c = i == old_keys.size() ? 1 : j == new_keys.size() ? -1 : old_keys[i].body.compare(new_keys[j].body);
      if (c == 0) {
        ++i;
        ++j;
        continue;
      }
      const index::IndexKey& k = c < 0 ? old_keys[i++] : new_keys[j++];
      std::string key = prefix + k.body;
      if (!spec.unique) key += idenc;
      if (c > 0 && spec.unique) {
        std::string holder;
        bool found = false;
        RETURN_IF_ERROR(txn.GetForUpdate(index_cf_, key, &holder, &found));
        if (found && holder != idenc) return IndexDuplicateKey(coll.info.ns, spec, k);
      }
      changes.push_back(Change{std::move(key), c > 0, spec.unique});
    }
  }
  index_entry_writes_.fetch_add(changes.size(), std::memory_order_relaxed);
  for (const Change& ch : changes) {
    rocksdb::Status rs;
    if (ch.put) {
      // A unique key is locked by its GetForUpdate; a non-unique one holds
      // this document's _id, whose lock the caller has.
      rs = ch.unique ? txn->Put(index_cf_, ch.key, idenc) : txn->PutUntracked(index_cf_, ch.key, idenc);
    } else {
      // Deleting a unique key locks it, so that a writer who wants the key
      // waits for this commit instead of seeing it taken.
      rs = ch.unique ? txn->Delete(index_cf_, ch.key) : txn->DeleteUntracked(index_cf_, ch.key);
    }
    RETURN_IF_ERROR(FromRocks(rs));
  }
  for (const std::string& name : now_multikey) {
    RETURN_IF_ERROR(MarkMultikey(const_cast<Collection&>(coll), name));
  }
  return Status::OK();
}

StatusOr<std::vector<Document>> DBImpl::ListIndexes(const Namespace& ns) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  std::shared_ptr<Collection> coll = FindCollection(ns);
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + ns.full());
  std::vector<Document> out;
  bson_t* id = bson_new();
  index::AppendIdIndexDescription(id);
  out.push_back(Document::Adopt(id));
  for (const auto& e : coll->indexes()->entries) {
    if (!e->spec.ready) continue;
    bson_t* d = bson_new();
    index::AppendIndexDescription(e->spec, d);
    out.push_back(Document::Adopt(d));
  }
  return out;
}

StatusOr<CreateIndexesResult> DBImpl::CreateIndexes(const Namespace& ns, const std::vector<Document>& specs,
                                                    const std::function<void(uint64_t)>& progress) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  if (specs.empty()) return Status(ErrorCode::kBadValue, "Must specify at least one index to create");
  std::vector<index::IndexSpec> wanted;
  for (const Document& d : specs) {
    ASSIGN_OR_RETURN(index::IndexSpec spec, index::ParseIndexSpec(d.bson()));
    wanted.push_back(std::move(spec));
  }
  CreateIndexesResult result;
  result.created_collection = FindCollection(ns) == nullptr;
  ASSIGN_OR_RETURN(std::shared_ptr<Collection> coll, GetOrCreateCollection(ns));
  std::vector<std::shared_ptr<const IndexEntry>> building;
  {
    MutexLock ddl(&coll->index_ddl_mu);
    std::shared_ptr<const IndexCatalog> cur = coll->indexes();
    result.num_indexes_before = 1 + static_cast<int>(cur->entries.size());
    std::vector<index::IndexSpec> fresh;
    for (index::IndexSpec& want : wanted) {
      if (want.fields.size() == 1 && want.fields[0].path == "_id" && !want.fields[0].descending && !want.unique &&
          !want.sparse && !want.has_partial_filter()) {
        continue;  // the _id index exists always
      }
      std::vector<const index::IndexSpec*> have;
      for (const auto& e : cur->entries) have.push_back(&e->spec);
      for (const index::IndexSpec& f : fresh) have.push_back(&f);
      bool exists = false;
      for (const index::IndexSpec* h : have) {
        if (want.name == h->name) {
          if (index::SameDefinition(want, *h)) {
            exists = true;
            break;
          }
          if (!index::SameKeyPattern(want, *h)) {
            return Status(ErrorCode::kIndexKeySpecsConflict,
                          "An existing index has the same name as the requested index. When index names are not "
                          "specified, they are auto generated and can cause conflicts. Please refer to our "
                          "documentation. Requested index: " + want.key.ToJson() + ", existing index: " +
                              h->key.ToJson());
          }
          return Status(ErrorCode::kIndexOptionsConflict,
                        "An equivalent index already exists with the same name but different options. Requested "
                        "index: " + want.name + ", existing index: " + h->name);
        }
        if (index::SameDefinition(want, *h)) {
          return Status(ErrorCode::kIndexOptionsConflict, "Index already exists with a different name: " + h->name);
        }
      }
      if (!exists) fresh.push_back(std::move(want));
    }
    if (fresh.empty()) {
      result.num_indexes_after = result.num_indexes_before;
      result.all_existed = true;
      return result;
    }
    if (cur->entries.size() + 1 + fresh.size() > index::kMaxIndexes) {
      return Status(ErrorCode::kCannotCreateIndex, "add index fails, too many indexes for " + ns.full() +
                                                       " key:" + fresh.back().key.ToJson());
    }
    // Register them, not ready, with no write in flight.
    WriterLock drop(&coll->drop_mu);
    if (coll->dropped) return Status(ErrorCode::kNamespaceNotFound, "collection dropped during index creation");
    std::string next_bytes;
    uint32_t next_id = 1;
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), catalog_cf_, IndexNextIdKey(coll->info.id), &next_bytes);
    if (rs.ok() && next_bytes.size() == 4) {
      next_id = DecodeFixed32BE(next_bytes.data());
    } else if (!rs.IsNotFound()) {
      RETURN_IF_ERROR(FromRocks(rs));
    }
    rocksdb::WriteBatch batch;
    for (index::IndexSpec& spec : fresh) {
      spec.id = next_id++;
      spec.ready = false;
      batch.Put(catalog_cf_, IndexCatalogKey(coll->info.id, spec.name), index::EncodeIndexSpec(spec));
      ASSIGN_OR_RETURN(std::shared_ptr<const IndexEntry> entry, MakeEntry(std::move(spec)));
      building.push_back(std::move(entry));
    }
    std::string nb;
    PutFixed32BE(&nb, next_id);
    batch.Put(catalog_cf_, IndexNextIdKey(coll->info.id), nb);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch)));
    MutexLock publish(&coll->index_mu);
    auto next = std::make_shared<IndexCatalog>(*coll->indexes());
    for (const auto& entry : building) next->entries.push_back(entry);
    coll->set_indexes(std::move(next));
  }
  // Build them; on failure remove every one of this call.
  Status built;
  for (const auto& entry : building) {
    built = BuildIndex(*coll, entry, progress);
    if (!built.ok()) break;
  }
  std::vector<std::string> names;
  for (const auto& entry : building) names.push_back(entry->spec.name);
  if (!built.ok()) {
    Status removed = RemoveIndexes(*coll, names);
    (void)removed;
    return built;
  }
  Status flipped = [&]() -> Status {
    MutexLock ddl(&coll->index_ddl_mu);
    MutexLock lock(&coll->index_mu);
    auto next = std::make_shared<IndexCatalog>(*coll->indexes());
    rocksdb::WriteBatch batch;
    for (auto& e : next->entries) {
      if (std::find(names.begin(), names.end(), e->spec.name) == names.end()) continue;
      index::IndexSpec spec = e->spec;
      spec.ready = true;
      batch.Put(catalog_cf_, IndexCatalogKey(coll->info.id, spec.name), index::EncodeIndexSpec(spec));
      ASSIGN_OR_RETURN(e, MakeEntry(std::move(spec)));
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch)));
    result.num_indexes_after = 1 + static_cast<int>(next->entries.size());
    coll->set_indexes(std::move(next));
    return Status::OK();
  }();
  if (!flipped.ok()) {
    Status removed = RemoveIndexes(*coll, names);
    (void)removed;
    return flipped;
  }
  return result;
}

Status DBImpl::BuildIndex(const Collection& coll, const std::shared_ptr<const IndexEntry>& entry,
                          const std::function<void(uint64_t)>& progress) {
  const std::string prefix = keys::CollectionPrefix(coll.info.id);
  const std::string end = keys::CollectionUpperBound(coll.info.id);
  std::string resume = prefix;
  bool first = true;
  uint64_t done = 0;
  uint64_t total = 0;
  if (options_.index_build_progress) {
    // The documents to index, for the progress report (one key-only pass).
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper(end);
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, docs_cf_));
    for (it->Seek(prefix); it->Valid(); it->Next()) ++total;
  }
  for (;;) {
    // The next chunk's keys, read without locks.
    std::vector<std::string> chunk;
    {
      rocksdb::ReadOptions ro;
      rocksdb::Slice upper(end);
      ro.iterate_upper_bound = &upper;
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, docs_cf_));
      it->Seek(resume);
      if (!first && it->Valid() && it->key() == rocksdb::Slice(resume)) it->Next();
      for (; it->Valid() && chunk.size() < kBuildChunk; it->Next()) chunk.emplace_back(it->key().ToString());
      RETURN_IF_ERROR(FromRocks(it->status()));
    }
    if (chunk.empty()) break;
    first = false;
    // Index them under their locks, latest versions, one transaction.
    Status s;
    for (int attempt = 0; attempt < 100; ++attempt) {
      Txn txn(txn_pool_.get(), rocksdb::WriteOptions());
      s = Status::OK();
      for (const std::string& key : chunk) {
        std::string value;
        bool found = false;
        s = txn.GetForUpdate(docs_cf_, key, &value, &found);
        if (!s.ok()) break;
        if (!found) continue;
        RecordView rec;
        s = DecodeRecord(value, &rec);
        if (!s.ok()) break;
        s = AddIndexEntries(coll, *entry, txn, key, &rec.doc);
        if (!s.ok()) break;
      }
      if (s.ok()) s = txn.Commit();
      if (s.ok() || !txn.lock_conflict()) break;
    }
    RETURN_IF_ERROR(s);
    done += chunk.size();
    resume = chunk.back();
    if (progress) progress(done);
    if (options_.index_build_progress) {
      options_.index_build_progress(coll.info.ns.full(), entry->spec.name, done, std::max(total, done));
    }
  }
  return Status::OK();
}

Status DBImpl::RemoveIndexes(Collection& coll, const std::vector<std::string>& names) {
  std::vector<index::IndexSpec> removed;
  {
    MutexLock ddl(&coll.index_ddl_mu);
    WriterLock drop(&coll.drop_mu);
    MutexLock lock(&coll.index_mu);
    auto next = std::make_shared<IndexCatalog>();
    rocksdb::WriteBatch batch;
    for (const auto& e : coll.indexes()->entries) {
      if (std::find(names.begin(), names.end(), e->spec.name) == names.end()) {
        next->entries.push_back(e);
        continue;
      }
      removed.push_back(e->spec);
      batch.Delete(catalog_cf_, IndexCatalogKey(coll.info.id, e->spec.name));
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch)));
    coll.set_indexes(std::move(next));
  }
  // Index ids are not reused, so what remains is unreachable: reclaim it.
  for (const index::IndexSpec& spec : removed) {
    RETURN_IF_ERROR(DeleteIndexRange(index::IndexPrefix(coll.info.id, spec.id)));
  }
  return Status::OK();
}

StatusOr<int> DBImpl::DropIndexes(const Namespace& ns, const std::vector<std::string>& names,
                                  const Document* key_pattern) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  std::shared_ptr<Collection> coll = FindCollection(ns);
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns not found " + ns.full());
  std::shared_ptr<const IndexCatalog> cur = coll->indexes();
  const int was = 1 + static_cast<int>(cur->entries.size());
  std::vector<std::string> targets;
  if (key_pattern != nullptr) {
    bson_iter_t it;
    if (bson_iter_init(&it, key_pattern->bson()) && bson_iter_next(&it) &&
        std::string(bson_iter_key(&it)) == "_id" && !bson_iter_next(&it)) {
      return Status(ErrorCode::kInvalidOptions, "cannot drop _id index");
    }
    for (const auto& e : cur->entries) {
      if (CompareDocuments(e->spec.key.bson(), key_pattern->bson()) == 0) targets.push_back(e->spec.name);
    }
    if (targets.empty()) {
      return Status(ErrorCode::kIndexNotFound, "can't find index with key: " + key_pattern->ToJson());
    }
    if (targets.size() > 1) {
      return Status(ErrorCode::kAmbiguousIndexKeyPattern,
                    key_pattern->ToJson() + " matches more than one index: drop it by name");
    }
  } else if (names.size() == 1 && names[0] == "*") {
    for (const auto& e : cur->entries) {
      if (e->spec.ready) targets.push_back(e->spec.name);  // a build in progress is its creator's
    }
  } else {
    for (const std::string& name : names) {
      if (name == index::kIdIndexName) return Status(ErrorCode::kInvalidOptions, "cannot drop _id index");
      bool have = std::any_of(cur->entries.begin(), cur->entries.end(),
                              [&](const auto& e) { return e->spec.name == name && e->spec.ready; });
      if (!have) return Status(ErrorCode::kIndexNotFound, "index not found with name [" + name + "]");
      targets.push_back(name);
    }
  }
  RETURN_IF_ERROR(RemoveIndexes(*coll, targets));
  return was;
}

}  // namespace gatedb
