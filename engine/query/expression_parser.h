// File: engine/query/expression_parser.h
//
// ParseFilter(): a MongoDB query filter (BSON) -> MatchExpression tree,
// following MongoDB's MatchExpressionParser: the same operators, the same
// rules for what counts as an operator document, and MongoDB's error codes
// and messages.  Internal to engine/query.
#ifndef GATEDB_ENGINE_QUERY_EXPRESSION_PARSER_H_
#define GATEDB_ENGINE_QUERY_EXPRESSION_PARSER_H_

#include <bson/bson.h>

#include "engine/query/match_expression.h"
#include "gatedb/status.h"

namespace gatedb {
namespace query {

// Deepest nesting of documents and arrays inside a filter.
constexpr int kMaxFilterDepth = 100;
// Most components in one dotted path.
constexpr size_t kMaxPathComponents = 100;

// Parses `filter`.  The tree points into `filter`'s bytes: REQUIRES the
// filter outlives the tree and is not modified.  $expr's aggregation
// expressions are parsed with `pc` (its declared variables in scope), or a
// fresh ParseContext when `pc` is null; their $$NOW defaults to `now_ms`.
// Errors: BadValue (unknown operator, malformed operator argument, invalid
// regex, nesting deeper than kMaxFilterDepth, $expr below the top level),
// FailedToParse and TypeMismatch where MongoDB uses them ($type),
// Location51108 (regex flag), InvalidBSON, and $expr's expression parse
// errors (expression/expression.h).
StatusOr<ExprPtr> ParseFilter(const bson_t* filter, expression::ParseContext* pc = nullptr,
                              int64_t now_ms = 0);

}  // namespace query
}  // namespace gatedb

#endif  // GATEDB_ENGINE_QUERY_EXPRESSION_PARSER_H_
