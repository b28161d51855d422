#include "engine/document/diff.h"

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

std::vector<std::string> Diff(const std::string& a, const std::string& b) {
  Document da = test::Json(a), db = test::Json(b);
  std::vector<std::string> out;
  DiffPaths(da.bson(), db.bson(), "version", &out);
  return out;
}

TEST(DiffPathsTest, ReportsChangedAddedRemovedFields) {
  EXPECT_THAT(Diff(R"({"a": 1, "b": 2})", R"({"a": 1, "b": 2})"), ::testing::IsEmpty());
  EXPECT_THAT(Diff(R"({"a": 1, "b": 2})", R"({"a": 5, "b": 2})"), ::testing::ElementsAre("a"));
  EXPECT_THAT(Diff(R"({"a": 1})", R"({"a": 1, "c": 3})"), ::testing::ElementsAre("c"));
  EXPECT_THAT(Diff(R"({"a": 1, "b": 2})", R"({"b": 2})"), ::testing::ElementsAre("a"));
  // A type change with an equal numeric value is a change.
  EXPECT_THAT(Diff(R"({"a": 1})", R"({"a": 1.0})"), ::testing::ElementsAre("a"));
}

TEST(DiffPathsTest, OfFieldsComparesOnlyTheNamedTopLevelFields) {
  Document a = test::Json(R"({"_id": 1, "a": {"x": 1, "y": 2}, "b": 2, "c": 3})");
  Document b = test::Json(R"({"_id": 1, "a": {"x": 5, "y": 2}, "b": 9, "c": 3, "d": 4})");
  std::vector<std::string> out;
  DiffPathsOfFields(a.bson(), b.bson(), {"a", "d"}, "version", &out);
  EXPECT_THAT(out, ::testing::ElementsAre("a.x", "d"));  // "b" changed but is not named
  out.clear();
  DiffPathsOfFields(a.bson(), b.bson(), {"d", "b", "a"}, "version", &out);
  EXPECT_THAT(out, ::testing::ElementsAre("a.x", "b", "d"));  // DiffPaths' order, not the list's
}

// Told where the listed fields are in both documents (the update path is,
// by the update driver), DiffPathsOfFields gives what its search gives: the
// same paths, in DiffPaths' order (fields of `before` by their place there,
// then the added ones by theirs in `after`).
TEST(DiffPathsTest, OfFieldsAtKnownOffsetsGivesWhatTheSearchGives) {
  Document a = test::Json(R"({"_id": 1, "a": {"x": 1, "y": 2}, "b": 2, "c": 3, "version": 1})");
  Document b = test::Json(R"({"_id": 1, "z": 0, "a": {"x": 5, "y": 2}, "b": 9, "version": 2, "e": 5, "d": 4})");
  const std::vector<std::vector<std::string>> lists = {
      {"a", "d"}, {"d", "b", "a"}, {"c"}, {"e", "d", "c", "b", "a"}, {"version", "b"}, {"missing", "a"}, {}};
  const std::vector<std::vector<std::string>> want = {
      {"a.x", "d"}, {"a.x", "b", "d"}, {"c"}, {"a.x", "b", "c", "e", "d"}, {"b"}, {"a.x"}, {}};
  for (size_t i = 0; i < lists.size(); ++i) {
    const std::vector<std::string>& fields = lists[i];
    std::vector<std::string> searched, told;
    DiffPathsOfFields(a.bson(), b.bson(), fields, "version", &searched);
    DiffPathsOfFields(a.bson(), b.bson(), fields, test::TopLevelOffsets(a.bson(), fields),
                      test::TopLevelOffsets(b.bson(), fields), "version", &told);
    EXPECT_EQ(want[i], searched) << "list " << i;
    EXPECT_EQ(want[i], told) << "list " << i;
  }
}

TEST(DiffPathsTest, DuplicateTopLevelNamesAreDetected) {
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "arr", 1);
  BSON_APPEND_INT32(b, "x", 1);
  BSON_APPEND_INT32(b, "arr", 2);
  Document dup = Document::Adopt(b);
  EXPECT_TRUE(HasDuplicateTopLevelNames(dup.bson()));
  EXPECT_FALSE(HasDuplicateTopLevelNames(test::Json(R"({"arr": 1, "x": {"arr": 2}})").bson()));
}

TEST(DiffPathsTest, DescendsIntoDocumentsButNotArrays) {
  EXPECT_THAT(Diff(R"({"addr": {"city": "x", "zip": 1}})", R"({"addr": {"city": "y", "zip": 1}})"),
              ::testing::ElementsAre("addr.city"));
  EXPECT_THAT(Diff(R"({"items": [{"q": 1}, {"q": 2}]})", R"({"items": [{"q": 1}, {"q": 3}]})"),
              ::testing::ElementsAre("items"));
  EXPECT_THAT(Diff(R"({"a": {"b": {"c": 1}}})", R"({"a": {"b": {"c": 1, "d": 2}}})"),
              ::testing::ElementsAre("a.b.d"));
  EXPECT_THAT(Diff(R"({"a": {"x": 1, "y": 2}})", R"({"a": {"y": 2, "x": 1}})"), ::testing::ElementsAre("a"));
  EXPECT_THAT(Diff(R"({"a": {"x": 1}})", R"({"a": 5})"), ::testing::ElementsAre("a"));
}

TEST(DiffPathsTest, IgnoresTheVersionField) {
  EXPECT_THAT(Diff(R"({"a": 1, "version": 1})", R"({"a": 2, "version": 2})"), ::testing::ElementsAre("a"));
}

TEST(PathsOverlapTest, ParentChildAndEqual) {
  EXPECT_TRUE(PathsOverlap("a", "a"));
  EXPECT_TRUE(PathsOverlap("a", "a.b"));
  EXPECT_TRUE(PathsOverlap("a.b.c", "a.b"));
  EXPECT_FALSE(PathsOverlap("a", "ab"));
  EXPECT_FALSE(PathsOverlap("a.b", "a.c"));
}

}  // namespace
}  // namespace gatedb
