// The wire codec on its own: OP_MSG's flags, sections and checksum, the
// OP_QUERY handshake, the reply builders, and every malformed frame the
// parser must refuse without reading past the bytes it was given.
#include "api/server/wire_message.h"

#include <random>

#include "tests/server/wire_test_client.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using server::ParseRequest;
using test::Json;
using test::OpMsg;
using test::OpQuery;
using test::StatusIs;

StatusOr<server::Request> Parse(const std::string& m) {
  return ParseRequest(reinterpret_cast<const uint8_t*>(m.data()), m.size());
}

// Rewrites the header's length after a test cut or grew a message.
std::string WithLength(std::string m) {
  std::string len;
  server::AppendInt32(&len, static_cast<int32_t>(m.size()));
  m.replace(0, 4, len);
  return m;
}

TEST(Crc32cTest, MatchesTheCastagnoliCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(server::Crc32c(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0xE3069283u);
  EXPECT_EQ(server::Crc32c(nullptr, 0), 0u);
}

TEST(WireMessageTest, OpMsgBodyIsTheCommand) {
  Document body = Json(R"({"ping": 1, "$db": "admin"})");
  auto r = Parse(OpMsg(7, body.bson()));
  ASSERT_OK(r);
  EXPECT_EQ(r->header.request_id, 7);
  EXPECT_EQ(r->header.op_code, server::kOpMsg);
  EXPECT_FALSE(r->more_to_come);
  EXPECT_FALSE(r->exhaust_allowed);
  EXPECT_EQ(test::ToJson(r->command.bson()), test::ToJson(body.bson()));
}

TEST(WireMessageTest, DocumentSequencesBecomeArrays) {
  Document body = Json(R"({"insert": "c", "$db": "test"})");
  Document a = Json(R"({"_id": 1})"), b = Json(R"({"_id": 2, "x": "y"})");
  auto r = Parse(OpMsg(1, body.bson(), 0, "documents", {a, b}));
  ASSERT_OK(r);
  EXPECT_EQ(test::ToJson(r->command.bson()),
            test::ToJson(Json(R"({"insert": "c", "$db": "test", "documents": [{"_id": 1}, {"_id": 2, "x": "y"}]})")
                             .bson()));
}

TEST(WireMessageTest, AnEmptySequenceIsAnEmptyArray) {
  Document body = Json(R"({"insert": "c"})");
  auto r = Parse(OpMsg(1, body.bson(), 0, "documents", {}));
  ASSERT_OK(r);
  EXPECT_EQ(test::ToJson(r->command.bson()), test::ToJson(Json(R"({"insert": "c", "documents": []})").bson()));
}

TEST(WireMessageTest, FlagBits) {
  Document body = Json(R"({"ping": 1})");
  auto r = Parse(OpMsg(1, body.bson(), server::kMoreToCome | server::kExhaustAllowed));
  ASSERT_OK(r);
  EXPECT_TRUE(r->more_to_come);
  EXPECT_TRUE(r->exhaust_allowed);
  // An unknown optional bit (16-31) is ignored; an unknown required bit
  // (0-15) is refused.
  EXPECT_OK(Parse(OpMsg(1, body.bson(), 1u << 20)));
  EXPECT_THAT(Parse(OpMsg(1, body.bson(), 1u << 2)), StatusIs(ErrorCode::kProtocolError));
  EXPECT_THAT(Parse(OpMsg(1, body.bson(), 1u << 15)), StatusIs(ErrorCode::kProtocolError));
}

TEST(WireMessageTest, ChecksumIsVerified) {
  Document body = Json(R"({"ping": 1})");
  std::string m = OpMsg(1, body.bson(), server::kChecksumPresent);
  ASSERT_OK(Parse(m));
  std::string bad = m;
  bad[bad.size() - 1] ^= 0x01;
  EXPECT_THAT(Parse(bad), StatusIs(ErrorCode::kProtocolError));
  std::string body_flip = m;
  body_flip[25] ^= 0x20;  // a byte of the body: the checksum no longer matches
  EXPECT_THAT(Parse(body_flip), StatusIs(ErrorCode::kProtocolError));
}

TEST(WireMessageTest, MalformedSectionsAreProtocolErrors) {
  Document body = Json(R"({"insert": "c"})");
  Document d = Json(R"({"_id": 1})");
  std::string good = OpMsg(1, body.bson(), 0, "documents", {d});
  ASSERT_OK(Parse(good));
  // No body at all: flags only.
  {
    std::string m;
    server::AppendHeader(&m, 20, 1, 0, server::kOpMsg);
    server::AppendInt32(&m, 0);
    EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kProtocolError));
  }
  // Two bodies.
  {
    std::string m = OpMsg(1, body.bson());
    m.push_back('\0');
    m.append(reinterpret_cast<const char*>(bson_get_data(body.bson())), body.bson()->len);
    EXPECT_THAT(Parse(WithLength(m)), StatusIs(ErrorCode::kProtocolError));
  }
  // A section kind that does not exist (2 is internal to mongos).
  {
    std::string m = OpMsg(1, body.bson());
    m.push_back('\2');
    EXPECT_THAT(Parse(WithLength(m)), StatusIs(ErrorCode::kProtocolError));
  }
  // A sequence whose size overruns the message.
  {
    std::string m = good;
    size_t size_at = server::kHeaderSize + 4 + 1 + body.bson()->len + 1;
    std::string big;
    server::AppendInt32(&big, 1 << 20);
    m.replace(size_at, 4, big);
    EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kProtocolError));
    std::string tiny;
    server::AppendInt32(&tiny, 3);
    m.replace(size_at, 4, tiny);
    EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kProtocolError));
  }
  // A sequence identifier with no terminator inside the section.
  {
    std::string m = OpMsg(1, body.bson());
    m.push_back('\1');
    server::AppendInt32(&m, 4 + 3);
    m.append("abc");
    EXPECT_THAT(Parse(WithLength(m)), StatusIs(ErrorCode::kProtocolError));
  }
  // An identifier that is not UTF-8 (found by fuzz_wire_message): it
  // would become a field name.
  {
    std::string m = OpMsg(1, body.bson(), 0, std::string("documen\xbcs"), {d});
    EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kInvalidBSON));
  }
  // A sequence named like a body field, and two sequences of one name.
  {
    Document b2 = Json(R"({"insert": "c", "documents": []})");
    EXPECT_THAT(Parse(OpMsg(1, b2.bson(), 0, "documents", {d})), StatusIs(ErrorCode::kProtocolError));
    std::string m = good;
    m.append(good.substr(server::kHeaderSize + 4 + 1 + body.bson()->len));
    EXPECT_THAT(Parse(WithLength(m)), StatusIs(ErrorCode::kProtocolError));
  }
  // A document whose declared length overruns its section.
  {
    std::string m = good;
    size_t doc_at = m.size() - d.bson()->len;
    std::string big;
    server::AppendInt32(&big, static_cast<int32_t>(d.bson()->len + 1));
    m.replace(doc_at, 4, big);
    EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kProtocolError));
  }
}

TEST(WireMessageTest, InvalidBsonIsRefused) {
  // {"s": "x"} with the string's length lying.
  Document body = Json(R"({"ping": "x"})");
  std::string m = OpMsg(1, body.bson());
  size_t strlen_at = server::kHeaderSize + 4 + 1 + 4 + 1 + 5;  // doc len, type, "ping\0"
  std::string lie;
  server::AppendInt32(&lie, 100);
  m.replace(strlen_at, 4, lie);
  EXPECT_THAT(Parse(m), StatusIs(ErrorCode::kInvalidBSON));
  // Invalid UTF-8 in a string.
  std::string u = OpMsg(1, body.bson());
  u[strlen_at + 4] = static_cast<char>(0xC3);
  EXPECT_THAT(Parse(u), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(WireMessageTest, LengthMustMatchAndOpcodeMustBeKnown) {
  Document body = Json(R"({"ping": 1})");
  std::string m = OpMsg(1, body.bson());
  EXPECT_THAT(Parse(m.substr(0, m.size() - 1)), StatusIs(ErrorCode::kProtocolError));
  EXPECT_THAT(Parse(m.substr(0, 10)), StatusIs(ErrorCode::kProtocolError));
  std::string op = m;
  std::string code;
  server::AppendInt32(&code, 2002);  // OP_INSERT, removed in MongoDB 6.0
  op.replace(12, 4, code);
  EXPECT_THAT(Parse(op), StatusIs(ErrorCode::kProtocolError));
}

TEST(WireMessageTest, HeaderLimits) {
  server::MessageHeader h;
  h.op_code = server::kOpMsg;
  h.length = 15;
  EXPECT_THAT(server::CheckHeader(h), StatusIs(ErrorCode::kProtocolError));
  h.length = -5;
  EXPECT_THAT(server::CheckHeader(h), StatusIs(ErrorCode::kProtocolError));
  h.length = 48000001;
  EXPECT_THAT(server::CheckHeader(h), StatusIs(ErrorCode::kProtocolError));
  h.length = 48000000;
  EXPECT_OK(server::CheckHeader(h));
  h.length = 16;
  EXPECT_OK(server::CheckHeader(h));
  h.op_code = 9999;  // refused before a body is read
  EXPECT_THAT(server::CheckHeader(h), StatusIs(ErrorCode::kProtocolError));
  h.op_code = server::kOpReply;
  EXPECT_THAT(server::CheckHeader(h), StatusIs(ErrorCode::kProtocolError));
}

TEST(WireMessageTest, ATlsClientHelloIsRecognised) {
  const uint8_t hello[16] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a, 0x11, 0x22, 0x33, 0x44};
  EXPECT_TRUE(server::LooksLikeTlsHandshake(hello));
  std::string ping = test::OpMsg(1, test::Json(R"({"ping": 1})").bson());
  EXPECT_FALSE(server::LooksLikeTlsHandshake(reinterpret_cast<const uint8_t*>(ping.data())));
}

TEST(WireMessageTest, OpQueryHandshake) {
  Document q = Json(R"({"isMaster": 1, "client": {"driver": {"name": "x"}}})");
  auto r = Parse(OpQuery("admin.$cmd", q.bson()));
  ASSERT_OK(r);
  EXPECT_EQ(r->header.op_code, server::kOpQuery);
  EXPECT_EQ(test::StrAt(r->command.bson(), "$db"), "admin");
  EXPECT_EQ(test::IntAt(r->command.bson(), "isMaster"), 1);
  // The wrapped form, with a field selector.
  Document wrapped = Json(R"({"$query": {"ismaster": 1}, "$readPreference": {"mode": "primary"}})");
  Document fields = Json(R"({"a": 1})");
  r = Parse(OpQuery("mydb.$cmd", wrapped.bson(), fields.bson()));
  ASSERT_OK(r);
  EXPECT_EQ(test::IntAt(r->command.bson(), "ismaster"), 1);
  EXPECT_EQ(test::StrAt(r->command.bson(), "$db"), "mydb");
  EXPECT_FALSE(test::HasPath(r->command.bson(), "$readPreference"));
  // Not a command namespace, no terminator, truncated.
  EXPECT_THAT(Parse(OpQuery("test.c", q.bson())), StatusIs(ErrorCode::kProtocolError));
  EXPECT_THAT(Parse(OpQuery(".$cmd", q.bson())), StatusIs(ErrorCode::kProtocolError));
  // A database name that is not UTF-8 (found by fuzz_wire_message).
  EXPECT_THAT(Parse(OpQuery("admi\xff\xffn.$cmd", q.bson())), StatusIs(ErrorCode::kInvalidBSON));
  std::string m = OpQuery("admin.$cmd", q.bson());
  EXPECT_THAT(Parse(WithLength(m.substr(0, 24))), StatusIs(ErrorCode::kProtocolError));
  EXPECT_THAT(Parse(WithLength(m.substr(0, m.size() - 3))), StatusIs(ErrorCode::kProtocolError));
}

TEST(WireMessageTest, RepliesHaveTheirLayout) {
  Document body = Json(R"({"ok": 1.0, "n": 3})");
  std::string msg = server::BuildMsgReply(9, 7, body.bson());
  const uint8_t* p = reinterpret_cast<const uint8_t*>(msg.data());
  EXPECT_EQ(server::LoadInt32LE(p), static_cast<int32_t>(msg.size()));
  EXPECT_EQ(server::LoadInt32LE(p + 4), 9);
  EXPECT_EQ(server::LoadInt32LE(p + 8), 7);
  EXPECT_EQ(server::LoadInt32LE(p + 12), server::kOpMsg);
  EXPECT_EQ(server::LoadInt32LE(p + 16), 0);
  EXPECT_EQ(test::ToJson(test::MsgBody(msg).bson()), test::ToJson(body.bson()));
  auto parsed = Parse(msg);  // a reply is a well-formed OP_MSG too
  ASSERT_OK(parsed);

  std::string rep = server::BuildOpReply(10, 3, body.bson());
  p = reinterpret_cast<const uint8_t*>(rep.data());
  EXPECT_EQ(server::LoadInt32LE(p), static_cast<int32_t>(rep.size()));
  EXPECT_EQ(server::LoadInt32LE(p + 8), 3);
  EXPECT_EQ(server::LoadInt32LE(p + 12), server::kOpReply);
  EXPECT_EQ(server::LoadInt32LE(p + 32), 1);  // numberReturned
  EXPECT_EQ(test::ToJson(test::OpReplyDoc(rep).bson()), test::ToJson(body.bson()));
}

// Every prefix of a valid message, and random corruptions of it, are
// refused or parsed, never read out of bounds (ASan checks in CI).
TEST(WireMessageTest, TruncationsAndCorruptionsNeverCrash) {
  Document body = Json(R"({"insert": "c", "$db": "test", "ordered": true, "n": {"a": [1, 2, {"b": "x"}]}})");
  Document d = Json(R"({"_id": 1, "s": "hello", "arr": [1, 2, 3]})");
  std::string good = OpMsg(1, body.bson(), server::kChecksumPresent, "documents", {d, d});
  ASSERT_OK(Parse(good));
  for (size_t n = 0; n < good.size(); ++n) {
    std::string cut = good.substr(0, n);
    if (n >= 4) cut = WithLength(cut);
    EXPECT_FALSE(Parse(cut).ok()) << "prefix of " << n << " bytes";
  }
  // Without a checksum exactly one prefix is a whole message: the body
  // alone, before the sequence begins.
  std::string plain = OpMsg(1, body.bson(), 0, "documents", {d, d});
  int whole = 0;
  for (size_t n = 4; n < plain.size(); ++n) {
    if (Parse(WithLength(plain.substr(0, n))).ok()) {
      ++whole;
      EXPECT_EQ(n, server::kHeaderSize + 4 + 1 + body.bson()->len);
    }
  }
  EXPECT_EQ(whole, 1);
  std::mt19937 rng(12345);
  int refused = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string m = plain;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = server::kHeaderSize + rng() % (m.size() - server::kHeaderSize);
      m[at] = static_cast<char>(rng() & 0xFF);
    }
    if (!Parse(m).ok()) ++refused;
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace gatedb
