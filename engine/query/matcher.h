// File: engine/query/matcher.h
//
// A parsed MongoDB query filter ({qty: {$gt: 5}, "tags": "x", $or: [...]}),
// evaluated against BSON documents with MongoDB's semantics: dotted paths
// through embedded documents and arrays, implicit array element matching,
// numbers by value across types, missing vs null, type-bracketed comparison.
//
// {$expr: <aggregation expression>} (engine/expression) is accepted at the
// top level and inside $and/$or/$nor, as in MongoDB.
//
// Thread safety: a Matcher is immutable after Parse(); Matches() may be
// called from many threads at once.
#ifndef GATEDB_ENGINE_QUERY_MATCHER_H_
#define GATEDB_ENGINE_QUERY_MATCHER_H_

#include <bson/bson.h>

#include <memory>
#include <optional>
#include <string>

#include "gatedb/status.h"

namespace gatedb {
namespace expression {
class EvalContext;
class ParseContext;
}  // namespace expression

namespace query {

class MatchExpression;  // the parsed tree; internal to engine/query

// Filled by Matches() on request: what positional `$` in an update needs.
struct MatchDetails {
  // The index of the array element (in the first array on a matched path)
  // that satisfied the filter, as MongoDB's positional operator uses it.
  std::optional<size_t> elem_match_index;
};

class Matcher {
 public:
  // Parses a filter.  Errors (MongoDB's codes): BadValue for an unknown
  // operator ("unknown operator: $foo"), a bad $in/$all/$size/$mod/$type
  // argument, an $and/$or/$nor that is not a non-empty array; FailedToParse
  // where MongoDB uses it; nesting deeper than 100 levels is BadValue;
  // $expr below the top level ("$expr can only be applied to the top-level
  // document") is BadValue; $expr's own parse errors are MongoDB's
  // (engine/expression/expression.h).  $expr's $$NOW is the time of Parse()
  // unless MatchesOrError() is given a context.
  static StatusOr<std::unique_ptr<Matcher>> Parse(const bson_t* filter);

  // As Parse(), with $expr's variables resolved in `pc`: variables the
  // caller declared there ($lookup's `let`) are bound per evaluation by the
  // EvalContext given to MatchesOrError().
  static StatusOr<std::unique_ptr<Matcher>> Parse(const bson_t* filter, expression::ParseContext* pc);

  ~Matcher();

  // True when `doc` matches.  `details` may be null.  An $expr that fails
  // to evaluate (a type error, a division by zero) or a regex that reaches a
  // PCRE2 limit does not match; use MatchesOrError() to get the error, as
  // MongoDB fails the query.
  bool Matches(const bson_t* doc, MatchDetails* details = nullptr) const;

  // As Matches(), but the first $expr evaluation error is returned.  `ctx`
  // (may be null) gives $expr its $$NOW and declared variables; its root is
  // set to `doc`.  Errors: the expression's evaluation errors; Location51156
  // for a regex that reached a PCRE2 limit (engine/regex/regex_matcher.h).
  StatusOr<bool> MatchesOrError(const bson_t* doc, expression::EvalContext* ctx = nullptr,
                                MatchDetails* details = nullptr) const;

  // True when the filter holds an $expr.
  bool HasExpr() const { return has_expr_; }

  // True when MatchesOrError() can fail: the filter holds an $expr or a
  // regex that runs PCRE2.  When false, Matches() gives the same answer.
  bool CanFail() const { return can_fail_; }

  // True when the filter is {} (matches everything).
  bool MatchesAll() const;

 private:
  explicit Matcher(std::unique_ptr<MatchExpression> root);
  std::unique_ptr<MatchExpression> root_;
  bool has_expr_ = false;
  bool can_fail_ = false;
};

// For an upsert that inserts: appends to `out` the fields that the filter
// pins by equality (`{a: 1}`, `{a: {$eq: 1}}`, `{$and: [{a: 1}]}`,
// `{"b.c": 2}` -> `{b: {c: 2}}`), as MongoDB seeds the new document.
// Operators other than equality contribute nothing.  Errors:
// NotSingleValueField when one path is pinned twice (or a path and its
// prefix), as MongoDB reports.
Status ExtractEqualityFields(const bson_t* filter, bson_t* out);

}  // namespace query
}  // namespace gatedb

#endif  // GATEDB_ENGINE_QUERY_MATCHER_H_
