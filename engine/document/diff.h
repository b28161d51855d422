// File: engine/document/diff.h
//
// The field paths that differ between two versions of a document: what the
// journal records as a write's `changedPaths`, and what field-version merge
// compares.  Embedded documents are descended into; arrays are one unit (a
// change anywhere inside an array is a change of the array's path), as
// PROTOCOL.md's field merge requires.
#ifndef GATEDB_ENGINE_DOCUMENT_DIFF_H_
#define GATEDB_ENGINE_DOCUMENT_DIFF_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gatedb {

// Appends to `paths`, in the order fields appear (the old document's fields
// first, then fields only in the new one), every dotted path whose value was
// added, removed, or changed (by bytes and type) between `before` and
// `after`.  Top-level fields named in `ignore` (the version field) are
// skipped.  A field whose embedded document changed contributes its changed
// sub-paths, not its own path.
void DiffPaths(const bson_t* before, const bson_t* after, const std::string& ignore,
               std::vector<std::string>* paths);

// DiffPaths restricted to the top-level fields named in `fields`, for a
// caller that knows no other field differs (an operator update): the same
// paths in the same order, without comparing the untouched fields.
void DiffPathsOfFields(const bson_t* before, const bson_t* after, const std::vector<std::string>& fields,
                       const std::string& ignore, std::vector<std::string>* paths);

// DiffPathsOfFields for a caller that knows where each of `fields` lies in
// both documents: before_offsets[i] / after_offsets[i] is the offset of
// fields[i]'s element in `before` / `after`, 0 where that document lacks it
// (update::FieldLayout); no listed name occurs twice at the top level of
// either.  The same paths in the same order, without searching either
// document.
void DiffPathsOfFields(const bson_t* before, const bson_t* after, const std::vector<std::string>& fields,
                       const std::vector<uint32_t>& before_offsets, const std::vector<uint32_t>& after_offsets,
                       const std::string& ignore, std::vector<std::string>* paths);

// True when two top-level fields of `doc` share a name (BSON allows it).
// DiffPaths pairs fields by name, so on such documents it is only
// approximate; the whole-document cross-checks of DiffPathsOfFields skip
// them.
bool HasDuplicateTopLevelNames(const bson_t* doc);

// True when `a` is `b`, or a parent or child path of it ("a" and "a.b").
bool PathsOverlap(const std::string& a, const std::string& b);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_DIFF_H_
