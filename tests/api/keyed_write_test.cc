// Keyed writes are decided in the engine: the typed API and the command
// door share one key, one fingerprint (format 2, of the request) and one
// stored reply; records written with format-1 fingerprints (before the
// engine owned the protocol) still replay through both doors.
#include <rocksdb/db.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/storage/fingerprint.h"
#include "engine/storage/idempotency.h"
#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::StatusIs;
constexpr auto Int = test::IntAt;

bool Replayed(const Document& reply) {
  bson_iter_t it;
  return bson_iter_init_find(&it, reply.bson(), "replayed") && bson_iter_as_bool(&it);
}

class KeyedWriteTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    db_.reset();
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  Document Run(const std::string& json) { return db_->RunCommand(Json(json).view()); }
  Collection Coll() { return db_->GetCollection("k"); }
  int64_t Field(int id, const char* name) {
    auto d = Coll().FindOne(Json("{\"_id\": " + std::to_string(id) + "}").view());
    EXPECT_OK(d);
    return d.ok() && d->has_value() ? Int((**d).bson(), name) : -1;
  }
  static WriteOptions Key(const std::string& task, int64_t seq) {
    WriteOptions w;
    w.context.task_id = task;
    w.context.write_seq = seq;
    return w;
  }

  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

// The same write under one key, as a command and as a typed call, in both
// orders: the second is a replay whatever door it comes through.
TEST_F(KeyedWriteTest, TypedCallAndCommandShareOneKey) {
  ASSERT_OK(Coll().InsertOne(Json(R"({"_id": 1, "n": 0})").view()));

  UpdateOptions uo;
  uo.write = Key("t", 1);
  auto typed = Coll().UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 1}})").view(), uo);
  ASSERT_OK(typed);
  EXPECT_FALSE(typed->replayed);
  Document cmd = Run(R"({"update": "k", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
                         "writeContext": {"taskId": "t", "writeSeq": 1}})");
  EXPECT_EQ(Int(cmd.bson(), "ok"), 1) << test::ToJson(cmd.bson());
  EXPECT_TRUE(Replayed(cmd));
  EXPECT_EQ(Int(cmd.bson(), "n"), 1);
  EXPECT_EQ(Int(cmd.bson(), "nModified"), 1);
  EXPECT_EQ(Field(1, "n"), 1);

  Document first = Run(R"({"update": "k", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 10}}}],
                           "writeContext": {"taskId": "t", "writeSeq": 2}})");
  EXPECT_FALSE(Replayed(first));
  auto again = Coll().UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 10}})").view(),
                                UpdateOptions{false, Key("t", 2)});
  ASSERT_OK(again);
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->matched_count, 1);
  EXPECT_EQ(again->modified_count, 1);
  EXPECT_EQ(Field(1, "n"), 11);
  EXPECT_EQ(Field(1, "version"), 2);

  // Another write under a used key is refused, from the typed door too,
  // with the same error and errInfo as from the command door.
  auto other = Coll().UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 5}})").view(),
                                UpdateOptions{false, Key("t", 2)});
  ASSERT_THAT(other, StatusIs(ErrorCode::kIdempotencyKeyReuse));
  ASSERT_NE(other.status().err_info(), nullptr);
  EXPECT_EQ(test::StrAt(other.status().err_info()->bson(), "taskId"), "t");
  EXPECT_EQ(test::StrAt(other.status().err_info()->bson(), "ns"), "test.k");
  Document cmd_other = Run(R"({"update": "k", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 5}}}],
                               "writeContext": {"taskId": "t", "writeSeq": 2}})");
  EXPECT_EQ(Int(cmd_other.bson(), "code"), static_cast<int>(ErrorCode::kIdempotencyKeyReuse));
  EXPECT_EQ(test::StrAt(cmd_other.bson(), "errmsg"), other.status().reason());
  EXPECT_EQ(Field(1, "n"), 11);
}

// Every kind of keyed write replays its typed result exactly.
TEST_F(KeyedWriteTest, EveryWriteKindReplaysItsResult) {
  auto ins = Coll().InsertOne(Json(R"({"n": 1})").view(), Key("a", 1));
  ASSERT_OK(ins);
  auto ins2 = Coll().InsertOne(Json(R"({"n": 1})").view(), Key("a", 1));
  ASSERT_OK(ins2);
  EXPECT_TRUE(ins2->replayed);
  EXPECT_EQ(ins2->inserted_id.ToJson(), ins->inserted_id.ToJson()) << "the replay names the _id the first run generated";
  auto count = Coll().CountDocuments(Json("{}").view());
  ASSERT_OK(count);
  EXPECT_EQ(*count, 1);

  std::vector<Document> docs;
  docs.push_back(Json(R"({"_id": 5})"));
  docs.push_back(Json(R"({"_id": 5})"));  // duplicate: a write error, but the first took effect
  docs.push_back(Json(R"({"_id": 6})"));
  WriteOptions unordered = Key("a", 2);
  unordered.ordered = false;
  auto many = Coll().InsertMany(docs, unordered);
  ASSERT_OK(many);
  ASSERT_EQ(many->write_errors.size(), 1u);
  auto many2 = Coll().InsertMany(docs, unordered);
  ASSERT_OK(many2);
  EXPECT_TRUE(many2->replayed);
  ASSERT_EQ(many2->write_errors.size(), 1u);
  EXPECT_EQ(many2->write_errors[0].index, 1u);
  EXPECT_THAT(many2->write_errors[0].status, StatusIs(ErrorCode::kDuplicateKey));
  ASSERT_NE(many2->write_errors[0].status.err_info(), nullptr);
  EXPECT_TRUE(test::HasPath(many2->write_errors[0].status.err_info()->bson(), "keyValue._id"));
  EXPECT_EQ(many2->inserted_ids.size(), 2u);

  UpdateOptions upsert;
  upsert.upsert = true;
  upsert.write = Key("a", 3);
  auto up = Coll().UpdateOne(Json(R"({"_id": 9})").view(), Json(R"({"$set": {"x": 1}})").view(), upsert);
  ASSERT_OK(up);
  ASSERT_TRUE(up->upserted_id.has_value());
  auto up2 = Coll().UpdateOne(Json(R"({"_id": 9})").view(), Json(R"({"$set": {"x": 1}})").view(), upsert);
  ASSERT_OK(up2);
  EXPECT_TRUE(up2->replayed);
  ASSERT_TRUE(up2->upserted_id.has_value());
  EXPECT_EQ(up2->upserted_id->ToJson(), "9");

  FindOneAndModifyOptions fo;
  fo.return_after = true;
  fo.write = Key("a", 4);
  auto fam = Coll().FindOneAndUpdate(Json(R"({"_id": 9})").view(), Json(R"({"$inc": {"x": 1}})").view(), fo);
  ASSERT_OK(fam);
  ASSERT_TRUE(fam->has_value());
  auto fam2 = Coll().FindOneAndUpdate(Json(R"({"_id": 9})").view(), Json(R"({"$inc": {"x": 1}})").view(), fo);
  ASSERT_OK(fam2);
  ASSERT_TRUE(fam2->has_value());
  EXPECT_EQ((**fam2).ToJson(), (**fam).ToJson()) << "the stored document, not the current one";
  EXPECT_EQ(Field(9, "x"), 2);

  auto del = Coll().DeleteOne(Json(R"({"_id": 9})").view(), Key("a", 5));
  ASSERT_OK(del);
  EXPECT_EQ(del->deleted_count, 1);
  auto del2 = Coll().DeleteOne(Json(R"({"_id": 9})").view(), Key("a", 5));
  ASSERT_OK(del2);
  EXPECT_TRUE(del2->replayed);
  EXPECT_EQ(del2->deleted_count, 1);
}

// The fingerprint is of the request: a command that leaves a field at its
// default is the same write as one that spells the default out.
TEST_F(KeyedWriteTest, ExplicitDefaultsAreTheSameWrite) {
  ASSERT_OK(Coll().InsertOne(Json(R"({"_id": 1, "n": 0})").view()));
  Document a = Run(R"({"update": "k", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
                       "writeContext": {"taskId": "d", "writeSeq": 1}})");
  EXPECT_FALSE(Replayed(a));
  Document b = Run(R"({"update": "k", "ordered": true, "updates": [{"u": {"$inc": {"n": 1}}, "q": {"_id": 1},
                       "upsert": false, "multi": false}], "writeContext": {"taskId": "d", "writeSeq": 1}})");
  EXPECT_TRUE(Replayed(b)) << test::ToJson(b.bson());
  Document c = Run(R"({"update": "k", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}, "multi": true}],
                       "writeContext": {"taskId": "d", "writeSeq": 1}})");
  EXPECT_EQ(Int(c.bson(), "code"), static_cast<int>(ErrorCode::kIdempotencyKeyReuse));
  EXPECT_EQ(Field(1, "n"), 1);
}

// The fingerprint's properties, on requests directly.
TEST(RequestFingerprintTest, SameMeaningSameFingerprintAndOnlyThen) {
  auto update = [](const char* q, const char* u, bool multi = false) {
    UpdateRequest r;
    r.ns = Namespace{"d", "c"};
    UpdateStatement s;
    s.q = Json(q);
    s.u = Json(u);
    s.multi = multi;
    r.updates.push_back(std::move(s));
    return RequestFingerprint(r);
  };
  EXPECT_EQ(update(R"({"a": 1, "b": 2})", R"({"$set": {"x": 1, "y": 2}, "$inc": {"n": 1}})"),
            update(R"({"b": 2, "a": 1})", R"({"$inc": {"n": 1}, "$set": {"y": 2, "x": 1}})"));
  EXPECT_NE(update(R"({"a": 1})", R"({"$set": {"x": 1}})"), update(R"({"a": 1})", R"({"$set": {"x": 1.0}})"));
  EXPECT_NE(update(R"({"a": {"x": 1, "y": 2}})", R"({"$set": {"b": 1}})"),
            update(R"({"a": {"y": 2, "x": 1}})", R"({"$set": {"b": 1}})"));
  EXPECT_NE(update(R"({"a": 1})", R"({"$set": {"x": 1}})"), update(R"({"a": 1})", R"({"$set": {"x": 1}})", true));
  // A replacement keeps its order.
  EXPECT_NE(update(R"({"_id": 1})", R"({"a": 1, "b": 2})"), update(R"({"_id": 1})", R"({"b": 2, "a": 1})"));
  EXPECT_NE(update(R"({"a": 1})", R"({"$set": {"b": {"c": 1}}})"), update(R"({"a": 1})", R"({"$set": {"b": {}, "c": 1}})"));

  InsertRequest i1, i2;
  i1.ns = i2.ns = Namespace{"d", "c"};
  i1.documents.push_back(Json(R"({"_id": 1, "a": 1})"));
  i2.documents.push_back(Json(R"({"a": 1, "_id": 1})"));
  EXPECT_NE(RequestFingerprint(i1), RequestFingerprint(i2));
  i2.documents[0] = Json(R"({"_id": 1, "a": 1})");
  EXPECT_EQ(RequestFingerprint(i1), RequestFingerprint(i2));
  i2.ns.db = "e";
  EXPECT_NE(RequestFingerprint(i1), RequestFingerprint(i2));
  // The write context is not part of the request's meaning.
  i2.ns.db = "d";
  i2.write.context.agent_id = "someone";
  i2.write.sync = true;
  EXPECT_EQ(RequestFingerprint(i1), RequestFingerprint(i2));

  DeleteRequest d1, d2;
  d1.ns = d2.ns = Namespace{"d", "c"};
  d1.deletes.push_back(DeleteStatement{Json(R"({"a": 1})"), 1, std::nullopt, std::nullopt});
  d2.deletes.push_back(DeleteStatement{Json(R"({"a": 1})"), 1, int64_t{3}, std::nullopt});
  EXPECT_NE(RequestFingerprint(d1), RequestFingerprint(d2));
  EXPECT_NE(RequestFingerprint(d1), RequestFingerprint(i1));
}

// A format-1 record, as the store wrote it before the engine owned the
// protocol, put straight into the idempotency column family.
void PutLegacyRecord(const std::string& dir, const std::string& task, int64_t seq, const std::string& fp,
                     const std::string& reply_json) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, cfs, &handles, &raw).ok());
  rocksdb::ColumnFamilyHandle* idem = nullptr;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == IdempotencyLog::kColumnFamily) idem = handles[i];
  }
  ASSERT_NE(idem, nullptr);
  IdempotencyRecord rec;
  rec.fingerprint = fp;
  rec.fingerprint_format = 1;
  rec.at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
  rec.ns = "test.k";
  rec.reply = Json(reply_json);
  std::string value = IdempotencyLog::EncodeRecord(rec);
  // Format 1 has no `fpv` field.
  bson_t b;
  ASSERT_TRUE(bson_init_static(&b, reinterpret_cast<const uint8_t*>(value.data()), value.size()));
  bson_iter_t it;
  ASSERT_FALSE(bson_iter_init_find(&it, &b, "fpv"));
  ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), idem, IdempotencyLog::EncodeKey(task, seq), value).ok());
  for (auto* h : handles) ASSERT_TRUE(raw->DestroyColumnFamilyHandle(h).ok());
  delete raw;
}

TEST_F(KeyedWriteTest, FormatOneRecordsStillReplayThroughBothDoors) {
  ASSERT_OK(Coll().InsertOne(Json(R"({"_id": 0})").view()));  // creates the store's column families
  db_.reset();
  // A command-door record: its fingerprint is the command's.
  const std::string cmd_json =
      R"({"insert": "k", "documents": [{"_id": 7}], "writeContext": {"taskId": "old", "writeSeq": 1}})";
  PutLegacyRecord(dir_.path(), "old", 1, CommandFingerprint(Json(cmd_json).bson()),
                  R"({"n": 1, "insertedIds": [7], "ok": 1.0})");
  // A typed-door record: the command the typed API sent then.
  const std::string typed_cmd =
      R"({"update": "k", "updates": [{"q": {"_id": 0}, "u": {"$set": {"a": 1}}, "upsert": false, "multi": false}],
          "ordered": true, "$db": "test"})";
  PutLegacyRecord(dir_.path(), "old", 2, CommandFingerprint(Json(typed_cmd).bson()),
                  R"({"n": 1, "nModified": 1, "ok": 1.0})");
  Open();

  Document replay = Run(cmd_json);
  EXPECT_TRUE(Replayed(replay)) << test::ToJson(replay.bson());
  EXPECT_EQ(Int(replay.bson(), "n"), 1);
  EXPECT_EQ(Int(replay.bson(), "insertedIds.0"), 7) << test::ToJson(replay.bson());
  // Replayed, not run: _id 7 was never inserted (the record was planted).
  EXPECT_EQ(Field(7, "version"), -1);

  UpdateOptions uo;
  uo.write = Key("old", 2);
  auto typed = Coll().UpdateOne(Json(R"({"_id": 0})").view(), Json(R"({"$set": {"a": 1}})").view(), uo);
  ASSERT_OK(typed);
  EXPECT_TRUE(typed->replayed);
  EXPECT_EQ(typed->modified_count, 1);
  EXPECT_EQ(Field(0, "a"), -999) << "replayed from the record, not applied (no field a)";

  // A different write under a format-1 key is still refused.
  auto other = Coll().UpdateOne(Json(R"({"_id": 0})").view(), Json(R"({"$set": {"a": 2}})").view(), uo);
  EXPECT_THAT(other, StatusIs(ErrorCode::kIdempotencyKeyReuse));
}

}  // namespace
}  // namespace gatedb
