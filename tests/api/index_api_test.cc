// Secondary indexes through the typed C++ API: create (with a progress
// callback over an existing collection), list, unique refusals, hint,
// explain, drop; and that the API and the commands see one catalog.
#include <algorithm>
#include <string>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

std::string Str(const bson_t* d, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, d) || !bson_iter_find_descendant(&it, dotted, &f) || !BSON_ITER_HOLDS_UTF8(&f)) return "";
  return bson_iter_utf8(&f, nullptr);
}
int64_t Num(const bson_t* d, const char* dotted) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, d) || !bson_iter_find_descendant(&it, dotted, &f)) return -1;
  return bson_iter_as_int64(&f);
}

class IndexApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(IndexApiTest, CreateListHintExplainDrop) {
  Collection c = db_->GetCollection("tasks");
  std::vector<Document> docs;
  for (int i = 0; i < 2500; ++i) {
    docs.push_back(Json("{\"_id\": " + std::to_string(i) + ", \"owner\": \"o" + std::to_string(i % 50) +
                        "\", \"due\": " + std::to_string(i % 7) + "}"));
  }
  ASSERT_OK(c.InsertMany(docs));
  std::vector<uint64_t> progress;
  IndexModel m;
  m.keys = Json(R"({"owner": 1, "due": -1})");
  auto names = c.CreateIndexes({m}, [&](uint64_t n) { progress.push_back(n); });
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"owner_1_due_-1"});
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 2500u);
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));

  auto list = c.ListIndexes();
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ(Str((*list)[0].bson(), "name"), "_id_");
  EXPECT_EQ(Str((*list)[1].bson(), "name"), "owner_1_due_-1");

  FindOptions fo;
  fo.sort = Json(R"({"due": -1})");
  auto found = c.Find(Json(R"({"owner": "o3"})").view(), fo);
  ASSERT_OK(found);
  ASSERT_EQ(found->size(), 50u);
  for (size_t i = 1; i < found->size(); ++i) EXPECT_GE(Num((*found)[i - 1].bson(), "due"), Num((*found)[i].bson(), "due"));

  auto ex = c.Explain(Json(R"({"owner": "o3"})").view(), fo);
  ASSERT_OK(ex);
  EXPECT_EQ(Str(ex->bson(), "queryPlanner.winningPlan.stage"), "FETCH") << ex->ToJson();
  EXPECT_EQ(Str(ex->bson(), "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
  EXPECT_EQ(Str(ex->bson(), "queryPlanner.winningPlan.inputStage.direction"), "forward");
  EXPECT_EQ(Num(ex->bson(), "executionStats.nReturned"), 50);
  EXPECT_EQ(Num(ex->bson(), "executionStats.totalKeysExamined"), 50);
  EXPECT_EQ(Num(ex->bson(), "executionStats.totalDocsExamined"), 50);

  FindOptions natural = fo;
  natural.hint = Json(R"({"$natural": 1})");
  auto ex2 = c.Explain(Json(R"({"owner": "o3"})").view(), natural);
  ASSERT_OK(ex2);
  EXPECT_EQ(Str(ex2->bson(), "queryPlanner.winningPlan.stage"), "SORT");
  EXPECT_EQ(Num(ex2->bson(), "executionStats.totalDocsExamined"), 2500);
  FindOptions bad;
  bad.hint_name = "nosuch";
  EXPECT_EQ(c.Find(Json("{}").view(), bad).status().code(), ErrorCode::kBadValue);

  CountOptions co;
  co.hint_name = "owner_1_due_-1";
  auto n = c.CountDocuments(Json(R"({"owner": {"$in": ["o1", "o2"]}, "due": {"$gte": 3}})").view(), co);
  ASSERT_OK(n);
  co.hint_name.clear();
  co.hint = Json(R"({"$natural": 1})");
  auto n2 = c.CountDocuments(Json(R"({"owner": {"$in": ["o1", "o2"]}, "due": {"$gte": 3}})").view(), co);
  ASSERT_OK(n2);
  EXPECT_EQ(*n, *n2);
  EXPECT_GT(*n, 0);

  ASSERT_OK(c.DropIndex("owner_1_due_-1"));
  EXPECT_EQ(c.DropIndex("owner_1_due_-1").code(), ErrorCode::kIndexNotFound);
  EXPECT_EQ(c.DropIndex("_id_").code(), ErrorCode::kInvalidOptions);
  auto after = c.ListIndexes();
  ASSERT_OK(after);
  EXPECT_EQ(after->size(), 1u);
}

// Bounds that are the whole filter answer it alone (no matcher; explain's
// FETCH shows no filter, as MongoDB's does), and must return what a
// collection scan returns: NaN below every number but matching no range,
// infinities, every numeric type, a descending field, multikey and missing
// fields.
TEST_F(IndexApiTest, ExactBoundsAnswerAloneAndAgreeWithACollectionScan) {
  Collection c = db_->GetCollection("exact");
  const std::vector<std::string> values = {
      "-3", "-1", "0", "1", "2", "3", "2.5", "-0.0", "{\"$numberLong\": \"2\"}", "{\"$numberDecimal\": \"1.0\"}",
      "{\"$numberDouble\": \"NaN\"}", "{\"$numberDecimal\": \"NaN\"}", "{\"$numberDouble\": \"-Infinity\"}",
      "{\"$numberDouble\": \"Infinity\"}", "\"a\"", "\"b\"", "null", "true", "{\"$date\": {\"$numberLong\": \"5\"}}"};
  std::vector<Document> docs;
  for (size_t i = 0; i < values.size() * 3; ++i) {
    const std::string& v = values[i % values.size()];
    std::string d = "{\"_id\": " + std::to_string(i) + ", \"s\": \"" + (i % 2 ? "x" : "y") + "\"";
    if (i % 7 != 3) d += ", \"n\": " + v;  // some documents lack n
    d += ", \"m\": [" + v + ", 1]}";
    docs.push_back(Json(d));
  }
  ASSERT_OK(c.InsertMany(docs));
  IndexModel by_n, by_s_n, by_m;
  by_n.keys = Json(R"({"n": 1})");
  by_s_n.keys = Json(R"({"s": 1, "n": -1})");
  by_m.keys = Json(R"({"m": 1})");
  ASSERT_OK(c.CreateIndexes({by_n, by_s_n, by_m}));

  struct Case {
    const char* filter;
    const char* index;
    bool exact;
  };
  const Case cases[] = {
      {R"({"n": 2})", "n_1", true},
      {R"({"n": {"$numberDouble": "NaN"}})", "n_1", true},
      {R"({"n": {"$lt": 2}})", "n_1", true},
      {R"({"n": {"$lte": 0}})", "n_1", true},
      {R"({"n": {"$gt": -1}})", "n_1", true},
      {R"({"n": {"$gte": 1, "$lt": 3}})", "n_1", true},
      {R"({"n": {"$in": [1, 2.5, "a"]}})", "n_1", true},
      {R"({"n": {"$lt": "b"}})", "n_1", true},
      {R"({"n": {"$lte": {"$numberDouble": "NaN"}}})", "n_1", false},
      {R"({"n": {"$gte": {"$numberDecimal": "NaN"}}})", "n_1", false},
      {R"({"n": null})", "n_1", false},
      {R"({"n": {"$in": [1, null]}})", "n_1", false},
      {R"({"n": 2, "s": "x"})", "n_1", false},
      {R"({"n": {"$gt": 0, "$ne": 2}})", "n_1", false},
      {R"({"s": "x", "n": {"$lt": 1}})", "s_1_n_-1", true},
      {R"({"s": "y", "n": {"$gte": -1, "$lte": 2}})", "s_1_n_-1", true},
      {R"({"s": {"$in": ["x", "y"]}, "n": 3})", "s_1_n_-1", true},
      {R"({"n": {"$lt": 1}})", "s_1_n_-1", false},  // s unbounded: n's bounds are not applied
      {R"({"m": 1})", "m_1", false},                // multikey
      {R"({"$and": [{"n": 1}]})", "n_1", false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.filter) + " hint " + k.index);
    Document filter = Json(k.filter);
    FindOptions hinted;
    hinted.hint_name = k.index;
    FindOptions natural;
    natural.hint = Json(R"({"$natural": 1})");
    auto got = c.Find(filter.view(), hinted);
    auto want = c.Find(filter.view(), natural);
    ASSERT_OK(got);
    ASSERT_OK(want);
    std::vector<int64_t> got_ids, want_ids;
    for (const Document& d : *got) got_ids.push_back(Num(d.bson(), "_id"));
    for (const Document& d : *want) want_ids.push_back(Num(d.bson(), "_id"));
    std::sort(got_ids.begin(), got_ids.end());
    std::sort(want_ids.begin(), want_ids.end());
    EXPECT_EQ(got_ids, want_ids);
    auto ex = c.Explain(filter.view(), hinted, "queryPlanner");
    ASSERT_OK(ex);
    EXPECT_EQ(Str(ex->bson(), "queryPlanner.winningPlan.stage"), "FETCH") << ex->ToJson();
    bson_iter_t it, f;
    const bool has_filter =
        bson_iter_init(&it, ex->bson()) && bson_iter_find_descendant(&it, "queryPlanner.winningPlan.filter", &f);
    EXPECT_EQ(has_filter, !k.exact) << ex->ToJson();
  }
}

TEST_F(IndexApiTest, UniqueIndexRefusesAndTheCommandsSeeTheSameCatalog) {
  Collection c = db_->GetCollection("users");
  IndexModel m;
  m.keys = Json(R"({"email": 1})");
  m.unique = true;
  m.name = "by_email";
  ASSERT_OK(c.CreateIndex(m));
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 1, "email": "a@x"})").view()));
  auto dup = c.InsertOne(Json(R"({"_id": 2, "email": "a@x"})").view());
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), ErrorCode::kDuplicateKey);
  EXPECT_NE(dup.status().reason().find("index: by_email dup key: { email: \"a@x\" }"), std::string::npos)
      << dup.status().reason();
  Document reply = db_->RunCommand(Json(R"({"listIndexes": "users"})").view());
  EXPECT_EQ(Str(reply.bson(), "cursor.firstBatch.1.name"), "by_email") << reply.ToJson();
  // Creating it again is a no-op; with other options under the same name, a conflict.
  EXPECT_OK(c.CreateIndex(m));
  m.unique = false;
  EXPECT_EQ(c.CreateIndex(m).status().code(), ErrorCode::kIndexOptionsConflict);
}

}  // namespace
}  // namespace gatedb

namespace gatedb {
namespace {

TEST(ValidationApiTest, ValidatorRefusesAndBypassLetsThrough) {
  test::TempDir dir;
  auto opened = Database::Open(dir.path());
  ASSERT_OK(opened);
  std::unique_ptr<Database> db = std::move(opened).value();
  CreateCollectionOptions o;
  o.validator = test::Json(R"({"$jsonSchema": {"required": ["owner"], "properties": {"owner": {"bsonType": "string"}}}})");
  ASSERT_OK(db->CreateCollection("test", "jobs", o));
  Collection c = db->GetCollection("jobs");
  ASSERT_OK(c.InsertOne(test::Json(R"({"_id": 1, "owner": "ana"})").view()));
  auto bad = c.InsertOne(test::Json(R"({"_id": 2, "owner": 7})").view());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kDocumentValidationFailure);
  ASSERT_NE(bad.status().err_info(), nullptr);
  std::string info = bad.status().err_info()->ToJson();
  EXPECT_NE(info.find("\"failingDocumentId\" : 2"), std::string::npos) << info;
  EXPECT_NE(info.find("\"operatorName\" : \"$jsonSchema\""), std::string::npos) << info;
  // An update that breaks the rule is refused and changes nothing.
  auto up = c.UpdateOne(test::Json(R"({"_id": 1})").view(), test::Json(R"({"$unset": {"owner": 1}})").view());
  EXPECT_EQ(up.status().code(), ErrorCode::kDocumentValidationFailure);
  auto still = c.FindOne(test::Json(R"({"_id": 1})").view());
  ASSERT_OK(still);
  ASSERT_TRUE(still->has_value());
  EXPECT_NE((*still)->ToJson().find("ana"), std::string::npos);
  WriteOptions w;
  w.bypass_document_validation = true;
  EXPECT_OK(c.InsertOne(test::Json(R"({"_id": 3})").view(), w));
  EXPECT_EQ(*c.CountDocuments(test::Json("{}").view()), 2);
}

}  // namespace
}  // namespace gatedb
