// The bad-input suite: every malformed or hostile request gets a clear
// error with MongoDB's code and leaves the database exactly as it was
// (documents, versions, journal, catalog).
#include <cstring>
#include <string>
#include <vector>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

struct Case {
  std::string name;
  std::string command;   // Extended JSON; built in code where JSON cannot say it
  std::string code_name;  // the reply's codeName, or the first writeErrors entry's
};

// Everything observable: every document of every collection, the journal
// head, the collection list.
std::string Snapshot(Database* db) {
  std::string out;
  for (const std::string& coll : db->ListCollectionNames("test")) {
    out += "[" + coll + "]";
    auto docs = db->GetCollection(coll).Find(test::Json("{}").view());
    if (docs.ok()) {
      for (const Document& d : *docs) out += d.ToJson(JsonMode::kCanonical);
    }
  }
  JournalQuery q;
  q.limit = 1;
  auto j = db->ReadJournal(q);
  out += "|seq=" + std::to_string(j.ok() ? j->last_seq : 0);
  return out;
}

std::string CodeNameOf(const Document& reply) {
  bson_iter_t it, f;
  if (bson_iter_init_find(&it, reply.bson(), "codeName") && BSON_ITER_HOLDS_UTF8(&it)) {
    return bson_iter_utf8(&it, nullptr);
  }
  if (bson_iter_init(&it, reply.bson()) && bson_iter_find_descendant(&it, "writeErrors.0.codeName", &f)) {
    return bson_iter_utf8(&f, nullptr);
  }
  return "";
}

// {a: {a: ... {a: 1}}} `depth` documents deep, built in BSON (libbson's
// JSON reader stops near 100 levels itself).
void AppendNested(bson_t* parent, const char* key, int depth) {
  if (depth == 0) {
    BSON_APPEND_INT32(parent, key, 1);
    return;
  }
  bson_t child;
  bson_append_document_begin(parent, key, -1, &child);
  AppendNested(&child, "a", depth - 1);
  bson_append_document_end(parent, &child);
}

// Commands JSON cannot carry: "@insert-deep" and "@find-deep".
Document Special(const std::string& which) {
  bson_t* cmd = bson_new();
  if (which == "@insert-deep") {
    BSON_APPEND_UTF8(cmd, "insert", "c");
    bson_t arr, doc;
    BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
    BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &doc);
    BSON_APPEND_INT32(&doc, "_id", 9);
    AppendNested(&doc, "d", 100);  // d is at depth 1: 101 levels in all
    bson_append_document_end(&arr, &doc);
    bson_append_array_end(cmd, &arr);
  } else {
    BSON_APPEND_UTF8(cmd, "find", "c");
    AppendNested(cmd, "filter", 150);
  }
  return Document::Adopt(cmd);
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    db_ = std::move(db).value();
    Document r = db_->RunCommand(test::Json(R"({"insert": "c", "documents": [{"_id": 1, "a": [1, 2], "s": "x"}, {"_id": 2, "n": 5}]})").view());
    ASSERT_EQ(CodeNameOf(r), "");
    r = db_->RunCommand(test::Json(R"({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$inc": {"n": 1}}}]})").view());
    ASSERT_EQ(CodeNameOf(r), "");
  }
  test::TempDir dir_;
  std::unique_ptr<Database> db_;
};

TEST_F(BadInputTest, EveryBadRequestIsRefusedAndChangesNothing) {
  std::string big(17 * 1024 * 1024, 'x');
  std::string huge_array = "[";
  for (int i = 0; i < 200000; ++i) huge_array += (i ? ",1" : "1");
  huge_array += "]";
  std::vector<Case> cases = {
      // unknown commands, fields and operators
      {"unknown command", R"({"frobnicate": "c"})", "CommandNotFound"},
      {"unknown field", R"({"insert": "c", "documents": [{"_id": 9}], "bogus": 1})", "Location40415"},
      {"unknown query operator", R"({"find": "c", "filter": {"a": {"$frob": 1}}})", "BadValue"},
      {"unknown top-level operator", R"({"find": "c", "filter": {"$frob": [{}]}})", "BadValue"},
      {"unknown update operator", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$frob": {"a": 1}}}]})", "FailedToParse"},
      {"operators and fields mixed", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}, "b": 2}}]})", "FailedToParse"},
      // wrong types for command fields
      {"documents not an array", R"({"insert": "c", "documents": {"_id": 9}})", "TypeMismatch"},
      {"document not an object", R"({"insert": "c", "documents": [5]})", "TypeMismatch"},
      {"updates not an array", R"({"update": "c", "updates": 5})", "TypeMismatch"},
      {"q not an object", R"({"update": "c", "updates": [{"q": 5, "u": {"$set": {"a": 1}}}]})", "TypeMismatch"},
      {"filter not an object", R"({"find": "c", "filter": "x"})", "TypeMismatch"},
      {"ordered not a bool", R"({"insert": "c", "documents": [{"_id": 9}], "ordered": "yes"})", "TypeMismatch"},
      {"collection name a number", R"({"insert": 5, "documents": [{"_id": 9}]})", "InvalidNamespace"},
      {"basisVersion a string", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}, "basisVersion": "3"}]})", "TypeMismatch"},
      {"basisVersion fractional", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}, "basisVersion": 1.5}]})", "BadValue"},
      {"writeContext not an object", R"({"insert": "c", "documents": [{"_id": 9}], "writeContext": 1})", "TypeMismatch"},
      {"readAt not a date", R"({"insert": "c", "documents": [{"_id": 9}], "writeContext": {"readAt": "today"}})", "TypeMismatch"},
      {"missing documents", R"({"insert": "c"})", "Location40414"},
      {"missing q", R"({"update": "c", "updates": [{"u": {"$set": {"a": 1}}}]})", "Location40414"},
      {"empty batch", R"({"insert": "c", "documents": []})", "InvalidLength"},
      // negative numbers
      {"negative limit", R"({"find": "c", "limit": -1})", "Location51024"},
      {"negative skip", R"({"find": "c", "skip": -5})", "Location51024"},
      {"delete limit 5", R"({"delete": "c", "deletes": [{"q": {}, "limit": 5}]})", "FailedToParse"},
      {"negative afterSeq", R"({"journal": "c", "afterSeq": -1})", "BadValue"},
      // invalid names and documents
      {"$ collection name", R"({"insert": "a$b", "documents": [{"_id": 9}]})", "InvalidNamespace"},
      {"empty collection name", R"({"insert": "", "documents": [{"_id": 9}]})", "InvalidNamespace"},
      {"bad database name", R"({"insert": "c", "documents": [{"_id": 9}], "$db": "a/b"})", "InvalidNamespace"},
      {"$ top-level field", R"({"insert": "c", "documents": [{"_id": 9, "$x": 1}]})", "DollarPrefixedFieldName"},
      {"empty top-level field", R"({"insert": "c", "documents": [{"_id": 9, "": 1}]})", "EmptyFieldName"},
      {"array _id", R"({"insert": "c", "documents": [{"_id": [1]}]})", "InvalidIdField"},
      {"regex _id", R"({"insert": "c", "documents": [{"_id": {"$regularExpression": {"pattern": "a", "options": ""}}}]})", "InvalidIdField"},
      {"duplicate _id", R"({"insert": "c", "documents": [{"_id": 1}]})", "DuplicateKey"},
      {"nested 101 deep", "@insert-deep", "Overflow"},
      {"over 16 MiB", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9, \"big\": \"" + big + "\"}]}", "BSONObjectTooLarge"},
      // version field and _id rules
      {"$set version", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"version": 9}}}]})", "ImmutableField"},
      {"$set _id", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"_id": 7}}}]})", "ImmutableField"},
      {"conflicting paths", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1, "a.b": 2}}}]})", "ConflictingUpdateOperators"},
      {"$inc a string", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"s": 1}}}]})", "TypeMismatch"},
      {"$push on a string", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$push": {"s": 1}}}]})", "BadValue"},
      {"field inside a scalar", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"s.t": 1}}}]})", "PathNotViable"},
      {"update makes 16 MiB", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"big\": \"" + big + "\"}}}]}", "BSONObjectTooLarge"},
      {"huge $push", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$push\": {\"a\": {\"$each\": " + huge_array + ", \"$position\": \"x\"}}}}]}", "BadValue"},
      // bad regexes and operator arguments
      {"bad regex", R"({"find": "c", "filter": {"s": {"$regex": "("}}})", "Location51091"},
      {"$in not an array", R"({"find": "c", "filter": {"a": {"$in": 5}}})", "BadValue"},
      {"$mod by zero", R"({"find": "c", "filter": {"n": {"$mod": [0, 1]}}})", "BadValue"},
      {"filter 150 deep", "@find-deep", "BadValue"},
      // sessions and transactions
      {"commit of nothing", R"({"commitTransaction": 1, "lsid": {"id": 1}, "txnNumber": 1, "autocommit": false})", "NoSuchTransaction"},
      {"autocommit true", R"({"find": "c", "lsid": {"id": 1}, "txnNumber": 1, "autocommit": true})", "InvalidOptions"},
      {"lease without holder", R"({"acquireLease": "c", "_id": 1, "ttlMs": 1000})", "BadValue"},
  };
  std::string before = Snapshot(db_.get());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<Document> cmd = c.command[0] == '@' ? StatusOr<Document>(Special(c.command)) : Document::FromJson(c.command);
    ASSERT_OK(cmd) << "the test's JSON for " << c.name;
    Document reply = db_->RunCommand(cmd->view());
    EXPECT_EQ(CodeNameOf(reply), c.code_name) << reply.ToJson().substr(0, 400);
    EXPECT_EQ(Snapshot(db_.get()), before) << "the database changed";
  }
}

TEST_F(BadInputTest, MalformedJsonAndBsonAreErrorsNotCrashes) {
  const char* bad_json[] = {"", "{", "{\"a\": }", "[1, 2]", "{\"a\": tru}", "{\"a\": 1,}", "nul", "{\"a\": \"\\uZZZZ\"}",
                            "{\"a\": {\"$numberLong\": \"x\"}}", "{\"a\": {\"$date\": \"yesterday\"}}"};
  for (const char* j : bad_json) {
    SCOPED_TRACE(j);
    EXPECT_THAT(Document::FromJson(j), test::StatusIs(ErrorCode::kFailedToParse));
  }
  // Raw BSON: truncated, wrong length, bad string length, bad UTF-8.
  Document good = test::Json(R"({"a": "hello", "b": {"c": 1}})");
  std::vector<uint8_t> bytes(good.data(), good.data() + good.size());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(Document::FromBytes(bytes.data(), cut).ok()) << "truncated at " << cut;
  }
  std::vector<uint8_t> lying = bytes;
  lying[0] = 200;  // claims more bytes than there are
  EXPECT_THAT(Document::FromBytes(lying.data(), lying.size()), test::StatusIs(ErrorCode::kInvalidBSON));
  std::vector<uint8_t> utf8 = bytes;
  for (size_t i = 0; i + 5 < utf8.size(); ++i) {
    if (std::memcmp(&utf8[i], "hello", 5) == 0) utf8[i + 1] = 0xC3;  // a lone lead byte
  }
  EXPECT_THAT(Document::FromBytes(utf8.data(), utf8.size()), test::StatusIs(ErrorCode::kInvalidBSON));
  // Every single-byte corruption of a valid document is refused or parses
  // to a valid document; none crashes.
  for (size_t i = 4; i + 1 < bytes.size(); ++i) {
    for (uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::vector<uint8_t> b = bytes;
      b[i] = v;
      auto d = Document::FromBytes(b.data(), b.size());
      if (d.ok()) {
        EXPECT_TRUE(bson_validate(d->bson(), BSON_VALIDATE_NONE, nullptr));
      }
    }
  }
}

TEST_F(BadInputTest, EmptyAndEnormousStringsAreFine) {
  std::string ten_mib(10 * 1024 * 1024, 'y');
  Document reply = db_->RunCommand(
      Document::FromJson("{\"insert\": \"s\", \"documents\": [{\"_id\": \"\", \"v\": \"\"}, {\"_id\": \"big\", \"v\": \"" + ten_mib + "\"}]}")->view());
  EXPECT_EQ(CodeNameOf(reply), "") << reply.ToJson().substr(0, 300);
  auto d = db_->GetCollection("s").FindOne(test::Json(R"({"_id": "big"})").view());
  ASSERT_OK(d);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, (**d).bson(), "v"));
  uint32_t len = 0;
  bson_iter_utf8(&it, &len);
  EXPECT_EQ(len, ten_mib.size());
}


TEST_F(BadInputTest, Issue8FuzzNestedOverrunIsInvalidBson) {
  // Found by fuzz_bson_insert: an embedded element whose length runs past
  // its parent passed libbson's bson_validate, and an insert then lost the
  // field silently.  It must be refused whole.
  const uint8_t bytes[] = {0x56, 0x00, 0x00, 0x00, 0x03, 0x61, 0x72, 0x72, 0x00, 0x4c, 0x00, 0x00, 0x00, 0x04, 0x24, 0x65, 0x61, 0x67, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x10, 0x24, 0x70, 0x6f, 0x73, 0x69, 0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x24, 0x73, 0x6c, 0x69, 0x63, 0x65, 0x00, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00};
  EXPECT_THAT(Document::FromBytes(bytes, sizeof bytes), test::StatusIs(ErrorCode::kInvalidBSON));
  bson_t b;
  if (bson_init_static(&b, bytes, sizeof bytes)) {
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "insert", "c");
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
    BSON_APPEND_DOCUMENT(&arr, "0", &b);
    bson_append_array_end(cmd, &arr);
    std::string before = Snapshot(db_.get());
    Document reply = db_->RunCommand(DocumentView(cmd));
    bson_destroy(cmd);
    EXPECT_EQ(CodeNameOf(reply), "InvalidBSON") << reply.ToJson();
    EXPECT_EQ(Snapshot(db_.get()), before);
  }
}

}  // namespace
}  // namespace gatedb
