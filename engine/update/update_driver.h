// File: engine/update/update_driver.h
//
// UpdateDriver: one parsed MongoDB update, applied to documents.  An update
// is either a replacement document ({a: 1}, no '$' keys) or an operator
// document ({$set: {...}, $inc: {...}}) using $set $unset $inc $mul $min
// $max $rename $currentDate $setOnInsert $push ($each $slice $sort
// $position) $addToSet ($each) $pull $pullAll $pop $bit, with dotted paths,
// numeric array indexes, the positional `$` and the all-elements `$[]`.
// Semantics, field order and error codes are MongoDB 5.0+'s (src/mongo/db/
// update): fields that exist keep their position; new fields are appended
// in the order the update's paths sort (names lexicographically, numeric
// names numerically).
//
// The version field (UpdateOptions::version_field) belongs to the store:
// `$inc: {<version field>: 1}` is absorbed (bumps_version()) and any other
// write to it, or to a path above or below it, is ImmutableField.  Apply()
// never changes the version field; the caller stamps it.
//
// Thread safety: an UpdateDriver is immutable after Parse(); Apply() may be
// called from many threads at once.
//
//   ASSIGN_OR_RETURN(auto driver, update::UpdateDriver::Parse(u, opts));
//   update::ApplyContext ctx;
//   ctx.now_millis = NowMillis();
//   bson_t out = BSON_INITIALIZER;
//   Status s = driver->Apply(doc, ctx, &out);
#ifndef GATEDB_ENGINE_UPDATE_UPDATE_DRIVER_H_
#define GATEDB_ENGINE_UPDATE_UPDATE_DRIVER_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace update {

namespace internal {
struct Op;
struct UpdateNode;
}  // namespace internal

struct UpdateOptions {
  // The collection's version field (a field name, or a dotted path).
  // Default: "version".
  std::string version_field = "version";
  // True: the caller keeps `update` alive, unchanged, for as long as the
  // driver lives, which then reads it in place instead of copying it.
  // Default: false.
  bool borrow_update = false;
};

// What one application of an update needs to know about its target.
struct ApplyContext {
  // True when the update builds a new document for an upsert: only then do
  // $setOnInsert operators apply, and _id moves to the front of the result.
  // Default: false.
  bool is_upsert_insert = false;
  // The array index the query matched, for the positional `$` operator
  // (query::MatchDetails::elem_match_index).  Default: none; an update with
  // `$` then fails with BadValue.
  std::optional<size_t> positional_index;
  // The time $currentDate (and a replacement's zero Timestamp) records, in
  // milliseconds since the Unix epoch.  Default: 0.
  int64_t now_millis = 0;
  // False: always the general path, never the in-place one (tests compare
  // the two).  Default: true.
  bool allow_in_place = true;
};

// Where the top-level fields an operator update names, and the version
// field, lie in the document before and after Apply(): Apply walks the one
// and writes the other, and notes them on the way, so a caller that diffs,
// validates or reads those fields need not search either document again.
struct FieldLayout {
  // False when Apply could not tell: a replacement, an update without
  // operators, or a name among those that occurs twice at the top level of
  // either document.  The other members are then meaningless: search.
  bool known = false;
  // before[i] / after[i]: the offset of top_level_fields()[i]'s element
  // (its type byte) from the start of the document before / after the
  // update; 0 where the document lacks the field.
  std::vector<uint32_t> before, after;
  // The same for the version field, as a top-level name (the store stamps
  // it there), in the document after the update.
  uint32_t version_after = 0;
};

class UpdateDriver {
 public:
  // Parses `update`: a replacement document when its first field name does
  // not start with '$' (or it is empty), an operator document otherwise.
  // Errors (MongoDB's codes and messages):
  //  - FailedToParse: "Unknown modifier: $foo ..." (also a plain field in an
  //    operator document), an operator whose argument is not a document, a
  //    bad $pop argument;
  //  - ConflictingUpdateOperators: two operators on one path, or on a path
  //    and its prefix ("Updating the path 'a.b' would create a conflict at
  //    'a'");
  //  - TypeMismatch: $inc/$mul with a non-numeric argument, $addToSet $each
  //    that is not an array;
  //  - BadValue: a bad $push/$rename/$currentDate/$bit/$pullAll argument,
  //    misplaced or repeated `$`, `$[<id>]` (arrayFilters are not
  //    supported), a bad $pull condition;
  //  - EmptyFieldName: a path with an empty component ("a..b");
  //  - DollarPrefixedFieldName: a '$' field at the top level of a
  //    replacement, or a new top-level field starting with '$';
  //  - ImmutableField: a write to the version field other than
  //    `$inc: {<version field>: 1}`;
  //  - Overflow: a replacement nested deeper than 100 levels, or a path of
  //    more than 200 components;
  //  - InvalidIdField: a replacement whose _id is an array, regex or
  //    undefined.
  // REQUIRES: `update` is valid BSON; it need not outlive the driver unless
  // opts.borrow_update.
  static StatusOr<std::unique_ptr<UpdateDriver>> Parse(const bson_t* update,
                                                       const UpdateOptions& opts);

  ~UpdateDriver();
  UpdateDriver(const UpdateDriver&) = delete;
  UpdateDriver& operator=(const UpdateDriver&) = delete;

  // True for a replacement-style update.
  bool is_replacement() const { return replacement_ != nullptr; }

  // True when the update held `$inc: {<version field>: 1}` (any numeric
  // type whose value is 1).  That operator is not applied by Apply(): the
  // store raises the version itself.
  bool bumps_version() const { return bumps_version_; }

  // The paths this update only increments ($inc), for field merge with
  // mergeIncrements (commutative increments merge).
  std::vector<std::string> IncrementPaths() const;
  // Every path an operator writes ($rename: both), cut at a positional
  // component ("$", "$[]"): what the field-version table records.
  const std::vector<std::string>& TargetPaths() const { return target_paths_; }
  // The distinct top-level fields an operator update can change (the first
  // component of every operator path; $rename: both), in the order first
  // named.  Fields not listed keep their bytes, so a caller may diff and
  // validate only these.  Empty for a replacement (it may change any).
  const std::vector<std::string>& top_level_fields() const { return top_level_fields_; }

  // True when some operator path uses the positional `$`.
  bool has_positional() const { return has_positional_; }

  // Applies the update to `doc` and appends the whole new document to
  // `out`, which must be an initialized, empty bson_t.  `doc` is never
  // modified.  An update that changes nothing appends exactly doc's bytes,
  // so the caller can detect "not modified" by comparing bytes.
  //
  // For a replacement, `out` is the replacement with doc's _id first (the
  // replacement's own _id when doc has none) and doc's version value carried
  // through unchanged (where the replacement has it, else at the index it
  // had in doc).
  //
  // On error, `out` is left empty (reinitialized).  Errors:
  //  - ImmutableField: the update would change or remove doc's _id, or a
  //    replacement carries a version value other than doc's;
  //  - BadValue: `$` without ctx.positional_index ("The positional operator
  //    did not find the match needed from the query."), $push/$addToSet/
  //    $pull/$pullAll/$bit on a field of the wrong type, `$[]` on a missing
  //    or non-array field, $rename through an array, int64 overflow in
  //    $inc/$mul, padding an array by more than 1500000 elements;
  //  - TypeMismatch: $inc/$mul on a non-number, $pop on a non-array,
  //    decimal128 arithmetic (not supported);
  //  - PathNotViable: a path that cannot be created ("Cannot create field
  //    'b' in element {a: 5}");
  //  - ConflictingUpdateOperators: `$` resolving onto another operator's
  //    path ("Update created a conflict at 'a.1'");
  //  - DollarPrefixedFieldName, InvalidIdField: an upsert-insert creating a
  //    bad _id;
  //  - Overflow: the result nests deeper than 100 levels;
  //  - BSONObjectTooLarge: the result exceeds 16 MiB.
  //
  // `layout`, when given, is filled with where the fields this update names
  // lie in `doc` and `out` (known stays false on error).
  Status Apply(const bson_t* doc, const ApplyContext& ctx, bson_t* out, FieldLayout* layout = nullptr) const;

 private:
  UpdateDriver();

  Status ParseOperators();
  // Records one operator path in target_paths_ and top_level_fields_.
  void AddWrittenPath(const std::vector<std::string>& parts);
  Status ParseReplacement();
  Status ApplyReplacement(const bson_t* doc, const ApplyContext& ctx, bson_t* out) const;
  Status ApplyOperators(const bson_t* doc, const ApplyContext& ctx, bson_t* out, FieldLayout* layout) const;
  // The general path: the document as a mutable tree, the ops walked over it.
  Status ApplyTree(const bson_t* doc, const ApplyContext& ctx, bson_t* out, FieldLayout* layout) const;
  // The short path, for a spliceable_ update: each op's element of `doc`
  // replaced by its new bytes, in one copy.  False, with `out` untouched,
  // where ApplyTree must decide (a field missing or there twice, a value
  // $inc cannot add to, the version field there twice).
  bool TrySplice(const bson_t* doc, bson_t* out, FieldLayout* layout) const;
  // Sets spliceable_ once the ops are parsed.
  void PlanSplice();

  // Constant after construction.
  bson_t* update_ = nullptr;        // operands point into it
  bool owns_update_ = false;        // a copy (else the caller's, borrowed)
  const bson_t* replacement_ = nullptr;  // == update_ for a replacement
  std::string version_field_;
  std::vector<std::string> version_parts_;
  bool bumps_version_ = false;
  bool has_positional_ = false;
  bool touches_id_ = false;  // some operator path starts at _id
  std::vector<std::string> target_paths_;     // TargetPaths(), in operator order
  std::vector<std::string> top_level_fields_;
  std::vector<std::unique_ptr<internal::Op>> ops_;
  std::unique_ptr<internal::UpdateNode> tree_;  // ops_ as a prefix tree
  // True when every op is a $set, $inc or $mul of a distinct one-component
  // path other than _id, and no $set value nests too deep to store: such an
  // update changes elements in place and never reorders or adds when the
  // fields exist.
  bool spliceable_ = false;
};

}  // namespace update
}  // namespace gatedb

#endif  // GATEDB_ENGINE_UPDATE_UPDATE_DRIVER_H_
