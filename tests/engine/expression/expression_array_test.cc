// Array and set operators, against MongoDB's documented examples, plus
// null/missing and error codes.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

const char* kFavorites = R"({"favorites": ["chocolate", "cake", "butter", "apples"]})";

TEST(SizeTest, DocumentedExample) {
  RunCases({
      {R"({"$size": "$colors"})", R"({"item": "ABC1", "colors": ["blue", "black", "red"]})", "3"},
      {R"({"$size": "$colors"})", R"({"item": "ABC2", "colors": ["purple"]})", "1"},
      {R"({"$size": "$colors"})", R"({"item": "XYZ1", "colors": []})", "0"},
      {R"({"$cond": {"if": {"$isArray": "$colors"}, "then": {"$size": "$colors"}, "else": "NA"}})",
       R"({"item": "XYZ2"})", R"("NA")"},
      {R"({"$size": "$colors"})", R"({"item": "XYZ2"})", "error:17124"},
      {R"({"$size": null})", "{}", "error:17124"},
  });
}

TEST(ArrayElemAtTest, DocumentedExample) {
  RunCases({
      {R"({"$arrayElemAt": ["$favorites", 0]})", kFavorites, R"("chocolate")"},
      {R"({"$arrayElemAt": ["$favorites", -1]})", kFavorites, R"("apples")"},
      {R"({"$arrayElemAt": ["$favorites", 10]})", kFavorites, "missing"},
      {R"({"$arrayElemAt": ["$favorites", -5]})", kFavorites, "missing"},
      {R"({"$arrayElemAt": ["$favorites", 1.0]})", kFavorites, R"("cake")"},
      {R"({"$arrayElemAt": [[], 0]})", "{}", "missing"},
      {R"({"$arrayElemAt": ["$nope", 0]})", "{}", "null"},
      {R"({"$arrayElemAt": [[1], null]})", "{}", "null"},
      {R"({"$arrayElemAt": ["abc", 0]})", "{}", "error:28689"},
      {R"({"$arrayElemAt": [[1], "0"]})", "{}", "error:28690"},
      {R"({"$arrayElemAt": [[1], 0.5]})", "{}", "error:28691"},
  });
}

TEST(FirstLastTest, DocumentedExamples) {
  RunCases({
      {R"({"$first": [[1, 2, 3]]})", "{}", "1"},
      {R"({"$last": [[1, 2, 3]]})", "{}", "3"},
      {R"({"$first": [[[]]]})", "{}", "[]"},
      {R"({"$first": [null]})", "{}", "null"},
      {R"({"$first": "$nope"})", "{}", "null"},
      {R"({"$last": [[]]})", "{}", "missing"},
      {R"({"$first": "$favorites"})", kFavorites, R"("chocolate")"},
      {R"({"$last": "$favorites"})", kFavorites, R"("apples")"},
      {R"({"$first": "string"})", "{}", "error:28689"},
  });
}

TEST(FilterTest, DocumentedExamples) {
  const char* doc = R"({"items": [{"item_id": 43, "quantity": 2, "price": 10},
                                    {"item_id": 2, "quantity": 1, "price": 240}]})";
  RunCases({
      {R"({"$filter": {"input": "$items", "as": "item", "cond": {"$gte": ["$$item.price", 100]}}})", doc,
       R"([{"item_id": 2, "quantity": 1, "price": 240}])"},
      {R"({"$filter": {"input": "$items", "cond": {"$lt": ["$$this.price", 100]}}})", doc,
       R"([{"item_id": 43, "quantity": 2, "price": 10}])"},
      // limit
      {R"({"$filter": {"input": [1, "a", 2, null, 3.1, {"$numberLong": "3"}, "5"], "as": "num",
                        "cond": {"$isNumber": "$$num"}, "limit": 2}})", "{}", "[1, 2]"},
      {R"({"$filter": {"input": [1, 2, 3], "cond": true, "limit": {"$add": [0, 1]}}})", "{}", "[1]"},
      {R"({"$filter": {"input": [1, 2, 3], "cond": true, "limit": null}})", "{}", "[1, 2, 3]"},
      {R"({"$filter": {"input": [], "cond": true}})", "{}", "[]"},
      {R"({"$filter": {"input": "$nope", "cond": true}})", "{}", "null"},
      {R"({"$filter": {"input": 1, "cond": true}})", "{}", "error:28651"},
      {R"({"$filter": [1]})", "{}", "error:28646"},
      {R"({"$filter": {"input": [], "cond": true, "x": 1}})", "{}", "error:28647"},
      {R"({"$filter": {"cond": true}})", "{}", "error:28648"},
      {R"({"$filter": {"input": []}})", "{}", "error:28650"},
      {R"({"$filter": {"input": [1], "cond": true, "limit": 0.5}})", "{}", "error:327391"},
      {R"({"$filter": {"input": [1], "cond": true, "limit": 0}})", "{}", "error:327392"},
      {R"({"$filter": {"input": [1], "as": "Bad", "cond": true}})", "{}", "error:16867"},
  });
}

TEST(MapTest, DocumentedExamples) {
  RunCases({
      {R"({"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}})",
       R"({"quizzes": [5, 6, 7]})", "[7, 8, 9]"},
      {R"({"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}})", R"({"quizzes": []})",
       "[]"},
      {R"({"$map": {"input": "$distances", "in": {"$trunc": "$$this"}}})", R"({"distances": [1.2, 2.5, -3.9]})",
       "[1.0, 2.0, -3.0]"},
      // Missing results become null; outer fields stay reachable.
      {R"({"$map": {"input": [{"a": 1}, {}], "in": "$$this.a"}})", "{}", "[1, null]"},
      {R"({"$map": {"input": [1, 2], "as": "x", "in": {"$multiply": ["$$x", "$k"]}}})", R"({"k": 10})", "[10, 20]"},
      // Nested maps see both variables.
      {R"({"$map": {"input": [1, 2], "as": "i", "in": {"$map": {"input": [10, 20], "as": "j",
                                                                   "in": {"$add": ["$$i", "$$j"]}}}}})",
       "{}", "[[11, 21], [12, 22]]"},
      {R"({"$map": {"input": null, "in": 1}})", "{}", "null"},
      {R"({"$map": {"input": "x", "in": 1}})", "{}", "error:16883"},
      {R"({"$map": 1})", "{}", "error:16878"},
      {R"({"$map": {"input": [], "in": 1, "x": 1}})", "{}", "error:16879"},
      {R"({"$map": {"in": 1}})", "{}", "error:16880"},
      {R"({"$map": {"input": []}})", "{}", "error:16882"},
      // The variable is not visible outside the $map.
      {R"([{"$map": {"input": [1], "as": "v", "in": "$$v"}}, "$$v"])", "{}", "error:17276"},
  });
}

TEST(ReduceTest, DocumentedExamples) {
  RunCases({
      {R"({"$reduce": {"input": "$probabilityArr", "initialValue": 1,
                        "in": {"$multiply": ["$$value", "$$this"]}}})",
       R"({"probabilityArr": [0.5, 0.25]})", "0.125"},
      {R"({"$reduce": {"input": ["a", "b", "c"], "initialValue": "",
                        "in": {"$concat": ["$$value", "$$this"]}}})", "{}", R"("abc")"},
      {R"({"$reduce": {"input": [1, 2, 3, 4], "initialValue": {"sum": 5, "product": 2},
                        "in": {"sum": {"$add": ["$$value.sum", "$$this"]},
                               "product": {"$multiply": ["$$value.product", "$$this"]}}}})",
       "{}", R"({"sum": 15, "product": 48})"},
      {R"({"$reduce": {"input": [[3, 4], [5, 6]], "initialValue": [1, 2],
                        "in": {"$concatArrays": ["$$value", "$$this"]}}})", "{}", "[1, 2, 3, 4, 5, 6]"},
      {R"({"$reduce": {"input": [], "initialValue": "empty", "in": 1}})", "{}", R"("empty")"},
      {R"({"$reduce": {"input": "$nope", "initialValue": 0, "in": 1}})", "{}", "null"},
      {R"({"$reduce": {"input": 5, "initialValue": 0, "in": 1}})", "{}", "error:40080"},
      {R"({"$reduce": 5})", "{}", "error:40075"},
      {R"({"$reduce": {"input": [], "initialValue": 0, "in": 1, "x": 1}})", "{}", "error:40076"},
      {R"({"$reduce": {"initialValue": 0, "in": 1}})", "{}", "error:40077"},
      {R"({"$reduce": {"input": [], "in": 1}})", "{}", "error:40078"},
      {R"({"$reduce": {"input": [], "initialValue": 0}})", "{}", "error:40079"},
  });
}

TEST(InTest, DocumentedExample) {
  RunCases({
      {R"({"$in": ["bananas", "$in_stock"]})", R"({"in_stock": ["apples", "oranges"]})", "false"},
      {R"({"$in": ["bananas", "$in_stock"]})", R"({"in_stock": ["bananas", "pears"]})", "true"},
      {R"({"$in": [2, [1, 2.0]]})", "{}", "true"},
      {R"({"$in": [null, [null]]})", "{}", "true"},
      {R"({"$in": [[1], [[1], 2]]})", "{}", "true"},
      {R"({"$in": ["a", "$nope"]})", "{}", "error:40081"},
      {R"({"$in": ["a", "a"]})", "{}", "error:40081"},
  });
}

TEST(SliceTest, DocumentedExamples) {
  RunCases({
      {R"({"$slice": ["$favorites", 3]})", kFavorites, R"(["chocolate", "cake", "butter"])"},
      {R"({"$slice": ["$favorites", -2]})", kFavorites, R"(["butter", "apples"])"},
      {R"({"$slice": ["$favorites", 1, 2]})", kFavorites, R"(["cake", "butter"])"},
      {R"({"$slice": ["$favorites", -20, 5]})", kFavorites, R"(["chocolate", "cake", "butter", "apples"])"},
      {R"({"$slice": ["$favorites", -2, 1]})", kFavorites, R"(["butter"])"},
      {R"({"$slice": ["$favorites", 10, 2]})", kFavorites, "[]"},
      {R"({"$slice": ["$favorites", 0]})", kFavorites, "[]"},
      {R"({"$slice": ["$nope", 1]})", "{}", "null"},
      {R"({"$slice": [[1], null]})", "{}", "null"},
      {R"({"$slice": [[1], 0, null]})", "{}", "null"},
      {R"({"$slice": ["a", 1]})", "{}", "error:28724"},
      {R"({"$slice": [[1], "1"]})", "{}", "error:28725"},
      {R"({"$slice": [[1], 1.5]})", "{}", "error:28726"},
      {R"({"$slice": [[1], 0, "1"]})", "{}", "error:28727"},
      {R"({"$slice": [[1], 0, 1.5]})", "{}", "error:28728"},
      {R"({"$slice": [[1], 0, 0]})", "{}", "error:28729"},
  });
}

TEST(ConcatArraysTest, DocumentedExample) {
  RunCases({
      {R"({"$concatArrays": ["$instock", "$ordered"]})", R"({"instock": ["chairs", "pens"], "ordered": ["stools"]})",
       R"(["chairs", "pens", "stools"])"},
      {R"({"$concatArrays": [["hello", " "], [["world"], "again"]]})", "{}", R"(["hello", " ", ["world"], "again"])"},
      {R"({"$concatArrays": []})", "{}", "[]"},
      {R"({"$concatArrays": ["$instock", "$ordered"]})", R"({"instock": ["chairs"]})", "null"},
      {R"({"$concatArrays": [[1], 2]})", "{}", "error:28664"},
  });
}

TEST(ReverseArrayTest, DocumentedExamples) {
  RunCases({
      {R"({"$reverseArray": "$favorites"})", kFavorites, R"(["apples", "butter", "cake", "chocolate"])"},
      {R"({"$reverseArray": [[1, 2, 3]]})", "{}", "[3, 2, 1]"},
      {R"({"$reverseArray": [[[1, 2], [3]]]})", "{}", "[[3], [1, 2]]"},
      {R"({"$reverseArray": [[]]})", "{}", "[]"},
      {R"({"$reverseArray": "$nope"})", "{}", "null"},
      {R"({"$reverseArray": "a"})", "{}", "error:34435"},
  });
}

TEST(RangeTest, DocumentedExamples) {
  RunCases({
      {R"({"$range": [0, "$distance", 25]})", R"({"city": "San Jose", "distance": 42})", "[0, 25]"},
      {R"({"$range": [0, "$distance", 25]})", R"({"city": "Sacramento", "distance": 88})", "[0, 25, 50, 75]"},
      {R"({"$range": [0, 10, 2]})", "{}", "[0, 2, 4, 6, 8]"},
      {R"({"$range": [10, 0, -2]})", "{}", "[10, 8, 6, 4, 2]"},
      {R"({"$range": [0, 10, -2]})", "{}", "[]"},
      {R"({"$range": [1, 4]})", "{}", "[1, 2, 3]"},
      {R"({"$range": [0.0, 2]})", "{}", "[0, 1]"},
      {R"({"$range": [null, 1]})", "{}", "error:34443"},
      {R"({"$range": [0.5, 1]})", "{}", "error:34444"},
      {R"({"$range": [0, "a"]})", "{}", "error:34445"},
      {R"({"$range": [0, 1.5]})", "{}", "error:34446"},
      {R"({"$range": [0, 1, "a"]})", "{}", "error:34447"},
      {R"({"$range": [0, 1, 1.5]})", "{}", "error:34448"},
      {R"({"$range": [0, 1, 0]})", "{}", "error:34449"},
  });
}

TEST(IsArrayTest, DocumentedExample) {
  const char* e = R"({"$cond": {"if": {"$and": [{"$isArray": "$instock"}, {"$isArray": "$ordered"}]},
                                "then": {"$concatArrays": ["$instock", "$ordered"]},
                                "else": "One or more fields is not an array."}})";
  RunCases({
      {e, R"({"instock": ["chairs"], "ordered": ["desks"]})", R"(["chairs", "desks"])"},
      {e, R"({"instock": "chairs", "ordered": ["desks"]})", R"("One or more fields is not an array.")"},
      {R"({"$isArray": [[1, 2]]})", "{}", "true"},
      {R"({"$isArray": "$nope"})", "{}", "false"},
      {R"({"$isArray": [1, 2]})", "{}", "error:16020"},
  });
}

TEST(IndexOfArrayTest, DocumentedExamples) {
  RunCases({
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": ["one", "two", "three"]})", "-1"},
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": [1, 2, 3]})", "1"},
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": [[1, 2, 3], [3, 4, 5]]})", "-1"},
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": [10, 9, 9, 8, 2]})", "4"},
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": ["a", "b", 2.0]})", "2"},
      {R"({"$indexOfArray": ["$items", 2]})", R"({"items": null})", "null"},
      {R"({"$indexOfArray": ["$items", 2]})", "{}", "null"},
      {R"({"$indexOfArray": [["a", "b", "a"], "a", 1]})", "{}", "2"},
      {R"({"$indexOfArray": [["a", "b", "a"], "a", 1, 2]})", "{}", "-1"},
      {R"({"$indexOfArray": [["a", "b", "a"], "a", 5]})", "{}", "-1"},
      {R"({"$indexOfArray": ["abc", "a"]})", "{}", "error:40090"},
      {R"({"$indexOfArray": [["a"], "a", -1]})", "{}", "error:40097"},
      {R"({"$indexOfArray": [["a"], "a", "x"]})", "{}", "error:40096"},
  });
}

TEST(SetTest, DocumentedExamples) {
  const char* same = R"({"A": ["red", "blue"], "B": ["blue", "red", "blue"]})";
  const char* overlap = R"({"A": ["red", "blue"], "B": ["green", "red"]})";
  RunCases({
      {R"({"$setEquals": ["$A", "$B"]})", same, "true"},
      {R"({"$setEquals": ["$A", "$B"]})", overlap, "false"},
      {R"({"$setEquals": [[1, 2], [2.0, 1], [1, 2, 2]]})", "{}", "true"},
      {R"({"$setIsSubset": ["$A", "$B"]})", same, "true"},
      {R"({"$setIsSubset": ["$A", "$B"]})", overlap, "false"},
      {R"({"$setIsSubset": [[], "$B"]})", overlap, "true"},
      {R"({"$setIntersection": ["$A", "$B"]})", same, R"(["red", "blue"])"},
      {R"({"$setIntersection": ["$A", "$B"]})", overlap, R"(["red"])"},
      {R"({"$setIntersection": []})", "{}", "[]"},
      {R"({"$setUnion": ["$A", "$B"]})", overlap, R"(["red", "blue", "green"])"},
      {R"({"$setUnion": [[1, 1, 2], [2.0, 3]]})", "{}", "[1, 2, 3]"},
      {R"({"$setDifference": ["$B", "$A"]})", overlap, R"(["green"])"},
      {R"({"$setDifference": ["$B", "$A"]})", same, "[]"},
      {R"({"$setUnion": ["$A", null]})", overlap, "null"},
      {R"({"$setIntersection": ["$A", "$nope"]})", overlap, "null"},
      {R"({"$setDifference": ["$A", null]})", overlap, "null"},
      {R"({"$setUnion": ["$A", 1]})", overlap, "error:17043"},
      {R"({"$setIntersection": ["$A", 1]})", overlap, "error:17047"},
      {R"({"$setDifference": [1, "$A"]})", overlap, "error:17048"},
      {R"({"$setDifference": ["$A", 1]})", overlap, "error:17049"},
      {R"({"$setEquals": ["$A", null]})", overlap, "error:17044"},
      {R"({"$setEquals": ["$A"]})", overlap, "error:17045"},
      {R"({"$setIsSubset": [1, "$A"]})", overlap, "error:17046"},
      {R"({"$setIsSubset": ["$A", null]})", overlap, "error:17042"},
  });
}

TEST(SetTest, AllAnyElementsTrue) {
  RunCases({
      {R"({"$allElementsTrue": [[true, 1, "someString"]]})", "{}", "true"},
      {R"({"$allElementsTrue": [[[false]]]})", "{}", "true"},
      {R"({"$allElementsTrue": [[]]})", "{}", "true"},
      {R"({"$allElementsTrue": [[null, false, 0]]})", "{}", "false"},
      {R"({"$anyElementTrue": [[true, false]]})", "{}", "true"},
      {R"({"$anyElementTrue": [[[false]]]})", "{}", "true"},
      {R"({"$anyElementTrue": [[null, false, 0]]})", "{}", "false"},
      {R"({"$anyElementTrue": [[]]})", "{}", "false"},
      {R"({"$allElementsTrue": "$responses"})", R"({"responses": [true, true]})", "true"},
      {R"({"$allElementsTrue": [null]})", "{}", "error:17040"},
      {R"({"$anyElementTrue": "$nope"})", "{}", "error:17041"},
  });
}

TEST(ZipTest, DocumentedExamples) {
  RunCases({
      {R"({"$zip": {"inputs": [{"$arrayElemAt": ["$matrix", 0]}, {"$arrayElemAt": ["$matrix", 1]},
                                {"$arrayElemAt": ["$matrix", 2]}]}})",
       R"({"matrix": [[1, 2], [2, 3], [3, 4]]})", "[[1, 2, 3], [2, 3, 4]]"},
      {R"({"$zip": {"inputs": [[1, 2, 3], ["a"]]}})", "{}", R"([[1, "a"]])"},
      {R"({"$zip": {"inputs": [[1, 2, 3], ["a"]], "useLongestLength": true}})", "{}",
       R"([[1, "a"], [2, null], [3, null]])"},
      {R"({"$zip": {"inputs": [[1, 2, 3], ["a"]], "useLongestLength": true, "defaults": [0, "z"]}})", "{}",
       R"([[1, "a"], [2, "z"], [3, "z"]])"},
      {R"({"$zip": {"inputs": [[1], "$nope"]}})", "{}", "null"},
      {R"({"$zip": 1})", "{}", "error:34460"},
      {R"({"$zip": {"inputs": 1}})", "{}", "error:34461"},
      {R"({"$zip": {"inputs": [[1]], "defaults": 1, "useLongestLength": true}})", "{}", "error:34462"},
      {R"({"$zip": {"inputs": [[1]], "useLongestLength": 1}})", "{}", "error:34463"},
      {R"({"$zip": {"inputs": [[1]], "x": 1}})", "{}", "error:34464"},
      {R"({"$zip": {"inputs": []}})", "{}", "error:34465"},
      {R"({"$zip": {"inputs": [[1]], "defaults": [1]}})", "{}", "error:34466"},
      {R"({"$zip": {"inputs": [[1]], "defaults": [1, 2], "useLongestLength": true}})", "{}", "error:34467"},
      {R"({"$zip": {"inputs": [[1], 1]}})", "{}", "error:34468"},
  });
}

TEST(SortArrayTest, DocumentedExamples) {
  const char* team = R"({"team": [
      {"name": "pat", "age": 30, "address": {"street": "12 Baker St", "city": "London"}},
      {"name": "dallas", "age": 36, "address": {"street": "12 Cowper St", "city": "Palo Alto"}},
      {"name": "charlie", "age": 42, "address": {"street": "12 French St", "city": "New Brunswick"}}]})";
  RunCases({
      {R"({"$map": {"input": {"$sortArray": {"input": "$team", "sortBy": {"name": 1}}}, "in": "$$this.name"}})", team,
       R"(["charlie", "dallas", "pat"])"},
      {R"({"$map": {"input": {"$sortArray": {"input": "$team", "sortBy": {"address.city": -1}}},
                     "in": "$$this.name"}})", team, R"(["dallas", "charlie", "pat"])"},
      {R"({"$map": {"input": {"$sortArray": {"input": "$team", "sortBy": {"age": -1, "name": 1}}},
                     "in": "$$this.age"}})", team, "[42, 36, 30]"},
      {R"({"$sortArray": {"input": [1, 4, 1, 6, 12, 5], "sortBy": 1}})", "{}", "[1, 1, 4, 5, 6, 12]"},
      {R"({"$sortArray": {"input": [1, 4, 1, 6, 12, 5], "sortBy": -1}})", "{}", "[12, 6, 5, 4, 1, 1]"},
      // Mixed types sort in BSON order.
      {R"({"$sortArray": {"input": [20, 4, {"a": "Free"}, 6, 21, 5, "Gratis", {"a": null},
                                     {"a": {"sale": true, "price": 19}}, 10.23, {"a": "On sale"}], "sortBy": 1}})",
       "{}",
       R"([4, 5, 6, 10.23, 20, 21, "Gratis", {"a": null}, {"a": "Free"}, {"a": "On sale"},
           {"a": {"sale": true, "price": 19}}])"},
      {R"({"$sortArray": {"input": "$nope", "sortBy": 1}})", "{}", "null"},
      {R"({"$sortArray": 1})", "{}", "error:2942500"},
      {R"({"$sortArray": {"input": [], "sortBy": 1, "x": 1}})", "{}", "error:2942501"},
      {R"({"$sortArray": {"sortBy": 1}})", "{}", "error:2942502"},
      {R"({"$sortArray": {"input": []}})", "{}", "error:2942503"},
      {R"({"$sortArray": {"input": 1, "sortBy": 1}})", "{}", "error:2942504"},
      {R"({"$sortArray": {"input": [], "sortBy": {"a": 2}}})", "{}", "error:2942505"},
      {R"({"$sortArray": {"input": [], "sortBy": 0}})", "{}", "error:2942506"},
      {R"({"$sortArray": {"input": [], "sortBy": "a"}})", "{}", "error:2942507"},
  });
}

TEST(NArrayTest, FirstLastMaxMinN) {
  RunCases({
      {R"({"$firstN": {"n": 2, "input": [1, 2, 3]}})", "{}", "[1, 2]"},
      {R"({"$lastN": {"n": 2, "input": [1, 2, 3]}})", "{}", "[2, 3]"},
      {R"({"$firstN": {"n": 5, "input": [1, 2, 3]}})", "{}", "[1, 2, 3]"},
      {R"({"$maxN": {"n": 2, "input": [3, null, 1, 5]}})", "{}", "[5, 3]"},
      {R"({"$minN": {"n": 2, "input": [3, null, 1, 5]}})", "{}", "[1, 3]"},
      {R"({"$firstN": {"n": 0, "input": [1]}})", "{}", "error:5787908"},
      {R"({"$firstN": {"input": [1]}})", "{}", "error:5787906"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
