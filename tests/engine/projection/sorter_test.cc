// Sorter: in memory, top-k, the memory limit and external (spilled) sorting
// all give std::stable_sort's order; spilled runs are removed.
#include "engine/projection/sorter.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace projection {
namespace {

using test::Json;

// Documents {_id: i, k: <0..9>, pad: <string>}: many ties on k.
std::vector<Document> MakeDocs(int n, size_t pad, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Document> docs;
  for (int i = 0; i < n; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT32(d, "_id", i);
    BSON_APPEND_INT32(d, "k", static_cast<int32_t>(rng() % 10));
    BSON_APPEND_UTF8(d, "pad", std::string(pad, static_cast<char>('a' + rng() % 26)).c_str());
    docs.push_back(Document::Adopt(d));
  }
  return docs;
}

std::vector<int> Ids(const std::vector<Document>& docs) {
  std::vector<int> ids;
  for (const Document& d : docs) {
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, d.bson(), "_id"));
    ids.push_back(bson_iter_int32(&it));
  }
  return ids;
}

// The reference: std::stable_sort by the spec.
std::vector<int> Expected(const SortSpec& spec, std::vector<Document> docs, size_t limit) {
  std::stable_sort(docs.begin(), docs.end(),
                   [&](const Document& a, const Document& b) { return spec.Compare(a.bson(), b.bson()) < 0; });
  if (limit > 0 && docs.size() > limit) docs.resize(limit);
  return Ids(docs);
}

// Runs docs through a Sorter; the extra of each row is its _id as text.
StatusOr<std::vector<int>> RunSorter(const SortSpec& spec, const std::vector<Document>& docs,
                                     const SorterOptions& opts, int* runs, size_t limit = 0) {
  Sorter sorter(&spec, opts);
  for (const Document& d : docs) {
    std::string extra = std::to_string(Ids({d})[0]);
    RETURN_IF_ERROR(sorter.Add(Document::Copy(d.bson()), extra));
  }
  RETURN_IF_ERROR(sorter.Finish());
  if (runs) *runs = sorter.spilled_runs();
  std::vector<int> out;
  Document doc;
  std::string extra;
  for (;;) {
    ASSIGN_OR_RETURN(bool more, sorter.Next(&doc, &extra));
    if (!more) break;
    int id = Ids({doc})[0];
    EXPECT_EQ(extra, std::to_string(id)) << "a row lost its extra bytes";
    out.push_back(id);
    if (limit > 0 && out.size() == limit) break;
  }
  return out;
}

TEST(SorterTest, InMemoryIsStable) {
  auto spec = SortSpec::Parse(Json(R"({"k": -1})").bson());
  ASSERT_OK(spec);
  std::vector<Document> docs = MakeDocs(500, 10, 1);
  SorterOptions opts;
  int runs = -1;
  auto got = RunSorter(**spec, docs, opts, &runs);
  ASSERT_OK(got);
  EXPECT_EQ(*got, Expected(**spec, docs, 0));
  EXPECT_EQ(runs, 0);
}

TEST(SorterTest, TopKKeepsOnlyTheLimitAndIsStable) {
  auto spec = SortSpec::Parse(Json(R"({"k": 1})").bson());
  ASSERT_OK(spec);
  std::vector<Document> docs = MakeDocs(2000, 100, 2);
  SorterOptions opts;
  opts.limit = 25;
  // 2000 rows of ~150 bytes would pass this limit; 25 of them do not.
  opts.max_memory_bytes = 25 * 400;
  int runs = -1;
  auto got = RunSorter(**spec, docs, opts, &runs);
  ASSERT_OK(got);
  EXPECT_EQ(*got, Expected(**spec, docs, 25));
  EXPECT_EQ(runs, 0);
}

TEST(SorterTest, PastTheMemoryLimitWithoutDiskUseIsMongoDBsError) {
  auto spec = SortSpec::Parse(Json(R"({"k": 1})").bson());
  ASSERT_OK(spec);
  SorterOptions opts;
  opts.max_memory_bytes = 10000;
  auto got = RunSorter(**spec, MakeDocs(200, 200, 3), opts, nullptr);
  EXPECT_THAT(got.status(), test::StatusIs(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed));
  EXPECT_NE(got.status().reason().find("10000 bytes"), std::string::npos) << got.status().reason();
}

TEST(SorterTest, SpilledRunsMergeInStableOrderAndAreRemoved) {
  test::TempDir dir;
  const std::string tmp = dir.path() + "/_tmp";
  for (const char* spec_json : {R"({"k": 1})", R"({"k": -1, "pad": 1})", R"({"pad": 1})"}) {
    SCOPED_TRACE(spec_json);
    auto spec = SortSpec::Parse(Json(spec_json).bson());
    ASSERT_OK(spec);
    std::vector<Document> docs = MakeDocs(3000, 50, 4);
    SorterOptions opts;
    opts.allow_disk_use = true;
    opts.temp_dir = tmp;
    opts.max_memory_bytes = 20000;  // about 170 rows per run
    {
      Sorter sorter(spec->get(), opts);
      for (const Document& d : docs) ASSERT_OK(sorter.Add(Document::Copy(d.bson()), "x"));
      ASSERT_OK(sorter.Finish());
      EXPECT_GT(sorter.spilled_runs(), 10);
      EXPECT_FALSE(std::filesystem::is_empty(tmp));
      std::vector<Document> out;
      Document doc;
      std::string extra;
      for (;;) {
        auto more = sorter.Next(&doc, &extra);
        ASSERT_OK(more);
        if (!*more) break;
        EXPECT_EQ(extra, "x");
        out.push_back(std::move(doc));
      }
      EXPECT_EQ(Ids(out), Expected(**spec, docs, 0));
    }
    EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "a run file outlived its Sorter";
  }
}

TEST(SorterTest, TopKThatOverflowsSpillsAndStillHonoursTheOrder) {
  test::TempDir dir;
  auto spec = SortSpec::Parse(Json(R"({"k": 1})").bson());
  ASSERT_OK(spec);
  std::vector<Document> docs = MakeDocs(1000, 100, 5);
  SorterOptions opts;
  opts.allow_disk_use = true;
  opts.temp_dir = dir.path() + "/_tmp";
  opts.limit = 300;
  opts.max_memory_bytes = 5000;  // 300 rows do not fit: spill
  int runs = 0;
  auto got = RunSorter(**spec, docs, opts, &runs, 300);
  ASSERT_OK(got);
  EXPECT_GT(runs, 0);
  EXPECT_EQ(*got, Expected(**spec, docs, 300));
}

}  // namespace
}  // namespace projection
}  // namespace gatedb
