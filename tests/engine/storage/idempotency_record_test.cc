// IdempotencyLog::EncodeRecord (engine/storage/idempotency.h): the stored
// bytes of a record are the BSON document libbson writes for its fields, in
// both formats it has (with and without the agent and fingerprint version).
#include "engine/storage/idempotency.h"

#include <string>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

std::string LibbsonRecord(const IdempotencyRecord& r) {
  bson_t b = BSON_INITIALIZER;
  bson_append_binary(&b, "fp", -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(r.fingerprint.data()),
                     static_cast<uint32_t>(r.fingerprint.size()));
  BSON_APPEND_DATE_TIME(&b, "at", r.at_ms);
  BSON_APPEND_UTF8(&b, "ns", r.ns.c_str());
  BSON_APPEND_DOCUMENT(&b, "reply", r.reply.bson());
  if (r.fingerprint_format != 1) BSON_APPEND_INT32(&b, "fpv", r.fingerprint_format);
  if (r.agent) BSON_APPEND_UTF8(&b, "agent", r.agent->c_str());
  std::string out(reinterpret_cast<const char*>(bson_get_data(&b)), b.len);
  bson_destroy(&b);
  return out;
}

TEST(IdempotencyRecordTest, StoredBytesAreTheRecordsBsonDocument) {
  IdempotencyRecord r;
  r.fingerprint = std::string("\x01\x00\x02\xff" "0123456789ab", 16);
  r.at_ms = 1700000000123;
  r.ns = "db.coll";
  r.reply = test::Json(R"({"n": 1, "nModified": 1, "ok": 1.0})");
  EXPECT_EQ(LibbsonRecord(r), IdempotencyLog::EncodeRecord(r));

  r.fingerprint_format = 2;
  r.agent = "agent-7";
  EXPECT_EQ(LibbsonRecord(r), IdempotencyLog::EncodeRecord(r));
}

}  // namespace
}  // namespace gatedb
