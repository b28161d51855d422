// File: engine/schema/json_schema.h
//
// JsonSchema: the value of a `$jsonSchema` operator (MongoDB's subset of
// JSON Schema draft 4), parsed once and then evaluated against documents,
// with MongoDB's parse errors and MongoDB's validation error details.
// Internal to engine/schema; Validator (validator.h) is the public entry.
//
// Keywords (MongoDB's semantics):
//   bsonType, type            the value's BSON type / JSON type ("integer" is
//                             refused, as in MongoDB)
//   enum                      equality ignoring field order, numbers by value
//   minimum, maximum,         numbers only
//   exclusiveMinimum/Maximum,
//   multipleOf                (exact decimal arithmetic, as MongoDB's
//                             Decimal128: 0.3 is a multiple of 0.1)
//   minLength, maxLength,     strings only (lengths in UTF-8 code points)
//   pattern
//   items, additionalItems,   arrays only
//   minItems, maxItems,
//   uniqueItems
//   properties, required,     objects only
//   additionalProperties,
//   patternProperties,
//   minProperties,
//   maxProperties,
//   dependencies
//   allOf, anyOf, oneOf, not
//   title, description        no effect on matching; reported in the error
//                             details as MongoDB 6.1+ does
// A keyword passes for values of the types it does not apply to (minimum
// on a string passes), as JSON Schema says.  At the top level the schema
// applies to the document as an object: keywords for other types have no
// effect there, and a top-level type that excludes "object" matches
// nothing.  A property listed in `required` but missing fails `required`;
// the other missing properties pass `properties`.
//
// Refused, as MongoDB refuses them: $ref, $schema, default, definitions,
// format, id (FailedToParse "... is not currently supported"); gatedb also
// refuses MongoDB's encryption keywords encrypt and encryptMetadata the same
// way.  Schemas nested deeper than kMaxSchemaDepth are BadValue.
//
// Thread safety: immutable after Parse(); const methods may run
// concurrently.
#ifndef GATEDB_ENGINE_SCHEMA_JSON_SCHEMA_H_
#define GATEDB_ENGINE_SCHEMA_JSON_SCHEMA_H_

#include <bson/bson.h>

#include <memory>

#include "gatedb/status.h"

namespace gatedb {
namespace schema {

// Deepest nesting of subschemas (the top-level schema is depth 1).
constexpr int kMaxSchemaDepth = 100;

struct Subschema;  // the parsed form; internal to json_schema.cc

class JsonSchema {
 public:
  // Parses `schema`, the value of `$jsonSchema`.  The parsed form points
  // into the bytes of `schema`: REQUIRES they outlive the JsonSchema and are
  // not modified.
  // Errors (MongoDB's codes and messages): TypeMismatch when $jsonSchema or
  // a keyword's argument has the wrong type; FailedToParse for an unknown,
  // duplicated or unsupported keyword, an empty or duplicated enum/required,
  // type "integer", a negative length; BadValue for an unknown type alias,
  // an empty allOf/anyOf/oneOf, or nesting deeper than kMaxSchemaDepth;
  // Location51091 for an invalid `pattern` or `patternProperties` regex.
  static StatusOr<std::unique_ptr<JsonSchema>> Parse(const bson_value_t& schema);

  ~JsonSchema();
  JsonSchema(const JsonSchema&) = delete;
  JsonSchema& operator=(const JsonSchema&) = delete;

  // True when `doc` satisfies the schema.
  bool Matches(const bson_t* doc) const;

  // Appends to `out` the fields of MongoDB's error for a document that does
  // not match: {operatorName: "$jsonSchema", [title,] [description,]
  // schemaRulesNotSatisfied: [...]}, or, for a schema whose top-level type
  // excludes "object", {operatorName, specifiedAs: {$jsonSchema: ...},
  // reason: "expression always evaluates to false"}.
  // REQUIRES: !Matches(doc).
  void AppendError(const bson_t* doc, bson_t* out) const;

 private:
  JsonSchema(std::unique_ptr<Subschema> root, const bson_value_t& spec);

  std::unique_ptr<Subschema> root_;
  bson_value_t spec_;  // the $jsonSchema argument, for specifiedAs
};

}  // namespace schema
}  // namespace gatedb

#endif  // GATEDB_ENGINE_SCHEMA_JSON_SCHEMA_H_
