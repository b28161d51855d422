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

std::string Hex(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Fingerprints are stored in the idempotency log and compared with a
// retry's after an upgrade: their values are part of the stored format
// (fingerprint.h, formats 1 and 2) and must never move.  Each of these was
// computed when its format was current.
TEST(FingerprintTest, StoredValuesNeverChange) {
  const Namespace ns{"db", "coll"};
  UpdateRequest update;
  update.ns = ns;
  UpdateStatement st;
  st.q = test::Json(R"({"b": 2, "_id": "doc-1"})");
  st.u = test::Json(R"({"$set": {"score": 1.5, "a.b": "x"}, "$inc": {"n": 1}})");
  st.basis_version = 7;
  update.updates.push_back(st);
  EXPECT_EQ("a2b8f87840eaf3dbe121e26fea1d126c", Hex(RequestFingerprint(update)));

  InsertRequest insert;
  insert.ns = ns;
  insert.ordered = false;
  insert.documents.push_back(test::Json(R"({"_id": 1, "a": [1, 2, {"b": null}]})"));
  // A canonical form of several kilobytes.
  insert.documents.push_back(test::Json(R"({"_id": 2, "text": ")" + std::string(6000, 'x') + R"("})"));
  EXPECT_EQ("91ec1f8d0b1e3153bfc0b98dbac55844", Hex(RequestFingerprint(insert)));

  DeleteRequest del;
  del.ns = ns;
  DeleteStatement d;
  d.q = test::Json(R"({"status": "done"})");
  d.limit = 0;
  del.deletes.push_back(d);
  EXPECT_EQ("0ef73b4f259ccd7bc39810b39b05d6be", Hex(RequestFingerprint(del)));

  FindAndModifyRequest fam;
  fam.ns = ns;
  fam.query = test::Json(R"({"_id": 3})");
  fam.sort = test::Json(R"({"a": -1})");
  fam.update = test::Json(R"({"$set": {"a": 1}})");
  fam.return_new = true;
  EXPECT_EQ("a6305245493da55fc6f3f0d37e3d647f", Hex(RequestFingerprint(fam)));

  EXPECT_EQ("2a5b0522a56ddc950ddc786a3dfd3557", Hex(CommitFingerprint()));

  Document command = test::Json(R"({"update": "coll", "$db": "db", "writeContext": {"taskId": "t"},
      "updates": [{"u": {"$set": {"y": 2, "x": 1}}, "q": {"b": 2, "a": 1}}]})");
  EXPECT_EQ("4cc0b1caf07f2307d6724a40735c45af", Hex(CommandFingerprint(command.bson())));
}

}  // namespace
}  // namespace commands
}  // namespace gatedb
