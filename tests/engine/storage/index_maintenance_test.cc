// Index maintenance does exactly the work a write needs: an update that
// touches no indexed path (nor a partial filter's path) stages no index
// entry; one that moves a key stages its delete and its put; the version
// field, which every write changes, counts as touched when indexed.
#include "engine/storage/db_impl.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

const Namespace kNs{"test", "maint"};

Status Update(DBImpl* db, const std::string& q, const std::string& u) {
  UpdateRequest req;
  req.ns = kNs;
  UpdateStatement st;
  st.q = Json(q);
  st.u = Json(u);
  req.updates.push_back(std::move(st));
  auto r = db->Update(req);
  if (!r.ok()) return r.status();
  return r->write_errors.empty() ? Status::OK() : r->write_errors[0].status;
}

TEST(IndexMaintenanceTest, OnlyWritesThatTouchIndexedPathsDoIndexWork) {
  test::TempDir dir;
  auto opened = DBImpl::Open(dir.path(), Options());
  ASSERT_OK(opened);
  std::unique_ptr<DBImpl> db = std::move(opened).value();
  ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"a": 1, "n.x": -1}})"),
                                    Json(R"({"key": {"p": 1}, "partialFilterExpression": {"live": true}})")}));
  InsertRequest ins;
  ins.ns = kNs;
  ins.documents.push_back(Json(R"({"_id": 1, "a": 1, "n": {"x": 1}, "b": 0, "p": 5, "live": false})"));
  ASSERT_OK(db->Insert(ins));
  const uint64_t after_insert = db->index_entry_writes();
  EXPECT_EQ(after_insert, 1u);  // a_1_n.x_-1 only: the partial index does not hold it

  for (int i = 1; i <= 50; ++i) ASSERT_OK(Update(db.get(), R"({"_id": 1})", "{\"$set\": {\"b\": " + std::to_string(i) + "}}"));
  EXPECT_EQ(db->index_entry_writes(), after_insert) << "untouched indexes were maintained";

  ASSERT_OK(Update(db.get(), R"({"_id": 1})", R"({"$set": {"n.x": 2}})"));
  EXPECT_EQ(db->index_entry_writes(), after_insert + 2);  // one delete, one put
  ASSERT_OK(Update(db.get(), R"({"_id": 1})", R"({"$set": {"live": true}})"));
  EXPECT_EQ(db->index_entry_writes(), after_insert + 3);  // now in the partial index
  // A replacement that keeps the indexed values stages nothing either.
  ASSERT_OK(Update(db.get(), R"({"_id": 1})", R"({"a": 1, "n": {"x": 2}, "b": -1, "p": 5, "live": true})"));
  EXPECT_EQ(db->index_entry_writes(), after_insert + 3);

  // An index on the version field is maintained by every change.
  ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"version": 1}})")}));
  const uint64_t before = db->index_entry_writes();
  ASSERT_OK(Update(db.get(), R"({"_id": 1})", R"({"$set": {"b": 99}})"));
  EXPECT_EQ(db->index_entry_writes(), before + 2);
  FindRequest f;
  f.ns = kNs;
  f.filter = Json(R"({"version": 54})");  // 54 changes since the insert
  f.hint = index_test::NameHint("version_1");
  auto r = db->Find(f);
  ASSERT_OK(r);
  EXPECT_EQ(r->docs.size(), 1u);
}

}  // namespace
}  // namespace gatedb
