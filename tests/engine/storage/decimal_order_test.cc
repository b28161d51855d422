// Decimal128 order through the real engine (issue 19): sorts, filters and
// _ids over mixed numeric types, where a decimal differs from its int or
// double neighbours only in the 34th digit or beyond a double's precision.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/storage/db_impl.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using index_test::IdOf;
using index_test::NaturalHint;

const Namespace kNs{"test", "dec"};

// The values, in MongoDB's order (ties listed together are equal).
const char* const kOrdered[] = {
    R"({"$numberDouble": "NaN"})",
    R"({"$numberDecimal": "-Infinity"})",
    R"({"$numberDecimal": "-1E+6144"})",
    R"({"$numberDecimal": "-5.000000000000000000000000000000001"})",
    R"(-5)",
    R"({"$numberDecimal": "-4.999999999999999999999999999999999"})",
    R"({"$numberDecimal": "-1E-6176"})",
    R"(0)",
    R"({"$numberDecimal": "1E-400"})",
    R"(5e-324)",
    R"({"$numberDecimal": "0.1"})",
    R"({"$numberDecimal": "0.1000000000000000055511151231257827"})",
    R"(0.1)",
    R"({"$numberDecimal": "0.1000000000000000055511151231257828"})",
    R"({"$numberDecimal": "4.999999999999999999999999999999999"})",
    R"({"$numberLong": "5"})",
    R"({"$numberDecimal": "5.000000000000000000000000000000001"})",
    R"({"$numberDecimal": "9223372036854775806.5"})",
    R"({"$numberLong": "9223372036854775807"})",
    R"({"$numberDecimal": "9223372036854775807.1"})",
    R"(9223372036854775808.0)",
    R"({"$numberDecimal": "9999999999999999999999999999999998"})",
    R"({"$numberDecimal": "9999999999999999999999999999999999"})",
    R"(1.7976931348623157e308)",
    R"({"$numberDecimal": "1E+400"})",
    R"({"$numberDecimal": "9.999999999999999999999999999999999E+6144"})",
    R"({"$numberDouble": "Infinity"})",
};
constexpr int kCount = sizeof(kOrdered) / sizeof(kOrdered[0]);

class DecimalOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = DBImpl::Open(dir_.path(), Options());
    ASSERT_OK(db);
    db_ = std::move(db).value();
    // Inserted in a scrambled order; _id i holds kOrdered[i].
    InsertRequest ins;
    ins.ns = kNs;
    for (int k = 0; k < kCount; ++k) {
      int i = (k * 7) % kCount;
      ins.documents.push_back(test::Json("{\"_id\": " + std::to_string(i) + ", \"v\": " + kOrdered[i] + "}"));
    }
    ASSERT_OK(db_->Insert(ins));
  }

  std::vector<int64_t> FindIds(const std::string& filter, const std::string& sort, bool natural = true) {
    FindRequest req;
    req.ns = kNs;
    req.filter = test::Json(filter);
    req.sort = test::Json(sort);
    if (natural) req.hint = NaturalHint();
    auto r = db_->Find(req);
    EXPECT_OK(r) << filter;
    std::vector<int64_t> ids;
    if (r.ok()) {
      for (const Document& d : r->docs) ids.push_back(IdOf(d.bson()));
    }
    return ids;
  }

  test::TempDir dir_;
  std::unique_ptr<DBImpl> db_;
};

std::vector<int64_t> Range(int from, int to) {
  std::vector<int64_t> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

TEST_F(DecimalOrderTest, SortsMixedTypesExactly) {
  EXPECT_EQ(FindIds("{}", R"({"v": 1})"), Range(0, kCount));
  std::vector<int64_t> desc = Range(0, kCount);
  std::reverse(desc.begin(), desc.end());
  EXPECT_EQ(FindIds("{}", R"({"v": -1})"), desc);
}

TEST_F(DecimalOrderTest, FiltersCompareExactly) {
  for (int i = 0; i < kCount; ++i) {
    std::string v = kOrdered[i];
    SCOPED_TRACE(v);
    if (i == 0) continue;  // NaN: $gt/$lt do not match NaN (MongoDB)
    EXPECT_EQ(FindIds(R"({"v": )" + v + "}", R"({"_id": 1})"), std::vector<int64_t>{i});
    EXPECT_EQ(FindIds(R"({"v": {"$gt": )" + v + "}}", R"({"_id": 1})"), Range(i + 1, kCount));
    EXPECT_EQ(FindIds(R"({"v": {"$lte": )" + v + "}}", R"({"_id": 1})"), Range(1, i + 1));
  }
}

}  // namespace
}  // namespace gatedb
