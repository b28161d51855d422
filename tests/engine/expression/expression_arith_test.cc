// Arithmetic operators, against MongoDB's documented examples, plus result
// types, overflow promotion, null/missing and error codes.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

const char* kLongMax = R"({"$numberLong": "9223372036854775807"})";
const char* kLongMin = R"({"$numberLong": "-9223372036854775808"})";

TEST(AddTest, DocumentedExamples) {
  const char* total = R"({"$add": ["$price", "$fee"]})";
  RunCases({
      {total, R"({"item": "abc", "price": 10, "fee": 2})", "12"},
      {total, R"({"item": "jkl", "price": 20, "fee": 1})", "21"},
      {total, R"({"item": "xyz", "price": 5, "fee": 0})", "5"},
      // Adding milliseconds to a date: three days later.
      {R"({"$add": ["$date", 259200000]})", R"({"date": {"$date": "2014-03-01T08:00:00Z"}})",
       R"({"$date": "2014-03-04T08:00:00Z"})"},
  });
}

TEST(AddTest, TypesAndOverflow) {
  RunCases({
      {R"({"$add": []})", "{}", "0"},
      {R"({"$add": [1, 2.5]})", "{}", "3.5"},
      {R"({"$add": [1, {"$numberLong": "2"}]})", "{}", R"({"$numberLong": "3"})"},
      {R"({"$add": [2147483647, 1]})", "{}", R"({"$numberLong": "2147483648"})"},
      {R"({"$add": [-2147483648, -1]})", "{}", R"({"$numberLong": "-2147483649"})"},
      {std::string(R"({"$add": [)") + kLongMax + ", 1]}", "{}", "9.223372036854775808e18"},
      {R"({"$add": [0.1, 0.2]})", "{}", "0.30000000000000004"},
      // A fractional number of milliseconds is rounded.
      {R"({"$add": [{"$date": "2020-01-01T00:00:00Z"}, 1.6]})", "{}", R"({"$date": "2020-01-01T00:00:00.002Z"})"},
      {R"({"$add": [1, {"$date": "2020-01-01T00:00:00Z"}, 1]})", "{}", R"({"$date": "2020-01-01T00:00:00.002Z"})"},
  });
}

TEST(AddTest, NullMissingAndErrors) {
  RunCases({
      {R"({"$add": [1, null]})", "{}", "null"},
      {R"({"$add": [1, "$nope"]})", "{}", "null"},
      {R"({"$add": [null, "a"]})", "{}", "null"},
      {R"({"$add": [1, "a"]})", "{}", "error:16554"},
      {R"({"$add": [1, [1]]})", "{}", "error:16554"},
      {R"({"$add": [1, true]})", "{}", "error:16554"},
      {R"({"$add": [{"$date": "2020-01-01T00:00:00Z"}, {"$date": "2020-01-01T00:00:00Z"}]})", "{}",
       "error:16612"},
      {R"({"$add": [1, {"$numberDecimal": "1.5"}]})", "{}", R"({"$numberDecimal": "2.5"})"},
      {std::string(R"({"$add": [{"$date": "2020-01-01T00:00:00Z"}, )") + kLongMax + "]}", "{}", "error:15"},
  });
}

TEST(SubtractTest, DocumentedExamples) {
  const char* doc = R"({"price": 10, "fee": 2, "discount": 5, "date": {"$date": "2014-03-01T08:00:00Z"}})";
  RunCases({
      {R"({"$subtract": [{"$add": ["$price", "$fee"]}, "$discount"]})", doc, "7"},
      // Five minutes before the date.
      {R"({"$subtract": ["$date", 300000]})", doc, R"({"$date": "2014-03-01T07:55:00Z"})"},
      // Two dates: the difference in milliseconds, a long.
      {R"({"$subtract": [{"$date": "2014-03-02T08:00:00Z"}, "$date"]})", doc, R"({"$numberLong": "86400000"})"},
  });
}

TEST(SubtractTest, TypesAndErrors) {
  RunCases({
      {R"({"$subtract": [5, 7.5]})", "{}", "-2.5"},
      {R"({"$subtract": [-2147483648, 1]})", "{}", R"({"$numberLong": "-2147483649"})"},
      {std::string(R"({"$subtract": [)") + kLongMin + ", 1]}", "{}", "-9.223372036854775808e18"},
      {R"({"$subtract": [{"$numberLong": "5"}, 1]})", "{}", R"({"$numberLong": "4"})"},
      {R"({"$subtract": [null, 1]})", "{}", "null"},
      {R"({"$subtract": [1, "$nope"]})", "{}", "null"},
      {R"({"$subtract": [1, {"$date": "2020-01-01T00:00:00Z"}]})", "{}", "error:16556"},
      {R"({"$subtract": ["a", 1]})", "{}", "error:16556"},
      {R"({"$subtract": [1]})", "{}", "error:16020"},
  });
}

TEST(MultiplyTest, DocumentedExampleAndTypes) {
  RunCases({
      {R"({"$multiply": ["$price", "$quantity"]})", R"({"price": 10, "quantity": 2})", "20"},
      {R"({"$multiply": ["$price", "$quantity"]})", R"({"price": 20, "quantity": 1})", "20"},
      {R"({"$multiply": []})", "{}", "1"},
      {R"({"$multiply": [2147483647, 2]})", "{}", R"({"$numberLong": "4294967294"})"},
      {std::string(R"({"$multiply": [)") + kLongMax + ", 2]}", "{}", "1.8446744073709552e19"},
      {R"({"$multiply": [2, 1.5]})", "{}", "3.0"},
      {R"({"$multiply": [10.5, 0.9]})", "{}", "9.450000000000001"},
      {R"({"$multiply": [2, null]})", "{}", "null"},
      {R"({"$multiply": [2, "x"]})", "{}", "error:16555"},
      {R"({"$multiply": [2, {}]})", "{}", "error:16555"},
  });
}

TEST(DivideTest, DocumentedExampleAndErrors) {
  RunCases({
      // MongoDB's example: 80 hours of work in 8-hour days.
      {R"({"$divide": ["$hours", 8]})", R"({"hours": 80})", "10.0"},
      {R"({"$divide": [1, 4]})", "{}", "0.25"},
      {R"({"$divide": [null, 4]})", "{}", "null"},
      {R"({"$divide": [1, "$nope"]})", "{}", "null"},
      {R"({"$divide": [1, 0]})", "{}", "error:16608"},
      {R"({"$divide": [1, 0.0]})", "{}", "error:16608"},
      {R"({"$divide": ["a", 1]})", "{}", "error:16609"},
  });
}

TEST(ModTest, DocumentedExamples) {
  RunCases({
      {R"({"$mod": ["$hours", "$tasks"]})", R"({"hours": 80, "tasks": 7})", "3"},
      {R"({"$mod": ["$hours", "$tasks"]})", R"({"hours": 40, "tasks": 4})", "0"},
      // The result has the dividend's sign.
      {R"({"$mod": [-5, 3]})", "{}", "-2"},
      {R"({"$mod": [5, -3]})", "{}", "2"},
      {R"({"$mod": [5.5, 2]})", "{}", "1.5"},
      {R"({"$mod": [{"$numberLong": "7"}, 2]})", "{}", R"({"$numberLong": "1"})"},
      {std::string(R"({"$mod": [)") + kLongMin + ", -1]}", "{}", R"({"$numberLong": "0"})"},
      {R"({"$mod": [5, null]})", "{}", "null"},
      {R"({"$mod": [5, 0]})", "{}", "error:16610"},
      {R"({"$mod": [5, 0.0]})", "{}", "error:16610"},
      {R"({"$mod": [5, "a"]})", "{}", "error:16611"},
  });
}

TEST(AbsTest, DocumentedExampleAndEdges) {
  RunCases({
      {R"({"$abs": {"$subtract": ["$startTemp", "$endTemp"]}})", R"({"startTemp": 50, "endTemp": 80})", "30"},
      {R"({"$abs": {"$subtract": ["$startTemp", "$endTemp"]}})", R"({"startTemp": 40, "endTemp": 40})", "0"},
      {R"({"$abs": {"$subtract": ["$startTemp", "$endTemp"]}})", R"({"startTemp": 90, "endTemp": 70})", "20"},
      {R"({"$abs": {"$subtract": ["$startTemp", "$endTemp"]}})", R"({"startTemp": 60, "endTemp": 70})", "10"},
      {R"({"$abs": -2147483648})", "{}", R"({"$numberLong": "2147483648"})"},
      {R"({"$abs": -1.5})", "{}", "1.5"},
      {R"({"$abs": null})", "{}", "null"},
      {R"({"$abs": "$nope"})", "{}", "null"},
      {R"({"$abs": "a"})", "{}", "error:28765"},
      {std::string(R"({"$abs": )") + kLongMin + "}", "{}", "error:28680"},
  });
}

TEST(CeilFloorTest, DocumentedExamples) {
  RunCases({
      {R"({"$ceil": 5})", "{}", "5"},
      {R"({"$ceil": 9.25})", "{}", "10.0"},
      {R"({"$ceil": -2.8})", "{}", "-2.0"},
      {R"({"$ceil": 8.73})", "{}", "9.0"},
      {R"({"$floor": 5})", "{}", "5"},
      {R"({"$floor": 9.25})", "{}", "9.0"},
      {R"({"$floor": -2.8})", "{}", "-3.0"},
      {R"({"$floor": 8.73})", "{}", "8.0"},
      {R"({"$floor": {"$numberLong": "3"}})", "{}", R"({"$numberLong": "3"})"},
      {R"({"$ceil": null})", "{}", "null"},
      {R"({"$floor": "x"})", "{}", "error:28765"},
  });
}

TEST(RoundTest, DocumentedExamples) {
  const char* r1 = R"({"$round": ["$value", 1]})";
  const char* rm1 = R"({"$round": ["$value", -1]})";
  const char* r0 = R"({"$round": ["$value", 0]})";
  RunCases({
      {r1, R"({"value": 19.25})", "19.2"},
      {r1, R"({"value": 28.73})", "28.7"},
      {r1, R"({"value": 34.32})", "34.3"},
      {r1, R"({"value": -45.39})", "-45.4"},
      {rm1, R"({"value": 19.25})", "20.0"},
      {rm1, R"({"value": 28.73})", "30.0"},
      {rm1, R"({"value": 34.32})", "30.0"},
      {rm1, R"({"value": -45.39})", "-50.0"},
      {r0, R"({"value": 19.25})", "19.0"},
      {r0, R"({"value": -45.39})", "-45.0"},
      // Half to even.
      {R"({"$round": 10.5})", "{}", "10.0"},
      {R"({"$round": 11.5})", "{}", "12.0"},
      {R"({"$round": -12.5})", "{}", "-12.0"},
      {R"({"$round": [2.015, 2]})", "{}", "2.02"},
      // Integers keep their type; negative places round to tens, hundreds...
      {R"({"$round": [1234, -2]})", "{}", "1200"},
      {R"({"$round": [1250, -2]})", "{}", "1200"},
      {R"({"$round": [1350, -2]})", "{}", "1400"},
      {R"({"$round": [-1350, -2]})", "{}", "-1400"},
      {R"({"$round": [{"$numberLong": "1234"}, -1]})", "{}", R"({"$numberLong": "1230"})"},
      {R"({"$round": [2147483647, -1]})", "{}", R"({"$numberLong": "2147483650"})"},
      {R"({"$round": [7, 2]})", "{}", "7"},
      {R"({"$round": [null, 1]})", "{}", "null"},
      {R"({"$round": [1.5, null]})", "{}", "null"},
      {R"({"$round": ["a", 1]})", "{}", "error:51081"},
      {R"({"$round": [1.5, 0.5]})", "{}", "error:51082"},
      {R"({"$round": [1.5, 101]})", "{}", "error:51083"},
      {R"({"$round": [1.5, -21]})", "{}", "error:51083"},
      {std::string(R"({"$round": [)") + kLongMax + ", -1]}", "{}", "error:51080"},
      {R"({"$round": [1, 2, 3]})", "{}", "error:28667"},
  });
}

TEST(TruncTest, DocumentedExamples) {
  const char* t1 = R"({"$trunc": ["$value", 1]})";
  const char* tm1 = R"({"$trunc": ["$value", -1]})";
  RunCases({
      {t1, R"({"value": 19.25})", "19.2"},
      {t1, R"({"value": 28.73})", "28.7"},
      {t1, R"({"value": 34.32})", "34.3"},
      {t1, R"({"value": -45.39})", "-45.3"},
      {tm1, R"({"value": 19.25})", "10.0"},
      {tm1, R"({"value": 28.73})", "20.0"},
      {tm1, R"({"value": 34.32})", "30.0"},
      {tm1, R"({"value": -45.39})", "-40.0"},
      {R"({"$trunc": 8.9})", "{}", "8.0"},
      {R"({"$trunc": -8.9})", "{}", "-8.0"},
      {R"({"$trunc": [1239, -1]})", "{}", "1230"},
      {R"({"$trunc": "$nope"})", "{}", "null"},
      {R"({"$trunc": "x"})", "{}", "error:51081"},
  });
}

TEST(PowerTest, SqrtPowExpLnLog) {
  RunCases({
      {R"({"$sqrt": 25})", "{}", "5.0"},
      // MongoDB's distance example: sqrt((x2-x1)^2 + (y2-y1)^2).
      {R"({"$sqrt": {"$add": [{"$pow": [{"$subtract": ["$p2.y", "$p1.y"]}, 2]},
                               {"$pow": [{"$subtract": ["$p2.x", "$p1.x"]}, 2]}]}})",
       R"({"p1": {"x": 5, "y": 8}, "p2": {"x": 0, "y": 5}})", "5.830951894845301"},
      {R"({"$sqrt": null})", "{}", "null"},
      {R"({"$sqrt": -1})", "{}", "error:28714"},
      {R"({"$sqrt": "x"})", "{}", "error:28765"},
      {R"({"$pow": [5, 0]})", "{}", "1"},
      {R"({"$pow": [5, 2]})", "{}", "25"},
      {R"({"$pow": [5, -2]})", "{}", "0.04"},
      {R"({"$pow": [-5, 0.5]})", "{}", R"({"$numberDouble": "NaN"})"},
      {R"({"$pow": [2, 40]})", "{}", R"({"$numberLong": "1099511627776"})"},
      {R"({"$pow": [{"$numberLong": "2"}, 3]})", "{}", R"({"$numberLong": "8"})"},
      {R"({"$pow": [2, 70]})", "{}", "1.1805916207174113e21"},
      {R"({"$pow": [-1, -3]})", "{}", "-1"},
      {R"({"$pow": [2, 0.5]})", "{}", "1.4142135623730951"},
      {R"({"$pow": [null, 2]})", "{}", "null"},
      {R"({"$pow": [0, -1]})", "{}", "error:28764"},
      {R"({"$pow": ["a", 1]})", "{}", "error:28762"},
      {R"({"$pow": [1, "a"]})", "{}", "error:28763"},
      {R"({"$exp": 0})", "{}", "1.0"},
      {R"({"$exp": 1})", "{}", "2.718281828459045"},
      {R"({"$exp": "x"})", "{}", "error:28765"},
      {R"({"$ln": 1})", "{}", "0.0"},
      {R"({"$ln": 2.718281828459045})", "{}", "1.0"},
      {R"({"$ln": 0})", "{}", "error:28766"},
      {R"({"$log": [100, 10]})", "{}", "2.0"},
      {R"({"$log": [100, 2.718281828459045]})", "{}", "4.605170185988092"},
      {R"({"$log": [null, 10]})", "{}", "null"},
      {R"({"$log": ["a", 10]})", "{}", "error:28756"},
      {R"({"$log": [10, "a"]})", "{}", "error:28757"},
      {R"({"$log": [-1, 10]})", "{}", "error:28758"},
      {R"({"$log": [10, 1]})", "{}", "error:28759"},
      {R"({"$log10": 1})", "{}", "0.0"},
      {R"({"$log10": 10})", "{}", "1.0"},
      {R"({"$log10": 100})", "{}", "2.0"},
      {R"({"$log10": 0})", "{}", "error:28761"},
      {R"({"$log10": {"$numberDecimal": "10"}})", "{}", R"({"$numberDecimal": "1"})"},
  });
}

TEST(TrigTest, Basics) {
  RunCases({
      {R"({"$sin": 0})", "{}", "0.0"},
      {R"({"$cos": 0})", "{}", "1.0"},
      {R"({"$degreesToRadians": 180})", "{}", "3.141592653589793"},
      {R"({"$radiansToDegrees": 3.141592653589793})", "{}", "180.0"},
      {R"({"$atan2": [1, 1]})", "{}", "0.7853981633974483"},
      {R"({"$sin": null})", "{}", "null"},
      {R"({"$acos": 2})", "{}", "error:50989"},
      {R"({"$sin": "x"})", "{}", "error:28765"},
  });
}

TEST(AccumulatorExpressionTest, DocumentedExamples) {
  const char* doc = R"({"quizzes": [10, 6, 7], "labs": [5, 8], "final": 80, "midterm": 75})";
  RunCases({
      {R"({"$sum": "$quizzes"})", doc, "23"},
      {R"({"$sum": "$labs"})", doc, "13"},
      {R"({"$sum": ["$final", "$midterm"]})", doc, "155"},
      {R"({"$avg": "$quizzes"})", doc, "7.666666666666667"},
      {R"({"$avg": "$labs"})", doc, "6.5"},
      {R"({"$avg": ["$final", "$midterm"]})", doc, "77.5"},
      {R"({"$max": "$quizzes"})", doc, "10"},
      {R"({"$max": ["$final", "$midterm"]})", doc, "80"},
      {R"({"$min": "$quizzes"})", doc, "6"},
      {R"({"$min": ["$final", "$midterm"]})", doc, "75"},
  });
}

TEST(AccumulatorExpressionTest, NonNumbersNullAndMissing) {
  RunCases({
      {R"({"$sum": "$nope"})", "{}", "0"},
      {R"({"$sum": [1, "a", 2, null]})", "{}", "3"},
      {R"({"$sum": 5})", "{}", "5"},
      {R"({"$sum": [[1, 2], 3]})", "{}", "3"},  // with several arguments, arrays are not expanded
      {R"({"$sum": [2147483647, 1]})", "{}", R"({"$numberLong": "2147483648"})"},
      {R"({"$avg": []})", "{}", "null"},
      {R"({"$avg": ["a", "b"]})", "{}", "null"},
      {R"({"$avg": [1, 2]})", "{}", "1.5"},
      {R"({"$max": [null, "$nope"]})", "{}", "null"},
      {R"({"$max": [1, "a"]})", "{}", R"("a")"},
      {R"({"$min": [1, "a", null]})", "{}", "1"},
      {R"({"$min": []})", "{}", "null"},
      {R"({"$stdDevPop": [[1, 2, 3, 4]]})", "{}", "1.118033988749895"},
      {R"({"$stdDevSamp": [[1, 2, 3, 4]]})", "{}", "1.2909944487358056"},
      {R"({"$stdDevSamp": [1]})", "{}", "null"},
      {R"({"$sum": [1, {"$numberDecimal": "1"}]})", "{}", R"({"$numberDecimal": "2"})"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
