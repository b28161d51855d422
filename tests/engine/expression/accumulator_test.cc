// $group's accumulators: MongoDB's documented $group examples, null and
// missing rules, parse errors, memory accounting, and partial state merged
// in order (what a spilling $group relies on).
#include "engine/expression/accumulator.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

using gatedb::test::Json;

// The field `acc` of a $group over `docs`, e.g. Group(R"({"$sum": "$qty"})",
// {R"({"qty": 1})", ...}).
StatusOr<Value> Group(const std::string& acc, const std::vector<std::string>& docs) {
  JsonValue spec = ParseJsonValue(acc);
  ParseContext pc;
  ASSIGN_OR_RETURN(AccumulationStatement stmt, AccumulationStatement::Parse("out", spec.value, &pc));
  std::unique_ptr<Accumulator> a = stmt.NewAccumulator();
  EvalContext ctx;
  for (const std::string& json : docs) {
    Document doc = Json(json);
    ctx.SetRoot(doc.bson());
    ASSIGN_OR_RETURN(Value v, stmt.argument().Evaluate(ctx));
    RETURN_IF_ERROR(a->Process(v));
  }  // the documents are gone: the accumulator kept its own copies
  ASSIGN_OR_RETURN(Value out, a->Finalize());
  return out.Detached();
}

void ExpectGroup(const std::string& acc, const std::vector<std::string>& docs, const std::string& expected) {
  SCOPED_TRACE(acc);
  StatusOr<Value> v = Group(acc, docs);
  ASSERT_OK(v);
  EXPECT_EQ(CanonJson(expected), Canon(*v));
}

// MongoDB's `sales` collection from the $group examples, by group.
const std::vector<std::string> kMarch1 = {
    R"({"item": "abc", "price": 10, "quantity": 2, "date": {"$date": "2014-03-01T08:00:00Z"}})",
    R"({"item": "jkl", "price": 20, "quantity": 1, "date": {"$date": "2014-03-01T09:00:00Z"}})"};
const std::vector<std::string> kAbc = {
    R"({"item": "abc", "price": 10, "quantity": 2, "date": {"$date": "2014-03-01T08:00:00Z"}})",
    R"({"item": "abc", "price": 10, "quantity": 10, "date": {"$date": "2014-04-04T11:21:39.736Z"}})"};
const std::vector<std::string> kXyz = {
    R"({"item": "xyz", "price": 5, "quantity": 10, "date": {"$date": "2014-03-15T09:00:00Z"}})",
    R"({"item": "xyz", "price": 5, "quantity": 20, "date": {"$date": "2014-04-04T21:23:13.331Z"}})"};

TEST(AccumulatorTest, SumDocumentedExample) {
  ExpectGroup(R"({"$sum": {"$multiply": ["$price", "$quantity"]}})", kMarch1, "40");
  ExpectGroup(R"({"$sum": 1})", kMarch1, "2");
  ExpectGroup(R"({"$sum": {"$multiply": ["$price", "$quantity"]}})", kXyz, "150");
  ExpectGroup(R"({"$count": {}})", kXyz, "2");
}

TEST(AccumulatorTest, SumTypesAndNonNumbers) {
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 1})", R"({"a": "x"})", "{}", R"({"a": null})", R"({"a": 2})"}, "3");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": "x"})"}, "0");
  ExpectGroup(R"({"$sum": "$a"})", {}, "0");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 1})", R"({"a": 1.5})"}, "2.5");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 1})", R"({"a": {"$numberLong": "2"}})"}, R"({"$numberLong": "3"})");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 2147483647})", R"({"a": 1})"}, R"({"$numberLong": "2147483648"})");
  ExpectGroup(R"({"$sum": "$a"})",
              {R"({"a": {"$numberLong": "9223372036854775807"}})", R"({"a": {"$numberLong": "1"}})"},
              "9.223372036854775808e18");
  // Arrays are values, not numbers.
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": [1, 2]})", R"({"a": 3})"}, "3");
  // A decimal makes the total a decimal (decimals exactly; the rest joins
  // at the end: 1 + 2.5 as MongoDB's Decimal128(3.5), 15 digits).
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": {"$numberDecimal": "0.1"}})", R"({"a": {"$numberDecimal": "0.2"}})"},
              R"({"$numberDecimal": "0.3"})");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 1})", R"({"a": {"$numberDecimal": "0.10"}})", R"({"a": 2.5})"},
              R"({"$numberDecimal": "3.60000000000000"})");
  ExpectGroup(R"({"$sum": "$a"})", {R"({"a": 1})", R"({"a": {"$numberDecimal": "0.10"}})", R"({"a": 2})"},
              R"({"$numberDecimal": "3.10"})");
}

TEST(AccumulatorTest, AvgOfDecimalsIsADecimal) {
  ExpectGroup(R"({"$avg": "$a"})", {R"({"a": {"$numberDecimal": "1"}})", R"({"a": 2})"},
              R"({"$numberDecimal": "1.5"})");
  ExpectGroup(R"({"$avg": "$a"})", {R"({"a": {"$numberDecimal": "1"}})", R"({"a": 1})", R"({"a": 1})"},
              R"({"$numberDecimal": "1"})");
  ExpectGroup(R"({"$avg": "$a"})", {R"({"a": {"$numberDecimal": "2"}})", R"({"a": {"$numberDecimal": "1"}})",
                                    R"({"a": {"$numberDecimal": "1"}})"},
              R"({"$numberDecimal": "1.333333333333333333333333333333333"})");
}

TEST(AccumulatorTest, AvgDocumentedExample) {
  ExpectGroup(R"({"$avg": {"$multiply": ["$price", "$quantity"]}})", kAbc, "60.0");
  ExpectGroup(R"({"$avg": "$quantity"})", kAbc, "6.0");
  ExpectGroup(R"({"$avg": {"$multiply": ["$price", "$quantity"]}})", kXyz, "75.0");
  ExpectGroup(R"({"$avg": "$quantity"})", kXyz, "15.0");
  ExpectGroup(R"({"$avg": "$nope"})", kXyz, "null");
  ExpectGroup(R"({"$avg": "$a"})", {R"({"a": 1})", R"({"a": "x"})", R"({"a": 2})"}, "1.5");
}

TEST(AccumulatorTest, MinMaxDocumentedExample) {
  ExpectGroup(R"({"$max": {"$multiply": ["$price", "$quantity"]}})", kAbc, "100");
  ExpectGroup(R"({"$max": "$quantity"})", kAbc, "10");
  ExpectGroup(R"({"$min": "$quantity"})", kAbc, "2");
  ExpectGroup(R"({"$min": "$quantity"})", kXyz, "10");
  // null and missing are skipped; nothing else gives null.
  ExpectGroup(R"({"$min": "$a"})", {R"({"a": null})", "{}", R"({"a": 5})", R"({"a": 3})"}, "3");
  ExpectGroup(R"({"$max": "$a"})", {R"({"a": null})", "{}"}, "null");
  // BSON order across types: strings sort above numbers.
  ExpectGroup(R"({"$max": "$a"})", {R"({"a": 5})", R"({"a": "a"})"}, R"("a")");
  ExpectGroup(R"({"$min": "$a"})", {R"({"a": [3]})", R"({"a": 5})"}, "5");
}

TEST(AccumulatorTest, FirstLast) {
  ExpectGroup(R"({"$first": "$date"})", kXyz, R"({"$date": "2014-03-15T09:00:00Z"})");
  ExpectGroup(R"({"$last": "$date"})", kXyz, R"({"$date": "2014-04-04T21:23:13.331Z"})");
  ExpectGroup(R"({"$first": "$a"})", {"{}", R"({"a": 1})"}, "null");
  ExpectGroup(R"({"$last": "$a"})", {R"({"a": 1})", "{}"}, "null");
  ExpectGroup(R"({"$last": "$a"})", {R"({"a": 1})", R"({"a": [2]})"}, "[2]");
}

TEST(AccumulatorTest, PushAddToSetDocumentedExample) {
  ExpectGroup(R"({"$push": {"item": "$item", "quantity": "$quantity"}})", kMarch1,
              R"([{"item": "abc", "quantity": 2}, {"item": "jkl", "quantity": 1}])");
  ExpectGroup(R"({"$push": "$a"})", {R"({"a": 1})", "{}", R"({"a": null})", R"({"a": [1]})"}, "[1, null, [1]]");
  ExpectGroup(R"({"$addToSet": "$item"})",
              {R"({"item": "abc"})", R"({"item": "jkl"})", R"({"item": "abc"})", "{}"}, R"(["abc", "jkl"])");
  ExpectGroup(R"({"$addToSet": "$a"})", {R"({"a": 2})", R"({"a": 1})", R"({"a": 1.0})", R"({"a": null})"},
              "[null, 1, 2]");
}

TEST(AccumulatorTest, MergeObjectsDocumentedExample) {
  ExpectGroup(R"({"$mergeObjects": "$quantity"})",
              {R"({"year": 2017, "quantity": {"2017Q1": 500, "2017Q2": 500}})",
               R"({"year": 2017, "quantity": {"2017Q1": 300}})",
               R"({"year": 2017, "quantity": {"2017Q3": 100, "2017Q4": 250}})",
               R"({"year": 2017, "quantity": null})", R"({"year": 2017})"},
              R"({"2017Q1": 300, "2017Q2": 500, "2017Q3": 100, "2017Q4": 250})");
  EXPECT_EQ(40400, Group(R"({"$mergeObjects": "$a"})", {R"({"a": 1})"}).status().code_number());
}

TEST(AccumulatorTest, StdDevDocumentedExample) {
  // MongoDB's example: quiz scores.
  StatusOr<Value> pop = Group(R"({"$stdDevPop": "$score"})", {R"({"score": 85})", R"({"score": 90})", R"({"score": 71})"});
  ASSERT_OK(pop);
  EXPECT_NEAR(8.04155872120988, pop->dbl(), 1e-12);
  ExpectGroup(R"({"$stdDevPop": "$score"})", {R"({"score": 82})", R"({"score": 64})"}, "9.0");
  StatusOr<Value> samp = Group(R"({"$stdDevSamp": "$a"})", {R"({"a": 1})", R"({"a": 2})", R"({"a": 3})", R"({"a": 4})"});
  ASSERT_OK(samp);
  EXPECT_NEAR(1.2909944487358056, samp->dbl(), 1e-12);
  ExpectGroup(R"({"$stdDevSamp": "$a"})", {R"({"a": 1})"}, "null");
  ExpectGroup(R"({"$stdDevPop": "$a"})", {R"({"a": "x"})"}, "null");
}

TEST(AccumulatorTest, ParseErrors) {
  EXPECT_EQ(15952, Group(R"({"$foo": 1})", {}).status().code_number());
  StatusOr<Value> unknown = Group(R"({"$foo": 1})", {});
  EXPECT_EQ("unknown group operator '$foo'", unknown.status().reason());
  EXPECT_EQ(40234, Group("5", {}).status().code_number());
  EXPECT_EQ(40238, Group(R"({"$sum": 1, "$avg": 1})", {}).status().code_number());
  EXPECT_EQ(40238, Group("{}", {}).status().code_number());
  EXPECT_EQ(40237, Group(R"({"$sum": [1, 2]})", {}).status().code_number());
  EXPECT_EQ(14, Group(R"({"$count": {"x": 1}})", {}).status().code_number());
  EXPECT_EQ(17276, Group(R"({"$sum": "$$nope"})", {}).status().code_number());
  EXPECT_EQ(15952, NewAccumulator("$median").status().code_number());
}

TEST(AccumulatorTest, StatementSerializes) {
  ParseContext pc;
  JsonValue spec = ParseJsonValue(R"({"$sum": "$qty"})");
  StatusOr<AccumulationStatement> s = AccumulationStatement::Parse("total", spec.value, &pc);
  ASSERT_OK(s);
  EXPECT_STREQ("$sum", s->op());
  EXPECT_EQ("total", s->field());
  bson_t out = BSON_INITIALIZER;
  s->Serialize(&out);
  EXPECT_EQ(Json(R"({"total": {"$sum": "$qty"}})").ToJson(), gatedb::test::ToJson(&out));
  bson_destroy(&out);
  JsonValue count = ParseJsonValue(R"({"$count": {}})");
  StatusOr<AccumulationStatement> c = AccumulationStatement::Parse("n", count.value, &pc);
  ASSERT_OK(c);
  EXPECT_STREQ("$sum", c->op());
  bson_t cout = BSON_INITIALIZER;
  c->Serialize(&cout);
  EXPECT_EQ(Json(R"({"n": {"$sum": {"$const": 1}}})").ToJson(), gatedb::test::ToJson(&cout));
  bson_destroy(&cout);
}

TEST(AccumulatorTest, MemoryUsageGrowsWithKeptValues) {
  StatusOr<std::unique_ptr<Accumulator>> push = NewAccumulator("$push");
  StatusOr<std::unique_ptr<Accumulator>> sum = NewAccumulator("$sum");
  ASSERT_OK(push);
  ASSERT_OK(sum);
  const size_t push0 = (*push)->MemoryUsage(), sum0 = (*sum)->MemoryUsage();
  const std::string big(1000, 'x');
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK((*push)->Process(Value::String(big)));
    ASSERT_OK((*sum)->Process(Value::Int32(i)));
  }
  EXPECT_GE((*push)->MemoryUsage(), push0 + 10 * 1000);
  EXPECT_EQ(sum0, (*sum)->MemoryUsage());
}

// Processing all inputs in one accumulator must equal processing runs in
// several, serializing each run's partial state and merging the partials in
// order into a fresh accumulator.
void ExpectPartialsMerge(const std::string& op, const std::vector<std::string>& values) {
  SCOPED_TRACE(op);
  std::vector<JsonValue> parsed;
  for (const std::string& v : values) parsed.push_back(ParseJsonValue(v));
  StatusOr<std::unique_ptr<Accumulator>> whole = NewAccumulator(op);
  ASSERT_OK(whole);
  for (const JsonValue& v : parsed) ASSERT_OK((*whole)->Process(Value::Borrow(v.value)));
  StatusOr<Value> expected = (*whole)->Finalize();
  ASSERT_OK(expected);

  for (size_t run = 1; run <= values.size(); ++run) {
    StatusOr<std::unique_ptr<Accumulator>> merged = NewAccumulator(op);
    ASSERT_OK(merged);
    for (size_t start = 0; start < parsed.size(); start += run) {
      StatusOr<std::unique_ptr<Accumulator>> part = NewAccumulator(op);
      ASSERT_OK(part);
      for (size_t i = start; i < std::min(parsed.size(), start + run); ++i) {
        ASSERT_OK((*part)->Process(Value::Borrow(parsed[i].value)));
      }
      StatusOr<Value> partial = (*part)->SerializePartial();
      ASSERT_OK(partial);
      ASSERT_TRUE(partial->self_contained());
      // As a spill writes it: through BSON bytes.
      bson_t spilled = BSON_INITIALIZER;
      partial->AppendTo(&spilled, "p");
      part->reset();
      bson_iter_t it;
      ASSERT_TRUE(bson_iter_init_find(&it, &spilled, "p"));
      ASSERT_OK((*merged)->MergePartial(Value::Borrow(*bson_iter_value(&it))));
      bson_destroy(&spilled);
    }
    StatusOr<Value> got = (*merged)->Finalize();
    ASSERT_OK(got);
    if (op == "$stdDevPop" || op == "$stdDevSamp" || op == "$avg") {
      ASSERT_EQ(expected->type(), got->type()) << "run " << run;
      if (expected->type() == BSON_TYPE_DOUBLE) {
        EXPECT_NEAR(expected->dbl(), got->dbl(), 1e-9) << "run " << run;
      }
    } else {
      EXPECT_EQ(Canon(*expected), Canon(*got)) << "run " << run;
    }
  }
}

TEST(AccumulatorTest, PartialStateMergesInOrder) {
  const std::vector<std::string> numbers = {"3", "1.5", "null", "\"x\"", "2147483647", "7", "{\"$numberLong\": \"5\"}"};
  for (const char* op : {"$sum", "$avg", "$min", "$max", "$stdDevPop", "$stdDevSamp"}) {
    ExpectPartialsMerge(op, numbers);
  }
  const std::vector<std::string> mixed = {"\"b\"", "1", "[1, 2]", "{\"k\": 1}", "null", "1.0", "\"a\"", "\"b\""};
  for (const char* op : {"$first", "$last", "$push", "$addToSet", "$min", "$max"}) {
    ExpectPartialsMerge(op, mixed);
  }
  ExpectPartialsMerge("$mergeObjects", {"{\"a\": 1, \"b\": 1}", "null", "{\"b\": 2}", "{\"c\": [3]}", "{\"a\": 4}"});
  // Integer overflow in one partial makes the total a double, as in one pass.
  ExpectPartialsMerge("$sum", {"{\"$numberLong\": \"9223372036854775807\"}", "1", "1"});
  // Decimals in some partials: the merged total is the one-pass decimal.
  const std::vector<std::string> decimals = {"1", "{\"$numberDecimal\": \"0.10\"}", "2.5", "null",
                                             "{\"$numberDecimal\": \"9999999999999999999999999999999999\"}", "3"};
  for (const char* op : {"$sum", "$avg", "$min", "$max"}) ExpectPartialsMerge(op, decimals);
}

TEST(AccumulatorTest, MalformedPartialsAreRefused) {
  for (const char* op : {"$sum", "$avg", "$first", "$push", "$addToSet", "$mergeObjects", "$stdDevPop"}) {
    StatusOr<std::unique_ptr<Accumulator>> a = NewAccumulator(op);
    ASSERT_OK(a);
    JsonValue bad = ParseJsonValue("\"garbage\"");
    EXPECT_THAT((*a)->MergePartial(Value::Borrow(bad.value)), gatedb::test::StatusIs(ErrorCode::kInternalError))
        << op;
  }
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
