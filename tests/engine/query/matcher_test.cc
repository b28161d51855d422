#include "engine/query/matcher.h"

#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace query {
namespace {

using test::Json;
using test::StatusIs;

struct Case {
  std::string filter;
  std::string doc;
  bool expected;
};

// libbson's JSON reader claims some keys for legacy Extended JSON ("$type"
// of $binary, "$options" of $regex), so filters spell them "%type" and
// "%options"; Q() parses the JSON and renames every leading '%' to '$'.
void CopyRenaming(const bson_t* src, bson_t* dst) {
  bson_iter_t it;
  if (!bson_iter_init(&it, src)) return;
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (!key.empty() && key[0] == '%') key[0] = '$';
    const int key_len = static_cast<int>(key.size());
    if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
      const uint8_t* data = nullptr;
      uint32_t len = 0;
      const bool is_array = BSON_ITER_HOLDS_ARRAY(&it);
      if (is_array) {
        bson_iter_array(&it, &len, &data);
      } else {
        bson_iter_document(&it, &len, &data);
      }
      bson_t sub_src, sub_dst;
      bson_init_static(&sub_src, data, len);
      if (is_array) {
        bson_append_array_begin(dst, key.c_str(), key_len, &sub_dst);
        CopyRenaming(&sub_src, &sub_dst);
        bson_append_array_end(dst, &sub_dst);
      } else {
        bson_append_document_begin(dst, key.c_str(), key_len, &sub_dst);
        CopyRenaming(&sub_src, &sub_dst);
        bson_append_document_end(dst, &sub_dst);
      }
    } else {
      bson_append_value(dst, key.c_str(), key_len, bson_iter_value(&it));
    }
  }
}

Document Q(const std::string& json) {
  Document parsed = Json(json);
  bson_t* out = bson_new();
  CopyRenaming(parsed.bson(), out);
  return Document::Adopt(out);
}

std::unique_ptr<Matcher> MustParse(const bson_t* filter) {
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(filter);
  EXPECT_TRUE(m.ok()) << m.status().ToString() << " for " << test::ToJson(filter);
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    Document filter = Q(c.filter);
    std::unique_ptr<Matcher> m = MustParse(filter.bson());
    if (!m) {
      ADD_FAILURE() << "filter did not parse: " << c.filter;
      continue;
    }
    Document doc = Json(c.doc);
    EXPECT_EQ(c.expected, m->Matches(doc.bson())) << "filter " << c.filter << "\n   doc " << c.doc;
  }
}

bool MatchesDoc(const bson_t* filter, const bson_t* doc) {
  std::unique_ptr<Matcher> m = MustParse(filter);
  return m && m->Matches(doc);
}

Status ParseStatus(const bson_t* filter) {
  StatusOr<std::unique_ptr<Matcher>> m = Matcher::Parse(filter);
  return m.ok() ? Status::OK() : m.status();
}

Status ParseStatus(const std::string& json) { return ParseStatus(Q(json).bson()); }

// {field: {$regex: pattern, $options: options}} with string operands, which
// libbson's JSON parser would turn into a BSON regex value.
Document RegexOperator(const char* field, const char* pattern, const char* options,
                       bool options_first = false) {
  bson_t* b = bson_new();
  bson_t sub;
  bson_append_document_begin(b, field, -1, &sub);
  if (options && options_first) BSON_APPEND_UTF8(&sub, "$options", options);
  BSON_APPEND_UTF8(&sub, "$regex", pattern);
  if (options && !options_first) BSON_APPEND_UTF8(&sub, "$options", options);
  bson_append_document_end(b, &sub);
  return Document::Adopt(b);
}

// ---------------------------------------------------------------------------

TEST(MatcherTest, ImplicitEqualityOnScalars) {
  RunCases({
      {R"({"a": 5})", R"({"a": 5})", true},
      {R"({"a": 5})", R"({"a": 5.0})", true},
      {R"({"a": 5})", R"({"a": {"$numberLong": "5"}})", true},
      {R"({"a": 5})", R"({"a": {"$numberDecimal": "5.00"}})", true},
      {R"({"a": {"$numberDecimal": "1.5"}})", R"({"a": 1.5})", true},
      {R"({"a": {"$numberLong": "5"}})", R"({"a": 5})", true},
      {R"({"a": 5})", R"({"a": 6})", false},
      {R"({"a": 5})", R"({"a": "5"})", false},
      {R"({"a": 5})", R"({})", false},
      {R"({"a": 5})", R"({"b": 5})", false},
      {R"({"a": "x"})", R"({"a": "x"})", true},
      {R"({"a": "x"})", R"({"a": "xy"})", false},
      {R"({"a": ""})", R"({"a": ""})", true},
      {R"({"a": true})", R"({"a": true})", true},
      {R"({"a": true})", R"({"a": 1})", false},
      {R"({"a": {"$oid": "5f1d7f3e9b1e8b1a2c3d4e5f"}})", R"({"a": {"$oid": "5f1d7f3e9b1e8b1a2c3d4e5f"}})", true},
      {R"({"a": {"$oid": "5f1d7f3e9b1e8b1a2c3d4e5f"}})", R"({"a": {"$oid": "5f1d7f3e9b1e8b1a2c3d4e60"}})", false},
      {R"({"a": {"$date": "2024-01-01T00:00:00Z"}})", R"({"a": {"$date": "2024-01-01T00:00:00Z"}})", true},
      {R"({"a": {"$numberLong": "9007199254740993"}})", R"({"a": 9007199254740992.0})", false},
      {R"({"a": 1, "b": 2})", R"({"b": 2, "a": 1})", true},
      {R"({"a": 1, "b": 2})", R"({"a": 1, "b": 3})", false},
      {R"({"a": {"$minKey": 1}})", R"({"a": {"$minKey": 1}})", true},
      {R"({"a": {"$maxKey": 1}})", R"({"a": {"$maxKey": 1}})", true},
  });
}

TEST(MatcherTest, EqualityOnArraysAndDocuments) {
  RunCases({
      // An array matches if it contains the value...
      {R"({"a": 5})", R"({"a": [1, 5]})", true},
      {R"({"a": 5})", R"({"a": [1, 2]})", false},
      {R"({"a": 5})", R"({"a": []})", false},
      // ...but nested arrays are not expanded.
      {R"({"a": 5})", R"({"a": [[5]]})", false},
      // Whole-array equality, and arrays of arrays.
      {R"({"a": [1, 2]})", R"({"a": [1, 2]})", true},
      {R"({"a": [1, 2]})", R"({"a": [2, 1]})", false},
      {R"({"a": [1, 2]})", R"({"a": [1, 2, 3]})", false},
      {R"({"a": [1, 2]})", R"({"a": [[1, 2], 3]})", true},
      {R"({"a": [1]})", R"({"a": [[1], [2]]})", true},
      {R"({"a": [1]})", R"({"a": 1})", false},
      {R"({"a": []})", R"({"a": []})", true},
      {R"({"a": []})", R"({"a": [[]]})", true},
      {R"({"a": []})", R"({"a": [1]})", false},
      {R"({"a": []})", R"({})", false},
      // Whole-document equality: field order and all fields count.
      {R"({"a": {"b": 1}})", R"({"a": {"b": 1}})", true},
      {R"({"a": {"b": 1}})", R"({"a": {"b": 1.0}})", true},
      {R"({"a": {"b": 1}})", R"({"a": {"b": 1, "c": 2}})", false},
      {R"({"a": {"b": 1, "c": 2}})", R"({"a": {"c": 2, "b": 1}})", false},
      {R"({"a": {"b": 1}})", R"({"a": [{"b": 1}]})", true},
      {R"({"a": {"b": 1}})", R"({"a": [{"b": 2}, {"b": 1}]})", true},
      {R"({"a": {}})", R"({"a": {}})", true},
      {R"({"a": {}})", R"({"a": {"b": 1}})", false},
      // A document whose first key is not an operator is a literal, even
      // when a later key starts with '$' (MongoDB's rule).
      {R"({"a": {"b": 1, "$gt": 5}})", R"({"a": {"b": 1, "$gt": 5}})", true},
      {R"({"a": {"b": 1, "$gt": 5}})", R"({"a": 6})", false},
  });
}

TEST(MatcherTest, DottedPaths) {
  RunCases({
      {R"({"a.b": 1})", R"({"a": {"b": 1}})", true},
      {R"({"a.b": 1})", R"({"a": {"b": 2}})", false},
      {R"({"a.b": 1})", R"({"a": [{"b": 1}]})", true},
      {R"({"a.b": 1})", R"({"a": [{"b": 2}, {"b": 1}]})", true},
      {R"({"a.b": 1})", R"({"a": [{"b": [1]}]})", true},
      {R"({"a.b": 1})", R"({"a": {"b": [0, 1]}})", true},
      {R"({"a.b": 1})", R"({"a": [1, {"b": 1}]})", true},
      {R"({"a.b": 1})", R"({"a": 1})", false},
      {R"({"a.b": 1})", R"({"a": [[{"b": 1}]]})", false},  // nested arrays are not searched
      {R"({"a.b.c": 1})", R"({"a": [{"b": [{"c": 1}]}]})", true},
      {R"({"a.b.c": 1})", R"({"a": [{"b": [{"c": [0, 1]}]}]})", true},
      {R"({"a.b.c": 1})", R"({"a": {"b": {"c": 1}}})", true},
      {R"({"a.b.c": 1})", R"({"a": {"b": {"d": 1}}})", false},
      // Numeric components index arrays...
      {R"({"a.0": 5})", R"({"a": [5, 6]})", true},
      {R"({"a.1": 5})", R"({"a": [5, 6]})", false},
      {R"({"a.1": 6})", R"({"a": [5, 6]})", true},
      {R"({"a.0": 5})", R"({"a": [[5]]})", false},
      {R"({"a.0": [5]})", R"({"a": [[5]]})", true},
      {R"({"a.0.b": 1})", R"({"a": [{"b": 1}]})", true},
      {R"({"a.0.b": 1})", R"({"a": [{"c": 1}, {"b": 1}]})", false},
      {R"({"a.1.b": 1})", R"({"a": [{"b": 0}, {"b": 1}]})", true},
      {R"({"a.0.b": 1})", R"({"a": [[{"b": 1}]]})", true},
      {R"({"a.0.0": 1})", R"({"a": [[1, 2]]})", true},
      {R"({"a.0.1": 1})", R"({"a": [[1, 2]]})", false},
      // ...and also name a field "0" in documents, including inside arrays.
      {R"({"a.0": 5})", R"({"a": {"0": 5}})", true},
      {R"({"a.0.b": 1})", R"({"a": [{"0": {"b": 1}}]})", true},
      {R"({"a.b": 1})", R"({"a.b": 1})", false},
  });
}

TEST(MatcherTest, NullMatchesMissingAndNull) {
  RunCases({
      {R"({"a": null})", R"({})", true},
      {R"({"a": null})", R"({"a": null})", true},
      {R"({"a": null})", R"({"b": 1})", true},
      {R"({"a": null})", R"({"a": 1})", false},
      {R"({"a": null})", R"({"a": [1, null]})", true},
      {R"({"a": null})", R"({"a": [1]})", false},
      {R"({"a": null})", R"({"a": []})", false},
      {R"({"a": null})", R"({"a": false})", false},
      {R"({"a": null})", R"({"a": 0})", false},
      {R"({"a.b": null})", R"({"a": 1})", true},
      {R"({"a.b": null})", R"({"a": {"b": null}})", true},
      {R"({"a.b": null})", R"({"a": {"b": 1}})", false},
      {R"({"a.b": null})", R"({"a": [{"b": 1}, {"c": 1}]})", true},
      {R"({"a.b": null})", R"({"a": [{"b": 1}, {"b": 2}]})", false},
      {R"({"a.b": null})", R"({"a": [1, 2]})", false},
      {R"({"a.b": null})", R"({"a": []})", false},
      {R"({"a": {"$eq": null}})", R"({})", true},
      {R"({"a": {"$ne": null}})", R"({})", false},
      {R"({"a": {"$ne": null}})", R"({"a": 1})", true},
      {R"({"a": {"$ne": null}})", R"({"a": [1, null]})", false},
      {R"({"a": {"$ne": null}})", R"({"a": []})", true},
      {R"({"a": {"$gt": null}})", R"({"a": null})", false},
      {R"({"a": {"$gt": null}})", R"({})", false},
      {R"({"a": {"$gt": null}})", R"({"a": 1})", false},
      {R"({"a": {"$gte": null}})", R"({"a": null})", true},
      {R"({"a": {"$gte": null}})", R"({})", true},
      {R"({"a": {"$lte": null}})", R"({})", true},
      {R"({"a": {"$lt": null}})", R"({"a": null})", false},
      {R"({"a": {"$in": [null]}})", R"({})", true},
      {R"({"a": {"$in": [null]}})", R"({"a": null})", true},
      {R"({"a": {"$in": [null]}})", R"({"a": 1})", false},
      {R"({"a": {"$in": [null, 1]}})", R"({"a": 1})", true},
      {R"({"a": {"$nin": [null]}})", R"({})", false},
      {R"({"a": {"$nin": [null]}})", R"({"a": 1})", true},
  });
}

TEST(MatcherTest, NullDoesNotMatchUndefined) {
  // MongoDB 8.0: equality to null matches null and missing, not undefined.
  bson_t* d = bson_new();
  BSON_APPEND_UNDEFINED(d, "a");
  Document doc = Document::Adopt(d);
  EXPECT_FALSE(MatchesDoc(Q(R"({"a": null})").bson(), doc.bson()));
  EXPECT_TRUE(MatchesDoc(Q(R"({"a": {"$ne": null}})").bson(), doc.bson()));
  EXPECT_FALSE(MatchesDoc(Q(R"({"a": {"$in": [null]}})").bson(), doc.bson()));
  EXPECT_TRUE(MatchesDoc(Q(R"({"a": {"$nin": [null, 4]}})").bson(), doc.bson()));
  EXPECT_FALSE(MatchesDoc(Q(R"({"a": {"$gte": null}})").bson(), doc.bson()));
  EXPECT_TRUE(MatchesDoc(Q(R"({"a.b": null})").bson(), doc.bson()));  // not a document
  EXPECT_TRUE(MatchesDoc(Q(R"({"a": {"$exists": true}})").bson(), doc.bson()));
  EXPECT_FALSE(MatchesDoc(Q(R"({"a": {"%type": "null"}})").bson(), doc.bson()));
  EXPECT_TRUE(MatchesDoc(Q(R"({"a": {"%type": "undefined"}})").bson(), doc.bson()));
  EXPECT_TRUE(MatchesDoc(Q(R"({"a": {"$lt": {"$maxKey": 1}}})").bson(), doc.bson()));
}

TEST(MatcherTest, ExistsTrueAndFalse) {
  RunCases({
      {R"({"a": {"$exists": true}})", R"({"a": null})", true},
      {R"({"a": {"$exists": true}})", R"({"a": []})", true},
      {R"({"a": {"$exists": true}})", R"({})", false},
      {R"({"a": {"$exists": 1}})", R"({"a": 0})", true},
      {R"({"a": {"$exists": false}})", R"({})", true},
      {R"({"a": {"$exists": false}})", R"({"a": null})", false},
      {R"({"a": {"$exists": 0}})", R"({})", true},
      {R"({"a": {"$exists": null}})", R"({})", true},
      {R"({"a": {"$exists": "yes"}})", R"({"a": 1})", true},
      {R"({"a.b": {"$exists": true}})", R"({"a": [{"c": 1}, {"b": 1}]})", true},
      {R"({"a.b": {"$exists": true}})", R"({"a": [{"c": 1}]})", false},
      {R"({"a.b": {"$exists": true}})", R"({"a": [1]})", false},
      {R"({"a.b": {"$exists": true}})", R"({"a": {"b": null}})", true},
      {R"({"a.b": {"$exists": false}})", R"({"a": [{"c": 1}]})", true},
      {R"({"a.b": {"$exists": false}})", R"({"a": [{"b": 1}]})", false},
      {R"({"a.b": {"$exists": false}})", R"({"a": [1]})", true},
      {R"({"a.1": {"$exists": true}})", R"({"a": [1, 2]})", true},
      {R"({"a.2": {"$exists": true}})", R"({"a": [1, 2]})", false},
  });
}

TEST(MatcherTest, ComparisonsAndTypeBracketing) {
  RunCases({
      {R"({"a": {"$gt": 5}})", R"({"a": 6})", true},
      {R"({"a": {"$gt": 5}})", R"({"a": 5})", false},
      {R"({"a": {"$gt": 5}})", R"({"a": 5.5})", true},
      {R"({"a": {"$gt": 5}})", R"({"a": {"$numberLong": "6"}})", true},
      {R"({"a": {"$gt": 5}})", R"({"a": {"$numberDecimal": "5.0000001"}})", true},
      {R"({"a": {"$gt": 5}})", R"({"a": "6"})", false},
      {R"({"a": {"$gt": 5}})", R"({"a": true})", false},
      {R"({"a": {"$gt": 5}})", R"({"a": null})", false},
      {R"({"a": {"$gt": 5}})", R"({})", false},
      {R"({"a": {"$gt": 5}})", R"({"a": [1, 10]})", true},
      {R"({"a": {"$gt": 5}})", R"({"a": [1, 2]})", false},
      {R"({"a": {"$gt": 5}})", R"({"a": [[10]]})", false},
      {R"({"a": {"$gte": 5}})", R"({"a": 5})", true},
      {R"({"a": {"$lt": 5}})", R"({"a": 4.99})", true},
      {R"({"a": {"$lt": 5}})", R"({"a": "4"})", false},
      {R"({"a": {"$lte": 5}})", R"({"a": {"$numberDecimal": "5"}})", true},
      {R"({"a": {"$gt": 9007199254740992.0}})", R"({"a": {"$numberLong": "9007199254740993"}})", true},
      {R"({"a": {"$lt": "b"}})", R"({"a": "a"})", true},
      {R"({"a": {"$lt": "b"}})", R"({"a": "c"})", false},
      {R"({"a": {"$lt": "b"}})", R"({"a": 1})", false},
      {R"({"a": {"$gte": 2, "$lte": 4}})", R"({"a": 3})", true},
      {R"({"a": {"$gte": 2, "$lte": 4}})", R"({"a": 5})", false},
      // Each operator may be satisfied by a different element.
      {R"({"a": {"$gte": 2, "$lte": 4}})", R"({"a": [1, 5]})", true},
      {R"({"a": {"$gt": {"$date": "2020-01-01T00:00:00Z"}}})", R"({"a": {"$date": "2021-01-01T00:00:00Z"}})", true},
      {R"({"a": {"$gt": {"$date": "2020-01-01T00:00:00Z"}}})", R"({"a": 1})", false},
      {R"({"a": {"$gt": {"b": 1}}})", R"({"a": {"b": 2}})", true},
      {R"({"a": {"$gt": {"b": 1}}})", R"({"a": {"c": 0}})", true},
      {R"({"a": {"$gt": {"b": 1}}})", R"({"a": 5})", false},
      {R"({"a": {"$gt": [1]}})", R"({"a": [2]})", true},
      {R"({"a": {"$gt": [1]}})", R"({"a": [0]})", false},
      {R"({"a": {"$gt": [1]}})", R"({"a": 2})", false},
      {R"({"a": {"$gt": false}})", R"({"a": true})", true},
      // MinKey / MaxKey operands cross type brackets (missing included).
      {R"({"a": {"$lt": {"$maxKey": 1}}})", R"({"a": 1})", true},
      {R"({"a": {"$lt": {"$maxKey": 1}}})", R"({"a": "x"})", true},
      {R"({"a": {"$lt": {"$maxKey": 1}}})", R"({})", true},
      {R"({"a": {"$lt": {"$maxKey": 1}}})", R"({"a": {"$maxKey": 1}})", false},
      {R"({"a": {"$lte": {"$maxKey": 1}}})", R"({"a": {"$maxKey": 1}})", true},
      {R"({"a": {"$gt": {"$maxKey": 1}}})", R"({"a": 1})", false},
      {R"({"a": {"$gt": {"$minKey": 1}}})", R"({"a": null})", true},
      {R"({"a": {"$gt": {"$minKey": 1}}})", R"({"a": 5})", true},
      {R"({"a": {"$gt": {"$minKey": 1}}})", R"({})", true},
      {R"({"a": {"$lt": {"$minKey": 1}}})", R"({"a": 5})", false},
      // NaN equals NaN and is neither below nor above anything.
      {R"({"a": {"$numberDouble": "NaN"}})", R"({"a": {"$numberDouble": "NaN"}})", true},
      {R"({"a": {"$gt": {"$numberDouble": "NaN"}}})", R"({"a": 1})", false},
      {R"({"a": {"$lt": {"$numberDouble": "NaN"}}})", R"({"a": 1})", false},
      {R"({"a": {"$lt": {"$numberDouble": "NaN"}}})", R"({"a": {"$numberDouble": "NaN"}})", false},
      {R"({"a": {"$gte": {"$numberDouble": "NaN"}}})", R"({"a": {"$numberDouble": "NaN"}})", true},
      {R"({"a": {"$lt": 1}})", R"({"a": {"$numberDouble": "NaN"}})", false},
      {R"({"a": {"$gt": {"$numberDouble": "-Infinity"}}})", R"({"a": {"$numberDouble": "NaN"}})", false},
      {R"({"a": {"$gte": {"$numberDecimal": "NaN"}}})", R"({"a": {"$numberDouble": "NaN"}})", true},
      {R"({"a": {"$gt": {"$numberDouble": "-Infinity"}}})", R"({"a": -1e308})", true},
  });
}

TEST(MatcherTest, EqOperator) {
  RunCases({
      {R"({"a": {"$eq": 5}})", R"({"a": [4, 5]})", true},
      {R"({"a": {"$eq": [4, 5]}})", R"({"a": [4, 5]})", true},
      {R"({"a": {"$eq": {"b": 1}}})", R"({"a": {"b": 1}})", true},
      {R"({"a": {"$eq": {"$gt": 1}}})", R"({"a": {"$gt": 1}})", true},
      {R"({"a": {"$eq": {"$gt": 1}}})", R"({"a": 2})", false},
      // $eq to a regex compares regexes; it does not match strings.
      {R"({"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}})",
       R"({"a": {"$regularExpression": {"pattern": "x", "options": ""}}})", true},
      {R"({"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}})", R"({"a": "x"})", false},
  });
}

TEST(MatcherTest, NeNinAndNot) {
  RunCases({
      {R"({"a": {"$ne": 5}})", R"({"a": 5})", false},
      {R"({"a": {"$ne": 5}})", R"({"a": 6})", true},
      {R"({"a": {"$ne": 5}})", R"({})", true},
      {R"({"a": {"$ne": 5}})", R"({"a": [5, 6]})", false},
      {R"({"a": {"$ne": 5}})", R"({"a": [6, 7]})", true},
      {R"({"a": {"$ne": [5, 6]}})", R"({"a": [5, 6]})", false},
      {R"({"a.b": {"$ne": 1}})", R"({"a": [{"b": 1}, {"b": 2}]})", false},
      {R"({"a.b": {"$ne": 1}})", R"({"a": [{"b": 2}]})", true},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": 3})", true},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": 2})", false},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": [3, 2]})", false},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": [3, 4]})", true},
      {R"({"a": {"$nin": [1, 2]}})", R"({})", true},
      {R"({"a": {"$nin": []}})", R"({})", true},
      {R"({"a": {"$not": {"$gt": 5}}})", R"({"a": 3})", true},
      {R"({"a": {"$not": {"$gt": 5}}})", R"({"a": 6})", false},
      {R"({"a": {"$not": {"$gt": 5}}})", R"({})", true},
      {R"({"a": {"$not": {"$gt": 5}}})", R"({"a": "x"})", true},
      {R"({"a": {"$not": {"$gt": 5}}})", R"({"a": [1, 6]})", false},
      {R"({"a": {"$not": {"$gt": 2, "$lt": 5}}})", R"({"a": 3})", false},
      {R"({"a": {"$not": {"$gt": 2, "$lt": 5}}})", R"({"a": 6})", true},
      {R"({"a": {"$not": {"$regularExpression": {"pattern": "^x", "options": ""}}}})", R"({"a": "xy"})", false},
      {R"({"a": {"$not": {"$regularExpression": {"pattern": "^x", "options": ""}}}})", R"({"a": "yx"})", true},
      {R"({"a": {"$not": {"$regularExpression": {"pattern": "^x", "options": ""}}}})", R"({})", true},
      {R"({"a": {"$not": {"$in": [1, 2]}}})", R"({"a": 3})", true},
      {R"({"a": {"$not": {"$not": {"$eq": 1}}}})", R"({"a": 1})", true},
      {R"({"a": {"$not": {"$size": 2}}})", R"({"a": [1]})", true},
      {R"({"a": {"$not": {"$elemMatch": {"b": 1}}}})", R"({"a": [{"b": 1}]})", false},
      {R"({"a": {"$not": {"$exists": true}}})", R"({})", true},
  });
}

TEST(MatcherTest, InOperator) {
  RunCases({
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": 1.0})", true},
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": "x"})", true},
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": [2]})", true},
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": [[2]]})", true},
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": [3, 2]})", false},
      {R"({"a": {"$in": [1, "x", [2]]}})", R"({"a": 2})", false},
      {R"({"a": {"$in": [1, 2, 3]}})", R"({"a": [7, 3]})", true},
      {R"({"a": {"$in": [3, 1, 2, 3, 1]}})", R"({"a": {"$numberLong": "2"}})", true},
      {R"({"a": {"$in": [{"b": 1}]}})", R"({"a": {"b": 1}})", true},
      {R"({"a": {"$in": []}})", R"({"a": 1})", false},
      {R"({"a": {"$in": []}})", R"({})", false},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "^ab", "options": ""}}, 5]}})", R"({"a": "abc"})", true},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "^ab", "options": ""}}, 5]}})", R"({"a": ["x", "abz"]})", true},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "^ab", "options": ""}}, 5]}})", R"({"a": 5})", true},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "^ab", "options": ""}}, 5]}})", R"({"a": "b"})", false},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "AB", "options": "i"}}]}})", R"({"a": "xaby"})", true},
      {R"({"a.b": {"$in": [1, 2]}})", R"({"a": [{"b": 3}, {"b": 2}]})", true},
  });
}

TEST(MatcherTest, TypeOperator) {
  RunCases({
      {R"({"a": {"%type": "string"}})", R"({"a": "x"})", true},
      {R"({"a": {"%type": "string"}})", R"({"a": 1})", false},
      {R"({"a": {"%type": "string"}})", R"({"a": [1, "x"]})", true},
      {R"({"a": {"%type": "string"}})", R"({})", false},
      {R"({"a": {"%type": 2}})", R"({"a": "x"})", true},
      {R"({"a": {"%type": 2.0}})", R"({"a": "x"})", true},
      {R"({"a": {"%type": {"$numberLong": "2"}}})", R"({"a": "x"})", true},
      {R"({"a": {"%type": "number"}})", R"({"a": 1})", true},
      {R"({"a": {"%type": "number"}})", R"({"a": 1.5})", true},
      {R"({"a": {"%type": "number"}})", R"({"a": {"$numberLong": "1"}})", true},
      {R"({"a": {"%type": "number"}})", R"({"a": {"$numberDecimal": "1"}})", true},
      {R"({"a": {"%type": "number"}})", R"({"a": "1"})", false},
      {R"({"a": {"%type": ["string", "int"]}})", R"({"a": 1})", true},
      {R"({"a": {"%type": ["string", "int"]}})", R"({"a": 1.5})", false},
      {R"({"a": {"%type": ["string", 16]}})", R"({"a": "x"})", true},
      {R"({"a": {"%type": "int"}})", R"({"a": {"$numberLong": "1"}})", false},
      {R"({"a": {"%type": "long"}})", R"({"a": {"$numberLong": "1"}})", true},
      {R"({"a": {"%type": "double"}})", R"({"a": 1.5})", true},
      {R"({"a": {"%type": "double"}})", R"({"a": 1})", false},
      {R"({"a": {"%type": "decimal"}})", R"({"a": {"$numberDecimal": "1"}})", true},
      {R"({"a": {"%type": "array"}})", R"({"a": []})", true},
      {R"({"a": {"%type": "array"}})", R"({"a": [1]})", true},
      {R"({"a": {"%type": "array"}})", R"({"a": 1})", false},
      {R"({"a": {"%type": 4}})", R"({"a": [[1]]})", true},
      {R"({"a": {"%type": "object"}})", R"({"a": {}})", true},
      {R"({"a": {"%type": "null"}})", R"({"a": null})", true},
      {R"({"a": {"%type": "null"}})", R"({})", false},
      {R"({"a": {"%type": "bool"}})", R"({"a": false})", true},
      {R"({"a": {"%type": "date"}})", R"({"a": {"$date": "2024-01-01T00:00:00Z"}})", true},
      {R"({"a": {"%type": "objectId"}})", R"({"a": {"$oid": "5f1d7f3e9b1e8b1a2c3d4e5f"}})", true},
      {R"({"a": {"%type": "regex"}})", R"({"a": {"$regularExpression": {"pattern": "x", "options": ""}}})", true},
      {R"({"a": {"%type": "binData"}})", R"({"a": {"$binary": {"base64": "AA==", "subType": "00"}}})", true},
      {R"({"a": {"%type": "timestamp"}})", R"({"a": {"$timestamp": {"t": 1, "i": 1}}})", true},
      {R"({"a": {"%type": "minKey"}})", R"({"a": {"$minKey": 1}})", true},
      {R"({"a": {"%type": -1}})", R"({"a": {"$minKey": 1}})", true},
      {R"({"a": {"%type": "maxKey"}})", R"({"a": {"$maxKey": 1}})", true},
      {R"({"a": {"%type": 127}})", R"({"a": {"$maxKey": 1}})", true},
      {R"({"a": {"%type": 127}})", R"({"a": {"$minKey": 1}})", false},
      {R"({"a.b": {"%type": "string"}})", R"({"a": [{"b": 1}, {"b": "x"}]})", true},
  });
}

TEST(MatcherTest, SizeOperator) {
  RunCases({
      {R"({"a": {"$size": 2}})", R"({"a": [1, 2]})", true},
      {R"({"a": {"$size": 2}})", R"({"a": [1]})", false},
      {R"({"a": {"$size": 2}})", R"({"a": [1, 2, 3]})", false},
      {R"({"a": {"$size": 1}})", R"({"a": [[1, 2]]})", true},
      {R"({"a": {"$size": 2}})", R"({"a": [[1, 2]]})", false},  // the leaf array is not expanded
      {R"({"a": {"$size": 2}})", R"({"a": 2})", false},
      {R"({"a": {"$size": 2}})", R"({"a": {"0": 1, "1": 2}})", false},
      {R"({"a": {"$size": 0}})", R"({"a": []})", true},
      {R"({"a": {"$size": 0}})", R"({})", false},
      {R"({"a": {"$size": 2.0}})", R"({"a": [1, 2]})", true},
      {R"({"a": {"$size": {"$numberLong": "2"}}})", R"({"a": [1, 2]})", true},
      {R"({"a.b": {"$size": 1}})", R"({"a": [{"b": [1, 2]}, {"b": [3]}]})", true},
      {R"({"a.b": {"$size": 2}})", R"({"a": {"b": [1, 2]}})", true},
  });
}

TEST(MatcherTest, AllOperator) {
  RunCases({
      {R"({"a": {"$all": [1, 2]}})", R"({"a": [1, 2, 3]})", true},
      {R"({"a": {"$all": [1, 2]}})", R"({"a": [2, 1]})", true},
      {R"({"a": {"$all": [1, 2]}})", R"({"a": [1]})", false},
      {R"({"a": {"$all": [1, 2]}})", R"({"a": 1})", false},
      {R"({"a": {"$all": [1]}})", R"({"a": 1})", true},
      {R"({"a": {"$all": [1]}})", R"({"a": [1]})", true},
      {R"({"a": {"$all": [[1, 2]]}})", R"({"a": [1, 2]})", true},
      {R"({"a": {"$all": [[1, 2]]}})", R"({"a": [[1, 2], 3]})", true},
      {R"({"a": {"$all": []}})", R"({"a": [1]})", false},
      {R"({"a": {"$all": []}})", R"({})", false},
      {R"({"a": {"$all": [{"b": 1}]}})", R"({"a": [{"b": 1}]})", true},
      {R"({"a": {"$all": [{"$regularExpression": {"pattern": "^a", "options": ""}}, {"$regularExpression": {"pattern": "b$", "options": ""}}]}})",
       R"({"a": ["ax", "xb"]})", true},
      {R"({"a": {"$all": [{"$regularExpression": {"pattern": "^a", "options": ""}}, {"$regularExpression": {"pattern": "b$", "options": ""}}]}})",
       R"({"a": ["ab"]})", true},
      {R"({"a": {"$all": [{"$regularExpression": {"pattern": "^a", "options": ""}}, {"$regularExpression": {"pattern": "b$", "options": ""}}]}})",
       R"({"a": ["ax"]})", false},
      {R"({"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"c": 2}}]}})", R"({"a": [{"b": 1}, {"c": 2}]})", true},
      {R"({"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"c": 2}}]}})", R"({"a": [{"b": 1}]})", false},
      {R"({"a": {"$all": [{"$elemMatch": {"$gt": 5}}]}})", R"({"a": [1, 6]})", true},
      {R"({"a": {"$all": [{"$elemMatch": {"$gt": 5}}]}})", R"({"a": [1, 2]})", false},
      {R"({"a.b": {"$all": [1, 2]}})", R"({"a": [{"b": 1}, {"b": 2}]})", true},
  });
}

TEST(MatcherTest, ModOperator) {
  RunCases({
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": 5})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": 4})", false},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": 5.9})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": -3})", false},
      {R"({"a": {"$mod": [4, -3]}})", R"({"a": -3})", true},
      {R"({"a": {"$mod": [-3, 2]}})", R"({"a": 5})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": {"$numberLong": "9"}})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": {"$numberDecimal": "13.5"}})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": "5"})", false},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": [4, 9]})", true},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": {"$numberDouble": "NaN"}})", false},
      {R"({"a": {"$mod": [4, 1]}})", R"({"a": {"$numberDouble": "Infinity"}})", false},
      {R"({"a": {"$mod": [4, 0]}})", R"({"a": 1e30})", false},
      {R"({"a": {"$mod": [4, 0]}})", R"({})", false},
      {R"({"a": {"$mod": [4.5, 1]}})", R"({"a": 5})", true},
      {R"({"a": {"$mod": [-1, 0]}})", R"({"a": {"$numberLong": "-9223372036854775808"}})", true},
  });
}

TEST(MatcherTest, RegexLiteralsAndFlags) {
  auto re = [](const char* pattern, const char* options) {
    return std::string(R"({"a": {"$regularExpression": {"pattern": ")") + pattern +
           R"(", "options": ")" + options + R"("}}})";
  };
  RunCases({
      {re("^ab", ""), R"({"a": "abc"})", true},
      {re("^ab", ""), R"({"a": "cab"})", false},
      {re("^ab", ""), R"({"a": ["x", "abz"]})", true},
      {re("^ab", ""), R"({"a": 1})", false},
      {re("^ab", ""), R"({})", false},
      {re("^ab", ""), R"({"a": {"b": "ab"}})", false},
      {re("ab", ""), R"({"a": "xaby"})", true},
      {re("ab", ""), R"({"a": "xAby"})", false},
      {re("AB", "i"), R"({"a": "xaby"})", true},
      {re("^AB", "i"), R"({"a": "abY"})", true},
      {re("", ""), R"({"a": ""})", true},
      {re("b.c", ""), R"({"a": "b\nc"})", false},
      {re("b.c", ""), R"({"a": "b\rc"})", true},
      {re("b.c", "s"), R"({"a": "b\nc"})", true},
      {re("^b", ""), R"({"a": "a\nb"})", false},
      {re("^b", "m"), R"({"a": "a\nb"})", true},
      {re("a$", ""), R"({"a": "a\n"})", true},
      {re("a$", ""), R"({"a": "a\nb"})", false},
      {re("a$", "m"), R"({"a": "a\nb"})", true},
      {re("a b c", "x"), R"({"a": "abc"})", true},
      {re("a b c", ""), R"({"a": "abc"})", false},
      {re("a # comment\\nb", "x"), R"({"a": "ab"})", true},
      {re("a\\\\ b", "x"), R"({"a": "a b"})", true},
      {re("[ ]b", "x"), R"({"a": " b"})", true},
      {re("\\\\d+-\\\\d+", ""), R"({"a": "tel 12-34"})", true},
      {re("\\\\d+-\\\\d+", ""), R"({"a": "ab-cd"})", false},
      {re("^\\\\w+@\\\\w+\\\\.com$", ""), R"({"a": "joe@example.com"})", true},
      {re("^\\\\w+@\\\\w+\\\\.com$", ""), R"({"a": "joe@examplexcom"})", false},
      {re("colou?r", ""), R"({"a": "color"})", true},
      {re("(foo|bar)baz", ""), R"({"a": "xbarbaz"})", true},
      {re("(?:foo|bar)+$", ""), R"({"a": "foobar"})", true},
      {re("a{2}", ""), R"({"a": "caab"})", true},
      {re("a{2}", ""), R"({"a": "cab"})", false},
      {re("a{2,}b", ""), R"({"a": "aaab"})", true},
      {re("a{", ""), R"({"a": "a{"})", true},
      {re("{x}", ""), R"({"a": "{x}"})", true},
      {re("[]a]", ""), R"({"a": "]"})", true},
      {re("[^]a]", ""), R"({"a": "]"})", false},
      {re("[[:digit:]]+", ""), R"({"a": "x9"})", true},
      {re("(?i)abc", ""), R"({"a": "ABC"})", true},
      {re("(?<year>\\\\d{4})-\\\\d{2}", ""), R"({"a": "2024-05"})", true},
      {re("(a)\\\\1", ""), R"({"a": "xaa"})", true},
      {re("(a)\\\\1", ""), R"({"a": "ab"})", false},
      {re("\\\\Aab\\\\z", ""), R"({"a": "ab"})", true},
      {re("\\\\Aab\\\\z", ""), R"({"a": "ab\n"})", false},
      {re("\\\\Aab\\\\Z", ""), R"({"a": "ab\n"})", true},
      {re("foo(?=bar)", ""), R"({"a": "foobar"})", true},
      {re("foo(?!bar)", ""), R"({"a": "foobar"})", false},
      {re("caf\u00e9", ""), R"({"a": "un caf\u00e9"})", true},
      {re("a.+?c", ""), R"({"a": "abbbc"})", true},
      {re("\\\\bcat\\\\b", ""), R"({"a": "a cat!"})", true},
      {re("\\\\bcat\\\\b", ""), R"({"a": "concat"})", false},
      {re("\\\\x41", ""), R"({"a": "A"})", true},
      // A regex matches a regex value only when pattern and flags are equal.
      {re("x", ""), R"({"a": {"$regularExpression": {"pattern": "x", "options": ""}}})", true},
      {re("x", ""), R"({"a": {"$regularExpression": {"pattern": "x", "options": "i"}}})", false},
      {re("x", ""), R"({"a": {"$symbol": "xy"}})", true},
  });
}

TEST(MatcherTest, RegexOperatorDocument) {
  Document abc = Json(R"({"a": "ABC"})");
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "^ab", "i").bson(), abc.bson()));
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "^ab", "i", /*options_first=*/true).bson(), abc.bson()));
  EXPECT_FALSE(MatchesDoc(RegexOperator("a", "^ab", nullptr).bson(), abc.bson()));
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "B", nullptr).bson(), abc.bson()));
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "^a.c$", "si").bson(), abc.bson()));
  EXPECT_FALSE(MatchesDoc(RegexOperator("a", "^ab", "").bson(), Json(R"({"b": "abc"})").bson()));

  // $regex next to other operators.
  bson_t* f = bson_new();
  bson_t sub;
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  BSON_APPEND_UTF8(&sub, "$regex", "^a");
  BSON_APPEND_UTF8(&sub, "$ne", "ab");
  bson_append_document_end(f, &sub);
  Document filter = Document::Adopt(f);
  EXPECT_TRUE(MatchesDoc(filter.bson(), Json(R"({"a": "ax"})").bson()));
  EXPECT_FALSE(MatchesDoc(filter.bson(), Json(R"({"a": "ab"})").bson()));

  // $not around a $regex document.
  bson_t* g = bson_new();
  bson_t not_doc, re_doc;
  BSON_APPEND_DOCUMENT_BEGIN(g, "a", &not_doc);
  BSON_APPEND_DOCUMENT_BEGIN(&not_doc, "$not", &re_doc);
  BSON_APPEND_UTF8(&re_doc, "$regex", "^a");
  bson_append_document_end(&not_doc, &re_doc);
  bson_append_document_end(g, &not_doc);
  Document not_filter = Document::Adopt(g);
  EXPECT_FALSE(MatchesDoc(not_filter.bson(), Json(R"({"a": "ax"})").bson()));
  EXPECT_TRUE(MatchesDoc(not_filter.bson(), Json(R"({"a": "xa"})").bson()));

  // A long subject must neither crash nor take quadratic time.
  std::string big(200000, 'a');
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "a", big.c_str());
  Document big_doc = Document::Adopt(d);
  EXPECT_FALSE(MatchesDoc(RegexOperator("a", "a.*b", nullptr).bson(), big_doc.bson()));
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "^(a|b)*$", nullptr).bson(), big_doc.bson()));
  EXPECT_TRUE(MatchesDoc(RegexOperator("a", "a{3}$", nullptr).bson(), big_doc.bson()));
}

TEST(MatcherTest, ElemMatch) {
  RunCases({
      // Document form: one element must match the whole sub-filter.
      {R"({"a": {"$elemMatch": {"b": 1, "c": 2}}})", R"({"a": [{"b": 1, "c": 2}]})", true},
      {R"({"a": {"$elemMatch": {"b": 1, "c": 2}}})", R"({"a": [{"b": 1}, {"c": 2}]})", false},
      {R"({"a": {"$elemMatch": {"b": 1, "c": 2}}})", R"({"a": {"b": 1, "c": 2}})", false},
      {R"({"a": {"$elemMatch": {"b": 1}}})", R"({"a": [[{"b": 1}]]})", false},
      {R"({"a": {"$elemMatch": {"b": {"$gt": 1}, "c": {"$lt": 5}}}})", R"({"a": [{"b": 2, "c": 9}, {"b": 3, "c": 4}]})", true},
      {R"({"a": {"$elemMatch": {"b.c": 1}}})", R"({"a": [{"b": {"c": 1}}]})", true},
      {R"({"a": {"$elemMatch": {"b.c": 1}}})", R"({"a": [{"b": [{"c": 1}]}]})", true},
      {R"({"a": {"$elemMatch": {"$or": [{"b": 1}, {"c": 1}]}}})", R"({"a": [{"c": 1}]})", true},
      {R"({"a": {"$elemMatch": {"$or": [{"b": 1}, {"c": 1}]}}})", R"({"a": [{"d": 1}]})", false},
      {R"({"a": {"$elemMatch": {}}})", R"({"a": [{}]})", true},
      {R"({"a": {"$elemMatch": {}}})", R"({"a": [1]})", false},
      {R"({"a": {"$elemMatch": {}}})", R"({"a": [[1]]})", true},
      {R"({"a": {"$elemMatch": {"0": 1}}})", R"({"a": [[1, 2]]})", true},
      {R"({"a": {"$elemMatch": {"b": {"$elemMatch": {"c": 1}}}}})", R"({"a": [{"b": [{"c": 1}]}]})", true},
      {R"({"a.b": {"$elemMatch": {"c": 1}}})", R"({"a": [{"b": [{"c": 1}]}]})", true},
      {R"({"a.b": {"$elemMatch": {"c": 1}}})", R"({"a": [{"b": {"c": 1}}]})", false},
      // Operator form: every operator tests the same element.
      {R"({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}})", R"({"a": [0, 2]})", true},
      {R"({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}})", R"({"a": [0, 5]})", false},
      {R"({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}})", R"({"a": 2})", false},
      {R"({"a": {"$elemMatch": {"$gte": 2, "$lte": 4}}})", R"({"a": [1, 5]})", false},
      {R"({"a": {"$elemMatch": {"$not": {"$gt": 5}}}})", R"({"a": [6, 3]})", true},
      {R"({"a": {"$elemMatch": {"$not": {"$gt": 5}}}})", R"({"a": [6]})", false},
      {R"({"a": {"$elemMatch": {"$in": [1, 2]}}})", R"({"a": [3, 2]})", true},
      {R"({"a": {"$elemMatch": {"$nin": [1, 2]}}})", R"({"a": [1, 2]})", false},
      {R"({"a": {"$elemMatch": {"$ne": 1}}})", R"({"a": [1, 2]})", true},
      {R"({"a": {"$elemMatch": {"$elemMatch": {"$gt": 1}}}})", R"({"a": [[0, 2]]})", true},
      {R"({"a": {"$elemMatch": {"$elemMatch": {"$gt": 1}}}})", R"({"a": [[0], 5]})", false},
      {R"({"a": {"$elemMatch": {"$size": 2}}})", R"({"a": [[1], [1, 2]]})", true},
      {R"({"a": {"$elemMatch": {"%type": "string"}}})", R"({"a": [1, "x"]})", true},
      {R"({"a": {"$elemMatch": {"$exists": true}}})", R"({"a": [1]})", true},
      {R"({"a": {"$elemMatch": {"$exists": true}}})", R"({"a": []})", false},
      {R"({"a": {"$elemMatch": {"$eq": null}}})", R"({"a": [1, null]})", true},
      {R"({"a": {"$elemMatch": {"$in": [{"$regularExpression": {"pattern": "^x", "options": ""}}]}}})", R"({"a": ["a", "xb"]})", true},
      {R"({"a": {"$elemMatch": {"$mod": [2, 1]}}})", R"({"a": [2, 4, 7]})", true},
      {R"({"a": {"$elemMatch": {"$all": [1]}}})", R"({"a": [[1, 2]]})", false},
      {R"({"a": {"$elemMatch": {"$eq": [1, 2]}}})", R"({"a": [[1, 2]]})", true},
  });
}

TEST(MatcherTest, LogicalOperators) {
  RunCases({
      {R"({"$and": [{"a": 1}, {"b": 2}]})", R"({"a": 1, "b": 2})", true},
      {R"({"$and": [{"a": 1}, {"b": 2}]})", R"({"a": 1})", false},
      {R"({"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 5}}]})", R"({"a": 3})", true},
      {R"({"$or": [{"a": 1}, {"b": 2}]})", R"({"b": 2})", true},
      {R"({"$or": [{"a": 1}, {"b": 2}]})", R"({"c": 3})", false},
      {R"({"$or": [{"a": 1}]})", R"({"a": [0, 1]})", true},
      {R"({"$nor": [{"a": 1}, {"b": 2}]})", R"({"c": 3})", true},
      {R"({"$nor": [{"a": 1}, {"b": 2}]})", R"({"a": 1})", false},
      {R"({"$nor": [{"a": 1}, {"b": 2}]})", R"({"b": [2]})", false},
      {R"({"$and": [{"$or": [{"a": 1}, {"a": 2}]}, {"$nor": [{"b": 1}]}]})", R"({"a": 2, "b": 3})", true},
      {R"({"$and": [{"$or": [{"a": 1}, {"a": 2}]}, {"$nor": [{"b": 1}]}]})", R"({"a": 2, "b": 1})", false},
      {R"({"a": 1, "$or": [{"b": 1}, {"c": 1}]})", R"({"a": 1, "c": 1})", true},
      {R"({"a": 1, "$or": [{"b": 1}, {"c": 1}]})", R"({"a": 2, "c": 1})", false},
      {R"({"$or": [{"a": {"$exists": false}}, {"a": null}]})", R"({"a": null})", true},
      {R"({"$comment": "ignored", "a": 1})", R"({"a": 1})", true},
      {R"({"$comment": "ignored", "a": 1})", R"({"a": 2})", false},
      {R"({"$alwaysTrue": 1})", R"({"a": 1})", true},
      {R"({"$alwaysFalse": 1})", R"({"a": 1})", false},
      {R"({})", R"({"a": 1})", true},
      {R"({})", R"({})", true},
  });
}

TEST(MatcherTest, MatchesAll) {
  EXPECT_TRUE(MustParse(Json("{}").bson())->MatchesAll());
  EXPECT_TRUE(MustParse(Json(R"({"$comment": "x"})").bson())->MatchesAll());
  EXPECT_FALSE(MustParse(Json(R"({"a": 1})").bson())->MatchesAll());
  EXPECT_FALSE(MustParse(Json(R"({"$or": [{"a": 1}]})").bson())->MatchesAll());
}

TEST(MatcherTest, MatcherOutlivesItsFilter) {
  std::unique_ptr<Matcher> m;
  {
    Document filter = Json(R"({"name": "alice", "tags": {"$in": ["x", "y"]}})");
    m = MustParse(filter.bson());
  }
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->Matches(Json(R"({"name": "alice", "tags": ["z", "y"]})").bson()));
  EXPECT_FALSE(m->Matches(Json(R"({"name": "bob", "tags": ["y"]})").bson()));
}

TEST(MatcherTest, ConcurrentMatches) {
  std::unique_ptr<Matcher> m = MustParse(
      Json(R"({"a.b": {"$gt": 5}, "s": {"$regularExpression": {"pattern": "^x.*y$", "options": "i"}}})").bson());
  ASSERT_TRUE(m);
  Document yes = Json(R"({"a": [{"b": 1}, {"b": 9}], "s": "XabY"})");
  Document no = Json(R"({"a": [{"b": 1}], "s": "XabY"})");
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (!m->Matches(yes.bson()) || m->Matches(no.bson())) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(0, f);
}

// --- positional: MatchDetails::elem_match_index ---

std::optional<size_t> ElemIndex(const std::string& filter, const std::string& doc) {
  std::unique_ptr<Matcher> m = MustParse(Json(filter).bson());
  if (!m) return std::nullopt;
  MatchDetails details;
  details.elem_match_index = 99;  // must be overwritten
  bool matched = m->Matches(Json(doc).bson(), &details);
  EXPECT_TRUE(matched) << filter << " vs " << doc;
  return details.elem_match_index;
}

TEST(MatcherTest, ElemMatchIndexForPositionalOperator) {
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"items.sku": "x"})", R"({"items": [{"sku": "a"}, {"sku": "x"}]})"));
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"items": {"$elemMatch": {"sku": "x", "qty": {"$gt": 1}}}})",
                      R"({"items": [{"sku": "x", "qty": 1}, {"sku": "x", "qty": 5}]})"));
  EXPECT_EQ(std::optional<size_t>(2), ElemIndex(R"({"a": 5})", R"({"a": [1, 2, 5]})"));
  EXPECT_EQ(std::nullopt, ElemIndex(R"({"a": 5})", R"({"a": 5})"));
  EXPECT_EQ(std::nullopt, ElemIndex(R"({"a": [1, 5]})", R"({"a": [1, 5]})"));
  // The outermost array wins.
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"a.b": 2})", R"({"a": [{"b": [1]}, {"b": [3, 2]}]})"));
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"a": {"$elemMatch": {"$gt": 3}}})", R"({"a": [1, 4]})"));
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"x": 1, "a.b": 2})", R"({"x": 1, "a": [{"b": 0}, {"b": 2}]})"));
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"$or": [{"a": 9}, {"b.c": 1}]})", R"({"b": [{"c": 0}, {"c": 1}]})"));
  EXPECT_EQ(std::optional<size_t>(0),
            ElemIndex(R"({"a": {"$gt": 1}})", R"({"a": [2, 3]})"));
  EXPECT_EQ(std::optional<size_t>(1),
            ElemIndex(R"({"a": {"$in": [7, 8]}})", R"({"a": [1, 8]})"));
  EXPECT_EQ(std::optional<size_t>(2),
            ElemIndex(R"({"a.b": {"$elemMatch": {"c": 1}}})",
                      R"({"a": [{"b": []}, {"b": [{"c": 0}]}, {"b": [{"c": 2}, {"c": 1}]}]})"));
  // An explicit index is not a positional match.
  EXPECT_EQ(std::nullopt, ElemIndex(R"({"a.1": 5})", R"({"a": [1, 5]})"));

  // No match leaves no index; details may be omitted.
  std::unique_ptr<Matcher> m = MustParse(Json(R"({"a": 5})").bson());
  MatchDetails details;
  details.elem_match_index = 3;
  EXPECT_FALSE(m->Matches(Json(R"({"a": [1, 2]})").bson(), &details));
  EXPECT_EQ(std::nullopt, details.elem_match_index);
  EXPECT_TRUE(m->Matches(Json(R"({"a": [5]})").bson(), nullptr));
}

// --- ExtractEqualityFields ---

std::string Extract(const std::string& filter) {
  bson_t out = BSON_INITIALIZER;
  Status s = ExtractEqualityFields(Json(filter).bson(), &out);
  EXPECT_TRUE(s.ok()) << s.ToString() << " for " << filter;
  std::string json = test::ToJson(&out);
  bson_destroy(&out);
  return json;
}

Status ExtractStatus(const std::string& filter) {
  bson_t out = BSON_INITIALIZER;
  Status s = ExtractEqualityFields(Json(filter).bson(), &out);
  bson_destroy(&out);
  return s;
}

std::string Canon(const std::string& json) { return test::ToJson(Json(json).bson()); }

TEST(ExtractEqualityFieldsTest, CollectsEqualities) {
  EXPECT_EQ(Canon(R"({"a": 1})"), Extract(R"({"a": 1, "b": {"$gt": 5}})"));
  EXPECT_EQ(Canon(R"({"a": 1})"), Extract(R"({"a": {"$eq": 1}})"));
  EXPECT_EQ(Canon(R"({"a": 1, "b": {"c": 2}})"), Extract(R"({"$and": [{"a": 1}, {"b.c": 2}]})"));
  EXPECT_EQ(Canon(R"({"b": {"c": 2, "d": 3}})"), Extract(R"({"b.d": 3, "b.c": 2})"));
  EXPECT_EQ(Canon(R"({"a": {"b": {"c": 1}, "d": 2}})"), Extract(R"({"a.b.c": 1, "a.d": 2})"));
  EXPECT_EQ(Canon(R"({"_id": "x", "a": 2, "z": 1})"), Extract(R"({"z": 1, "_id": "x", "a": 2})"));
  EXPECT_EQ(Canon(R"({"_id": {"k": 1}, "a": 2})"), Extract(R"({"a": 2, "_id.k": 1})"));
  EXPECT_EQ(Canon(R"({"a": 1})"), Extract(R"({"$or": [{"a": 1}]})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"$or": [{"a": 1}, {"b": 2}]})"));
  EXPECT_EQ(Canon(R"({"a": 5})"), Extract(R"({"a": {"$in": [5]}})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"a": {"$in": [5, 6]}})"));
  EXPECT_EQ(Canon(R"({"a": {"b": 1}})"), Extract(R"({"a": {"b": 1}})"));
  EXPECT_EQ(Canon(R"({"a": [1, 2]})"), Extract(R"({"a": [1, 2]})"));
  EXPECT_EQ(Canon(R"({"a": null})"), Extract(R"({"a": null})"));
  EXPECT_EQ(Canon(R"({"a": 1})"), Extract(R"({"a": {"$eq": 1, "$gt": 0}})"));
  EXPECT_EQ(Canon(R"({"t": "x"})"), Extract(R"({"t": {"$all": ["x"]}})"));
  EXPECT_EQ(Canon(R"({"a": 1, "b": 2})"), Extract(R"({"$and": [{"$and": [{"a": 1}]}, {"b": 2}]})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"$nor": [{"a": 1}]})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"a": {"$not": {"$eq": 1}}})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"a": {"$elemMatch": {"b": 1}}})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({"a": {"$ne": 1}, "b": {"$gt": 1}})"));
  EXPECT_EQ(Canon(R"({})"), Extract(R"({})"));
  EXPECT_EQ(Canon(R"({"a": 1, "ab": 2})"), Extract(R"({"ab": 2, "a": 1})"));
}

TEST(ExtractEqualityFieldsTest, AppendsToExistingDocument) {
  bson_t out = BSON_INITIALIZER;
  BSON_APPEND_INT32(&out, "pre", 1);
  ASSERT_OK(ExtractEqualityFields(Json(R"({"a": 2})").bson(), &out));
  EXPECT_EQ(Canon(R"({"pre": 1, "a": 2})"), test::ToJson(&out));
  bson_destroy(&out);
}

TEST(ExtractEqualityFieldsTest, ConflictsAreNotSingleValueField) {
  EXPECT_THAT(ExtractStatus(R"({"$and": [{"a": 1}, {"a": 2}]})"),
              StatusIs(ErrorCode::kNotSingleValueField));
  EXPECT_THAT(ExtractStatus(R"({"$and": [{"a": 1}, {"a": 1}]})"),
              StatusIs(ErrorCode::kNotSingleValueField));
  EXPECT_THAT(ExtractStatus(R"({"a": 1, "a.b": 2})"), StatusIs(ErrorCode::kNotSingleValueField));
  EXPECT_THAT(ExtractStatus(R"({"a.b.c": 1, "a.b": 2})"), StatusIs(ErrorCode::kNotSingleValueField));
  EXPECT_THAT(ExtractStatus(R"({"a": {"$eq": 1, "$in": [1]}})"),
              StatusIs(ErrorCode::kNotSingleValueField));
  EXPECT_THAT(ExtractStatus(R"({"a": {"$all": [1, 2]}})"), StatusIs(ErrorCode::kNotSingleValueField));
  Status s = ExtractStatus(R"({"a": 1, "a.b": 2})");
  EXPECT_EQ("cannot infer query fields to set, both paths 'a.b' and 'a' are matched", s.reason());
  s = ExtractStatus(R"({"$and": [{"a": 1}, {"a": 2}]})");
  EXPECT_EQ("cannot infer query fields to set, path 'a' is matched twice", s.reason());
  // Not conflicts: siblings and a mere common string prefix.
  EXPECT_OK(ExtractStatus(R"({"a.b": 1, "a.c": 2, "ab": 3, "a-b": 4})"));
  // Parse errors come through.
  EXPECT_THAT(ExtractStatus(R"({"a": {"$foo": 1}})"), StatusIs(ErrorCode::kBadValue));
}

// --- errors ---

TEST(MatcherErrorTest, UnknownOperators) {
  Status s = ParseStatus(R"({"a": {"$foo": 1}})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("unknown operator: $foo", s.reason());
  s = ParseStatus(R"({"$foo": 1})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("unknown top level operator: $foo", s.reason());
  s = ParseStatus(R"({"a": {"$gt": 1, "b": 1}})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("unknown operator: b", s.reason());
  EXPECT_THAT(ParseStatus(R"({"$not": {"a": 1}})"), StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(R"({"a": {"$comment": "x"}})"), StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(R"({"$where": "this.a > 1"})"), StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(R"({"a": {"$where": 1}})"), StatusIs(ErrorCode::kBadValue));
  // $expr is supported at the top level (matcher_expr_test.cc), not inside $elemMatch.
  EXPECT_OK(ParseStatus(R"({"$expr": {"$eq": ["$a", 1]}})"));
  EXPECT_THAT(ParseStatus(R"({"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}})"),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(R"({"a": {"$bitsAllSet": 1}})"), StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(R"({"a": {"$near": [0, 0]}})"), StatusIs(ErrorCode::kBadValue));
}

TEST(MatcherErrorTest, BadOperatorArguments) {
  struct ErrCase {
    const char* filter;
    ErrorCode code;
    const char* reason;  // null: not checked
  };
  const ErrCase cases[] = {
      {R"({"a": {"$in": 5}})", ErrorCode::kBadValue, "$in needs an array"},
      {R"({"a": {"$nin": {"x": 1}}})", ErrorCode::kBadValue, "$nin needs an array"},
      {R"({"a": {"$in": [{"$gt": 1}]}})", ErrorCode::kBadValue, "cannot nest $ under $in"},
      {R"({"a": {"$size": "x"}})", ErrorCode::kBadValue, "$size needs a number"},
      {R"({"a": {"$size": null}})", ErrorCode::kBadValue, "$size needs a number"},
      {R"({"a": {"$size": -1}})", ErrorCode::kBadValue, "$size may not be negative"},
      {R"({"a": {"$size": 1.5}})", ErrorCode::kBadValue, "$size must be a whole number"},
      {R"({"a": {"$size": {"$numberLong": "4294967296"}}})", ErrorCode::kBadValue, nullptr},
      {R"({"$and": []})", ErrorCode::kBadValue, "$and/$or/$nor must be a nonempty array"},
      {R"({"$or": []})", ErrorCode::kBadValue, "$and/$or/$nor must be a nonempty array"},
      {R"({"$nor": []})", ErrorCode::kBadValue, "$and/$or/$nor must be a nonempty array"},
      {R"({"$and": {"a": 1}})", ErrorCode::kBadValue, "$and must be an array"},
      {R"({"$or": [1]})", ErrorCode::kBadValue, "$or/$and/$nor entries need to be full objects"},
      {R"({"$or": [{"a": {"$foo": 1}}]})", ErrorCode::kBadValue, "unknown operator: $foo"},
      {R"({"a": {"$not": 5}})", ErrorCode::kBadValue, "$not needs a regex or a document"},
      {R"({"a": {"$not": {}}})", ErrorCode::kBadValue, "$not cannot be empty"},
      {R"({"a": {"$not": {"b": 1}}})", ErrorCode::kBadValue, "unknown operator: b"},
      {R"({"a": {"$elemMatch": 1}})", ErrorCode::kBadValue, "$elemMatch needs an Object"},
      {R"({"a": {"$elemMatch": {"$gt": 1, "b": 1}}})", ErrorCode::kBadValue, "unknown operator: b"},
      {R"({"a": {"$all": 1}})", ErrorCode::kBadValue, "$all needs an array"},
      {R"({"a": {"$all": [{"$elemMatch": {"b": 1}}, 5]}})", ErrorCode::kBadValue, "$all/$elemMatch has to be consistent"},
      {R"({"a": {"$all": [{"$gt": 1}]}})", ErrorCode::kBadValue, "no $ expressions in $all"},
      {R"({"a": {"$mod": [0, 1]}})", ErrorCode::kBadValue, "divisor cannot be 0"},
      {R"({"a": {"$mod": [0.5, 1]}})", ErrorCode::kBadValue, "divisor cannot be 0"},
      {R"({"a": {"$mod": [1]}})", ErrorCode::kBadValue, "malformed mod, not enough elements"},
      {R"({"a": {"$mod": []}})", ErrorCode::kBadValue, "malformed mod, not enough elements"},
      {R"({"a": {"$mod": [1, 2, 3]}})", ErrorCode::kBadValue, "malformed mod, too many elements"},
      {R"({"a": {"$mod": 5}})", ErrorCode::kBadValue, "malformed mod, needs to be an array"},
      {R"({"a": {"$mod": ["a", 1]}})", ErrorCode::kBadValue, "malformed mod, divisor not a number"},
      {R"({"a": {"$mod": [2, "a"]}})", ErrorCode::kBadValue, "malformed mod, remainder not a number"},
      {R"({"a": {"$mod": [{"$numberDouble": "NaN"}, 1]}})", ErrorCode::kBadValue, nullptr},
      {R"({"a": {"%type": "foo"}})", ErrorCode::kBadValue, "Unknown type name alias: foo"},
      {R"({"a": {"%type": "missing"}})", ErrorCode::kBadValue, nullptr},
      {R"({"a": {"%type": 0}})", ErrorCode::kBadValue, nullptr},
      {R"({"a": {"%type": 100}})", ErrorCode::kBadValue, "Invalid numerical type code: 100"},
      {R"({"a": {"%type": 2.5}})", ErrorCode::kBadValue, nullptr},
      {R"({"a": {"%type": []}})", ErrorCode::kFailedToParse, nullptr},
      {R"({"a": {"%type": true}})", ErrorCode::kTypeMismatch, "type must be represented as a number or a string"},
      {R"({"a": {"%type": ["string", {}]}})", ErrorCode::kTypeMismatch, nullptr},
      {R"({"a": {"$gt": {"$regularExpression": {"pattern": "x", "options": ""}}}})", ErrorCode::kBadValue,
       "Can't have RegEx as arg to predicate over field 'a'."},
      {R"({"a": {"$ne": {"$regularExpression": {"pattern": "x", "options": ""}}}})", ErrorCode::kBadValue,
       "Can't have regex as arg to $ne."},
      {R"({"a": {"%options": "i"}})", ErrorCode::kBadValue, "$options needs a $regex"},
      {R"({"a": {"$regularExpression": {"pattern": "(", "options": ""}}})", ErrorCode::kLocation51091, nullptr},
      {R"j({"a": {"$regularExpression": {"pattern": "a)", "options": ""}}})j", ErrorCode::kLocation51091, nullptr},
      {R"({"a": {"$regularExpression": {"pattern": "[a", "options": ""}}})", ErrorCode::kLocation51091, nullptr},
      {R"({"a": {"$regularExpression": {"pattern": "(?<=a+)b", "options": ""}}})", ErrorCode::kLocation51091,
       "Regular expression is invalid: lookbehind assertion is not fixed length"},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "(", "options": ""}}]}})", ErrorCode::kLocation51091, nullptr},
      {R"({"a": {"$all": [{"$regularExpression": {"pattern": "(", "options": ""}}]}})", ErrorCode::kLocation51091, nullptr},
      {R"({"a": {"$not": {"$regularExpression": {"pattern": "(", "options": ""}}}})", ErrorCode::kLocation51091, nullptr},
      {R"({"$alwaysTrue": 2})", ErrorCode::kFailedToParse, nullptr},
  };
  for (const ErrCase& c : cases) {
    Status s = ParseStatus(std::string(c.filter));
    EXPECT_THAT(s, StatusIs(c.code)) << c.filter;
    if (c.reason != nullptr) {
      EXPECT_EQ(c.reason, s.reason()) << c.filter;
    }
  }
}

TEST(MatcherErrorTest, RegexFlagsAndOptions) {
  Status s = ParseStatus(RegexOperator("a", "x", "iz").bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kLocation51108));
  EXPECT_EQ("invalid flag in regex options: z", s.reason());
  EXPECT_THAT(ParseStatus(RegexOperator("a", "x", "g").bson()), StatusIs(ErrorCode::kLocation51108));
  EXPECT_OK(ParseStatus(RegexOperator("a", "x", "imsxu").bson()));
  EXPECT_THAT(ParseStatus(RegexOperator("a", "(", "").bson()), StatusIs(ErrorCode::kLocation51091));

  // $regex must be a string or a regex; $options a string.
  bson_t* f = bson_new();
  bson_t sub;
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  BSON_APPEND_INT32(&sub, "$regex", 5);
  bson_append_document_end(f, &sub);
  Document bad_regex = Document::Adopt(f);
  s = ParseStatus(bad_regex.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("$regex has to be a string", s.reason());

  f = bson_new();
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  BSON_APPEND_UTF8(&sub, "$regex", "x");
  BSON_APPEND_INT32(&sub, "$options", 1);
  bson_append_document_end(f, &sub);
  Document bad_options = Document::Adopt(f);
  s = ParseStatus(bad_options.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("$options has to be a string", s.reason());

  // Flags both in a regex value and in $options.
  f = bson_new();
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  BSON_APPEND_REGEX(&sub, "$regex", "x", "i");
  BSON_APPEND_UTF8(&sub, "$options", "m");
  bson_append_document_end(f, &sub);
  Document both = Document::Adopt(f);
  EXPECT_THAT(ParseStatus(both.bson()), StatusIs(ErrorCode::kBadValue));

  // An embedded null byte.
  f = bson_new();
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  bson_append_utf8(&sub, "$regex", -1, "a\0b", 3);
  bson_append_document_end(f, &sub);
  Document nul = Document::Adopt(f);
  EXPECT_THAT(ParseStatus(nul.bson()), StatusIs(ErrorCode::kBadValue));
}

TEST(MatcherErrorTest, UndefinedOperands) {
  bson_t* f = bson_new();
  BSON_APPEND_UNDEFINED(f, "a");
  Document eq = Document::Adopt(f);
  Status s = ParseStatus(eq.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("cannot compare to undefined", s.reason());

  f = bson_new();
  bson_t sub, arr;
  BSON_APPEND_DOCUMENT_BEGIN(f, "a", &sub);
  BSON_APPEND_ARRAY_BEGIN(&sub, "$in", &arr);
  BSON_APPEND_UNDEFINED(&arr, "0");
  bson_append_array_end(&sub, &arr);
  bson_append_document_end(f, &sub);
  Document in = Document::Adopt(f);
  EXPECT_THAT(ParseStatus(in.bson()), StatusIs(ErrorCode::kBadValue));
}

// {key: inner}, or {key: [inner]} when `in_array`.
Document Wrap(const Document& inner, const char* key, bool in_array) {
  bson_t* b = bson_new();
  if (in_array) {
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(b, key, &arr);
    BSON_APPEND_DOCUMENT(&arr, "0", inner.bson());
    bson_append_array_end(b, &arr);
  } else {
    BSON_APPEND_DOCUMENT(b, key, inner.bson());
  }
  return Document::Adopt(b);
}

Document Nest(int levels, const std::string& innermost, const char* key, bool in_array) {
  Document d = Json(innermost);
  for (int i = 0; i < levels; ++i) d = Wrap(d, key, in_array);
  return d;
}

TEST(MatcherErrorTest, DeepNestingIsBadValueNotACrash) {
  EXPECT_THAT(ParseStatus(Nest(150, R"({"a": 1})", "$and", true).bson()),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(Nest(150, R"({"a": 1})", "$or", true).bson()),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(Nest(101, R"({"a": 1})", "$nor", true).bson()),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(Wrap(Nest(150, R"({"$eq": 1})", "$not", false), "a", false).bson()),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(Wrap(Nest(150, R"({"$eq": 1})", "$elemMatch", false), "a", false).bson()),
              StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(ParseStatus(Wrap(Nest(150, R"({"b": 1})", "$elemMatch", false), "a", false).bson()),
              StatusIs(ErrorCode::kBadValue));
  Document deep_literal = Nest(150, R"({"a": 1})", "a", false);
  Status s = ParseStatus(deep_literal.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kBadValue));
  EXPECT_EQ("filter exceeds the maximum nesting depth of 100", s.reason());
  // 150 nested arrays.
  {
    bson_t levels[151];
    bson_init(&levels[0]);
    BSON_APPEND_ARRAY_BEGIN(&levels[0], "a", &levels[1]);
    for (int i = 1; i < 150; ++i) BSON_APPEND_ARRAY_BEGIN(&levels[i], "0", &levels[i + 1]);
    BSON_APPEND_INT32(&levels[150], "0", 1);
    for (int i = 149; i >= 0; --i) bson_append_array_end(&levels[i], &levels[i + 1]);
    EXPECT_THAT(ParseStatus(&levels[0]), StatusIs(ErrorCode::kBadValue));
    bson_destroy(&levels[0]);
  }
  // Up to the limit is fine, and matches.
  std::unique_ptr<Matcher> m = MustParse(Nest(100, R"({"a": 1})", "a", false).bson());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->Matches(Wrap(Nest(99, R"({"a": 1})", "a", false), "a", false).bson()));
  m = MustParse(Nest(45, R"({"a": 1})", "$and", true).bson());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->Matches(Json(R"({"a": 1})").bson()));
  m = MustParse(Wrap(Nest(60, R"({"$eq": 1})", "$not", false), "a", false).bson());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->Matches(Json(R"({"a": 1})").bson()));  // an even number of $not
  EXPECT_FALSE(m->Matches(Json(R"({"a": 2})").bson()));

  // A path with too many components.
  std::string path = "a";
  for (int i = 0; i < 150; ++i) path += ".a";
  EXPECT_THAT(ParseStatus("{\"" + path + "\": 1}"), StatusIs(ErrorCode::kBadValue));
}

TEST(MatcherErrorTest, NullAndInvalidInput) {
  EXPECT_THAT(Matcher::Parse(nullptr), StatusIs(ErrorCode::kBadValue));
  bson_t out = BSON_INITIALIZER;
  EXPECT_THAT(ExtractEqualityFields(nullptr, &out), StatusIs(ErrorCode::kBadValue));
  bson_destroy(&out);
  // Corrupt bytes: a length prefix that claims more than there is inside.
  uint8_t bytes[] = {12, 0, 0, 0, 0x10, 'a', 0, 1, 0, 0, 0, 0};
  bytes[4] = 0x03;  // says "document" but the payload is not one
  bson_t bad;
  ASSERT_TRUE(bson_init_static(&bad, bytes, sizeof(bytes)));
  EXPECT_FALSE(Matcher::Parse(&bad).ok());
}

}  // namespace
}  // namespace query
}  // namespace gatedb
