#include "engine/document/bson_compare.h"

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

int CompareField(const std::string& a_json, const std::string& b_json) {
  Document a = test::Json(a_json), b = test::Json(b_json);
  bson_iter_t ia, ib;
  EXPECT_TRUE(bson_iter_init_find(&ia, a.bson(), "v"));
  EXPECT_TRUE(bson_iter_init_find(&ib, b.bson(), "v"));
  return CompareIters(&ia, &ib);
}

TEST(BsonCompareTest, NumbersCompareByValueAcrossTypes) {
  EXPECT_EQ(0, CompareField(R"({"v": 1})", R"({"v": {"$numberLong": "1"}})"));
  EXPECT_EQ(0, CompareField(R"({"v": 1})", R"({"v": 1.0})"));
  EXPECT_EQ(0, CompareField(R"({"v": 2})", R"({"v": {"$numberDecimal": "2.0"}})"));
  EXPECT_LT(CompareField(R"({"v": 1})", R"({"v": 1.5})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberLong": "9007199254740993"}})",
                         R"({"v": 9007199254740992.0})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDouble": "NaN"}})", R"({"v": {"$numberDouble": "-Infinity"}})"), 0);
}

// Decimals compare exactly with every number type (issue 19).
TEST(BsonCompareTest, DecimalsCompareExactly) {
  // The 34th digit.
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "9999999999999999999999999999999999"}})",
                         R"({"v": {"$numberDecimal": "9999999999999999999999999999999998"}})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDecimal": "4.999999999999999999999999999999999"}})", R"({"v": 5})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "5.000000000000000000000000000000001"}})",
                         R"({"v": {"$numberLong": "5"}})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "5.000000000000000000000000000000001"}})", R"({"v": 5.0})"), 0);
  // The double boundary: the double 0.1 is 0.1000000000000000055511151231257827021...
  EXPECT_LT(CompareField(R"({"v": {"$numberDecimal": "0.1000000000000000055511151231257827"}})", R"({"v": 0.1})"), 0);
  EXPECT_GT(CompareField(R"({"v": 0.1})", R"({"v": {"$numberDecimal": "0.1"}})"), 0);
  EXPECT_EQ(CompareField(R"({"v": 0.5})", R"({"v": {"$numberDecimal": "0.50"}})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "9223372036854775807.1"}})",
                         R"({"v": {"$numberLong": "9223372036854775807"}})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberLong": "9223372036854775807"}})",
                         R"({"v": {"$numberDecimal": "9223372036854775807.1"}})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "1E+400"}})", R"({"v": 1.7976931348623157e308})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDecimal": "1E+400"}})", R"({"v": {"$numberDouble": "Infinity"}})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "1E-400"}})", R"({"v": 0})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDecimal": "1E-400"}})", R"({"v": 5e-324})"), 0);
  // NaN, zeros, infinities, across types.
  EXPECT_EQ(CompareField(R"({"v": {"$numberDecimal": "NaN"}})", R"({"v": {"$numberDouble": "NaN"}})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDecimal": "NaN"}})", R"({"v": {"$numberDouble": "-Infinity"}})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"$numberDouble": "NaN"}})", R"({"v": {"$numberDecimal": "-Infinity"}})"), 0);
  EXPECT_EQ(CompareField(R"({"v": {"$numberDecimal": "-0"}})", R"({"v": 0})"), 0);
  EXPECT_EQ(CompareField(R"({"v": {"$numberDecimal": "-0.000"}})", R"({"v": -0.0})"), 0);
  EXPECT_EQ(CompareField(R"({"v": {"$numberDecimal": "Infinity"}})", R"({"v": {"$numberDouble": "Infinity"}})"), 0);
  EXPECT_GT(CompareField(R"({"v": {"$numberDecimal": "Infinity"}})", R"({"v": {"$numberDecimal": "1E+6144"}})"), 0);
  // Inside documents and arrays.
  EXPECT_GT(CompareField(R"({"v": {"a": {"$numberDecimal": "1.000000000000000000000000000000001"}}})",
                         R"({"v": {"a": 1}})"), 0);
  EXPECT_LT(CompareField(R"({"v": [1, {"$numberDecimal": "0.1"}]})", R"({"v": [1, 0.1]})"), 0);
}

TEST(BsonCompareTest, TypeRanksOrderAcrossTypes) {
  // null < numbers < strings < objects < arrays < binary < ObjectId < bool < date
  const char* ordered[] = {
      R"({"v": {"$minKey": 1}})", R"({"v": null})", R"({"v": 5})", R"({"v": "a"})",
      R"({"v": {"x": 1}})", R"({"v": [1]})", R"({"v": {"$binary": {"base64": "AA==", "subType": "00"}}})",
      R"({"v": {"$oid": "000000000000000000000000"}})", R"({"v": false})",
      R"({"v": {"$date": {"$numberLong": "0"}}})", R"({"v": {"$maxKey": 1}})"};
  for (size_t i = 0; i + 1 < sizeof(ordered) / sizeof(ordered[0]); ++i) {
    EXPECT_LT(CompareField(ordered[i], ordered[i + 1]), 0) << ordered[i] << " vs " << ordered[i + 1];
  }
}

TEST(BsonCompareTest, DocumentsCompareElementwise) {
  EXPECT_LT(CompareField(R"({"v": {"a": 1}})", R"({"v": {"a": 1, "b": 0}})"), 0);
  EXPECT_LT(CompareField(R"({"v": {"a": 1}})", R"({"v": {"b": 0}})"), 0);
  EXPECT_EQ(0, CompareField(R"({"v": {"a": 1}})", R"({"v": {"a": 1.0}})"));
  EXPECT_GT(CompareField(R"({"v": "ab"})", R"({"v": "a"})"), 0);
}

}  // namespace
}  // namespace gatedb
