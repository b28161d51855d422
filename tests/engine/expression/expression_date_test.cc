// Date operators, against MongoDB's documented examples (UTC and fixed
// offsets), plus null/missing and error codes.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

const char* kSale = R"({"item": "abc", "price": 10, "quantity": 2, "date": {"$date": "2014-01-01T08:15:39.736Z"}})";

TEST(DatePartTest, DocumentedExample) {
  RunCases({
      {R"({"$year": "$date"})", kSale, "2014"},
      {R"({"$month": "$date"})", kSale, "1"},
      {R"({"$dayOfMonth": "$date"})", kSale, "1"},
      {R"({"$hour": "$date"})", kSale, "8"},
      {R"({"$minute": "$date"})", kSale, "15"},
      {R"({"$second": "$date"})", kSale, "39"},
      {R"({"$millisecond": "$date"})", kSale, "736"},
      {R"({"$dayOfYear": "$date"})", kSale, "1"},
      {R"({"$dayOfWeek": "$date"})", kSale, "4"},
      {R"({"$week": "$date"})", kSale, "0"},
      {R"({"$isoWeek": "$date"})", kSale, "1"},
      {R"({"$isoWeekYear": "$date"})", kSale, "2014"},
      {R"({"$isoDayOfWeek": "$date"})", kSale, "3"},
  });
}

TEST(DatePartTest, IsoWeeksAndWeekZero) {
  RunCases({
      {R"({"$isoDayOfWeek": "$birthday"})", R"({"birthday": {"$date": "1993-09-21T00:00:00Z"}})", "2"},
      {R"({"$isoDayOfWeek": "$birthday"})", R"({"birthday": {"$date": "1981-11-07T00:00:00Z"}})", "6"},
      {R"({"$isoWeek": {"$date": "2016-01-01T00:00:00Z"}})", "{}", "53"},
      {R"({"$isoWeekYear": {"$date": "2016-01-01T00:00:00Z"}})", "{}", "2015"},
      {R"({"$week": {"$date": "2016-01-01T00:00:00Z"}})", "{}", "0"},
      {R"({"$week": {"$date": "2016-01-03T00:00:00Z"}})", "{}", "1"},
      {R"({"$dayOfYear": {"$date": "2016-12-31T00:00:00Z"}})", "{}", "366"},
      {R"({"$dayOfWeek": {"$date": "2016-01-03T00:00:00Z"}})", "{}", "1"},
      {R"({"$year": {"$date": "1969-12-31T23:59:59.999Z"}})", "{}", "1969"},
      {R"({"$millisecond": {"$date": "1969-12-31T23:59:59.999Z"}})", "{}", "999"},
  });
}

TEST(DatePartTest, ArgumentFormsTimestampsAndObjectIds) {
  RunCases({
      {R"({"$year": ["$date"]})", kSale, "2014"},
      {R"({"$year": {"date": "$date"}})", kSale, "2014"},
      {R"({"$year": {"$add": ["$date", 0]}})", kSale, "2014"},
      {R"({"$hour": {"date": "$date", "timezone": "+04:30"}})", kSale, "12"},
      {R"({"$minute": {"date": "$date", "timezone": "+04:30"}})", kSale, "45"},
      {R"({"$hour": {"date": "$date", "timezone": "-0530"}})", kSale, "2"},
      {R"({"$dayOfMonth": {"date": "$date", "timezone": "-09"}})", kSale, "31"},
      {R"({"$hour": {"date": "$date", "timezone": "UTC"}})", kSale, "8"},
      {R"({"$hour": {"date": "$date", "timezone": "GMT"}})", kSale, "8"},
      {R"({"$year": {"$timestamp": {"t": 1522039108, "i": 1}}})", "{}", "2018"},
      {R"({"$month": {"$oid": "5ab9c3da31c2ab715d421285"}})", "{}", "3"},
      {R"({"$year": null})", "{}", "null"},
      {R"({"$year": "$nope"})", "{}", "null"},
      {R"({"$hour": {"date": "$date", "timezone": null}})", kSale, "null"},
      {R"({"$year": "2014-01-01"})", "{}", "error:16006"},
      {R"({"$year": 5})", "{}", "error:16006"},
      {R"({"$year": ["$date", "$date"]})", kSale, "error:40536"},
      {R"({"$year": {"date": "$date", "x": 1}})", kSale, "error:40535"},
      {R"({"$year": {"timezone": "UTC"}})", kSale, "error:40539"},
      {R"({"$hour": {"date": "$date", "timezone": 5}})", kSale, "error:40517"},
      // Olson zones need daylight-saving rules gatedb does not carry yet.
      {R"({"$hour": {"date": "$date", "timezone": "America/New_York"}})", kSale, "error:40485"},
      {R"({"$hour": {"date": "$date", "timezone": "+4:30"}})", kSale, "error:40485"},
  });
}

TEST(DateToStringTest, DocumentedExample) {
  RunCases({
      {R"({"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}})", kSale, R"("2014-01-01")"},
      {R"({"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "+04:30"}})", kSale,
       R"("12:45:39:736+0430")"},
      {R"({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "+04:30"}})", kSale, R"("+270")"},
      {R"({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "-05:00"}})", kSale, R"("-300")"},
      {R"({"$dateToString": {"format": "%Z %z", "date": "$date"}})", kSale, R"("+000 +0000")"},
      {R"({"$dateToString": {"format": "%j", "date": "$date"}})", kSale, R"("001")"},
      {R"({"$dateToString": {"format": "%w", "date": "$date"}})", kSale, R"("4")"},
      {R"({"$dateToString": {"format": "%U", "date": "$date"}})", kSale, R"("00")"},
      {R"({"$dateToString": {"format": "%u %V %G", "date": "$date"}})", kSale, R"("3 01 2014")"},
      {R"({"$dateToString": {"format": "100%% at %H", "date": "$date"}})", kSale, R"("100% at 08")"},
      {R"({"$dateToString": {"date": "$date"}})", kSale, R"("2014-01-01T08:15:39.736Z")"},
      // A non-UTC zone without a format drops the "Z".
      {R"({"$dateToString": {"date": "$date", "timezone": "+04:30"}})", kSale, R"("2014-01-01T12:45:39.736")"},
      {R"({"$dateToString": {"date": "$date", "timezone": "UTC"}})", kSale, R"("2014-01-01T08:15:39.736Z")"},
      {R"({"$dateToString": {"date": "$nope", "onNull": "no date"}})", "{}", R"("no date")"},
      {R"({"$dateToString": {"date": null}})", "{}", "null"},
      {R"({"$dateToString": {"date": "$date", "format": null}})", kSale, "null"},
      {R"({"$dateToString": {"date": {"$timestamp": {"t": 1522039108, "i": 1}}, "format": "%Y"}})", "{}",
       R"("2018")"},
  });
}

TEST(DateToStringTest, Errors) {
  RunCases({
      {R"({"$dateToString": {"date": "$date", "format": 5}})", kSale, "error:18533"},
      {R"({"$dateToString": {"date": "$date", "x": 1}})", kSale, "error:18534"},
      {R"({"$dateToString": {"date": "$date", "format": "%Y%"}})", kSale, "error:18535"},
      {R"({"$dateToString": {"date": "$date", "format": "%Q"}})", kSale, "error:18536"},
      {R"({"$dateToString": {"date": "$date", "format": "$fmt"}})", R"({"fmt": "%q", "date": 1})", "error:18536"},
      {R"({"$dateToString": {"format": "%Y"}})", kSale, "error:18628"},
      {R"({"$dateToString": "$date"})", kSale, "error:18629"},
      {R"({"$dateToString": {"date": "x"}})", "{}", "error:16006"},
      {R"({"$dateToString": {"date": {"$date": {"$numberLong": "253402300800000"}}, "format": "%Y"}})", "{}",
       "error:18537"},
  });
}

TEST(DateFromStringTest, DocumentedExamples) {
  RunCases({
      {R"({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787Z"}})", "{}",
       R"({"$date": "2017-02-08T12:10:40.787Z"})"},
      {R"({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787", "timezone": "+05:00"}})", "{}",
       R"({"$date": "2017-02-08T07:10:40.787Z"})"},
      {R"({"$dateFromString": {"dateString": "2017-02-08"}})", "{}", R"({"$date": "2017-02-08T00:00:00Z"})"},
      {R"({"$dateFromString": {"dateString": "2017-02-08 12:10:40+02:00"}})", "{}",
       R"({"$date": "2017-02-08T10:10:40Z"})"},
      {R"({"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}})", "{}",
       R"({"$date": "2018-06-15T00:00:00Z"})"},
      {R"({"$dateFromString": {"dateString": "2018/06/15 10:30", "format": "%Y/%m/%d %H:%M"}})", "{}",
       R"({"$date": "2018-06-15T10:30:00Z"})"},
      {R"({"$dateFromString": {"dateString": "2017-W06-3", "format": "%G-W%V-%u"}})", "{}",
       R"({"$date": "2017-02-08T00:00:00Z"})"},
      {R"({"$dateFromString": {"dateString": "foo", "onError": "bad"}})", "{}", R"("bad")"},
      {R"({"$dateFromString": {"dateString": 5, "onError": "bad"}})", "{}", R"("bad")"},
      {R"({"$dateFromString": {"dateString": null, "onNull": 0}})", "{}", "0"},
      {R"({"$dateFromString": {"dateString": "$nope"}})", "{}", "null"},
      {R"({"$dateFromString": {"dateString": "foo"}})", "{}", "error:241"},
      {R"({"$dateFromString": {"dateString": "2017-02-30"}})", "{}", "error:241"},
      {R"({"$dateFromString": {"dateString": "2017-02-08T12:00:00Z", "timezone": "+01:00"}})", "{}", "error:241"},
      {R"({"$dateFromString": "2017-02-08"})", "{}", "error:40540"},
      {R"({"$dateFromString": {"dateString": "x", "y": 1}})", "{}", "error:40541"},
      {R"({"$dateFromString": {"format": "%Y"}})", "{}", "error:40542"},
      {R"({"$dateFromString": {"dateString": "2017", "format": 1}})", "{}", "error:40684"},
      {R"({"$dateFromString": {"dateString": "2017", "format": "%Q"}})", "{}", "error:18536"},
  });
}

TEST(DateFromPartsTest, DocumentedExamples) {
  RunCases({
      {R"({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}})", "{}",
       R"({"$date": "2017-02-08T12:00:00Z"})"},
      {R"({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}})", "{}",
       R"({"$date": "2017-02-08T12:00:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": "-05:00"}})", "{}",
       R"({"$date": "2017-02-08T17:00:00Z"})"},
      // Values outside their range carry into the next unit.
      {R"({"$dateFromParts": {"year": 2017, "month": 14, "day": 1}})", "{}", R"({"$date": "2018-02-01T00:00:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "month": 1, "day": 0}})", "{}", R"({"$date": "2016-12-31T00:00:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "month": 0}})", "{}", R"({"$date": "2016-12-01T00:00:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "hour": 25, "millisecond": 1500}})", "{}",
       R"({"$date": "2017-01-02T01:00:01.500Z"})"},
      {R"({"$dateFromParts": {"year": 2017.0}})", "{}", R"({"$date": "2017-01-01T00:00:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "month": null}})", "{}", "null"},
      {R"({"$dateFromParts": {"year": "$nope"}})", "{}", "null"},
      {R"({"$dateFromParts": 1})", "{}", "error:40519"},
      {R"({"$dateFromParts": {"year": 2017, "x": 1}})", "{}", "error:40518"},
      {R"({"$dateFromParts": {"year": 2017, "isoWeek": 1}})", "{}", "error:40489"},
      {R"({"$dateFromParts": {"month": 1}})", "{}", "error:40516"},
      {R"({"$dateFromParts": {"year": 2017, "month": 1.5}})", "{}", "error:40515"},
      {R"({"$dateFromParts": {"year": 0}})", "{}", "error:40523"},
      {R"({"$dateFromParts": {"year": 2017, "month": 40000}})", "{}", "error:31034"},
  });
}

TEST(DateToPartsTest, DocumentedExamples) {
  const char* doc = R"({"date": {"$date": "2017-01-01T01:29:09.123Z"}})";
  RunCases({
      {R"({"$dateToParts": {"date": "$date"}})", doc,
       R"({"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123})"},
      {R"({"$dateToParts": {"date": "$date", "iso8601": true}})", doc,
       R"({"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9,
           "millisecond": 123})"},
      {R"({"$dateToParts": {"date": "$date", "timezone": "-05:00"}})", doc,
       R"({"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123})"},
      {R"({"$dateToParts": {"date": "$nope"}})", "{}", "null"},
      {R"({"$dateToParts": 1})", "{}", "error:40524"},
      {R"({"$dateToParts": {"date": "$date", "x": 1}})", doc, "error:40520"},
      {R"({"$dateToParts": {"timezone": "UTC"}})", doc, "error:40522"},
      {R"({"$dateToParts": {"date": "$date", "iso8601": 1}})", doc, "error:40521"},
  });
}

TEST(DateAddSubtractTest, DocumentedExamples) {
  RunCases({
      {R"({"$dateAdd": {"startDate": "$purchaseDate", "unit": "day", "amount": 3}})",
       R"({"purchaseDate": {"$date": "2020-10-31T12:10:05Z"}})", R"({"$date": "2020-11-03T12:10:05Z"})"},
      // Adding a month keeps the day, clamped to the end of a shorter month.
      {R"({"$dateAdd": {"startDate": {"$date": "2020-10-31T12:10:05Z"}, "unit": "month", "amount": 1}})", "{}",
       R"({"$date": "2020-11-30T12:10:05Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-31T00:00:00Z"}, "unit": "month", "amount": 1}})", "{}",
       R"({"$date": "2021-02-28T00:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2020-02-29T00:00:00Z"}, "unit": "year", "amount": 1}})", "{}",
       R"({"$date": "2021-02-28T00:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2020-01-15T00:00:00Z"}, "unit": "quarter", "amount": 1}})", "{}",
       R"({"$date": "2020-04-15T00:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2020-01-15T00:00:00Z"}, "unit": "week", "amount": -1}})", "{}",
       R"({"$date": "2020-01-08T00:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2020-01-15T00:00:00Z"}, "unit": "hour", "amount": 36}})", "{}",
       R"({"$date": "2020-01-16T12:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": {"$date": "2020-01-15T00:00:00Z"}, "unit": "millisecond", "amount": 1.0}})",
       "{}", R"({"$date": "2020-01-15T00:00:00.001Z"})"},
      {R"({"$dateSubtract": {"startDate": {"$date": "2021-03-31T00:00:00Z"}, "unit": "month", "amount": 1}})", "{}",
       R"({"$date": "2021-02-28T00:00:00Z"})"},
      {R"({"$dateSubtract": {"startDate": {"$date": "2021-01-01T10:00:00Z"}, "unit": "hour", "amount": 12}})", "{}",
       R"({"$date": "2020-12-31T22:00:00Z"})"},
      // In a zone the calendar is local: the local day is clamped.
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-30T22:00:00Z"}, "unit": "month", "amount": 1,
                         "timezone": "+03:00"}})", "{}", R"({"$date": "2021-02-27T22:00:00Z"})"},
      {R"({"$dateAdd": {"startDate": null, "unit": "day", "amount": 1}})", "{}", "null"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "day", "amount": "$nope"}})", "{}",
       "null"},
      {R"({"$dateAdd": 1})", "{}", "error:5166400"},
      {R"({"$dateAdd": {"startDate": 1, "unit": "day", "amount": 1, "x": 1}})", "{}", "error:5166401"},
      {R"({"$dateAdd": {"startDate": 1, "unit": "day"}})", "{}", "error:5166402"},
      {R"({"$dateAdd": {"startDate": 1, "unit": "day", "amount": 1}})", "{}", "error:5166403"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": 1, "amount": 1}})", "{}",
       "error:5166404"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "fortnight", "amount": 1}})", "{}",
       "error:9"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "day", "amount": 1.5}})", "{}",
       "error:5166405"},
      {R"({"$dateAdd": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "day",
                         "amount": {"$numberLong": "9000000000000000"}}})", "{}", "error:5166406"},
  });
}

TEST(DateDiffTest, DocumentedExamples) {
  RunCases({
      // Boundaries crossed, not elapsed time.
      {R"({"$dateDiff": {"startDate": {"$date": "2020-12-31T23:59:00Z"}, "endDate": {"$date": "2021-01-01T00:01:00Z"},
                          "unit": "year"}})", "{}", R"({"$numberLong": "1"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "endDate": {"$date": "2021-01-03T23:59:59Z"},
                          "unit": "day"}})", "{}", R"({"$numberLong": "2"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-31T00:00:00Z"}, "endDate": {"$date": "2021-03-01T00:00:00Z"},
                          "unit": "month"}})", "{}", R"({"$numberLong": "2"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-03-01T00:00:00Z"}, "endDate": {"$date": "2021-01-31T00:00:00Z"},
                          "unit": "month"}})", "{}", R"({"$numberLong": "-2"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-02-15T00:00:00Z"}, "endDate": {"$date": "2021-04-01T00:00:00Z"},
                          "unit": "quarter"}})", "{}", R"({"$numberLong": "1"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-01T00:59:59Z"}, "endDate": {"$date": "2021-01-01T01:00:00Z"},
                          "unit": "hour"}})", "{}", R"({"$numberLong": "1"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "endDate": {"$date": "2021-01-01T00:00:01.5Z"},
                          "unit": "millisecond"}})", "{}", R"({"$numberLong": "1500"})"},
      // Weeks start on Sunday by default: Sat 2022-01-01 to Sun 2022-01-09
      // crosses two Sundays, one Monday.
      {R"({"$dateDiff": {"startDate": {"$date": "2022-01-01T00:00:00Z"}, "endDate": {"$date": "2022-01-09T00:00:00Z"},
                          "unit": "week"}})", "{}", R"({"$numberLong": "2"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2022-01-01T00:00:00Z"}, "endDate": {"$date": "2022-01-09T00:00:00Z"},
                          "unit": "week", "startOfWeek": "monday"}})", "{}", R"({"$numberLong": "1"})"},
      {R"({"$dateDiff": {"startDate": {"$date": "2022-01-01T00:00:00Z"}, "endDate": {"$date": "2022-01-09T00:00:00Z"},
                          "unit": "week", "startOfWeek": "MON"}})", "{}", R"({"$numberLong": "1"})"},
      // A zone moves day boundaries.
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-01T20:00:00Z"}, "endDate": {"$date": "2021-01-02T02:00:00Z"},
                          "unit": "day", "timezone": "+05:00"}})", "{}", R"({"$numberLong": "0"})"},
      {R"({"$dateDiff": {"startDate": null, "endDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "day"}})", "{}",
       "null"},
      {R"({"$dateDiff": 1})", "{}", "error:5166301"},
      {R"({"$dateDiff": {"startDate": 1, "endDate": 1, "unit": "day", "x": 1}})", "{}", "error:5166302"},
      {R"({"$dateDiff": {"endDate": 1, "unit": "day"}})", "{}", "error:5166303"},
      {R"({"$dateDiff": {"startDate": 1, "unit": "day"}})", "{}", "error:5166304"},
      {R"({"$dateDiff": {"startDate": 1, "endDate": 1}})", "{}", "error:5166305"},
      {R"({"$dateDiff": {"startDate": 1, "endDate": {"$date": "2021-01-01T00:00:00Z"}, "unit": "day"}})", "{}",
       "error:5166307"},
      {R"({"$dateDiff": {"startDate": {"$date": "2021-01-01T00:00:00Z"}, "endDate": {"$date": "2021-01-01T00:00:00Z"},
                          "unit": "week", "startOfWeek": "someday"}})", "{}", "error:5439016"},
  });
}

TEST(DateTruncTest, DocumentedExamples) {
  const char* d = R"({"date": {"$date": "2021-03-20T11:30:05Z"}})";
  RunCases({
      {R"({"$dateTrunc": {"date": "$date", "unit": "hour"}})", d, R"({"$date": "2021-03-20T11:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "hour", "binSize": 2}})", d, R"({"$date": "2021-03-20T10:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "year", "binSize": 10}})", d, R"({"$date": "2020-01-01T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "quarter"}})", d, R"({"$date": "2021-01-01T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "month"}})", d, R"({"$date": "2021-03-01T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "month", "binSize": 6}})", d, R"({"$date": "2021-01-01T00:00:00Z"})"},
      // 2021-03-20 is a Saturday.
      {R"({"$dateTrunc": {"date": "$date", "unit": "week"}})", d, R"({"$date": "2021-03-14T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "week", "startOfWeek": "monday"}})", d,
       R"({"$date": "2021-03-15T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "day"}})", d, R"({"$date": "2021-03-20T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "minute", "binSize": 15}})", d, R"({"$date": "2021-03-20T11:30:00Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "second"}})", d, R"({"$date": "2021-03-20T11:30:05Z"})"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "day", "timezone": "+05:00"}})", d,
       R"({"$date": "2021-03-19T19:00:00Z"})"},
      {R"({"$dateTrunc": {"date": {"$date": "1999-12-31T23:00:00Z"}, "unit": "hour", "binSize": 5}})", "{}",
       R"({"$date": "1999-12-31T19:00:00Z"})"},
      {R"({"$dateTrunc": {"date": null, "unit": "day"}})", "{}", "null"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "week", "startOfWeek": null}})", d, "null"},
      {R"({"$dateTrunc": 1})", "{}", "error:5439007"},
      {R"({"$dateTrunc": {"date": 1, "unit": "day", "x": 1}})", "{}", "error:5439008"},
      {R"({"$dateTrunc": {"unit": "day"}})", "{}", "error:5439009"},
      {R"({"$dateTrunc": {"date": 1}})", "{}", "error:5439010"},
      {R"({"$dateTrunc": {"date": 1, "unit": "day"}})", "{}", "error:5439012"},
      {R"({"$dateTrunc": {"date": "$date", "unit": 1}})", d, "error:5439013"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "decade"}})", d, "error:5439014"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "week", "startOfWeek": 1}})", d, "error:5439015"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "day", "binSize": 1.5}})", d, "error:5439017"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "day", "binSize": 0}})", d, "error:5439018"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
