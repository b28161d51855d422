// Object and miscellaneous operators: $mergeObjects $objectToArray
// $arrayToObject $getField $setField $unsetField $rand $binarySize
// $bsonSize.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

TEST(MergeObjectsTest, DocumentedExampleAndEdges) {
  // MongoDB's example merges an order with its item, the order winning.
  RunCases({
      {R"({"$mergeObjects": [{"$arrayElemAt": ["$fromItems", 0]}, "$$ROOT"]})",
       R"({"_id": 1, "item": "almonds", "price": 12, "fromItems": [{"item": "almonds", "description": "nuts"}]})",
       R"({"item": "almonds", "description": "nuts", "_id": 1, "price": 12,
           "fromItems": [{"item": "almonds", "description": "nuts"}]})"},
      {R"({"$mergeObjects": [{"a": 1, "b": 1}, null, {"a": 2, "c": 3}]})", "{}", R"({"a": 2, "b": 1, "c": 3})"},
      {R"({"$mergeObjects": "$nope"})", "{}", "{}"},
      {R"({"$mergeObjects": []})", "{}", "{}"},
      {R"({"$mergeObjects": [{"a": 1}, 5]})", "{}", "error:40400"},
  });
}

TEST(ObjectToArrayTest, DocumentedExample) {
  RunCases({
      {R"({"$objectToArray": "$dimensions"})", R"({"dimensions": {"l": 25, "w": 10, "uom": "cm"}})",
       R"([{"k": "l", "v": 25}, {"k": "w", "v": 10}, {"k": "uom", "v": "cm"}])"},
      {R"({"$objectToArray": {"a": {"b": [1]}}})", "{}", R"([{"k": "a", "v": {"b": [1]}}])"},
      {R"({"$objectToArray": "$nope"})", "{}", "null"},
      {R"({"$objectToArray": [[1]]})", "{}", "error:40390"},
  });
}

TEST(ArrayToObjectTest, DocumentedExamples) {
  RunCases({
      {R"({"$arrayToObject": "$dimensions"})", R"({"dimensions": [{"k": "l", "v": 25}, {"k": "w", "v": 10}]})",
       R"({"l": 25, "w": 10})"},
      {R"({"$arrayToObject": "$dimensions"})", R"({"dimensions": [["l", 25], ["w", 10]]})", R"({"l": 25, "w": 10})"},
      {R"({"$arrayToObject": [[["a", 1], ["b", 2], ["a", 3]]]})", "{}", R"({"a": 3, "b": 2})"},
      {R"({"$arrayToObject": [[]]})", "{}", "{}"},
      {R"({"$arrayToObject": "$nope"})", "{}", "null"},
      {R"({"$arrayToObject": "x"})", "{}", "error:40386"},
      {R"({"$arrayToObject": [[1]]})", "{}", "error:40398"},
      {R"({"$arrayToObject": [[["a"]]]})", "{}", "error:40397"},
      {R"({"$arrayToObject": [[[1, 2]]]})", "{}", "error:40395"},
      {R"({"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]})", "{}", "error:40396"},
      {R"({"$arrayToObject": [[{"k": "a", "v": 1}, ["b", 2]]]})", "{}", "error:40391"},
      {R"({"$arrayToObject": [[{"k": "a"}]]})", "{}", "error:40392"},
      {R"({"$arrayToObject": [[{"k": "a", "x": 1}]]})", "{}", "error:40393"},
      {R"({"$arrayToObject": [[{"k": 1, "v": 1}]]})", "{}", "error:40394"},
  });
}

TEST(GetFieldTest, DocumentedExamples) {
  RunCases({
      // A dotted name is one field, not a path.
      {R"({"$getField": "price.usd"})", R"({"price.usd": 45.21, "price": {"usd": 1}})", "45.21"},
      {R"({"$getField": {"field": "price.usd", "input": "$$CURRENT"}})", R"({"price.usd": 45.21})", "45.21"},
      {R"({"$getField": {"field": "qty", "input": {"$arrayElemAt": ["$items", 0]}}})", R"({"items": [{"qty": 3}]})",
       "3"},
      {R"({"$getField": {"field": {"$literal": "$price"}, "input": {"$literal": {"$price": 7}}}})", "{}", "7"},
      {R"({"$getField": {"field": "x", "input": null}})", "{}", "null"},
      {R"({"$getField": {"field": "x", "input": "$nope"}})", "{}", "missing"},
      {R"({"$getField": "nope"})", R"({"a": 1})", "missing"},
      {R"({"$getField": {"field": "x", "input": 5}})", "{}", "error:3041705"},
      {R"({"$getField": {"field": "x", "other": 5}})", "{}", "error:3041701"},
      {R"({"$getField": {"input": {}}})", "{}", "error:3041702"},
      {R"({"$getField": {"field": 5, "input": {}}})", "{}", "error:3041704"},
      {R"({"$getField": "$price"})", "{}", "error:5654602"},
  });
}

TEST(SetFieldTest, DocumentedExamples) {
  const char* doc = R"({"_id": 1, "item": "sweatshirt", "qty": 300, "price.usd": 45.21})";
  RunCases({
      {R"({"$setField": {"field": "price.usd", "input": "$$ROOT", "value": 49.99}})", doc,
       R"({"_id": 1, "item": "sweatshirt", "qty": 300, "price.usd": 49.99})"},
      {R"({"$setField": {"field": "color", "input": "$$ROOT", "value": "red"}})", R"({"a": 1})",
       R"({"a": 1, "color": "red"})"},
      {R"({"$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$$REMOVE"}})", doc,
       R"({"_id": 1, "item": "sweatshirt", "qty": 300})"},
      {R"({"$unsetField": {"field": "price.usd", "input": "$$ROOT"}})", doc,
       R"({"_id": 1, "item": "sweatshirt", "qty": 300})"},
      {R"({"$setField": {"field": {"$literal": "$price"}, "input": {}, "value": 1}})", "{}", R"({"$price": 1})"},
      {R"({"$setField": {"field": "a", "input": null, "value": 1}})", "{}", "null"},
      {R"({"$setField": 1})", "{}", "error:4161100"},
      {R"({"$setField": {"field": "a", "input": {}, "value": 1, "x": 1}})", "{}", "error:4161101"},
      {R"({"$setField": {"input": {}, "value": 1}})", "{}", "error:4161102"},
      {R"({"$setField": {"field": "a", "input": {}}})", "{}", "error:4161103"},
      {R"({"$setField": {"field": "a", "input": 5, "value": 1}})", "{}", "error:4161105"},
      {R"({"$setField": {"field": {"$concat": ["a", "b"]}, "input": {}, "value": 1}})", "{}", "error:4161106"},
      {R"({"$setField": {"field": 5, "input": {}, "value": 1}})", "{}", "error:4161107"},
      {R"({"$setField": {"field": "$a", "input": {}, "value": 1}})", "{}", "error:4161108"},
      {R"({"$setField": {"field": "a", "value": 1}})", "{}", "error:4161109"},
      {R"({"$setField": {"field": "a\u0000b", "input": {}, "value": 1}})", "{}", "error:9534700"},
  });
}

TEST(MiscTest, RandBinarySizeBsonSize) {
  for (int i = 0; i < 100; ++i) {
    StatusOr<Value> r = Eval(R"({"$rand": {}})");
    ASSERT_OK(r);
    ASSERT_EQ(BSON_TYPE_DOUBLE, r->type());
    EXPECT_GE(r->dbl(), 0.0);
    EXPECT_LT(r->dbl(), 1.0);
  }
  RunCases({
      {R"({"$rand": 1})", "{}", "error:3040501"},
      {R"({"$binarySize": "abc"})", "{}", "3"},
      {R"({"$binarySize": "寿司"})", "{}", "6"},
      {R"({"$binarySize": {"$binary": {"base64": "AAEC", "subType": "00"}}})", "{}", "3"},
      {R"({"$binarySize": null})", "{}", "null"},
      {R"({"$binarySize": 1})", "{}", "error:51276"},
      {R"({"$bsonSize": "$$ROOT"})", R"({"a": 1})", "12"},
      {R"({"$bsonSize": "$nope"})", "{}", "null"},
      {R"({"$bsonSize": "x"})", "{}", "error:31393"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
