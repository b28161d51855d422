#include "engine/schema/validator.h"

#include <bson/bson.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

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

// ---------------------------------------------------------------------------
// Matching.

TEST(ValidatorTest, EmptyValidatorAcceptsEveryDocument) {
  EXPECT_TRUE(Passes("{}", "{}"));
  EXPECT_TRUE(Passes("{}", R"({"a": [1, {"b": null}]})"));
}

TEST(ValidatorTest, QueryOperatorsDecide) {
  EXPECT_TRUE(Passes(R"({"a": {"$gt": 1}})", R"({"a": 2})"));
  EXPECT_FALSE(Passes(R"({"a": {"$gt": 1}})", R"({"a": 1})"));
  EXPECT_FALSE(Passes(R"({"a": {"$gt": 1}})", R"({"b": 5})"));
  EXPECT_TRUE(Passes(R"({"a": 1, "b": "x"})", R"({"a": 1.0, "b": "x"})"));
  EXPECT_FALSE(Passes(R"({"a": 1, "b": "x"})", R"({"a": 1, "b": "y"})"));
  EXPECT_TRUE(Passes(R"({"$or": [{"a": 1}, {"b": 1}]})", R"({"b": 1})"));
  EXPECT_FALSE(Passes(R"({"$or": [{"a": 1}, {"b": 1}]})", R"({"c": 1})"));
  EXPECT_TRUE(Passes(R"({"$nor": [{"a": 1}]})", R"({"a": 2})"));
  EXPECT_FALSE(Passes(R"({"$nor": [{"a": 1}]})", R"({"a": 1})"));
  EXPECT_TRUE(Passes(R"({"a": {"$not": {"$gt": 5}}})", R"({"a": 5})"));
  EXPECT_FALSE(Passes(R"({"a": {"$not": {"$gt": 5}}})", R"({"a": 6})"));
}

TEST(ValidatorTest, NullDocumentFails) {
  std::unique_ptr<Validator> v = testing_util::MustParse("{}");
  ASSERT_NE(v, nullptr);
  bson_t details;
  bson_init(&details);
  EXPECT_FALSE(v->Validate(nullptr, &details));
  EXPECT_TRUE(bson_empty(&details));
  bson_destroy(&details);
}

TEST(ValidatorTest, JsonSchemaInsideLogicalOperators) {
  const std::string v = R"({"$and": [{"$jsonSchema": {"required": ["a"]}}, {"b": 1}]})";
  EXPECT_TRUE(Passes(v, R"({"a": 0, "b": 1})"));
  EXPECT_FALSE(Passes(v, R"({"b": 1})"));
  EXPECT_FALSE(Passes(v, R"({"a": 0, "b": 2})"));
  const std::string nor = R"({"$nor": [{"$jsonSchema": {"required": ["a"]}}]})";
  EXPECT_TRUE(Passes(nor, R"({"b": 1})"));
  EXPECT_FALSE(Passes(nor, R"({"a": 1})"));
  const std::string both = R"({"$jsonSchema": {"required": ["a"]}, "a": {"$lt": 3}})";
  EXPECT_TRUE(Passes(both, R"({"a": 2})"));
  EXPECT_FALSE(Passes(both, R"({"a": 4})"));
}

// ---------------------------------------------------------------------------
// Details of query operators (MongoDB's doc_validation_error shapes).

TEST(ValidatorDetailsTest, ComparisonFailed) {
  EXPECT_EQ(Details(R"({"a": {"$gt": 1}})", R"({"a": 0})"),
            Canon(R"({"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 1}},
                      "reason": "comparison failed", "consideredValue": 0})"));
}

TEST(ValidatorDetailsTest, ImplicitEqualityIsEq) {
  EXPECT_EQ(Details(R"({"a": 2})", R"({"a": 1})"),
            Canon(R"({"operatorName": "$eq", "specifiedAs": {"a": 2},
                      "reason": "comparison failed", "consideredValue": 1})"));
}

TEST(ValidatorDetailsTest, FieldWasMissing) {
  EXPECT_EQ(Details(R"({"a": {"$lte": 0}})", R"({"b": 1})"),
            Canon(R"({"operatorName": "$lte", "specifiedAs": {"a": {"$lte": 0}},
                      "reason": "field was missing"})"));
}

TEST(ValidatorDetailsTest, ImplicitArrayTraversalListsConsideredValues) {
  EXPECT_EQ(Details(R"({"a": {"$eq": 2}})", R"({"a": [3, 4, 5]})"),
            Canon(R"({"operatorName": "$eq", "specifiedAs": {"a": {"$eq": 2}},
                      "reason": "comparison failed", "consideredValues": [3, 4, 5]})"));
  EXPECT_EQ(Details(R"({"a.b": {"$eq": 0}})", R"({"a": [{"b": [1, 2]}, {"b": [3, 4]}]})"),
            Canon(R"({"operatorName": "$eq", "specifiedAs": {"a.b": {"$eq": 0}},
                      "reason": "comparison failed", "consideredValues": [1, 2, 3, 4]})"));
  EXPECT_EQ(Details(R"({"a": {"$gte": 3}})", R"({"a": []})"),
            Canon(R"({"operatorName": "$gte", "specifiedAs": {"a": {"$gte": 3}},
                      "reason": "comparison failed", "consideredValues": []})"));
}

TEST(ValidatorDetailsTest, ConsideredValuesAreTruncatedAtTen) {
  EXPECT_EQ(Details(R"({"a": {"$lt": 0}})", R"({"a": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]})"),
            Canon(R"({"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 0}},
                      "reason": "comparison failed",
                      "consideredValues": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                      "consideredValuesTruncated": true})"));
}

TEST(ValidatorDetailsTest, ImplicitAndOfFieldsReportsFailingClauses) {
  EXPECT_EQ(Details(R"({"a": 1, "b": {"$gt": 5}, "c": {"$exists": true}})",
                    R"({"a": 1, "b": 2})"),
            Canon(R"({"operatorName": "$and", "clausesNotSatisfied": [
                        {"index": 1, "details": {"operatorName": "$gt",
                          "specifiedAs": {"b": {"$gt": 5}}, "reason": "comparison failed",
                          "consideredValue": 2}},
                        {"index": 2, "details": {"operatorName": "$exists",
                          "specifiedAs": {"c": {"$exists": true}},
                          "reason": "path does not exist"}}]})"));
}

TEST(ValidatorDetailsTest, OperatorsOnOnePathAreSeparateClauses) {
  EXPECT_EQ(Details(R"({"a": {"$gt": 0, "$lt": 10}})", R"({"a": 11})"),
            Canon(R"({"operatorName": "$and", "clausesNotSatisfied": [
                        {"index": 1, "details": {"operatorName": "$lt",
                          "specifiedAs": {"a": {"$lt": 10}}, "reason": "comparison failed",
                          "consideredValue": 11}}]})"));
}

TEST(ValidatorDetailsTest, NestedAndReportsOnlyFailingBranches) {
  EXPECT_EQ(Details(R"({"$and": [{"$and": [{"a": 1}]}, {"$and": [{"b": 1}]}]})",
                    R"({"a": 1, "b": 2})"),
            Canon(R"({"operatorName": "$and", "clausesNotSatisfied": [{"index": 1, "details": {
                        "operatorName": "$and", "clausesNotSatisfied": [{"index": 0, "details": {
                          "operatorName": "$eq", "specifiedAs": {"b": 1},
                          "reason": "comparison failed", "consideredValue": 2}}]}}]})"));
}

TEST(ValidatorDetailsTest, OrReportsEveryClause) {
  EXPECT_EQ(Details(R"({"$or": [{"a": {"$lt": 10}}, {"a": {"$gt": 20}}]})", R"({"a": 15})"),
            Canon(R"({"operatorName": "$or", "clausesNotSatisfied": [
                        {"index": 0, "details": {"operatorName": "$lt",
                          "specifiedAs": {"a": {"$lt": 10}}, "reason": "comparison failed",
                          "consideredValue": 15}},
                        {"index": 1, "details": {"operatorName": "$gt",
                          "specifiedAs": {"a": {"$gt": 20}}, "reason": "comparison failed",
                          "consideredValue": 15}}]})"));
}

TEST(ValidatorDetailsTest, NorReportsSatisfiedClausesInvertedSense) {
  EXPECT_EQ(Details(R"({"$nor": [{"a": {"$gt": 10}}, {"b": {"$lt": 10}}]})",
                    R"({"a": 9, "b": 9})"),
            Canon(R"({"operatorName": "$nor", "clausesSatisfied": [
                        {"index": 1, "details": {"operatorName": "$lt",
                          "specifiedAs": {"b": {"$lt": 10}}, "reason": "comparison succeeded",
                          "consideredValue": 9}}]})"));
}

TEST(ValidatorDetailsTest, NotInvertsItsChild) {
  EXPECT_EQ(Details(R"({"a": {"$not": {"$lt": 10}}})", R"({"a": 9})"),
            Canon(R"({"operatorName": "$not", "details": {"operatorName": "$lt",
                        "specifiedAs": {"a": {"$lt": 10}}, "reason": "comparison succeeded",
                        "consideredValue": 9}})"));
  EXPECT_EQ(Details(R"({"a": {"$not": {"$not": {"$lt": 10}}}})", R"({"a": 11})"),
            Canon(R"({"operatorName": "$not", "details": {"operatorName": "$not",
                        "details": {"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 10}},
                          "reason": "comparison failed", "consideredValue": 11}}})"));
}

TEST(ValidatorDetailsTest, NotOverSeveralOperatorsIsAnAndOfSatisfiedClauses) {
  EXPECT_EQ(Details(R"({"a": {"$not": {"$lt": 20, "$gt": 5}}})", R"({"a": 10})"),
            Canon(R"({"operatorName": "$not", "details": {"operatorName": "$and",
                        "clausesSatisfied": [
                          {"index": 0, "details": {"operatorName": "$lt",
                            "specifiedAs": {"a": {"$lt": 20}}, "reason": "comparison succeeded",
                            "consideredValue": 10}},
                          {"index": 1, "details": {"operatorName": "$gt",
                            "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison succeeded",
                            "consideredValue": 10}}]}})"));
}

TEST(ValidatorDetailsTest, NegatedOperatorsUseInvertedReasons) {
  EXPECT_EQ(Details(R"({"a": {"$ne": 2}})", R"({"a": [1, 2, 3]})"),
            Canon(R"({"operatorName": "$ne", "specifiedAs": {"a": {"$ne": 2}},
                      "reason": "comparison succeeded", "consideredValues": [1, 2, 3]})"));
  EXPECT_EQ(Details(R"({"a": {"$nin": [1, 2, 3]}})", R"({"a": 3})"),
            Canon(R"({"operatorName": "$nin", "specifiedAs": {"a": {"$nin": [1, 2, 3]}},
                      "reason": "matching value found in array", "consideredValue": 3})"));
  EXPECT_EQ(Details(R"({"a": {"$in": [1, 2, 3]}})", R"({"a": 4})"),
            Canon(R"({"operatorName": "$in", "specifiedAs": {"a": {"$in": [1, 2, 3]}},
                      "reason": "no matching value found in array", "consideredValue": 4})"));
  EXPECT_EQ(Details(R"({"a": {"$exists": false}})", R"({"a": 1})"),
            Canon(R"({"operatorName": "$exists", "specifiedAs": {"a": {"$exists": false}},
                      "reason": "path does exist"})"));
}

TEST(ValidatorDetailsTest, TypeReportsConsideredTypes) {
  EXPECT_EQ(Details(R"({"a": {"%type": "int"}})", R"({"a": "one"})"),
            Canon(R"({"operatorName": "$type", "specifiedAs": {"a": {"%type": "int"}},
                      "reason": "type did not match", "consideredValue": "one",
                      "consideredType": "string"})"));
  EXPECT_EQ(Details(R"({"a": {"%type": "double"}})", R"({"a": ["x", 1]})"),
            Canon(R"({"operatorName": "$type", "specifiedAs": {"a": {"%type": "double"}},
                      "reason": "type did not match", "consideredValues": ["x", 1],
                      "consideredTypes": ["int", "string"]})"));
  EXPECT_EQ(Details(R"({"a": {"$not": {"%type": "string"}}})", R"({"a": "words"})"),
            Canon(R"({"operatorName": "$not", "details": {"operatorName": "$type",
                        "specifiedAs": {"a": {"%type": "string"}}, "reason": "type did match",
                        "consideredValue": "words", "consideredType": "string"}})"));
}

TEST(ValidatorDetailsTest, WrongTypeForTheOperator) {
  EXPECT_EQ(Details(R"({"a": {"$mod": [2, 1]}})", R"({"a": "two"})"),
            Canon(R"({"operatorName": "$mod", "specifiedAs": {"a": {"$mod": [2, 1]}},
                      "reason": "type did not match", "consideredType": "string",
                      "expectedTypes": ["decimal", "double", "int", "long"],
                      "consideredValue": "two"})"));
  EXPECT_EQ(Details(R"({"a": {"$mod": [2, 1]}})", R"({"a": [0, "two"]})"),
            Canon(R"({"operatorName": "$mod", "specifiedAs": {"a": {"$mod": [2, 1]}},
                      "reason": "$mod did not evaluate to expected remainder",
                      "consideredValues": [0, "two"]})"));
  EXPECT_EQ(Details(R"({"a": {"%regex": "^S"}})", R"({"a": 1})"),
            Canon(R"({"operatorName": "$regex", "specifiedAs": {"a": {"%regex": "^S"}},
                      "reason": "type did not match", "consideredType": "int",
                      "expectedTypes": ["regex", "string", "symbol"], "consideredValue": 1})"));
  EXPECT_EQ(Details(R"({"a": {"$size": 2}})", R"({"a": 3})"),
            Canon(R"({"operatorName": "$size", "specifiedAs": {"a": {"$size": 2}},
                      "reason": "type did not match", "consideredType": "int",
                      "expectedType": "array", "consideredValue": 3})"));
}

TEST(ValidatorDetailsTest, RegexWithOptionsAndImplicitRegex) {
  EXPECT_EQ(Details(R"({"a": {"%regex": "^s", "%options": "i"}})", R"({"a": "tall"})"),
            Canon(R"({"operatorName": "$regex",
                      "specifiedAs": {"a": {"%regex": "^s", "%options": "i"}},
                      "reason": "regular expression did not match", "consideredValue": "tall"})"));
  EXPECT_TRUE(Passes(R"({"a": {"%regex": "^s", "%options": "i"}})", R"({"a": "Short"})"));
  EXPECT_EQ(
      Details(R"({"a": {"$regularExpression": {"pattern": "^S", "options": ""}}})",
              R"({"a": "so sorry"})"),
      Canon(R"({"operatorName": "$regex",
                "specifiedAs": {"a": {"$regularExpression": {"pattern": "^S", "options": ""}}},
                "reason": "regular expression did not match", "consideredValue": "so sorry"})"));
}

TEST(ValidatorDetailsTest, ArrayOperatorsConsiderTheArray) {
  EXPECT_EQ(Details(R"({"a": {"$size": 2}})", R"({"a": [1, 2, 3]})"),
            Canon(R"({"operatorName": "$size", "specifiedAs": {"a": {"$size": 2}},
                      "reason": "array length was not equal to given size",
                      "consideredValue": [1, 2, 3]})"));
  EXPECT_EQ(Details(R"({"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}})", R"({"a": [10, 11]})"),
            Canon(R"({"operatorName": "$elemMatch",
                      "specifiedAs": {"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}},
                      "reason": "array did not satisfy the child predicate",
                      "consideredValue": [10, 11]})"));
  EXPECT_EQ(Details(R"({"a": {"$all": [1, 2, 3]}})", R"({"a": [1, 2, 4]})"),
            Canon(R"({"operatorName": "$all", "specifiedAs": {"a": {"$all": [1, 2, 3]}},
                      "reason": "array did not contain all specified values",
                      "consideredValue": [1, 2, 4]})"));
  EXPECT_EQ(Details(R"({"a": {"$all": []}})", R"({"a": [1]})"),
            Canon(R"({"operatorName": "$all", "specifiedAs": {"a": {"$all": []}},
                      "reason": "expression always evaluates to false"})"));
  EXPECT_TRUE(Passes(R"({"a": {"$elemMatch": {"b": 1}}})", R"({"a": [{"b": 2}, {"b": 1}]})"));
}

TEST(ValidatorDetailsTest, AlwaysFalse) {
  EXPECT_EQ(Details(R"({"$alwaysFalse": 1})", R"({"a": 1})"),
            Canon(R"({"operatorName": "$alwaysFalse", "specifiedAs": {"$alwaysFalse": 1},
                      "reason": "expression always evaluates to false"})"));
  EXPECT_EQ(Details(R"({"$nor": [{"$alwaysTrue": 1}]})", R"({"a": 1})"),
            Canon(R"({"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": {
                        "operatorName": "$alwaysTrue", "specifiedAs": {"$alwaysTrue": 1},
                        "reason": "expression always evaluates to true"}}]})"));
}

TEST(ValidatorDetailsTest, JsonSchemaAmongQueryOperators) {
  EXPECT_EQ(
      Details(R"({"$and": [{"$jsonSchema": {"properties": {"a": {"minimum": 1}}}},
                           {"$jsonSchema": {"properties": {"b": {"minimum": 1}}}},
                           {"c": {"$gt": 0}}]})",
              R"({"a": 0, "b": 2, "c": -1})"),
      Canon(R"({"operatorName": "$and", "clausesNotSatisfied": [
                 {"index": 0, "details": {"operatorName": "$jsonSchema",
                   "schemaRulesNotSatisfied": [{"operatorName": "properties",
                     "propertiesNotSatisfied": [{"propertyName": "a", "details": [
                       {"operatorName": "minimum", "specifiedAs": {"minimum": 1},
                        "reason": "comparison failed", "consideredValue": 0}]}]}]}},
                 {"index": 2, "details": {"operatorName": "$gt",
                   "specifiedAs": {"c": {"$gt": 0}}, "reason": "comparison failed",
                   "consideredValue": -1}}]})"));
}

TEST(ValidatorDetailsTest, JsonSchemaUnderNorMatched) {
  EXPECT_EQ(Details(R"({"$nor": [{"$jsonSchema": {"required": ["a"]}}]})", R"({"a": 2})"),
            Canon(R"({"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": {
                        "operatorName": "$jsonSchema", "reason": "schema matched"}}]})"));
}

// ---------------------------------------------------------------------------
// Check(): MongoDB's DocumentValidationFailure.

TEST(ValidatorCheckTest, FailureCarriesErrInfo) {
  std::unique_ptr<Validator> v = testing_util::MustParse(R"({"a": {"$eq": 2}})");
  ASSERT_NE(v, nullptr);
  Document bad = Q(R"({"_id": 10, "a": 1})");
  Status s = v->Check(bad.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kDocumentValidationFailure));
  EXPECT_EQ(s.code_number(), 121);
  EXPECT_EQ(s.reason(), "Document failed validation");
  ASSERT_NE(s.err_info(), nullptr);
  EXPECT_EQ(test::ToJson(s.err_info()->bson()),
            Canon(R"({"failingDocumentId": 10, "details": {"operatorName": "$eq",
                      "specifiedAs": {"a": {"$eq": 2}}, "reason": "comparison failed",
                      "consideredValue": 1}})"));
  Document good = Q(R"({"_id": 11, "a": 2})");
  EXPECT_OK(v->Check(good.bson()));
}

TEST(ValidatorCheckTest, ConcurrentValidation) {
  std::unique_ptr<Validator> v =
      testing_util::MustParse(R"({"$jsonSchema": {"required": ["a"],
                                 "properties": {"a": {"bsonType": "int", "minimum": 0}}}})");
  ASSERT_NE(v, nullptr);
  Document good = Q(R"({"a": 5})");
  Document bad = Q(R"({"a": -5})");
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        bson_t details;
        bson_init(&details);
        if (!v->Validate(good.bson(), nullptr)) ++failures[t];
        if (v->Validate(bad.bson(), &details) || bson_empty(&details)) ++failures[t];
        bson_destroy(&details);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ---------------------------------------------------------------------------
// Parse errors.

TEST(ValidatorParseTest, QueryOperatorErrorsAreTheMatchers) {
  auto v = ParseValidator(R"({"a": {"$foo": 1}})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "unknown operator: $foo");
  v = ParseValidator(R"({"$foo": 1})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "unknown top level operator: $foo");
  EXPECT_THAT(ParseValidator(R"({"a": {"$in": 5}})"), StatusIs(ErrorCode::kBadValue));
}

TEST(ValidatorParseTest, BannedOperatorsAreInvalidOptions) {
  auto v = ParseValidator(R"({"$where": "this.a > 1"})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_EQ(v.status().reason(), "$where is not allowed in collection validators");
  v = ParseValidator(R"({"$and": [{"a": 1}, {"$text": {"$search": "x"}}]})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_EQ(v.status().reason(), "$text is not allowed in collection validators");
  EXPECT_THAT(ParseValidator(R"({"loc": {"$near": [0, 0]}})"),
              StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_THAT(ParseValidator(R"({"loc": {"$nearSphere": [0, 0]}})"),
              StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_THAT(ParseValidator(R"({"$expr": {"$eq": ["$a", "$b"]}})"),
              StatusIs(ErrorCode::kInvalidOptions));
}

TEST(ValidatorParseTest, MalformedLogicalOperators) {
  auto v = ParseValidator(R"({"$and": {"a": 1}})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "$and must be an array");
  v = ParseValidator(R"({"$or": []})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "$and/$or/$nor must be a nonempty array");
  v = ParseValidator(R"({"$nor": [{"$jsonSchema": {}}, 5]})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "$or/$and/$nor entries need to be full objects");
}

TEST(ValidatorParseTest, JsonSchemaMustBeAnObject) {
  auto v = ParseValidator(R"({"$jsonSchema": [1]})");
  EXPECT_THAT(v, StatusIs(ErrorCode::kTypeMismatch));
  EXPECT_EQ(v.status().reason(), "$jsonSchema must be an object");
  EXPECT_THAT(ParseValidator(R"({"$or": [{"$jsonSchema": {"foo": 1}}]})"),
              StatusIs(ErrorCode::kFailedToParse));
}

// {$and: [inner]}, `levels` times around {a: 1}.
Document NestedAnd(int levels) {
  Document doc = Q(R"({"a": 1})");
  for (int i = 0; i < levels; ++i) {
    bson_t* out = bson_new();
    bson_t arr;
    bson_append_array_begin(out, "$and", -1, &arr);
    bson_append_document(&arr, "0", -1, doc.bson());
    bson_append_array_end(out, &arr);
    doc = Document::Adopt(out);
  }
  return doc;
}

TEST(ValidatorParseTest, DeepLogicalNestingIsRefused) {
  auto deep = Validator::Parse(NestedAnd(101).bson());
  EXPECT_THAT(deep, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(deep.status().reason(), "filter exceeds the maximum nesting depth of 100");
  auto ok = Validator::Parse(NestedAnd(100).bson());
  ASSERT_OK(ok);
  Document pass = Q(R"({"a": 1})");
  Document fail = Q(R"({"a": 2})");
  EXPECT_TRUE((*ok)->Validate(pass.bson(), nullptr));
  EXPECT_FALSE((*ok)->Validate(fail.bson(), nullptr));
}

TEST(ValidatorParseTest, HostileNestingIsRefusedWithoutRecursion) {
  // {a: {b: {b: ... {} ...}}}, 100000 levels, written as raw bytes: refused
  // by the iterative nesting check before anything recurses.
  const size_t levels = 100000;
  std::vector<uint8_t> bytes;
  auto put_len = [&bytes](uint32_t n) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(n >> (8 * i)));
  };
  // The document at nesting level k (0 = innermost {}) is 5 + 8k bytes.
  for (size_t k = levels; k > 0; --k) {
    put_len(static_cast<uint32_t>(5 + 8 * k));
    bytes.insert(bytes.end(), {0x03, static_cast<uint8_t>(k == levels ? 'a' : 'b'), 0x00});
  }
  put_len(5);
  bytes.push_back(0);
  bytes.insert(bytes.end(), levels, 0);
  bson_t doc;
  ASSERT_TRUE(bson_init_static(&doc, bytes.data(), bytes.size()));
  auto v = Validator::Parse(&doc);
  EXPECT_THAT(v, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ(v.status().reason(), "validator exceeds the maximum nesting depth of 512");
}

TEST(ValidatorParseTest, MalformedBsonIsInvalidBson) {
  // A length prefix larger than the bytes.
  static const uint8_t kBytes[] = {0x20, 0, 0, 0, 0x10, 'a', 0, 1, 0, 0, 0, 0};
  bson_t doc;
  ASSERT_FALSE(bson_init_static(&doc, kBytes, sizeof(kBytes)));
  // A structurally broken element inside a well-sized document.
  static const uint8_t kBroken[] = {0x0c, 0, 0, 0, 0x03, 'a', 0, 0x09, 0, 0, 0, 0};
  ASSERT_TRUE(bson_init_static(&doc, kBroken, sizeof(kBroken)));
  EXPECT_THAT(Validator::Parse(&doc), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Validator::Parse(nullptr), StatusIs(ErrorCode::kInvalidBSON));
}

// ---------------------------------------------------------------------------
// Hostile input: validators with random bytes changed never crash, and every
// failure comes with details that name an operator.

TEST(ValidatorRobustnessTest, MutatedValidatorsNeverCrash) {
  const char* const kCorpus[] = {
      R"({"a": {"$gt": 1, "$lt": [1, 2]}, "b": {"$in": [1, "x", null]}})",
      R"({"$or": [{"a": {"$exists": true}}, {"b.c": {"$elemMatch": {"d": 1}}}]})",
      R"({"$jsonSchema": {"bsonType": "object", "required": ["a", "b"], "properties": {
           "a": {"bsonType": ["int", "long"], "minimum": 0, "maximum": 100, "multipleOf": 3},
           "b": {"type": "array", "items": {"type": "string", "maxLength": 4},
                 "minItems": 1, "uniqueItems": true},
           "c": {"enum": [1, "x", {"y": 2}], "not": {"type": "null"}}},
         "patternProperties": {"^z": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
         "additionalProperties": {"oneOf": [{"minLength": 1}, {"type": "object"}]},
         "dependencies": {"a": ["b"], "c": {"required": ["a"]}}}})",
      R"({"$nor": [{"$jsonSchema": {"items": [{}, {"type": "object"}], "additionalItems": false}},
                   {"x": {"$not": {"$size": 2}}}]})",
  };
  std::vector<Document> docs;
  docs.push_back(Q(R"({"a": 3, "b": ["x", "y"], "c": 1, "z1": 2})"));
  docs.push_back(Q(R"({"a": -1, "b": [], "c": null, "zz": [], "q": {}})"));
  docs.push_back(Q(R"({"a": [1, {"b": 2}], "b": {"c": [{"d": 1}]}, "x": [1, 2]})"));
  docs.push_back(Q("{}"));
  std::mt19937 rng(20240611);
  int parsed = 0, refused = 0;
  for (const char* json : kCorpus) {
    Document base = Q(json);
    const uint8_t* data = bson_get_data(base.bson());
    const std::vector<uint8_t> bytes(data, data + base.bson()->len);
    for (int round = 0; round < 400; ++round) {
      std::vector<uint8_t> m = bytes;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        m[4 + rng() % (m.size() - 5)] = static_cast<uint8_t>(rng());
      }
      bson_t b;
      if (!bson_init_static(&b, m.data(), m.size())) continue;
      auto v = Validator::Parse(&b);
      if (!v.ok()) {
        ++refused;
        EXPECT_FALSE(v.status().reason().empty());
        continue;
      }
      ++parsed;
      for (const Document& doc : docs) {
        bson_t details;
        bson_init(&details);
        const bool passed = (*v)->Validate(doc.bson(), &details);
        EXPECT_EQ(passed, (*v)->Validate(doc.bson(), nullptr));
        if (!passed) {
          EXPECT_TRUE(test::HasPath(&details, "operatorName")) << test::ToJson(&details);
        }
        bson_destroy(&details);
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace schema
}  // namespace gatedb
