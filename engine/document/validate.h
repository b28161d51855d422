// File: engine/document/validate.h
//
// Checks a document must pass before it is stored, and the _id fix-up done
// on insert.  The rules and error codes are MongoDB's:
//
//   rule                                           ErrorCode (number)
//   ---------------------------------------------  -------------------------
//   structure (every element as bson_iter_next    kInvalidBSON (22)
//     reads it, every container's length and
//     terminator), UTF-8 of field names and
//     strings (0x00 allowed)
//   size > 16 MiB                                  kBSONObjectTooLarge (10334)
//   a field nested deeper than 100 levels          kOverflow (15)
//   a top-level field name starting with '$'       kDollarPrefixedFieldName (52)
//   _id of type array, regex or undefined          kInvalidIdField (53)
//   _id document holding a '$'-prefixed field      kDollarPrefixedFieldName (52)
//     (at any depth; a DBRef {$ref, $id[, $db]} is allowed, as in MongoDB)
//   more than one top-level _id                    kBadValue (2)
//
// Not errors, as in MongoDB: empty field names, '$' or '.' in nested field
// names, a missing _id (EnsureId adds one).
//
// Thread safety: pure functions; EnsureId draws ObjectIds from libbson's
// default context, which is thread-safe.
//
//   RETURN_IF_ERROR(ValidateForStorage(doc));
//   std::optional<Document> fixed = EnsureId(doc);
//   const bson_t* to_store = fixed ? fixed->bson() : doc;
#ifndef GATEDB_ENGINE_DOCUMENT_VALIDATE_H_
#define GATEDB_ENGINE_DOCUMENT_VALIDATE_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {

// MongoDB's BSONObjMaxUserSize.
constexpr size_t kMaxUserDocumentSize = 16 * 1024 * 1024;

// MongoDB's maximum nesting depth for stored documents.  Top-level fields
// are at depth 1, the fields of a document or array at depth d are at d + 1;
// a document is rejected when any field is deeper than this.  So
// {a: {b: 1}} has depth 2, and an empty innermost {} adds nothing.
constexpr int kMaxStorageNestingDepth = 100;

// The nesting limit for bytes arriving from outside (MongoDB's
// BSONDepth::kDefaultMaxAllowableDepth).
constexpr int kMaxIncomingNestingDepth = 200;

// Checks that `doc` may be stored as a collection document (see the table
// above).  Checks run in this order and the first failure is returned: size;
// one iterative walk for structure, nesting depth and UTF-8 (it refuses all
// that libbson's bson_validate refuses, and more); top-level field names and
// _id.
// OK when `doc` has no _id.
// Errors: InvalidBSON, BSONObjectTooLarge, Overflow, DollarPrefixedFieldName,
// InvalidIdField, BadValue.
Status ValidateForStorage(const bson_t* doc);

// What ValidateForStorage's walk of the top level saw, for an insert that
// goes on to put _id first, stamp the version and journal the field names
// without walking the top level again.
struct TopLevelSummary {
  enum class Probe { kAbsent, kInt64, kOther };
  bool id_first = false;          // the first field is _id
  Probe probe = Probe::kAbsent;   // the probed field (the version)
  uint32_t probe_offset = 0;      // its element's offset in the document (bson_iter_offset), when present
  std::vector<std::string> rest;  // the other names, neither _id nor the probed one, in order
};
// ValidateForStorage, which also fills `summary` (when OK and not null)
// for the top-level field `probe`.
Status ValidateForStorage(const bson_t* doc, const std::string& probe, TopLevelSummary* summary);

// ValidateForStorage for a document made by an operator update from a
// stored (valid) document, when only the top-level fields named in `fields`
// can differ from it: the size, and every rule on those fields and all they
// hold.  The other fields are the stored document's bytes and are not
// walked again.  Same errors as ValidateForStorage.
// REQUIRES: `doc` was built by libbson's append functions (well-formed at
// the top level), and its fields not named in `fields` passed
// ValidateForStorage before.
Status ValidateWrittenFields(const bson_t* doc, const std::vector<std::string>& fields);

// ValidateWrittenFields for a caller that knows where each of `fields` lies
// in `doc`: offsets[i] is the offset of fields[i]'s element, 0 where `doc`
// lacks it (update::FieldLayout); no listed name occurs twice at the top
// level.  Same result, without walking the document.
Status ValidateWrittenFields(const bson_t* doc, const std::vector<std::string>& fields,
                             const std::vector<uint32_t>& offsets);

// ValidateForStorage for `doc` stamped from a document that passed it by
// adding (or overwriting) only an ObjectId _id where it had none and the
// int64 version field `version_field`, a name CreateCollection checked:
// the size, and the version field's name (UTF-8, not empty, no leading
// '$'), without walking the fields again.  Same errors as ValidateForStorage.
Status ValidateStampedDocument(const bson_t* doc, const std::string& version_field);

// Checks an _id value on its own: not an array, regex or undefined; a
// document _id holds no '$'-prefixed field names (DBRef allowed).  For an
// _id taken from an update's result, where ValidateForStorage already ran.
// Errors: InvalidIdField, DollarPrefixedFieldName; Overflow or InvalidBSON
// for an _id document nested too deeply or malformed.
Status ValidateIdValue(const bson_value_t& id);

// Checks raw bytes received from outside before they are used as BSON: the
// length header equals `len`, the trailing 0x00, every element's bounds,
// UTF-8 of strings (embedded 0x00 allowed), and nesting of at most
// kMaxIncomingNestingDepth.  Does not apply the storage rules or size limit.
// Errors: InvalidBSON; Overflow when nested too deeply.
Status ValidateIncoming(const uint8_t* data, size_t len);

// Makes _id the first field, as MongoDB stores documents.
//  - `doc` starts with _id: returns std::nullopt; store `doc` as it is.
//  - `doc` has an _id elsewhere: returns a copy with that _id moved to the
//    front, other fields in their original order.
//  - `doc` has no _id: returns a copy with a new ObjectId _id in front.
// When `id_generated` is non-null, sets it to whether an ObjectId was added.
// The caller reads the _id from the first field of the stored document.
// REQUIRES: `doc` is valid BSON with at most one top-level _id (both hold
// after ValidateForStorage returns OK; with several, only the first moves).
std::optional<Document> EnsureId(const bson_t* doc, bool* id_generated = nullptr);

// bson_append_value, except that a regular expression's options, and
// JavaScript code (with or without scope) and DBPointer names holding a NUL
// byte, are copied byte for byte: libbson's own append sorts regex options
// and cuts those strings at the NUL, which would change a stored field
// nobody wrote.  False when `out` would
// outgrow BSON's size limit.
bool AppendValueVerbatim(bson_t* out, const char* key, int key_len, const bson_value_t* v);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_VALIDATE_H_
