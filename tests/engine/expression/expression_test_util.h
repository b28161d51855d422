// Helpers for the expression tests: evaluate an expression written as JSON
// against a document written as JSON, and compare results by their
// canonical Extended JSON (so int 1, long 1 and double 1.0 differ).
#ifndef GATEDB_TESTS_ENGINE_EXPRESSION_EXPRESSION_TEST_UTIL_H_
#define GATEDB_TESTS_ENGINE_EXPRESSION_EXPRESSION_TEST_UTIL_H_

#include <bson/bson.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/expression/expression.h"
#include "engine/expression/value.h"
#include "gatedb/document.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace expression {
namespace test {

// The value of "v" in the JSON document {"v": <json>}.  The Document keeps
// the bytes the value points into.
struct JsonValue {
  Document doc;
  bson_value_t value;
};
inline JsonValue ParseJsonValue(const std::string& json) {
  JsonValue out{gatedb::test::Json("{\"v\": " + json + "}"), {}};
  bson_iter_t it;
  if (bson_iter_init_find(&it, out.doc.bson(), "v")) {
    out.value = *bson_iter_value(&it);
  } else {
    ADD_FAILURE() << "not a JSON value: " << json;
    out.value.value_type = BSON_TYPE_NULL;
  }
  return out;
}

// Canonical Extended JSON of a value; "missing" for missing.
inline std::string Canon(const Value& v) {
  if (v.missing()) return "missing";
  bson_t tmp = BSON_INITIALIZER;
  v.AppendTo(&tmp, "v");
  char* json = bson_as_canonical_extended_json(&tmp, nullptr);
  std::string s = json ? json : "?";
  bson_free(json);
  bson_destroy(&tmp);
  return s;
}

inline std::string CanonJson(const std::string& value_json) {
  JsonValue j = ParseJsonValue(value_json);
  return Canon(Value::Borrow(j.value));
}

inline StatusOr<std::unique_ptr<Expression>> Parse(const std::string& expr_json, ParseContext* pc = nullptr) {
  JsonValue j = ParseJsonValue(expr_json);
  ParseContext local;
  return ParseExpression(j.value, pc != nullptr ? pc : &local);
}

// Evaluates `expr_json` with $$ROOT = `doc_json`; the result is detached
// from the document.
inline StatusOr<Value> Eval(const std::string& expr_json, const std::string& doc_json = "{}",
                            int64_t now_ms = 0) {
  ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, Parse(expr_json));
  Document doc = gatedb::test::Json(doc_json);
  EvalContext ctx;
  ctx.SetNow(now_ms);
  ctx.SetRoot(doc.bson());
  ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
  return v.Detached();
}

// One table row: `expected` is a JSON value, "missing", or "error:<code>"
// (a parse or an evaluation error with that code).
struct Case {
  std::string expr;
  std::string doc;
  std::string expected;
};

inline void RunCase(const Case& c) {
  SCOPED_TRACE("expr " + c.expr + " on " + c.doc);
  StatusOr<Value> v = Eval(c.expr, c.doc);
  if (c.expected.rfind("error:", 0) == 0) {
    const int code = std::stoi(c.expected.substr(6));
    ASSERT_FALSE(v.ok()) << "expected error " << code << ", got " << Canon(*v);
    EXPECT_EQ(code, v.status().code_number()) << v.status().ToString();
    return;
  }
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  if (c.expected == "missing") {
    EXPECT_TRUE(v->missing()) << Canon(*v);
    return;
  }
  EXPECT_EQ(CanonJson(c.expected), Canon(*v));
}

inline void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) RunCase(c);
}

}  // namespace test
}  // namespace expression
}  // namespace gatedb

#endif  // GATEDB_TESTS_ENGINE_EXPRESSION_EXPRESSION_TEST_UTIL_H_
