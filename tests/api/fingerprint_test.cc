// The idempotency fingerprint: commands that mean the same hash alike, any
// difference in meaning hashes apart, and the streamed hash agrees with the
// canonical form it stands for.
#include "engine/storage/fingerprint.h"

#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace commands {
namespace {

struct Pair {
  const char* a;
  const char* b;
  bool same;
};

TEST(FingerprintTest, SameMeaningSameHashAndOnlyThen) {
  const std::vector<Pair> pairs = {
      // Top-level order, session and context fields do not count.
      {R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}], "$db": "d"})",
       R"({"update": "c", "$db": "d", "writeContext": {"taskId": "t", "writeSeq": 1},
           "updates": [{"u": {"$set": {"a": 1}}, "q": {"_id": 1}}], "lsid": {"id": 1}})",
       true},
      // Filter fields and operators (and the paths under them) are sorted.
      {R"({"update": "c", "updates": [{"q": {"a": 1, "b": 2}, "u": {"$set": {"x": 1, "y": 2}, "$inc": {"n": 1}}}]})",
       R"({"update": "c", "updates": [{"q": {"b": 2, "a": 1}, "u": {"$inc": {"n": 1}, "$set": {"y": 2, "x": 1}}}]})",
       true},
      // Values are compared by bytes and type.
      {R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}]})",
       R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1.0}}}]})", false},
      // Order inside a filter value is meaningful (exact-document equality).
      {R"({"update": "c", "updates": [{"q": {"a": {"x": 1, "y": 2}}, "u": {"$set": {"b": 1}}}]})",
       R"({"update": "c", "updates": [{"q": {"a": {"y": 2, "x": 1}}, "u": {"$set": {"b": 1}}}]})", false},
      // Inserted documents keep their order; so do the statements.
      {R"({"insert": "c", "documents": [{"_id": 1, "a": 1}]})", R"({"insert": "c", "documents": [{"a": 1, "_id": 1}]})",
       false},
      {R"({"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 1}, {"q": {"b": 1}, "limit": 1}]})",
       R"({"delete": "c", "deletes": [{"q": {"b": 1}, "limit": 1}, {"q": {"a": 1}, "limit": 1}]})", false},
      // Another database or collection is another command.
      {R"({"insert": "c", "documents": [{"_id": 1}], "$db": "a"})",
       R"({"insert": "c", "documents": [{"_id": 1}], "$db": "b"})", false},
      {R"({"insert": "c", "documents": [{"_id": 1}]})", R"({"insert": "d", "documents": [{"_id": 1}]})", false},
      // A field moved between nesting levels is not the same command (the
      // stream is self-delimiting).
      {R"({"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"b": {"c": 1}}}}]})",
       R"({"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"b": {}, "c": 1}}}]})", false},
      {R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}, {"q": {}, "u": {"$set": {"a": 1}}}]})",
       R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]})", false},
      // Canonical forms larger than a bson_t's inline buffer, several levels
      // deep (the BSON sink grows each level while its children are open).
      {R"({"update": "c", "updates": [{"q": {"b": "0123456789012345678901234567890123456789", "a": 1},
           "u": {"$set": {"y": "0123456789012345678901234567890123456789012345678901234567890123456789",
                          "x": {"deep": ["0123456789012345678901234567890123456789"]}}}}]})",
       R"({"update": "c", "updates": [{"u": {"$set": {"x": {"deep": ["0123456789012345678901234567890123456789"]},
           "y": "0123456789012345678901234567890123456789012345678901234567890123456789"}},
           "q": {"a": 1, "b": "0123456789012345678901234567890123456789"}}]})",
       true},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(std::string(p.a) + "\n vs " + p.b);
    Document a = test::Json(p.a), b = test::Json(p.b);
    std::string fa = CommandFingerprint(a.bson()), fb = CommandFingerprint(b.bson());
    EXPECT_EQ(fa.size(), 16u);
    EXPECT_EQ(fa == fb, p.same);
    EXPECT_EQ(CanonicalCommand(a.bson()) == CanonicalCommand(b.bson()), p.same);
    EXPECT_EQ(CommandFingerprint(a.bson()), fa);  // deterministic
  }
}

}  // namespace
}  // namespace commands
}  // namespace gatedb
