#include "engine/projection/sort.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace projection {
namespace {

using ::gatedb::test::StatusIs;

// Stable-sorts `docs` by `spec_json` and returns their _id values (int32)
// in the resulting order.
std::vector<int> SortIds(const std::string& spec_json, const std::vector<std::string>& docs) {
  Document spec = test::Json(spec_json);
  auto sort = SortSpec::Parse(spec.bson());
  EXPECT_OK(sort);
  if (!sort.ok()) return {};
  std::vector<Document> parsed;
  for (const std::string& d : docs) parsed.push_back(test::Json(d));
  std::vector<std::pair<SortKey, int>> rows;
  for (const Document& d : parsed) {
    SortKey key;
    (*sort)->ExtractKey(d.bson(), &key);
    EXPECT_EQ(key.size(), (*sort)->num_fields());
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, d.bson(), "_id"));
    rows.emplace_back(std::move(key), bson_iter_int32(&it));
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
    return (*sort)->CompareKeys(x.first, y.first) < 0;
  });
  std::vector<int> ids;
  for (const auto& row : rows) ids.push_back(row.second);
  return ids;
}

struct SortCase {
  const char* name;
  const char* spec;
  std::vector<std::string> docs;
  std::vector<int> expected;
};

void RunCases(const std::vector<SortCase>& cases) {
  for (const SortCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": " + c.spec);
    EXPECT_EQ(SortIds(c.spec, c.docs), c.expected);
  }
}

// One document per BSON type bracket, in input order _id 1..15.
const std::vector<std::string> kMixedTypes = {
    R"({"_id": 1, "a": "b"})",
    R"({"_id": 2, "a": {"x": 1}})",
    R"({"_id": 3, "a": 5})",
    R"({"_id": 4, "a": null})",
    R"({"_id": 5})",
    R"({"_id": 6, "a": [[1]]})",
    R"({"_id": 7, "a": {"$binary": {"base64": "AA==", "subType": "00"}}})",
    R"({"_id": 8, "a": {"$oid": "000000000000000000000000"}})",
    R"({"_id": 9, "a": true})",
    R"({"_id": 10, "a": {"$date": {"$numberLong": "0"}}})",
    R"({"_id": 11, "a": {"$minKey": 1}})",
    R"({"_id": 12, "a": {"$maxKey": 1}})",
    R"({"_id": 13, "a": []})",
    R"({"_id": 14, "a": {"$regularExpression": {"pattern": "x", "options": ""}}})",
    R"({"_id": 15, "a": {"$timestamp": {"t": 1, "i": 1}}})",
};

TEST(SortTest, SingleKey) {
  RunCases({
      {"ascending", R"({"a": 1})",
       {R"({"_id": 1, "a": 3})", R"({"_id": 2, "a": 1})", R"({"_id": 3, "a": 2})"},
       {2, 3, 1}},
      {"descending", R"({"a": -1})",
       {R"({"_id": 1, "a": 3})", R"({"_id": 2, "a": 1})", R"({"_id": 3, "a": 2})"},
       {1, 3, 2}},
      {"numbers compare by value across types", R"({"a": 1})",
       {R"({"_id": 1, "a": 1})", R"({"_id": 2, "a": 1.5})", R"({"_id": 3, "a": {"$numberLong": "2"}})",
        R"({"_id": 4, "a": {"$numberDecimal": "0.5"}})", R"({"_id": 5, "a": -1.0})"},
       {5, 4, 1, 2, 3}},
      {"equal numbers of different types tie", R"({"a": 1})",
       {R"({"_id": 1, "a": 2.0})", R"({"_id": 2, "a": 1})", R"({"_id": 3, "a": {"$numberLong": "2"}})",
        R"({"_id": 4, "a": 2})"},
       {2, 1, 3, 4}},
      {"strings bytewise", R"({"a": 1})",
       {R"({"_id": 1, "a": "b"})", R"({"_id": 2, "a": "B"})", R"({"_id": 3, "a": "ab"})",
        R"({"_id": 4, "a": "a"})"},
       {2, 4, 3, 1}},
      {"mixed types ascending", R"({"a": 1})", kMixedTypes,
       {11, 13, 4, 5, 3, 1, 2, 6, 7, 8, 9, 10, 15, 14, 12}},
      {"mixed types descending", R"({"a": -1})", kMixedTypes,
       {12, 14, 15, 10, 9, 8, 7, 6, 2, 1, 3, 4, 5, 13, 11}},
  });
}

TEST(SortTest, MissingAndNull) {
  RunCases({
      {"missing ties with null, ascending", R"({"a": 1})",
       {R"({"_id": 1, "a": null})", R"({"_id": 2})", R"({"_id": 3, "a": 0})", R"({"_id": 4})"},
       {1, 2, 4, 3}},
      {"missing ties with null, descending", R"({"a": -1})",
       {R"({"_id": 1, "a": null})", R"({"_id": 2})", R"({"_id": 3, "a": 0})", R"({"_id": 4})"},
       {3, 1, 2, 4}},
      {"path through a scalar or a doc without the field is null", R"({"a.b": 1})",
       {R"({"_id": 1, "a": {"b": 2}})", R"({"_id": 2, "a": {"b": 1}})", R"({"_id": 3, "a": 5})",
        R"({"_id": 4, "a": {"c": 1}})", R"({"_id": 5, "a": {"b": null}})"},
       {3, 4, 5, 2, 1}},
      {"MinKey sorts below null", R"({"a": 1})",
       {R"({"_id": 1})", R"({"_id": 2, "a": {"$minKey": 1}})"},
       {2, 1}},
  });
}

TEST(SortTest, Arrays) {
  RunCases({
      {"ascending uses the smallest element", R"({"a": 1})",
       {R"({"_id": 1, "a": [1, 5]})", R"({"_id": 2, "a": [2, 3]})", R"({"_id": 3, "a": 4})"},
       {1, 2, 3}},
      {"descending uses the largest element", R"({"a": -1})",
       {R"({"_id": 1, "a": [1, 5]})", R"({"_id": 2, "a": [2, 3]})", R"({"_id": 3, "a": 4})"},
       {1, 3, 2}},
      {"elements of mixed types, ascending", R"({"a": 1})",
       {R"({"_id": 1, "a": [1, "x"]})", R"({"_id": 2, "a": 2})", R"({"_id": 3, "a": "a"})"},
       {1, 2, 3}},
      {"elements of mixed types, descending", R"({"a": -1})",
       {R"({"_id": 1, "a": [1, "x"]})", R"({"_id": 2, "a": 2})", R"({"_id": 3, "a": "a"})"},
       {1, 3, 2}},
      {"empty array sorts below null, ascending", R"({"a": 1})",
       {R"({"_id": 1, "a": null})", R"({"_id": 2, "a": []})", R"({"_id": 3, "a": [null]})",
        R"({"_id": 4, "a": 1})"},
       {2, 1, 3, 4}},
      {"empty array sorts below null, descending", R"({"a": -1})",
       {R"({"_id": 1, "a": null})", R"({"_id": 2, "a": []})", R"({"_id": 3, "a": [null]})",
        R"({"_id": 4, "a": 1})"},
       {4, 1, 3, 2}},
      {"nested array is one value, ascending", R"({"a": 1})",
       {R"({"_id": 1, "a": [[1, 2], 3]})", R"({"_id": 2, "a": 2})"},
       {2, 1}},
      {"nested array is one value, descending", R"({"a": -1})",
       {R"({"_id": 1, "a": [[1, 2], 3]})", R"({"_id": 2, "a": 2})"},
       {1, 2}},
      {"through an array of documents, ascending", R"({"a.b": 1})",
       {R"({"_id": 1, "a": [{"b": 5}, {"b": 1}]})", R"({"_id": 2, "a": [{"b": 3}]})",
        R"({"_id": 3, "a": [{"b": 2}, {"c": 1}]})"},
       {3, 1, 2}},
      {"through an array of documents, descending", R"({"a.b": -1})",
       {R"({"_id": 1, "a": [{"b": 5}, {"b": 1}]})", R"({"_id": 2, "a": [{"b": 3}]})",
        R"({"_id": 3, "a": [{"b": 2}, {"c": 1}]})"},
       {1, 2, 3}},
      {"arrays at two levels", R"({"a.b": 1})",
       {R"({"_id": 1, "a": [{"b": [7, 3]}, {"b": 4}]})", R"({"_id": 2, "a": [{"b": [2, 9]}]})"},
       {2, 1}},
      {"scalar element on a longer path is null", R"({"a.b": 1})",
       {R"({"_id": 1, "a": [{"b": 1}]})", R"({"_id": 2, "a": [5, {"b": 2}]})"},
       {2, 1}},
      {"empty array on a longer path is null", R"({"a.b": 1})",
       {R"({"_id": 1, "a": []})", R"({"_id": 2, "a": [{"b": []}]})", R"({"_id": 3, "a": {"b": 0}})"},
       {2, 1, 3}},
      {"positional component", R"({"a.1": 1})",
       {R"({"_id": 1, "a": [9, 1]})", R"({"_id": 2, "a": [0, 5]})", R"({"_id": 3, "a": [7]})"},
       {3, 1, 2}},
      {"positional component then field", R"({"a.0.b": -1})",
       {R"({"_id": 1, "a": [{"b": 1}, {"b": 9}]})", R"({"_id": 2, "a": [{"b": 2}]})"},
       {2, 1}},
      {"numeric field of a document", R"({"a.0": 1})",
       {R"({"_id": 1, "a": {"0": 5}})", R"({"_id": 2, "a": {"0": 4}})"},
       {2, 1}},
  });
}

TEST(SortTest, MultipleKeys) {
  RunCases({
      {"ascending then descending", R"({"a": 1, "b": -1})",
       {R"({"_id": 1, "a": 1, "b": 1})", R"({"_id": 2, "a": 1, "b": 2})", R"({"_id": 3, "a": 0, "b": 0})",
        R"({"_id": 4, "a": 1.0, "b": 2})"},
       {3, 2, 4, 1}},
      {"second key breaks ties only", R"({"a": -1, "b": 1})",
       {R"({"_id": 1, "a": 1, "b": 9})", R"({"_id": 2, "a": 2, "b": 0})", R"({"_id": 3, "a": 1, "b": 3})"},
       {2, 3, 1}},
      {"dotted and missing keys", R"({"x.y": 1, "z": 1})",
       {R"({"_id": 1, "x": {"y": 1}, "z": 2})", R"({"_id": 2, "z": 1})", R"({"_id": 3, "x": {"y": 1}, "z": 1})",
        R"({"_id": 4, "x": null})"},
       {4, 2, 3, 1}},
      {"empty spec keeps the input order", R"({})",
       {R"({"_id": 3})", R"({"_id": 1})", R"({"_id": 2})"},
       {3, 1, 2}},
  });
}

TEST(SortTest, DirectionValues) {
  const char* docs[] = {R"({"_id": 1, "a": 1})", R"({"_id": 2, "a": 2})"};
  struct Case {
    const char* spec;
    bool ascending;
  } cases[] = {
      {R"({"a": 1})", true},
      {R"({"a": -1})", false},
      {R"({"a": 1.0})", true},
      {R"({"a": 1.5})", true},
      {R"({"a": -1.9})", false},
      {R"({"a": {"$numberLong": "-1"}})", false},
      {R"({"a": {"$numberDecimal": "1"}})", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    EXPECT_EQ(SortIds(c.spec, {docs[0], docs[1]}),
              (c.ascending ? std::vector<int>{1, 2} : std::vector<int>{2, 1}));
  }
}

TEST(SortTest, ParseErrors) {
  const std::string kOrdering =
      "$sort key ordering must be 1 (for ascending) or -1 (for descending)";
  struct Case {
    const char* spec;
    std::string message;
  } cases[] = {
      {R"({"a": 0})", kOrdering},
      {R"({"a": 0.5})", kOrdering},
      {R"({"a": 2})", kOrdering},
      {R"({"a": -2.5})", kOrdering},
      {R"({"a": {"$numberDouble": "NaN"}})", kOrdering},
      {R"({"a": "1"})", kOrdering},
      {R"({"a": true})", kOrdering},
      {R"({"a": null})", kOrdering},
      {R"({"a": [1]})", kOrdering},
      {R"({"b": 1, "a": "asc"})", kOrdering},
      {R"({"a": {"$meta": "textScore"}})", "$meta sort is not supported"},
      {R"({"a": {"x": 1}})", "$meta is the only expression supported by $sort right now"},
      {R"({"": 1})", "FieldPath cannot be constructed with empty string"},
      {R"({"a..b": 1})", "FieldPath field names may not be empty strings."},
      {R"({"$natural": 1})",
       "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
      {R"({"a": 1, "b": 1, "a": -1})", "$sort key must not contain duplicate keys (duplicate: 'a')"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Document spec = test::Json(c.spec);
    auto sort = SortSpec::Parse(spec.bson());
    // MongoDB: 15974 for a non-numeric ordering, 15975 for a number other
    // than 1 or -1; BadValue for the rest.
    ErrorCode want = ErrorCode::kBadValue;
    if (std::string(c.message) == kOrdering) {
      bson_iter_t it;
      bson_iter_init(&it, spec.bson());
      while (bson_iter_next(&it)) {
        if (BSON_ITER_HOLDS_NUMBER(&it) && (bson_iter_as_double(&it) == 1 || bson_iter_as_double(&it) == -1)) continue;
        want = BSON_ITER_HOLDS_NUMBER(&it) ? ErrorCode::kLocation15975 : ErrorCode::kLocation15974;
        break;
      }
    }
    EXPECT_THAT(sort, StatusIs(want));
    EXPECT_EQ(sort.status().reason(), c.message);
  }
}

TEST(SortTest, KeysOwnTheirValues) {
  Document spec = test::Json(R"({"s": 1, "d": -1})");
  auto sort = SortSpec::Parse(spec.bson());
  ASSERT_OK(sort);
  SortKey key;
  {
    Document doc = test::Json(R"({"s": ["zz", "abc"], "d": {"x": "y"}})");
    (*sort)->ExtractKey(doc.bson(), &key);
  }  // the document is gone; the key is not
  ASSERT_EQ(key.size(), 2u);
  ASSERT_EQ(key.value(0).value_type, BSON_TYPE_UTF8);
  EXPECT_EQ(std::string(key.value(0).value.v_utf8.str, key.value(0).value.v_utf8.len), "abc");
  EXPECT_EQ(key.value(1).value_type, BSON_TYPE_DOCUMENT);

  SortKey copy = key;
  EXPECT_EQ((*sort)->CompareKeys(copy, key), 0);
  SortKey assigned;
  assigned = copy;
  EXPECT_EQ((*sort)->CompareKeys(assigned, key), 0);
  SortKey moved = std::move(copy);
  EXPECT_EQ((*sort)->CompareKeys(moved, key), 0);
  EXPECT_EQ(std::string(moved.value(0).value.v_utf8.str), "abc");

  // Re-extracting into a used key replaces it.
  Document other = test::Json(R"({"s": "a"})");
  (*sort)->ExtractKey(other.bson(), &assigned);
  EXPECT_LT((*sort)->CompareKeys(assigned, key), 0);
  EXPECT_EQ(assigned.value(1).value_type, BSON_TYPE_NULL);
}

TEST(SortTest, CompareDocuments) {
  Document spec = test::Json(R"({"a": -1})");
  auto sort = SortSpec::Parse(spec.bson());
  ASSERT_OK(sort);
  Document x = test::Json(R"({"a": [1, 10]})"), y = test::Json(R"({"a": 5})");
  EXPECT_LT((*sort)->Compare(x.bson(), y.bson()), 0);
  EXPECT_GT((*sort)->Compare(y.bson(), x.bson()), 0);
  EXPECT_EQ((*sort)->Compare(x.bson(), x.bson()), 0);

  Document empty_spec = test::Json("{}");
  auto none = SortSpec::Parse(empty_spec.bson());
  ASSERT_OK(none);
  EXPECT_TRUE((*none)->empty());
  EXPECT_EQ((*none)->Compare(x.bson(), y.bson()), 0);
}

}  // namespace
}  // namespace projection
}  // namespace gatedb
