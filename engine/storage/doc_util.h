// File: engine/storage/doc_util.h
//
// Small document helpers for the write path: the store-owned version field
// and the _id of filters and documents.
#ifndef GATEDB_ENGINE_STORAGE_DOC_UTIL_H_
#define GATEDB_ENGINE_STORAGE_DOC_UTIL_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>

#include "engine/document/validate.h"

namespace gatedb {

// Writes `in` to `out` (an initialized empty bson_t) with the top-level
// field `field` set to int64 `version`: in place when present, appended
// when not.
void SetVersionField(const bson_t* in, const std::string& field, int64_t version, bson_t* out);
// The same when the caller already knows whether `in` holds `field` at the
// top level, and as what (ValidateForStorage's TopLevelSummary of `in`);
// `offset`, when not 0, is the field's element offset in `in`
// (TopLevelSummary::probe_offset).
// REQUIRES: `out` is empty.
void SetVersionField(const bson_t* in, const std::string& field, int64_t version, TopLevelSummary::Probe present,
                     uint32_t offset, bson_t* out);

// Sets the top-level int64 field `field` of `doc` to `version` by
// overwriting its 8 bytes.  False (and `doc` unchanged) when `doc` has no
// such int64 field; use SetVersionField then.
// REQUIRES: `doc` is writable (made by bson_new or bson_init, not static).
bool OverwriteVersionField(bson_t* doc, const std::string& field, int64_t version);
// OverwriteVersionField for a caller that knows where the field is:
// `offset` is the offset of its element in `doc`, 0 when `doc` lacks it.
bool OverwriteVersionFieldAt(bson_t* doc, const std::string& field, uint32_t offset, int64_t version);

// Points `id` at the document's top-level _id.  False when it has none.
// The value borrows from `doc`.
bool GetId(const bson_t* doc, bson_value_t* id);

// When the filter pins _id to one value by plain equality ({_id: v} or
// {_id: {$eq: v}}, v not a regex, array or operator document), points `id`
// at that value (borrowed from `filter`) and returns true.  The filter's
// other fields still have to be matched.
bool PointIdFromFilter(const bson_t* filter, bson_value_t* id);
// PointIdFromFilter, and _id is the filter's only field: a point read by
// _id's key is then the whole match (equal _id values share one key), so
// no matcher is needed.
bool IdOnlyFilter(const bson_t* filter, bson_value_t* id);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_DOC_UTIL_H_
