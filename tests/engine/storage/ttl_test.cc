// The TTL monitor: documents a TTL index (expireAfterSeconds) says have
// expired are deleted through the write gate and journaled as the monitor's
// writes; nothing else is touched; the background thread does it by itself.
#include <atomic>
#include <chrono>
#include <thread>

#include "engine/storage/db_impl.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

const Namespace kNs{"test", "sessions"};

std::vector<int64_t> Ids(DBImpl* db) {
  FindRequest req;
  req.ns = kNs;
  req.sort = Json(R"({"_id": 1})");
  auto r = db->Find(req);
  EXPECT_OK(r);
  std::vector<int64_t> out;
  if (!r.ok()) return out;
  for (const Document& d : r->docs) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, d.bson(), "_id")) out.push_back(bson_iter_as_int64(&it));
  }
  return out;
}

Status Insert(DBImpl* db, const std::string& json) {
  InsertRequest req;
  req.ns = kNs;
  req.documents.push_back(Json(json));
  auto r = db->Insert(req);
  if (!r.ok()) return r.status();
  return r->write_errors.empty() ? Status::OK() : r->write_errors[0].status;
}

TEST(TtlTest, APassDeletesExactlyTheExpiredDocumentsThroughTheGate) {
  test::TempDir dir;
  std::atomic<int64_t> now{1'000'000'000};
  Options opts;
  opts.ttl_interval_ms = 0;  // passes run by hand
  opts.clock_ms = [&] { return now.load(); };
  auto opened = DBImpl::Open(dir.path(), opts);
  ASSERT_OK(opened);
  std::unique_ptr<DBImpl> db = std::move(opened).value();
  ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"at": 1}, "expireAfterSeconds": 60})")}));
  const int64_t t = now.load();
  auto date = [](int64_t ms) { return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}"; };
  ASSERT_OK(Insert(db.get(), "{\"_id\": 1, \"at\": " + date(t - 61'000) + "}"));       // expired
  ASSERT_OK(Insert(db.get(), "{\"_id\": 2, \"at\": " + date(t - 59'000) + "}"));       // not yet
  ASSERT_OK(Insert(db.get(), "{\"_id\": 3, \"at\": \"yesterday\"}"));                   // not a date
  ASSERT_OK(Insert(db.get(), "{\"_id\": 4}"));                                          // no field
  ASSERT_OK(Insert(db.get(), "{\"_id\": 5, \"at\": [" + date(t + 10'000) + ", " + date(t - 120'000) + "]}"));
  ASSERT_OK(Insert(db.get(), "{\"_id\": 6, \"at\": " + date(t - 3'600'000) + "}"));    // long expired
  auto n = db->RunTtlPass();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 3);
  EXPECT_EQ(Ids(db.get()), (std::vector<int64_t>{2, 3, 4}));
  // Later, the second one expires too.
  now += 2'000;
  n = db->RunTtlPass();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Ids(db.get()), (std::vector<int64_t>{3, 4}));
  // The journal says who deleted them, and why.
  JournalReadRequest jr;
  jr.limit = 0;
  auto j = db->ReadJournal(jr);
  ASSERT_OK(j);
  int ttl_deletes = 0;
  for (const Document& e : j->events) {
    std::string json = e.ToJson();
    if (json.find("\"delete\"") != std::string::npos) {
      EXPECT_NE(json.find("gatedb.ttl"), std::string::npos) << json;
      EXPECT_NE(json.find("\"ttl\""), std::string::npos) << json;
      ++ttl_deletes;
    }
  }
  EXPECT_EQ(ttl_deletes, 4);
  // A lease held by someone else keeps a document (the gate decides).
  ASSERT_OK(Insert(db.get(), "{\"_id\": 7, \"at\": " + date(now.load() - 100'000) + "}"));
  bson_value_t id;
  id.value_type = BSON_TYPE_INT32;
  id.value.v_int32 = 7;
  ASSERT_OK(db->AcquireLease(kNs, id, 600'000, "agent-a"));
  n = db->RunTtlPass();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(Ids(db.get()), (std::vector<int64_t>{3, 4, 7}));
}

TEST(TtlTest, TheMonitorThreadDeletesOnItsOwn) {
  test::TempDir dir;
  Options opts;
  opts.ttl_interval_ms = 20;
  auto opened = DBImpl::Open(dir.path(), opts);
  ASSERT_OK(opened);
  std::unique_ptr<DBImpl> db = std::move(opened).value();
  ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"at": 1}, "expireAfterSeconds": 0})")}));
  const int64_t t = db->NowMs();
  for (int i = 0; i < 2500; ++i) {  // more than one batch
    ASSERT_OK(Insert(db.get(), "{\"_id\": " + std::to_string(i) + ", \"at\": {\"$date\": {\"$numberLong\": \"" +
                                   std::to_string(t - 1000 - i) + "\"}}}"));
  }
  ASSERT_OK(Insert(db.get(), "{\"_id\": 999999, \"at\": {\"$date\": {\"$numberLong\": \"" +
                                 std::to_string(t + 3'600'000) + "\"}}}"));
  std::vector<int64_t> left;
  for (int tries = 0; tries < 500; ++tries) {
    left = Ids(db.get());
    if (left.size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(left, std::vector<int64_t>{999999});
}

}  // namespace
}  // namespace gatedb
