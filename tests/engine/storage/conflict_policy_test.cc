// ParseConflictPolicy / AppendConflictPolicy (engine/storage/requests.h,
// conflict_policy.cc): PROTOCOL.md's `conflictPolicy: {mode, sourcePriority}`
// plus mergeIncrements, with MongoDB's IDL errors.
#include <string>
#include <vector>

#include "engine/storage/requests.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

Status Parse(const std::string& json, ConflictPolicy* out) { return ParseConflictPolicy(Json(json).bson(), out); }

// AppendConflictPolicy under `key`, then the embedded document.
Document Appended(const ConflictPolicy& p) {
  bson_t* b = bson_new();
  AppendConflictPolicy(p, b, "conflictPolicy");
  Document outer = Document::Adopt(b);
  bson_iter_t it;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  EXPECT_TRUE(bson_iter_init_find(&it, outer.bson(), "conflictPolicy") && BSON_ITER_HOLDS_DOCUMENT(&it));
  bson_iter_document(&it, &len, &data);
  auto d = Document::FromBytes(data, len);
  EXPECT_TRUE(d.ok());
  return d.ok() ? std::move(d).value() : Document();
}

TEST(ConflictModeNameTest, ProtocolNames) {
  EXPECT_STREQ(ConflictModeName(ConflictMode::kReject), "reject");
  EXPECT_STREQ(ConflictModeName(ConflictMode::kFieldMerge), "fieldMerge");
  EXPECT_STREQ(ConflictModeName(ConflictMode::kSourcePriority), "sourcePriority");
  EXPECT_STREQ(ConflictModeName(ConflictMode::kAppendOnly), "appendOnly");
}

TEST(ParseConflictPolicyTest, EveryMode) {
  ConflictPolicy p;
  ASSERT_OK(Parse(R"({"mode": "reject"})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kReject);

  ASSERT_OK(Parse(R"({"mode": "fieldMerge"})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kFieldMerge);
  EXPECT_FALSE(p.merge_increments);

  ASSERT_OK(Parse(R"({"mode": "fieldMerge", "mergeIncrements": true})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kFieldMerge);
  EXPECT_TRUE(p.merge_increments);

  ASSERT_OK(Parse(R"({"mode": "sourcePriority", "sourcePriority": ["human", "agent", "sync"]})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kSourcePriority);
  EXPECT_THAT(p.source_priority, ElementsAre("human", "agent", "sync"));

  ASSERT_OK(Parse(R"({"mode": "appendOnly"})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kAppendOnly);
}

TEST(ParseConflictPolicyTest, FieldOrderDoesNotMatter) {
  ConflictPolicy p;
  ASSERT_OK(Parse(R"({"sourcePriority": ["a", "b"], "mode": "sourcePriority"})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kSourcePriority);
  EXPECT_THAT(p.source_priority, ElementsAre("a", "b"));
}

TEST(ParseConflictPolicyTest, EachParseStartsFromTheDefaults) {
  // Nothing of an earlier policy survives into the next one.
  ConflictPolicy p;
  ASSERT_OK(Parse(R"({"mode": "sourcePriority", "sourcePriority": ["x"], "mergeIncrements": true})", &p));
  ASSERT_OK(Parse(R"({"mode": "reject"})", &p));
  EXPECT_EQ(p.mode, ConflictMode::kReject);
  EXPECT_THAT(p.source_priority, IsEmpty());
  EXPECT_FALSE(p.merge_increments);
}

TEST(ParseConflictPolicyTest, UnknownModeIsInvalidOptions) {
  ConflictPolicy p;
  for (const char* mode : {"Reject", "merge", "", "lastWriterWins", "fieldmerge"}) {
    EXPECT_THAT(Parse(std::string(R"({"mode": ")") + mode + "\"}", &p), StatusIs(ErrorCode::kInvalidOptions))
        << mode;
  }
}

TEST(ParseConflictPolicyTest, MissingModeIsInvalidOptions) {
  ConflictPolicy p;
  EXPECT_THAT(Parse(R"({})", &p), StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_THAT(Parse(R"({"mergeIncrements": true})", &p), StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_THAT(Parse(R"({"sourcePriority": ["a"]})", &p), StatusIs(ErrorCode::kInvalidOptions));
}

TEST(ParseConflictPolicyTest, SourcePriorityModeNeedsSources) {
  ConflictPolicy p;
  EXPECT_THAT(Parse(R"({"mode": "sourcePriority"})", &p), StatusIs(ErrorCode::kInvalidOptions));
  EXPECT_THAT(Parse(R"({"mode": "sourcePriority", "sourcePriority": []})", &p),
              StatusIs(ErrorCode::kInvalidOptions));
}

TEST(ParseConflictPolicyTest, UnknownFieldsAre40415) {
  ConflictPolicy p;
  for (const char* json : {R"({"mode": "reject", "extra": 1})", R"({"Mode": "reject"})",
                           R"({"mode": "fieldMerge", "mergeIncrement": true})",
                           R"({"mode": "sourcePriority", "sourcePriority": ["a"], "sources": ["a"]})"}) {
    Status s = Parse(json, &p);
    EXPECT_THAT(s, StatusIs(ErrorCode::kLocation40415)) << json;
  }
  // MongoDB's IDL message names the field.
  Status s = Parse(R"({"mode": "reject", "extra": 1})", &p);
  EXPECT_THAT(s.reason(), ::testing::HasSubstr("extra"));
}

TEST(ParseConflictPolicyTest, WrongTypesAreTypeMismatch) {
  ConflictPolicy p;
  for (const char* json : {
           R"({"mode": 1})",
           R"({"mode": null})",
           R"({"mode": ["reject"]})",
           R"({"mode": {"name": "reject"}})",
           R"({"mode": "sourcePriority", "sourcePriority": "human"})",
           R"({"mode": "sourcePriority", "sourcePriority": {"0": "human"}})",
           R"({"mode": "sourcePriority", "sourcePriority": ["human", 2]})",
           R"({"mode": "sourcePriority", "sourcePriority": [null]})",
           R"({"mode": "fieldMerge", "mergeIncrements": 1})",
           R"({"mode": "fieldMerge", "mergeIncrements": "true"})",
           R"({"mode": "fieldMerge", "mergeIncrements": null})",
       }) {
    EXPECT_THAT(Parse(json, &p), StatusIs(ErrorCode::kTypeMismatch)) << json;
  }
}

TEST(AppendConflictPolicyTest, WritesProtocolFields) {
  ConflictPolicy p;
  p.mode = ConflictMode::kSourcePriority;
  p.source_priority = {"human", "agent"};
  Document d = Appended(p);
  EXPECT_EQ(test::StrAt(d.bson(), "mode"), "sourcePriority");
  EXPECT_THAT(test::StringsAt(d.bson(), "sourcePriority"), ElementsAre("human", "agent"));
}

TEST(AppendConflictPolicyTest, EveryPolicyRoundTrips) {
  std::vector<ConflictPolicy> policies(6);
  policies[0].mode = ConflictMode::kReject;
  policies[1].mode = ConflictMode::kFieldMerge;
  policies[2].mode = ConflictMode::kFieldMerge;
  policies[2].merge_increments = true;
  policies[3].mode = ConflictMode::kSourcePriority;
  policies[3].source_priority = {"human"};
  policies[4].mode = ConflictMode::kSourcePriority;
  policies[4].source_priority = {"human", "agent", "sync", "with space", "ünïcode"};
  policies[5].mode = ConflictMode::kAppendOnly;
  for (const ConflictPolicy& want : policies) {
    Document d = Appended(want);
    ConflictPolicy got;
    got.mode = want.mode == ConflictMode::kReject ? ConflictMode::kAppendOnly : ConflictMode::kReject;
    ASSERT_OK(ParseConflictPolicy(d.bson(), &got)) << d.ToJson();
    EXPECT_EQ(got.mode, want.mode) << d.ToJson();
    EXPECT_EQ(got.source_priority, want.source_priority) << d.ToJson();
    EXPECT_EQ(got.merge_increments, want.merge_increments) << d.ToJson();
  }
}

TEST(AppendConflictPolicyTest, ParsedSpecsRoundTripToTheSameMeaning) {
  for (const char* json : {R"({"mode": "reject"})", R"({"mode": "fieldMerge", "mergeIncrements": true})",
                           R"({"mode": "fieldMerge", "mergeIncrements": false})",
                           R"({"mode": "sourcePriority", "sourcePriority": ["a", "b"]})",
                           R"({"mode": "appendOnly"})"}) {
    ConflictPolicy first, second;
    ASSERT_OK(Parse(json, &first)) << json;
    Document d = Appended(first);
    ASSERT_OK(ParseConflictPolicy(d.bson(), &second)) << d.ToJson();
    EXPECT_EQ(second.mode, first.mode) << json;
    EXPECT_EQ(second.source_priority, first.source_priority) << json;
    EXPECT_EQ(second.merge_increments, first.merge_increments) << json;
  }
}

}  // namespace
}  // namespace gatedb
