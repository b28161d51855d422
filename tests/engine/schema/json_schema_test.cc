#include "engine/schema/json_schema.h"

#include <bson/bson.h>

#include <string>
#include <vector>

#include "engine/schema/validator.h"
#include "tests/engine/schema/schema_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace schema {
namespace {

using test::StatusIs;
using testing_util::Canon;
using testing_util::Details;
using testing_util::ParseValidator;
using testing_util::Passes;
using testing_util::Q;

// {$jsonSchema: <schema>}
std::string JS(const std::string& schema) { return R"({"$jsonSchema": )" + schema + "}"; }

// {$jsonSchema: {properties: {a: <schema>}}}: the schema applied to field a.
std::string OnA(const std::string& schema) {
  return JS(R"({"properties": {"a": )" + schema + "}}");
}

// The error of one failing property a, as MongoDB nests it.
std::string PropertyA(const std::string& details) {
  return R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
            {"operatorName": "properties", "propertiesNotSatisfied": [
              {"propertyName": "a", "details": )" +
         details + "}]}]}";
}

void ExpectParseError(const std::string& validator, ErrorCode code, const std::string& reason) {
  auto v = ParseValidator(validator);
  EXPECT_THAT(v, StatusIs(code)) << validator;
  if (!v.ok()) {
    EXPECT_EQ(v.status().reason(), reason) << validator;
  }
}

// ---------------------------------------------------------------------------
// bsonType and type.

TEST(JsonSchemaTypeTest, EveryBsonTypeAlias) {
  struct Case {
    const char* alias;
    const char* matching;      // a document {a: <value of that type>}
    const char* not_matching;  // {a: <value of another type>}
  };
  const Case cases[] = {
      {"double", R"({"a": 1.5})", R"({"a": 1})"},
      {"string", R"({"a": "x"})", R"({"a": 1})"},
      {"object", R"({"a": {"b": 1}})", R"({"a": [1]})"},
      {"array", R"({"a": [1]})", R"({"a": {"0": 1}})"},
      {"binData", R"({"a": {"$binary": {"base64": "AQI=", "subType": "00"}}})", R"({"a": "AQI="})"},
      {"undefined", R"({"a": {"$undefined": true}})", R"({"a": null})"},
      {"objectId", R"({"a": {"$oid": "5f1d7a3e9d1e8b3a4c2b1a00"}})", R"({"a": "5f1d"})"},
      {"bool", R"({"a": true})", R"({"a": 1})"},
      {"date", R"({"a": {"$date": {"$numberLong": "0"}}})", R"({"a": 0})"},
      {"null", R"({"a": null})", R"({"a": 0})"},
      {"regex", R"({"a": {"$regularExpression": {"pattern": "x", "options": ""}}})",
       R"({"a": "x"})"},
      {"dbPointer",
       R"({"a": {"$dbPointer": {"$ref": "c", "$id": {"$oid": "5f1d7a3e9d1e8b3a4c2b1a00"}}}})",
       R"({"a": "c"})"},
      {"javascript", R"j({"a": {"$code": "f()"}})j", R"j({"a": "f()"})j"},
      {"symbol", R"({"a": {"$symbol": "s"}})", R"({"a": "s"})"},
      {"javascriptWithScope", R"j({"a": {"$code": "f()", "$scope": {}}})j",
       R"j({"a": {"$code": "f()"}})j"},
      {"int", R"({"a": 1})", R"({"a": 1.0})"},
      {"timestamp", R"({"a": {"$timestamp": {"t": 1, "i": 1}}})", R"({"a": 1})"},
      {"long", R"({"a": {"$numberLong": "1"}})", R"({"a": 1})"},
      {"decimal", R"({"a": {"$numberDecimal": "1"}})", R"({"a": 1})"},
      {"minKey", R"({"a": {"$minKey": 1}})", R"({"a": {"$maxKey": 1}})"},
      {"maxKey", R"({"a": {"$maxKey": 1}})", R"({"a": {"$minKey": 1}})"},
  };
  for (const Case& c : cases) {
    const std::string v = OnA(std::string(R"({"bsonType": ")") + c.alias + "\"}");
    EXPECT_TRUE(Passes(v, c.matching)) << c.alias;
    EXPECT_FALSE(Passes(v, c.not_matching)) << c.alias;
  }
}

TEST(JsonSchemaTypeTest, NumberAliasAndArraysOfAliases) {
  const std::string number = OnA(R"({"bsonType": "number"})");
  EXPECT_TRUE(Passes(number, R"({"a": 1})"));
  EXPECT_TRUE(Passes(number, R"({"a": {"$numberLong": "7"}})"));
  EXPECT_TRUE(Passes(number, R"({"a": 2.5})"));
  EXPECT_TRUE(Passes(number, R"({"a": {"$numberDecimal": "2.5"}})"));
  EXPECT_FALSE(Passes(number, R"({"a": "1"})"));
  const std::string either = OnA(R"({"bsonType": ["string", "null"]})");
  EXPECT_TRUE(Passes(either, R"({"a": "x"})"));
  EXPECT_TRUE(Passes(either, R"({"a": null})"));
  EXPECT_FALSE(Passes(either, R"({"a": 1})"));
  // A missing optional property passes.
  EXPECT_TRUE(Passes(either, R"({"b": 1})"));
}

TEST(JsonSchemaTypeTest, JsonTypes) {
  EXPECT_TRUE(Passes(OnA(R"({"type": "number"})"), R"({"a": 1.5})"));
  EXPECT_TRUE(Passes(OnA(R"({"type": "boolean"})"), R"({"a": false})"));
  EXPECT_FALSE(Passes(OnA(R"({"type": "boolean"})"), R"({"a": 0})"));
  EXPECT_TRUE(Passes(OnA(R"({"type": "object"})"), R"({"a": {}})"));
  EXPECT_TRUE(Passes(OnA(R"({"type": ["array", "null"]})"), R"({"a": null})"));
  EXPECT_FALSE(Passes(OnA(R"({"type": "string"})"), R"({"a": {"$symbol": "s"}})"));
  // No implicit array traversal: an array of strings is not a string.
  EXPECT_EQ(Details(OnA(R"({"type": "string"})"), R"({"a": ["x", "y"]})"),
            Canon(PropertyA(R"([{"operatorName": "type", "specifiedAs": {"type": "string"},
                                 "reason": "type did not match", "consideredValue": ["x", "y"],
                                 "consideredType": "array"}])")));
}

TEST(JsonSchemaTypeTest, TypeErrors) {
  ExpectParseError(OnA(R"({"type": "integer"})"), ErrorCode::kFailedToParse,
                   "$jsonSchema type 'integer' is not currently supported.");
  ExpectParseError(OnA(R"({"type": ["string", "integer"]})"), ErrorCode::kFailedToParse,
                   "$jsonSchema type 'integer' is not currently supported.");
  ExpectParseError(OnA(R"({"type": "int"})"), ErrorCode::kBadValue,
                   "Unknown type name alias: int");
  ExpectParseError(OnA(R"({"bsonType": "integer"})"), ErrorCode::kFailedToParse,
                   "$jsonSchema type 'integer' is not currently supported.");
  ExpectParseError(OnA(R"({"bsonType": "foo"})"), ErrorCode::kBadValue,
                   "Unknown type name alias: foo");
  ExpectParseError(OnA(R"({"type": 1})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'type' must be either a string or an array of strings");
  ExpectParseError(OnA(R"({"bsonType": [1]})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'bsonType' array elements must be strings");
  ExpectParseError(OnA(R"({"bsonType": ["int", "int"]})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'bsonType' has duplicate value: int");
  ExpectParseError(OnA(R"({"bsonType": []})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'bsonType' must name at least one type");
  ExpectParseError(OnA(R"({"type": "string", "bsonType": "string"})"), ErrorCode::kFailedToParse,
                   "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
}

TEST(JsonSchemaTypeTest, TopLevelTypeMustAllowObjects) {
  EXPECT_TRUE(Passes(JS(R"({"bsonType": "object"})"), R"({"a": 1})"));
  EXPECT_TRUE(Passes(JS(R"({"bsonType": ["object", "array"]})"), R"({"a": 1})"));
  EXPECT_FALSE(Passes(JS(R"({"type": "number"})"), R"({"a": 1})"));
  EXPECT_EQ(Details(JS(R"({"type": "number", "properties": {"a": {"minimum": 1}}})"),
                    R"({"a": 1})"),
            Canon(R"({"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema":
                        {"type": "number", "properties": {"a": {"minimum": 1}}}},
                      "reason": "expression always evaluates to false"})"));
}

TEST(JsonSchemaTypeTest, BsonTypeDetails) {
  EXPECT_EQ(Details(OnA(R"({"bsonType": "int"})"), R"({"a": "abc"})"),
            Canon(PropertyA(R"([{"operatorName": "bsonType", "specifiedAs": {"bsonType": "int"},
                                 "reason": "type did not match", "consideredValue": "abc",
                                 "consideredType": "string"}])")));
}

// ---------------------------------------------------------------------------
// Objects: properties, required, additionalProperties, patternProperties,
// min/maxProperties, dependencies.

TEST(JsonSchemaObjectTest, RequiredAndItsDetails) {
  const std::string v = JS(R"({"required": ["b", "a", "c"]})");
  EXPECT_TRUE(Passes(v, R"({"a": 1, "b": null, "c": []})"));
  EXPECT_FALSE(Passes(v, R"({"a": 1, "b": 2})"));
  // missingProperties are sorted, specifiedAs is as written.
  EXPECT_EQ(Details(v, R"({"c": 1, "d": 2})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "required", "specifiedAs": {"required": ["b", "a", "c"]},
                         "missingProperties": ["a", "b"]}]})"));
}

TEST(JsonSchemaObjectTest, RequiredMissingPropertyIsNotAlsoAPropertyError) {
  EXPECT_EQ(Details(JS(R"({"required": ["a"], "properties": {"a": {"bsonType": "int",
                                                                      "minimum": 1}}})"),
                    "{}"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "required", "specifiedAs": {"required": ["a"]},
                         "missingProperties": ["a"]}]})"));
}

TEST(JsonSchemaObjectTest, NestedPropertiesAndRequired) {
  const std::string v = JS(R"({"properties": {"a": {"bsonType": "object", "required": ["x"],
                               "properties": {"b": {"properties": {"c": {"minimum": 1}}}}}}})");
  EXPECT_TRUE(Passes(v, R"({"a": {"x": 1, "b": {"c": 2}}})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"x": 1, "b": 5}})"));  // properties only constrain objects
  EXPECT_FALSE(Passes(v, R"({"a": {"b": {"c": 2}}})"));
  EXPECT_FALSE(Passes(v, R"({"a": {"x": 1, "b": {"c": 0}}})"));
  EXPECT_EQ(Details(v, R"({"a": {"b": {"c": 0}}})"),
            Canon(PropertyA(R"([
              {"operatorName": "properties", "propertiesNotSatisfied": [
                {"propertyName": "b", "details": [
                  {"operatorName": "properties", "propertiesNotSatisfied": [
                    {"propertyName": "c", "details": [
                      {"operatorName": "minimum", "specifiedAs": {"minimum": 1},
                       "reason": "comparison failed", "consideredValue": 0}]}]}]}]},
              {"operatorName": "required", "specifiedAs": {"required": ["x"]},
               "missingProperties": ["x"]}])")));
}

TEST(JsonSchemaObjectTest, KeywordsOfOnePropertyInMongoOrder) {
  // MongoDB reports maximum before minimum, and the type last.
  EXPECT_EQ(Details(OnA(R"({"minimum": 10, "maximum": -10})"), R"({"a": 5})"),
            Canon(PropertyA(R"([
              {"operatorName": "maximum", "specifiedAs": {"maximum": -10},
               "reason": "comparison failed", "consideredValue": 5},
              {"operatorName": "minimum", "specifiedAs": {"minimum": 10},
               "reason": "comparison failed", "consideredValue": 5}])")));
}

TEST(JsonSchemaObjectTest, AdditionalPropertiesFalse) {
  const std::string v =
      JS(R"({"properties": {"b": {"type": "number"}}, "additionalProperties": false})");
  EXPECT_TRUE(Passes(v, R"({"b": 1})"));
  EXPECT_FALSE(Passes(v, R"({"_id": 0, "b": 1})"));
  EXPECT_EQ(Details(JS(R"({"required": ["a"], "properties": {"b": {"type": "number"}},
                           "additionalProperties": false})"),
                    R"({"_id": 0, "b": 2, "c": 3})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "additionalProperties",
                         "specifiedAs": {"additionalProperties": false},
                         "additionalProperties": ["_id", "c"]},
                        {"operatorName": "required", "specifiedAs": {"required": ["a"]},
                         "missingProperties": ["a"]}]})"));
}

TEST(JsonSchemaObjectTest, AdditionalPropertiesSchema) {
  const std::string v = JS(R"({"properties": {"a": {"type": "number"}},
                               "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(Passes(v, R"({"a": 1, "b": "x", "c": "y"})"));
  EXPECT_EQ(Details(v, R"({"a": 1, "b": "ok", "d": 1, "e": 2})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "additionalProperties",
                         "reason": "at least one additional property did not match the subschema",
                         "failingProperty": "d", "details": [
                           {"operatorName": "type", "specifiedAs": {"type": "string"},
                            "reason": "type did not match", "consideredValue": 1,
                            "consideredType": "int"}]}]})"));
}

TEST(JsonSchemaObjectTest, PatternProperties) {
  const std::string v = JS(R"({"patternProperties": {"^S": {"type": "number"}},
                               "additionalProperties": false})");
  EXPECT_TRUE(Passes(v, R"({"Super": 1, "Slow": 2})"));
  EXPECT_FALSE(Passes(v, R"({"Super": 1, "x": 2})"));
  EXPECT_EQ(Details(v, R"({"Super": 1, "Slow": "no", "b": 1})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "additionalProperties",
                         "specifiedAs": {"additionalProperties": false},
                         "additionalProperties": ["b"]},
                        {"operatorName": "patternProperties", "details": [
                          {"propertyName": "Slow", "regexMatched": "^S", "details": [
                            {"operatorName": "type", "specifiedAs": {"type": "number"},
                             "reason": "type did not match", "consideredValue": "no",
                             "consideredType": "string"}]}]}]})"));
  // MongoDB's code for an invalid regular expression.
  auto bad = ParseValidator(JS(R"({"patternProperties": {"(": {}}})"));
  EXPECT_THAT(bad, StatusIs(ErrorCode::kLocation51091));
  EXPECT_EQ(bad.status().reason().rfind("Regular expression is invalid", 0), 0u)
      << bad.status().reason();
}

TEST(JsonSchemaObjectTest, MinAndMaxProperties) {
  EXPECT_TRUE(Passes(JS(R"({"minProperties": 2, "maxProperties": 3})"), R"({"a": 1, "b": 2})"));
  EXPECT_EQ(Details(JS(R"({"minProperties": 10})"), R"({"_id": 1, "a": 1, "b": 2, "c": 3})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "minProperties", "specifiedAs": {"minProperties": 10},
                         "reason": "specified number of properties was not satisfied",
                         "numberOfProperties": 4}]})"));
  EXPECT_EQ(Details(OnA(R"({"maxProperties": 1})"), R"({"a": {"b": 1, "c": 2}})"),
            Canon(PropertyA(R"([{"operatorName": "maxProperties",
                                 "specifiedAs": {"maxProperties": 1},
                                 "reason": "specified number of properties was not satisfied",
                                 "numberOfProperties": 2}])")));
  ExpectParseError(JS(R"({"minProperties": -1})"), ErrorCode::kFailedToParse,
                   "Expected a positive number in: minProperties: -1");
  ExpectParseError(JS(R"({"maxProperties": 1.5})"), ErrorCode::kFailedToParse,
                   "Expected an integer: maxProperties: 1.5");
  ExpectParseError(JS(R"({"maxProperties": "2"})"), ErrorCode::kFailedToParse,
                   "Expected a number in: maxProperties: \"2\"");
}

TEST(JsonSchemaObjectTest, Dependencies) {
  const std::string v = JS(R"({"dependencies": {"a": ["b", "c"],
                               "b": {"properties": {"c": {"type": "string"}}}}})");
  EXPECT_TRUE(Passes(v, R"({"x": 1})"));
  EXPECT_TRUE(Passes(v, R"({"a": 1, "b": 2, "c": "s"})"));
  EXPECT_FALSE(Passes(v, R"({"a": 1, "c": "s"})"));
  EXPECT_EQ(Details(v, R"({"a": 1, "b": 2, "c": 3})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "dependencies", "failingDependencies": [
                          {"conditionalProperty": "b", "details": [
                            {"operatorName": "properties", "propertiesNotSatisfied": [
                              {"propertyName": "c", "details": [
                                {"operatorName": "type", "specifiedAs": {"type": "string"},
                                 "reason": "type did not match", "consideredValue": 3,
                                 "consideredType": "int"}]}]}]}]}]})"));
  EXPECT_EQ(Details(v, R"({"a": 1})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "dependencies", "failingDependencies": [
                          {"conditionalProperty": "a", "missingProperties": ["b", "c"]}]}]})"));
  ExpectParseError(JS(R"({"dependencies": {"a": []}})"), ErrorCode::kFailedToParse,
                   "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array");
  ExpectParseError(JS(R"({"dependencies": {"a": "b"}})"), ErrorCode::kTypeMismatch,
                   "property 'a' in $jsonSchema keyword 'dependencies' must be either an object "
                   "or an array");
}

// ---------------------------------------------------------------------------
// Scalars: minimum/maximum, multipleOf, minLength/maxLength, pattern, enum.

TEST(JsonSchemaScalarTest, MinimumMaximumAndExclusive) {
  const std::string v = OnA(R"({"minimum": 1, "maximum": 10})");
  EXPECT_TRUE(Passes(v, R"({"a": 1})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"$numberLong": "10"}})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"$numberDecimal": "5.5"}})"));
  EXPECT_FALSE(Passes(v, R"({"a": 0.5})"));
  EXPECT_FALSE(Passes(v, R"({"a": 11})"));
  // Keywords only constrain their own type.
  EXPECT_TRUE(Passes(v, R"({"a": "a string"})"));
  EXPECT_TRUE(Passes(v, R"({"a": [100]})"));
  const std::string ex = OnA(R"({"minimum": 1, "exclusiveMinimum": true,
                                 "maximum": 10, "exclusiveMaximum": false})");
  EXPECT_FALSE(Passes(ex, R"({"a": 1})"));
  EXPECT_TRUE(Passes(ex, R"({"a": 10})"));
  EXPECT_EQ(Details(ex, R"({"a": 1})"),
            Canon(PropertyA(R"([{"operatorName": "minimum",
                                 "specifiedAs": {"minimum": 1, "exclusiveMinimum": true},
                                 "reason": "comparison failed", "consideredValue": 1}])")));
  // NaN is below every number, but only equal to NaN.
  EXPECT_FALSE(Passes(OnA(R"({"maximum": 1})"), R"({"a": {"$numberDouble": "NaN"}})"));
}

TEST(JsonSchemaScalarTest, MinimumAtTheTopLevelHasNoEffect) {
  EXPECT_TRUE(Passes(JS(R"({"minimum": 100, "minLength": 5, "items": {"type": "string"}})"),
                     R"({"a": 1})"));
}

TEST(JsonSchemaScalarTest, BoundArgumentErrors) {
  ExpectParseError(OnA(R"({"minimum": "1"})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'minimum' must be a number");
  ExpectParseError(OnA(R"({"maximum": 1, "exclusiveMaximum": 1})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'exclusiveMaximum' must be a boolean");
  ExpectParseError(OnA(R"({"exclusiveMinimum": true})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is "
                   "present");
}

TEST(JsonSchemaScalarTest, MultipleOfUsesDecimalArithmetic) {
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 2})"), R"({"a": 8})"));
  EXPECT_FALSE(Passes(OnA(R"({"multipleOf": 2})"), R"({"a": 7})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 0.1})"), R"({"a": 0.3})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 2.1})"), R"({"a": 4.2})"));
  EXPECT_FALSE(Passes(OnA(R"({"multipleOf": 2.1})"), R"({"a": 1.1})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": {"$numberDecimal": "0.25"}})"),
                     R"({"a": {"$numberDecimal": "1.75"}})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 5})"), R"({"a": {"$numberLong": "-9223372036854775800"}})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 1e-300})"), R"({"a": 3})"));
  EXPECT_FALSE(Passes(OnA(R"({"multipleOf": 1e300})"), R"({"a": 3})"));
  EXPECT_FALSE(Passes(OnA(R"({"multipleOf": 2})"), R"({"a": {"$numberDouble": "Infinity"}})"));
  EXPECT_TRUE(Passes(OnA(R"({"multipleOf": 2})"), R"({"a": "not a number"})"));
  EXPECT_EQ(Details(OnA(R"({"multipleOf": 2.1})"), R"({"a": 1.1})"),
            Canon(PropertyA(R"([{"operatorName": "multipleOf", "specifiedAs": {"multipleOf": 2.1},
                                 "reason": "considered value is not a multiple of the specified value",
                                 "consideredValue": 1.1}])")));
  ExpectParseError(OnA(R"({"multipleOf": 0})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'multipleOf' must have a positive value");
  ExpectParseError(OnA(R"({"multipleOf": -2})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'multipleOf' must have a positive value");
  ExpectParseError(OnA(R"({"multipleOf": "2"})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'multipleOf' must be a number");
}

TEST(JsonSchemaScalarTest, LengthsCountCodePoints) {
  const std::string v = OnA(R"({"minLength": 2, "maxLength": 5})");
  EXPECT_TRUE(Passes(v, R"({"a": "h\u00e9llo"})"));  // 5 code points, 6 bytes
  EXPECT_FALSE(Passes(v, R"({"a": "h\u00e9llos"})"));
  EXPECT_FALSE(Passes(v, R"({"a": "\u00e9"})"));
  EXPECT_TRUE(Passes(v, R"({"a": 1234567})"));  // not a string
  EXPECT_EQ(Details(v, R"({"a": "x"})"),
            Canon(PropertyA(R"([{"operatorName": "minLength", "specifiedAs": {"minLength": 2},
                                 "reason": "specified string length was not satisfied",
                                 "consideredValue": "x"}])")));
  ExpectParseError(OnA(R"({"maxLength": -1})"), ErrorCode::kFailedToParse,
                   "Expected a positive number in: maxLength: -1");
}

TEST(JsonSchemaScalarTest, Pattern) {
  const std::string v = OnA(R"({"type": "string", "pattern": "^S"})");
  EXPECT_TRUE(Passes(v, R"({"a": "Slow"})"));
  EXPECT_FALSE(Passes(v, R"({"a": "slow"})"));
  EXPECT_TRUE(Passes(OnA(R"({"pattern": "^S"})"), R"({"a": 5})"));
  EXPECT_EQ(Details(v, R"({"a": "slow"})"),
            Canon(PropertyA(R"([{"operatorName": "pattern", "specifiedAs": {"pattern": "^S"},
                                 "reason": "regular expression did not match",
                                 "consideredValue": "slow"}])")));
  // A value of the wrong type reports the type only (MongoDB 6.0+).
  EXPECT_EQ(Details(v, R"({"a": 1})"),
            Canon(PropertyA(R"([{"operatorName": "type", "specifiedAs": {"type": "string"},
                                 "reason": "type did not match", "consideredValue": 1,
                                 "consideredType": "int"}])")));
  auto bad = ParseValidator(OnA(R"({"pattern": "a("})"));
  EXPECT_THAT(bad, StatusIs(ErrorCode::kLocation51091));
  EXPECT_EQ(bad.status().reason(), "Regular expression is invalid: missing closing parenthesis");
  ExpectParseError(OnA(R"({"pattern": 1})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'pattern' must be a string");
}

TEST(JsonSchemaScalarTest, EnumComparesValuesNotTypes) {
  const std::string v = OnA(R"({"enum": [1, "two", {"x": 1, "y": 2}, [1, 2]]})");
  EXPECT_TRUE(Passes(v, R"({"a": 1})"));
  EXPECT_TRUE(Passes(v, R"({"a": 1.0})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"$numberLong": "1"}})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"$numberDecimal": "1.00"}})"));
  EXPECT_TRUE(Passes(v, R"({"a": "two"})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"y": 2, "x": 1}})"));  // field order is ignored
  EXPECT_TRUE(Passes(v, R"({"a": [1, 2.0]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [2, 1]})"));
  EXPECT_FALSE(Passes(v, R"({"a": 2})"));
  EXPECT_FALSE(Passes(v, R"({"a": "1"})"));
  EXPECT_EQ(Details(OnA(R"({"enum": [1, 2, 3]})"), R"({"a": 0})"),
            Canon(PropertyA(R"([{"operatorName": "enum", "specifiedAs": {"enum": [1, 2, 3]},
                                 "reason": "value was not found in enum", "consideredValue": 0}])")));
  ExpectParseError(OnA(R"({"enum": []})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'enum' cannot be an empty array");
  ExpectParseError(OnA(R"({"enum": [1, 1.0]})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'enum' array cannot contain duplicate values.");
  ExpectParseError(OnA(R"({"enum": 1})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'enum' must be an array, but found an element of type int");
}

TEST(JsonSchemaScalarTest, TopLevelEnumComparesTheDocument) {
  const std::string v = JS(R"({"enum": [{"a": 1, "b": 1}, 5]})");
  EXPECT_TRUE(Passes(v, R"({"b": 1, "a": 1})"));
  EXPECT_FALSE(Passes(v, R"({"a": 1, "b": 1, "_id": 1})"));
  EXPECT_EQ(Details(v, R"({"a": 0})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "enum", "specifiedAs": {"enum": [{"a": 1, "b": 1}, 5]},
                         "reason": "value was not found in enum",
                         "consideredValue": {"a": 0}}]})"));
  EXPECT_FALSE(Passes(JS(R"({"enum": [1, 2]})"), "{}"));
}

// ---------------------------------------------------------------------------
// Arrays: items, additionalItems, minItems/maxItems, uniqueItems.

TEST(JsonSchemaArrayTest, ItemsSingleSchema) {
  const std::string v = OnA(R"({"items": {"type": "string", "description": "strings"}})");
  EXPECT_TRUE(Passes(v, R"({"a": []})"));
  EXPECT_TRUE(Passes(v, R"({"a": ["x", "y"]})"));
  EXPECT_TRUE(Passes(v, R"({"a": "not an array"})"));
  EXPECT_FALSE(Passes(v, R"({"a": ["x", 1]})"));
  EXPECT_EQ(Details(v, R"({"a": ["x", 1, {}]})"),
            Canon(PropertyA(R"([{"operatorName": "items", "description": "strings",
                                 "reason": "At least one item did not match the sub-schema",
                                 "itemIndex": 1, "details": [
                                   {"operatorName": "type", "specifiedAs": {"type": "string"},
                                    "reason": "type did not match", "consideredValue": 1,
                                    "consideredType": "int"}]}])")));
}

TEST(JsonSchemaArrayTest, ItemsPositionalWithAdditionalItems) {
  const std::string v = OnA(R"({"items": [{"type": "number"}, {"type": "string"}],
                                "additionalItems": {"type": "object"}})");
  EXPECT_TRUE(Passes(v, R"({"a": [1]})"));
  EXPECT_TRUE(Passes(v, R"({"a": [1, "x", {}, {"b": 1}]})"));
  EXPECT_FALSE(Passes(v, R"({"a": ["1"]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [1, "x", 5]})"));
  EXPECT_EQ(Details(v, R"({"a": ["1", 2, {}, {"b": 1}, "Fail"]})"),
            Canon(PropertyA(R"([
              {"operatorName": "items", "details": [
                {"itemIndex": 0, "details": [
                  {"operatorName": "type", "specifiedAs": {"type": "number"},
                   "reason": "type did not match", "consideredValue": "1",
                   "consideredType": "string"}]},
                {"itemIndex": 1, "details": [
                  {"operatorName": "type", "specifiedAs": {"type": "string"},
                   "reason": "type did not match", "consideredValue": 2,
                   "consideredType": "int"}]}]},
              {"operatorName": "additionalItems",
               "reason": "At least one additional item did not match the sub-schema",
               "itemIndex": 4, "details": [
                 {"operatorName": "type", "specifiedAs": {"type": "object"},
                  "reason": "type did not match", "consideredValue": "Fail",
                  "consideredType": "string"}]}])")));
}

TEST(JsonSchemaArrayTest, AdditionalItemsFalse) {
  const std::string v = OnA(R"({"items": [{"type": "number"}], "additionalItems": false})");
  EXPECT_TRUE(Passes(v, R"({"a": [1]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [1, 2]})"));
  EXPECT_EQ(Details(v, R"({"a": [1, "extra", 3]})"),
            Canon(PropertyA(R"([{"operatorName": "additionalItems",
                                 "specifiedAs": {"additionalItems": false},
                                 "reason": "found additional items",
                                 "additionalItems": ["extra", 3]}])")));
  // Without an array of items, additionalItems has no effect.
  EXPECT_TRUE(Passes(OnA(R"({"items": {}, "additionalItems": false})"), R"({"a": [1, 2]})"));
  EXPECT_TRUE(Passes(OnA(R"({"additionalItems": false})"), R"({"a": [1, 2]})"));
}

TEST(JsonSchemaArrayTest, MinAndMaxItems) {
  const std::string v = OnA(R"({"minItems": 2, "maxItems": 3})");
  EXPECT_TRUE(Passes(v, R"({"a": [1, 2]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [1, 2, 3, 4]})"));
  EXPECT_TRUE(Passes(v, R"({"a": {"0": 1}})"));  // not an array
  EXPECT_EQ(Details(v, R"({"a": [1]})"),
            Canon(PropertyA(R"([{"operatorName": "minItems", "specifiedAs": {"minItems": 2},
                                 "reason": "array did not match specified length",
                                 "consideredValue": [1], "numberOfItems": 1}])")));
}

TEST(JsonSchemaArrayTest, UniqueItems) {
  const std::string v = OnA(R"({"uniqueItems": true})");
  EXPECT_TRUE(Passes(v, R"({"a": [1, "1", [1], {"x": 1}]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [1, 1.0]})"));
  EXPECT_FALSE(Passes(v, R"({"a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}]})"));
  EXPECT_TRUE(Passes(OnA(R"({"uniqueItems": false})"), R"({"a": [1, 1]})"));
  EXPECT_EQ(Details(v, R"({"a": [1, 2, 4, 3, 4, 3]})"),
            Canon(PropertyA(R"([{"operatorName": "uniqueItems",
                                 "specifiedAs": {"uniqueItems": true},
                                 "reason": "found a duplicate item",
                                 "consideredValue": [1, 2, 4, 3, 4, 3],
                                 "duplicatedValue": 4}])")));
}

TEST(JsonSchemaArrayTest, UniqueItemsOnALargeArrayIsFast) {
  std::string arr = "[";
  for (int i = 0; i < 50000; ++i) arr += std::to_string(i) + ",";
  arr += "49999]";
  EXPECT_FALSE(Passes(OnA(R"({"uniqueItems": true})"), R"({"a": )" + arr + "}"));
}

// ---------------------------------------------------------------------------
// allOf, anyOf, oneOf, not.

TEST(JsonSchemaLogicTest, AllOf) {
  const std::string v = OnA(R"({"allOf": [{"minimum": 1}, {"maximum": 3}]})");
  EXPECT_TRUE(Passes(v, R"({"a": 2})"));
  EXPECT_EQ(Details(v, R"({"a": 4})"),
            Canon(PropertyA(R"([{"operatorName": "allOf", "schemasNotSatisfied": [
                                  {"index": 1, "details": [
                                    {"operatorName": "maximum", "specifiedAs": {"maximum": 3},
                                     "reason": "comparison failed",
                                     "consideredValue": 4}]}]}])")));
}

TEST(JsonSchemaLogicTest, AnyOf) {
  const std::string v = OnA(R"({"anyOf": [{"type": "string"}, {"maximum": 3}]})");
  EXPECT_TRUE(Passes(v, R"({"a": "x"})"));
  EXPECT_TRUE(Passes(v, R"({"a": 2})"));
  EXPECT_EQ(Details(v, R"({"a": 4})"),
            Canon(PropertyA(R"([{"operatorName": "anyOf", "schemasNotSatisfied": [
                                  {"index": 0, "details": [
                                    {"operatorName": "type", "specifiedAs": {"type": "string"},
                                     "reason": "type did not match", "consideredValue": 4,
                                     "consideredType": "int"}]},
                                  {"index": 1, "details": [
                                    {"operatorName": "maximum", "specifiedAs": {"maximum": 3},
                                     "reason": "comparison failed",
                                     "consideredValue": 4}]}]}])")));
}

TEST(JsonSchemaLogicTest, OneOfNeedsExactlyOne) {
  const std::string v = OnA(R"({"oneOf": [{"minimum": 1}, {"maximum": 3}]})");
  EXPECT_TRUE(Passes(v, R"({"a": 0})"));   // only maximum
  EXPECT_TRUE(Passes(v, R"({"a": 5})"));   // only minimum
  EXPECT_FALSE(Passes(v, R"({"a": 2})"));  // both
  EXPECT_EQ(Details(v, R"({"a": 2})"),
            Canon(PropertyA(R"([{"operatorName": "oneOf",
                                 "reason": "more than one subschema matched",
                                 "matchingSchemaIndexes": [0, 1]}])")));
  const std::string none = OnA(R"({"oneOf": [{"minimum": 4}, {"bsonType": "int"}]})");
  EXPECT_EQ(Details(none, R"({"a": 2.1})"),
            Canon(PropertyA(R"([{"operatorName": "oneOf", "schemasNotSatisfied": [
                                  {"index": 0, "details": [
                                    {"operatorName": "minimum", "specifiedAs": {"minimum": 4},
                                     "reason": "comparison failed", "consideredValue": 2.1}]},
                                  {"index": 1, "details": [
                                    {"operatorName": "bsonType", "specifiedAs": {"bsonType": "int"},
                                     "reason": "type did not match", "consideredValue": 2.1,
                                     "consideredType": "double"}]}]}])")));
}

TEST(JsonSchemaLogicTest, Not) {
  const std::string v = JS(R"({"not": {"required": ["secret"]}})");
  EXPECT_TRUE(Passes(v, R"({"a": 1})"));
  EXPECT_EQ(Details(v, R"({"secret": 1})"),
            Canon(R"({"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                        {"operatorName": "not", "reason": "child expression matched"}]})"));
  EXPECT_FALSE(Passes(JS(R"({"not": {}})"), "{}"));
  ExpectParseError(JS(R"({"not": [1]})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'not' must be an object, but found an element of type "
                   "array");
}

TEST(JsonSchemaLogicTest, ListArgumentErrors) {
  ExpectParseError(JS(R"({"allOf": {}})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'allOf' must be an array");
  ExpectParseError(JS(R"({"anyOf": []})"), ErrorCode::kBadValue,
                   "$jsonSchema keyword 'anyOf' must be a non-empty array");
  ExpectParseError(JS(R"({"oneOf": [1]})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'oneOf' must be an array of objects, but found an "
                   "element of type int");
}

// ---------------------------------------------------------------------------
// Metadata, keyword errors and limits.

TEST(JsonSchemaMetaTest, TitleAndDescriptionAnnotateButDoNotConstrain) {
  const std::string v = JS(R"({"title": "people", "description": "all of them",
                               "properties": {"a": {"minimum": 1, "title": "A",
                                                    "description": "a >= 1"}}})");
  EXPECT_TRUE(Passes(v, R"({"a": 1})"));
  EXPECT_EQ(Details(v, R"({"a": 0})"),
            Canon(R"({"operatorName": "$jsonSchema", "title": "people",
                      "description": "all of them", "schemaRulesNotSatisfied": [
                        {"operatorName": "properties", "propertiesNotSatisfied": [
                          {"propertyName": "a", "title": "A", "description": "a >= 1",
                           "details": [{"operatorName": "minimum", "specifiedAs": {"minimum": 1},
                                        "reason": "comparison failed",
                                        "consideredValue": 0}]}]}]})"));
  ExpectParseError(JS(R"({"title": 1})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'title' must be of type string");
}

TEST(JsonSchemaMetaTest, UnknownAndUnsupportedKeywords) {
  ExpectParseError(JS(R"({"foo": 1})"), ErrorCode::kFailedToParse,
                   "Unknown $jsonSchema keyword: foo");
  ExpectParseError(OnA(R"({"minimum": 1, "maximun": 2})"), ErrorCode::kFailedToParse,
                   "Unknown $jsonSchema keyword: maximun");
  for (const char* kw : {"$ref", "$schema", "default", "definitions", "format", "id"}) {
    ExpectParseError(JS(std::string(R"({")") + kw + R"(": "x"})"), ErrorCode::kFailedToParse,
                     std::string("$jsonSchema keyword '") + kw + "' is not currently supported");
  }
}

TEST(JsonSchemaMetaTest, DuplicateKeyword) {
  bson_t* spec = bson_new();
  bson_t schema;
  bson_append_document_begin(spec, "$jsonSchema", -1, &schema);
  bson_append_int32(&schema, "minProperties", -1, 1);
  bson_append_int32(&schema, "minProperties", -1, 2);
  bson_append_document_end(spec, &schema);
  auto v = Validator::Parse(spec);
  EXPECT_THAT(v, StatusIs(ErrorCode::kFailedToParse));
  if (!v.ok()) {
    EXPECT_EQ(v.status().reason(), "Duplicate $jsonSchema keyword: minProperties");
  }
  bson_destroy(spec);
}

TEST(JsonSchemaMetaTest, RequiredArgumentErrors) {
  ExpectParseError(JS(R"({"required": "a"})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'required' must be an array, but found an element of "
                   "type string");
  ExpectParseError(JS(R"({"required": []})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'required' cannot be an empty array");
  ExpectParseError(JS(R"({"required": ["a", "a"]})"), ErrorCode::kFailedToParse,
                   "$jsonSchema keyword 'required' array cannot contain duplicate values");
  ExpectParseError(JS(R"({"required": ["a", 1]})"), ErrorCode::kTypeMismatch,
                   "$jsonSchema keyword 'required' must be an array of strings, but found an "
                   "element of type: int");
  ExpectParseError(JS(R"({"properties": {"a": 1}})"), ErrorCode::kTypeMismatch,
                   "Nested schema for $jsonSchema property 'a' must be an object");
}

// {key: inner}
Document Wrap(const char* key, const Document& inner) {
  bson_t* out = bson_new();
  bson_append_document(out, key, -1, inner.bson());
  return Document::Adopt(out);
}

// {properties: {a: inner}}, or with `required: ["a"]` first.
Document WrapProperty(const Document& inner, bool required) {
  bson_t* out = bson_new();
  if (required) {
    bson_t arr;
    bson_append_array_begin(out, "required", -1, &arr);
    bson_append_utf8(&arr, "0", -1, "a", -1);
    bson_append_array_end(out, &arr);
  }
  bson_t props;
  bson_append_document_begin(out, "properties", -1, &props);
  bson_append_document(&props, "a", -1, inner.bson());
  bson_append_document_end(out, &props);
  return Document::Adopt(out);
}

// {$jsonSchema: {not: {not: ... {} ...}}} with `depth` subschemas in all.
// (Built with libbson: its JSON reader stops at 100 levels.)
Document NestedNot(int depth) {
  Document schema = Q("{}");
  for (int i = 1; i < depth; ++i) schema = Wrap("not", schema);
  return Wrap("$jsonSchema", schema);
}

TEST(JsonSchemaLimitsTest, DeepNestingIsRefused) {
  EXPECT_OK(Validator::Parse(NestedNot(kMaxSchemaDepth).bson()));
  auto v = Validator::Parse(NestedNot(kMaxSchemaDepth + 1).bson());
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  // Through properties as well (two BSON levels per schema).
  Document props = Q("{}");
  for (int i = 0; i < kMaxSchemaDepth; ++i) props = WrapProperty(props, false);
  EXPECT_THAT(Validator::Parse(Wrap("$jsonSchema", props).bson()),
              StatusIs(ErrorCode::kBadValue));
  // 1000 nested `not`: refused without exhausting the stack.
  EXPECT_THAT(Validator::Parse(NestedNot(1000).bson()), StatusIs(ErrorCode::kBadValue));
}

TEST(JsonSchemaLimitsTest, DeepDocumentsAreEvaluatedWithoutCrashing) {
  // A schema 90 properties deep against documents 90 levels deep.
  Document schema = Q(R"({"bsonType": "int"})");
  Document good = Q(R"({"a": 1})");
  Document bad = Q(R"({"a": "x"})");
  for (int i = 1; i < 90; ++i) {
    schema = WrapProperty(schema, true);
    good = Wrap("a", good);
    bad = Wrap("a", bad);
  }
  schema = WrapProperty(schema, true);
  auto v = Validator::Parse(Wrap("$jsonSchema", schema).bson());
  ASSERT_OK(v);
  EXPECT_TRUE((*v)->Validate(good.bson(), nullptr));
  bson_t details;
  bson_init(&details);
  EXPECT_FALSE((*v)->Validate(bad.bson(), &details));
  // The innermost error, 90 properties down, is the type mismatch.
  std::string path = "schemaRulesNotSatisfied.0";
  for (int i = 0; i < 90; ++i) path += ".propertiesNotSatisfied.0.details.0";
  EXPECT_EQ(test::StrAt(&details, (path + ".operatorName").c_str()), "bsonType");
  EXPECT_EQ(test::StrAt(&details, (path + ".consideredType").c_str()), "string");
  EXPECT_EQ(test::StrAt(&details, (path + ".consideredValue").c_str()), "x");
  bson_destroy(&details);
}

}  // namespace
}  // namespace schema
}  // namespace gatedb
