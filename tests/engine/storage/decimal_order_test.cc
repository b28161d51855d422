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

TEST_F(DecimalOrderTest, DecimalIdsAreDistinctWhereTheyDifferAt34Digits) {
  InsertRequest ins;
  ins.ns = {"test", "ids"};
  ins.documents.push_back(test::Json(R"({"_id": {"$numberDecimal": "9999999999999999999999999999999999"}})"));
  ins.documents.push_back(test::Json(R"({"_id": {"$numberDecimal": "9999999999999999999999999999999998"}})"));
  ins.documents.push_back(test::Json(R"({"_id": 0.1})"));
  ins.documents.push_back(test::Json(R"({"_id": {"$numberDecimal": "0.1"}})"));
  ins.documents.push_back(test::Json(R"({"_id": 5})"));
  auto r = db_->Insert(ins);
  ASSERT_OK(r);
  EXPECT_EQ(r->n, 5);
  // Equal values are one _id, whatever the type or cohort.
  InsertRequest dup;
  dup.ns = {"test", "ids"};
  dup.documents.push_back(test::Json(R"({"_id": {"$numberDecimal": "5.000"}})"));
  auto d = db_->Insert(dup);
  ASSERT_OK(d);
  EXPECT_EQ(d->n, 0);
  ASSERT_EQ(d->write_errors.size(), 1u);
  EXPECT_EQ(d->write_errors[0].status.code(), ErrorCode::kDuplicateKey);
}

// Every operator through every index, against a forced collection scan: the
// index keys and the planner's bounds around values whose neighbours differ
// from them only beyond 64 bits (key_format.h, planner.cc).
class DecimalIndexTest : public DecimalOrderTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    DecimalOrderTest::SetUp();
    if (HasFatalFailure()) return;
    // w: a second field for compound keys, so that (w, v) pairs are distinct.
    UpdateRequest up;
    up.ns = kNs;
    for (int i = 0; i < kCount; ++i) {
      UpdateStatement st;
      st.q = test::Json("{\"_id\": " + std::to_string(i) + "}");
      st.u = test::Json("{\"$set\": {\"w\": " + std::to_string(i % 3) + "}}");
      up.updates.push_back(std::move(st));
    }
    ASSERT_OK(db_->Update(up));
    // Two layouts: each direction unique once (no _id after the component)
    // and non-unique once.
    std::vector<Document> specs;
    if (GetParam() == 0) {
      specs = {test::Json(R"({"key": {"v": 1}, "name": "asc"})"),
               test::Json(R"({"key": {"v": -1}, "name": "desc", "unique": true})"),
               test::Json(R"({"key": {"v": 1, "w": -1}, "name": "asc_w"})"),
               test::Json(R"({"key": {"w": 1, "v": -1}, "name": "w_desc", "unique": true})")};
    } else {
      specs = {test::Json(R"({"key": {"v": 1}, "name": "asc", "unique": true})"),
               test::Json(R"({"key": {"v": -1}, "name": "desc"})"),
               test::Json(R"({"key": {"v": -1, "w": 1}, "name": "desc_w", "unique": true})"),
               test::Json(R"({"key": {"w": -1, "v": 1}, "name": "w_asc"})")};
    }
    names_.clear();
    for (const Document& d : specs) names_.push_back(test::StrAt(d.bson(), "name"));
    ASSERT_OK(db_->CreateIndexes(kNs, specs));
  }

  std::vector<int64_t> Run(const std::string& filter, const std::string& sort, const std::optional<Value>& hint) {
    FindRequest req;
    req.ns = kNs;
    req.filter = test::Json(filter);
    req.sort = test::Json(sort);
    req.hint = hint;
    auto r = db_->Find(req);
    EXPECT_OK(r) << filter;
    std::vector<int64_t> ids;
    if (r.ok()) {
      for (const Document& d : r->docs) ids.push_back(IdOf(d.bson()));
    }
    return ids;
  }

  // The query through the planner and through every index, against the scan.
  void Check(const std::string& filter, const std::string& sort) {
    SCOPED_TRACE("filter " + filter + " sort " + sort);
    std::vector<int64_t> want = Run(filter, sort, NaturalHint());
    EXPECT_EQ(Run(filter, sort, std::nullopt), want) << "planned";
    for (const std::string& name : names_) EXPECT_EQ(Run(filter, sort, index_test::NameHint(name)), want) << name;
    ++checked_;
  }

  std::vector<std::string> names_;
  int checked_ = 0;
};

TEST_P(DecimalIndexTest, EveryOperatorAgreesWithCollectionScan) {
  const char* const kSorts[] = {R"({"v": 1, "_id": 1})", R"({"v": -1, "_id": 1})", R"({"_id": 1})"};
  for (int i = 0; i < kCount; ++i) {
    const std::string v = kOrdered[i];
    const std::string before = kOrdered[i > 0 ? i - 1 : i], after = kOrdered[i + 1 < kCount ? i + 1 : i];
    for (const char* sort : kSorts) {
      Check(R"({"v": )" + v + "}", sort);
      for (const char* op : {"$gt", "$gte", "$lt", "$lte"}) Check(R"({"v": {")" + std::string(op) + "\": " + v + "}}", sort);
      Check(R"({"v": {"$in": [)" + before + ", " + v + ", " + after + "]}}", sort);
      Check(R"({"v": {"$gt": )" + before + ", \"$lt\": " + after + "}}", sort);
      Check(R"({"v": {"$gte": )" + v + ", \"$lte\": " + after + "}}", sort);
      // Compound: a point on w, then v; and a range on v with a point on w.
      for (int w = 0; w < 3; ++w) {
        Check(R"({"w": )" + std::to_string(w) + R"(, "v": {"$gte": )" + v + "}}", sort);
        Check(R"({"w": )" + std::to_string(w) + R"(, "v": {"$lt": )" + v + "}}", sort);
        Check(R"({"w": )" + std::to_string(w) + R"(, "v": )" + v + "}", sort);
      }
      Check(R"({"w": {"$in": [0, 2]}, "v": {"$lte": )" + v + "}}", sort);
    }
  }
  EXPECT_GT(checked_, kCount * 3 * 10);
  // The sort an index provides is exact too.
  std::vector<int64_t> asc = Range(0, kCount), desc = asc;
  std::reverse(desc.begin(), desc.end());
  for (const std::string& name : names_) {
    if (name.find("w") == 0) continue;  // w leads: not v's order
    EXPECT_EQ(Run("{}", R"({"v": 1})", index_test::NameHint(name)), asc) << name;
    EXPECT_EQ(Run("{}", R"({"v": -1})", index_test::NameHint(name)), desc) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, DecimalIndexTest, ::testing::Values(0, 1));

}  // namespace
}  // namespace gatedb
