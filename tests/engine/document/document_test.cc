#include "gatedb/document.h"

#include "engine/util/utf8.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::StatusIs;

TEST(DocumentTest, ExtendedJsonInCanonicalAndRelaxedOut) {
  auto d = Document::FromJson(R"({"a": {"$numberLong": "5"}, "b": {"$date": "2024-01-02T03:04:05Z"}, "c": 1.5})");
  ASSERT_OK(d);
  EXPECT_EQ(d->ToJson(), R"({ "a" : 5, "b" : { "$date" : "2024-01-02T03:04:05Z" }, "c" : 1.5 })");
  EXPECT_EQ(d->ToJson(JsonMode::kCanonical),
            R"({ "a" : { "$numberLong" : "5" }, "b" : { "$date" : { "$numberLong" : "1704164645000" } }, "c" : { "$numberDouble" : "1.5" } })");
  // Canonical output keeps every type; relaxed prints small longs as numbers.
  auto canonical = Document::FromJson(d->ToJson(JsonMode::kCanonical));
  ASSERT_OK(canonical);
  EXPECT_TRUE(BinaryEqual(d->view(), canonical->view()));
}

TEST(DocumentTest, MalformedJsonIsFailedToParse) {
  EXPECT_THAT(Document::FromJson(R"({"a": )"), StatusIs(ErrorCode::kFailedToParse));
  EXPECT_THAT(Document::FromJson("[1, 2]"), StatusIs(ErrorCode::kFailedToParse));
  EXPECT_THAT(Document::FromJson(""), StatusIs(ErrorCode::kFailedToParse));
}

// libbson's parse errors quote the input; bytes that are not UTF-8 there
// must not make the message (and so the reply) invalid UTF-8.
TEST(DocumentTest, ParseErrorsQuotingNonUtf8BytesStayUtf8) {
  for (const char* json : {"{\"a\": tr\xffue}", "{\"a\": \xff}", "{\"a\": 1, \xff: 2}", "{\"a\xfe\": 1"}) {
    auto d = Document::FromJson(json);
    ASSERT_THAT(d, StatusIs(ErrorCode::kFailedToParse)) << json;
    const std::string& msg = d.status().reason();
    EXPECT_TRUE(bson_utf8_validate(msg.data(), msg.size(), false)) << msg;
  }
}

TEST(DocumentTest, ToCleanUtf8ReplacesOnlyWhatIsNotUtf8) {
  EXPECT_EQ(ToCleanUtf8("plain"), "plain");
  EXPECT_EQ(ToCleanUtf8("\xc3\xa9lan \xe2\x82\xac \xf0\x9f\x98\x80"), "\xc3\xa9lan \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(ToCleanUtf8("a\xff" "b"), "a?b");
  EXPECT_EQ(ToCleanUtf8(std::string("a\0b", 3)), "a?b");
  EXPECT_EQ(ToCleanUtf8("\xc3"), "?");                 // truncated sequence
  EXPECT_EQ(ToCleanUtf8("\xc0\xaf"), "??");           // overlong '/'
  EXPECT_EQ(ToCleanUtf8("\xed\xa0\x80x"), "???x");   // a UTF-16 surrogate
  EXPECT_EQ(ToCleanUtf8("\xe2\x82"), "??");
  EXPECT_TRUE(IsCleanUtf8("\xc3\xa9"));
  EXPECT_FALSE(IsCleanUtf8("\xc3"));
}

TEST(DocumentTest, TypeOperatorWithNumbersAndArraysParses) {
  auto d = Document::FromJson(R"({"a": {"$type": 16}, "b": {"$type": ["string", 2]}, "s": "x \"$type\": 2"})");
  ASSERT_OK(d);
  bson_iter_t it, sub;
  ASSERT_TRUE(bson_iter_init(&it, d->bson()));
  ASSERT_TRUE(bson_iter_find_descendant(&it, "a.$type", &sub));
  EXPECT_EQ(bson_iter_int32(&sub), 16);
  ASSERT_TRUE(bson_iter_init(&it, d->bson()));
  ASSERT_TRUE(bson_iter_find_descendant(&it, "b.$type", &sub));
  EXPECT_TRUE(BSON_ITER_HOLDS_ARRAY(&sub));
  ASSERT_TRUE(bson_iter_init_find(&it, d->bson(), "s"));
  EXPECT_STREQ(bson_iter_utf8(&it, nullptr), "x \"$type\": 2");
  // The legacy binary form still reads as binary.
  auto bin = Document::FromJson(R"({"b": {"$binary": "AAEC", "$type": "00"}})");
  ASSERT_OK(bin);
  ASSERT_TRUE(bson_iter_init_find(&it, bin->bson(), "b"));
  EXPECT_TRUE(BSON_ITER_HOLDS_BINARY(&it));
}

TEST(DocumentTest, FromBytesValidates) {
  Document d = test::Json(R"({"a": "x"})");
  ASSERT_OK(Document::FromBytes(d.data(), d.size()));
  std::vector<uint8_t> bytes(d.data(), d.data() + d.size());
  bytes[bytes.size() - 2] = 0xff;  // corrupt the string's terminator area
  EXPECT_THAT(Document::FromBytes(bytes.data(), bytes.size()), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Document::FromBytes(bytes.data(), 3), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(DocumentTest, CopyAndMoveKeepOwnership) {
  Document a = test::Json(R"({"k": 1})");
  Document b = a;
  Document c = std::move(a);
  EXPECT_TRUE(BinaryEqual(b.view(), c.view()));
  a = b;
  EXPECT_TRUE(BinaryEqual(a.view(), b.view()));
}

}  // namespace
}  // namespace gatedb
