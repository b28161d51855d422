// Decimal128 in aggregation expressions (issue 19): MongoDB's result types
// (a decimal operand makes a decimal) and IEEE's exact results, compared as
// canonical Extended JSON, which keeps the exponent ("0.30" is not "0.3").
#include <gtest/gtest.h>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

std::string D(const char* s) { return std::string(R"({"$numberDecimal": ")") + s + "\"}"; }

TEST(DecimalExpressionTest, AddSubtractMultiplyDivide) {
  RunCases({
      {R"({"$add": [{"$numberDecimal": "0.1"}, {"$numberDecimal": "0.2"}]})", "{}", D("0.3")},
      {R"({"$add": [{"$numberDecimal": "1.0"}, 2]})", "{}", D("3.0")},
      // A double joins as MongoDB's Decimal128(double): 15 digits.
      {R"({"$add": [{"$numberDecimal": "1"}, 0.1]})", "{}", D("1.100000000000000")},
      {R"({"$add": [{"$numberDecimal": "9999999999999999999999999999999999"}, 1]})", "{}",
       D("1.000000000000000000000000000000000E+34")},
      {R"({"$add": [{"$numberDecimal": "1"}, {"$numberLong": "9223372036854775807"}]})", "{}",
       D("9223372036854775808")},
      {R"({"$add": [{"$date": "1970-01-01T00:00:00Z"}, {"$numberDecimal": "1.5"}]})", "{}",
       R"({"$date": {"$numberLong": "2"}})"},
      {R"({"$add": [{"$numberDecimal": "1"}, null]})", "{}", "null"},
      {R"({"$subtract": [{"$numberDecimal": "0.3"}, {"$numberDecimal": "0.1"}]})", "{}", D("0.2")},
      {R"({"$subtract": [{"$numberDecimal": "1"}, 1.5]})", "{}", D("-0.50000000000000")},
      {R"({"$subtract": [{"$date": "1970-01-01T00:00:01Z"}, {"$numberDecimal": "0.5"}]})", "{}",
       R"({"$date": {"$numberLong": "1000"}})"},
      {R"({"$multiply": [{"$numberDecimal": "1.5"}, 2]})", "{}", D("3.0")},
      {R"({"$multiply": [2, {"$numberDecimal": "0.5"}, 3]})", "{}", D("3.0")},
      {R"({"$multiply": [{"$numberDecimal": "1E6144"}, 10]})", "{}", D("Infinity")},
      {R"({"$divide": [{"$numberDecimal": "1"}, 3]})", "{}", D("0.3333333333333333333333333333333333")},
      {R"({"$divide": [{"$numberDecimal": "6"}, 2]})", "{}", D("3")},
      {R"({"$divide": [{"$numberDecimal": "1"}, 0]})", "{}", "error:16608"},
      {R"({"$divide": [1, {"$numberDecimal": "-0.00"}]})", "{}", "error:16608"},
      {R"({"$mod": [{"$numberDecimal": "7.5"}, 2]})", "{}", D("1.5")},
      {R"({"$mod": [{"$numberDecimal": "-7"}, 2]})", "{}", D("-1")},
      {R"({"$mod": [7, {"$numberDecimal": "0"}]})", "{}", "error:16610"},
  });
}

// The trigonometric and hyperbolic operators compute a decimal in decimal
// (Intel's functions, MongoDB's digits: sin(1) ends in ...2991 where the
// correctly rounded value ends in ...2990), refuse what MongoDB refuses
// with its codes and messages, and pass NaN and null through.  Exact
// results come in Intel's cohorts (cos(0) has 34 digits, tan(0) is 0E-40),
// which MongoDB returns as they are.
TEST(DecimalExpressionTest, TrigonometricAndHyperbolicOperators) {
  RunCases({
      {R"({"$sin": {"$numberDecimal": "1"}})", "{}", D("0.8414709848078965066525023216302991")},
      {R"({"$cos": {"$numberDecimal": "0"}})", "{}", D("1.000000000000000000000000000000000")},
      {R"({"$tan": {"$numberDecimal": "0"}})", "{}", D("0E-40")},
      {R"({"$asin": {"$numberDecimal": "1"}})", "{}", D("1.570796326794896619231321691639751")},
      {R"({"$acos": {"$numberDecimal": "1"}})", "{}", D("0E-6176")},
      {R"({"$atan": {"$numberDecimal": "0"}})", "{}", D("0")},
      {R"({"$sinh": {"$numberDecimal": "0"}})", "{}", D("0E-40")},
      {R"({"$cosh": {"$numberDecimal": "0"}})", "{}", D("1.000000000000000000000000000000000")},
      {R"({"$tanh": {"$numberDecimal": "0"}})", "{}", D("0")},
      {R"({"$asinh": {"$numberDecimal": "0"}})", "{}", D("0E-6176")},
      {R"({"$acosh": {"$numberDecimal": "1"}})", "{}", D("0")},
      {R"({"$atanh": {"$numberDecimal": "0"}})", "{}", D("0E-6176")},
      {R"({"$atanh": {"$numberDecimal": "1"}})", "{}", D("Infinity")},
      // A double or an integer with a decimal: computed in decimal.
      {R"({"$atan2": [{"$numberDecimal": "1"}, 1]})", "{}", D("0.7853981633974483096156608458198757")},
      {R"({"$atan2": [1.0, {"$numberDecimal": "-1"}]})", "{}", D("2.356194490192344928846982537459627")},
      {R"({"$atan2": [{"$numberDecimal": "1"}, null]})", "{}", "null"},
      {R"({"$atan2": [{"$numberDecimal": "1"}, "x"]})", "{}", "error:51045"},
      // Bounds, as MongoDB's bounded trigonometric operators check them.
      {R"({"$sin": {"$numberDecimal": "Infinity"}})", "{}", "error:50989"},
      {R"({"$cos": {"$numberDecimal": "-Infinity"}})", "{}", "error:50989"},
      {R"({"$asin": {"$numberDecimal": "1.0000000000000000000000000000001"}})", "{}", "error:50989"},
      {R"({"$acos": {"$numberDecimal": "-2"}})", "{}", "error:50989"},
      {R"({"$acosh": {"$numberDecimal": "0.9999999999999999999999999999999999"}})", "{}", "error:50989"},
      {R"({"$atanh": {"$numberDecimal": "-1.5"}})", "{}", "error:50989"},
      {R"({"$sin": {"$numberDecimal": "NaN"}})", "{}", D("NaN")},
      {R"({"$acos": {"$numberDecimal": "NaN"}})", "{}", D("NaN")},
      {R"({"$sinh": null})", "{}", "null"},
      {R"({"$radiansToDegrees": {"$numberDecimal": "3.141592653589793238462643383279503"}})", "{}",
       D("180.0000000000000000000000000000000")},
  });
  StatusOr<Value> v = Eval(R"({"$acos": {"$numberDecimal": "2"}})");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().reason(), "cannot apply $acos to 2, value must in [-1,1]");
  v = Eval(R"({"$tan": {"$numberDecimal": "-Infinity"}})");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().reason(), "cannot apply $tan to -Infinity, value must in (-inf,inf)");
}

TEST(DecimalExpressionTest, OneNumberOperators) {
  RunCases({
      {R"({"$abs": {"$numberDecimal": "-1.50"}})", "{}", D("1.50")},
      {R"({"$ceil": {"$numberDecimal": "1.1"}})", "{}", D("2")},
      {R"({"$floor": {"$numberDecimal": "-1.1"}})", "{}", D("-2")},
      {R"({"$round": [{"$numberDecimal": "2.5"}, 0]})", "{}", D("2")},
      {R"({"$round": [{"$numberDecimal": "1.25"}, 1]})", "{}", D("1.2")},
      {R"({"$round": [{"$numberDecimal": "1234"}, -2]})", "{}", D("1.2E+3")},
      {R"({"$trunc": [{"$numberDecimal": "2.79"}, 1]})", "{}", D("2.7")},
      {R"({"$trunc": {"$numberDecimal": "-2.79"}})", "{}", D("-2")},
      {R"({"$sqrt": {"$numberDecimal": "4"}})", "{}", D("2")},
      {R"({"$sqrt": {"$numberDecimal": "2"}})", "{}", D("1.414213562373095048801688724209698")},
      {R"({"$sqrt": {"$numberDecimal": "-1"}})", "{}", "error:28714"},
      {R"({"$log10": {"$numberDecimal": "100"}})", "{}", D("2")},
      {R"({"$ln": {"$numberDecimal": "0"}})", "{}", "error:28766"},
      {R"({"$log10": {"$numberDecimal": "-1"}})", "{}", "error:28761"},
      {R"({"$ln": {"$numberDecimal": "NaN"}})", "{}", D("NaN")},
      // Base 2 and base 10 are Intel's log2 and log10, as in MongoDB.
      {R"({"$log": [{"$numberDecimal": "8"}, 2]})", "{}", D("3")},
      {R"({"$log": [{"$numberDecimal": "8"}, 1]})", "{}", "error:28759"},
      // Any other base: ln(x) divided by the base itself, as MongoDB's
      // Decimal128::logarithm(base) computes it (34-digit ln(8) / 3, as
      // Python's decimal module gives it; the double path below divides by
      // ln(base)).
      {R"({"$log": [{"$numberDecimal": "8"}, {"$numberDecimal": "3"}]})", "{}",
       D("0.6931471805599453094172321214581767")},
      {R"({"$log": [{"$numberDecimal": "100"}, 7]})", "{}", D("0.6578814551411559097194261299098183")},
      {R"({"$pow": [{"$numberDecimal": "2"}, 3]})", "{}", D("8.000000000000000000000000000000000")},
      {R"({"$pow": [{"$numberDecimal": "0"}, -1]})", "{}", "error:28764"},
      {R"({"$degreesToRadians": {"$numberDecimal": "180"}})", "{}", D("3.141592653589793238462643383279503")},
  });
}

TEST(DecimalExpressionTest, AccumulatorsAndConversions) {
  RunCases({
      {R"({"$sum": [[{"$numberDecimal": "0.1"}, 0.2, 1]]})", "{}", D("1.30000000000000")},
      {R"({"$sum": [{"$numberDecimal": "0.10"}, {"$numberDecimal": "0.20"}]})", "{}", D("0.30")},
      {R"({"$avg": [{"$numberDecimal": "1"}, {"$numberDecimal": "2"}]})", "{}", D("1.5")},
      {R"({"$avg": [{"$numberDecimal": "1"}, 2, "x"]})", "{}", D("1.5")},
      {R"({"$avg": [1, 2]})", "{}", "1.5"},
      {R"({"$max": [{"$numberDecimal": "9999999999999999999999999999999999"},
                    {"$numberDecimal": "9999999999999999999999999999999998"}]})",
       "{}", D("9999999999999999999999999999999999")},
      {R"({"$min": [0.1, {"$numberDecimal": "0.1000000000000000055511151231257827"}]})", "{}",
       D("0.1000000000000000055511151231257827")},
      {R"({"$toDecimal": 2.5})", "{}", D("2.50000000000000")},
      {R"({"$toDecimal": true})", "{}", D("1")},
      {R"({"$toDecimal": {"$numberLong": "-9223372036854775808"}})", "{}", D("-9223372036854775808")},
      {R"({"$toDecimal": "1.2345"})", "{}", D("1.2345")},
      {R"({"$toDecimal": "abc"})", "{}", "error:241"},
      {R"({"$toLong": {"$numberDecimal": "9.99"}})", "{}", R"({"$numberLong": "9"})"},
      {R"({"$toInt": {"$numberDecimal": "1E10"}})", "{}", "error:241"},
      {R"({"$toInt": {"$numberDecimal": "NaN"}})", "{}", "error:241"},
      {R"({"$toDouble": {"$numberDecimal": "1E400"}})", "{}", "error:241"},
      {R"({"$toDouble": {"$numberDecimal": "0.1"}})", "{}", "0.1"},
      {R"({"$toDate": {"$numberDecimal": "1000.9"}})", "{}", R"({"$date": {"$numberLong": "1000"}})"},
      {R"({"$toString": {"$numberDecimal": "1.50"}})", "{}", R"("1.50")"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
