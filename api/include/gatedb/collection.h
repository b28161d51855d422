// File: gatedb/collection.h
//
// Collection: the typed CRUD API over one collection ("db.name").  Each call
// builds the same request the command dispatcher builds from command BSON
// and runs the same engine entry point, so `coll.UpdateOne(f, u)` and
// `db->RunCommand({update: ...})` behave identically.
//
// A Collection is a cheap handle (a pointer to its Database and a name); it
// must not outlive the Database.  All methods are thread-safe.  A missing
// collection reads as empty and is created by the first write, as in MongoDB.
//
//   gatedb::Collection orders = db->GetCollection("orders");
//   auto r = orders.UpdateOne(Json(R"({"_id": "o1", "version": 3})"),
//                             Json(R"({"$set": {"status": "paid"}, "$inc": {"version": 1}})"));
//   if (r.ok() && r->matched_count == 0) { /* stale: reread and retry */ }
#ifndef GATEDB_COLLECTION_H_
#define GATEDB_COLLECTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gatedb/cursor.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"
#include "gatedb/transaction.h"
#include "gatedb/value.h"

namespace gatedb {

class Database;

// Given the document as it is now (with its version), returns the update to
// apply (operators, or a replacement), or an error to give up with.
using GatedUpdateFn = std::function<StatusOr<Document>(const Document& current)>;

struct GatedWriteOptions {
  // Rereads and retries after a VersionConflict at most this many times in
  // all.  Default: 10
  int max_attempts = 10;
  // Recorded with every attempt; read_at_ms is set to each read's time.
  // Default: empty
  WriteContext context;
  bool sync = false;  // Default: false
};

struct GatedWriteResult {
  int64_t matched_count = 0;
  int64_t modified_count = 0;
  int attempts = 0;         // 1 when the first try went through
  int64_t basis_version = 0;  // the version the successful attempt was based on
};

struct FindOptions {
  Document projection;  // {} = whole documents.  Default: {}
  Document sort;        // {} = _id order.  Default: {}
  int64_t skip = 0;     // Default: 0
  int64_t limit = 0;    // 0 = no limit.  Default: 0
  // Read inside this transaction (its snapshot and its own writes).
  // Default: none
  Transaction* txn = nullptr;
  // With txn: lock what is read, as if written, so that a concurrent change
  // of it aborts one side (prevents write skew).  Default: false
  bool lock_documents = false;
  // Forces an index: its name ("a_1") in hint_name, or its key pattern
  // ({a: 1}) in hint, or {$natural: 1} for a collection scan.  Default: none
  std::string hint_name;
  Document hint;
  // FindCursor: documents fetched per batch.  Default: 101 (MongoDB's first batch)
  int64_t batch_size = 101;
  // A sort without an index that gives its order may spill to disk instead
  // of failing past Options::sort_memory_bytes.  Default: false
  bool allow_disk_use = false;
  // Time the query may spend in all (0: no limit); MaxTimeMSExpired past it.
  // Default: 0
  int64_t max_time_ms = 0;
};

struct AggregateOptions {
  // Documents fetched per batch.  Default: 101 (MongoDB's first batch)
  int64_t batch_size = 101;
  // $sort, $group, $sample and $out may spill to disk instead of failing
  // past Options::sort_memory_bytes.  Default: false
  bool allow_disk_use = false;
  // Time the pipeline may spend in all (0: no limit).  Default: 0
  int64_t max_time_ms = 0;
  // Variables for every stage, as $$name: {name: <expression>}.  Default: {}
  Document let;
  // Forces an index for the leading $match, as FindOptions.  Default: none
  std::string hint_name;
  Document hint;
  // Read inside this transaction ($out and $merge are refused there).
  // Default: none
  Transaction* txn = nullptr;
  // How $out and $merge write: writeContext (each of their writes is its
  // own, never a keyed replay), sync, bypass_document_validation.
  WriteOptions write;
};

// One index, as createIndexes takes it (MongoDB's options).
struct IndexModel {
  Document keys;                  // {a: 1, "b.c": -1}
  std::string name;               // empty: MongoDB's default ("a_1_b.c_-1")
  bool unique = false;            // Default: false
  bool sparse = false;            // Default: false
  Document partial_filter;        // partialFilterExpression; {} = none
  std::optional<int64_t> expire_after_seconds;  // TTL (single-field indexes)
};

struct UpdateOptions {
  bool upsert = false;  // insert when nothing matches.  Default: false
  WriteOptions write;
};

struct FindOneAndModifyOptions {
  Document projection;       // Default: {}
  Document sort;             // which document when several match.  Default: {}
  bool upsert = false;       // Default: false
  bool return_after = false; // the document after the change (MongoDB's returnDocument: "after").  Default: false
  WriteOptions write;
};

struct CountOptions {
  int64_t skip = 0;   // Default: 0
  int64_t limit = 0;  // 0 = no limit.  Default: 0
  Transaction* txn = nullptr;  // Default: none
  std::string hint_name;  // as FindOptions
  Document hint;
};

// One failed statement of a multi-document write.
struct WriteErrorInfo {
  size_t index = 0;  // position in the request
  Status status;
};

// `replayed`: the write context's (task_id, write_seq) key had already run
// this command; the result is the stored one and nothing was written now.
struct InsertOneResult {
  Value inserted_id;
  bool replayed = false;
};

struct InsertManyResult {
  std::vector<Value> inserted_ids;         // of the documents inserted
  std::vector<WriteErrorInfo> write_errors;  // empty when all were inserted
  bool replayed = false;
};

struct UpdateResult {
  int64_t matched_count = 0;
  int64_t modified_count = 0;        // matched and changed (version raised)
  std::optional<Value> upserted_id;  // set when an upsert inserted
  bool replayed = false;
};

struct Lease {
  std::string holder;
  int64_t expires_at_ms = 0;
  bool released = false;  // ReleaseLease: a live lease was removed
};

// What a document's field versions say: for each written dotted path, the
// document version at which it last changed (paths never written since
// the insert are absent: they are as old as version 0).
struct FieldVersions {
  Value id;
  Document versions;  // {"<path>": version}
};

struct DeleteResult {
  int64_t deleted_count = 0;
  bool replayed = false;
};

class Collection {
 public:
  const std::string& database_name() const { return db_name_; }
  const std::string& name() const { return name_; }

  // Inserts one document; a missing _id gets a new ObjectId, the version
  // field is set to 0.  Errors: DuplicateKey, InvalidBSON, BSONObjectTooLarge,
  // Overflow (nesting), DollarPrefixedFieldName, EmptyFieldName,
  // InvalidIdField, InvalidNamespace.
  StatusOr<InsertOneResult> InsertOne(DocumentView doc, const WriteOptions& options = WriteOptions());
  // Inserts documents in order; with options.ordered (the default) stops at
  // the first failure.  Per-document failures are in write_errors; the
  // Status is an error only when the whole call failed.
  StatusOr<InsertManyResult> InsertMany(const std::vector<Document>& docs,
                                        const WriteOptions& options = WriteOptions());

  // The first matching document (in sort order, else _id order), or nullopt.
  // Errors: BadValue / FailedToParse for a bad filter, projection or sort.
  StatusOr<std::optional<Document>> FindOne(DocumentView filter, const FindOptions& options = FindOptions());
  // All matching documents, in one vector.
  StatusOr<std::vector<Document>> Find(DocumentView filter, const FindOptions& options = FindOptions());
  // The matching documents through a cursor (gatedb/cursor.h), fetched
  // options.batch_size at a time.  Errors: as Find, when the first batch
  // is fetched.
  StatusOr<Cursor> FindCursor(DocumentView filter, const FindOptions& options = FindOptions());

  // Runs an aggregation pipeline (a BSON array of stages, as the aggregate
  // command takes it) and returns its results as a cursor; with $out or
  // $merge last, the writes are done before it returns and the cursor is
  // empty.  Errors: the stages' parse errors (MongoDB's codes, 40324 for
  // an unknown stage), their evaluation errors, as Find's.
  StatusOr<Cursor> Aggregate(DocumentView pipeline, const AggregateOptions& options = AggregateOptions());

  // A change stream on this collection (gatedb/cursor.h).  `pipeline`: the
  // stages after $changeStream, a BSON array ($match, $project, $addFields,
  // $set, $unset, $replaceRoot, $replaceWith; empty: none).  Errors:
  // InvalidResumeToken, IllegalOperation (another stage),
  // ChangeStreamHistoryLost, the stages' parse errors.
  StatusOr<ChangeStream> Watch(DocumentView pipeline = DocumentView(),
                               const ChangeStreamOptions& options = ChangeStreamOptions());

  // `update` must hold only update operators.  Errors: the filter's and the
  // update's parse errors, ImmutableField (_id, the version field),
  // TypeMismatch, ConflictingUpdateOperators, PathNotViable, DuplicateKey
  // (upsert), WriteConflict (lock wait exhausted).
  StatusOr<UpdateResult> UpdateOne(DocumentView filter, DocumentView update,
                                   const UpdateOptions& options = UpdateOptions());
  StatusOr<UpdateResult> UpdateMany(DocumentView filter, DocumentView update,
                                    const UpdateOptions& options = UpdateOptions());
  // `replacement` may not hold update operators.
  StatusOr<UpdateResult> ReplaceOne(DocumentView filter, DocumentView replacement,
                                    const UpdateOptions& options = UpdateOptions());

  StatusOr<DeleteResult> DeleteOne(DocumentView filter, const WriteOptions& options = WriteOptions());
  StatusOr<DeleteResult> DeleteMany(DocumentView filter, const WriteOptions& options = WriteOptions());

  // Atomically updates (replaces, deletes) one document and returns it as
  // it was before (or after, with return_after), or nullopt when none
  // matched and nothing was upserted.
  StatusOr<std::optional<Document>> FindOneAndUpdate(DocumentView filter, DocumentView update,
                                                     const FindOneAndModifyOptions& options = FindOneAndModifyOptions());
  StatusOr<std::optional<Document>> FindOneAndReplace(DocumentView filter, DocumentView replacement,
                                                      const FindOneAndModifyOptions& options = FindOneAndModifyOptions());
  StatusOr<std::optional<Document>> FindOneAndDelete(DocumentView filter,
                                                     const FindOneAndModifyOptions& options = FindOneAndModifyOptions());

  StatusOr<int64_t> CountDocuments(DocumentView filter, const CountOptions& options = CountOptions());

  // Secondary indexes.  CreateIndexes builds each new index over the
  // existing documents before returning (`progress`, when set, is called
  // with the documents indexed so far) and returns their names; an index
  // whose definition exists already is left as it is.  Errors: MongoDB's
  // (CannotCreateIndex, IndexOptionsConflict, IndexKeySpecsConflict,
  // InvalidIndexSpecificationOption, DuplicateKey for a unique index over
  // duplicates: the build then leaves nothing behind).
  StatusOr<std::vector<std::string>> CreateIndexes(const std::vector<IndexModel>& indexes,
                                                   const std::function<void(uint64_t)>& progress = nullptr);
  StatusOr<std::string> CreateIndex(const IndexModel& index);
  // listIndexes' documents ({v, key, name, ...}), _id_ first.
  // NamespaceNotFound when the collection does not exist.
  StatusOr<std::vector<Document>> ListIndexes();
  // Drops an index by name ("*": every index but _id_).  IndexNotFound,
  // InvalidOptions (_id_).
  Status DropIndex(const std::string& name);
  // MongoDB's explain of a find: queryPlanner (winningPlan, rejectedPlans)
  // and, unless verbosity is "queryPlanner", executionStats.
  StatusOr<Document> Explain(DocumentView filter, const FindOptions& options = FindOptions(),
                             const std::string& verbosity = "executionStats");
  // Distinct values of a dotted path among matching documents (array
  // elements count one by one), in BSON order.
  StatusOr<std::vector<Value>> Distinct(std::string_view key, DocumentView filter, Transaction* txn = nullptr);

  // Leases (PROTOCOL.md): while `holder` holds a document's lease, writes
  // to it from other agents (WriteContext::agent_id) are refused with
  // LeaseHeld (errInfo: holder, expiresAt); the holder's writes pass (and
  // still pass the version gate).  Expired leases no longer count.
  // Errors: LeaseHeld (another holder), BadValue (no holder, bad ttl).
  StatusOr<Lease> AcquireLease(const Value& id, int64_t ttl_ms, const std::string& holder);
  // Errors: LeaseHeld, NoSuchKey (no live lease of the holder).
  StatusOr<Lease> RenewLease(const Value& id, int64_t ttl_ms, const std::string& holder);
  StatusOr<Lease> ReleaseLease(const Value& id, const std::string& holder);

  // The field versions of the matching documents (the `fieldVersions`
  // find option).
  StatusOr<std::vector<FieldVersions>> GetFieldVersions(DocumentView filter);

  // The seeds' writeWithVersionGate, done properly: reads the one document
  // `filter` selects (with its version), calls `fn` with it to get the
  // update, writes with basisVersion = that version, and on a
  // VersionConflict rereads and calls `fn` again (never reusing the old
  // snapshot), up to options.max_attempts.  Errors: NoMatchingDocument when
  // nothing matches; fn's own error; the last VersionConflict (with its
  // errInfo) when the attempts run out; any other write error.
  StatusOr<GatedWriteResult> WriteWithVersionGate(DocumentView filter, const GatedUpdateFn& fn,
                                                  const GatedWriteOptions& options = GatedWriteOptions());

 private:
  friend class Database;
  Collection(Database* db, std::string db_name, std::string name)
      : db_(db), db_name_(std::move(db_name)), name_(std::move(name)) {}
  StatusOr<UpdateResult> UpdateImpl(DocumentView filter, DocumentView update, bool multi,
                                    const UpdateOptions& options);
  StatusOr<std::vector<Document>> FindImpl(DocumentView filter, const FindOptions& options, int64_t limit);
  StatusOr<std::optional<Document>> FindAndModifyImpl(DocumentView filter, const Document* update,
                                                      bool remove, const FindOneAndModifyOptions& options);
  StatusOr<DeleteResult> DeleteImpl(DocumentView filter, int64_t limit, const WriteOptions& options);

  Database* db_;
  std::string db_name_;
  std::string name_;
};

}  // namespace gatedb

#endif  // GATEDB_COLLECTION_H_
