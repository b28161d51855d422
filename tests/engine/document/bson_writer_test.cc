#include "engine/document/bson_writer.h"

#include <limits>
#include <string>

#include "engine/document/validate.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

std::string Bytes(const bson_t* b) { return std::string(reinterpret_cast<const char*>(bson_get_data(b)), b->len); }

// Every kind of element BsonWriter writes, next to what libbson writes for
// it: the bytes must be the same.
TEST(BsonWriterTest, WritesWhatLibbsonWrites) {
  Document doc = test::Json(R"({"k": 1, "arr": [1, "two", {"three": 3}]})");
  bson_iter_t arr_it;
  ASSERT_TRUE(bson_iter_init_find(&arr_it, doc.bson(), "arr"));
  const bson_value_t* arr = bson_iter_value(&arr_it);
  const std::string with_nul("a\0b", 3);

  bson_t want = BSON_INITIALIZER;
  BSON_APPEND_INT64(&want, "i64", std::numeric_limits<int64_t>::min());
  BSON_APPEND_INT32(&want, "i32", -7);
  BSON_APPEND_DOUBLE(&want, "d", -0.5);
  BSON_APPEND_BOOL(&want, "t", true);
  BSON_APPEND_BOOL(&want, "f", false);
  BSON_APPEND_DATE_TIME(&want, "at", 1700000000123);
  BSON_APPEND_NULL(&want, "n");
  const uint8_t bin[] = {0, 1, 2, 255};
  bson_append_binary(&want, "bin", -1, BSON_SUBTYPE_BINARY, bin, sizeof bin);
  bson_append_binary(&want, "old", -1, BSON_SUBTYPE_BINARY_DEPRECATED, bin, sizeof bin);
  bson_append_binary(&want, "uuid", -1, BSON_SUBTYPE_UUID, bin, 0);
  BSON_APPEND_UTF8(&want, "s", "héllo");
  bson_append_utf8(&want, "nul", -1, with_nul.data(), static_cast<int>(with_nul.size()));
  BSON_APPEND_UTF8(&want, "", "empty key");
  BSON_APPEND_DOCUMENT(&want, "doc", doc.bson());
  bson_append_value(&want, "arr", -1, arr);
  bson_t sub, inner;
  BSON_APPEND_DOCUMENT_BEGIN(&want, "open", &sub);
  BSON_APPEND_INT32(&sub, "x", 1);
  BSON_APPEND_ARRAY_BEGIN(&sub, "list", &inner);
  BSON_APPEND_UTF8(&inner, "0", "a");
  BSON_APPEND_UTF8(&inner, "1", "b");
  bson_append_array_end(&sub, &inner);
  bson_append_document_end(&want, &sub);
  BSON_APPEND_ARRAY_BEGIN(&want, "emptyArray", &sub);
  bson_append_array_end(&want, &sub);

  std::string out = "prefix";
  BsonWriter w(&out);
  w.Int64("i64", std::numeric_limits<int64_t>::min());
  w.Int32("i32", -7);
  w.Double("d", -0.5);
  w.Bool("t", true);
  w.Bool("f", false);
  w.DateTime("at", 1700000000123);
  w.Null("n");
  w.Binary("bin", BSON_SUBTYPE_BINARY, bin, sizeof bin);
  w.Binary("old", BSON_SUBTYPE_BINARY_DEPRECATED, bin, sizeof bin);
  w.Binary("uuid", BSON_SUBTYPE_UUID, bin, 0);
  w.Utf8("s", "héllo");
  w.Utf8("nul", with_nul);
  w.Utf8("", "empty key");
  w.Document("doc", bson_get_data(doc.bson()), doc.bson()->len);
  w.Value("arr", *arr);
  w.OpenDocument("open");
  w.Int32("x", 1);
  w.OpenArray("list");
  char buf[16];
  w.Utf8(BsonWriter::ArrayKey(0, buf), "a");
  w.Utf8(BsonWriter::ArrayKey(1, buf), "b");
  w.Close();
  w.Close();
  w.OpenArray("emptyArray");
  w.Close();
  const uint32_t len = w.Finish();

  ASSERT_EQ(want.len, len);
  EXPECT_EQ("prefix", out.substr(0, 6)) << "what came before the document is kept";
  EXPECT_EQ(Bytes(&want), out.substr(6));
  bson_destroy(&want);
}

// Value() writes every type as AppendValueVerbatim does (the write path's
// own encoding of stored values), the rarer ones included.
TEST(BsonWriterTest, ValueOfEveryTypeMatchesAppendValueVerbatim) {
  Document all = test::EveryJsonType();
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, all.bson()));
  size_t seen = 0;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    SCOPED_TRACE(key);
    bson_t want = BSON_INITIALIZER;
    ASSERT_TRUE(AppendValueVerbatim(&want, key, -1, bson_iter_value(&it)));
    std::string out;
    BsonWriter w(&out);
    w.Value(key, *bson_iter_value(&it));
    w.Finish();
    EXPECT_EQ(Bytes(&want), out);
    bson_destroy(&want);
    ++seen;
  }
  EXPECT_EQ(test::kEveryJsonTypeFields, seen);
}

// A document far larger than the writer was told to expect: the string
// grows (several times, mid-element too) and ends exactly after it.
TEST(BsonWriterTest, GrowsPastTheExpectedLength) {
  bson_t want = BSON_INITIALIZER, arr;
  BSON_APPEND_ARRAY_BEGIN(&want, "list", &arr);
  std::string out = "x";
  BsonWriter w(&out, 1);
  w.OpenArray("list");
  char buf[16];
  const std::string long_value(3000, 'v');
  for (uint32_t i = 0; i < 500; ++i) {
    const std::string value = i % 100 == 0 ? long_value : std::to_string(i);
    BSON_APPEND_UTF8(&arr, BsonWriter::ArrayKey(i, buf).data(), value.c_str());
    w.Utf8(BsonWriter::ArrayKey(i, buf), value);
  }
  bson_append_array_end(&want, &arr);
  w.Close();
  EXPECT_EQ(want.len, w.Finish());
  EXPECT_EQ("x" + Bytes(&want), out);
  bson_destroy(&want);
}

TEST(BsonWriterTest, ElementCopiesBytesAndArrayKeysCount) {
  Document doc = test::Json(R"({"a": {"b": [1, 2]}, "z": "last"})");
  std::string out;
  BsonWriter w(&out);
  // The whole of doc's elements, copied: the same document.
  w.Element(bson_get_data(doc.bson()) + 4, doc.bson()->len - 5);
  w.Finish();
  EXPECT_EQ(Bytes(doc.bson()), out);

  char buf[16];
  EXPECT_EQ("0", BsonWriter::ArrayKey(0, buf));
  EXPECT_EQ("999", BsonWriter::ArrayKey(999, buf));
  EXPECT_EQ("1000", BsonWriter::ArrayKey(1000, buf));
  EXPECT_EQ("4294967295", BsonWriter::ArrayKey(4294967295u, buf));
}

}  // namespace
}  // namespace gatedb
