// The test that keeps the planner honest: random documents (mixed types,
// decimals a hair from ints and doubles, arrays, nested documents, missing
// fields) under a set of indexes (single,
// compound with mixed directions, multikey, sparse, partial, a unique
// descending one),
// random filters and sorts, random writes in between; every query's result
// through the planner, and through each index forced by hint, must equal the
// result of a forced collection scan ({$natural: 1}).
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/projection/sort.h"
#include "engine/storage/db_impl.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using index_test::NameHint;
using index_test::NaturalHint;

const Namespace kNs{"test", "diff"};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int Int(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool Coin(int percent) { return Int(100) < percent; }

  // A scalar from a small pool so that equality and ranges hit.
  std::string Scalar() {
    switch (Int(11)) {
      case 9: return Decimal();
      case 10: return Coin(50) ? "0.1" : "-0.5";
      case 0: return std::to_string(Int(7) - 2);
      case 1: return std::to_string(Int(7) - 2) + ".5";
      case 2: return "{\"$numberLong\": \"" + std::to_string(Int(7)) + "\"}";
      case 3: return std::string("\"") + static_cast<char>('a' + Int(4)) + "\"";
      case 4: return "null";
      case 5: return Coin(50) ? "true" : "false";
      case 6: return "{\"$date\": {\"$numberLong\": \"" + std::to_string(1000 * Int(4)) + "\"}}";
      case 7: return "\"\"";
      default: return std::to_string(Int(3));
    }
  }
  // Decimals next to the ints and doubles above: equal to them in another
  // cohort, or apart only beyond 64 bits (key_format.h's exact suffix).
  std::string Decimal() {
    static const char* kDecimals[] = {
        "5", "5.0", "5.000000000000000000000000000000001", "4.999999999999999999999999999999999",
        "-5.000000000000000000000000000000001", "-4.999999999999999999999999999999999", "0.1",
        "0.1000000000000000055511151231257827", "0.1000000000000000055511151231257828", "2.5",
        "2.500000000000000000000000000000001", "-0.5000000000000000000000000000000001", "1E+400", "-1E-400",
        "0", "-0.0", "NaN"};
    return std::string("{\"$numberDecimal\": \"") + kDecimals[Int(sizeof(kDecimals) / sizeof(kDecimals[0]))] + "\"}";
  }
  std::string Value(int depth = 0) {
    int k = Int(10);
    if (k < 6 || depth > 1) return Scalar();
    if (k < 9) {
      std::string a = "[";
      int n = Int(4);
      for (int i = 0; i < n; ++i) a += (i ? ", " : "") + (Coin(80) ? Scalar() : Value(depth + 1));
      return a + "]";
    }
    return "{\"x\": " + Scalar() + "}";
  }
  // d: a document {x: ...} or an array of them.
  std::string DValue() {
    if (Coin(50)) return "{\"x\": " + Value(1) + "}";
    std::string a = "[";
    int n = Int(3);
    for (int i = 0; i < n; ++i) a += std::string(i ? ", " : "") + "{\"x\": " + Scalar() + "}";
    return a + "]";
  }
  std::string Doc(int id) {
    std::string d = "{\"_id\": " + std::to_string(id);
    if (Coin(85)) d += ", \"a\": " + Value();
    if (Coin(75)) d += ", \"b\": " + Value();
    if (Coin(50)) d += ", \"c\": " + Scalar();
    if (Coin(60)) d += ", \"d\": " + DValue();
    // u: unique per document (a unique descending index holds it): the id,
    // or a decimal 1E-30 above or below it.
    static const char* kOffsets[] = {"", ".000000000000000000000000000001", "-0.000000000000000000000000000001"};
    int o = Int(3);
    if (o == 0) {
      d += ", \"u\": " + std::to_string(id);
    } else if (o == 1) {
      d += ", \"u\": {\"$numberDecimal\": \"" + std::to_string(id) + kOffsets[1] + "\"}";
    } else {
      std::string below = id == 0 ? kOffsets[2] : std::to_string(id - 1) + ".999999999999999999999999999999";
      d += ", \"u\": {\"$numberDecimal\": \"" + below + "\"}";
    }
    return d + "}";
  }

  std::string Field() {
    static const char* kFields[] = {"a", "b", "c", "d.x", "a", "b"};
    return kFields[Int(6)];
  }
  std::string Predicate() {
    switch (Int(12)) {
      case 0: return "{\"$gt\": " + Scalar() + "}";
      case 1: return "{\"$gte\": " + Scalar() + "}";
      case 2: return "{\"$lt\": " + Scalar() + "}";
      case 3: return "{\"$lte\": " + Scalar() + "}";
      case 4: return "{\"$gt\": " + Scalar() + ", \"$lt\": " + Scalar() + "}";
      case 5: return "{\"$in\": [" + Scalar() + ", " + Scalar() + "]}";
      case 6: return "{\"$exists\": " + std::string(Coin(50) ? "true" : "false") + "}";
      case 7: return "{\"$ne\": " + Scalar() + "}";
      case 8: return "null";
      case 9: return "{\"$gte\": " + Scalar() + ", \"$lte\": " + Scalar() + "}";
      default: return Scalar();
    }
  }
  std::string Filter() {
    int k = Int(10);
    if (k == 0) return "{}";
    auto clause = [&] { return "\"" + std::string(Coin(15) ? "u" : Field()) + "\": " + Predicate(); };
    if (k < 5) return "{" + clause() + "}";
    if (k < 7) return "{" + clause() + ", " + clause() + "}";
    if (k < 8) return "{\"$and\": [{" + clause() + "}, {" + clause() + "}]}";
    std::string f = "{\"$or\": [{" + clause() + "}, {" + clause() + "}]";
    if (Coin(30)) f += ", " + clause();
    return f + "}";
  }
  std::string Sort() {
    switch (Int(9)) {
      case 0: return "{\"a\": 1}";
      case 1: return "{\"a\": -1}";
      case 2: return "{\"b\": 1}";
      case 3: return "{\"a\": 1, \"b\": 1}";
      case 4: return "{\"a\": -1, \"c\": 1}";
      case 6: return "{\"a\": 1, \"c\": -1}";
      case 5: return "{\"c\": -1}";
      default: return "{}";
    }
  }

 private:
  std::mt19937 rng_;
};

std::vector<std::string> Ids(const std::vector<Document>& docs) {
  std::vector<std::string> ids;
  for (const Document& d : docs) {
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, d.bson(), "_id"));
    ids.push_back(Value(*bson_iter_value(&it)).ToJson());
  }
  return ids;
}

class IndexDifferentialTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    auto db = DBImpl::Open(dir_.path(), Options());
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }

  StatusOr<FindResult> Run(const Document& filter, const Document& sort, int64_t limit, std::optional<Value> hint) {
    FindRequest req;
    req.ns = kNs;
    req.filter = filter;
    req.sort = sort;
    req.limit = limit;
    req.hint = std::move(hint);
    return db_->Find(req);
  }

  // Compares one query through the planner (and each full-coverage index)
  // with the collection scan.
  void Check(Gen& g, const std::string& filter_json, const std::string& sort_json, const std::string& context) {
    Document filter = test::Json(filter_json);
    Document sort = test::Json(sort_json);
    int64_t limit = g.Coin(25) ? 1 + g.Int(5) : 0;
    StatusOr<FindResult> scan = Run(filter, sort, limit, NaturalHint());
    StatusOr<FindResult> planned = Run(filter, sort, limit, std::nullopt);
    ASSERT_EQ(scan.ok(), planned.ok()) << context << " filter " << filter_json;
    if (!scan.ok()) return;
    // Every match, for checking what an unsorted limit may return.
    StatusOr<FindResult> all = Run(filter, Document(), 0, NaturalHint());
    ASSERT_OK(all);
    all_ids_.clear();
    for (const std::string& id : Ids(all->docs)) all_ids_.insert(id);
    Compare(*scan, *planned, sort, limit, context + " planned filter " + filter_json + " sort " + sort_json);
    // Every index that holds every document may be forced.
    for (const char* name : {"a_1", "b_-1", "a_1_c_-1", "d.x_1", "u_-1"}) {
      StatusOr<FindResult> hinted = Run(filter, sort, limit, NameHint(name));
      ASSERT_OK(hinted);
      Compare(*scan, *hinted, sort, limit,
              context + " hint " + name + " filter " + filter_json + " sort " + sort_json);
    }
    // count agrees too.
    CountRequest c;
    c.ns = kNs;
    c.query = filter;
    auto n1 = db_->Count(c);
    c.hint = NaturalHint();
    auto n2 = db_->Count(c);
    ASSERT_OK(n1);
    ASSERT_OK(n2);
    EXPECT_EQ(*n1, *n2) << context << " count " << filter_json;
  }

  void Compare(const FindResult& scan, const FindResult& other, const Document& sort, int64_t limit,
               const std::string& context) {
    ++compared_;
    ASSERT_EQ(scan.docs.size(), other.docs.size()) << context;
    if (sort.empty() && limit > 0) {
      // Any `limit` of the matches will do.
      for (const std::string& id : Ids(other.docs)) ASSERT_TRUE(all_ids_.count(id)) << context << " returned " << id;
      std::vector<std::string> ids = Ids(other.docs);
      ASSERT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << context << " duplicates";
    } else if (sort.empty() || limit == 0) {
      std::vector<std::string> a = Ids(scan.docs), b = Ids(other.docs);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      ASSERT_EQ(a, b) << context;
    }
    if (!sort.empty()) {
      // The same sequence of sort keys (ties may come in any order).
      auto spec = projection::SortSpec::Parse(sort.bson());
      ASSERT_OK(spec);
      for (size_t i = 0; i < scan.docs.size(); ++i) {
        projection::SortKey x, y;
        (*spec)->ExtractKey(scan.docs[i].bson(), &x);
        (*spec)->ExtractKey(other.docs[i].bson(), &y);
        ASSERT_EQ((*spec)->CompareKeys(x, y), 0) << context << " at " << i;
      }
    }
  }

  test::TempDir dir_;
  std::unique_ptr<DBImpl> db_;
  int compared_ = 0;
  std::set<std::string> all_ids_;
};

TEST_P(IndexDifferentialTest, PlannerAndEveryIndexAgreeWithCollectionScan) {
  Gen g(GetParam());
  std::vector<Document> specs = {
      test::Json(R"({"key": {"a": 1}})"),
      test::Json(R"({"key": {"b": -1}})"),
      test::Json(R"({"key": {"a": 1, "c": -1}})"),  // c is never an array
      test::Json(R"({"key": {"d.x": 1}})"),
      test::Json(R"({"key": {"c": 1}, "sparse": true})"),
      test::Json(R"({"key": {"b": 1, "c": -1}, "partialFilterExpression": {"c": {"$gte": 1}}})"),
      test::Json(R"({"key": {"u": -1}, "unique": true})"),  // no _id after the component
  };
  // Half the documents before the indexes (the build), half after (maintenance).
  int next_id = 0;
  auto insert_some = [&](int n) {
    for (int i = 0; i < n; ++i) {
      InsertRequest ins;
      ins.ns = kNs;
      ins.documents.push_back(test::Json(g.Doc(next_id++)));
      auto r = db_->Insert(ins);
      ASSERT_OK(r);  // a refusal (parallel arrays) is a write error, not a failure
    }
  };
  insert_some(150);
  ASSERT_OK(db_->CreateIndexes(kNs, specs));
  insert_some(150);
  for (int round = 0; round < 250; ++round) {
    std::string ctx = "seed " + std::to_string(GetParam()) + " round " + std::to_string(round);
    Check(g, g.Filter(), g.Sort(), ctx);
    if (HasFatalFailure()) return;
    // Writes between queries: updates of indexed fields, deletes, inserts.
    int w = g.Int(6);
    if (w < 3) {
      UpdateRequest up;
      up.ns = kNs;
      UpdateStatement st;
      st.q = test::Json("{\"_id\": " + std::to_string(g.Int(next_id)) + "}");
      std::string f = g.Field();
      if (f == "d.x" && g.Coin(50)) f = "d";
      st.u = test::Json(g.Coin(80) ? "{\"$set\": {\"" + f + "\": " + (f == "d" ? g.DValue() : g.Value()) + "}}"
                                   : "{\"$unset\": {\"" + f + "\": 1}}");
      up.updates.push_back(std::move(st));
      ASSERT_OK(db_->Update(up));
    } else if (w == 3) {
      DeleteRequest del;
      del.ns = kNs;
      DeleteStatement st;
      st.q = test::Json("{\"_id\": " + std::to_string(g.Int(next_id)) + "}");
      st.limit = 1;
      del.deletes.push_back(std::move(st));
      ASSERT_OK(db_->Delete(del));
    } else if (w == 4) {
      insert_some(1);
    } else {
      // A multi-document update through the planner itself.
      UpdateRequest up;
      up.ns = kNs;
      UpdateStatement st;
      st.q = test::Json("{\"a\": " + g.Scalar() + "}");
      st.u = test::Json("{\"$set\": {\"b\": " + g.Value() + "}}");
      st.multi = true;
      up.updates.push_back(std::move(st));
      ASSERT_OK(db_->Update(up));
    }
  }
  EXPECT_GE(compared_, 250 * 6);  // the planner and five hinted indexes per query
  // After a reopen the indexes still agree.
  db_.reset();
  auto db = DBImpl::Open(dir_.path(), Options());
  ASSERT_OK(db);
  db_ = std::move(db).value();
  for (int round = 0; round < 50; ++round) {
    Check(g, g.Filter(), g.Sort(), "after reopen, round " + std::to_string(round));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, IndexDifferentialTest, ::testing::Values(1u, 2u, 3u, 4u));

}  // namespace
}  // namespace gatedb
