// The expression language itself: parsing, field paths, variables, literals,
// object and array expressions, $let, the boolean, comparison and
// conditional operators, serialization, limits and value lifetimes.
#include "engine/expression/expression.h"

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

using gatedb::test::Json;

int CodeOf(const std::string& expr, const std::string& doc = "{}") { return Eval(expr, doc).status().code_number(); }

// ---------------------------------------------------------------------------
// Field paths

TEST(FieldPathTest, TopLevelAndNested) {
  RunCases({
      {R"("$a")", R"({"a": 5})", "5"},
      {R"("$a.b.c")", R"({"a": {"b": {"c": "x"}}})", R"("x")"},
      {R"("$nope")", R"({"a": 5})", "missing"},
      {R"("$a.b")", R"({"a": 5})", "missing"},
      {R"("$a")", R"({"a": null})", "null"},
      {R"("$a")", R"({"a": {"b": [1, 2]}})", R"({"b": [1, 2]})"},
  });
}

TEST(FieldPathTest, TraversesArraysOfDocuments) {
  RunCases({
      // MongoDB: each document element contributes its value; scalars, nested
      // arrays and missing values are skipped.
      {R"("$a.b")", R"({"a": [{"b": 1}, {"b": 2}, {"c": 3}, 4, [{"b": 5}]]})", "[1, 2]"},
      {R"("$a.b.c")", R"({"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": {"c": 3}}]})", "[[1, 2], 3]"},
      // A numeric component names a field, not an array index.
      {R"("$a.0")", R"({"a": [{"0": "x"}, 7]})", R"(["x"])"},
      {R"("$a.b")", R"({"a": []})", "[]"},
      {R"("$a")", R"({"a": [1, 2]})", "[1, 2]"},
  });
}

TEST(FieldPathTest, InvalidPathsAreMongoDbErrors) {
  EXPECT_EQ(16872, CodeOf(R"("$")"));
  EXPECT_EQ(15998, CodeOf(R"("$a..b")"));
  EXPECT_EQ(40353, CodeOf(R"("$a.")"));
  EXPECT_EQ(16410, CodeOf(R"("$a.$b")"));
  EXPECT_EQ(16410, CodeOf(R"("$$ROOT.$b")"));
}

TEST(FieldPathTest, BorrowsFromTheDocument) {
  // "$s" must point into the input document, not into a copy.
  ParseContext pc;
  JsonValue spec = ParseJsonValue(R"("$s")");
  StatusOr<std::unique_ptr<Expression>> e = ParseExpression(spec.value, &pc);
  ASSERT_OK(e);
  Document doc = Json(R"({"n": 1, "s": "borrowed"})");
  EvalContext ctx;
  ctx.SetRoot(doc.bson());
  StatusOr<Value> v = (*e)->Evaluate(ctx);
  ASSERT_OK(v);
  const uint8_t* begin = bson_get_data(doc.bson());
  const char* s = v->str().data();
  EXPECT_TRUE(reinterpret_cast<const uint8_t*>(s) > begin &&
              reinterpret_cast<const uint8_t*>(s) < begin + doc.bson()->len);
  EXPECT_FALSE(v->self_contained());
  // Detached() copies, and the copy outlives the document.
  Value kept = v->Detached();
  EXPECT_TRUE(kept.self_contained());
  EXPECT_NE(kept.str().data(), s);
  doc = Document();
  EXPECT_EQ("borrowed", kept.str());
}

TEST(FieldPathTest, NumbersNeedNoBuffer) {
  StatusOr<Value> v = Eval(R"("$qty")", R"({"qty": 7})");
  ASSERT_OK(v);
  EXPECT_TRUE(v->self_contained());
  EXPECT_EQ(7, v->int32());
}

TEST(FieldPathTest, IsFieldPathReportsPlainPaths) {
  StatusOr<std::unique_ptr<Expression>> e = Parse(R"("$a.b")");
  ASSERT_OK(e);
  std::string dotted;
  EXPECT_TRUE((*e)->IsFieldPath(&dotted));
  EXPECT_EQ("a.b", dotted);
  StatusOr<std::unique_ptr<Expression>> root = Parse(R"("$$ROOT.a")");
  ASSERT_OK(root);
  EXPECT_FALSE((*root)->IsFieldPath(&dotted));
}

// ---------------------------------------------------------------------------
// Variables

TEST(VariableTest, Builtins) {
  RunCases({
      {R"("$$ROOT")", R"({"a": 1})", R"({"a": 1})"},
      {R"("$$CURRENT.a")", R"({"a": 1})", "1"},
      {R"("$$ROOT.a.b")", R"({"a": {"b": 2}})", "2"},
      {R"("$$REMOVE")", R"({"a": 1})", "missing"},
      {R"({"x": "$$REMOVE", "y": 1})", "{}", R"({"y": 1})"},
  });
  StatusOr<Value> now = Eval(R"("$$NOW")", "{}", 1700000000123);
  ASSERT_OK(now);
  EXPECT_EQ(CanonJson(R"({"$date": {"$numberLong": "1700000000123"}})"), Canon(*now));
}

TEST(VariableTest, NowIsTheSameForEveryDocument) {
  StatusOr<std::unique_ptr<Expression>> e = Parse(R"("$$NOW")");
  ASSERT_OK(e);
  EvalContext ctx;
  ctx.SetNow(42);
  Document a = Json(R"({"a": 1})"), b = Json(R"({"a": 2})");
  ctx.SetRoot(a.bson());
  StatusOr<Value> first = (*e)->Evaluate(ctx);
  ctx.SetRoot(b.bson());
  StatusOr<Value> second = (*e)->Evaluate(ctx);
  ASSERT_OK(first);
  ASSERT_OK(second);
  EXPECT_EQ(42, first->date());
  EXPECT_EQ(42, second->date());
}

TEST(VariableTest, UndefinedAndInvalidNames) {
  EXPECT_EQ(17276, CodeOf(R"("$$nope")"));
  EXPECT_EQ(17276, CodeOf(R"("$$FOO")"));
  EXPECT_EQ(16869, CodeOf(R"("$$")"));
  EXPECT_EQ(16870, CodeOf(R"("$$1abc")"));
  EXPECT_EQ(16870, CodeOf(R"("$$_abc")"));
  EXPECT_EQ(16871, CodeOf(R"("$$ab-c")"));
  EXPECT_EQ(51144, CodeOf(R"("$$CLUSTER_TIME")"));
  StatusOr<Value> v = Eval(R"("$$nope")");
  EXPECT_EQ("Use of undefined variable: nope", v.status().reason());
}

TEST(VariableTest, DeclaredVariablesAreBoundPerEvaluation) {
  ParseContext pc;
  StatusOr<VariableId> x = pc.DeclareVariable("order_qty");
  ASSERT_OK(x);
  StatusOr<VariableId> again = pc.DeclareVariable("order_qty");
  ASSERT_OK(again);
  EXPECT_EQ(*x, *again);
  EXPECT_EQ(1u, pc.declared().size());
  StatusOr<std::unique_ptr<Expression>> e = Parse(R"({"$gte": ["$stock", "$$order_qty"]})", &pc);
  ASSERT_OK(e);
  Document doc = Json(R"({"stock": 10})");
  EvalContext ctx;
  ctx.SetRoot(doc.bson());
  // Unbound: MongoDB's undefined-variable error at evaluation.
  EXPECT_EQ(17276, (*e)->Evaluate(ctx).status().code_number());
  ctx.SetVariable(*x, Value::Int32(5));
  StatusOr<Value> v = (*e)->Evaluate(ctx);
  ASSERT_OK(v);
  EXPECT_TRUE(v->boolean());
  ctx.SetVariable(*x, Value::Int32(50));
  v = (*e)->Evaluate(ctx);
  ASSERT_OK(v);
  EXPECT_FALSE(v->boolean());
  // A path into a declared variable.
  StatusOr<VariableId> doc_var = pc.DeclareVariable("outer");
  ASSERT_OK(doc_var);
  StatusOr<std::unique_ptr<Expression>> path = Parse(R"("$$outer.a.b")", &pc);
  ASSERT_OK(path);
  Document outer = Json(R"({"a": {"b": "deep"}})");
  bson_value_t outer_value = {};
  outer_value.value_type = BSON_TYPE_DOCUMENT;
  outer_value.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(outer.bson()));
  outer_value.value.v_doc.data_len = outer.bson()->len;
  ctx.SetVariable(*doc_var, Value::Borrow(outer_value));
  v = (*path)->Evaluate(ctx);
  ASSERT_OK(v);
  EXPECT_EQ("deep", v->str());
}

TEST(VariableTest, DeclareRejectsInvalidNames) {
  ParseContext pc;
  EXPECT_EQ(16866, pc.DeclareVariable("").status().code_number());
  EXPECT_EQ(16867, pc.DeclareVariable("Upper").status().code_number());
  EXPECT_EQ(16867, pc.DeclareVariable("1x").status().code_number());
  EXPECT_EQ(16868, pc.DeclareVariable("a.b").status().code_number());
  EXPECT_OK(pc.DeclareVariable("a_1"));
}

// ---------------------------------------------------------------------------
// Literals, objects, arrays, operator syntax

TEST(LiteralTest, LiteralAndConst) {
  RunCases({
      {R"({"$literal": "$a"})", R"({"a": 1})", R"("$a")"},
      {R"({"$literal": {"$add": [1, 2]}})", "{}", R"({"$add": [1, 2]})"},
      {R"({"$const": [1, "$x"]})", "{}", R"([1, "$x"])"},
      {"1", "{}", "1"},
      {R"("plain")", "{}", R"("plain")"},
      {"true", "{}", "true"},
      {"null", "{}", "null"},
      {R"({"$date": "2020-01-01T00:00:00Z"})", "{}", R"({"$date": "2020-01-01T00:00:00Z"})"},
  });
}

TEST(LiteralTest, LiteralsOutliveTheSpecBuffer) {
  ParseContext pc;
  std::unique_ptr<Expression> e;
  {
    JsonValue spec = ParseJsonValue(R"({"$concat": ["abc", "def"]})");
    StatusOr<std::unique_ptr<Expression>> parsed = ParseExpression(spec.value, &pc);
    ASSERT_OK(parsed);
    e = std::move(parsed).value();
  }  // the spec's bytes are gone
  EvalContext ctx;
  StatusOr<Value> v = e->Evaluate(ctx);
  ASSERT_OK(v);
  EXPECT_EQ("abcdef", v->str());
}

TEST(ObjectExpressionTest, EvaluatesFieldsAndDropsMissing) {
  RunCases({
      {R"({"a": "$x", "b": {"$add": [1, 2]}, "c": "$nope"})", R"({"x": "v"})", R"({"a": "v", "b": 3})"},
      {R"({"outer": {"inner": "$x"}})", R"({"x": 1})", R"({"outer": {"inner": 1}})"},
      {"{}", "{}", "{}"},
  });
  EXPECT_EQ(16412, CodeOf(R"({"a.b": 1})"));
  EXPECT_EQ(16410, CodeOf(R"({"a": 1, "$b": 2})"));
  EXPECT_EQ(16406, CodeOf(R"({"a": 1, "a": 2})"));
}

TEST(ArrayExpressionTest, MissingElementsBecomeNull) {
  RunCases({
      {R"(["$a", "$nope", 1, {"$add": [1, 1]}])", R"({"a": "x"})", R"(["x", null, 1, 2])"},
      {"[]", "{}", "[]"},
      {R"([[1, "$a"]])", R"({"a": 2})", "[[1, 2]]"},
  });
}

TEST(OperatorSyntaxTest, Errors) {
  StatusOr<Value> unknown = Eval(R"({"$foo": 1})");
  EXPECT_EQ(168, unknown.status().code_number());
  EXPECT_EQ("Unrecognized expression '$foo'", unknown.status().reason());
  StatusOr<Value> unsupported = Eval(R"({"$function": {"body": "x", "args": [], "lang": "js"}})");
  EXPECT_EQ(168, unsupported.status().code_number());
  EXPECT_NE(std::string::npos, unsupported.status().reason().find("$function"));
  EXPECT_EQ(15983, CodeOf(R"({"$add": [1, 2], "$subtract": [3, 1]})"));
  EXPECT_EQ(16020, CodeOf(R"({"$eq": [1]})"));
  EXPECT_EQ(16020, CodeOf(R"({"$size": [[1], [2]]})"));
  EXPECT_EQ(28667, CodeOf(R"({"$slice": [[1]]})"));
  StatusOr<Value> arity = Eval(R"({"$eq": [1, 2, 3]})");
  EXPECT_EQ("Expression $eq takes exactly 2 arguments. 3 were passed in.", arity.status().reason());
}

TEST(OperatorSyntaxTest, SingleArgumentMayBeBareOrInAnArray) {
  RunCases({
      {R"({"$abs": -1})", "{}", "1"},
      {R"({"$abs": [-1]})", "{}", "1"},
      {R"({"$size": [[1, 2, 3]]})", "{}", "3"},
      {R"({"$size": "$a"})", R"({"a": [1]})", "1"},
  });
}

// ---------------------------------------------------------------------------
// $let

TEST(LetTest, DocumentedExample) {
  // MongoDB's $let example: total 10.5, discounted 0.9.
  RunCase({R"({"$let": {"vars": {"total": {"$add": ["$price", "$tax"]},
                                  "discounted": {"$cond": {"if": "$applyDiscount", "then": 0.9, "else": 1}}},
                         "in": {"$multiply": ["$$total", "$$discounted"]}}})",
           R"({"price": 10, "tax": 0.50, "applyDiscount": true})", "9.450000000000001"});
  RunCase({R"({"$let": {"vars": {"total": {"$add": ["$price", "$tax"]},
                                  "discounted": {"$cond": {"if": "$applyDiscount", "then": 0.9, "else": 1}}},
                         "in": {"$multiply": ["$$total", "$$discounted"]}}})",
           R"({"price": 10, "tax": 0.25, "applyDiscount": false})", "10.25"});
}

TEST(LetTest, ScopingAndCurrent) {
  RunCases({
      // Inner bindings shadow outer ones.
      {R"({"$let": {"vars": {"x": 1}, "in": {"$let": {"vars": {"x": 2}, "in": "$$x"}}}})", "{}", "2"},
      {R"({"$let": {"vars": {"x": 1}, "in": [{"$let": {"vars": {"x": 2}, "in": "$$x"}}, "$$x"]}})", "{}", "[2, 1]"},
      // Rebinding CURRENT moves field paths.
      {R"({"$let": {"vars": {"CURRENT": "$$ROOT.sub"}, "in": "$x"}})", R"({"x": 1, "sub": {"x": 2}})", "2"},
      // A variable's value may be missing.
      {R"({"$let": {"vars": {"m": "$nope"}, "in": {"$ifNull": ["$$m", "dflt"]}}})", "{}", R"("dflt")"},
  });
  // Variables are not visible to their siblings' definitions.
  EXPECT_EQ(17276, CodeOf(R"({"$let": {"vars": {"a": 1, "b": "$$a"}, "in": "$$b"}})"));
  // Nor outside the $let.
  EXPECT_EQ(17276, CodeOf(R"([{"$let": {"vars": {"a": 1}, "in": "$$a"}}, "$$a"])"));
}

TEST(LetTest, Errors) {
  EXPECT_EQ(16874, CodeOf(R"({"$let": [1]})"));
  EXPECT_EQ(16875, CodeOf(R"({"$let": {"vars": {}, "in": 1, "x": 1}})"));
  EXPECT_EQ(16876, CodeOf(R"({"$let": {"in": 1}})"));
  EXPECT_EQ(16877, CodeOf(R"({"$let": {"vars": {"x": 1}}})"));
  EXPECT_EQ(10065, CodeOf(R"({"$let": {"vars": 1, "in": 1}})"));
  EXPECT_EQ(16867, CodeOf(R"({"$let": {"vars": {"Bad": 1}, "in": 1}})"));
  EXPECT_EQ(16867, CodeOf(R"({"$let": {"vars": {"ROOT": 1}, "in": 1}})"));
  EXPECT_EQ(16868, CodeOf(R"({"$let": {"vars": {"a-b": 1}, "in": 1}})"));
}

// ---------------------------------------------------------------------------
// Boolean operators

TEST(BooleanTest, AndOrNot) {
  RunCases({
      // MongoDB's $and example: qty > 100 and qty < 250.
      {R"({"$and": [{"$gt": ["$qty", 100]}, {"$lt": ["$qty", 250]}]})", R"({"qty": 300})", "false"},
      {R"({"$and": [{"$gt": ["$qty", 100]}, {"$lt": ["$qty", 250]}]})", R"({"qty": 200})", "true"},
      {R"({"$or": [{"$gt": ["$qty", 250]}, {"$lt": ["$qty", 200]}]})", R"({"qty": 300})", "true"},
      {R"({"$or": [{"$gt": ["$qty", 250]}, {"$lt": ["$qty", 200]}]})", R"({"qty": 200})", "false"},
      {R"({"$not": [{"$gt": ["$qty", 250]}]})", R"({"qty": 300})", "false"},
      {R"({"$and": []})", "{}", "true"},
      {R"({"$or": []})", "{}", "false"},
      {R"({"$and": [1, "green"]})", "{}", "true"},
      {R"({"$and": [null, true]})", "{}", "false"},
      {R"({"$and": [0, true]})", "{}", "false"},
      {R"({"$or": [[false], false]})", "{}", "true"},
      {R"({"$not": [[false]]})", "{}", "false"},
      {R"({"$not": [null]})", "{}", "true"},
      {R"({"$not": ["$nope"]})", "{}", "true"},
      // Short circuit: the failing branch is never evaluated.
      {R"({"$and": [false, {"$divide": [1, 0]}]})", "{}", "false"},
      {R"({"$or": [true, {"$divide": [1, 0]}]})", "{}", "true"},
  });
}

TEST(TruthyTest, MongoDbRules) {
  EXPECT_FALSE(Truthy(Value()));
  EXPECT_FALSE(Truthy(Value::Null()));
  EXPECT_FALSE(Truthy(Value::Undefined()));
  EXPECT_FALSE(Truthy(Value::Bool(false)));
  EXPECT_FALSE(Truthy(Value::Int32(0)));
  EXPECT_FALSE(Truthy(Value::Int64(0)));
  EXPECT_FALSE(Truthy(Value::Double(0.0)));
  EXPECT_FALSE(Truthy(Value::Double(-0.0)));
  JsonValue zero_dec = ParseJsonValue(R"({"$numberDecimal": "0"})");
  EXPECT_FALSE(Truthy(Value::Borrow(zero_dec.value)));
  EXPECT_TRUE(Truthy(Value::Int32(-1)));
  EXPECT_TRUE(Truthy(Value::String("")));
  EXPECT_TRUE(Truthy(Value::String("false")));
  JsonValue empty_array = ParseJsonValue("[]");
  EXPECT_TRUE(Truthy(Value::Borrow(empty_array.value)));
  EXPECT_TRUE(Truthy(Value::Date(0)));
}

// ---------------------------------------------------------------------------
// Comparisons

TEST(ComparisonTest, DocumentedCmpExample) {
  // MongoDB's $cmp example compares qty with 250.
  const char* cmp = R"({"$cmp": ["$qty", 250]})";
  RunCases({
      {cmp, R"({"qty": 300})", "1"},
      {cmp, R"({"qty": 200})", "-1"},
      {cmp, R"({"qty": 250})", "0"},
      {R"({"$eq": ["$qty", 250]})", R"({"qty": 250})", "true"},
      {R"({"$ne": ["$qty", 250]})", R"({"qty": 250})", "false"},
      {R"({"$gt": ["$qty", 250]})", R"({"qty": 300})", "true"},
      {R"({"$gte": ["$qty", 250]})", R"({"qty": 250})", "true"},
      {R"({"$lt": ["$qty", 250]})", R"({"qty": 200})", "true"},
      {R"({"$lte": ["$qty", 250]})", R"({"qty": 300})", "false"},
  });
}

TEST(ComparisonTest, BsonOrderAcrossTypes) {
  RunCases({
      {R"({"$eq": [1, 1.0]})", "{}", "true"},
      {R"({"$eq": [1, {"$numberLong": "1"}]})", "{}", "true"},
      {R"({"$gt": ["a", 1]})", "{}", "true"},
      {R"({"$lt": [null, 0]})", "{}", "true"},
      {R"({"$gt": [{}, "z"]})", "{}", "true"},
      {R"({"$gt": [[], {}]})", "{}", "true"},
      {R"({"$cmp": [[1, 2], [1, 3]]})", "{}", "-1"},
      {R"({"$eq": [{"a": 1}, {"a": 1.0}]})", "{}", "true"},
      {R"({"$gt": ["b", "a"]})", "{}", "true"},
      {R"({"$lt": [true, {"$date": "2020-01-01T00:00:00Z"}]})", "{}", "true"},
  });
}

TEST(ComparisonTest, MissingIsBelowNull) {
  // In aggregation a missing field is not equal to null (unlike a query).
  RunCases({
      {R"({"$eq": ["$nope", null]})", "{}", "false"},
      {R"({"$lt": ["$nope", null]})", "{}", "true"},
      {R"({"$eq": ["$nope", "$alsoNope"]})", "{}", "true"},
      {R"({"$cmp": ["$nope", null]})", "{}", "-1"},
      {R"({"$eq": ["$a", null]})", R"({"a": null})", "true"},
  });
}

// ---------------------------------------------------------------------------
// $cond, $ifNull, $switch

TEST(CondTest, DocumentedExample) {
  const char* obj = R"({"$cond": {"if": {"$gte": ["$qty", 250]}, "then": 30, "else": 20}})";
  const char* arr = R"({"$cond": [{"$gte": ["$qty", 250]}, 30, 20]})";
  RunCases({
      {obj, R"({"qty": 300})", "30"},
      {obj, R"({"qty": 200})", "20"},
      {arr, R"({"qty": 250})", "30"},
      {arr, R"({"qty": 100})", "20"},
      {R"({"$cond": ["$nope", 1, 2]})", "{}", "2"},
      {R"({"$cond": [true, "$nope", 2]})", "{}", "missing"},
      // The branch not taken is not evaluated.
      {R"({"$cond": [true, 1, {"$divide": [1, 0]}]})", "{}", "1"},
  });
}

TEST(CondTest, Errors) {
  EXPECT_EQ(17080, CodeOf(R"({"$cond": {"then": 1, "else": 2}})"));
  EXPECT_EQ(17081, CodeOf(R"({"$cond": {"if": 1, "else": 2}})"));
  EXPECT_EQ(17082, CodeOf(R"({"$cond": {"if": 1, "then": 2}})"));
  EXPECT_EQ(17083, CodeOf(R"({"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}})"));
  EXPECT_EQ(16020, CodeOf(R"({"$cond": [true, 1]})"));
}

TEST(IfNullTest, DocumentedExamples) {
  const char* single = R"({"$ifNull": ["$description", "Unspecified"]})";
  const char* multi = R"({"$ifNull": ["$description", "$quantity", "Unspecified"]})";
  RunCases({
      {single, R"({"description": "product 1"})", R"("product 1")"},
      {single, R"({"description": null})", R"("Unspecified")"},
      {single, "{}", R"("Unspecified")"},
      {multi, R"({"quantity": 4})", "4"},
      {multi, R"({"description": null, "quantity": null})", R"("Unspecified")"},
      {R"({"$ifNull": ["$a", "$b"]})", "{}", "missing"},
      {R"({"$ifNull": ["$a", null]})", R"({"a": {"$undefined": true}})", "null"},
      {R"({"$ifNull": [0, 1]})", "{}", "0"},
  });
  StatusOr<Value> one = Eval(R"({"$ifNull": ["$a"]})");
  EXPECT_EQ(1257300, one.status().code_number());
}

TEST(SwitchTest, DocumentedExample) {
  // MongoDB's $switch example: a summary of a student's average score.
  const char* sw = R"({"$switch": {"branches": [
      {"case": {"$gte": [{"$avg": "$scores"}, 90]}, "then": "Doing great!"},
      {"case": {"$and": [{"$gte": [{"$avg": "$scores"}, 80]}, {"$lt": [{"$avg": "$scores"}, 90]}]},
       "then": "Doing pretty well."},
      {"case": {"$lt": [{"$avg": "$scores"}, 80]}, "then": "Needs improvement."}],
      "default": "No scores found."}})";
  RunCases({
      {sw, R"({"name": "Susan", "scores": [87, 86, 78]})", R"("Doing pretty well.")"},
      {sw, R"({"name": "Bob", "scores": [71, 64, 58]})", R"("Needs improvement.")"},
      {sw, R"({"name": "Jim", "scores": [95, 97, 91]})", R"("Doing great!")"},
      // An empty array averages to null, and null sorts below 80.
      {sw, R"({"name": "Ann", "scores": []})", R"("Needs improvement.")"},
      {R"({"$switch": {"branches": [{"case": "$flag", "then": 1}], "default": "No scores found."}})", "{}",
       R"("No scores found.")"},
  });
}

TEST(SwitchTest, Errors) {
  StatusOr<Value> no_match = Eval(R"({"$switch": {"branches": [{"case": false, "then": 1}]}})");
  EXPECT_EQ(40066, no_match.status().code_number());
  EXPECT_EQ(40060, CodeOf(R"({"$switch": [1]})"));
  EXPECT_EQ(40061, CodeOf(R"({"$switch": {"branches": 1}})"));
  EXPECT_EQ(40062, CodeOf(R"({"$switch": {"branches": [1]}})"));
  EXPECT_EQ(40063, CodeOf(R"({"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}})"));
  EXPECT_EQ(40064, CodeOf(R"({"$switch": {"branches": [{"then": 1}]}})"));
  EXPECT_EQ(40065, CodeOf(R"({"$switch": {"branches": [{"case": 1}]}})"));
  EXPECT_EQ(40067, CodeOf(R"({"$switch": {"branches": [{"case": 1, "then": 1}], "other": 1}})"));
  EXPECT_EQ(40068, CodeOf(R"({"$switch": {"branches": []}})"));
}

// ---------------------------------------------------------------------------
// Serialization, limits, threads

TEST(SerializeTest, ExplainForm) {
  StatusOr<std::unique_ptr<Expression>> e = Parse(R"({"$add": ["$a", 1, {"$literal": "$x"}]})");
  ASSERT_OK(e);
  EXPECT_EQ(CanonJson(R"({"$add": ["$a", {"$const": 1}, {"$const": "$x"}]})"),
            CanonJson(ExpressionToJson(**e)));
  e = Parse(R"({"$cond": [true, "$a", {"o": "$$ROOT"}]})");
  ASSERT_OK(e);
  EXPECT_EQ(CanonJson(R"({"$cond": {"if": {"$const": true}, "then": "$a", "else": {"o": "$$ROOT"}}})"),
            CanonJson(ExpressionToJson(**e)));
}

TEST(SerializeTest, RoundTripsEvaluateTheSame) {
  const std::vector<std::string> specs = {
      R"({"$let": {"vars": {"t": {"$add": ["$a", 1]}}, "in": {"$multiply": ["$$t", 2]}}})",
      R"({"$map": {"input": "$arr", "as": "x", "in": {"$concat": ["$$x", "!"]}}})",
      R"({"$filter": {"input": [1, 2, 3, 4], "cond": {"$gt": ["$$this", 2]}, "limit": 1}})",
      R"({"$reduce": {"input": "$nums", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}})",
      R"({"$switch": {"branches": [{"case": "$flag", "then": "yes"}], "default": "no"}})",
      R"({"$dateToString": {"date": "$d", "format": "%Y"}})",
      R"({"$trim": {"input": "  x  "}})",
      R"({"$convert": {"input": "$a", "to": "string", "onNull": "none"}})",
      R"({"$toInt": "5"})",
      R"x({"$regexFind": {"input": "abc", "regex": "b(c)"}})x",
      R"({"$zip": {"inputs": [[1, 2], [3]], "useLongestLength": true, "defaults": [0, 9]}})",
      R"({"$sortArray": {"input": [3, 1, 2], "sortBy": -1}})",
      R"({"$getField": "a"})",
      R"({"$setField": {"field": "b", "input": "$$ROOT", "value": 7}})",
      R"({"x": "$$REMOVE", "y": [1, "$a"]})",
  };
  const std::string doc = R"({"a": 1, "arr": ["p", "q"], "nums": [1, 2, 3], "flag": true,
                              "d": {"$date": "2021-06-01T00:00:00Z"}})";
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    StatusOr<std::unique_ptr<Expression>> e = Parse(spec);
    ASSERT_OK(e);
    const std::string serialized = ExpressionToJson(**e);
    StatusOr<Value> direct = Eval(spec, doc);
    StatusOr<Value> again = Eval(serialized, doc);
    ASSERT_OK(direct);
    ASSERT_OK(again) << serialized;
    EXPECT_EQ(Canon(*direct), Canon(*again)) << serialized;
  }
}

std::string Nested(const std::string& open, const std::string& leaf, const std::string& close, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += open;
  s += leaf;
  for (int i = 0; i < n; ++i) s += close;
  return s;
}

TEST(LimitsTest, DeepNestingIsAnErrorNotACrash) {
  // Deeper than kMaxExpressionDepth; libbson's JSON reader stops at about
  // 100 levels, so the spec is built as BSON.
  bson_t* spec = bson_new();
  BSON_APPEND_INT32(spec, "v", 1);
  for (int i = 0; i < 400; ++i) {
    bson_t* outer = bson_new();
    bson_t arr;
    bson_append_array_begin(outer, "$abs", -1, &arr);
    bson_iter_t it;
    bson_iter_init_find(&it, spec, "v");
    bson_append_value(&arr, "0", -1, bson_iter_value(&it));
    bson_append_array_end(outer, &arr);
    bson_t* wrapped = bson_new();
    BSON_APPEND_DOCUMENT(wrapped, "v", outer);
    bson_destroy(outer);
    bson_destroy(spec);
    spec = wrapped;
  }
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, spec, "v"));
  ParseContext pc;
  StatusOr<std::unique_ptr<Expression>> e = ParseExpression(*bson_iter_value(&it), &pc);
  EXPECT_THAT(e, gatedb::test::StatusIs(ErrorCode::kOverflow));
  bson_destroy(spec);
  // Within the limit it works.
  RunCase({Nested(R"({"$abs": [)", "-3", "]}", 40), "{}", "3"});
}

TEST(LimitsTest, BuiltValuesAreBounded) {
  // $reduce nesting an array in itself 300 times exceeds the depth limit.
  StatusOr<Value> deep = Eval(R"({"$reduce": {"input": {"$range": [0, 300]}, "initialValue": [],
                                              "in": ["$$value"]}})");
  EXPECT_THAT(deep, gatedb::test::StatusIs(ErrorCode::kOverflow));
  // A range that would exceed the document size limit fails cleanly.
  StatusOr<Value> big = Eval(R"({"$range": [0, 2000000000]})");
  EXPECT_THAT(big, gatedb::test::StatusIs(ErrorCode::kBSONObjectTooLarge));
}

TEST(ThreadTest, OneExpressionManyThreads) {
  StatusOr<std::unique_ptr<Expression>> e =
      Parse(R"({"$concat": [{"$toString": "$n"}, "-", {"$arrayElemAt": ["$arr", 1]}]})");
  ASSERT_OK(e);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      EvalContext ctx;
      for (int i = 0; i < 2000; ++i) {
        Document doc = Json("{\"n\": " + std::to_string(i) + R"(, "arr": ["a", "b"]})");
        ctx.SetRoot(doc.bson());
        StatusOr<Value> v = (*e)->Evaluate(ctx);
        if (!v.ok() || v->str() != std::to_string(i) + "-b") ++failures[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(0, f);
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
