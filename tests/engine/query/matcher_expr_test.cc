// {$expr: <aggregation expression>} in query filters.
#include <memory>
#include <string>
#include <vector>

#include "engine/expression/expression.h"
#include "engine/query/matcher.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace query {
namespace {

using test::Json;
using test::StatusIs;

std::unique_ptr<Matcher> MustParse(const std::string& filter) {
  Document f = Json(filter);
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(f.bson());
  EXPECT_TRUE(m.ok()) << m.status().ToString() << " for " << filter;
  return m.ok() ? std::move(m).value() : nullptr;
}

// The _ids of `docs` that `filter` matches.
std::vector<int64_t> MatchingIds(const std::string& filter, const std::vector<std::string>& docs) {
  std::unique_ptr<Matcher> m = MustParse(filter);
  std::vector<int64_t> ids;
  if (!m) return ids;
  for (const std::string& json : docs) {
    Document d = Json(json);
    if (m->Matches(d.bson())) ids.push_back(test::IntAt(d.bson(), "_id"));
  }
  return ids;
}

TEST(MatcherExprTest, DocumentedBudgetExample) {
  const std::vector<std::string> budget = {
      R"({"_id": 1, "category": "food", "budget": 400, "spent": 450})",
      R"({"_id": 2, "category": "drinks", "budget": 100, "spent": 150})",
      R"({"_id": 3, "category": "clothes", "budget": 100, "spent": 50})",
      R"({"_id": 4, "category": "misc", "budget": 500, "spent": 300})",
      R"({"_id": 5, "category": "travel", "budget": 200, "spent": 650})",
  };
  EXPECT_EQ((std::vector<int64_t>{1, 2, 5}), MatchingIds(R"({"$expr": {"$gt": ["$spent", "$budget"]}})", budget));
}

TEST(MatcherExprTest, DocumentedConditionalExample) {
  const std::vector<std::string> supplies = {
      R"({"_id": 1, "item": "binder", "qty": 100, "price": 12.0})",
      R"({"_id": 2, "item": "notebook", "qty": 200, "price": 8.0})",
      R"({"_id": 3, "item": "pencil", "qty": 50, "price": 6.0})",
      R"({"_id": 4, "item": "eraser", "qty": 150, "price": 3.0})",
      R"({"_id": 5, "item": "legal pad", "qty": 42, "price": 10.0})",
  };
  const char* filter = R"({"$expr": {"$lt": [{"$cond": {"if": {"$gte": ["$qty", 100]},
                                                          "then": {"$multiply": ["$price", 0.5]},
                                                          "else": {"$multiply": ["$price", 0.75]}}}, 5]}})";
  EXPECT_EQ((std::vector<int64_t>{2, 3, 4}), MatchingIds(filter, supplies));
}

TEST(MatcherExprTest, CombinesWithOtherPredicatesAndLogicalOperators) {
  const std::vector<std::string> docs = {
      R"({"_id": 1, "a": 1, "b": 2, "tag": "x"})",
      R"({"_id": 2, "a": 3, "b": 2, "tag": "x"})",
      R"({"_id": 3, "a": 3, "b": 2, "tag": "y"})",
      R"({"_id": 4, "a": 0, "b": 0})",
  };
  EXPECT_EQ((std::vector<int64_t>{2}), MatchingIds(R"({"tag": "x", "$expr": {"$gt": ["$a", "$b"]}})", docs));
  EXPECT_EQ((std::vector<int64_t>{1, 2, 3}),
            MatchingIds(R"({"$or": [{"$expr": {"$gt": ["$a", "$b"]}}, {"tag": "x"}]})", docs));
  EXPECT_EQ((std::vector<int64_t>{1, 4}), MatchingIds(R"({"$nor": [{"$expr": {"$gt": ["$a", "$b"]}}]})", docs));
  EXPECT_EQ((std::vector<int64_t>{3}),
            MatchingIds(R"({"$and": [{"$expr": {"$eq": ["$tag", "y"]}}, {"$expr": {"$eq": ["$a", 3]}}]})", docs));
}

TEST(MatcherExprTest, TruthinessOfTheResult) {
  const std::vector<std::string> docs = {
      R"({"_id": 1, "f": 0})", R"({"_id": 2, "f": "x"})", R"({"_id": 3})", R"({"_id": 4, "f": []})",
      R"({"_id": 5, "f": null})", R"({"_id": 6, "f": 0.5})",
  };
  EXPECT_EQ((std::vector<int64_t>{2, 4, 6}), MatchingIds(R"({"$expr": "$f"})", docs));
  EXPECT_EQ((std::vector<int64_t>{}), MatchingIds(R"({"$expr": false})", docs));
}

TEST(MatcherExprTest, OnlyAtTheTopLevel) {
  Document f = Json(R"({"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}})");
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(f.bson());
  EXPECT_THAT(m, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("$expr can only be applied to the top-level document", m.status().reason());
}

TEST(MatcherExprTest, ExpressionParseErrorsComeFromParse) {
  Document f = Json(R"({"$expr": {"$foo": 1}})");
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(f.bson());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(168, m.status().code_number());
  Document g = Json(R"({"$expr": "$$undefinedVar"})");
  EXPECT_EQ(17276, Matcher::Parse(g.bson()).status().code_number());
}

TEST(MatcherExprTest, EvaluationErrorsFailMatchesOrError) {
  std::unique_ptr<Matcher> m = MustParse(R"({"$expr": {"$gt": [{"$divide": ["$a", "$b"]}, 1]}})");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->HasExpr());
  Document ok = Json(R"({"a": 4, "b": 2})");
  Document bad = Json(R"({"a": 4, "b": 0})");
  EXPECT_TRUE(m->Matches(ok.bson()));
  StatusOr<bool> r = m->MatchesOrError(ok.bson());
  ASSERT_OK(r);
  EXPECT_TRUE(*r);
  // Matches() cannot report: no match.  MatchesOrError() fails, as MongoDB
  // fails the query.
  EXPECT_FALSE(m->Matches(bad.bson()));
  StatusOr<bool> e = m->MatchesOrError(bad.bson());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(16608, e.status().code_number());
  // Even under $nor, which would turn the failure into a match.
  std::unique_ptr<Matcher> nor = MustParse(R"({"$nor": [{"$expr": {"$divide": ["$a", "$b"]}}]})");
  ASSERT_TRUE(nor);
  EXPECT_EQ(16608, nor->MatchesOrError(bad.bson()).status().code_number());
  // The next document starts clean.
  StatusOr<bool> after = m->MatchesOrError(ok.bson());
  ASSERT_OK(after);
  EXPECT_TRUE(*after);
  std::unique_ptr<Matcher> plain = MustParse(R"({"a": 4})");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->HasExpr());
}

TEST(MatcherExprTest, DeclaredVariablesForLookupPipelines) {
  expression::ParseContext pc;
  StatusOr<expression::VariableId> qty = pc.DeclareVariable("order_qty");
  ASSERT_OK(qty);
  Document f = Json(R"({"$expr": {"$gte": ["$instock", "$$order_qty"]}})");
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(f.bson(), &pc);
  ASSERT_OK(m);
  Document warehouse = Json(R"({"stock_item": "almonds", "instock": 120})");
  expression::EvalContext ctx;
  ctx.SetVariable(*qty, expression::Value::Int32(2));
  StatusOr<bool> r = (*m)->MatchesOrError(warehouse.bson(), &ctx);
  ASSERT_OK(r);
  EXPECT_TRUE(*r);
  ctx.SetVariable(*qty, expression::Value::Int32(500));
  r = (*m)->MatchesOrError(warehouse.bson(), &ctx);
  ASSERT_OK(r);
  EXPECT_FALSE(*r);
  // Without the context the variable is unbound: an error.
  EXPECT_EQ(17276, (*m)->MatchesOrError(warehouse.bson()).status().code_number());
}

TEST(MatcherExprTest, NowIsFixedAtParseUnlessGiven) {
  std::unique_ptr<Matcher> m = MustParse(R"({"$expr": {"$lt": ["$d", "$$NOW"]}})");
  ASSERT_TRUE(m);
  Document past = Json(R"({"d": {"$date": "2001-01-01T00:00:00Z"}})");
  Document future = Json(R"({"d": {"$date": "2900-01-01T00:00:00Z"}})");
  EXPECT_TRUE(m->Matches(past.bson()));
  EXPECT_FALSE(m->Matches(future.bson()));
  expression::EvalContext ctx;
  ctx.SetNow(0);  // 1970: nothing is before it
  StatusOr<bool> r = m->MatchesOrError(past.bson(), &ctx);
  ASSERT_OK(r);
  EXPECT_FALSE(*r);
}

TEST(MatcherExprTest, ExtractEqualityFieldsIgnoresExpr) {
  Document f = Json(R"({"a": 1, "$expr": {"$eq": ["$b", 2]}})");
  bson_t out = BSON_INITIALIZER;
  ASSERT_OK(ExtractEqualityFields(f.bson(), &out));
  EXPECT_EQ(Json(R"({"a": 1})").ToJson(), test::ToJson(&out));
  bson_destroy(&out);
}

}  // namespace
}  // namespace query
}  // namespace gatedb
