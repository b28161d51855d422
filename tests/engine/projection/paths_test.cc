#include "engine/projection/paths.h"

#include <string>
#include <utility>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace projection {
namespace {

using ::gatedb::test::StatusIs;

std::string Canon(const std::string& json) { return test::Json(json).ToJson(); }

// {"v": [values...]} as relaxed Extended JSON.
std::string ValuesJson(const std::vector<BsonValue>& values) {
  bson_t doc = BSON_INITIALIZER;
  bson_t array;
  bson_append_array_begin(&doc, "v", 1, &array);
  char buf[16];
  for (uint32_t i = 0; i < values.size(); ++i) {
    const char* key;
    size_t len = bson_uint32_to_string(i, &key, buf, sizeof(buf));
    bson_append_value(&array, key, static_cast<int>(len), &values[i]);
  }
  bson_append_array_end(&doc, &array);
  std::string json = test::ToJson(&doc);
  bson_destroy(&doc);
  return json;
}

std::string SetJson(const DistinctSet& set) {
  bson_t doc = BSON_INITIALIZER;
  bson_t array;
  bson_append_array_begin(&doc, "v", 1, &array);
  set.AppendToArray(&array);
  bson_append_array_end(&doc, &array);
  std::string json = test::ToJson(&doc);
  bson_destroy(&doc);
  return json;
}

TEST(PathsTest, SplitDottedPath) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(SplitDottedPath("a"), V({"a"}));
  EXPECT_EQ(SplitDottedPath("a.b.c"), V({"a", "b", "c"}));
  EXPECT_EQ(SplitDottedPath("a..b"), V({"a", "", "b"}));
  EXPECT_EQ(SplitDottedPath(""), V({""}));
  EXPECT_EQ(SplitDottedPath("a."), V({"a", ""}));
}

TEST(PathsTest, IsPositionalComponent) {
  EXPECT_TRUE(IsPositionalComponent("0"));
  EXPECT_TRUE(IsPositionalComponent("12"));
  EXPECT_TRUE(IsPositionalComponent("01"));
  EXPECT_FALSE(IsPositionalComponent(""));
  EXPECT_FALSE(IsPositionalComponent("1a"));
  EXPECT_FALSE(IsPositionalComponent("-1"));
}

TEST(PathsTest, ValidateFieldPath) {
  EXPECT_OK(ValidateFieldPath("a"));
  EXPECT_OK(ValidateFieldPath("a.b.0"));
  EXPECT_OK(ValidateFieldPath("a$.b"));
  struct Case {
    const char* path;
    const char* message;
  } cases[] = {
      {"", "FieldPath cannot be constructed with empty string"},
      {"a..b", "FieldPath field names may not be empty strings."},
      {".a", "FieldPath field names may not be empty strings."},
      {"a.", "FieldPath field names may not be empty strings."},
      {"$a", "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
      {"a.$b", "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    Status s = ValidateFieldPath(c.path);
    EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
    EXPECT_EQ(s.reason(), c.message);
  }
}

TEST(PathsTest, CollectDistinctValues) {
  struct Case {
    const char* name;
    const char* doc;
    const char* path;
    const char* expected;  // {"v": [...]}
  } cases[] = {
      {"top-level scalar", R"({"a": 1})", "a", R"({"v": [1]})"},
      {"missing", R"({"b": 1})", "a", R"({"v": []})"},
      {"null is a value", R"({"a": null})", "a", R"({"v": [null]})"},
      {"array at the leaf gives its elements", R"({"a": [1, "x", [3, 4], {"b": 1}]})", "a",
       R"({"v": [1, "x", [3, 4], {"b": 1}]})"},
      {"duplicates are kept", R"({"a": [1, 1, 1.0]})", "a", R"({"v": [1, 1, 1.0]})"},
      {"empty array gives nothing", R"({"a": []})", "a", R"({"v": []})"},
      {"document at the leaf", R"({"a": {"b": 1}})", "a", R"({"v": [{"b": 1}]})"},
      {"embedded", R"({"a": {"b": 5}})", "a.b", R"({"v": [5]})"},
      {"embedded missing", R"({"a": {"c": 5}})", "a.b", R"({"v": []})"},
      {"through a scalar", R"({"a": 5})", "a.b", R"({"v": []})"},
      {"through null", R"({"a": null})", "a.b", R"({"v": []})"},
      {"through an array of documents",
       R"({"a": [{"b": 1}, {"b": [2, 3]}, {"c": 1}, 4, [{"b": 9}], {"b": null}]})", "a.b",
       R"({"v": [1, 2, 3, null]})"},
      {"through arrays at two levels",
       R"({"a": [{"b": [{"c": 1}, {"c": 2}, 7]}, {"b": {"c": [3]}}]})", "a.b.c",
       R"({"v": [1, 2, 3]})"},
      {"positional element", R"({"a": [10, 20]})", "a.0", R"({"v": [10]})"},
      {"positional then field", R"({"a": [{"b": 1}, {"b": 2}]})", "a.1.b", R"({"v": [2]})"},
      {"positional out of range", R"({"a": [{"b": 1}]})", "a.5", R"({"v": []})"},
      {"positional does not also traverse", R"({"a": [{"0": 5}]})", "a.0",
       R"({"v": [{"0": 5}]})"},
      {"positional array element expands", R"({"a": [[1, 2], [3]]})", "a.0", R"({"v": [1, 2]})"},
      {"numeric field of a document", R"({"a": {"0": 7}})", "a.0", R"({"v": [7]})"},
      {"values of every type",
       R"({"a": [{"$oid": "000000000000000000000001"}, {"$date": {"$numberLong": "5"}}, true]})",
       "a",
       R"({"v": [{"$oid": "000000000000000000000001"}, {"$date": {"$numberLong": "5"}}, true]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": " + c.path + " in " + c.doc);
    Document doc = test::Json(c.doc);
    std::vector<BsonValue> values;
    CollectDistinctValues(doc.bson(), c.path, &values);
    EXPECT_EQ(ValuesJson(values), Canon(c.expected));
  }
}

TEST(PathsTest, CollectDistinctValuesAppends) {
  Document a = test::Json(R"({"x": 1})"), b = test::Json(R"({"x": [2, 3]})");
  std::vector<BsonValue> values;
  CollectDistinctValues(a.bson(), "x", &values);
  CollectDistinctValues(b.bson(), "x", &values);
  EXPECT_EQ(ValuesJson(values), Canon(R"({"v": [1, 2, 3]})"));
}

TEST(PathsTest, VisitPathValuesForSortKeys) {
  class Collector : public PathValueVisitor {
   public:
    void Visit(const bson_value_t& value) override { values.push_back(value); }
    std::vector<BsonValue> values;
  };
  struct Case {
    const char* doc;
    const char* path;
    const char* expected;
  } cases[] = {
      {R"({"b": 1})", "a", R"({"v": [null]})"},
      {R"({"a": []})", "a", R"({"v": [{"$undefined": true}]})"},
      {R"({"a": []})", "a.b", R"({"v": [null]})"},
      {R"({"a": 5})", "a.b", R"({"v": [null]})"},
      {R"({"a": [{"b": 1}, {"c": 1}, 2, [3]]})", "a.b", R"({"v": [1, null, null, null]})"},
      {R"({"a": [7]})", "a.3", R"({"v": [null]})"},
      {R"({"a": [1, [2]]})", "a", R"({"v": [1, [2]]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.path) + " in " + c.doc);
    Document doc = test::Json(c.doc);
    Collector collector;
    VisitPathValues(doc.bson(), SplitDottedPath(c.path), MissingPolicy::kNullAndUndefined,
                    &collector);
    EXPECT_EQ(ValuesJson(collector.values), Canon(c.expected));
  }
}

TEST(DistinctSetTest, DedupesNumbersByValueKeepingFirstType) {
  DistinctSet set;
  for (const char* json : {R"({"a": 1})", R"({"a": 1.0})", R"({"a": {"$numberLong": "1"}})",
                           R"({"a": {"$numberDecimal": "1.00"}})"}) {
    Document doc = test::Json(json);
    set.AddFromDocument(doc.bson(), "a");
  }
  EXPECT_EQ(set.size(), 1u);
  EXPECT_EQ(SetJson(set), Canon(R"({"v": [1]})"));
  EXPECT_EQ(set.begin()->value_type, BSON_TYPE_INT32);

  DistinctSet doubles_first;
  for (const char* json : {R"({"a": 2.0})", R"({"a": 2})"}) {
    Document doc = test::Json(json);
    doubles_first.AddFromDocument(doc.bson(), "a");
  }
  EXPECT_EQ(SetJson(doubles_first), Canon(R"({"v": [2.0]})"));
  EXPECT_EQ(doubles_first.begin()->value_type, BSON_TYPE_DOUBLE);
}

TEST(DistinctSetTest, AddReportsWhetherNew) {
  Document doc = test::Json(R"({"a": "x", "b": "x", "c": "y"})");
  bson_iter_t it;
  DistinctSet set;
  ASSERT_TRUE(bson_iter_init_find(&it, doc.bson(), "a"));
  EXPECT_TRUE(set.Add(*bson_iter_value(&it)));
  ASSERT_TRUE(bson_iter_init_find(&it, doc.bson(), "b"));
  EXPECT_FALSE(set.Add(*bson_iter_value(&it)));
  ASSERT_TRUE(bson_iter_init_find(&it, doc.bson(), "c"));
  EXPECT_TRUE(set.Add(*bson_iter_value(&it)));
  EXPECT_EQ(set.size(), 2u);
}

TEST(DistinctSetTest, IteratesInAscendingOrderAcrossTypes) {
  DistinctSet set;
  const char* docs[] = {
      R"({"a": "b"})",          R"({"a": 3})",
      R"({"a": null})",         R"({"a": {"x": 1}})",
      R"({"a": [[1]]})",        R"({"a": "a"})",
      R"({"a": [1, 2, 3, 2]})", R"({"a": true})",
      R"({"b": 1})",            R"({"a": {"$minKey": 1}})",
      R"({"a": [{"x": 1.0}]})", R"({"a": {"$date": {"$numberLong": "0"}}})",
      R"({"a": false})",        R"({"a": -0.5})",
  };
  for (const char* json : docs) {
    Document doc = test::Json(json);
    set.AddFromDocument(doc.bson(), "a");
  }
  EXPECT_EQ(SetJson(set), Canon(R"({"v": [{"$minKey": 1}, null, -0.5, 1, 2, 3, "a", "b",
                                          {"x": 1}, [1], false, true,
                                          {"$date": {"$numberLong": "0"}}]})"));
}

TEST(DistinctSetTest, ValuesOutliveTheirDocuments) {
  DistinctSet set;
  {
    Document doc = test::Json(R"({"a": ["some string", {"nested": ["doc"]}]})");
    set.AddFromDocument(doc.bson(), "a");
  }
  EXPECT_EQ(SetJson(set), Canon(R"({"v": ["some string", {"nested": ["doc"]}]})"));
}

TEST(DistinctSetTest, ByteSizeMatchesTheAppendedArray) {
  DistinctSet set;
  Document doc = test::Json(R"({"a": [1, 2.5, {"$numberLong": "7"}, "str", {"x": [1]}, [2], null,
      true, {"$oid": "000000000000000000000001"}, {"$date": {"$numberLong": "1"}},
      {"$numberDecimal": "1.5"}, {"$binary": {"base64": "AAEC", "subType": "00"}},
      {"$binary": {"base64": "AAEC", "subType": "02"}},
      {"$regularExpression": {"pattern": "ab", "options": "i"}},
      {"$timestamp": {"t": 1, "i": 2}}, {"$minKey": 1}, {"$maxKey": 1},
      {"$undefined": true}, 4, 5, 6, 7.5, 8, 9, 10, 11]})");
  set.AddFromDocument(doc.bson(), "a");

  // Types the JSON parser does not take inside an array.
  bson_t* extra = bson_new();
  BSON_APPEND_CODE(extra, "code", "f()");
  BSON_APPEND_SYMBOL(extra, "symbol", "sym");
  Document scope = test::Json(R"({"x": 1})");
  BSON_APPEND_CODE_WITH_SCOPE(extra, "cws", "g()", scope.bson());
  bson_oid_t oid;
  bson_oid_init_from_string(&oid, "000000000000000000000002");
  bson_append_dbpointer(extra, "dbp", -1, "db.coll", &oid);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, extra));
  while (bson_iter_next(&it)) EXPECT_TRUE(set.Add(*bson_iter_value(&it)));
  bson_destroy(extra);

  bson_t array = BSON_INITIALIZER;
  set.AppendToArray(&array);
  EXPECT_EQ(set.size(), 30u);
  EXPECT_EQ(set.ByteSize(), static_cast<size_t>(array.len) - 5);
  bson_destroy(&array);
  EXPECT_EQ(DistinctSet().ByteSize(), 0u);
}

TEST(DistinctSetTest, Move) {
  DistinctSet set;
  Document doc = test::Json(R"({"a": ["x", "y"]})");
  set.AddFromDocument(doc.bson(), "a");
  DistinctSet moved(std::move(set));
  EXPECT_EQ(moved.size(), 2u);
  EXPECT_TRUE(set.empty());  // NOLINT(bugprone-use-after-move): documented state
  DistinctSet assigned;
  Document other = test::Json(R"({"a": 1})");
  assigned.AddFromDocument(other.bson(), "a");
  assigned = std::move(moved);
  EXPECT_EQ(SetJson(assigned), Canon(R"({"v": ["x", "y"]})"));
  EXPECT_EQ(assigned.ByteSize(), 2u * (1 + 2 + 4 + 1 + 1));
}

}  // namespace
}  // namespace projection
}  // namespace gatedb
