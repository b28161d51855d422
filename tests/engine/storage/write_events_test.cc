// The BSON the write path produces besides documents
// (engine/storage/write_events.h): journal events, the last-writer block,
// a VersionConflict's errInfo and the conflict event.  Field names are
// PROTOCOL.md's (/work/shared/PROTOCOL.md) and the header's.
#include "engine/storage/write_events.h"

#include <set>
#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kNow = 1'700'000'123'456;

using test::Keys;

std::set<std::string> KeySet(const bson_t* doc) {
  std::vector<std::string> k = Keys(doc);
  return std::set<std::string>(k.begin(), k.end());
}

bson_type_t TypeAt(const bson_t* doc, const char* path) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &f)) return BSON_TYPE_EOD;
  return bson_iter_type(&f);
}

// The embedded document at a top-level key, as a Document.
Document SubDoc(const bson_t* doc, const char* key) {
  bson_iter_t it;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (!bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
    ADD_FAILURE() << key << " is not a document";
    return Document();
  }
  bson_iter_document(&it, &len, &data);
  auto d = Document::FromBytes(data, len);
  EXPECT_TRUE(d.ok());
  return d.ok() ? std::move(d).value() : Document();
}

std::string Bytes(const bson_t* b) { return std::string(reinterpret_cast<const char*>(bson_get_data(b)), b->len); }

WriteContext FullContext() {
  WriteContext ctx;
  ctx.agent_id = "agent-1";
  ctx.task_id = "task-9";
  ctx.write_seq = 17;
  ctx.source = "planner";
  ctx.read_at_ms = kNow - 500;
  return ctx;
}

// ---- The writer block ------------------------------------------------------

TEST(WriterBlockTest, HoldsWhoWroteAndWhen) {
  Document w = BuildWriterBlock(FullContext(), kNow);
  // {agentId, taskId, source, at}: the idempotency sequence and the read
  // time are about the request, not about who last wrote the document.
  EXPECT_EQ(Keys(w.bson()), (std::vector<std::string>{"agentId", "taskId", "source", "at"}));
  EXPECT_EQ(test::StrAt(w.bson(), "agentId"), "agent-1");
  EXPECT_EQ(test::StrAt(w.bson(), "taskId"), "task-9");
  EXPECT_EQ(test::StrAt(w.bson(), "source"), "planner");
  EXPECT_EQ(TypeAt(w.bson(), "at"), BSON_TYPE_DATE_TIME);
  EXPECT_EQ(test::IntAt(w.bson(), "at"), kNow);
}

TEST(WriterBlockTest, AnUnknownWriterStillHasATime) {
  Document w = BuildWriterBlock(WriteContext(), kNow);
  std::set<std::string> allowed = {"agentId", "taskId", "source", "at"};
  for (const std::string& k : Keys(w.bson())) EXPECT_EQ(allowed.count(k), 1u) << k;
  EXPECT_EQ(TypeAt(w.bson(), "at"), BSON_TYPE_DATE_TIME);
  EXPECT_EQ(test::IntAt(w.bson(), "at"), kNow);
  // Nothing claims an identity that was not given.
  EXPECT_EQ(test::StrAt(w.bson(), "agentId"), "");
  EXPECT_EQ(test::StrAt(w.bson(), "source"), "");
}

// ---- writeContext ----------------------------------------------------------

TEST(WriteContextTest, AllFiveFieldsWithProtocolTypes) {
  bson_t* b = bson_new();
  AppendWriteContext(b, "writeContext", FullContext());
  Document d = Document::Adopt(b);
  ASSERT_EQ(Keys(d.bson()), std::vector<std::string>{"writeContext"});
  Document wc = SubDoc(d.bson(), "writeContext");
  EXPECT_EQ(KeySet(wc.bson()), (std::set<std::string>{"agentId", "taskId", "writeSeq", "source", "readAt"}));
  EXPECT_EQ(TypeAt(wc.bson(), "agentId"), BSON_TYPE_UTF8);
  EXPECT_EQ(TypeAt(wc.bson(), "taskId"), BSON_TYPE_UTF8);
  EXPECT_EQ(TypeAt(wc.bson(), "source"), BSON_TYPE_UTF8);
  EXPECT_EQ(TypeAt(wc.bson(), "readAt"), BSON_TYPE_DATE_TIME);  // "readAt: when the writer read its basis (a date)"
  EXPECT_EQ(test::IntAt(wc.bson(), "writeSeq"), 17);
  EXPECT_EQ(test::IntAt(wc.bson(), "readAt"), kNow - 500);
  EXPECT_EQ(test::StrAt(wc.bson(), "agentId"), "agent-1");
  EXPECT_EQ(test::StrAt(wc.bson(), "taskId"), "task-9");
  EXPECT_EQ(test::StrAt(wc.bson(), "source"), "planner");
}

TEST(WriteContextTest, EmptyContextIsAnEmptyDocument) {
  bson_t* b = bson_new();
  AppendWriteContext(b, "wc", WriteContext());
  Document d = Document::Adopt(b);
  EXPECT_EQ(TypeAt(d.bson(), "wc"), BSON_TYPE_DOCUMENT);
  EXPECT_THAT(Keys(SubDoc(d.bson(), "wc").bson()), IsEmpty());
}

TEST(WriteContextTest, WriteSeqZeroIsKept) {
  // writeSeq 0 is a real sequence number (part of an idempotency key).
  WriteContext ctx;
  ctx.task_id = "t";
  ctx.write_seq = 0;
  bson_t* b = bson_new();
  AppendWriteContext(b, "wc", ctx);
  Document d = Document::Adopt(b);
  EXPECT_TRUE(test::HasPath(d.bson(), "wc.writeSeq"));
  EXPECT_EQ(test::IntAt(d.bson(), "wc.writeSeq"), 0);
}

// ---- Write events ----------------------------------------------------------

const std::set<std::string> kEventFields = {"seq",          "op",           "ns", "_id",   "versionBefore",
                                            "versionAfter", "writeContext", "changedPaths", "at", "gated"};

TEST(WriteEventTest, InsertEventShape) {
  Document idd = Json(R"({"_id": {"$oid": "0123456789abcdef01234567"}})");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, idd.bson(), "_id"));
  Document e = BuildWriteEvent("insert", "db.orders", *bson_iter_value(&it), std::nullopt, 0, FullContext(),
                               {"_id", "qty"}, WriteGate(), kNow);
  // The journal writes the seq into an int64 placeholder that comes first.
  std::vector<std::string> keys = Keys(e.bson());
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys[0], "seq");
  EXPECT_EQ(TypeAt(e.bson(), "seq"), BSON_TYPE_INT64);
  EXPECT_EQ(test::IntAt(e.bson(), "seq"), 0);
  EXPECT_EQ(KeySet(e.bson()), kEventFields);  // no basisVersion: not gated

  EXPECT_EQ(test::StrAt(e.bson(), "op"), "insert");
  EXPECT_EQ(test::StrAt(e.bson(), "ns"), "db.orders");
  EXPECT_EQ(TypeAt(e.bson(), "_id"), BSON_TYPE_OID);
  EXPECT_EQ(TypeAt(e.bson(), "versionBefore"), BSON_TYPE_NULL);  // an insert has no before
  EXPECT_EQ(TypeAt(e.bson(), "versionAfter"), BSON_TYPE_INT64);
  EXPECT_EQ(test::IntAt(e.bson(), "versionAfter"), 0);
  EXPECT_EQ(test::StrAt(e.bson(), "writeContext.agentId"), "agent-1");
  EXPECT_EQ(test::IntAt(e.bson(), "writeContext.writeSeq"), 17);
  EXPECT_EQ(TypeAt(e.bson(), "changedPaths"), BSON_TYPE_ARRAY);
  EXPECT_THAT(test::StringsAt(e.bson(), "changedPaths"), ElementsAre("_id", "qty"));
  EXPECT_EQ(TypeAt(e.bson(), "at"), BSON_TYPE_DATE_TIME);
  EXPECT_EQ(test::IntAt(e.bson(), "at"), kNow);
  EXPECT_EQ(TypeAt(e.bson(), "gated"), BSON_TYPE_BOOL);
  EXPECT_FALSE(bson_iter_init_find(&it, e.bson(), "gated") && bson_iter_bool(&it));
}

TEST(WriteEventTest, GatedUpdateCarriesItsBasis) {
  bson_value_t id;
  id.value_type = BSON_TYPE_INT32;
  id.value.v_int32 = 7;
  WriteGate gate;
  gate.basis_version = 4;
  Document e = BuildWriteEvent("update", "db.c", id, 4, 5, WriteContext(), {"a.b", "c"}, gate, kNow);
  std::set<std::string> want = kEventFields;
  want.insert("basisVersion");
  EXPECT_EQ(KeySet(e.bson()), want);
  EXPECT_EQ(Keys(e.bson())[0], "seq");
  EXPECT_EQ(test::IntAt(e.bson(), "_id"), 7);
  EXPECT_EQ(TypeAt(e.bson(), "versionBefore"), BSON_TYPE_INT64);
  EXPECT_EQ(test::IntAt(e.bson(), "versionBefore"), 4);
  EXPECT_EQ(test::IntAt(e.bson(), "versionAfter"), 5);
  EXPECT_EQ(test::IntAt(e.bson(), "basisVersion"), 4);
  EXPECT_THAT(test::StringsAt(e.bson(), "changedPaths"), ElementsAre("a.b", "c"));
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "gated"));
  EXPECT_TRUE(bson_iter_bool(&it));
  // An empty context is an empty writeContext document, not a missing one.
  EXPECT_EQ(TypeAt(e.bson(), "writeContext"), BSON_TYPE_DOCUMENT);
}

TEST(WriteEventTest, IdiomGatedWriteIsGatedWithoutABasis) {
  bson_value_t id;
  id.value_type = BSON_TYPE_INT32;
  id.value.v_int32 = 1;
  WriteGate gate;
  gate.idiom = true;
  Document e = BuildWriteEvent("replace", "db.c", id, 2, 3, WriteContext(), {}, gate, kNow);
  EXPECT_EQ(KeySet(e.bson()), kEventFields);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "gated"));
  EXPECT_TRUE(bson_iter_bool(&it));
  EXPECT_EQ(test::StrAt(e.bson(), "op"), "replace");
  EXPECT_EQ(TypeAt(e.bson(), "changedPaths"), BSON_TYPE_ARRAY);
  EXPECT_THAT(test::StringsAt(e.bson(), "changedPaths"), IsEmpty());
}

TEST(WriteEventTest, AStaleWriteLetThroughNamesThePolicy) {
  bson_value_t id;
  id.value_type = BSON_TYPE_INT32;
  id.value.v_int32 = 1;
  WriteGate gate;
  gate.basis_version = 2;
  Document e = BuildWriteEvent("update", "db.c", id, 3, 4, WriteContext(), {"b"}, gate, kNow, "fieldMerge");
  std::set<std::string> want = kEventFields;
  want.insert({"basisVersion", "merged", "policy"});
  EXPECT_EQ(KeySet(e.bson()), want);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "merged") && BSON_ITER_HOLDS_BOOL(&it));
  EXPECT_TRUE(bson_iter_bool(&it));
  EXPECT_EQ(test::StrAt(e.bson(), "policy"), "fieldMerge");
  // Without a policy that let it through, neither field appears.
  Document plain = BuildWriteEvent("update", "db.c", id, 3, 4, WriteContext(), {"b"}, gate, kNow);
  EXPECT_FALSE(test::HasPath(plain.bson(), "merged"));
  EXPECT_FALSE(test::HasPath(plain.bson(), "policy"));
}

TEST(WriteEventTest, DeleteHasNoVersionAfter) {
  bson_value_t id;
  id.value_type = BSON_TYPE_INT32;
  id.value.v_int32 = 1;
  Document e = BuildWriteEvent("delete", "db.c", id, 6, std::nullopt, WriteContext(), {}, WriteGate(), kNow);
  EXPECT_EQ(TypeAt(e.bson(), "versionBefore"), BSON_TYPE_INT64);
  EXPECT_EQ(test::IntAt(e.bson(), "versionBefore"), 6);
  EXPECT_EQ(TypeAt(e.bson(), "versionAfter"), BSON_TYPE_NULL);
}

TEST(TopLevelPathsTest, EveryTopLevelFieldButTheVersionField) {
  Document d = Json(R"({"_id": 1, "a": {"b": 1}, "version": 0, "c": [1]})");
  EXPECT_THAT(TopLevelPaths(d.bson(), "version"), ElementsAre("_id", "a", "c"));
  // With another version field, "version" is an ordinary field.
  EXPECT_THAT(TopLevelPaths(d.bson(), "rev"), ElementsAre("_id", "a", "version", "c"));
  EXPECT_THAT(TopLevelPaths(Document().bson(), "version"), IsEmpty());
}

TEST(AppendChangedPathsTest, AddsEachNewPathOnce) {
  Document e1 = Json(R"({"changedPaths": ["a", "b.c", "a"]})");
  Document e2 = Json(R"({"changedPaths": ["b.c", "d", 5, null]})");  // non-strings are ignored
  std::vector<std::string> paths;
  AppendChangedPaths(e1.bson(), &paths);
  EXPECT_THAT(paths, ElementsAre("a", "b.c"));
  AppendChangedPaths(e2.bson(), &paths);
  EXPECT_THAT(paths, ElementsAre("a", "b.c", "d"));
}

TEST(AppendChangedPathsTest, EventsWithoutAnArrayAddNothing) {
  std::vector<std::string> paths = {"x"};
  AppendChangedPaths(Json(R"({"op": "insert"})").bson(), &paths);
  AppendChangedPaths(Json(R"({"changedPaths": "a"})").bson(), &paths);
  AppendChangedPaths(Json(R"({"changedPaths": {"0": "a"}})").bson(), &paths);
  EXPECT_THAT(paths, ElementsAre("x"));
}

// ---- Conflicts -------------------------------------------------------------

class ConflictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = FullContext();
    info_.code = ErrorCode::kVersionConflict;
    info_.ns = "db.orders";
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, current_.bson(), "_id"));
    info_.id = Value(*bson_iter_value(&it));
    info_.basis_version = 2;
    info_.current_version = 4;
    info_.current = current_.bson();
    info_.conflicting_fields = {"a.b", "gone"};
    info_.conflicting_fields_complete = true;
    info_.last_writer = last_writer_.bson();
    info_.reason = "the document is at version 4 but the write was based on version 2";
    info_.context = &ctx_;
    info_.now_ms = kNow;
    info_.policy = "fieldMerge";
  }

  Document current_ = Json(R"({"_id": "o1", "a": {"b": 5, "c": 6}, "d": 1, "version": {"$numberLong": "4"}})");
  Document last_writer_ = Json(R"({"agentId": "other", "source": "sync", "at": {"$date": 1700000000000}})");
  WriteContext ctx_;
  ConflictInfo info_;
};

TEST_F(ConflictTest, ErrInfoHasEveryProtocolField) {
  Document e = BuildConflictErrInfo(info_);
  for (const char* k : {"basisVersion", "currentVersion", "current", "conflictingFields", "conflictingFieldsComplete",
                        "lastWriter", "reason", "suggestedAction", "policy"}) {
    EXPECT_TRUE(test::HasPath(e.bson(), k)) << k << " missing from " << e.ToJson();
  }
  EXPECT_EQ(test::IntAt(e.bson(), "basisVersion"), 2);
  EXPECT_EQ(test::IntAt(e.bson(), "currentVersion"), 4);
  EXPECT_EQ(Bytes(SubDoc(e.bson(), "current").bson()), Bytes(current_.bson()));
  EXPECT_THAT(test::StringsAt(e.bson(), "conflictingFields"), ElementsAre("a.b", "gone"));
  EXPECT_EQ(TypeAt(e.bson(), "conflictingFieldsComplete"), BSON_TYPE_BOOL);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "conflictingFieldsComplete"));
  EXPECT_TRUE(bson_iter_bool(&it));
  // lastWriter: agentId, taskId, source, at, as recorded.
  EXPECT_EQ(Bytes(SubDoc(e.bson(), "lastWriter").bson()), Bytes(last_writer_.bson()));
  EXPECT_EQ(test::StrAt(e.bson(), "reason"), info_.reason);
  // A stale basis is cured by reading again.
  EXPECT_EQ(test::StrAt(e.bson(), "suggestedAction"), "reread_and_retry");
  EXPECT_EQ(test::StrAt(e.bson(), "policy"), "fieldMerge");
}

TEST_F(ConflictTest, ErrInfoShowsTheConflictingPathsCurrentValues) {
  Document e = BuildConflictErrInfo(info_);
  ASSERT_EQ(TypeAt(e.bson(), "conflictingValues"), BSON_TYPE_DOCUMENT);
  Document vals = SubDoc(e.bson(), "conflictingValues");
  // "a.b" is 5 in the current document; "gone" is not there to show.
  ASSERT_EQ(Keys(vals.bson()), std::vector<std::string>{"a.b"});
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, vals.bson(), "a.b"));
  EXPECT_EQ(bson_iter_as_int64(&it), 5);
}

TEST_F(ConflictTest, ErrInfoWhatIsUnknownIsNull) {
  info_.basis_version.reset();
  info_.current = nullptr;
  info_.last_writer = nullptr;
  info_.conflicting_fields.clear();
  info_.conflicting_fields_complete = false;
  Document e = BuildConflictErrInfo(info_);
  EXPECT_EQ(TypeAt(e.bson(), "basisVersion"), BSON_TYPE_NULL);
  EXPECT_EQ(TypeAt(e.bson(), "current"), BSON_TYPE_NULL);
  EXPECT_EQ(TypeAt(e.bson(), "lastWriter"), BSON_TYPE_NULL);
  EXPECT_EQ(TypeAt(e.bson(), "conflictingFields"), BSON_TYPE_ARRAY);
  EXPECT_THAT(test::StringsAt(e.bson(), "conflictingFields"), IsEmpty());
  EXPECT_FALSE(test::HasPath(e.bson(), "conflictingValues"));
  EXPECT_EQ(test::IntAt(e.bson(), "currentVersion"), 4);
}

TEST_F(ConflictTest, SourcePriorityErrInfoNamesBothSources) {
  info_.policy = "sourcePriority";
  info_.by_source = true;
  info_.source = "planner";
  info_.last_source = "sync";
  Document e = BuildConflictErrInfo(info_);
  EXPECT_EQ(test::StrAt(e.bson(), "policy"), "sourcePriority");
  EXPECT_EQ(test::StrAt(e.bson(), "source"), "planner");
  EXPECT_EQ(test::StrAt(e.bson(), "lastWriterSource"), "sync");
  info_.by_source = false;
  Document plain = BuildConflictErrInfo(info_);
  EXPECT_FALSE(test::HasPath(plain.bson(), "lastWriterSource"));
}

TEST_F(ConflictTest, ConflictEventShape) {
  Document e = BuildConflictEvent(info_);
  std::vector<std::string> keys = Keys(e.bson());
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys[0], "seq");
  EXPECT_EQ(TypeAt(e.bson(), "seq"), BSON_TYPE_INT64);
  EXPECT_EQ(test::IntAt(e.bson(), "seq"), 0);
  EXPECT_EQ(KeySet(e.bson()),
            (std::set<std::string>{"seq", "op", "ns", "_id", "versionBefore", "versionAfter", "basisVersion",
                                   "writeContext", "changedPaths", "conflictingFields", "code", "reason", "policy",
                                   "at", "gated"}));
  EXPECT_EQ(test::StrAt(e.bson(), "op"), "conflict");
  EXPECT_EQ(test::StrAt(e.bson(), "ns"), "db.orders");
  EXPECT_EQ(test::StrAt(e.bson(), "_id"), "o1");
  // Nothing changed: before and after are both the current version.
  EXPECT_EQ(test::IntAt(e.bson(), "versionBefore"), 4);
  EXPECT_EQ(test::IntAt(e.bson(), "versionAfter"), 4);
  EXPECT_EQ(test::IntAt(e.bson(), "basisVersion"), 2);
  EXPECT_EQ(test::StrAt(e.bson(), "writeContext.agentId"), "agent-1");
  EXPECT_EQ(TypeAt(e.bson(), "changedPaths"), BSON_TYPE_ARRAY);
  EXPECT_THAT(test::StringsAt(e.bson(), "changedPaths"), IsEmpty());
  EXPECT_THAT(test::StringsAt(e.bson(), "conflictingFields"), ElementsAre("a.b", "gone"));
  // The code names the refusal, as a codeName or as its number.
  if (TypeAt(e.bson(), "code") == BSON_TYPE_UTF8) {
    EXPECT_EQ(test::StrAt(e.bson(), "code"), "VersionConflict");
  } else {
    EXPECT_EQ(test::IntAt(e.bson(), "code"), static_cast<int64_t>(ErrorCode::kVersionConflict));
  }
  EXPECT_EQ(test::StrAt(e.bson(), "reason"), info_.reason);
  EXPECT_EQ(test::StrAt(e.bson(), "policy"), "fieldMerge");
  EXPECT_EQ(TypeAt(e.bson(), "at"), BSON_TYPE_DATE_TIME);
  EXPECT_EQ(test::IntAt(e.bson(), "at"), kNow);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "gated") && BSON_ITER_HOLDS_BOOL(&it));
  EXPECT_TRUE(bson_iter_bool(&it));
}

TEST_F(ConflictTest, StaleBasisEventWithoutADocument) {
  info_.code = ErrorCode::kStaleBasis;
  info_.id.reset();
  info_.current = nullptr;
  info_.current_version = 0;
  info_.context = nullptr;
  Document e = BuildConflictEvent(info_);
  EXPECT_EQ(TypeAt(e.bson(), "_id"), BSON_TYPE_NULL);
  EXPECT_EQ(TypeAt(e.bson(), "writeContext"), BSON_TYPE_DOCUMENT);
  if (TypeAt(e.bson(), "code") == BSON_TYPE_UTF8) {
    EXPECT_EQ(test::StrAt(e.bson(), "code"), "StaleBasis");
  } else {
    EXPECT_EQ(test::IntAt(e.bson(), "code"), static_cast<int64_t>(ErrorCode::kStaleBasis));
  }
}

TEST_F(ConflictTest, MessageNamesTheDocumentTheReasonAndTheFields) {
  std::string msg = BuildConflictMessage(info_);
  EXPECT_THAT(msg, ::testing::HasSubstr("db.orders"));
  EXPECT_THAT(msg, ::testing::HasSubstr("\"o1\""));
  EXPECT_THAT(msg, ::testing::HasSubstr(info_.reason));
  EXPECT_THAT(msg, ::testing::HasSubstr("a.b"));
  EXPECT_THAT(msg, ::testing::HasSubstr("gone"));
  info_.by_source = true;
  info_.source = "planner";
  info_.last_source = "sync";
  msg = BuildConflictMessage(info_);
  EXPECT_THAT(msg, ::testing::HasSubstr("planner"));
  EXPECT_THAT(msg, ::testing::HasSubstr("sync"));
  info_.code = ErrorCode::kStaleBasis;
  EXPECT_NE(BuildConflictMessage(info_), msg);  // a stale basis says so
}

// ---- The version equality of the MongoDB idiom -----------------------------

TEST(VersionEqualityTest, PlainAndDollarEqNumbers) {
  for (const char* json : {R"({"_id": 1, "version": 3})", R"({"_id": 1, "version": {"$numberLong": "3"}})",
                           R"({"_id": 1, "version": 3.0})", R"({"_id": 1, "version": {"$numberDecimal": "3"}})",
                           R"({"_id": 1, "version": {"$eq": 3}})", R"({"_id": 1, "version": {"$eq": 3.0}})"}) {
    Document f = Json(json);
    EXPECT_TRUE(HasVersionEquality(f.bson(), "version")) << json;
    int64_t expected = -1;
    Document without;
    ASSERT_TRUE(SplitVersionEquality(f.bson(), "version", &expected, &without)) << json;
    EXPECT_EQ(expected, 3) << json;
    EXPECT_EQ(Keys(without.bson()), std::vector<std::string>{"_id"}) << json;
  }
}

TEST(VersionEqualityTest, AnythingElseIsNoEquality) {
  for (const char* json : {
           R"({"_id": 1})",
           R"({"_id": 1, "version": "3"})",
           R"({"_id": 1, "version": null})",
           R"({"_id": 1, "version": 3.5})",  // no int64 version equals it
           R"({"_id": 1, "version": {"$gt": 3}})",
           R"({"_id": 1, "version": {"$in": [3]}})",
           R"({"_id": 1, "version": {"$eq": "3"}})",
           R"({"_id": 1, "version": {"$eq": 3, "$ne": 4}})",
           R"({"_id": 1, "version": [3]})",
           R"({"_id": 1, "a": {"version": 3}})",
       }) {
    Document f = Json(json);
    EXPECT_FALSE(HasVersionEquality(f.bson(), "version")) << json;
    int64_t expected = -1;
    Document without;
    EXPECT_FALSE(SplitVersionEquality(f.bson(), "version", &expected, &without)) << json;
  }
}

TEST(VersionEqualityTest, SplitKeepsTheOtherFieldsInOrder) {
  Document f = Json(R"({"a": 1, "rev": 7, "b": {"$gt": 2}, "version": 1})");
  EXPECT_FALSE(HasVersionEquality(f.bson(), "other"));
  int64_t expected = -1;
  Document without;
  ASSERT_TRUE(SplitVersionEquality(f.bson(), "rev", &expected, &without));
  EXPECT_EQ(expected, 7);
  EXPECT_EQ(without.ToJson(), Json(R"({"a": 1, "b": {"$gt": 2}, "version": 1})").ToJson());
}

}  // namespace
}  // namespace gatedb
