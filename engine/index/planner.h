// File: engine/index/planner.h
//
// The query planner's pure half: from a filter, a sort and a collection's
// indexes, the index scans that can answer the query, each as byte
// intervals of the "indexes" column family (engine/index/index_keys.h).
// The storage layer counts the keys each candidate would examine, runs the
// cheapest (engine/storage/db_impl_plan.cc) and re-applies the whole filter
// to every fetched document, so bounds only need to be a superset of the
// matches; they are as tight as this file can make them.
//
// Bounds.  Top-level predicates (and those of a top-level $and) on one path
// give intervals of the path's values, in the byte spaces of EncodeValue and
// EncodeValueDescending (engine/keys/key_codec.h); "after every key equal to
// v" is v's bytes + 0xFF, not their prefix successor, since a decimal a hair
// above v (below v, descending) starts with them (key_format.h):
//   {a: v} and {a: {$eq: v}}  the point v (v not an array or regex)
//   {a: null}                 [undefined, null]  (missing fields index as null)
//   $gt/$gte/$lt/$lte v       up to or from v, within v's type (MongoDB's
//                             type bracketing; numbers below v start at
//                             -Infinity: NaN is below them and matches no
//                             bound but NaN); MinKey/MaxKey give no bounds
//   $in [v, ...]              the union of the points (no bounds if any element
//                             is an array or a regex)
// Several predicates on one path intersect, unless the index is multikey (an
// array [1, 10] matches {$gt: 5, $lt: 3}): then the first one alone bounds it.
// Other operators give no bounds (the field is scanned whole).  A compound
// index is bounded by the points of a leading run of fields, then one range
// field; the rest are scanned whole.
//
// A candidate provides the sort when the sort's fields are index fields
// that follow the point-bounded ones, all in the index's direction or all
// against it, and the index is not multikey.  A sparse index is a candidate
// only when a predicate excludes missing values; a partial index only when
// the filter implies its partialFilterExpression (each of its clauses is in
// the filter, or the filter's bounds on that path lie inside the clause's).
// A top-level $or becomes one scan per branch when every branch has one.
//
// Thread safety: pure functions of their arguments.
#ifndef GATEDB_ENGINE_INDEX_PLANNER_H_
#define GATEDB_ENGINE_INDEX_PLANNER_H_

#include <bson/bson.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/index/index_spec.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace index {

// [start, end) in the index column family; end empty: to the index's end.
struct KeyRange {
  std::string start;
  std::string end;
};

// One index scan.
struct IndexScan {
  const IndexSpec* index = nullptr;
  std::vector<KeyRange> ranges;  // ascending, disjoint
  bool reverse = false;          // scan backward (the sort is against the index)
  bool provides_sort = false;
  size_t bounded_fields = 0;     // fields with bounds (for tie-breaking and explain)
  bool leading_bounded = false;  // the first field has bounds
  // Every range is one whole key of a unique index ([k, k + 0xFF)): a point
  // read of k finds its one entry, no iterator needed.
  bool point_keys = false;
  // The ranges hold exactly the filter's matches: the filter names only
  // paths (no $and, $or, $expr, ...), each an index field that the ranges
  // bound, by $eq, $in, $gt, $gte, $lt and $lte of numbers, strings,
  // ObjectIds, booleans, dates and timestamps (NaN only as an equality),
  // and the index is not multikey.  Every entry in range names a matching
  // document: the documents need no matcher.
  bool exact = false;
  Document bounds;               // explain's indexBounds: {field: ["[1, 1]", ...]}; only when asked
};

// What the planner offers for one query.
struct PlanCandidates {
  std::vector<IndexScan> single;  // each answers the whole filter alone
  // A $or whose every branch has a scan: one per branch (the best of each).
  std::vector<std::vector<IndexScan>> or_branches;
};

// A forced choice: hint by name or by key pattern, or {$natural: 1|-1}.
struct Hint {
  bool natural = false;
  std::string name;    // set for a hint by name
  Document key;        // set for a hint by key pattern
  bool empty() const { return !natural && name.empty() && key.empty(); }
};

// Reads a hint argument (a string or a document).  BadValue for other types.
StatusOr<Hint> ParseHint(const bson_value_t& v);

// The candidates for `filter` (and `sort`, may be null) among `indexes`
// (only ready ones are used).  `collection_id` prefixes the ranges.
// `explain`: also fill each scan's `bounds` (text costs more than the rest
// of planning an equality, so ordinary queries skip it).
PlanCandidates PlanQuery(uint32_t collection_id, const bson_t* filter, const bson_t* sort,
                         const std::vector<const IndexSpec*>& indexes, bool explain = false);

// The scan of one chosen index (a hint): bounded by the filter where it can
// be, otherwise the whole index.
IndexScan ScanForIndex(uint32_t collection_id, const bson_t* filter, const bson_t* sort, const IndexSpec& index,
                       bool explain = false);

// True when `filter` names only top-level paths (not '$'-prefixed, at most
// 100 components), each equal to a value, or a document of $eq, $gt, $gte,
// $lt, $lte with a value and $in with an array of values, where every value
// is of a type IndexScan::exact allows, and its bytes are well formed.  The
// matcher parses such a filter without error, and an exact index scan may
// answer it alone: a reader may plan before it parses the filter.
bool PlainFilter(const bson_t* filter);

// The index a hint names; null (with BadValue) when none does.
StatusOr<const IndexSpec*> ResolveHint(const Hint& hint, const std::vector<const IndexSpec*>& indexes);

}  // namespace index
}  // namespace gatedb

#endif  // GATEDB_ENGINE_INDEX_PLANNER_H_
