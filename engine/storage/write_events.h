// File: engine/storage/write_events.h
//
// The BSON the write path produces besides documents: journal events (one
// per committed write, and one per refused gated write), the last-writer
// block of a record, and a VersionConflict's errInfo.  Field names are
// PROTOCOL.md's.
#ifndef GATEDB_ENGINE_STORAGE_WRITE_EVENTS_H_
#define GATEDB_ENGINE_STORAGE_WRITE_EVENTS_H_

#include <bson/bson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/storage/db_impl_internal.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/value.h"

namespace gatedb {

class BsonWriter;

int64_t NowMillis();

// {agentId, taskId, source, at}: who last wrote a document.
Document BuildWriterBlock(const WriteContext& ctx, int64_t now_ms);
// The same block's fields, written into `out` (a document just begun).
void WriteWriterBlock(const WriteContext& ctx, int64_t now_ms, BsonWriter* out);

// Appends the write context as PROTOCOL.md's writeContext document.
void AppendWriteContext(bson_t* out, const char* key, const WriteContext& ctx);

// Where some top-level fields lie in a write's new document: offsets[i] is
// the offset of names[i]'s element, 0 where the document lacks it; no name
// occurs twice at its top level (update::FieldLayout).
struct KnownFields {
  const std::vector<std::string>* names = nullptr;
  const std::vector<uint32_t>* offsets = nullptr;
};

// A committed write's event: {seq: 0, op, ns, _id, versionBefore,
// versionAfter, writeContext, changedPaths, at, gated, basisVersion?,
// merged?: true, policy?, <change>}: `merged_by` names the conflict policy
// that let a stale write through (merged and policy are then set).  The
// journal writes the real `seq` into the placeholder at commit.  A missing
// before/after version is null (insert / delete).  <change> is what the
// write made of the document, given `after` (the stored document): for an
// insert or a replace, fullDocument: after; for an update,
// updatedFields: {path: new value} and removedFields: [path], from
// changed_paths (change streams and sync read them).  `known`, when given,
// says where fields of `after` lie: an update's values are then read there,
// not searched for.
Document BuildWriteEvent(const char* op, const std::string& ns, const bson_value_t& id,
                         std::optional<int64_t> version_before, std::optional<int64_t> version_after,
                         const WriteContext& ctx, const std::vector<std::string>& changed_paths,
                         const WriteGate& gate, int64_t now_ms, const char* merged_by = nullptr,
                         const bson_t* after = nullptr, const KnownFields* known = nullptr);
// The same event's BSON bytes, appended to *out (the write path writes them
// straight after its journal value's header: wal::Journal::BeginWriterValue),
// ending with {txn: <txn>} for a write of a snapshot transaction (`txn` not
// empty), as DBImpl::CommitScope names every event of one.
void EncodeWriteEvent(std::string* out, std::string_view txn, const char* op, std::string_view ns, const bson_value_t& id,
                      std::optional<int64_t> version_before, std::optional<int64_t> version_after,
                      const WriteContext& ctx, const std::vector<std::string>& changed_paths,
                      const WriteGate& gate, int64_t now_ms, const char* merged_by = nullptr,
                      const bson_t* after = nullptr, const KnownFields* known = nullptr);

// A catalog change's event: {seq: 0, op, ns, at}: "drop" (ns: "db.coll"),
// "dropDatabase" (ns: the database's name), "rename" (with `to`).
// `to` (a rename's new "db.coll"): recorded when given.
Document BuildDdlEvent(const char* op, const std::string& ns, int64_t now_ms, const std::string* to = nullptr);

// The top-level field names of a new document, but the version field.
std::vector<std::string> TopLevelPaths(const bson_t* doc, const std::string& version_field);

// Appends an event's changedPaths to `paths`, skipping ones already there.
void AppendChangedPaths(const bson_t* event, std::vector<std::string>* paths);

// Everything known about a refused gated write.
struct ConflictInfo {
  ErrorCode code = ErrorCode::kVersionConflict;  // or StaleBasis, Unauthorized
  std::string ns;
  std::optional<Value> id;
  std::optional<int64_t> basis_version;
  int64_t current_version = 0;
  const bson_t* current = nullptr;      // the document now, or null
  std::vector<std::string> conflicting_fields;
  bool conflicting_fields_complete = false;
  const bson_t* last_writer = nullptr;  // {agentId, taskId, source, at}, or null
  std::string reason;
  const WriteContext* context = nullptr;
  int64_t now_ms = 0;
  const char* policy = "reject";
  bool by_source = false;  // sourcePriority: name both sources
  std::string source;
  std::string last_source;
  // Unauthorized: the action refused and the path it may not change (""
  // when the action itself is refused); `gated` whether the write was.
  const char* action = nullptr;
  std::string path;
  bool gated = true;
};

// errInfo: {basisVersion, currentVersion, current, conflictingFields,
// conflictingFieldsComplete, lastWriter, reason, suggestedAction, policy}.
Document BuildConflictErrInfo(const ConflictInfo& info);
// The conflict event (with the same `seq` placeholder): {op: "conflict", ns, _id, versionBefore, versionAfter
// (both the current version), basisVersion, writeContext, changedPaths: [],
// conflictingFields, code, reason, policy, at, gated}; a refusal by
// permissions (code "Unauthorized") adds action and path.
Document BuildConflictEvent(const ConflictInfo& info);
std::string BuildConflictMessage(const ConflictInfo& info);

// True when the filter holds a top-level equality on the version field
// ({version: 3} or {version: {$eq: 3}}, a number).
bool HasVersionEquality(const bson_t* filter, const std::string& version_field);
// Splits such a filter into the expected version and the filter without it.
bool SplitVersionEquality(const bson_t* filter, const std::string& version_field, int64_t* expected,
                          Document* without);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_WRITE_EVENTS_H_
