// File: engine/storage/field_versions.h
//
// The field-version table kept beside each document (engine/storage/
// record.h): for each written dotted path, the document version at which it
// last changed.  Writing a path supersedes the entries of its children;
// arrays are one unit (DiffPaths reports an array's path); the root path ""
// stands for "everything" when the table would grow past kMaxEntries, so it
// stays small and stays conservative.
#ifndef GATEDB_ENGINE_STORAGE_FIELD_VERSIONS_H_
#define GATEDB_ENGINE_STORAGE_FIELD_VERSIONS_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gatedb {

class BsonWriter;

constexpr size_t kMaxFieldVersionEntries = 256;

// Writes into `out` (a document just begun) the table after a write at
// `version` that changed `changed`.  `old_table` may be null (no entries).
void UpdateFieldVersions(const bson_t* old_table, const std::vector<std::string>& changed, int64_t version,
                         BsonWriter* out);

// The table's paths changed after `basis` that are, or are a parent or
// child of, one of `written`.  `table` may be null.
std::vector<std::string> ChangedSinceOverlapping(const bson_t* table, int64_t basis,
                                                 const std::vector<std::string>& written);

// The paths to record for a write: each changed path, widened to the
// shortest operator target path that covers it ($set of "a" records "a",
// superseding "a.*", though the diff lists "a.x" and "a.y").
std::vector<std::string> PathsToRecord(const std::vector<std::string>& changed,
                                       const std::vector<std::string>& targets);

// Every path of the table changed after `basis`.
std::vector<std::string> ChangedSince(const bson_t* table, int64_t basis);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_FIELD_VERSIONS_H_
