// File: engine/storage/requests.h
//
// The request and result structs that every door builds: the typed C++ API
// fills them from its arguments, the command dispatcher from command BSON.
// Both then call the same DBImpl entry points, so no feature exists in one
// door only.
#ifndef GATEDB_ENGINE_STORAGE_REQUESTS_H_
#define GATEDB_ENGINE_STORAGE_REQUESTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/status.h"
#include "gatedb/value.h"

namespace gatedb {

// "db.collection", split.
struct Namespace {
  std::string db;
  std::string coll;
  std::string full() const { return db + "." + coll; }
};

// Validates database and collection names as MongoDB does.
// Errors: InvalidNamespace.
Status ValidateNamespace(const Namespace& ns);

struct CollectionOptions {
  // The store-owned version field.  Default: "version".
  std::string version_field = "version";
};

struct CollectionInfo {
  Namespace ns;
  uint32_t id = 0;
  CollectionOptions options;
};

// One failed statement of a multi-statement write.
struct WriteError {
  size_t index = 0;
  Status status;
  std::optional<Document> err_info;
};

struct WriteOptionsInternal {
  bool sync = false;  // j: true
};

struct InsertRequest {
  Namespace ns;
  std::vector<Document> documents;
  bool ordered = true;
  WriteOptionsInternal write;
};
struct InsertResult {
  int64_t n = 0;
  std::vector<Value> inserted_ids;  // of the documents that were inserted
  std::vector<WriteError> write_errors;
};

struct UpdateStatement {
  Document q;
  Document u;
  bool upsert = false;
  bool multi = false;
};
struct UpdateRequest {
  Namespace ns;
  std::vector<UpdateStatement> updates;
  bool ordered = true;
  WriteOptionsInternal write;
};
struct Upserted {
  size_t index = 0;
  Value id;
};
struct UpdateWriteResult {
  int64_t n = 0;
  int64_t n_modified = 0;
  std::vector<Upserted> upserted;
  std::vector<WriteError> write_errors;
};

struct DeleteStatement {
  Document q;
  int64_t limit = 0;  // 0: all matching; 1: one
};
struct DeleteRequest {
  Namespace ns;
  std::vector<DeleteStatement> deletes;
  bool ordered = true;
  WriteOptionsInternal write;
};
struct DeleteWriteResult {
  int64_t n = 0;
  std::vector<WriteError> write_errors;
};

struct FindRequest {
  Namespace ns;
  Document filter;
  Document projection;  // {} = whole documents
  Document sort;        // {} = _id order
  int64_t skip = 0;
  int64_t limit = 0;    // 0 = no limit
};
struct FindResult {
  std::vector<Document> docs;
};

struct FindAndModifyRequest {
  Namespace ns;
  Document query;
  Document sort;
  Document fields;
  std::optional<Document> update;  // exactly one of update / remove
  bool remove = false;
  bool return_new = false;
  bool upsert = false;
  WriteOptionsInternal write;
};
struct FindAndModifyResult {
  std::optional<Document> value;  // null in the reply when absent
  int64_t n = 0;
  bool updated_existing = false;
  std::optional<Value> upserted_id;
};

struct CountRequest {
  Namespace ns;
  Document query;
  int64_t skip = 0;
  int64_t limit = 0;
};

struct DistinctRequest {
  Namespace ns;
  std::string key;
  Document query;
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_REQUESTS_H_
