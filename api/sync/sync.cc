// Upstream sync (gatedb/sync.h): libmongoc on the upstream side, the typed
// API (hence the write gate) on the local side.
//
// Local and upstream state: api/src/sync_state.h.
#include "gatedb/sync.h"

#include <mongoc/mongoc.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include "api/src/database_rep.h"
#include "api/src/sync_state.h"
#include "api/src/txn_manager.h"
#include "engine/document/bson_compare.h"
#include "engine/document/diff.h"
#include "engine/storage/db_impl.h"
#include "engine/update/update_driver.h"
#include "gatedb/collection.h"
#include "gatedb/transaction.h"

namespace gatedb {

namespace {

using sync_state::kDb;
using sync_state::kUpstreamCheckpoints;
using sync_state::kUpstreamDb;
constexpr const char* kStateDb = kDb;
constexpr const char* kSyncAgent = sync_state::kAgent;
constexpr int kMaxRounds = 4;
constexpr int kLocalRetries = 8;

// libmongoc's own log lines: warnings and worse to stderr, named; its
// debug chatter (an authentication failure it also returns) is dropped.
void MongocLog(mongoc_log_level_t level, const char* domain, const char* message, void*) {
  if (level > MONGOC_LOG_LEVEL_WARNING) return;
  std::fprintf(stderr, "gatedb sync (libmongoc %s): %s\n", domain, message);
}

void InitMongoc() {
  static std::once_flag once;
  std::call_once(once, [] {
    mongoc_init();  // never cleaned up: other Syncs may come
    mongoc_log_set_handler(MongocLog, nullptr);
  });
}

Status FromMongoc(const bson_error_t& e, const std::string& what) {
  ErrorCode code = ErrorCode::kInternalError;
  if (e.domain == MONGOC_ERROR_SERVER_SELECTION || e.domain == MONGOC_ERROR_STREAM) {
    code = ErrorCode::kHostUnreachable;
  } else if (e.domain == MONGOC_ERROR_CLIENT && e.code == MONGOC_ERROR_CLIENT_AUTHENTICATE) {
    code = ErrorCode::kAuthenticationFailed;
  } else if (e.domain == MONGOC_ERROR_COMMAND && e.code == MONGOC_ERROR_COMMAND_INVALID_ARG) {
    code = ErrorCode::kFailedToParse;
  } else if ((e.domain == MONGOC_ERROR_SERVER || e.domain == MONGOC_ERROR_WRITE_CONCERN) && e.code != 0) {
    code = static_cast<ErrorCode>(e.code);  // the upstream's own code
  }
  return Status(code, what + ": " + e.message);
}

struct Ns {
  std::string full, db, coll;
  std::string version_field = "version";
  ConflictPolicy policy;
};

Document Strip(const bson_t* doc, const std::string& vf) {
  bson_t* out = bson_new();
  bson_copy_to_excluding_noinit(doc, out, vf.c_str(), nullptr);
  return Document::Adopt(out);
}

std::optional<int64_t> IntField(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (doc != nullptr && bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
  return std::nullopt;
}

// The paths that differ between two documents (engine/document/diff.h).
std::vector<std::string> Changed(const bson_t* from, const bson_t* to) {
  std::vector<std::string> paths;
  DiffPaths(from, to, "", &paths);
  return paths;
}

// The same fields with the same values (in any order), or both absent.
bool SameDoc(const std::optional<Document>& a, const std::optional<Document>& b) {
  if (!a || !b) return !a && !b;
  if (a->size() == b->size() && std::memcmp(a->data(), b->data(), a->size()) == 0) return true;
  return Changed(a->bson(), b->bson()).empty();
}

// {ns, id}: a base or conflict record's _id.
Document RecordKey(const std::string& ns, const Value& id) {
  bson_t* b = bson_new();
  bson_t k;
  BSON_APPEND_DOCUMENT_BEGIN(b, "_id", &k);
  BSON_APPEND_UTF8(&k, "ns", ns.c_str());
  id.AppendTo(&k, "id");
  bson_append_document_end(b, &k);
  return Document::Adopt(b);
}

Document IdFilter(const Value& id) {
  bson_t* b = bson_new();
  id.AppendTo(b, "_id");
  return Document::Adopt(b);
}

Document StrIdFilter(const std::string& id) {
  bson_t* b = bson_new();
  BSON_APPEND_UTF8(b, "_id", id.c_str());
  return Document::Adopt(b);
}

bool IsNumber(const bson_iter_t& it) {
  bson_type_t t = bson_iter_type(&it);
  return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE;
}

bool Find(const bson_t* doc, const std::string& path, bson_iter_t* out) {
  bson_iter_t it;
  return doc != nullptr && bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path.c_str(), out);
}

// The update that turns `from` into `to` ($set, $unset; with `incs`, a
// numeric change of one of those paths is an $inc of the difference; with
// `bump`, that field is incremented by 1).  Empty when nothing differs.
Document BuildDelta(const bson_t* from, const bson_t* to, const std::vector<std::string>& paths,
                    const std::set<std::string>& incs, const std::string* bump = nullptr) {
  bson_t set, unset, inc;
  bson_init(&set);
  bson_init(&unset);
  bson_init(&inc);
  for (const std::string& p : paths) {
    bson_iter_t a, b;
    const bool in_to = Find(to, p, &b);
    if (!in_to) {
      BSON_APPEND_UTF8(&unset, p.c_str(), "");
      continue;
    }
    if (incs.count(p) && Find(from, p, &a) && IsNumber(a) && IsNumber(b)) {
      if (BSON_ITER_HOLDS_DOUBLE(&a) || BSON_ITER_HOLDS_DOUBLE(&b)) {
        BSON_APPEND_DOUBLE(&inc, p.c_str(), bson_iter_as_double(&b) - bson_iter_as_double(&a));
      } else if (const int64_t d = bson_iter_as_int64(&b) - bson_iter_as_int64(&a);
                 BSON_ITER_HOLDS_INT32(&a) && BSON_ITER_HOLDS_INT32(&b) && d >= INT32_MIN && d <= INT32_MAX) {
        // int + int stays an int upstream, as it is here.
        BSON_APPEND_INT32(&inc, p.c_str(), static_cast<int32_t>(d));
      } else {
        BSON_APPEND_INT64(&inc, p.c_str(), bson_iter_as_int64(&b) - bson_iter_as_int64(&a));
      }
      continue;
    }
    bson_append_value(&set, p.c_str(), -1, bson_iter_value(&b));
  }
  if (bump != nullptr) BSON_APPEND_INT32(&inc, bump->c_str(), 1);  // a plain MongoDB upstream's version
  bson_t* u = bson_new();
  if (!bson_empty(&set)) BSON_APPEND_DOCUMENT(u, "$set", &set);
  if (!bson_empty(&unset)) BSON_APPEND_DOCUMENT(u, "$unset", &unset);
  if (!bson_empty(&inc)) BSON_APPEND_DOCUMENT(u, "$inc", &inc);
  bson_destroy(&set);
  bson_destroy(&unset);
  bson_destroy(&inc);
  return Document::Adopt(u);
}

StatusOr<Document> ApplyDelta(const bson_t* doc, const Document& delta, const std::string& vf) {
  if (delta.empty()) return Document::Copy(doc);
  update::UpdateOptions uo;
  uo.version_field = vf;
  ASSIGN_OR_RETURN(std::unique_ptr<update::UpdateDriver> d, update::UpdateDriver::Parse(delta.bson(), uo));
  bson_t* out = bson_new();
  update::ApplyContext ctx;
  Status s = d->Apply(doc, ctx, out);
  if (!s.ok()) {
    bson_destroy(out);
    return s;
  }
  return Document::Adopt(out);
}

// A source's rank under sourcePriority: listed first ranks highest (0);
// unknown sources, and none, rank last.
size_t SourceRank(const ConflictPolicy& policy, std::string_view source) {
  for (size_t i = 0; i < policy.source_priority.size(); ++i) {
    if (policy.source_priority[i] == source) return i;
  }
  return policy.source_priority.size();
}

// The three-way decision for a document both sides changed since `base`:
// the document both sides should have, or nullopt when the policy leaves it
// unresolved.  `local`/`upstream` absent: deleted there.
// `local_source`/`up_source`: the writeContext.source of each side's last
// write of the document ("" when unknown).
std::optional<std::optional<Document>> Merge(const Ns& ns, const std::optional<Document>& base,
                                             const std::optional<Document>& local,
                                             const std::optional<Document>& upstream,
                                             std::string_view local_source, std::string_view up_source) {
  using Out = std::optional<std::optional<Document>>;
  // Both made the same change; not for counters, where two +1s both count.
  const bool counters = ns.policy.mode == ConflictMode::kFieldMerge && ns.policy.merge_increments;
  if (!counters && SameDoc(local, upstream)) return Out(local);
  if (ns.policy.mode == ConflictMode::kSourcePriority) {
    // The side whose writer's source ranks higher wins whole, deletes
    // included; an equal rank is left to syncResolve, as the local gate
    // refuses a stale write of an equal rank.
    const size_t mine = SourceRank(ns.policy, local_source), theirs = SourceRank(ns.policy, up_source);
    if (mine < theirs) return Out(local);
    if (theirs < mine) return Out(upstream);
    return std::nullopt;
  }
  // appendOnly: documents are only ever inserted, so the two sides' sets of
  // documents simply unite; one _id with two different contents (or an
  // upstream that changed or deleted a document) is a conflict.
  if (ns.policy.mode == ConflictMode::kAppendOnly) return std::nullopt;
  // An update against a delete: the update wins (the document lives on with it).
  if (!upstream && local) return Out(local);
  if (!local && upstream) return Out(upstream);
  if (ns.policy.mode != ConflictMode::kFieldMerge) return std::nullopt;
  const bson_t* b = base ? base->bson() : nullptr;
  bson_t empty = BSON_INITIALIZER;
  if (b == nullptr) b = &empty;  // both inserted it: every field is a change
  std::vector<std::string> mine = Changed(b, local->bson());
  std::vector<std::string> theirs = Changed(b, upstream->bson());
  std::set<std::string> incs;
  std::vector<std::string> apply;
  for (const std::string& p : mine) {
    bool overlap = false, agree = false;
    for (const std::string& q : theirs) {
      if (!PathsOverlap(p, q)) continue;
      overlap = true;
      bson_iter_t l, u, o;
      if (p == q && Find(local->bson(), p, &l) && Find(upstream->bson(), p, &u)) {
        if (counters && Find(b, p, &o) && IsNumber(o) && IsNumber(l) && IsNumber(u)) {
          incs.insert(p);  // both increments apply, even when they came to the same value
          agree = true;
          apply.push_back(p);
          break;
        }
        const bson_value_t* lv = bson_iter_value(&l);
        const bson_value_t* uv = bson_iter_value(&u);
        agree = lv->value_type == uv->value_type && CompareValues(*lv, *uv) == 0;
      }
      break;
    }
    if (overlap && !agree) return std::nullopt;
    if (!overlap) apply.push_back(p);
  }
  Document delta = BuildDelta(b, local->bson(), apply, incs);
  StatusOr<Document> merged = ApplyDelta(upstream->bson(), delta, ns.version_field);
  if (!merged.ok()) return std::nullopt;
  return Out(std::optional<Document>(std::move(*merged)));
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string out;
  const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) out.push_back(hex[rd() % 16]);
  return out;
}

// RAII for libmongoc objects.
struct CollHandle {
  mongoc_collection_t* c = nullptr;
  ~CollHandle() {
    if (c) mongoc_collection_destroy(c);
  }
};

}  // namespace

std::string SyncReport::ToJson() const {
  return "{\"pushed\": " + std::to_string(pushed) + ", \"pulled\": " + std::to_string(pulled) +
         ", \"merged\": " + std::to_string(merged) + ", \"conflicts\": " + std::to_string(conflicts) +
         ", \"skipped\": " + std::to_string(skipped) + "}";
}

struct Sync::Impl {
  Database* db = nullptr;
  SyncOptions opts;
  std::string origin;
  mongoc_client_t* client = nullptr;
  bool hub = false;  // the upstream is gatedb: it keeps the version field itself
  bool tls = false;  // the URI asks for TLS
  std::vector<Ns> nss;
  SyncReport report;

  ~Impl() {
    if (client) mongoc_client_destroy(client);
  }

  Collection State(const char* name) { return db->GetCollection(kStateDb, name); }

  void Progress(const std::string& line) {
    if (opts.progress) opts.progress(line);
  }

  Status Connect() {
    InitMongoc();
    bson_error_t err;
    mongoc_uri_t* uri = mongoc_uri_new_with_error(opts.upstream_uri.c_str(), &err);
    if (uri == nullptr) return Status(ErrorCode::kFailedToParse, "bad upstream URI: " + std::string(err.message));
    tls = mongoc_uri_get_tls(uri);
    client = mongoc_client_new_from_uri_with_error(uri, &err);
    mongoc_uri_destroy(uri);
    if (client == nullptr) return FromMongoc(err, "cannot use the upstream URI");
    mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
    mongoc_client_set_appname(client, "gatedb-sync");
    bson_t cmd = BSON_INITIALIZER, reply;
    BSON_APPEND_INT32(&cmd, "buildInfo", 1);
    bool ok = mongoc_client_command_simple(client, "admin", &cmd, nullptr, &reply, &err);
    bson_destroy(&cmd);
    if (!ok) {
      bson_destroy(&reply);
      Status s = FromMongoc(err, "the upstream did not answer");
      if (tls && s.code() == ErrorCode::kHostUnreachable) {
        // The handshake is where TLS fails: a server without TLS, a
        // certificate not trusted (tlsCAFile), or a name that does not match.
        return Status(s.code(), s.reason() + " (with TLS: the upstream may not speak TLS, or its certificate was "
                                              "refused; see tlsCAFile and tlsCertificateKeyFile in the URI)");
      }
      return s;
    }
    bson_iter_t it;
    hub = bson_iter_init_find(&it, &reply, "gatedbVersion");
    bson_destroy(&reply);
    if (opts.upstream_versions == "upstream") {
      hub = true;
    } else if (opts.upstream_versions == "sync") {
      hub = false;
    } else if (opts.upstream_versions != "auto") {
      return Status(ErrorCode::kInvalidOptions, "upstream_versions must be auto, upstream or sync");
    }
    return Status::OK();
  }

  Status LoadOrigin() {
    Collection ck = State(sync_state::kCheckpoints);
    if (!opts.origin.empty()) {
      // Named by the caller: kept for syncStatus.
      origin = opts.origin;
      bson_t* d = bson_new();
      BSON_APPEND_UTF8(d, "_id", sync_state::kOriginId);
      BSON_APPEND_UTF8(d, "name", origin.c_str());
      return PutState(sync_state::kCheckpoints, StrIdFilter(sync_state::kOriginId), Document::Adopt(d), nullptr);
    }
    ASSIGN_OR_RETURN(std::optional<Document> o, ck.FindOne(StrIdFilter(sync_state::kOriginId).view()));
    bson_iter_t it;
    if (o && bson_iter_init_find(&it, o->bson(), "name") && BSON_ITER_HOLDS_UTF8(&it)) {
      origin = bson_iter_utf8(&it, nullptr);
      return Status::OK();
    }
    origin = "edge-" + RandomHex(12);
    bson_t* d = bson_new();
    BSON_APPEND_UTF8(d, "_id", sync_state::kOriginId);
    BSON_APPEND_UTF8(d, "name", origin.c_str());
    Document doc = Document::Adopt(d);
    StatusOr<InsertOneResult> r = ck.InsertOne(doc.view());
    if (!r.ok() && r.status().code() == ErrorCode::kDuplicateKey) return LoadOrigin();
    return r.status();
  }

  Status ResolveNamespaces() {
    if (opts.namespaces.empty()) return Status(ErrorCode::kInvalidOptions, "sync needs at least one namespace (--ns)");
    for (const std::string& full : opts.namespaces) {
      size_t dot = full.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == full.size()) {
        return Status(ErrorCode::kInvalidOptions, "'" + full + "' is not a namespace (db.collection)");
      }
      Ns ns;
      ns.full = full;
      ns.db = full.substr(0, dot);
      ns.coll = full.substr(dot + 1);
      if (ns.db == kStateDb || ns.db == kUpstreamDb) {
        return Status(ErrorCode::kInvalidOptions, "'" + full + "' is sync's own state");
      }
      StatusOr<CollectionInfo> info = db->rep()->db->GetCollectionInfo(Namespace{ns.db, ns.coll});
      if (info.ok()) {
        ns.version_field = info->options.version_field;
        ns.policy = info->options.conflict_policy;
      }
      nss.push_back(std::move(ns));
    }
    return Status::OK();
  }

  // ---- local state -----------------------------------------------------

  StatusOr<Document> Checkpoint(const Ns& ns, Transaction* txn) {
    FindOptions fo;
    fo.txn = txn;
    ASSIGN_OR_RETURN(std::optional<Document> c, State(sync_state::kCheckpoints).FindOne(StrIdFilter(ns.full).view(), fo));
    if (c) return std::move(*c);
    return Document();
  }

  // Sets fields of the namespace's checkpoint (upsert).
  // Sets the fields `fill` appends (upsert).
  template <typename Fill>
  Status SetCheckpoint(const Ns& ns, Transaction* txn, const Fill& fill) {
    bson_t* u = bson_new();
    bson_t set;
    BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
    fill(&set);
    bson_append_document_end(u, &set);
    Document upd = Document::Adopt(u);
    UpdateOptions uo;
    uo.upsert = true;
    uo.write.txn = txn;
    uo.write.context.agent_id = kSyncAgent;
    return State(sync_state::kCheckpoints).UpdateOne(StrIdFilter(ns.full).view(), upd.view(), uo).status();
  }

  // Writes a state record whole (upsert), as sync.
  Status PutState(const char* coll, const Document& filter, const Document& rec, Transaction* txn) {
    UpdateOptions uo;
    uo.upsert = true;
    uo.write.txn = txn;
    uo.write.context.agent_id = kSyncAgent;
    return State(coll).ReplaceOne(filter.view(), rec.view(), uo).status();
  }

  using Base = sync_state::Base;

  StatusOr<Base> LoadBase(const Ns& ns, const Value& id, Transaction* txn) {
    DBImpl* impl = db->rep()->db.get();
    return InTxn(txn, impl, [&](WriteScope* scope) { return sync_state::LoadBase(impl, scope, ns.full, id); });
  }

  Status SaveBase(const Ns& ns, const Value& id, const Base& b, bool was_pending, Transaction* txn) {
    DBImpl* impl = db->rep()->db.get();
    return InTxn(txn, impl, [&](WriteScope* scope) { return sync_state::SaveBase(impl, scope, ns.full, id, b, was_pending); });
  }

  Status SaveConflict(const Ns& ns, const Value& id, const std::optional<Document>& base,
                      const std::optional<Document>& local, const std::optional<Document>& upstream,
                      Transaction* txn) {
    Document key = RecordKey(ns.full, id);
    bson_t* d = bson_new();
    bson_iter_t it;
    bson_iter_init_find(&it, key.bson(), "_id");
    bson_append_value(d, "_id", 3, bson_iter_value(&it));
    auto put = [&](const char* k, const std::optional<Document>& v) {
      if (v) {
        BSON_APPEND_DOCUMENT(d, k, v->bson());
      } else {
        BSON_APPEND_NULL(d, k);
      }
    };
    put("local", local);
    put("upstream", upstream);
    put("base", base);
    BSON_APPEND_UTF8(d, "policy", ConflictModeName(ns.policy.mode));
    BSON_APPEND_DATE_TIME(d, "at", db->rep()->db->NowMs());
    return PutState(sync_state::kConflicts, key, Document::Adopt(d), txn);
  }

  // Makes the local document `want` (absent: deleted), through the write
  // gate, based on `have` (what was read in this transaction).
  // `source`: the upstream writer's writeContext.source, kept as this
  // write's source so that sourcePriority ranks the document's real writer;
  // "upstream" when not known.
  Status WriteLocal(const Ns& ns, const Value& id, const std::optional<Document>& have,
                    const std::optional<Document>& want, const std::string& source, Transaction* txn) {
    Collection c = db->GetCollection(ns.db, ns.coll);
    WriteOptions w;
    w.txn = txn;
    w.context.agent_id = kSyncAgent;
    w.context.source = source.empty() ? "upstream" : source;
    if (have) w.basis_version = IntField(have->bson(), ns.version_field.c_str());
    Document filter = IdFilter(id);
    if (!want) {
      if (!have) return Status::OK();
      return c.DeleteOne(filter.view(), w).status();
    }
    if (!have) return c.InsertOne(want->view(), w).status();
    UpdateOptions uo;
    uo.write = w;
    return c.ReplaceOne(filter.view(), want->view(), uo).status();
  }

  // One upstream state of a document (absent: deleted upstream), applied
  // here: skipped when this side already has it, written when only the
  // upstream changed it, decided by the policy when both did.  `token`
  // (may be empty) is stored in the same local transaction.
  // One upstream change of a document: its state (u absent: deleted
  // upstream), or, for an update event, only the version it made (the
  // state is read from the upstream when this side does not have it yet).
  struct Change {
    Value id;
    std::optional<Document> u;  // without the version field
    std::optional<int64_t> up_version;
    std::string source;    // the upstream writer's writeContext.source, when known
    bool lookup = false;   // an update: u is read from the upstream if needed
    bool skip = false;     // known here already
    size_t bytes = 0;
  };
  static Change MakeChange(const Ns& ns, Value id, const std::optional<Document>& upstream_doc) {
    Change c;
    c.id = std::move(id);
    if (upstream_doc) {
      c.up_version = IntField(upstream_doc->bson(), ns.version_field.c_str());
      c.u = Strip(upstream_doc->bson(), ns.version_field);
      c.bytes = upstream_doc->size();
    }
    return c;
  }

  // Fills in the update events of `changes`: those whose version this
  // side's base already has are skipped (its own pushes, coming back);
  // the rest take the upstream's current document, read in one query (as
  // `updateLookup` would, but only for what is needed).
  Status Resolve(const Ns& ns, std::vector<Change>* changes) {
    std::vector<Value> wanted;
    for (Change& c : *changes) {
      if (!c.lookup) continue;
      ASSIGN_OR_RETURN(Base b, LoadBase(ns, c.id, nullptr));
      if (c.up_version && b.exists && b.up_version >= *c.up_version) {
        c.skip = true;
        continue;
      }
      wanted.push_back(c.id);
    }
    if (wanted.empty()) return Status::OK();
    std::map<std::string, Document> docs;
    RETURN_IF_ERROR(UpstreamDocs(ns, wanted, [&](const std::string& key, const bson_t* d) {
      docs.emplace(key, Document::Copy(d));
    }));
    for (Change& c : *changes) {
      if (!c.lookup || c.skip) continue;
      auto it = docs.find(c.id.ToJson());
      std::optional<Document> now;
      if (it != docs.end()) now = it->second;
      if (c.up_version) {
        // The document moved on after this event (or was deleted): the
        // later event, in this batch or the next pull, brings that state
        // with its own writer; applying the later state with this event's
        // writer would misrank it under sourcePriority.
        std::optional<int64_t> v = now ? IntField(now->bson(), ns.version_field.c_str()) : std::nullopt;
        if (!v || *v != *c.up_version) {
          c.skip = true;
          continue;
        }
      }
      std::string source = std::move(c.source);
      c = MakeChange(ns, c.id, now);  // absent: deleted since, as updateLookup says
      c.source = std::move(source);
    }
    return Status::OK();
  }

  static constexpr size_t kApplyBatch = 256;
  static constexpr size_t kApplyBatchBytes = 4u << 20;

  // Applies upstream changes here in one local transaction, with `token`
  // (may be empty) stored in it: each skipped when this side already has
  // it, written when only the upstream changed the document, decided by
  // the policy when both did.
  Status ApplyBatch(const Ns& ns, std::vector<Change>* batch, const Document& token) {
    const std::vector<Change>& changes = *batch;
    if (changes.empty() && token.empty()) return Status::OK();
    RETURN_IF_ERROR(Resolve(ns, batch));
    Status last;
    for (int attempt = 0; attempt < kLocalRetries; ++attempt) {
      StatusOr<std::unique_ptr<Transaction>> t = db->StartTransaction();
      if (!t.ok()) return t.status();
      Transaction* txn = t->get();
      SyncReport tally;
      Status s;
      for (const Change& c : changes) {
        if (c.skip) {
          ++tally.skipped;
          continue;
        }
        s = ApplyInTxn(ns, c, txn, &tally);
        if (!s.ok()) break;
      }
      if (s.ok() && !token.empty()) {
        s = SetCheckpoint(ns, txn, [&](bson_t* set) {
          BSON_APPEND_DOCUMENT(set, "token", token.bson());
        });
      }
      if (s.ok()) s = txn->Commit();
      if (s.ok()) {
        report.pulled += tally.pulled;
        report.merged += tally.merged;
        report.conflicts += tally.conflicts;
        report.skipped += tally.skipped;
        return s;
      }
      txn->Abort().PermitUnchecked();
      last = s;
      // A local agent wrote one of the documents meanwhile: decide again.
      if (!IsTransientTransactionError(s) && s.code() != ErrorCode::kVersionConflict &&
          s.code() != ErrorCode::kWriteConflict) {
        return s;
      }
    }
    return last;
  }

  // The local document, read in `txn`, and the writeContext.source of its
  // last writer (for a document deleted here: of the delete, from the
  // journal since the push checkpoint; "" when not known).
  StatusOr<std::optional<Document>> ReadLocal(const Ns& ns, const Value& id, Transaction* txn, std::string* source) {
    Document writer;
    DBImpl* impl = db->rep()->db.get();
    ASSIGN_OR_RETURN(std::optional<Document> have, InTxn(txn, impl, [&](WriteScope* scope) {
                       return impl->FindById(Namespace{ns.db, ns.coll}, id.get(), scope, source ? &writer : nullptr);
                     }));
    if (source == nullptr) return have;
    bson_iter_t it;
    if (have) {
      if (!writer.empty() && bson_iter_init_find(&it, writer.bson(), "source") && BSON_ITER_HOLDS_UTF8(&it)) {
        *source = bson_iter_utf8(&it, nullptr);
      }
      return have;
    }
    ASSIGN_OR_RETURN(Document ck, Checkpoint(ns, nullptr));
    const uint64_t push_seq = static_cast<uint64_t>(IntField(ck.bson(), "pushSeq").value_or(0));
    const std::string want = id.ToJson();
    uint64_t upto = 0;
    Status s = sync_state::PendingPush(db->rep()->db.get(), ns.full, push_seq,
                                       [&](const Value& v, std::string_view src) {
                                         if (v.ToJson() == want && !src.empty()) *source = std::string(src);
                                       },
                                       &upto);
    if (!s.ok() && s.code() != ErrorCode::kChangeStreamHistoryLost) return s;
    return have;
  }

  Status ApplyInTxn(const Ns& ns, const Change& c, Transaction* txn, SyncReport* tally) {
    const Value& id = c.id;
    const std::optional<Document>& u = c.u;
    const std::optional<int64_t>& up_version = c.up_version;
    ASSIGN_OR_RETURN(Base b, LoadBase(ns, id, txn));
    bool skip = false;
    if (u && up_version && b.exists && b.up_version >= *up_version) skip = true;  // ours, or known
    if (!u && b.exists && !b.doc) skip = true;                                     // already gone
    if (skip) {
      ++tally->skipped;
      return Status::OK();
    }
    std::string local_source;
    const bool by_source = ns.policy.mode == ConflictMode::kSourcePriority;
    ASSIGN_OR_RETURN(std::optional<Document> have, ReadLocal(ns, id, txn, by_source ? &local_source : nullptr));
    std::optional<Document> l;
    if (have) l = Strip(have->bson(), ns.version_field);
    const int64_t new_up = u ? up_version.value_or(-1) : b.up_version;
    const std::optional<Document> base_doc = b.exists ? b.doc : std::nullopt;
    bool local_changed = !SameDoc(l, base_doc);
    // appendOnly: an upstream change of a document this side has is never
    // written here (the gate refuses updates and deletes): a conflict.
    if (ns.policy.mode == ConflictMode::kAppendOnly && l && !SameDoc(l, u)) local_changed = true;
    Base nb;
    nb.exists = true;
    nb.doc = u;
    nb.up_version = new_up;
    if (b.conflict) {
      // Still unresolved: the upstream side of it moves on.
      nb.conflict = true;
      RETURN_IF_ERROR(SaveConflict(ns, id, b.doc, l, u, txn));
    } else if (!local_changed) {
      RETURN_IF_ERROR(WriteLocal(ns, id, have, u, c.source, txn));
      ++tally->pulled;
    } else {
      std::optional<std::optional<Document>> m = Merge(ns, base_doc, l, u, local_source, c.source);
      if (m) {
        if (!SameDoc(*m, l)) RETURN_IF_ERROR(WriteLocal(ns, id, have, *m, c.source, txn));
        nb.pending = !SameDoc(*m, u);
        ++tally->merged;
      } else {
        nb.conflict = true;
        RETURN_IF_ERROR(SaveConflict(ns, id, base_doc, l, u, txn));
        ++tally->conflicts;
      }
    }
    return SaveBase(ns, id, nb, b.pending, txn);
  }

  // ---- pull -------------------------------------------------------------

  mongoc_collection_t* Upstream(const Ns& ns) { return mongoc_client_get_collection(client, ns.db.c_str(), ns.coll.c_str()); }

  mongoc_change_stream_t* Watch(const Ns& ns, const Document* token, CollHandle* coll) {
    coll->c = Upstream(ns);
    bson_t pipeline = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    if (hub) {
      // This side's own pushes (writeContext.agentId gatedb.sync:<origin>)
      // need not come back: a gatedb hub drops them before it builds their
      // events.  A MongoDB upstream records no writeContext: everything
      // comes, and own pushes are recognised by their version.
      bson_t st, m, f, ne;
      BSON_APPEND_ARRAY_BEGIN(&pipeline, "pipeline", &st);
      BSON_APPEND_DOCUMENT_BEGIN(&st, "0", &m);
      BSON_APPEND_DOCUMENT_BEGIN(&m, "$match", &f);
      BSON_APPEND_DOCUMENT_BEGIN(&f, "writeContext.agentId", &ne);
      BSON_APPEND_UTF8(&ne, "$ne", PushAgent().c_str());
      bson_append_document_end(&f, &ne);
      bson_append_document_end(&m, &f);
      bson_append_document_end(&st, &m);
      bson_append_array_end(&pipeline, &st);
    }
    BSON_APPEND_INT64(&opts, "maxAwaitTimeMS", opts_wait());
    if (token != nullptr && !token->empty()) BSON_APPEND_DOCUMENT(&opts, "resumeAfter", token->bson());
    mongoc_change_stream_t* cs = mongoc_collection_watch(coll->c, &pipeline, &opts);
    bson_destroy(&pipeline);
    bson_destroy(&opts);
    return cs;
  }
  int64_t opts_wait() const { return opts.pull_wait_ms; }
  // The writeContext.agentId of this side's pushes on a hub.
  std::string PushAgent() const { return std::string(kSyncAgent) + ":" + origin; }

  Status StreamError(mongoc_change_stream_t* cs, const std::string& what) {
    bson_error_t err;
    const bson_t* reply = nullptr;
    if (mongoc_change_stream_error_document(cs, &err, &reply)) return FromMongoc(err, what);
    return Status::OK();
  }

  Status InitialSync(const Ns& ns) {
    Progress("initial sync of " + ns.full);
    CollHandle coll;
    mongoc_change_stream_t* cs = Watch(ns, nullptr, &coll);
    Status s = StreamError(cs, "cannot open a change stream on the upstream's " + ns.full);
    Document token;
    if (s.ok()) {
      const bson_t* t = mongoc_change_stream_get_resume_token(cs);
      if (t != nullptr) token = Document::Copy(t);
    }
    mongoc_change_stream_destroy(cs);
    RETURN_IF_ERROR(s);
    // The token came first: whatever changes during the copy is pulled
    // again from it (and skipped when the copy had it).
    bson_t filter = BSON_INITIALIZER;
    mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll.c, &filter, nullptr, nullptr);
    bson_destroy(&filter);
    const bson_t* doc;
    int64_t n = 0;
    std::vector<Change> batch;
    size_t bytes = 0;
    while (s.ok() && mongoc_cursor_next(cur, &doc)) {
      bson_iter_t it;
      if (!bson_iter_init_find(&it, doc, "_id")) continue;
      batch.push_back(MakeChange(ns, Value(*bson_iter_value(&it)), Document::Copy(doc)));
      bytes += batch.back().bytes;
      if (batch.size() >= kApplyBatch || bytes >= kApplyBatchBytes) {
        s = ApplyBatch(ns, &batch, Document());
        batch.clear();
        bytes = 0;
      }
      if (++n % 10000 == 0) Progress(ns.full + ": " + std::to_string(n) + " documents copied");
    }
    if (s.ok()) s = ApplyBatch(ns, &batch, Document());
    bson_error_t err;
    if (s.ok() && mongoc_cursor_error(cur, &err)) s = FromMongoc(err, "reading the upstream's " + ns.full);
    mongoc_cursor_destroy(cur);
    RETURN_IF_ERROR(s);
    s = SetCheckpoint(ns, nullptr, [&](bson_t* set) {
      if (!token.empty()) BSON_APPEND_DOCUMENT(set, "token", token.bson());
      BSON_APPEND_BOOL(set, "initialized", true);
    });
    return s;
  }

  Status Pull(const Ns& ns) {
    ASSIGN_OR_RETURN(Document ck, Checkpoint(ns, nullptr));
    bson_iter_t it;
    if (!(bson_iter_init_find(&it, ck.bson(), "initialized") && bson_iter_as_bool(&it))) {
      RETURN_IF_ERROR(InitialSync(ns));
      ASSIGN_OR_RETURN(ck, Checkpoint(ns, nullptr));
    }
    Document token;
    if (bson_iter_init_find(&it, ck.bson(), "token") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      const bson_value_t* v = bson_iter_value(&it);
      ASSIGN_OR_RETURN(token, Document::FromBytes(v->value.v_doc.data, v->value.v_doc.data_len));
    }
    CollHandle coll;
    mongoc_change_stream_t* cs = Watch(ns, &token, &coll);
    const bson_t* ev;
    Status s;
    std::vector<Change> batch;
    size_t bytes = 0;
    Document batch_token;
    while (s.ok() && mongoc_change_stream_next(cs, &ev)) {
      const bson_t* t = mongoc_change_stream_get_resume_token(cs);
      Document tok = t != nullptr ? Document::Copy(t) : Document();
      std::string op;
      if (bson_iter_init_find(&it, ev, "operationType") && BSON_ITER_HOLDS_UTF8(&it)) op = bson_iter_utf8(&it, nullptr);
      if (op != "insert" && op != "update" && op != "replace" && op != "delete") {
        Progress(ns.full + ": the upstream's change stream ended with '" + op + "'");
        break;
      }
      bson_iter_t key;
      if (!bson_iter_init(&it, ev) || !bson_iter_find_descendant(&it, "documentKey._id", &key)) continue;
      Value id(*bson_iter_value(&key));
      std::optional<Document> u;
      if (op != "delete" && bson_iter_init_find(&it, ev, "fullDocument") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        const bson_value_t* v = bson_iter_value(&it);
        StatusOr<Document> d = Document::FromBytes(v->value.v_doc.data, v->value.v_doc.data_len);
        if (!d.ok()) {
          s = d.status();
          break;
        }
        u = std::move(*d);
      }
      Change change = MakeChange(ns, std::move(id), u);
      bson_iter_t f;
      if (bson_iter_init(&f, ev) && bson_iter_find_descendant(&f, "writeContext.source", &f) && BSON_ITER_HOLDS_UTF8(&f)) {
        change.source = bson_iter_utf8(&f, nullptr);
      }
      if (op == "update" && !u) {
        // The version it made: gatedb's versionAfter, or a MongoDB
        // upstream's version field among the updated ones.
        change.lookup = true;
        change.up_version = IntField(ev, "versionAfter");
        if (!change.up_version && bson_iter_init(&f, ev) &&
            bson_iter_find_descendant(&f, "updateDescription.updatedFields", &f) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
          bson_t fields;
          const bson_value_t* v = bson_iter_value(&f);
          if (bson_init_static(&fields, v->value.v_doc.data, v->value.v_doc.data_len)) {
            change.up_version = IntField(&fields, ns.version_field.c_str());
          }
        }
      }
      batch.push_back(std::move(change));
      bytes += batch.back().bytes;
      batch_token = std::move(tok);
      if (batch.size() >= kApplyBatch || bytes >= kApplyBatchBytes) {
        s = ApplyBatch(ns, &batch, batch_token);
        batch.clear();
        bytes = 0;
      }
    }
    // The rest, with the token of the last change in it.
    if (s.ok()) s = ApplyBatch(ns, &batch, batch_token);
    if (s.ok()) s = StreamError(cs, "pulling " + ns.full + " from the upstream");
    if (s.ok()) {
      // Caught up: the position moves past what was not ours to apply.
      const bson_t* t = mongoc_change_stream_get_resume_token(cs);
      if (t != nullptr) {
        s = SetCheckpoint(ns, nullptr, [&](bson_t* set) {
          BSON_APPEND_DOCUMENT(set, "token", t);
        });
      }
    }
    mongoc_change_stream_destroy(cs);
    return s;
  }

  // ---- push -------------------------------------------------------------

  struct PushOp {
    Value id;
    std::optional<Document> doc;  // what this side has (no version field); absent: deleted
    Base base;
    std::string source;  // the writeContext.source of this side's last write of it
    bool base_loaded = false;  // base is the record as it was when the push read it
    int64_t new_up_version = -1;
  };

  // The upstream's checkpoint of this origin and namespace: its last batch.
  StatusOr<int64_t> UpstreamBatch(const Ns& ns) {
    mongoc_collection_t* c = mongoc_client_get_collection(client, kUpstreamDb, kUpstreamCheckpoints);
    Document f = StrIdFilter(origin + "|" + ns.full);
    mongoc_cursor_t* cur = mongoc_collection_find_with_opts(c, f.bson(), nullptr, nullptr);
    const bson_t* d;
    int64_t batch = 0;
    if (mongoc_cursor_next(cur, &d)) batch = IntField(d, "batch").value_or(0);
    bson_error_t err;
    Status s;
    if (mongoc_cursor_error(cur, &err)) s = FromMongoc(err, "reading the upstream checkpoint");
    mongoc_cursor_destroy(cur);
    mongoc_collection_destroy(c);
    RETURN_IF_ERROR(s);
    return batch;
  }

  // A batch recorded in "inflight" whose outcome a previous run did not
  // see: applied upstream (its checkpoint says so) or not.
  Status FinishInflight(const Ns& ns) {
    ASSIGN_OR_RETURN(std::optional<Document> rec, sync_state::LoadInflight(db->rep()->db.get(), ns.full));
    if (!rec) return Status::OK();
    int64_t batch = IntField(rec->bson(), "batch").value_or(0);
    ASSIGN_OR_RETURN(int64_t up, UpstreamBatch(ns));
    if (up >= batch) {
      Progress(ns.full + ": batch " + std::to_string(batch) + " reached the upstream before the last run stopped");
      bson_iter_t it, arr;
      if (bson_iter_init_find(&it, rec->bson(), "docs") && bson_iter_recurse(&it, &arr)) {
        std::vector<PushOp> ops;
        while (bson_iter_next(&arr)) {
          bson_t entry;
          const bson_value_t* v = bson_iter_value(&arr);
          bson_init_static(&entry, v->value.v_doc.data, v->value.v_doc.data_len);
          bson_iter_t f;
          PushOp op;
          if (!bson_iter_init_find(&f, &entry, "id")) continue;
          op.id = Value(*bson_iter_value(&f));
          if (bson_iter_init_find(&f, &entry, "doc") && BSON_ITER_HOLDS_DOCUMENT(&f)) {
            const bson_value_t* dv = bson_iter_value(&f);
            ASSIGN_OR_RETURN(Document d, Document::FromBytes(dv->value.v_doc.data, dv->value.v_doc.data_len));
            op.doc = std::move(d);
          }
          op.new_up_version = IntField(&entry, "upVersion").value_or(-1);
          ops.push_back(std::move(op));
        }
        RETURN_IF_ERROR(RecordPushed(ns, ops));
      }
      Status s = SetCheckpoint(ns, nullptr, [&](bson_t* set) {
        BSON_APPEND_INT64(set, "batch", batch);
      });
      RETURN_IF_ERROR(s);
    }
    return sync_state::DeleteInflight(db->rep()->db.get(), ns.full);
  }

  // After an upstream commit: the bases are what was pushed.
  Status RecordPushed(const Ns& ns, const std::vector<PushOp>& ops) {
    std::vector<sync_state::BaseWrite> writes;
    writes.reserve(ops.size());
    for (const PushOp& op : ops) {
      // Only a pull (this thread) marks conflicts, and a push skips them.
      Base cur = op.base;
      if (!op.base_loaded) {
        ASSIGN_OR_RETURN(cur, LoadBase(ns, op.id, nullptr));
      }
      sync_state::BaseWrite w;
      w.id = op.id;
      w.base.exists = true;
      w.base.doc = op.doc;
      w.base.up_version = op.new_up_version;
      w.base.conflict = cur.conflict;
      w.was_pending = cur.pending;
      writes.push_back(std::move(w));
    }
    return sync_state::SaveBases(db->rep()->db.get(), ns.full, writes);
  }

  // The documents this side changed since the push checkpoint (by anyone
  // but sync itself), and those a merge left pending.
  // *sources: the writeContext.source of the last write the journal shows
  // of each (when it had one).
  Status PendingIds(const Ns& ns, uint64_t after, std::vector<Value>* ids, uint64_t* upto,
                    std::map<std::string, std::string>* sources) {
    std::set<std::string> seen;
    auto add = [&](const Value& id, std::string_view source = {}) {
      std::string key = id.ToJson();
      if (!source.empty()) (*sources)[key] = std::string(source);
      if (seen.insert(std::move(key)).second) ids->push_back(id);
    };
    Status s = sync_state::PendingPush(db->rep()->db.get(), ns.full, after, add, upto);
    if (s.code() != ErrorCode::kChangeStreamHistoryLost) return s;
    // Offline for longer than the journal keeps events: which documents
    // changed is not recorded any more, so every one is compared with its
    // base (the push sends only real differences).
    Progress(ns.full + ": the journal no longer goes back to the push checkpoint; comparing every document");
    ids->clear();
    seen.clear();
    *upto = db->rep()->db->LastJournalSeq();
    return AllIds(ns, add);
  }

  // Every document here and every one with a base (it may have been deleted).
  template <typename Add>
  Status AllIds(const Ns& ns, const Add& add) {
    FindOptions fo;
    fo.projection = *Document::FromJson(R"({"_id": 1})");
    ASSIGN_OR_RETURN(std::vector<Document> here, db->GetCollection(ns.db, ns.coll).Find(Document().view(), fo));
    for (const Document& d : here) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, d.bson(), "_id")) add(Value(*bson_iter_value(&it)));
    }
    return sync_state::ForEachBase(db->rep()->db.get(), ns.full, [&](const Value& id, const Base&) {
      add(id);
      return Status::OK();
    });
  }

  // The upstream's documents with these _ids now: found(ToJson of the _id,
  // document).
  template <typename Found>
  Status UpstreamDocs(const Ns& ns, const std::vector<Value>& ids, const Found& found) {
    bson_t* f = bson_new();
    bson_t idf, in;
    BSON_APPEND_DOCUMENT_BEGIN(f, "_id", &idf);
    BSON_APPEND_ARRAY_BEGIN(&idf, "$in", &in);
    for (size_t i = 0; i < ids.size(); ++i) ids[i].AppendTo(&in, std::to_string(i).c_str());
    bson_append_array_end(&idf, &in);
    bson_append_document_end(f, &idf);
    Document filter = Document::Adopt(f);
    CollHandle coll;
    coll.c = Upstream(ns);
    mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll.c, filter.bson(), nullptr, nullptr);
    const bson_t* d;
    while (mongoc_cursor_next(cur, &d)) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, d, "_id")) found(Value(*bson_iter_value(&it)).ToJson(), d);
    }
    bson_error_t err;
    Status s;
    if (mongoc_cursor_error(cur, &err)) s = FromMongoc(err, "reading the upstream's " + ns.full);
    mongoc_cursor_destroy(cur);
    return s;
  }

  // Pushes what this side changed.  *blocked: some documents moved
  // upstream meanwhile (a pull decides them first).
  Status Push(const Ns& ns, bool* blocked) {
    ASSIGN_OR_RETURN(Document ck, Checkpoint(ns, nullptr));
    const uint64_t push_seq = static_cast<uint64_t>(IntField(ck.bson(), "pushSeq").value_or(0));
    // Batch numbers only grow, on both sides (a run may have stopped between
    // the upstream's commit and this side's record of it).
    ASSIGN_OR_RETURN(int64_t up_batch, UpstreamBatch(ns));
    int64_t batch_no = std::max(IntField(ck.bson(), "batch").value_or(0), up_batch);
    std::vector<Value> ids;
    uint64_t upto = push_seq;
    std::map<std::string, std::string> sources;
    RETURN_IF_ERROR(PendingIds(ns, push_seq, &ids, &upto, &sources));
    if (!ids.empty()) Progress(ns.full + ": " + std::to_string(ids.size()) + " documents to push");
    bool all_done = true;
    for (size_t start = 0; start < ids.size(); start += static_cast<size_t>(opts.batch_size)) {
      size_t end = std::min(ids.size(), start + static_cast<size_t>(opts.batch_size));
      std::vector<PushOp> ops;
      std::vector<PushOp> unchanged;  // pending flags to clear
      for (size_t i = start; i < end; ++i) {
        PushOp op;
        op.id = ids[i];
        ASSIGN_OR_RETURN(op.base, LoadBase(ns, op.id, nullptr));
        op.base_loaded = true;
        if (op.base.conflict) {
          all_done = false;  // waits for syncResolve
          continue;
        }
        // The source of this side's last write: the journal's, or (a base a
        // merge left pending) the record's writer.
        auto src = sources.find(op.id.ToJson());
        Document writer;
        ASSIGN_OR_RETURN(std::optional<Document> have,
                         db->rep()->db->FindById(Namespace{ns.db, ns.coll}, op.id.get(), nullptr,
                                                 src == sources.end() ? &writer : nullptr));
        if (have) op.doc = Strip(have->bson(), ns.version_field);
        bson_iter_t wi;
        if (src != sources.end()) {
          op.source = src->second;
        } else if (!writer.empty() && bson_iter_init_find(&wi, writer.bson(), "source") && BSON_ITER_HOLDS_UTF8(&wi)) {
          op.source = bson_iter_utf8(&wi, nullptr);
        }
        std::optional<Document> base_doc = op.base.exists ? op.base.doc : std::nullopt;
        if (SameDoc(op.doc, base_doc)) {
          if (op.base.pending) {
            op.new_up_version = op.base.up_version;
            unchanged.push_back(std::move(op));
          }
          continue;
        }
        ops.push_back(std::move(op));
      }
      if (!unchanged.empty()) RETURN_IF_ERROR(RecordPushed(ns, unchanged));
      std::vector<PushOp> ready;
      for (PushOp& op : ops) {
        const bool base_has = op.base.exists && op.base.doc.has_value();
        if (!op.doc && !base_has) continue;
        op.new_up_version = !base_has ? 0 : op.doc ? op.base.up_version + 1 : op.base.up_version;
        ready.push_back(std::move(op));
      }
      // The writes are conditional on the versions this side last saw, so
      // the batch is sent as it is; only when the upstream refuses it (a
      // document moved there) are its versions read, the moved documents
      // left to the next pull, and the rest sent again.
      bool sent = false;
      Status refused;
      for (int attempt = 0; attempt < 2 && !ready.empty() && !sent; ++attempt) {
        if (attempt > 0) {
          std::vector<Value> ids;
          for (const PushOp& op : ready) ids.push_back(op.id);
          std::map<std::string, Document> now;
          RETURN_IF_ERROR(UpstreamDocs(ns, ids, [&](const std::string& key, const bson_t* d) {
            now.emplace(key, Document::Copy(d));
          }));
          std::vector<PushOp> still, known;
          for (PushOp& op : ready) {
            auto it = now.find(op.id.ToJson());
            const bool up_exists = it != now.end();
            const bool base_has = op.base.exists && op.base.doc.has_value();
            const int64_t up_version =
                up_exists ? IntField(it->second.bson(), ns.version_field.c_str()).value_or(-1) : -1;
            if (base_has ? (!up_exists || up_version != op.base.up_version) : up_exists) {
              if (up_exists && op.doc && CompareDocuments(Strip(it->second.bson(), ns.version_field).bson(), op.doc->bson()) == 0) {
                // The upstream holds exactly this side's document already
                // (a push whose version this side did not learn): only the
                // base's version was behind.
                op.new_up_version = up_version;
                known.push_back(std::move(op));
                continue;
              }
              *blocked = true;  // the upstream moved: the next pull decides
              all_done = false;
              continue;
            }
            still.push_back(std::move(op));
          }
          if (!known.empty()) RETURN_IF_ERROR(RecordPushed(ns, known));
          // Nothing moved: the refusal was not about versions (a lock
          // an abandoned upstream transaction holds, say).  The run fails
          // with it; the documents stay pending for the next.
          if (still.size() == ready.size()) return refused;
          ready = std::move(still);
          if (ready.empty()) break;
        }
        ++batch_no;
        RETURN_IF_ERROR(RecordInflight(ns, batch_no, ready));
        Status s = SendBatch(ns, batch_no, ready);
        if (s.ok()) {
          sent = true;
          break;
        }
        // Did it commit anyway?  The upstream checkpoint is in the same
        // transaction.  When that cannot be read, the batch stays in
        // flight for the next run to decide.
        StatusOr<int64_t> up = UpstreamBatch(ns);
        if (!up.ok()) return s;
        if (*up >= batch_no) {
          sent = true;  // committed; the reply was lost
          break;
        }
        // The upstream refused a write (a condition, or an _id created
        // there meanwhile): the transaction aborted.
        const bool definite = s.code() == ErrorCode::kWriteConflict || s.code() == ErrorCode::kDuplicateKey;
        if (!definite) return s;  // a lost commit reply: decided by the next run
        refused = s;
        RETURN_IF_ERROR(sync_state::DeleteInflight(db->rep()->db.get(), ns.full));
      }
      if (!sent) {
        if (!ready.empty()) {
          *blocked = true;  // refused twice: the upstream keeps moving
          all_done = false;
        }
        continue;
      }
      RETURN_IF_ERROR(RecordPushed(ns, ready));
      RETURN_IF_ERROR(sync_state::DeleteInflight(db->rep()->db.get(), ns.full));
      Status cs = SetCheckpoint(ns, nullptr, [&](bson_t* set) {
        BSON_APPEND_INT64(set, "batch", batch_no);
      });
      RETURN_IF_ERROR(cs);
      report.pushed += static_cast<int64_t>(ready.size());
      Progress(ns.full + ": pushed " + std::to_string(report.pushed) + " documents");
    }
    if (all_done && upto > push_seq) {
      Status s = SetCheckpoint(ns, nullptr, [&](bson_t* set) {
        BSON_APPEND_INT64(set, "pushSeq", static_cast<int64_t>(upto));
      });
      RETURN_IF_ERROR(s);
    }
    return Status::OK();
  }

  Status RecordInflight(const Ns& ns, int64_t batch, const std::vector<PushOp>& ops) {
    bson_t* d = bson_new();
    BSON_APPEND_INT64(d, "batch", batch);
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(d, "docs", &arr);
    for (size_t i = 0; i < ops.size(); ++i) {
      bson_t e;
      BSON_APPEND_DOCUMENT_BEGIN(&arr, std::to_string(i).c_str(), &e);
      ops[i].id.AppendTo(&e, "id");
      if (ops[i].doc) {
        BSON_APPEND_DOCUMENT(&e, "doc", ops[i].doc->bson());
      } else {
        BSON_APPEND_NULL(&e, "doc");
      }
      BSON_APPEND_INT64(&e, "upVersion", ops[i].new_up_version);
      bson_append_document_end(&arr, &e);
    }
    bson_append_array_end(d, &arr);
    return sync_state::SaveInflight(db->rep()->db.get(), ns.full, Document::Adopt(d));
  }

  // One write command on the upstream, in the session of `sopts`: OK when
  // it wrote (or matched) `want` documents; a write error is its own code;
  // fewer is a WriteConflict (a condition no longer held: that document
  // moved upstream).
  Status RunUpstreamWrite(mongoc_collection_t* coll, const bson_t* cmd, const bson_t* sopts, int64_t want,
                          const std::string& what) {
    bson_t reply;
    bson_error_t err;
    Status s;
    if (!mongoc_collection_write_command_with_opts(coll, cmd, sopts, &reply, &err)) {
      s = FromMongoc(err, what);
    } else {
      bson_iter_t it, e;
      if (bson_iter_init_find(&it, &reply, "writeErrors") && bson_iter_recurse(&it, &e) && bson_iter_next(&e) &&
          BSON_ITER_HOLDS_DOCUMENT(&e)) {
        bson_t first;
        const bson_value_t* v = bson_iter_value(&e);
        bson_init_static(&first, v->value.v_doc.data, v->value.v_doc.data_len);
        bson_iter_t f;
        std::string msg = bson_iter_init_find(&f, &first, "errmsg") && BSON_ITER_HOLDS_UTF8(&f) ? bson_iter_utf8(&f, nullptr) : "";
        s = Status(static_cast<ErrorCode>(IntField(&first, "code").value_or(static_cast<int64_t>(ErrorCode::kInternalError))),
                   what + ": " + msg);
      } else if (IntField(&reply, "n").value_or(-1) != want) {
        s = Status(ErrorCode::kWriteConflict, "an upstream document changed since this side last saw it");
      }
    }
    bson_destroy(&reply);
    return s;
  }

  // One upstream transaction: every conditional write of the batch and the
  // origin's checkpoint.  A write whose condition no longer holds aborts
  // it (WriteConflict): the upstream moved.
  Status SendBatch(const Ns& ns, int64_t batch, const std::vector<PushOp>& ops) {
    bson_error_t err;
    mongoc_client_session_t* session = mongoc_client_start_session(client, nullptr, &err);
    if (session == nullptr) return FromMongoc(err, "cannot start an upstream session");
    Status s;
    if (!mongoc_client_session_start_transaction(session, nullptr, &err)) {
      s = FromMongoc(err, "cannot start an upstream transaction");
    }
    bson_t sopts = BSON_INITIALIZER;
    if (s.ok() && !mongoc_client_session_append(session, &sopts, &err)) s = FromMongoc(err, "session");
    CollHandle coll;
    coll.c = Upstream(ns);
    // Per source (a hub records each write's writeContext, which
    // sourcePriority ranks; a MongoDB upstream takes none), one insert, one
    // update and one delete command: a few round trips for the batch.
    std::map<std::string, std::vector<const PushOp*>> groups;
    for (const PushOp& op : ops) groups[hub ? op.source : std::string()].push_back(&op);
    for (auto g = groups.begin(); s.ok() && g != groups.end(); ++g) {
      bson_t ins = BSON_INITIALIZER, upd = BSON_INITIALIZER, del = BSON_INITIALIZER;
      bson_t ins_arr, upd_arr, del_arr;
      BSON_APPEND_UTF8(&ins, "insert", ns.coll.c_str());
      BSON_APPEND_ARRAY_BEGIN(&ins, "documents", &ins_arr);
      BSON_APPEND_UTF8(&upd, "update", ns.coll.c_str());
      BSON_APPEND_ARRAY_BEGIN(&upd, "updates", &upd_arr);
      BSON_APPEND_UTF8(&del, "delete", ns.coll.c_str());
      BSON_APPEND_ARRAY_BEGIN(&del, "deletes", &del_arr);
      int64_t inserts = 0, matches = 0, removes = 0;
      for (const PushOp* opp : g->second) {
        const PushOp& op = *opp;
        const bool base_has = op.base.exists && op.base.doc.has_value();
        if (!base_has) {
          bson_t doc;
          const std::string k = std::to_string(inserts++);
          BSON_APPEND_DOCUMENT_BEGIN(&ins_arr, k.c_str(), &doc);
          bson_concat(&doc, op.doc->bson());
          if (!hub) BSON_APPEND_INT64(&doc, ns.version_field.c_str(), 0);
          bson_append_document_end(&ins_arr, &doc);
          continue;
        }
        bson_t filter = BSON_INITIALIZER;
        op.id.AppendTo(&filter, "_id");
        if (op.base.up_version >= 0) {
          BSON_APPEND_INT64(&filter, ns.version_field.c_str(), op.base.up_version);
        } else {
          bson_t ex;
          BSON_APPEND_DOCUMENT_BEGIN(&filter, ns.version_field.c_str(), &ex);
          BSON_APPEND_BOOL(&ex, "$exists", false);
          bson_append_document_end(&filter, &ex);
        }
        bson_t stmt;
        if (!op.doc) {
          const std::string k = std::to_string(removes++);
          BSON_APPEND_DOCUMENT_BEGIN(&del_arr, k.c_str(), &stmt);
          BSON_APPEND_DOCUMENT(&stmt, "q", &filter);
          BSON_APPEND_INT32(&stmt, "limit", 1);
          bson_append_document_end(&del_arr, &stmt);
        } else {
          std::vector<std::string> paths = Changed(op.base.doc->bson(), op.doc->bson());
          std::set<std::string> inc_paths;
          if (ns.policy.mode == ConflictMode::kFieldMerge && ns.policy.merge_increments) {
            inc_paths.insert(paths.begin(), paths.end());  // counters add, as the merge does
          }
          Document delta = BuildDelta(op.base.doc->bson(), op.doc->bson(), paths, inc_paths,
                                      hub ? nullptr : &ns.version_field);
          const std::string k = std::to_string(matches++);
          BSON_APPEND_DOCUMENT_BEGIN(&upd_arr, k.c_str(), &stmt);
          BSON_APPEND_DOCUMENT(&stmt, "q", &filter);
          BSON_APPEND_DOCUMENT(&stmt, "u", delta.bson());
          bson_append_document_end(&upd_arr, &stmt);
        }
        bson_destroy(&filter);
      }
      bson_append_array_end(&ins, &ins_arr);
      bson_append_array_end(&upd, &upd_arr);
      bson_append_array_end(&del, &del_arr);
      struct Cmd {
        bson_t* cmd;
        int64_t n;
        const char* what;
      } cmds[] = {{&ins, inserts, "insert"}, {&upd, matches, "update"}, {&del, removes, "delete"}};
      for (Cmd& c : cmds) {
        if (s.ok() && c.n > 0) {
          BSON_APPEND_BOOL(c.cmd, "ordered", true);
          if (hub) {
            bson_t wc;
            BSON_APPEND_DOCUMENT_BEGIN(c.cmd, "writeContext", &wc);
            BSON_APPEND_UTF8(&wc, "agentId", PushAgent().c_str());
            if (!g->first.empty()) BSON_APPEND_UTF8(&wc, "source", g->first.c_str());
            bson_append_document_end(c.cmd, &wc);
          }
          s = RunUpstreamWrite(coll.c, c.cmd, &sopts, c.n, std::string(c.what) + " into the upstream's " + ns.full);
        }
        bson_destroy(c.cmd);
      }
    }
    if (s.ok()) {
      mongoc_collection_t* ckc = mongoc_client_get_collection(client, kUpstreamDb, kUpstreamCheckpoints);
      Document f = StrIdFilter(origin + "|" + ns.full);
      bson_t u = BSON_INITIALIZER, set, o = BSON_INITIALIZER, reply;
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
      BSON_APPEND_INT64(&set, "batch", batch);
      BSON_APPEND_UTF8(&set, "origin", origin.c_str());
      BSON_APPEND_UTF8(&set, "ns", ns.full.c_str());
      BSON_APPEND_DATE_TIME(&set, "at", db->rep()->db->NowMs());
      bson_append_document_end(&u, &set);
      bson_concat(&o, &sopts);
      BSON_APPEND_BOOL(&o, "upsert", true);
      if (!mongoc_collection_update_one(ckc, f.bson(), &u, &o, &reply, &err)) {
        s = FromMongoc(err, "advancing the upstream checkpoint");
      }
      bson_destroy(&reply);
      bson_destroy(&u);
      bson_destroy(&o);
      mongoc_collection_destroy(ckc);
    }
    if (s.ok()) {
      bson_t reply;
      if (!mongoc_client_session_commit_transaction(session, &reply, &err)) {
        s = FromMongoc(err, "committing the push to the upstream");
      }
      bson_destroy(&reply);
    } else {
      mongoc_client_session_abort_transaction(session, nullptr);
    }
    bson_destroy(&sopts);
    mongoc_client_session_destroy(session);
    return s;
  }

  StatusOr<SyncReport> RunOnce() {
    report = SyncReport();
    for (const Ns& ns : nss) RETURN_IF_ERROR(FinishInflight(ns));
    for (int round = 0; round < kMaxRounds; ++round) {
      bool blocked = false;
      const SyncReport before = report;
      for (const Ns& ns : nss) RETURN_IF_ERROR(Pull(ns));
      for (const Ns& ns : nss) RETURN_IF_ERROR(Push(ns, &blocked));
      const bool moved = report.pushed != before.pushed || report.pulled != before.pulled ||
                         report.merged != before.merged;
      if (!blocked && !moved) break;
      if (!blocked && round > 0) break;
    }
    // Our own pushes, coming back, are recognised and skipped.
    for (const Ns& ns : nss) RETURN_IF_ERROR(Pull(ns));
    return report;
  }
};

Sync::Sync(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sync::~Sync() = default;

StatusOr<std::unique_ptr<Sync>> Sync::Open(Database* db, SyncOptions options) {
  if (db == nullptr) return Status(ErrorCode::kInvalidOptions, "sync needs a database");
  if (options.upstream_uri.empty()) return Status(ErrorCode::kInvalidOptions, "sync needs an upstream URI (--upstream)");
  if (options.batch_size <= 0) return Status(ErrorCode::kInvalidOptions, "batch_size must be positive");
  auto impl = std::make_unique<Impl>();
  impl->db = db;
  impl->opts = std::move(options);
  RETURN_IF_ERROR(impl->ResolveNamespaces());
  RETURN_IF_ERROR(impl->Connect());
  RETURN_IF_ERROR(impl->LoadOrigin());
  return std::unique_ptr<Sync>(new Sync(std::move(impl)));
}

StatusOr<SyncReport> Sync::RunOnce() { return impl_->RunOnce(); }

}  // namespace gatedb
