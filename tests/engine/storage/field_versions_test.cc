// The field-version table (engine/storage/field_versions.h): how a write
// updates it, and which entries a stale write conflicts with.
#include "engine/storage/field_versions.h"

#include "engine/document/bson_writer.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/document/diff.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

using Entries = std::vector<std::pair<std::string, int64_t>>;

Document MakeTable(const Entries& entries) {
  bson_t* b = bson_new();
  for (const auto& e : entries) bson_append_int64(b, e.first.c_str(), static_cast<int>(e.first.size()), e.second);
  return Document::Adopt(b);
}

// The table's entries in order; fails the test on a value that is not an
// int64 (record.h: {"<dotted path>": int64 version}).
Entries Read(const bson_t* table) {
  Entries out;
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init(&it, table));
  while (bson_iter_next(&it)) {
    EXPECT_TRUE(BSON_ITER_HOLDS_INT64(&it)) << "entry " << bson_iter_key(&it) << " is not an int64";
    out.emplace_back(bson_iter_key(&it), bson_iter_as_int64(&it));
  }
  return out;
}

// The entries as a map; fails the test when a path appears twice.
std::map<std::string, int64_t> AsMap(const bson_t* table) {
  std::map<std::string, int64_t> m;
  for (const auto& e : Read(table)) {
    EXPECT_TRUE(m.emplace(e.first, e.second).second) << "path '" << e.first << "' appears twice";
  }
  return m;
}

Document Update(const bson_t* old_table, const std::vector<std::string>& changed, int64_t version) {
  std::string bytes;
  BsonWriter w(&bytes);
  UpdateFieldVersions(old_table, changed, version, &w);
  w.Finish();
  auto doc = Document::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_OK(doc.status());
  return doc.ok() ? std::move(*doc) : Document();
}

using Map = std::map<std::string, int64_t>;

// ---- UpdateFieldVersions ---------------------------------------------------

TEST(UpdateFieldVersionsTest, FirstWriteRecordsEveryChangedPath) {
  Document t = Update(nullptr, {"a", "b.c"}, 1);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 1}, {"b.c", 1}}));
}

TEST(UpdateFieldVersionsTest, NothingChangedKeepsTheTable) {
  Document old = MakeTable({{"a", 1}, {"b", 2}});
  Document t = Update(old.bson(), {}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 1}, {"b", 2}}));
  Document none = Update(nullptr, {}, 3);
  EXPECT_EQ(bson_count_keys(none.bson()), 0u);
}

TEST(UpdateFieldVersionsTest, UnrelatedEntriesKeepTheirVersions) {
  Document old = MakeTable({{"a", 1}, {"b", 2}});
  Document t = Update(old.bson(), {"c"}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 1}, {"b", 2}, {"c", 3}}));
}

TEST(UpdateFieldVersionsTest, RewritingAPathMovesItsEntryToTheNewVersion) {
  Document old = MakeTable({{"a", 1}, {"b", 2}});
  Document t = Update(old.bson(), {"a"}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 3}, {"b", 2}}));  // one entry for "a", at 3
}

TEST(UpdateFieldVersionsTest, WritingAPathSupersedesItsChildren) {
  // "ab" shares a prefix with "a" but is not under it.
  Document old = MakeTable({{"a.x", 1}, {"a.y.z", 2}, {"ab", 1}, {"b", 1}});
  Document t = Update(old.bson(), {"a"}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 3}, {"ab", 1}, {"b", 1}}));
}

TEST(UpdateFieldVersionsTest, WritingAChildKeepsTheParentEntry) {
  // The parent's other children last changed at 2: that must stay known.
  Document old = MakeTable({{"a", 2}});
  Document t = Update(old.bson(), {"a.x"}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 2}, {"a.x", 3}}));
  EXPECT_THAT(ChangedSince(t.bson(), 2), ElementsAre("a.x"));
}

TEST(UpdateFieldVersionsTest, WritingTheRootSupersedesEverything) {
  Document old = MakeTable({{"a", 1}, {"b.c", 2}});
  Document t = Update(old.bson(), {""}, 3);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"", 3}}));
}

TEST(UpdateFieldVersionsTest, APathChangedTwiceInOneWriteIsOneEntry) {
  Document t = Update(nullptr, {"a", "a"}, 4);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"a", 4}}));
}

TEST(UpdateFieldVersionsTest, ArraysAreOneUnit) {
  // The diff reports an array's path, never an element's; the table then
  // holds the array and a write to one element overlaps it.
  Document before = Json(R"({"_id": 1, "tags": [1, 2, 3], "m": {"k": [{"x": 1}], "n": 1}})");
  Document after = Json(R"({"_id": 1, "tags": [1, 5, 3], "m": {"k": [{"x": 2}], "n": 1}})");
  std::vector<std::string> changed;
  DiffPaths(before.bson(), after.bson(), "version", &changed);
  ASSERT_THAT(changed, UnorderedElementsAre("tags", "m.k"));
  Document t = Update(nullptr, changed, 1);
  EXPECT_EQ(AsMap(t.bson()), (Map{{"tags", 1}, {"m.k", 1}}));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 0, {"tags.1"}), ElementsAre("tags"));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 0, {"m.k.0.x"}), ElementsAre("m.k"));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 0, {"m.n"}), IsEmpty());
}

Entries ManyPaths(size_t n, int64_t version) {
  Entries e;
  for (size_t i = 0; i < n; ++i) e.emplace_back("p" + std::to_string(i), version);
  return e;
}

TEST(UpdateFieldVersionsTest, UpToTheLimitNothingFolds) {
  Document old = MakeTable(ManyPaths(kMaxFieldVersionEntries - 1, 1));
  Document t = Update(old.bson(), {"new"}, 2);
  Map m = AsMap(t.bson());
  EXPECT_EQ(m.size(), kMaxFieldVersionEntries);
  EXPECT_EQ(m.count(""), 0u);
  EXPECT_EQ(m["new"], 2);
  EXPECT_EQ(m["p0"], 1);
}

TEST(UpdateFieldVersionsTest, PastTheLimitFoldsIntoTheRoot) {
  Document old = MakeTable(ManyPaths(kMaxFieldVersionEntries - 1, 1));
  Document t = Update(old.bson(), {"new1", "new2"}, 2);  // would be limit + 1 entries
  EXPECT_EQ(AsMap(t.bson()), (Map{{"", 2}}));
  // Conservative: after folding, every path counts as changed since any
  // basis older than the fold.
  EXPECT_THAT(ChangedSince(t.bson(), 1), ElementsAre(""));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 1, {"p0"}), ElementsAre(""));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 1, {"never.written"}), ElementsAre(""));
  EXPECT_THAT(ChangedSince(t.bson(), 2), IsEmpty());
}

TEST(UpdateFieldVersionsTest, FoldingKeepsTheNewestVersionItReplaces) {
  // If the table held a version newer than this write's (it should not, but
  // the fold must not lose it), a basis between the two must still see a
  // change: the root entry may not be older than any entry it replaces.
  Entries entries = ManyPaths(kMaxFieldVersionEntries, 3);
  entries.back().second = 9;
  Document old = MakeTable(entries);
  Document t = Update(old.bson(), {"q"}, 5);
  Map m = AsMap(t.bson());
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m.count(""), 1u);
  EXPECT_GE(m[""], 9);
  EXPECT_THAT(ChangedSince(t.bson(), 8), ElementsAre(""));
}

TEST(UpdateFieldVersionsTest, AFoldedTableStillRecordsLaterWrites) {
  Document folded = MakeTable({{"", 7}});
  Document t = Update(folded.bson(), {"a"}, 8);
  // Basis 7 saw the fold: only "a" changed since.
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 7, {"z"}), IsEmpty());
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 7, {"a.b"}), ElementsAre("a"));
  // An older basis did not: anything may have changed.
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 6, {"z"}), ElementsAre(""));
}

// ---- ChangedSinceOverlapping -----------------------------------------------

class OverlapTest : public ::testing::Test {
 protected:
  Document table_ = MakeTable({{"a", 3}, {"b.c", 5}, {"d", 2}, {"ab", 4}});
  std::vector<std::string> At2(const std::vector<std::string>& written) {
    return ChangedSinceOverlapping(table_.bson(), 2, written);
  }
};

TEST_F(OverlapTest, SamePath) { EXPECT_THAT(At2({"b.c"}), ElementsAre("b.c")); }

TEST_F(OverlapTest, TableEntryIsAParentOfTheWrittenPath) {
  EXPECT_THAT(At2({"a.x"}), ElementsAre("a"));
  EXPECT_THAT(At2({"b.c.d.e"}), ElementsAre("b.c"));
}

TEST_F(OverlapTest, TableEntryIsAChildOfTheWrittenPath) { EXPECT_THAT(At2({"b"}), ElementsAre("b.c")); }

TEST_F(OverlapTest, SiblingsAndPrefixesThatAreNotPathsDoNotOverlap) {
  EXPECT_THAT(At2({"b.d"}), IsEmpty());
  EXPECT_THAT(At2({"a"}), ElementsAre("a"));  // not "ab"
  EXPECT_THAT(At2({"b.cd"}), IsEmpty());
}

TEST_F(OverlapTest, EntriesNotNewerThanTheBasisDoNotCount) {
  EXPECT_THAT(At2({"d"}), IsEmpty());  // d changed at 2, the basis itself
  EXPECT_THAT(ChangedSinceOverlapping(table_.bson(), 5, {"a", "b", "ab", "d"}), IsEmpty());
  EXPECT_THAT(ChangedSinceOverlapping(table_.bson(), 4, {"a", "b", "ab", "d"}), ElementsAre("b.c"));
  EXPECT_THAT(ChangedSinceOverlapping(table_.bson(), 1, {"d"}), ElementsAre("d"));
}

TEST_F(OverlapTest, WritingTheRootOverlapsEveryNewerEntry) {
  EXPECT_THAT(At2({""}), UnorderedElementsAre("a", "b.c", "ab"));
}

TEST_F(OverlapTest, EachTablePathIsListedOnce) {
  EXPECT_THAT(At2({"a", "a.x", "a.y"}), ElementsAre("a"));
  EXPECT_THAT(At2({"x", "b", "a.q"}), UnorderedElementsAre("a", "b.c"));
}

TEST(ChangedSinceOverlappingTest, RootEntryOverlapsEveryWrittenPath) {
  Document t = MakeTable({{"", 4}});
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 3, {"q.r"}), ElementsAre(""));
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 4, {"q.r"}), IsEmpty());
}

TEST(ChangedSinceOverlappingTest, NoTableOrNothingWrittenIsNoConflict) {
  EXPECT_THAT(ChangedSinceOverlapping(nullptr, 0, {"a", ""}), IsEmpty());
  Document t = MakeTable({{"a", 4}});
  EXPECT_THAT(ChangedSinceOverlapping(t.bson(), 0, {}), IsEmpty());
}

// ---- PathsToRecord ---------------------------------------------------------

TEST(PathsToRecordTest, AChangedPathIsWidenedToTheTargetThatCoversIt) {
  // $set: {a: {...}} diffs to a.x and a.y, but wrote all of "a".
  EXPECT_THAT(PathsToRecord({"a.x", "a.y"}, {"a"}), ElementsAre("a"));
}

TEST(PathsToRecordTest, TheShortestCoveringTargetWins) {
  EXPECT_THAT(PathsToRecord({"a.b.c"}, {"a.b", "a"}), ElementsAre("a"));
  EXPECT_THAT(PathsToRecord({"a.b.c"}, {"a", "a.b"}), ElementsAre("a"));
}

TEST(PathsToRecordTest, TargetsThatDoNotCoverAPathLeaveItAlone) {
  EXPECT_THAT(PathsToRecord({"b"}, {"a"}), ElementsAre("b"));
  // A target below the changed path does not cover it.
  EXPECT_THAT(PathsToRecord({"a.x"}, {"a.x.y"}), ElementsAre("a.x"));
  // Nor does a name that merely starts the same way.
  EXPECT_THAT(PathsToRecord({"ab.c"}, {"a"}), ElementsAre("ab.c"));
  EXPECT_THAT(PathsToRecord({"a.x"}, {}), ElementsAre("a.x"));
}

TEST(PathsToRecordTest, EachPathIsRecordedOnceInFirstSeenOrder) {
  EXPECT_THAT(PathsToRecord({"a.x", "b", "a.y", "b"}, {"a"}), ElementsAre("a", "b"));
}

// ---- ChangedSince ----------------------------------------------------------

TEST(ChangedSinceTest, ListsEntriesStrictlyNewerThanTheBasis) {
  Document t = MakeTable({{"a", 1}, {"b", 2}, {"c.d", 3}});
  EXPECT_THAT(ChangedSince(t.bson(), 0), ElementsAre("a", "b", "c.d"));
  EXPECT_THAT(ChangedSince(t.bson(), 1), ElementsAre("b", "c.d"));
  EXPECT_THAT(ChangedSince(t.bson(), 2), ElementsAre("c.d"));
  EXPECT_THAT(ChangedSince(t.bson(), 3), IsEmpty());
  EXPECT_THAT(ChangedSince(nullptr, 0), IsEmpty());
}

TEST(ChangedSinceTest, ReportsTheRootEntry) {
  Document t = MakeTable({{"", 5}, {"a", 6}});
  EXPECT_THAT(ChangedSince(t.bson(), 4), ElementsAre("", "a"));
  EXPECT_THAT(ChangedSince(t.bson(), 5), ElementsAre("a"));
}

}  // namespace
}  // namespace gatedb
