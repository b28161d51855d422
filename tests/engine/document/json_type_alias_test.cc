// Document::FromJson and the query operator $type: libbson's JSON reader
// takes a "$type" key as the legacy binary form ({"$binary": ..., "$type":
// "00"}); FromJson must read every $type alias MongoDB accepts, as a string,
// a number or an array, and still read the legacy binary form as binary.
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::StatusIs;

std::string Canonical(const std::string& json) {
  StatusOr<Document> d = Document::FromJson(json);
  if (!d.ok()) return "error: " + d.status().ToString();
  return d->ToJson(JsonMode::kCanonical);
}

std::string ErrorOf(const std::string& json) {
  StatusOr<Document> d = Document::FromJson(json);
  if (d.ok()) return "ok: " + d->ToJson();
  EXPECT_EQ(d.status().code(), ErrorCode::kFailedToParse) << json;
  return d.status().reason();
}

const char* const kAliases[] = {
    "double", "string", "object",     "array",     "binData", "undefined", "objectId", "bool",
    "date",   "null",   "regex",      "dbPointer", "javascript", "symbol", "javascriptWithScope",
    "int",    "timestamp", "long",    "decimal",   "minKey",  "maxKey",    "number",
};

TEST(JsonTypeAliasTest, EveryStringAlias) {
  for (const char* alias : kAliases) {
    std::string json = std::string(R"({"ts": {"$type": ")") + alias + R"("}})";
    EXPECT_EQ(Canonical(json), std::string(R"({ "ts" : { "$type" : ")") + alias + R"(" } })") << json;
    // Not first in its object, and at the top level.
    json = std::string(R"({"ts": {"$exists": true, "$type": ")") + alias + R"("}})";
    EXPECT_EQ(Canonical(json),
              std::string(R"({ "ts" : { "$exists" : true, "$type" : ")") + alias + R"(" } })")
        << json;
    json = std::string(R"({"$type": ")") + alias + R"("})";
    EXPECT_EQ(Canonical(json), std::string(R"({ "$type" : ")") + alias + R"(" })") << json;
  }
  // Names the matcher refuses still read as strings (the matcher reports them).
  EXPECT_EQ(Canonical(R"({"a": {"$type": "missing"}})"), R"({ "a" : { "$type" : "missing" } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": "00"}})"), R"({ "a" : { "$type" : "00" } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": ""}})"), R"({ "a" : { "$type" : "" } })");
}

TEST(JsonTypeAliasTest, EveryNumericCode) {
  std::vector<int> codes = {-1, 127};
  for (int c = 1; c <= 19; ++c) codes.push_back(c);
  for (int code : codes) {
    std::string n = std::to_string(code);
    EXPECT_EQ(Canonical(R"({"a": {"$type": )" + n + "}}"),
              R"({ "a" : { "$type" : { "$numberInt" : ")" + n + R"(" } } })");
  }
  EXPECT_EQ(Canonical(R"({"a": {"$type": 9.0}})"), R"({ "a" : { "$type" : { "$numberDouble" : "9.0" } } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": {"$numberLong": "9"}}})"),
            R"({ "a" : { "$type" : { "$numberLong" : "9" } } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": {"$numberDecimal": "9"}}})"),
            R"({ "a" : { "$type" : { "$numberDecimal" : "9" } } })");
  // Values the matcher refuses still read (the matcher reports them).
  EXPECT_EQ(Canonical(R"({"a": {"$type": true}})"), R"({ "a" : { "$type" : true } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": null}})"), R"({ "a" : { "$type" : null } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": {}}})"), R"({ "a" : { "$type" : {  } } })");
}

TEST(JsonTypeAliasTest, Arrays) {
  EXPECT_EQ(Canonical(R"({"a": {"$type": ["string", "date"]}})"),
            R"({ "a" : { "$type" : [ "string", "date" ] } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": ["double", 9, "number", -1]}})"),
            R"({ "a" : { "$type" : [ "double", { "$numberInt" : "9" }, "number", { "$numberInt" : "-1" } ] } })");
  EXPECT_EQ(Canonical(R"({"a": {"$type": []}})"), R"({ "a" : { "$type" : [  ] } })");
  // The BSON is exactly what the builder makes.
  bson_t* want = BCON_NEW("a", "{", "$type", "[", BCON_UTF8("binData"), BCON_INT32(9), "]", "}");
  StatusOr<Document> got = Document::FromJson(R"({"a": {"$type": ["binData", 9]}})");
  ASSERT_OK(got);
  EXPECT_TRUE(BinaryEqual(got->view(), DocumentView(want))) << got->ToJson();
  bson_destroy(want);
}

TEST(JsonTypeAliasTest, NestedInOperators) {
  EXPECT_EQ(Canonical(R"({"a": {"$not": {"$type": "date"}}})"), R"({ "a" : { "$not" : { "$type" : "date" } } })");
  EXPECT_EQ(Canonical(R"({"a": {"$elemMatch": {"$type": "double"}}})"),
            R"({ "a" : { "$elemMatch" : { "$type" : "double" } } })");
  EXPECT_EQ(Canonical(R"({"a": {"$elemMatch": {"b": {"$type": ["bool"]}}}})"),
            R"({ "a" : { "$elemMatch" : { "b" : { "$type" : [ "bool" ] } } } })");
  EXPECT_EQ(Canonical(R"({"$and": [{"a": {"$type": "array"}}, {"$or": [{"b": {"$type": 9}}, {"c": {"$not": {"$type": "decimal"}}}]}]})"),
            R"({ "$and" : [ { "a" : { "$type" : "array" } }, { "$or" : [ { "b" : { "$type" : { "$numberInt" : "9" } } }, { "c" : { "$not" : { "$type" : "decimal" } } } ] } ] })");
  // A whole command, as the CLI reads it.
  EXPECT_EQ(Canonical(R"({"find": "t", "filter": {"ts": {"$type": "date"}}, "projection": {"_id": 1}})"),
            R"({ "find" : "t", "filter" : { "ts" : { "$type" : "date" } }, "projection" : { "_id" : { "$numberInt" : "1" } } })");
  // Two $type keys in one object are both kept.
  EXPECT_EQ(Canonical(R"({"a": {"$type": "int", "$type": 2}})"),
            R"({ "a" : { "$type" : "int", "$type" : { "$numberInt" : "2" } } })");
}

TEST(JsonTypeAliasTest, LegacyBinaryStaysBinary) {
  struct Case {
    const char* json;
    bson_subtype_t subtype;
    std::vector<uint8_t> bytes;
  };
  const Case cases[] = {
      {R"({"b": {"$binary": "AAEC", "$type": "00"}})", BSON_SUBTYPE_BINARY, {0, 1, 2}},
      {R"({"b": {"$type": "00", "$binary": "AAEC"}})", BSON_SUBTYPE_BINARY, {0, 1, 2}},
      {R"({"b": {"$binary": "/w==", "$type": "80"}})", BSON_SUBTYPE_USER, {0xff}},
      {R"({"b": {"$binary": "AQID", "$type": "05"}})", BSON_SUBTYPE_MD5, {1, 2, 3}},
      {R"({"b": {"$binary": {"base64": "AQID", "subType": "00"}}})", BSON_SUBTYPE_BINARY, {1, 2, 3}},
      // A "$binary" key spelled with escapes still makes it the binary form.
      {R"({"b": {"\u0024binary": "AAEC", "$type": "00"}})", BSON_SUBTYPE_BINARY, {0, 1, 2}},
  };
  for (const Case& c : cases) {
    StatusOr<Document> d = Document::FromJson(c.json);
    ASSERT_OK(d) << c.json;
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, d->bson(), "b")) << c.json;
    ASSERT_TRUE(BSON_ITER_HOLDS_BINARY(&it)) << c.json << " -> " << d->ToJson();
    bson_subtype_t subtype;
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_binary(&it, &subtype, &len, &data);
    EXPECT_EQ(subtype, c.subtype) << c.json;
    EXPECT_EQ(std::vector<uint8_t>(data, data + len), c.bytes) << c.json;
  }
  // A $type operator beside a binary value: only the operator is renamed.
  EXPECT_EQ(Canonical(R"({"a": {"$type": "binData", "$eq": {"$binary": "AAEC", "$type": "00"}}})"),
            R"({ "a" : { "$type" : "binData", "$eq" : { "$binary" : { "base64" : "AAEC", "subType" : "00" } } } })");
  EXPECT_EQ(Canonical(R"({"a": {"$in": [{"$binary": "AAEC", "$type": "00"}], "$type": 5}})"),
            R"({ "a" : { "$in" : [ { "$binary" : { "base64" : "AAEC", "subType" : "00" } } ], "$type" : { "$numberInt" : "5" } } })");
  // The legacy form with a missing half still fails as before.
  EXPECT_THAT(Document::FromJson(R"({"b": {"$binary": "AAEC"}})"), StatusIs(ErrorCode::kFailedToParse));
}

TEST(JsonTypeAliasTest, TypeInsideStringsIsUntouched) {
  StatusOr<Document> d = Document::FromJson(
      R"({"s": "\"$type\": 1", "t": "{\"$type\": \"date\"}", "u": ["$type", "\\", "$type"], "v": {"k": "$type"}})");
  ASSERT_OK(d);
  EXPECT_EQ(test::StrAt(d->bson(), "s"), "\"$type\": 1");
  EXPECT_EQ(test::StrAt(d->bson(), "t"), "{\"$type\": \"date\"}");
  EXPECT_EQ(test::StringsAt(d->bson(), "u"), (std::vector<std::string>{"$type", "\\", "$type"}));
  EXPECT_EQ(test::StrAt(d->bson(), "v.k"), "$type");
  // Keys that merely contain $type are not the operator.
  EXPECT_EQ(Canonical(R"({"a$type": 1, "$types": 2, "x": {"$typeX": 3}})"),
            R"({ "a$type" : { "$numberInt" : "1" }, "$types" : { "$numberInt" : "2" }, "x" : { "$typeX" : { "$numberInt" : "3" } } })");
}

TEST(JsonTypeAliasTest, EscapesInKeys) {
  // "$type" spelled with escapes is the same key.
  EXPECT_EQ(Canonical(R"({"a": {"\u0024type": "date"}})"), R"({ "a" : { "$type" : "date" } })");
  EXPECT_EQ(Canonical(R"({"a": {"$\u0074ype": 9}})"), R"({ "a" : { "$type" : { "$numberInt" : "9" } } })");
  EXPECT_EQ(Canonical(R"({"a": {"\u0024\u0074\u0079\u0070\u0065": ["int"]}})"),
            R"({ "a" : { "$type" : [ "int" ] } })");
  // Escaped quotes and backslashes in the keys and values around it.
  EXPECT_EQ(Canonical(R"({"x\"$type": {"$type": "bool"}, "k\\": {"$type": "date"}, "q": "\\\"", "r": {"\"": {"$type": 1}}})"),
            R"({ "x\"$type" : { "$type" : "bool" }, "k\\" : { "$type" : "date" }, "q" : "\\\"", "r" : { "\"" : { "$type" : { "$numberInt" : "1" } } } })");
  // Non-ASCII keys and values beside it.
  EXPECT_EQ(Canonical(R"({"\u00e9t\u00e9": {"$type": "date"}, "ü": "$type"})"),
            R"({ "été" : { "$type" : "date" }, "ü" : "$type" })");
}

TEST(JsonTypeAliasTest, KeysLikeTheStandInAreKept) {
  // The input's own $-keys of the stand-in's shape survive unchanged.
  EXPECT_EQ(Canonical(R"({"$0000": 1, "\u00240001": 2, "a": {"$type": "date", "$0002": 3}, "$each": 4})"),
            R"({ "$0000" : { "$numberInt" : "1" }, "$0001" : { "$numberInt" : "2" }, "a" : { "$type" : "date", "$0002" : { "$numberInt" : "3" } }, "$each" : { "$numberInt" : "4" } })");
}

TEST(JsonTypeAliasTest, CodeWithScope) {
  EXPECT_EQ(Canonical(R"j({"c": {"$code": "f()", "$scope": {"x": {"$type": 9}}}})j"),
            R"j({ "c" : { "$code" : "f()", "$scope" : { "x" : { "$type" : { "$numberInt" : "9" } } } } })j");
}

TEST(JsonTypeAliasTest, MalformedJsonIsFailedToParse) {
  const char* const bad[] = {
      R"({"a": {"$type": }})",
      R"({"a": {"$type": "date"})",
      R"({"a": {"$type" "date"}})",
      R"({"a": {"$type": "date}})",
      R"({"a": {"$type": [1, 2}})",
      R"({"a": {"$type": "date"}}})",
      R"({"a": {"$type": "date"]})",
      R"({"\u00zz": {"$type": 1}})",
      R"({"a": {"$type": "date"}, "b": {"$binary": "AAEC", "$type": 1}})",
      R"({"a": {"$type": 9, x}})",
      R"({"$type)",
      R"({"$type": "\)",
      "{\"$type\":",
      "{\"a\": {\"$type\": \"date\"}}\\",
      R"(}{"$type": 1})",
  };
  for (const char* json : bad) {
    EXPECT_THAT(Document::FromJson(json), StatusIs(ErrorCode::kFailedToParse)) << json;
  }
  // Error positions are those of the input: the renamed key keeps its length.
  EXPECT_EQ(ErrorOf(R"({"a": {"$type": 9, x}})"), ErrorOf(R"({"a": {"$tzpe": 9, x}})"));
  EXPECT_EQ(ErrorOf(R"({"a": {"\u0024type": 9, x}})"), ErrorOf(R"({"a": {"\u0024tzpe": 9, x}})"));
  EXPECT_NE(ErrorOf(R"({"a": {"$type": 9, x}})").find("position 19"), std::string::npos)
      << ErrorOf(R"({"a": {"$type": 9, x}})");
  // Incomplete input names where it ends.
  EXPECT_NE(ErrorOf(R"({"a": {"$type": 9)").find("position 17"), std::string::npos)
      << ErrorOf(R"({"a": {"$type": 9)");
}

TEST(JsonTypeAliasTest, DeepInputIsRefusedNotCrashed) {
  for (int depth : {99, 100, 101, 200, 100000}) {
    std::string obj, arr;
    for (int i = 0; i < depth; ++i) obj += R"({"a": )";
    obj += R"({"$type": "date"})";
    for (int i = 0; i < depth; ++i) obj += "}";
    arr = R"({"a": )" + std::string(depth, '[') + R"({"$type": 9})" + std::string(depth, ']') + "}";
    StatusOr<Document> d = Document::FromJson(obj);
    if (!d.ok()) {
      EXPECT_THAT(d, StatusIs(ErrorCode::kFailedToParse)) << depth;
    }
    StatusOr<Document> a = Document::FromJson(arr);
    if (!a.ok()) {
      EXPECT_THAT(a, StatusIs(ErrorCode::kFailedToParse)) << depth;
    }
  }
  // Unclosed brackets only.
  EXPECT_THAT(Document::FromJson("{\"$type\": " + std::string(1000000, '[')), StatusIs(ErrorCode::kFailedToParse));
  EXPECT_THAT(Document::FromJson("{\"a\": " + std::string(1000000, '{')), StatusIs(ErrorCode::kFailedToParse));
  // Moderately deep input that libbson accepts keeps its $type.
  std::string ok;
  for (int i = 0; i < 50; ++i) ok += R"({"a": )";
  ok += R"({"$type": "date"})";
  for (int i = 0; i < 50; ++i) ok += "}";
  StatusOr<Document> d = Document::FromJson(ok);
  ASSERT_OK(d);
  std::string path;
  for (int i = 0; i < 49; ++i) path += "a.";
  path += "a.$type";
  EXPECT_EQ(test::StrAt(d->bson(), path.c_str()), "date");
}

TEST(JsonTypeAliasTest, ManyTypeKeys) {
  std::string json = "{";
  for (int i = 0; i < 20000; ++i) {
    if (i > 0) json += ", ";
    json += "\"f" + std::to_string(i) + "\": {\"$type\": " + (i % 2 ? "\"date\"" : "[\"int\", 9]") + "}";
  }
  json += "}";
  StatusOr<Document> d = Document::FromJson(json);
  ASSERT_OK(d);
  EXPECT_EQ(test::StrAt(d->bson(), "f19999.$type"), "date");
  EXPECT_EQ(test::StrAt(d->bson(), "f1.$type"), "date");
  EXPECT_TRUE(test::HasPath(d->bson(), "f0.$type"));
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, d->bson()));
  int n = 0;
  while (bson_iter_next(&it)) {
    bson_iter_t sub;
    ASSERT_TRUE(bson_iter_recurse(&it, &sub));
    ASSERT_TRUE(bson_iter_next(&sub));
    EXPECT_STREQ(bson_iter_key(&sub), "$type");
    ++n;
  }
  EXPECT_EQ(n, 20000);
}

}  // namespace
}  // namespace gatedb
