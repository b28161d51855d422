// $type, $isNumber, $convert and the $to* shorthands, against MongoDB's
// documented conversion tables.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

TEST(TypeTest, NamesEveryType) {
  RunCases({
      {R"({"$type": "$a"})", R"({"a": 1})", R"("int")"},
      {R"({"$type": "$a"})", R"({"a": 1.5})", R"("double")"},
      {R"({"$type": "$a"})", R"({"a": {"$numberLong": "1"}})", R"("long")"},
      {R"({"$type": "$a"})", R"({"a": {"$numberDecimal": "1"}})", R"("decimal")"},
      {R"({"$type": "$a"})", R"({"a": "s"})", R"("string")"},
      {R"({"$type": "$a"})", R"({"a": {}})", R"("object")"},
      {R"({"$type": [[1, 2]]})", "{}", R"("array")"},
      {R"({"$type": "$a"})", R"({"a": true})", R"("bool")"},
      {R"({"$type": "$a"})", R"({"a": null})", R"("null")"},
      {R"({"$type": "$a"})", "{}", R"("missing")"},
      {R"({"$type": "$a"})", R"({"a": {"$date": "2020-01-01T00:00:00Z"}})", R"("date")"},
      {R"({"$type": "$a"})", R"({"a": {"$oid": "5ab9c3da31c2ab715d421285"}})", R"("objectId")"},
      {R"({"$type": "$a"})", R"({"a": {"$regularExpression": {"pattern": "x", "options": ""}}})", R"("regex")"},
      {R"({"$type": "$a"})", R"({"a": {"$timestamp": {"t": 1, "i": 1}}})", R"("timestamp")"},
      {R"({"$type": "$a"})", R"({"a": {"$minKey": 1}})", R"("minKey")"},
      {R"({"$type": "$a"})", R"({"a": {"$binary": {"base64": "AA==", "subType": "00"}}})", R"("binData")"},
      {R"({"$type": [1, 2]})", "{}", "error:16020"},
  });
}

TEST(IsNumberTest, DocumentedExample) {
  const char* e = R"({"$isNumber": "$reading"})";
  RunCases({
      {e, R"({"reading": 42})", "true"},
      {e, R"({"reading": 2.5})", "true"},
      {e, R"({"reading": {"$numberLong": "5"}})", "true"},
      {e, R"({"reading": {"$numberDecimal": "5.5"}})", "true"},
      {e, R"({"reading": "42"})", "false"},
      {e, "{}", "false"},
  });
}

TEST(ConvertTest, DocumentedExample) {
  // MongoDB's $convert example converts prices, with onError and onNull.
  const char* e = R"({"$convert": {"input": "$price", "to": "double", "onError": "Error", "onNull": 0}})";
  RunCases({
      {e, R"({"price": "1.5"})", "1.5"},
      {e, R"({"price": 2})", "2.0"},
      {e, R"({"price": "abc"})", R"("Error")"},
      {e, R"({"price": null})", "0"},
      {e, "{}", "0"},
      {R"({"$convert": {"input": "$price", "to": "double"}})", "{}", "null"},
      {R"({"$convert": {"input": "abc", "to": "double"}})", "{}", "error:241"},
  });
}

TEST(ConvertTest, TargetsByNameAndNumber) {
  RunCases({
      {R"({"$convert": {"input": "5", "to": 16}})", "{}", "5"},
      {R"({"$convert": {"input": 5, "to": 2}})", "{}", R"("5")"},
      {R"({"$convert": {"input": 5, "to": "long"}})", "{}", R"({"$numberLong": "5"})"},
      {R"({"$convert": {"input": 1, "to": "$t"}})", R"({"t": "bool"})", "true"},
      {R"({"$convert": {"input": 1, "to": null}})", "{}", "null"},
      {R"({"$convert": {"input": 1, "to": "foo"}})", "{}", "error:2"},
      {R"({"$convert": {"input": 1, "to": 99}})", "{}", "error:9"},
      {R"({"$convert": {"input": 1, "to": true}})", "{}", "error:9"},
      {R"({"$convert": {"to": "int"}})", "{}", "error:9"},
      {R"({"$convert": {"input": 1}})", "{}", "error:9"},
      {R"({"$convert": {"input": 1, "to": "int", "x": 1}})", "{}", "error:9"},
      {R"({"$convert": 1})", "{}", "error:9"},
      // Unsupported conversions are ConversionFailure, which onError catches.
      {R"({"$convert": {"input": [1], "to": "int"}})", "{}", "error:241"},
      {R"({"$convert": {"input": [1], "to": "int", "onError": -1}})", "{}", "-1"},
      {R"({"$convert": {"input": 5, "to": "date"}})", "{}", "error:241"},
      {R"({"$convert": {"input": 1, "to": "object"}})", "{}", "error:241"},
      // To decimal (issue 19): integers exactly, doubles to 15 digits.
      {R"({"$convert": {"input": 1, "to": "decimal", "onError": 0}})", "{}", R"({"$numberDecimal": "1"})"},
      {R"({"$convert": {"input": 2.5, "to": "$t", "onError": 0}})", R"({"t": "decimal"})",
       R"({"$numberDecimal": "2.50000000000000"})"},
      {R"({"$convert": {"input": "1x", "to": "decimal", "onError": 0}})", "{}", "0"},
      {R"({"$convert": {"input": "1x", "to": "decimal"}})", "{}", "error:241"},
  });
}

TEST(ToStringTest, DocumentedTable) {
  RunCases({
      {R"({"$toString": true})", "{}", R"("true")"},
      {R"({"$toString": false})", "{}", R"("false")"},
      {R"({"$toString": 2.5})", "{}", R"("2.5")"},
      {R"({"$toString": 2})", "{}", R"("2")"},
      {R"({"$toString": {"$numberLong": "1000"}})", "{}", R"("1000")"},
      {R"({"$toString": {"$oid": "5ab9c3da31c2ab715d421285"}})", "{}", R"("5ab9c3da31c2ab715d421285")"},
      {R"({"$toString": {"$date": "2018-03-27T16:58:51.538Z"}})", "{}", R"("2018-03-27T16:58:51.538Z")"},
      {R"({"$toString": {"$numberDecimal": "2.50"}})", "{}", R"("2.50")"},
      {R"({"$toString": 0.1})", "{}", R"("0.1")"},
      {R"({"$toString": "$nope"})", "{}", "null"},
      {R"({"$toString": [[1]]})", "{}", "error:241"},
      {R"({"$toString": [1, 2]})", "{}", "error:50723"},
  });
}

TEST(ToIntLongTest, DocumentedTable) {
  RunCases({
      {R"({"$toInt": 2.5})", "{}", "2"},
      {R"({"$toInt": -2.5})", "{}", "-2"},
      {R"({"$toInt": "5"})", "{}", "5"},
      {R"({"$toInt": true})", "{}", "1"},
      {R"({"$toInt": {"$numberLong": "5000"}})", "{}", "5000"},
      {R"({"$toInt": {"$numberDecimal": "-5.5"}})", "{}", "-5"},
      {R"({"$toInt": null})", "{}", "null"},
      {R"({"$toInt": "5.5"})", "{}", "error:241"},
      {R"({"$toInt": "2147483648"})", "{}", "error:241"},
      {R"({"$toInt": {"$numberLong": "2147483648"}})", "{}", "error:241"},
      {R"({"$toInt": 1e10})", "{}", "error:241"},
      {R"({"$toInt": {"$date": "2020-01-01T00:00:00Z"}})", "{}", "error:241"},
      {R"({"$toLong": {"$date": "2018-03-26T04:38:28.044Z"}})", "{}", R"({"$numberLong": "1522039108044"})"},
      {R"({"$toLong": "-5"})", "{}", R"({"$numberLong": "-5"})"},
      {R"({"$toLong": 2.5})", "{}", R"({"$numberLong": "2"})"},
      {R"({"$toLong": {"$numberDouble": "NaN"}})", "{}", "error:241"},
      {R"({"$toLong": " 5"})", "{}", "error:241"},
  });
}

TEST(ToDoubleTest, DocumentedTable) {
  RunCases({
      {R"({"$toDouble": true})", "{}", "1.0"},
      {R"({"$toDouble": false})", "{}", "0.0"},
      {R"({"$toDouble": 2.5})", "{}", "2.5"},
      {R"({"$toDouble": 5})", "{}", "5.0"},
      {R"({"$toDouble": {"$numberLong": "10000"}})", "{}", "10000.0"},
      {R"({"$toDouble": "-5.5"})", "{}", "-5.5"},
      {R"({"$toDouble": "5e10"})", "{}", "5e10"},
      {R"({"$toDouble": {"$date": "2018-03-26T04:38:28.044Z"}})", "{}", "1522039108044.0"},
      {R"({"$toDouble": "Infinity"})", "{}", R"({"$numberDouble": "Infinity"})"},
      {R"({"$toDouble": "0x1A"})", "{}", "error:241"},
      {R"({"$toDouble": ""})", "{}", "error:241"},
  });
}

TEST(ToBoolTest, DocumentedTable) {
  RunCases({
      {R"({"$toBool": true})", "{}", "true"},
      {R"({"$toBool": 0})", "{}", "false"},
      {R"({"$toBool": 1})", "{}", "true"},
      {R"({"$toBool": 1.99999})", "{}", "true"},
      {R"({"$toBool": {"$numberDecimal": "5"}})", "{}", "true"},
      {R"({"$toBool": {"$numberDecimal": "0"}})", "{}", "false"},
      {R"({"$toBool": 0.0})", "{}", "false"},
      {R"({"$toBool": {"$numberLong": "100"}})", "{}", "true"},
      {R"({"$toBool": {"$date": "2018-03-26T04:38:28.044Z"}})", "{}", "true"},
      {R"({"$toBool": "false"})", "{}", "true"},
      {R"({"$toBool": ""})", "{}", "true"},
      {R"({"$toBool": {"$oid": "5ab9c3da31c2ab715d421285"}})", "{}", "true"},
      {R"({"$toBool": null})", "{}", "null"},
  });
}

TEST(ToDateTest, DocumentedTable) {
  RunCases({
      {R"({"$toDate": 120000000000.5})", "{}", R"({"$date": "1973-10-20T21:20:00Z"})"},
      {R"({"$toDate": {"$numberDecimal": "1253372036000.50"}})", "{}", R"({"$date": "2009-09-19T14:53:56Z"})"},
      {R"({"$toDate": {"$numberLong": "1100000000000"}})", "{}", R"({"$date": "2004-11-09T11:33:20Z"})"},
      {R"({"$toDate": {"$numberLong": "-1100000000000"}})", "{}",
       R"({"$date": {"$numberLong": "-1100000000000"}})"},
      {R"({"$toDate": {"$oid": "5ab9c3da31c2ab715d421285"}})", "{}", R"({"$date": "2018-03-27T04:08:58Z"})"},
      {R"({"$toDate": "2018-03-03"})", "{}", R"({"$date": "2018-03-03T00:00:00Z"})"},
      {R"({"$toDate": "2018-03-20 11:00:06 +0500"})", "{}", R"({"$date": "2018-03-20T06:00:06Z"})"},
      {R"({"$toDate": "2018-03-20T11:00:06.123Z"})", "{}", R"({"$date": "2018-03-20T11:00:06.123Z"})"},
      {R"({"$toDate": {"$timestamp": {"t": 1522039108, "i": 1}}})", "{}", R"({"$date": "2018-03-26T04:38:28Z"})"},
      {R"({"$toDate": "$nope"})", "{}", "null"},
      {R"({"$toDate": 5})", "{}", "error:241"},
      {R"({"$toDate": "not a date"})", "{}", "error:241"},
      {R"({"$toDate": "2018-02-30"})", "{}", "error:241"},
  });
}

TEST(ToObjectIdTest, DocumentedTable) {
  RunCases({
      {R"({"$toObjectId": "5ab9cbfa31c2ab715d42129e"})", "{}", R"({"$oid": "5ab9cbfa31c2ab715d42129e"})"},
      {R"({"$toObjectId": "5ab9cbfa31c2ab715d42129"})", "{}", "error:241"},
      {R"({"$toObjectId": "zzb9cbfa31c2ab715d42129e"})", "{}", "error:241"},
      {R"({"$toObjectId": 5})", "{}", "error:241"},
      {R"({"$toObjectId": null})", "{}", "null"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
