#include "engine/projection/projection.h"

#include <string>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace projection {
namespace {

using ::gatedb::test::StatusIs;

// Relaxed Extended JSON of `json` as libbson prints it, so that expected
// values can be written compactly and still compare types exactly.
std::string Canon(const std::string& json) { return test::Json(json).ToJson(); }

std::string Project(const std::string& spec_json, const std::string& doc_json) {
  Document spec = test::Json(spec_json);
  StatusOr<std::unique_ptr<Projection>> proj = Projection::Parse(spec.bson());
  EXPECT_OK(proj);
  if (!proj.ok()) return "<" + proj.status().ToString() + ">";
  Document doc = test::Json(doc_json);
  bson_t out = BSON_INITIALIZER;
  (*proj)->Apply(doc.bson(), &out);
  std::string json = test::ToJson(&out);
  bson_destroy(&out);
  return json;
}

struct ApplyCase {
  const char* name;
  const char* spec;
  const char* doc;
  const char* expected;
};

void RunCases(const ApplyCase* cases, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const ApplyCase& c = cases[i];
    SCOPED_TRACE(std::string(c.name) + ": spec " + c.spec + " on " + c.doc);
    EXPECT_EQ(Project(c.spec, c.doc), Canon(c.expected));
  }
}

TEST(ProjectionTest, InclusionAndExclusionAtTopLevel) {
  const ApplyCase cases[] = {
      {"empty spec is identity", R"({})", R"({"_id": 1, "a": 1, "b": {"c": [1, 2]}})",
       R"({"_id": 1, "a": 1, "b": {"c": [1, 2]}})"},
      {"include one", R"({"a": 1})", R"({"_id": 1, "a": 1, "b": 2})", R"({"_id": 1, "a": 1})"},
      {"include with true", R"({"a": true})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"_id": 1, "a": 1})"},
      {"any non-zero number includes",
       R"({"a": 5, "b": -1.5, "c": {"$numberLong": "2"}, "d": {"$numberDecimal": "0.1"}})",
       R"({"_id": 1, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5})",
       R"({"_id": 1, "a": 1, "b": 2, "c": 3, "d": 4})"},
      {"NaN includes", R"({"a": {"$numberDouble": "NaN"}})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"_id": 1, "a": 1})"},
      {"order follows the document", R"({"c": 1, "a": 1})",
       R"({"_id": 1, "a": 1, "b": 2, "c": 3})", R"({"_id": 1, "a": 1, "c": 3})"},
      {"_id keeps its document position", R"({"b": 1})", R"({"a": 1, "_id": 2, "b": 3})",
       R"({"_id": 2, "b": 3})"},
      {"_id excluded from an inclusion", R"({"_id": 0, "a": 1})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"a": 1})"},
      {"_id excluded after the inclusion", R"({"a": 1, "_id": false})",
       R"({"_id": 1, "a": 1, "b": 2})", R"({"a": 1})"},
      {"only _id: 1 is an inclusion", R"({"_id": 1})", R"({"_id": 1, "a": 1})", R"({"_id": 1})"},
      {"only _id: 0 is an exclusion", R"({"_id": 0})", R"({"_id": 1, "a": 1})", R"({"a": 1})"},
      {"included field missing", R"({"x": 1})", R"({"_id": 1, "a": 1})", R"({"_id": 1})"},
      {"included field of any type", R"({"a": 1})",
       R"({"_id": 1, "a": [1, {"b": 2}], "z": 0})", R"({"_id": 1, "a": [1, {"b": 2}]})"},
      {"exclude one", R"({"a": 0})", R"({"_id": 1, "a": 1, "b": 2})", R"({"_id": 1, "b": 2})"},
      {"exclude with false", R"({"a": false})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"_id": 1, "b": 2})"},
      {"exclude with 0.0 and decimal zero", R"({"a": 0.0, "b": {"$numberDecimal": "-0.00"}})",
       R"({"_id": 1, "a": 1, "b": 2, "c": 3})", R"({"_id": 1, "c": 3})"},
      {"exclude with _id: 0", R"({"_id": 0, "a": 0})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"b": 2})"},
      {"exclusion with _id: 1", R"({"_id": 1, "a": 0})", R"({"_id": 1, "a": 1, "b": 2})",
       R"({"_id": 1, "b": 2})"},
      {"excluded field missing", R"({"x": 0})", R"({"_id": 1, "a": 1})", R"({"_id": 1, "a": 1})"},
      {"no _id in the document", R"({"a": 1})", R"({"a": 1, "b": 2})", R"({"a": 1})"},
  };
  RunCases(cases, sizeof(cases) / sizeof(cases[0]));
}

TEST(ProjectionTest, DottedPaths) {
  const ApplyCase cases[] = {
      {"include in embedded doc", R"({"a.b": 1})", R"({"_id": 1, "a": {"b": 1, "c": 2}, "d": 3})",
       R"({"_id": 1, "a": {"b": 1}})"},
      {"include nothing in embedded doc", R"({"a.b": 1})", R"({"_id": 1, "a": {"c": 2}})",
       R"({"_id": 1, "a": {}})"},
      {"include through a scalar", R"({"a.b": 1})", R"({"_id": 1, "a": 5})", R"({"_id": 1})"},
      {"include through null", R"({"a.b": 1})", R"({"_id": 1, "a": null})", R"({"_id": 1})"},
      {"include through array of docs", R"({"a.b": 1})",
       R"({"_id": 1, "a": [{"b": 1, "c": 1}, {"c": 2}, 3, {"b": [1, 2]}, "s"]})",
       R"({"_id": 1, "a": [{"b": 1}, {}, {"b": [1, 2]}]})"},
      {"include through nested arrays", R"({"a.b": 1})",
       R"({"_id": 1, "a": [[{"b": 1, "c": 2}, 5], 6]})", R"({"_id": 1, "a": [[{"b": 1}]]})"},
      {"include through empty array", R"({"a.b": 1})", R"({"_id": 1, "a": []})",
       R"({"_id": 1, "a": []})"},
      {"include through array of scalars", R"({"a.b": 1})", R"({"_id": 1, "a": [1, 2]})",
       R"({"_id": 1, "a": []})"},
      {"two paths under one prefix keep document order", R"({"a.b": 1, "a.c": 1})",
       R"({"_id": 1, "a": {"c": 1, "d": 2, "b": 3}})", R"({"_id": 1, "a": {"c": 1, "b": 3}})"},
      {"three levels", R"({"a.b.c": 1})", R"({"_id": 1, "a": {"b": {"c": 1, "d": 2}, "e": 3}})",
       R"({"_id": 1, "a": {"b": {"c": 1}}})"},
      {"three levels through arrays", R"({"a.b.c": 1})",
       R"({"_id": 1, "a": [{"b": [{"c": 1, "d": 2}, 7]}, {"b": {"c": 3, "x": 0}}]})",
       R"({"_id": 1, "a": [{"b": [{"c": 1}]}, {"b": {"c": 3}}]})"},
      {"path and top-level field", R"({"a.b": 1, "d": 1})",
       R"({"_id": 1, "d": 0, "a": {"b": 1, "c": 2}})", R"({"_id": 1, "d": 0, "a": {"b": 1}})"},
      {"sub-projection equals dotted path", R"({"a": {"b": 1}})",
       R"({"_id": 1, "a": {"b": 1, "c": 2}, "d": 3})", R"({"_id": 1, "a": {"b": 1}})"},
      {"sub-projection merges with dotted path", R"({"a": {"b": 1}, "a.c": 1})",
       R"({"_id": 1, "a": {"c": 2, "b": 1, "d": 3}})", R"({"_id": 1, "a": {"c": 2, "b": 1}})"},
      {"dotted key inside sub-projection", R"({"a": {"b.c": 1}})",
       R"({"_id": 1, "a": {"b": {"c": 1, "d": 2}, "e": 3}})", R"({"_id": 1, "a": {"b": {"c": 1}}})"},
      {"_id sub-field inclusion does not add _id", R"({"_id.x": 1})",
       R"({"_id": {"x": 1, "y": 2}, "a": 1})", R"({"_id": {"x": 1}})"},
      {"_id sub-field with another field", R"({"_id.x": 1, "a": 1})",
       R"({"_id": {"x": 1, "y": 2}, "a": 1, "b": 2})", R"({"_id": {"x": 1}, "a": 1})"},
      {"exclude in embedded doc", R"({"a.b": 0})", R"({"_id": 1, "a": {"b": 1, "c": 2}, "d": 3})",
       R"({"_id": 1, "a": {"c": 2}, "d": 3})"},
      {"exclude only field of embedded doc", R"({"a.b": 0})", R"({"_id": 1, "a": {"b": 1}})",
       R"({"_id": 1, "a": {}})"},
      {"exclude through a scalar", R"({"a.b": 0})", R"({"_id": 1, "a": 5})",
       R"({"_id": 1, "a": 5})"},
      {"exclude through array keeps scalars", R"({"a.b": 0})",
       R"({"_id": 1, "a": [{"b": 1, "c": 1}, 3, {"c": 2}, [{"b": 2, "d": 4}, "x"]]})",
       R"({"_id": 1, "a": [{"c": 1}, 3, {"c": 2}, [{"d": 4}, "x"]]})"},
      {"exclude two paths", R"({"a.b": 0, "a.c.d": 0, "e": 0})",
       R"({"_id": 1, "a": {"b": 1, "c": {"d": 1, "f": 2}, "g": 3}, "e": 4, "h": 5})",
       R"({"_id": 1, "a": {"c": {"f": 2}, "g": 3}, "h": 5})"},
      {"exclusion sub-projection", R"({"a": {"b": 0}})", R"({"_id": 1, "a": {"b": 1, "c": 2}})",
       R"({"_id": 1, "a": {"c": 2}})"},
      {"excluding a nested _id is an ordinary exclusion", R"({"a._id": 0})",
       R"({"_id": 1, "a": {"_id": 1, "b": 2}})", R"({"_id": 1, "a": {"b": 2}})"},
  };
  RunCases(cases, sizeof(cases) / sizeof(cases[0]));
}

TEST(ProjectionTest, Slice) {
  const char* doc = R"({"_id": 1, "arr": [1, 2, 3, 4], "b": 1})";
  const ApplyCase cases[] = {
      {"first n", R"({"arr": {"$slice": 2}})", doc, R"({"_id": 1, "arr": [1, 2], "b": 1})"},
      {"last n", R"({"arr": {"$slice": -2}})", doc, R"({"_id": 1, "arr": [3, 4], "b": 1})"},
      {"zero", R"({"arr": {"$slice": 0}})", doc, R"({"_id": 1, "arr": [], "b": 1})"},
      {"more than length", R"({"arr": {"$slice": 10}})", doc, doc},
      {"more than length from end", R"({"arr": {"$slice": -10}})", doc, doc},
      {"double and long counts", R"({"arr": {"$slice": 1.9}, "b": 0})", doc,
       R"({"_id": 1, "arr": [1]})"},
      {"skip limit", R"({"arr": {"$slice": [1, 2]}})", doc, R"({"_id": 1, "arr": [2, 3], "b": 1})"},
      {"negative skip", R"({"arr": {"$slice": [-3, 2]}})", doc,
       R"({"_id": 1, "arr": [2, 3], "b": 1})"},
      {"negative skip beyond start", R"({"arr": {"$slice": [-10, 2]}})", doc,
       R"({"_id": 1, "arr": [1, 2], "b": 1})"},
      {"skip beyond end", R"({"arr": {"$slice": [10, 2]}})", doc,
       R"({"_id": 1, "arr": [], "b": 1})"},
      {"limit beyond end", R"({"arr": {"$slice": [2, 10]}})", doc,
       R"({"_id": 1, "arr": [3, 4], "b": 1})"},
      {"non-array kept", R"({"arr": {"$slice": 1}})", R"({"_id": 1, "arr": 5})",
       R"({"_id": 1, "arr": 5})"},
      {"missing stays missing", R"({"arr": {"$slice": 1}})", R"({"_id": 1, "b": 5})",
       R"({"_id": 1, "b": 5})"},
      {"with an inclusion", R"({"b": 1, "arr": {"$slice": 1}})",
       R"({"_id": 1, "arr": [1, 2], "b": 2, "c": 3})", R"({"_id": 1, "arr": [1], "b": 2})"},
      {"with _id: 1 is an inclusion", R"({"_id": 1, "arr": {"$slice": 1}})",
       R"({"_id": 1, "arr": [1, 2], "b": 2})", R"({"_id": 1, "arr": [1]})"},
      {"with _id: 0 is an exclusion", R"({"_id": 0, "arr": {"$slice": 1}})",
       R"({"_id": 1, "arr": [1, 2], "b": 2})", R"({"arr": [1], "b": 2})"},
      {"with an exclusion", R"({"b": 0, "arr": {"$slice": -1}})",
       R"({"_id": 1, "arr": [1, 2], "b": 2, "c": 3})", R"({"_id": 1, "arr": [2], "c": 3})"},
      {"in an inclusion, non-array included", R"({"b": 1, "arr": {"$slice": 1}})",
       R"({"_id": 1, "arr": "x", "b": 2, "c": 3})", R"({"_id": 1, "arr": "x", "b": 2})"},
      {"dotted through array of docs", R"({"a.b": {"$slice": 1}})",
       R"({"_id": 1, "a": [{"b": [1, 2]}, {"b": [3, 4], "c": 0}, 5]})",
       R"({"_id": 1, "a": [{"b": [1]}, {"b": [3], "c": 0}, 5]})"},
      {"dotted in an inclusion", R"({"x": 1, "a.b": {"$slice": -1}})",
       R"({"_id": 1, "a": {"b": [1, 2], "c": 0}, "x": 1, "y": 2})",
       R"({"_id": 1, "a": {"b": [2]}, "x": 1})"},
      {"not applied inside nested arrays", R"({"a.b": {"$slice": 1}})",
       R"({"_id": 1, "a": [[{"b": [1, 2]}]]})", R"({"_id": 1, "a": [[{"b": [1, 2]}]]})"},
      {"slices documents and nested arrays as elements", R"({"a": {"$slice": [1, 2]}})",
       R"({"_id": 1, "a": [0, {"x": 1}, [2, 3], 4]})", R"({"_id": 1, "a": [{"x": 1}, [2, 3]]})"},
  };
  RunCases(cases, sizeof(cases) / sizeof(cases[0]));
}

TEST(ProjectionTest, IsIdentityAndIsInclusion) {
  struct Case {
    const char* spec;
    bool identity;
    bool inclusion;
  } cases[] = {
      {R"({})", true, false},
      {R"({"a": 1})", false, true},
      {R"({"_id": 1})", false, true},
      {R"({"_id": 0})", false, false},
      {R"({"a": 0})", false, false},
      {R"({"_id": 1, "a": 0})", false, false},
      {R"({"a": {"$slice": 1}})", false, false},
      {R"({"_id": 1, "a": {"$slice": 1}})", false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Document spec = test::Json(c.spec);
    auto proj = Projection::Parse(spec.bson());
    ASSERT_OK(proj);
    EXPECT_EQ((*proj)->is_identity(), c.identity);
    EXPECT_EQ((*proj)->is_inclusion(), c.inclusion);
  }
}

TEST(ProjectionTest, ApplyAppendsToOut) {
  Document spec = test::Json(R"({"a": 1, "_id": 0})");
  auto proj = Projection::Parse(spec.bson());
  ASSERT_OK(proj);
  Document doc = test::Json(R"({"_id": 1, "a": 2})");
  bson_t out = BSON_INITIALIZER;
  BSON_APPEND_INT32(&out, "first", 0);
  (*proj)->Apply(doc.bson(), &out);
  EXPECT_EQ(test::ToJson(&out), Canon(R"({"first": 0, "a": 2})"));
  bson_destroy(&out);
}

TEST(ProjectionTest, ParseErrors) {
  struct Case {
    const char* spec;
    ErrorCode code;
    const char* message;
  } cases[] = {
      {R"({"a": 1, "b": 0})", ErrorCode::kLocation31254,
       "Cannot do exclusion on field b in inclusion projection"},
      {R"({"a": 0, "b": 1})", ErrorCode::kLocation31253,
       "Cannot do inclusion on field b in exclusion projection"},
      {R"({"a": 0, "b": true})", ErrorCode::kLocation31253,
       "Cannot do inclusion on field b in exclusion projection"},
      {R"({"_id": 0, "a": 1, "b": 0})", ErrorCode::kLocation31254,
       "Cannot do exclusion on field b in inclusion projection"},
      {R"({"_id": 1, "a": 0, "b": 1})", ErrorCode::kLocation31253,
       "Cannot do inclusion on field b in exclusion projection"},
      {R"({"a": {"b": 0, "c": 1}})", ErrorCode::kLocation31253,
       "Cannot do inclusion on field c in exclusion projection"},
      {R"({"a.b": 1, "c.d": 0})", ErrorCode::kLocation31254,
       "Cannot do exclusion on field c.d in inclusion projection"},
      {R"({"a": 1, "_id.x": 0})", ErrorCode::kLocation31254,
       "Cannot do exclusion on field _id.x in inclusion projection"},
      {R"({"a": {"_id": 0, "b": 1}})", ErrorCode::kLocation31253,
       "Cannot do inclusion on field b in exclusion projection"},
      {R"({"a": 1, "a.b": 1})", ErrorCode::kLocation31249, "Path collision at a.b remaining portion b"},
      {R"({"a": 0, "a.b.c": 0})", ErrorCode::kLocation31249,
       "Path collision at a.b.c remaining portion b.c"},
      {R"({"a.b": 1, "a": 1})", ErrorCode::kLocation31250, "Path collision at a"},
      {R"({"a.b": 1, "a.b": 1})", ErrorCode::kLocation31250, "Path collision at a.b"},
      {R"({"a": {"$slice": 1}, "a.b": 1})", ErrorCode::kLocation31249,
       "Path collision at a.b remaining portion b"},
      {R"({"a": 1, "a": {"b": 1}})", ErrorCode::kLocation31249, "Path collision at a"},
      {R"({"": 1})", ErrorCode::kBadValue, "FieldPath cannot be constructed with empty string"},
      {R"({"a..b": 1})", ErrorCode::kBadValue, "FieldPath field names may not be empty strings."},
      {R"({"a.": 0})", ErrorCode::kBadValue, "FieldPath field names may not be empty strings."},
      {R"({"$a": 1})", ErrorCode::kBadValue,
       "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
      {R"({"a": {"$slice": 1, "b": 1}})", ErrorCode::kBadValue,
       "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
      {R"({"a.$": 1})", ErrorCode::kBadValue,
       "positional projection operator is not supported: a.$"},
      {R"({"a.$.b": 1})", ErrorCode::kBadValue,
       "positional projection operator is not supported: a.$.b"},
      {R"({"a": {}})", ErrorCode::kBadValue,
       "An empty sub-projection is not a valid value. Found empty object at path"},
      {R"({"a": {"$elemMatch": {"b": 1}}})", ErrorCode::kBadValue,
       "projection operator $elemMatch is not supported"},
      {R"({"a": {"$meta": "textScore"}})", ErrorCode::kBadValue,
       "projection operator $meta is not supported"},
      {R"({"a": {"$add": [1, 2]}})", ErrorCode::kBadValue,
       "projection operator $add is not supported"},
      {R"({"a": "x"})", ErrorCode::kBadValue, "projection expressions are not supported"},
      {R"({"a": "$b"})", ErrorCode::kBadValue, "projection expressions are not supported"},
      {R"({"a": null})", ErrorCode::kBadValue, "projection expressions are not supported"},
      {R"({"a": [1]})", ErrorCode::kBadValue, "projection expressions are not supported"},
      {R"({"a": {"b": "x"}})", ErrorCode::kBadValue, "projection expressions are not supported"},
      {R"({"a": {"$slice": "x"}})", ErrorCode::kBadValue,
       "$slice only supports numbers and [skip, limit] arrays"},
      {R"({"a": {"$slice": [1]}})", ErrorCode::kBadValue,
       "$slice array argument should be of form [skip, limit]"},
      {R"({"a": {"$slice": [1, 2, 3]}})", ErrorCode::kBadValue,
       "$slice array argument should be of form [skip, limit]"},
      {R"({"a": {"$slice": ["x", 1]}})", ErrorCode::kBadValue,
       "$slice expects the skip argument to be a number, got string"},
      {R"({"a": {"$slice": [1, null]}})", ErrorCode::kBadValue,
       "$slice expects the limit argument to be a number, got null"},
      {R"({"a": {"$slice": [1, 0]}})", ErrorCode::kBadValue, "$slice limit must be positive, got 0"},
      {R"({"a": {"$slice": [1, -2]}})", ErrorCode::kBadValue,
       "$slice limit must be positive, got -2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Document spec = test::Json(c.spec);
    auto proj = Projection::Parse(spec.bson());
    EXPECT_THAT(proj, StatusIs(c.code));
    EXPECT_EQ(proj.status().reason(), c.message);
  }
}

TEST(ProjectionTest, DeeplyNestedDocumentDoesNotOverflow) {
  // 1000 nested arrays around a document (built directly: the JSON parser
  // limits nesting): projected without recursing past the depth limit.
  bson_t* level = bson_new();
  BSON_APPEND_DOCUMENT(level, "0", test::Json(R"({"b": 1})").bson());
  for (int i = 0; i < 1000; ++i) {
    bson_t* outer = bson_new();
    BSON_APPEND_ARRAY(outer, "0", level);
    bson_destroy(level);
    level = outer;
  }
  Document doc;
  BSON_APPEND_INT32(doc.mutable_bson(), "_id", 1);
  BSON_APPEND_ARRAY(doc.mutable_bson(), "a", level);
  bson_destroy(level);
  for (const char* spec_json : {R"({"a.b": 1})", R"({"a.b": 0})"}) {
    Document spec = test::Json(spec_json);
    auto proj = Projection::Parse(spec.bson());
    ASSERT_OK(proj);
    bson_t out = BSON_INITIALIZER;
    (*proj)->Apply(doc.bson(), &out);
    EXPECT_TRUE(bson_validate(&out, BSON_VALIDATE_NONE, nullptr)) << spec_json;
    bson_destroy(&out);
  }
}

}  // namespace
}  // namespace projection
}  // namespace gatedb
