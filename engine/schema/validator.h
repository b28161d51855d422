// File: engine/schema/validator.h
//
// Validator: a MongoDB collection `validator` (createCollection / collMod),
// parsed once and checked against every document written, with the
// `details` MongoDB puts in errInfo of a DocumentValidationFailure (121).
//
// A validator is a query filter of query operators and/or `$jsonSchema`
// (engine/schema/json_schema.h); `$jsonSchema` may appear at the top level
// and inside $and/$or/$nor.  Query operators are evaluated by
// query::Matcher, one Matcher per (path, operator) clause, so that the
// failing clause can be reported.
//
//   ASSIGN_OR_RETURN(auto validator, schema::Validator::Parse(spec));
//   RETURN_IF_ERROR(validator->Check(doc));   // 121 with errInfo on failure
//
// The details follow MongoDB 5.0+ (src/mongo/db/matcher/doc_validation_error.cpp):
//   {a: {$gt: 1}} on {a: 0}
//     -> {operatorName: "$gt", specifiedAs: {a: {$gt: 1}},
//         reason: "comparison failed", consideredValue: 0}
//   several clauses (an implicit or explicit AND)
//     -> {operatorName: "$and", clausesNotSatisfied: [{index: 1, details: {...}}]}
//   $or -> clausesNotSatisfied (every clause); $nor -> clausesSatisfied (the
//   clauses that matched); $not -> {operatorName: "$not", details: {...}},
//   the child described in the inverted sense ("comparison succeeded").
//   A missing field: reason "field was missing"; an array traversed by the
//   operator: consideredValues (at most 10, then consideredValuesTruncated);
//   a value of the wrong type for $mod/$regex/$size/$elemMatch: reason "type
//   did not match" with consideredType(s) and expectedType(s).
//   $jsonSchema -> {operatorName: "$jsonSchema", schemaRulesNotSatisfied: [
//     {operatorName: "properties", propertiesNotSatisfied: [{propertyName,
//      details: [{operatorName: "bsonType", specifiedAs, reason,
//      consideredValue, consideredType}]}]},
//     {operatorName: "required", specifiedAs, missingProperties}, ...]}
//   and under $nor/$not {operatorName: "$jsonSchema", reason: "schema matched"}.
//
// Known gaps against MongoDB:
//   * $expr is refused (InvalidOptions): query::Matcher has no aggregation
//     expressions.  Operators the Matcher does not implement ($bits*, geo,
//     $sampleRate) are refused with the Matcher's BadValue.
//   * $elemMatch, $all and $size are reported as leaves (specifiedAs, reason,
//     consideredValue), exactly as MongoDB does; a $jsonSchema inside
//     $elemMatch is refused by the Matcher.
//   * No 12 MB size limit / "truncated" form of the details; the details
//     nest at most as deep as the validator (its nesting is bounded).
//   * Property names in `properties`/`required`/`dependencies` are looked up
//     literally; MongoDB treats a dotted name as a path.
//   * `title`/`description` inside `dependencies` (accepted by MongoDB 6.1+)
//     are refused like any non-schema dependency; encrypt/encryptMetadata are
//     not supported.
//   * A top-level subschema (allOf/anyOf/oneOf/not/dependencies at the top)
//     whose type excludes "object" is reported as a type mismatch of the
//     document; MongoDB's output for that case is not documented.
//   * consideredValues along arrays of documents skip elements that lack the
//     rest of the path (MongoDB stops at the first one).
//
// Thread safety: immutable after Parse(); Validate() and Check() may run on
// many threads at once.
#ifndef GATEDB_ENGINE_SCHEMA_VALIDATOR_H_
#define GATEDB_ENGINE_SCHEMA_VALIDATOR_H_

#include <bson/bson.h>

#include <memory>

#include "engine/schema/bson_util.h"
#include "gatedb/status.h"

namespace gatedb {
namespace schema {

// Deepest BSON nesting accepted in a validator (documents and arrays).
constexpr int kMaxValidatorNesting = 512;
// At most this many consideredValues are reported (MongoDB's
// internalQueryMaxDocValidationErrorConsideredValues).
constexpr size_t kMaxConsideredValues = 10;

struct ValidatorNode;  // the parsed tree; internal to validator.cc

class Validator {
 public:
  // Parses a collection validator, e.g. {a: {$gt: 1}}, {$jsonSchema: {...}},
  // {$and: [{$jsonSchema: {...}}, {b: 1}]}.  {} accepts every document.
  // Errors:
  //   InvalidBSON        `validator` is null or malformed
  //   InvalidOptions     $where, $text, $near, $nearSphere or $geoNear
  //                      anywhere ("$where is not allowed in collection
  //                      validators"), or $expr (not supported by gatedb)
  //   BadValue           nesting deeper than kMaxValidatorNesting, $and/
  //                      $or/$nor nested deeper than 100 or not a non-empty
  //                      array of documents, a $jsonSchema nested deeper
  //                      than kMaxSchemaDepth
  //   Location51091      an invalid regular expression (MongoDB's code)
  //   TypeMismatch, FailedToParse, BadValue
  //                      a bad $jsonSchema, as MongoDB reports it (e.g.
  //                      FailedToParse "Unknown $jsonSchema keyword: foo")
  //   any code of query::Matcher::Parse for a bad query operator
  static StatusOr<std::unique_ptr<Validator>> Parse(const bson_t* validator);

  ~Validator();
  Validator(const Validator&) = delete;
  Validator& operator=(const Validator&) = delete;

  // True when `doc` passes.  When it fails and `details` is not null,
  // appends the fields of MongoDB's details document (operatorName,
  // specifiedAs, reason, consideredValue, clausesNotSatisfied,
  // schemaRulesNotSatisfied, ...) to `*details`, an initialized empty
  // bson_t.  A null `doc` fails with no details.  Never throws.
  bool Validate(const bson_t* doc, bson_t* details) const;

  // OK when `doc` passes, else DocumentValidationFailure (121) "Document
  // failed validation" with errInfo {failingDocumentId: <_id>, details:
  // {...}} (failingDocumentId omitted when `doc` has no _id).
  Status Check(const bson_t* doc) const;

 private:
  Validator(BsonPtr backing, std::unique_ptr<ValidatorNode> root);

  BsonPtr backing_;                     // the tree points into these bytes
  std::unique_ptr<ValidatorNode> root_;
};

}  // namespace schema
}  // namespace gatedb

#endif  // GATEDB_ENGINE_SCHEMA_VALIDATOR_H_
