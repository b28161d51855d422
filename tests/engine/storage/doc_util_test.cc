// The write path's document helpers (engine/storage/doc_util.h): the
// store-owned version field and the _id of documents and filters.
#include "engine/storage/doc_util.h"

#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

std::string Bytes(const bson_t* b) { return std::string(reinterpret_cast<const char*>(bson_get_data(b)), b->len); }

using test::Keys;

// The field's type and, for an int64, its value.
struct Field {
  bool present = false;
  bson_type_t type = BSON_TYPE_EOD;
  int64_t i64 = 0;
};
Field Get(const bson_t* doc, const char* key) {
  Field f;
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, key)) return f;
  f.present = true;
  f.type = bson_iter_type(&it);
  if (f.type == BSON_TYPE_INT64) f.i64 = bson_iter_int64(&it);
  return f;
}

// SetVersionField, checked against the overload told what the document
// holds (as ValidateForStorage's summary tells the insert path).
Document SetVersion(const Document& in, const std::string& field, int64_t v) {
  bson_t* out = bson_new();
  SetVersionField(in.bson(), field, v, out);
  TopLevelSummary top;
  EXPECT_OK(ValidateForStorage(in.bson(), field, &top));
  for (uint32_t offset : {0u, top.probe_offset}) {
    bson_t* told = bson_new();
    SetVersionField(in.bson(), field, v, top.probe, offset, told);
    EXPECT_TRUE(bson_equal(out, told)) << "told " << static_cast<int>(top.probe) << " at " << offset;
    bson_destroy(told);
  }
  return Document::Adopt(out);
}

// ---- SetVersionField -------------------------------------------------------

TEST(SetVersionFieldTest, PresentFieldIsReplacedInPlace) {
  Document in = Json(R"({"_id": 1, "version": {"$numberLong": "3"}, "a": "x"})");
  Document out = SetVersion(in, "version", 4);
  EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "version", "a"}));
  Field f = Get(out.bson(), "version");
  EXPECT_EQ(f.type, BSON_TYPE_INT64);
  EXPECT_EQ(f.i64, 4);
  EXPECT_EQ(test::StrAt(out.bson(), "a"), "x");
  EXPECT_EQ(test::IntAt(out.bson(), "_id"), 1);
}

TEST(SetVersionFieldTest, AbsentFieldIsAppended) {
  Document in = Json(R"({"_id": 1, "a": "x"})");
  Document out = SetVersion(in, "version", 0);
  EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "a", "version"}));
  Field f = Get(out.bson(), "version");
  EXPECT_EQ(f.type, BSON_TYPE_INT64);
  EXPECT_EQ(f.i64, 0);
}

TEST(SetVersionFieldTest, FieldOfAnotherTypeBecomesInt64) {
  for (const char* json : {R"({"_id": 1, "version": "seven", "z": 1})", R"({"_id": 1, "version": 7, "z": 1})",
                           R"({"_id": 1, "version": 7.5, "z": 1})", R"({"_id": 1, "version": null, "z": 1})",
                           R"({"_id": 1, "version": {"n": 1}, "z": 1})"}) {
    Document out = SetVersion(Json(json), "version", 12);
    EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "version", "z"})) << json;
    Field f = Get(out.bson(), "version");
    EXPECT_EQ(f.type, BSON_TYPE_INT64) << json;
    EXPECT_EQ(f.i64, 12) << json;
  }
}

TEST(SetVersionFieldTest, OnlyTheFirstOfDuplicateFieldsIsSet) {
  for (const char* first : {R"({"$numberLong": "3"})", "3"}) {  // the int64 path and the element-by-element one
    bson_t* b = bson_new();
    BSON_APPEND_INT32(b, "_id", 1);
    Document v = Json(std::string("{\"v\": ") + first + "}");
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, v.bson(), "v"));
    bson_append_iter(b, "version", -1, &it);
    BSON_APPEND_INT64(b, "version", 5);
    Document out = SetVersion(Document::Adopt(b), "version", 9);
    EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "version", "version"})) << first;
    Field f = Get(out.bson(), "version");  // the first
    EXPECT_EQ(f.type, BSON_TYPE_INT64);
    EXPECT_EQ(f.i64, 9) << first;
    bson_iter_t second;
    ASSERT_TRUE(bson_iter_init(&second, out.bson()));
    int seen = 0;
    while (bson_iter_next(&second)) {
      if (std::string(bson_iter_key(&second)) == "version" && ++seen == 2) {
        EXPECT_EQ(bson_iter_as_int64(&second), 5);
      }
    }
    EXPECT_EQ(seen, 2);
  }
}

TEST(SetVersionFieldTest, OnlyTheTopLevelFieldCounts) {
  Document in = Json(R"({"_id": 1, "sub": {"version": 3}})");
  Document out = SetVersion(in, "version", 5);
  EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "sub", "version"}));
  EXPECT_EQ(test::IntAt(out.bson(), "sub.version"), 3);
  EXPECT_EQ(Get(out.bson(), "version").i64, 5);
}

TEST(SetVersionFieldTest, CustomFieldNameLeavesOtherFieldsAlone) {
  Document in = Json(R"({"_id": 1, "version": "mine", "rev": 2})");
  Document out = SetVersion(in, "rev", 3);
  EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"_id", "version", "rev"}));
  EXPECT_EQ(test::StrAt(out.bson(), "version"), "mine");
  Field f = Get(out.bson(), "rev");
  EXPECT_EQ(f.type, BSON_TYPE_INT64);
  EXPECT_EQ(f.i64, 3);
}

TEST(SetVersionFieldTest, EmptyDocumentGetsTheField) {
  Document out = SetVersion(Document(), "version", -1);
  EXPECT_EQ(Keys(out.bson()), (std::vector<std::string>{"version"}));
  EXPECT_EQ(Get(out.bson(), "version").i64, -1);
}

// ---- OverwriteVersionField -------------------------------------------------

TEST(OverwriteVersionFieldTest, Int64FieldIsOverwrittenInPlace) {
  Document d = Json(R"({"_id": 1, "version": {"$numberLong": "41"}, "a": 2})");
  const uint32_t len = d.bson()->len;
  ASSERT_TRUE(OverwriteVersionField(d.mutable_bson(), "version", 42));
  EXPECT_EQ(d.bson()->len, len);
  EXPECT_EQ(Keys(d.bson()), (std::vector<std::string>{"_id", "version", "a"}));
  Field f = Get(d.bson(), "version");
  EXPECT_EQ(f.type, BSON_TYPE_INT64);
  EXPECT_EQ(f.i64, 42);
  // The same bytes as building the document with the new value.
  EXPECT_EQ(Bytes(d.bson()), Bytes(Json(R"({"_id": 1, "version": {"$numberLong": "42"}, "a": 2})").bson()));
}

TEST(OverwriteVersionFieldTest, AnythingButAnInt64IsLeftUnchanged) {
  for (const char* json : {R"({"_id": 1, "version": 41})",  // int32
                           R"({"_id": 1, "version": 41.0})", R"({"_id": 1, "version": {"$numberDecimal": "41"}})",
                           R"({"_id": 1, "version": "41"})", R"({"_id": 1})",
                           R"({"_id": 1, "sub": {"version": {"$numberLong": "41"}}})"}) {
    Document d = Json(json);
    const std::string before = Bytes(d.bson());
    EXPECT_FALSE(OverwriteVersionField(d.mutable_bson(), "version", 42)) << json;
    EXPECT_EQ(Bytes(d.bson()), before) << json;
  }
}

TEST(OverwriteVersionFieldTest, UsesTheNamedField) {
  Document d = Json(R"({"version": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}})");
  ASSERT_TRUE(OverwriteVersionField(d.mutable_bson(), "rev", 9));
  EXPECT_EQ(Get(d.bson(), "rev").i64, 9);
  EXPECT_EQ(Get(d.bson(), "version").i64, 1);
}

// ---- GetId -----------------------------------------------------------------

bool PointsInto(const bson_value_t& v, const bson_t* doc) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.value.v_utf8.str);
  return p >= bson_get_data(doc) && p < bson_get_data(doc) + doc->len;
}

TEST(GetIdTest, FindsTheTopLevelIdAnywhereInTheDocument) {
  Document d = Json(R"({"a": 1, "_id": "order-1", "b": 2})");
  bson_value_t id;
  ASSERT_TRUE(GetId(d.bson(), &id));
  ASSERT_EQ(id.value_type, BSON_TYPE_UTF8);
  EXPECT_EQ(std::string(id.value.v_utf8.str, id.value.v_utf8.len), "order-1");
  EXPECT_TRUE(PointsInto(id, d.bson())) << "the value borrows from the document";
}

TEST(GetIdTest, KeepsTheIdType) {
  Document d = Json(R"({"_id": {"$oid": "0123456789abcdef01234567"}})");
  bson_value_t id;
  ASSERT_TRUE(GetId(d.bson(), &id));
  EXPECT_EQ(id.value_type, BSON_TYPE_OID);
  Document n = Json(R"({"_id": {"$numberLong": "5"}})");
  ASSERT_TRUE(GetId(n.bson(), &id));
  EXPECT_EQ(id.value_type, BSON_TYPE_INT64);
  EXPECT_EQ(id.value.v_int64, 5);
}

TEST(GetIdTest, NoTopLevelIdIsFalse) {
  bson_value_t id;
  EXPECT_FALSE(GetId(Json(R"({"a": 1})").bson(), &id));
  EXPECT_FALSE(GetId(Json(R"({"a": {"_id": 1}})").bson(), &id));
  EXPECT_FALSE(GetId(Document().bson(), &id));
}

// ---- PointIdFromFilter -----------------------------------------------------

// The relaxed JSON of the pinned _id, or "<none>".
std::string Pinned(const Document& filter) {
  bson_value_t id;
  if (!PointIdFromFilter(filter.bson(), &id)) return "<none>";
  bson_t* b = bson_new();
  BSON_APPEND_VALUE(b, "v", &id);
  std::string json = test::ToJson(b);
  bson_destroy(b);
  return json;
}

// The same rendering of an expected value written as JSON.
std::string V(const std::string& json_value) { return Json(R"({"v": )" + json_value + "}").ToJson(); }

TEST(PointIdFromFilterTest, PlainEquality) {
  EXPECT_EQ(Pinned(Json(R"({"_id": 5})")), V(R"(5)"));
  EXPECT_EQ(Pinned(Json(R"({"_id": "o1"})")), V(R"("o1")"));
  EXPECT_EQ(Pinned(Json(R"({"_id": null})")), V(R"(null)"));
  // An embedded document that is not an operator document is a value.
  EXPECT_EQ(Pinned(Json(R"({"_id": {"a": 1, "b": 2}})")), V(R"({ "a" : 1, "b" : 2 })"));
  EXPECT_EQ(Pinned(Json(R"({"_id": {}})")), V(R"({  })"));
}

TEST(PointIdFromFilterTest, DollarEq) {
  EXPECT_EQ(Pinned(Json(R"({"_id": {"$eq": 5}})")), V(R"(5)"));
  EXPECT_EQ(Pinned(Json(R"({"_id": {"$eq": "o1"}})")), V(R"("o1")"));
  EXPECT_EQ(Pinned(Json(R"({"_id": {"$eq": {"a": 1}}})")), V(R"({ "a" : 1 })"));
}

TEST(PointIdFromFilterTest, OtherFieldsOfTheFilterDoNotPreventIt) {
  // They still have to be matched, by the caller.
  EXPECT_EQ(Pinned(Json(R"({"_id": 5, "version": 3})")), V(R"(5)"));
  EXPECT_EQ(Pinned(Json(R"({"a": {"$gt": 1}, "_id": {"$eq": 5}})")), V(R"(5)"));
}

TEST(PointIdFromFilterTest, RegexArrayAndOperatorDocumentsAreRefused) {
  for (const char* json : {
           R"({"_id": {"$regularExpression": {"pattern": "^o", "options": ""}}})",
           R"({"_id": [1, 2]})",
           R"({"_id": []})",
           R"({"_id": {"$gt": 1}})",
           R"({"_id": {"$in": [1]}})",
           R"({"_id": {"$ne": 1}})",
           R"({"_id": {"$eq": {"$regularExpression": {"pattern": "^o", "options": ""}}}})",
           R"({"_id": {"$eq": [1]}})",
           R"({"_id": {"$eq": {"$gt": 1}}})",
           R"({"_id": {"$eq": 1, "$ne": 2}})",  // more than one operator
           R"({"_id": {"$gte": 1, "$eq": 1}})",
       }) {
    EXPECT_EQ(Pinned(Json(json)), "<none>") << json;
  }
}

TEST(PointIdFromFilterTest, FiltersWithoutATopLevelIdAreRefused) {
  EXPECT_EQ(Pinned(Json(R"({})")), "<none>");
  EXPECT_EQ(Pinned(Json(R"({"a": 1})")), "<none>");
  EXPECT_EQ(Pinned(Json(R"({"a._id": 1})")), "<none>");
  EXPECT_EQ(Pinned(Json(R"({"a": {"_id": 1}})")), "<none>");
}

TEST(PointIdFromFilterTest, TheIdBorrowsFromTheFilter) {
  Document filter = Json(R"({"_id": {"$eq": "abc"}})");
  bson_value_t id;
  ASSERT_TRUE(PointIdFromFilter(filter.bson(), &id));
  ASSERT_EQ(id.value_type, BSON_TYPE_UTF8);
  EXPECT_TRUE(PointsInto(id, filter.bson()));
}

}  // namespace
}  // namespace gatedb
