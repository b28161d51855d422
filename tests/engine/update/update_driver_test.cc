#include "engine/update/update_driver.h"

#include "engine/document/diff.h"
#include "engine/document/validate.h"

#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace update {
namespace {

constexpr int64_t kNow = 1700000000123;

// One table row: apply `update` to `doc`; expect the document `want` (exact
// bytes: types and field order), "=" for "unchanged, byte for byte", or the
// error `error` (from Parse or Apply).
struct Case {
  std::string name;
  std::string doc;
  std::string update;
  std::string want;
  ErrorCode error = ErrorCode::kOK;
  bool insert = false;
  std::optional<size_t> positional;
  std::string version_field = "version";
};

// Keeps gtest from printing the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.update << " on " << c.doc; }

Case Ok(std::string name, std::string doc, std::string update, std::string want) {
  Case c;
  c.name = std::move(name);
  c.doc = std::move(doc);
  c.update = std::move(update);
  c.want = std::move(want);
  return c;
}

Case Err(std::string name, std::string doc, std::string update, ErrorCode error) {
  Case c = Ok(std::move(name), std::move(doc), std::move(update), "");
  c.error = error;
  return c;
}

Case Insert(Case c) {
  c.insert = true;
  return c;
}

Case At(size_t index, Case c) {
  c.positional = index;
  return c;
}

Case VersionField(std::string field, Case c) {
  c.version_field = std::move(field);
  return c;
}

std::string Canonical(const bson_t* b) { return DocumentView(b).ToJson(JsonMode::kCanonical); }

// Runs one update; returns the Status of Parse or Apply, and the result.
Status RunUpdate(const bson_t* doc, const bson_t* update, const ApplyContext& ctx, Document* result,
                 const std::string& version_field = "version", bool* bumps = nullptr) {
  UpdateOptions opts;
  opts.version_field = version_field;
  StatusOr<std::unique_ptr<UpdateDriver>> driver = UpdateDriver::Parse(update, opts);
  if (!driver.ok()) return driver.status();
  if (bumps != nullptr) *bumps = (*driver)->bumps_version();
  bson_t out = BSON_INITIALIZER;
  Status s = (*driver)->Apply(doc, ctx, &out);
  if (!s.ok()) {
    EXPECT_EQ(5u, out.len) << "out must be left empty on error";
  }
  *result = Document::Copy(&out);
  bson_destroy(&out);
  return s;
}

class UpdateCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(UpdateCaseTest, Applies) {
  const Case& c = GetParam();
  SCOPED_TRACE("doc " + c.doc + "  update " + c.update);
  Document doc = test::Json(c.doc);
  Document update = test::Json(c.update);
  ApplyContext ctx;
  ctx.is_upsert_insert = c.insert;
  ctx.positional_index = c.positional;
  ctx.now_millis = kNow;
  Document result;
  Status s = RunUpdate(doc.bson(), update.bson(), ctx, &result, c.version_field);
  if (c.error != ErrorCode::kOK) {
    EXPECT_THAT(s, test::StatusIs(c.error));
    return;
  }
  ASSERT_OK(s);
  Document want = c.want == "=" ? doc : test::Json(c.want);
  EXPECT_TRUE(BinaryEqual(want.view(), result.view()))
      << "want " << Canonical(want.bson()) << "\n got " << Canonical(result.bson());
  // The general path (never in place) writes the same.
  ApplyContext general = ctx;
  general.allow_in_place = false;
  Document general_result;
  ASSERT_OK(RunUpdate(doc.bson(), update.bson(), general, &general_result, c.version_field));
  EXPECT_TRUE(BinaryEqual(result.view(), general_result.view())) << "general " << Canonical(general_result.bson());

  // The write path diffs and validates only top_level_fields() of an
  // operator update: that must give what the whole-document versions give.
  UpdateOptions opts;
  opts.version_field = c.version_field;
  auto driver = UpdateDriver::Parse(update.bson(), opts);
  ASSERT_OK(driver.status());
  if ((*driver)->is_replacement() || c.insert || HasDuplicateTopLevelNames(doc.bson())) return;
  std::vector<std::string> all, listed;
  DiffPaths(doc.bson(), result.bson(), c.version_field, &all);
  DiffPathsOfFields(doc.bson(), result.bson(), (*driver)->top_level_fields(), c.version_field, &listed);
  EXPECT_EQ(all, listed);
  if (ValidateForStorage(doc.bson()).ok()) {
    EXPECT_EQ(ValidateForStorage(result.bson()).code(),
              ValidateWrittenFields(result.bson(), (*driver)->top_level_fields()).code());
  }

  // The layout Apply notes is where a search finds the fields, and the
  // write path's diff and checks at those offsets give the same answers.
  const std::vector<std::string>& fields = (*driver)->top_level_fields();
  FieldLayout layout;
  bson_t again = BSON_INITIALIZER;
  ASSERT_OK((*driver)->Apply(doc.bson(), ctx, &again, &layout));
  Document out = Document::Adopt(bson_copy(&again));
  bson_destroy(&again);
  EXPECT_EQ(layout.known, !fields.empty() && !HasDuplicateTopLevelNames(out.bson()));
  if (!layout.known) return;
  EXPECT_EQ(test::TopLevelOffsets(doc.bson(), fields), layout.before);
  EXPECT_EQ(test::TopLevelOffsets(out.bson(), fields), layout.after);
  EXPECT_EQ(test::TopLevelOffsets(out.bson(), {c.version_field}), std::vector<uint32_t>{layout.version_after});
  std::vector<std::string> told;
  DiffPathsOfFields(doc.bson(), out.bson(), fields, layout.before, layout.after, c.version_field, &told);
  EXPECT_EQ(listed, told);
  EXPECT_EQ(ValidateWrittenFields(out.bson(), fields).code(),
            ValidateWrittenFields(out.bson(), fields, layout.after).code());
}

// A driver that borrows its update reads it in place and applies exactly
// what a driver with its own copy does.
TEST(UpdateDriverTest, ABorrowedUpdateAppliesAsACopiedOne) {
  Document doc = test::Json(R"({"_id": 1, "a": 1, "b": [1, 2], "version": {"$numberLong": "4"}})");
  for (const char* json : {R"({"$set": {"a": 2}, "$push": {"b": 3}, "$inc": {"version": 1}})", R"({"x": "whole"})"}) {
    SCOPED_TRACE(json);
    Document update = test::Json(json);
    UpdateOptions copied, borrowed;
    borrowed.borrow_update = true;
    auto a = UpdateDriver::Parse(update.bson(), copied);
    auto b = UpdateDriver::Parse(update.bson(), borrowed);
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    EXPECT_EQ((*a)->bumps_version(), (*b)->bumps_version());
    EXPECT_EQ((*a)->top_level_fields(), (*b)->top_level_fields());
    bson_t x = BSON_INITIALIZER, y = BSON_INITIALIZER;
    ASSERT_OK((*a)->Apply(doc.bson(), ApplyContext(), &x));
    ASSERT_OK((*b)->Apply(doc.bson(), ApplyContext(), &y));
    EXPECT_TRUE(BinaryEqual(DocumentView(&x), DocumentView(&y)));
    bson_destroy(&x);
    bson_destroy(&y);
  }
}

// Apply says it does not know the layout when a name it would note is
// repeated, for a replacement, and after an error.
TEST(FieldLayoutTest, UnknownWhenANameRepeatsOrForAReplacementOrAnError) {
  auto apply = [](const bson_t* doc, const std::string& update, FieldLayout* layout) {
    Document u = test::Json(update);
    auto driver = UpdateDriver::Parse(u.bson(), UpdateOptions());
    EXPECT_OK(driver.status());
    bson_t out = BSON_INITIALIZER;
    layout->known = true;  // Apply must say
    Status s = (*driver)->Apply(doc, ApplyContext(), &out, layout);
    bson_destroy(&out);
    return s;
  };
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  BSON_APPEND_INT32(b, "a", 1);
  BSON_APPEND_INT64(b, "version", 3);
  BSON_APPEND_INT32(b, "a", 2);
  BSON_APPEND_INT64(b, "version", 4);
  Document repeated = Document::Adopt(b);
  FieldLayout layout;
  ASSERT_OK(apply(repeated.bson(), R"({"$set": {"a": 5}})", &layout));
  EXPECT_FALSE(layout.known);
  ASSERT_OK(apply(repeated.bson(), R"({"$set": {"b": 5}})", &layout));  // the version field repeats
  EXPECT_FALSE(layout.known);

  Document plain = test::Json(R"({"_id": 1, "a": 1, "version": {"$numberLong": "3"}})");
  ASSERT_OK(apply(plain.bson(), R"({"$set": {"b": 5}})", &layout));
  EXPECT_TRUE(layout.known);
  EXPECT_EQ(std::vector<uint32_t>{0}, layout.before);
  EXPECT_NE(0u, layout.after[0]);
  EXPECT_NE(0u, layout.version_after);
  ASSERT_OK(apply(plain.bson(), R"({"a": 2})", &layout));
  EXPECT_FALSE(layout.known);
  EXPECT_THAT(apply(plain.bson(), R"({"$inc": {"_id": 1}})", &layout), test::StatusIs(ErrorCode::kImmutableField));
  EXPECT_FALSE(layout.known);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

#define UPDATE_CASES(suite, ...) \
  INSTANTIATE_TEST_SUITE_P(suite, UpdateCaseTest, ::testing::ValuesIn(std::vector<Case>{__VA_ARGS__}), CaseName)

constexpr ErrorCode kBadValue = ErrorCode::kBadValue;
constexpr ErrorCode kFailedToParse = ErrorCode::kFailedToParse;
constexpr ErrorCode kTypeMismatch = ErrorCode::kTypeMismatch;
constexpr ErrorCode kConflict = ErrorCode::kConflictingUpdateOperators;
constexpr ErrorCode kImmutable = ErrorCode::kImmutableField;
constexpr ErrorCode kNotViable = ErrorCode::kPathNotViable;

// Updates of existing top-level fields only ($set, $inc, $mul): the driver
// writes them by replacing each element in place.  Exact bytes and the
// layout are checked as for every case; debug builds also check each
// against the general path.
UPDATE_CASES(
    InPlace,
    Ok("SeveralOutOfOrderAroundTheVersion",
       R"({"_id": 1, "a": "x", "b": 1, "version": {"$numberLong": "3"}, "c": 2.5, "d": true})",
       R"({"$set": {"c": "a longer string", "a": "yy"}, "$inc": {"b": {"$numberLong": "5"}}})",
       R"({"_id": 1, "a": "yy", "b": {"$numberLong": "6"}, "version": {"$numberLong": "3"},)"
       R"( "c": "a longer string", "d": true})"),
    Ok("ShrinksBeforeTheVersion", R"({"_id": 1, "s": "a long string value", "version": 7, "t": 1})",
       R"({"$set": {"s": 1}})", R"({"_id": 1, "s": 1, "version": 7, "t": 1})"),
    Ok("LastField", R"({"_id": 1, "a": 1, "z": 1})", R"({"$set": {"z": {"$numberLong": "9"}}})",
       R"({"_id": 1, "a": 1, "z": {"$numberLong": "9"}})"),
    Ok("DocumentAndArrayValues", R"({"_id": 1, "a": 1, "b": [1], "c": 1})",
       R"({"$set": {"a": {"x": [1, {"y": 2}]}, "b": []}})", R"({"_id": 1, "a": {"x": [1, {"y": 2}]}, "b": [], "c": 1})"),
    Ok("SameValuesUnchanged", R"({"_id": 1, "a": "v", "b": 2, "c": 3})", R"({"$set": {"a": "v"}, "$inc": {"b": 0}})",
       "="),
    Ok("IncWidensMulNarrowsNothing", R"({"_id": 1, "i": 2147483647, "m": 3, "d": 1.5})",
       R"({"$inc": {"i": 1}, "$mul": {"m": 2, "d": {"$numberLong": "2"}}})",
       R"({"_id": 1, "i": {"$numberLong": "2147483648"}, "m": 6, "d": 3.0})"),
    Ok("DecimalIncrement", R"({"_id": 1, "n": {"$numberDecimal": "1.5"}})", R"({"$inc": {"n": 1}})",
       R"({"_id": 1, "n": {"$numberDecimal": "2.5"}})"),
    Ok("OneExistingOneMissing", R"({"_id": 1, "b": 1})", R"({"$set": {"b": 2, "a": 1}})",
       R"({"_id": 1, "b": 2, "a": 1})"),
    VersionField("meta.v", Ok("DottedVersionField", R"({"_id": 1, "meta": {"v": 1}, "a": 1})",
                              R"({"$set": {"a": 2}})", R"({"_id": 1, "meta": {"v": 1}, "a": 2})")),
    Err("IncOfAString", R"({"_id": 1, "a": "s"})", R"({"$inc": {"a": 1}})", kTypeMismatch),
    Err("IncOverflows", R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})", R"({"$inc": {"a": 1}})",
        ErrorCode::kBadValue),
    Err("SetOfTheId", R"({"_id": 1, "a": 1})", R"({"$set": {"_id": 2}})", kImmutable));

UPDATE_CASES(
    Set,
    Ok("Existing", R"({"_id": 1, "a": 1, "b": 2})", R"({"$set": {"a": 5}})", R"({"_id": 1, "a": 5, "b": 2})"),
    Ok("NewFieldAppended", R"({"_id": 1, "a": 1})", R"({"$set": {"c": 3}})", R"({"_id": 1, "a": 1, "c": 3})"),
    Ok("NewFieldsInLexicographicOrder", R"({"_id": 1})", R"({"$set": {"z": 1, "b": 2, "a": 3}})",
       R"({"_id": 1, "a": 3, "b": 2, "z": 1})"),
    Ok("NumericNamesInNumericOrder", R"({"_id": 1})", R"({"$set": {"10": 1, "9": 2, "a": 3}})",
       R"({"_id": 1, "9": 2, "10": 1, "a": 3})"),
    Ok("DottedCreatesDocuments", R"({"_id": 1})", R"({"$set": {"a.b.c": 1}})", R"({"_id": 1, "a": {"b": {"c": 1}}})"),
    Ok("DottedIntoExisting", R"({"_id": 1, "a": {"x": 1}})", R"({"$set": {"a.y": 2}})",
       R"({"_id": 1, "a": {"x": 1, "y": 2}})"),
    Ok("SiblingsUnderNewDocument", R"({"_id": 1})", R"({"$set": {"a.z": 1, "a.b": 2}})",
       R"({"_id": 1, "a": {"b": 2, "z": 1}})"),
    Ok("ArrayIndex", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$set": {"a.1": 9}})", R"({"_id": 1, "a": [1, 9, 3]})"),
    Ok("ArrayIndexAppends", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.1": 9}})", R"({"_id": 1, "a": [1, 9]})"),
    Ok("ArrayPadsWithNull", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.3": 9}})",
       R"({"_id": 1, "a": [1, null, null, 9]})"),
    Ok("ArrayPadThenDocument", R"({"_id": 1, "a": []})", R"({"$set": {"a.1.b": 1}})",
       R"({"_id": 1, "a": [null, {"b": 1}]})"),
    Ok("ArrayIndexesNumericOrder", R"({"_id": 1, "a": []})", R"({"$set": {"a.10": 1, "a.2": 2}})",
       R"({"_id": 1, "a": [null, null, 2, null, null, null, null, null, null, null, 1]})"),
    Ok("IntoArrayElementDocument", R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})", R"({"$set": {"a.1.c": 3}})",
       R"({"_id": 1, "a": [{"b": 1}, {"b": 2, "c": 3}]})"),
    Ok("NumericNameInDocument", R"({"_id": 1, "a": {"b": 1}})", R"({"$set": {"a.0": 5}})",
       R"({"_id": 1, "a": {"b": 1, "0": 5}})"),
    Ok("WholeSubdocument", R"({"_id": 1, "a": {"b": 1}, "z": 0})", R"({"$set": {"a": {"c": 2}}})",
       R"({"_id": 1, "a": {"c": 2}, "z": 0})"),
    Ok("SameValueIsByteIdentical", R"({"_id": 1, "a": 1, "b": {"c": [1, 2]}})", R"({"$set": {"a": 1, "b.c": [1, 2]}})",
       "="),
    Ok("SameNumberOtherTypeChangesType", R"({"_id": 1, "a": 1})", R"({"$set": {"a": 1.0}})", R"({"_id": 1, "a": 1.0})"),
    Ok("EmptySetIsNoop", R"({"_id": 1, "a": 1})", R"({"$set": {}})", "="),
    Ok("DottedAndDollarNamesInValuesAllowed", R"({"_id": 1})", R"({"$set": {"a": {"b.c": 1, "$d": 2}}})",
       R"({"_id": 1, "a": {"b.c": 1, "$d": 2}})"),
    Ok("NestedDollarNameAllowed", R"({"_id": 1})", R"({"$set": {"a.$x": 1}})", R"({"_id": 1, "a": {"$x": 1}})"),
    Err("TopLevelDollarName", R"({"_id": 1})", R"({"$set": {"$x": 1}})", ErrorCode::kDollarPrefixedFieldName),
    Err("ThroughScalar", R"({"_id": 1, "a": 5})", R"({"$set": {"a.b": 1}})", kNotViable),
    Err("NonNumericIntoArray", R"({"_id": 1, "a": [{"b": 1}]})", R"({"$set": {"a.b": 2}})", kNotViable),
    Err("EmptyPathComponent", R"({"_id": 1})", R"({"$set": {"a..b": 1}})", ErrorCode::kEmptyFieldName),
    Err("TrailingDot", R"({"_id": 1})", R"({"$set": {"a.": 1}})", ErrorCode::kEmptyFieldName),
    Err("EmptyPath", R"({"_id": 1})", R"({"$set": {"": 1}})", ErrorCode::kEmptyFieldName),
    Err("PaddingLimit", R"({"_id": 1, "a": []})", R"({"$set": {"a.1500001": 1}})", kBadValue));

UPDATE_CASES(
    Unset,
    Ok("Field", R"({"_id": 1, "a": 1, "b": 2})", R"({"$unset": {"a": ""}})", R"({"_id": 1, "b": 2})"),
    Ok("MissingIsNoop", R"({"_id": 1, "a": 1})", R"({"$unset": {"x": 1}})", "="),
    Ok("Nested", R"({"_id": 1, "a": {"b": 1, "c": 2}})", R"({"$unset": {"a.b": 1}})", R"({"_id": 1, "a": {"c": 2}})"),
    Ok("ArrayElementBecomesNull", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$unset": {"a.1": 1}})",
       R"({"_id": 1, "a": [1, null, 3]})"),
    Ok("ThroughScalarIsNoop", R"({"_id": 1, "a": 5})", R"({"$unset": {"a.b": 1}})", "="),
    Ok("ThroughArrayByNameIsNoop", R"({"_id": 1, "a": [{"b": 1}]})", R"({"$unset": {"a.b": 1}})", "="),
    Ok("PastArrayEndIsNoop", R"({"_id": 1, "a": [1]})", R"({"$unset": {"a.5": 1}})", "="),
    Ok("Several", R"({"_id": 1, "a": 1, "b": 2, "c": 3})", R"({"$unset": {"c": 1, "a": 1}})", R"({"_id": 1, "b": 2})"));

UPDATE_CASES(
    Inc,
    Ok("Int32", R"({"_id": 1, "a": 1})", R"({"$inc": {"a": 2}})", R"({"_id": 1, "a": 3})"),
    Ok("Missing", R"({"_id": 1})", R"({"$inc": {"a": 5}})", R"({"_id": 1, "a": 5})"),
    Ok("MissingNested", R"({"_id": 1})", R"({"$inc": {"a.b": -1}})", R"({"_id": 1, "a": {"b": -1}})"),
    Ok("Int32OverflowWidens", R"({"_id": 1, "a": 2147483647})", R"({"$inc": {"a": 1}})",
       R"({"_id": 1, "a": {"$numberLong": "2147483648"}})"),
    Ok("Int32UnderflowWidens", R"({"_id": 1, "a": -2147483648})", R"({"$inc": {"a": -1}})",
       R"({"_id": 1, "a": {"$numberLong": "-2147483649"}})"),
    Ok("Int32PlusInt64", R"({"_id": 1, "a": 1})", R"({"$inc": {"a": {"$numberLong": "2"}}})",
       R"({"_id": 1, "a": {"$numberLong": "3"}})"),
    Ok("IntPlusDouble", R"({"_id": 1, "a": 1})", R"({"$inc": {"a": 0.5}})", R"({"_id": 1, "a": 1.5})"),
    Ok("DoublePlusInt", R"({"_id": 1, "a": 1.5})", R"({"$inc": {"a": 1}})", R"({"_id": 1, "a": 2.5})"),
    Ok("ZeroIsNoop", R"({"_id": 1, "a": 5})", R"({"$inc": {"a": 0}})", "="),
    Ok("ArrayElement", R"({"_id": 1, "a": [1, 2]})", R"({"$inc": {"a.1": 10}})", R"({"_id": 1, "a": [1, 12]})"),
    Ok("DecimalOnMissingField", R"({"_id": 1})", R"({"$inc": {"a": {"$numberDecimal": "1.5"}}})",
       R"({"_id": 1, "a": {"$numberDecimal": "1.5"}})"),
    Err("Int64Overflow", R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})", R"({"$inc": {"a": 1}})",
        kBadValue),
    Err("NonNumericOperand", R"({"_id": 1, "a": 1})", R"({"$inc": {"a": "x"}})", kTypeMismatch),
    Err("NonNumericField", R"({"_id": 1, "a": "x"})", R"({"$inc": {"a": 1}})", kTypeMismatch),
    Err("NullField", R"({"_id": 1, "a": null})", R"({"$inc": {"a": 1}})", kTypeMismatch),
    Ok("DecimalArithmetic", R"({"_id": 1, "a": {"$numberDecimal": "1.5"}})", R"({"$inc": {"a": 1}})",
       R"({"_id": 1, "a": {"$numberDecimal": "2.5"}})"),
    Ok("DecimalPlusDouble", R"({"_id": 1, "a": {"$numberDecimal": "0.1"}})", R"({"$inc": {"a": 0.2}})",
       R"({"_id": 1, "a": {"$numberDecimal": "0.300000000000000"}})"),
    Ok("IntPlusDecimal", R"({"_id": 1, "a": 2})", R"({"$inc": {"a": {"$numberDecimal": "-0.50"}}})",
       R"({"_id": 1, "a": {"$numberDecimal": "1.50"}})"),
    Err("ThroughScalar", R"({"_id": 1, "a": 1})", R"({"$inc": {"a.b": 1}})", kNotViable));

UPDATE_CASES(
    Mul,
    Ok("Int32", R"({"_id": 1, "a": 3})", R"({"$mul": {"a": 4}})", R"({"_id": 1, "a": 12})"),
    Ok("ByDouble", R"({"_id": 1, "a": 2})", R"({"$mul": {"a": 1.5}})", R"({"_id": 1, "a": 3.0})"),
    Ok("MissingIsZeroInt", R"({"_id": 1})", R"({"$mul": {"a": 5}})", R"({"_id": 1, "a": 0})"),
    Ok("MissingIsZeroDouble", R"({"_id": 1})", R"({"$mul": {"a": 2.5}})", R"({"_id": 1, "a": 0.0})"),
    Ok("MissingIsZeroLong", R"({"_id": 1})", R"({"$mul": {"a": {"$numberLong": "5"}}})",
       R"({"_id": 1, "a": {"$numberLong": "0"}})"),
    Ok("Int32OverflowWidens", R"({"_id": 1, "a": 65536})", R"({"$mul": {"a": 65536}})",
       R"({"_id": 1, "a": {"$numberLong": "4294967296"}})"),
    Ok("ByOneIsNoop", R"({"_id": 1, "a": 7})", R"({"$mul": {"a": 1}})", "="),
    Err("Int64Overflow", R"({"_id": 1, "a": {"$numberLong": "4611686018427387904"}})", R"({"$mul": {"a": 4}})",
        kBadValue),
    Err("NonNumericOperand", R"({"_id": 1, "a": 1})", R"({"$mul": {"a": true}})", kTypeMismatch),
    Err("NonNumericField", R"({"_id": 1, "a": [1]})", R"({"$mul": {"a": 2}})", kTypeMismatch),
    Ok("DecimalOnMissing", R"({"_id": 1})", R"({"$mul": {"a": {"$numberDecimal": "2.50"}}})",
       R"({"_id": 1, "a": {"$numberDecimal": "0.00"}})"),
    Ok("Decimal", R"({"_id": 1, "a": {"$numberDecimal": "1.1"}})", R"({"$mul": {"a": {"$numberDecimal": "1.1"}}})",
       R"({"_id": 1, "a": {"$numberDecimal": "1.21"}})"),
    Ok("LongByDecimal", R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})",
       R"({"$mul": {"a": {"$numberDecimal": "10"}}})", R"({"_id": 1, "a": {"$numberDecimal": "92233720368547758070"}})"));

UPDATE_CASES(
    MinMax,
    Ok("MinLower", R"({"_id": 1, "a": 5})", R"({"$min": {"a": 3}})", R"({"_id": 1, "a": 3})"),
    Ok("MinHigherIsNoop", R"({"_id": 1, "a": 5})", R"({"$min": {"a": 7}})", "="),
    Ok("MinEqualOtherTypeIsNoop", R"({"_id": 1, "a": 5})", R"({"$min": {"a": 5.0}})", "="),
    Ok("MaxHigher", R"({"_id": 1, "a": 5})", R"({"$max": {"a": 7}})", R"({"_id": 1, "a": 7})"),
    Ok("MaxLowerIsNoop", R"({"_id": 1, "a": 5})", R"({"$max": {"a": 3}})", "="),
    Ok("MaxMissing", R"({"_id": 1})", R"({"$max": {"a.b": 3}})", R"({"_id": 1, "a": {"b": 3}})"),
    Ok("MinAcrossTypes", R"({"_id": 1, "a": "x"})", R"({"$min": {"a": 1}})", R"({"_id": 1, "a": 1})"),
    Ok("MaxOverNull", R"({"_id": 1, "a": null})", R"({"$max": {"a": 1}})", R"({"_id": 1, "a": 1})"),
    Ok("MaxDates", R"({"_id": 1, "d": {"$date": {"$numberLong": "1000"}}})",
       R"({"$max": {"d": {"$date": {"$numberLong": "2000"}}}})", R"({"_id": 1, "d": {"$date": {"$numberLong": "2000"}}})"));

UPDATE_CASES(
    Rename,
    Ok("ToNewField", R"({"_id": 1, "a": 1, "b": 2})", R"({"$rename": {"a": "c"}})", R"({"_id": 1, "b": 2, "c": 1})"),
    Ok("OverExistingKeepsItsPosition", R"({"_id": 1, "b": 2, "a": 1})", R"({"$rename": {"a": "b"}})",
       R"({"_id": 1, "b": 1})"),
    Ok("MissingSourceIsNoop", R"({"_id": 1, "a": 1})", R"({"$rename": {"x": "y"}})", "="),
    Ok("NestedSource", R"({"_id": 1, "a": {"b": 1, "c": 2}})", R"({"$rename": {"a.b": "d"}})",
       R"({"_id": 1, "a": {"c": 2}, "d": 1})"),
    Ok("NestedDestination", R"({"_id": 1, "a": 1})", R"({"$rename": {"a": "b.c"}})", R"({"_id": 1, "b": {"c": 1}})"),
    Ok("Subdocument", R"({"_id": 1, "a": {"x": [1, {"y": 2}]}, "z": 0})", R"({"$rename": {"a": "b"}})",
       R"({"_id": 1, "z": 0, "b": {"x": [1, {"y": 2}]}})"),
    Ok("TwoRenames", R"({"_id": 1, "a": 1, "b": 2})", R"({"$rename": {"a": "y", "b": "x"}})",
       R"({"_id": 1, "x": 2, "y": 1})"),
    Ok("ArraySourceValueAllowed", R"({"_id": 1, "a": [1, 2]})", R"({"$rename": {"a": "b"}})",
       R"({"_id": 1, "b": [1, 2]})"),
    Ok("MissingNestedSourceIsNoop", R"({"_id": 1, "a": {"b": 1}})", R"({"$rename": {"a.c": "d"}})", "="),
    Ok("WithinOneDocument", R"({"_id": 1, "a": {"b": 1, "z": 0}})", R"({"$rename": {"a.b": "a.c"}})",
       R"({"_id": 1, "a": {"z": 0, "c": 1}})"),
    Ok("BesideASet", R"({"_id": 1, "a": {"b": 1}})", R"({"$rename": {"a.b": "x.y"}, "$set": {"x.z": 2, "a.c": 3}})",
       R"({"_id": 1, "a": {"c": 3}, "x": {"y": 1, "z": 2}})"),
    Err("SamePath", R"({"_id": 1, "a": 1})", R"({"$rename": {"a": "a"}})", kBadValue),
    Err("IntoItself", R"({"_id": 1, "a": 1})", R"({"$rename": {"a": "a.b"}})", kBadValue),
    Err("OutOfItself", R"({"_id": 1, "a": {"b": 1}})", R"({"$rename": {"a.b": "a"}})", kBadValue),
    Err("TargetNotString", R"({"_id": 1, "a": 1})", R"({"$rename": {"a": 1}})", kBadValue),
    Err("SourceInArray", R"({"_id": 1, "a": [{"b": 1}]})", R"({"$rename": {"a.0.b": "c"}})", kBadValue),
    Err("DestinationInArray", R"({"_id": 1, "x": 1, "a": [{"b": 1}]})", R"({"$rename": {"x": "a.0.c"}})",
        kBadValue),
    Err("DestinationUnderArrayByName", R"({"_id": 1, "x": 1, "a": [1]})", R"({"$rename": {"x": "a.c"}})",
        kBadValue),
    Err("SourceThroughScalar", R"({"_id": 1, "a": 5})", R"({"$rename": {"a.b": "c"}})", kNotViable),
    Err("SourceThroughArrayByName", R"({"_id": 1, "a": [{"b": 1}]})", R"({"$rename": {"a.b": "c"}})", kNotViable),
    Err("DestinationThroughScalar", R"({"_id": 1, "a": 1, "b": 5})", R"({"$rename": {"a": "b.c"}})", kNotViable),
    Err("DynamicSource", R"({"_id": 1})", R"({"$rename": {"a.$": "b"}})", kBadValue),
    Err("DynamicDestination", R"({"_id": 1})", R"({"$rename": {"a": "b.$[]"}})", kBadValue),
    Err("ConflictAtDestination", R"({"_id": 1})", R"({"$rename": {"a": "b"}, "$set": {"b": 1}})", kConflict),
    Err("ConflictAtSource", R"({"_id": 1})", R"({"$rename": {"a": "b"}, "$set": {"a": 1}})", kConflict),
    Err("TopLevelDollarDestination", R"({"_id": 1, "a": 1})", R"({"$rename": {"a": "$b"}})",
        ErrorCode::kDollarPrefixedFieldName));

UPDATE_CASES(
    CurrentDate,
    Ok("True", R"({"_id": 1})", R"({"$currentDate": {"a": true}})",
       R"({"_id": 1, "a": {"$date": {"$numberLong": "1700000000123"}}})"),
    Ok("FalseIsADateToo", R"({"_id": 1, "a": 1})", R"({"$currentDate": {"a": false}})",
       R"({"_id": 1, "a": {"$date": {"$numberLong": "1700000000123"}}})"),
    Ok("Timestamp", R"({"_id": 1})", R"({"$currentDate": {"t": {"$type": "timestamp"}}})",
       R"({"_id": 1, "t": {"$timestamp": {"t": 1700000000, "i": 1}}})"),
    Err("NotABoolOrDocument", R"({"_id": 1})", R"({"$currentDate": {"a": "x"}})", kBadValue),
    Err("UnknownOption", R"({"_id": 1})", R"({"$currentDate": {"a": {"$type": "timestamp", "x": 1}}})", kBadValue),
    Err("MissingType", R"({"_id": 1})", R"({"$currentDate": {"a": {}}})", kBadValue));

UPDATE_CASES(
    SetOnInsert,
    Ok("IgnoredOnUpdate", R"({"_id": 1, "a": 1})", R"({"$setOnInsert": {"b": 2}})", "="),
    Ok("IgnoredOnUpdateWithSet", R"({"_id": 1, "a": 1})", R"({"$setOnInsert": {"b": 2}, "$set": {"a": 3}})",
       R"({"_id": 1, "a": 3})"),
    Insert(Ok("AppliedOnInsert", R"({"_id": 1})", R"({"$setOnInsert": {"b": 2}})", R"({"_id": 1, "b": 2})")),
    Insert(Ok("IdMovesFirstOnInsert", R"({"a": 1})", R"({"$set": {"b": 1}, "$setOnInsert": {"_id": 7}})",
              R"({"_id": 7, "a": 1, "b": 1})")),
    Insert(Ok("SeededIdMovesFirst", R"({"a": 1, "_id": 3})", R"({"$set": {"b": 1}})",
              R"({"_id": 3, "a": 1, "b": 1})")),
    Insert(Ok("OnlyVersionBumpStillMovesId", R"({"a": 1, "_id": 3})", R"({"$inc": {"version": 1}})",
              R"({"_id": 3, "a": 1})")),
    Insert(Err("ArrayIdOnInsert", R"({})", R"({"$setOnInsert": {"_id": [1]}})", ErrorCode::kInvalidIdField)),
    Insert(Err("SeededIdIsImmutable", R"({"_id": 5})", R"({"$set": {"_id": 6}})", kImmutable)),
    Err("ConflictWithSet", R"({"_id": 1})", R"({"$setOnInsert": {"a": 1}, "$set": {"a": 2}})", kConflict));

UPDATE_CASES(
    Push,
    Ok("Append", R"({"_id": 1, "a": [1]})", R"({"$push": {"a": 2}})", R"({"_id": 1, "a": [1, 2]})"),
    Ok("Missing", R"({"_id": 1})", R"({"$push": {"a": 2}})", R"({"_id": 1, "a": [2]})"),
    Ok("ArrayIsOneElement", R"({"_id": 1, "a": []})", R"({"$push": {"a": [1, 2]}})", R"({"_id": 1, "a": [[1, 2]]})"),
    Ok("DocumentWithoutEach", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"x": 1}}})",
       R"({"_id": 1, "a": [{"x": 1}]})"),
    Ok("Each", R"({"_id": 1, "a": [1]})", R"({"$push": {"a": {"$each": [2, 3]}}})", R"({"_id": 1, "a": [1, 2, 3]})"),
    Ok("EachEmptyIsNoop", R"({"_id": 1, "a": [1]})", R"({"$push": {"a": {"$each": []}}})", "="),
    Ok("EachNotFirst", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$slice": 1, "$each": [5, 6]}}})",
       R"({"_id": 1, "a": [5]})"),
    Ok("PositionZero", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [8, 9], "$position": 0}}})",
       R"({"_id": 1, "a": [8, 9, 1, 2]})"),
    Ok("PositionMiddle", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [9], "$position": 1}}})",
       R"({"_id": 1, "a": [1, 9, 2]})"),
    Ok("PositionNegative", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$push": {"a": {"$each": [9], "$position": -1}}})",
       R"({"_id": 1, "a": [1, 2, 9, 3]})"),
    Ok("PositionNegativePastFront", R"({"_id": 1, "a": [1, 2]})",
       R"({"$push": {"a": {"$each": [9], "$position": -10}}})", R"({"_id": 1, "a": [9, 1, 2]})"),
    Ok("PositionPastEnd", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [9], "$position": 10}}})",
       R"({"_id": 1, "a": [1, 2, 9]})"),
    Ok("PositionIntegralDouble", R"({"_id": 1, "a": [1, 2]})",
       R"({"$push": {"a": {"$each": [9], "$position": 1.0}}})", R"({"_id": 1, "a": [1, 9, 2]})"),
    Ok("SlicePositive", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [3, 4], "$slice": 3}}})",
       R"({"_id": 1, "a": [1, 2, 3]})"),
    Ok("SliceNegative", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [3, 4], "$slice": -2}}})",
       R"({"_id": 1, "a": [3, 4]})"),
    Ok("SliceZero", R"({"_id": 1, "a": [1, 2]})", R"({"$push": {"a": {"$each": [3], "$slice": 0}}})",
       R"({"_id": 1, "a": []})"),
    Ok("SliceWithEmptyEach", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$push": {"a": {"$each": [], "$slice": 1}}})",
       R"({"_id": 1, "a": [1]})"),
    Ok("SortAscending", R"({"_id": 1, "a": [3, 1]})", R"({"$push": {"a": {"$each": [2], "$sort": 1}}})",
       R"({"_id": 1, "a": [1, 2, 3]})"),
    Ok("SortDescending", R"({"_id": 1, "a": [3, 1]})", R"({"$push": {"a": {"$each": [2], "$sort": -1}}})",
       R"({"_id": 1, "a": [3, 2, 1]})"),
    Ok("SortMixedTypes", R"({"_id": 1, "a": ["b", 2, null]})", R"({"$push": {"a": {"$each": [1.5], "$sort": 1}}})",
       R"({"_id": 1, "a": [null, 1.5, 2, "b"]})"),
    Ok("SortByField", R"({"_id": 1, "a": [{"s": 2}, {"s": 1}]})",
       R"({"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": -1}}}})",
       R"({"_id": 1, "a": [{"s": 3}, {"s": 2}, {"s": 1}]})"),
    Ok("SortByFieldThenSlice", R"({"_id": 1, "a": [{"s": 2}, {"s": 1}]})",
       R"({"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": -1}, "$slice": 2}}})",
       R"({"_id": 1, "a": [{"s": 3}, {"s": 2}]})"),
    Ok("SortByDottedField", R"({"_id": 1, "a": [{"x": {"y": 2}}, {"x": {"y": 1}}]})",
       R"({"$push": {"a": {"$each": [], "$sort": {"x.y": 1}}}})",
       R"({"_id": 1, "a": [{"x": {"y": 1}}, {"x": {"y": 2}}]})"),
    Ok("SortMissingFieldFirst", R"({"_id": 1, "a": [{"s": 1}, {"t": 1}, 5]})",
       R"({"$push": {"a": {"$each": [], "$sort": {"s": 1}}}})", R"({"_id": 1, "a": [{"t": 1}, 5, {"s": 1}]})"),
    Ok("SortBySecondKey", R"({"_id": 1, "a": [{"s": 1, "t": 1}, {"s": 1, "t": 2}, {"s": 0, "t": 9}]})",
       R"({"$push": {"a": {"$each": [], "$sort": {"s": 1, "t": -1}}}})",
       R"({"_id": 1, "a": [{"s": 0, "t": 9}, {"s": 1, "t": 2}, {"s": 1, "t": 1}]})"),
    Ok("MissingWithModifiers", R"({"_id": 1})", R"({"$push": {"a": {"$each": [3, 1, 2], "$sort": 1, "$slice": 2}}})",
       R"({"_id": 1, "a": [1, 2]})"),
    Ok("Nested", R"({"_id": 1, "a": {"b": [1]}})", R"({"$push": {"a.b": 2}})", R"({"_id": 1, "a": {"b": [1, 2]}})"),
    Err("NotAnArray", R"({"_id": 1, "a": "x"})", R"({"$push": {"a": 1}})", kBadValue),
    Err("EachNotArray", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": 1}}})", kBadValue),
    Err("UnknownClause", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$foo": 1}}})", kBadValue),
    Err("SliceNotInteger", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$slice": "x"}}})",
        kBadValue),
    Err("SliceFractional", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$slice": 1.5}}})",
        kBadValue),
    Err("PositionFractional", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$position": 1.5}}})",
        kBadValue),
    Err("SortBadNumber", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$sort": 2}}})", kBadValue),
    Err("SortEmptyPattern", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$sort": {}}}})",
        kBadValue),
    Err("SortBadDirection", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$sort": {"s": 0}}}})",
        kBadValue),
    Err("SortEmptyPart", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$sort": {"s.": 1}}}})",
        kBadValue),
    Err("SortBadType", R"({"_id": 1, "a": []})", R"({"$push": {"a": {"$each": [1], "$sort": "x"}}})", kBadValue));

UPDATE_CASES(
    AddToSet,
    Ok("New", R"({"_id": 1, "a": [1, 2]})", R"({"$addToSet": {"a": 3}})", R"({"_id": 1, "a": [1, 2, 3]})"),
    Ok("PresentIsNoop", R"({"_id": 1, "a": [1, 2]})", R"({"$addToSet": {"a": 2}})", "="),
    Ok("NumbersByValue", R"({"_id": 1, "a": [1]})", R"({"$addToSet": {"a": 1.0}})", "="),
    Ok("EachDeduplicates", R"({"_id": 1, "a": [1]})", R"({"$addToSet": {"a": {"$each": [2, 2, 1, 3]}}})",
       R"({"_id": 1, "a": [1, 2, 3]})"),
    Ok("Missing", R"({"_id": 1})", R"({"$addToSet": {"a": {"$each": [1, 1, 2]}}})", R"({"_id": 1, "a": [1, 2]})"),
    Ok("DocumentFieldOrderMatters", R"({"_id": 1, "a": [{"x": 1, "y": 2}]})", R"({"$addToSet": {"a": {"y": 2, "x": 1}}})",
       R"({"_id": 1, "a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}]})"),
    Ok("SameDocumentIsNoop", R"({"_id": 1, "a": [{"x": 1, "y": 2}]})", R"({"$addToSet": {"a": {"x": 1, "y": 2}}})",
       "="),
    Ok("EachNotFirstIsAValue", R"({"_id": 1, "a": []})", R"({"$addToSet": {"a": {"b": 1, "$each": [1]}}})",
       R"({"_id": 1, "a": [{"b": 1, "$each": [1]}]})"),
    Ok("ArrayValue", R"({"_id": 1, "a": [[1]]})", R"({"$addToSet": {"a": [1, 2]}})",
       R"({"_id": 1, "a": [[1], [1, 2]]})"),
    Err("NotAnArray", R"({"_id": 1, "a": 1})", R"({"$addToSet": {"a": 1}})", kBadValue),
    Err("EachNotArray", R"({"_id": 1, "a": []})", R"({"$addToSet": {"a": {"$each": 1}}})", kTypeMismatch),
    Err("FieldsAfterEach", R"({"_id": 1, "a": []})", R"({"$addToSet": {"a": {"$each": [1], "b": 1}}})", kBadValue));

UPDATE_CASES(
    Pull,
    Ok("Value", R"({"_id": 1, "a": [1, 2, 1, 3]})", R"({"$pull": {"a": 1}})", R"({"_id": 1, "a": [2, 3]})"),
    Ok("AbsentIsNoop", R"({"_id": 1, "a": [1, 2]})", R"({"$pull": {"a": 5}})", "="),
    Ok("NumbersByValue", R"({"_id": 1, "a": [1, 2]})", R"({"$pull": {"a": 1.0}})", R"({"_id": 1, "a": [2]})"),
    Ok("ArrayValueExactly", R"({"_id": 1, "a": [[1, 2], [3], 1]})", R"({"$pull": {"a": [1, 2]}})",
       R"({"_id": 1, "a": [[3], 1]})"),
    Ok("MissingIsNoop", R"({"_id": 1})", R"({"$pull": {"a": 1}})", "="),
    Ok("EverythingPulled", R"({"_id": 1, "a": [1, 1]})", R"({"$pull": {"a": 1}})", R"({"_id": 1, "a": []})"),
    Err("NotAnArray", R"({"_id": 1, "a": 1})", R"({"$pull": {"a": 1}})", kBadValue),
    Err("ThroughScalar", R"({"_id": 1, "a": 5})", R"({"$pull": {"a.b": 1}})", kNotViable));

// Conditions use the query matcher (engine/query/matcher.h).
UPDATE_CASES(
    ConditionalPull,
    Ok("Comparison", R"({"_id": 1, "a": [1, 5, 6, 7]})", R"({"$pull": {"a": {"$gte": 6}}})",
       R"({"_id": 1, "a": [1, 5]})"),
    Ok("TwoComparisons", R"({"_id": 1, "a": [1, 5, 6, 7]})", R"({"$pull": {"a": {"$gt": 1, "$lt": 7}}})",
       R"({"_id": 1, "a": [1, 7]})"),
    Ok("In", R"({"_id": 1, "a": ["x", "y", "z"]})", R"({"$pull": {"a": {"$in": ["x", "z"]}}})",
       R"({"_id": 1, "a": ["y"]})"),
    Ok("Regex", R"({"_id": 1, "a": ["apple", "banana", "avocado"]})", R"({"$pull": {"a": {"$regex": "^a"}}})",
       R"({"_id": 1, "a": ["banana"]})"),
    Ok("NoMatchIsNoop", R"({"_id": 1, "a": [1, 2]})", R"({"$pull": {"a": {"$gt": 5}}})", "="),
    Ok("DocumentQuery", R"({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2}, 1]})", R"({"$pull": {"a": {"x": 1}}})",
       R"({"_id": 1, "a": [{"x": 2}, 1]})"),
    Ok("DocumentQueryWithOperator", R"({"_id": 1, "a": [{"s": 8, "i": "B"}, {"s": 9, "i": "A"}, {"s": 8, "i": "C"}]})",
       R"({"$pull": {"a": {"s": 8, "i": {"$in": ["B", "A"]}}}})",
       R"({"_id": 1, "a": [{"s": 9, "i": "A"}, {"s": 8, "i": "C"}]})"),
    Ok("DocumentQueryOnNestedArray", R"({"_id": 1, "a": [{"t": [1, 2]}, {"t": [3]}]})",
       R"({"$pull": {"a": {"t": 2}}})", R"({"_id": 1, "a": [{"t": [3]}]})"),
    Ok("EmptyDocumentPullsDocuments", R"({"_id": 1, "a": [{"x": 1}, 2, {}]})", R"({"$pull": {"a": {}}})",
       R"({"_id": 1, "a": [2]})"),
    Ok("ElemMatchOnArrays", R"({"_id": 1, "a": [[1, 2], [3, 4]]})", R"({"$pull": {"a": {"$elemMatch": {"$gt": 3}}}})",
       R"({"_id": 1, "a": [[1, 2]]})"),
    Ok("InEachElementOfAll", R"({"_id": 1, "a": [[1, 6], [7]]})", R"({"$pull": {"a.$[]": {"$gte": 6}}})",
       R"({"_id": 1, "a": [[1], []]})"),
    Err("BadOperator", R"({"_id": 1, "a": [1]})", R"({"$pull": {"a": {"x": {"$foo": 1}}}})", kBadValue));

UPDATE_CASES(
    PullAll,
    Ok("Values", R"({"_id": 1, "a": [1, 2, 3, 1]})", R"({"$pullAll": {"a": [1, 3]}})", R"({"_id": 1, "a": [2]})"),
    Ok("NoneIsNoop", R"({"_id": 1, "a": [1, 2]})", R"({"$pullAll": {"a": [5]}})", "="),
    Ok("Documents", R"({"_id": 1, "a": [{"x": 1}, {"x": 1, "y": 1}]})", R"({"$pullAll": {"a": [{"x": 1}]}})",
       R"({"_id": 1, "a": [{"x": 1, "y": 1}]})"),
    Ok("MissingIsNoop", R"({"_id": 1})", R"({"$pullAll": {"a": [1]}})", "="),
    Err("NotAnArrayArgument", R"({"_id": 1, "a": [1]})", R"({"$pullAll": {"a": 1}})", kBadValue),
    Err("NotAnArrayField", R"({"_id": 1, "a": "x"})", R"({"$pullAll": {"a": [1]}})", kBadValue));

UPDATE_CASES(
    Pop,
    Ok("Last", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$pop": {"a": 1}})", R"({"_id": 1, "a": [1, 2]})"),
    Ok("First", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$pop": {"a": -1}})", R"({"_id": 1, "a": [2, 3]})"),
    Ok("LongAndDouble", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$pop": {"a": -1.0}})", R"({"_id": 1, "a": [2, 3]})"),
    Ok("EmptyIsNoop", R"({"_id": 1, "a": []})", R"({"$pop": {"a": 1}})", "="),
    Ok("MissingIsNoop", R"({"_id": 1})", R"({"$pop": {"a": 1}})", "="),
    Err("NotAnArray", R"({"_id": 1, "a": 1})", R"({"$pop": {"a": 1}})", kTypeMismatch),
    Err("Two", R"({"_id": 1, "a": [1]})", R"({"$pop": {"a": 2}})", kFailedToParse),
    Err("NotANumber", R"({"_id": 1, "a": [1]})", R"({"$pop": {"a": "x"}})", kFailedToParse),
    Err("ThroughScalar", R"({"_id": 1, "a": 1})", R"({"$pop": {"a.b": 1}})", kNotViable));

UPDATE_CASES(
    Bit,
    Ok("And", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"and": 3}}})", R"({"_id": 1, "a": 1})"),
    Ok("Or", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"or": 3}}})", R"({"_id": 1, "a": 7})"),
    Ok("Xor", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"xor": 3}}})", R"({"_id": 1, "a": 6})"),
    Ok("Several", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"and": 4, "or": 2}}})", R"({"_id": 1, "a": 6})"),
    Ok("LongOperand", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"or": {"$numberLong": "8"}}}})",
       R"({"_id": 1, "a": {"$numberLong": "13"}})"),
    Ok("Missing", R"({"_id": 1})", R"({"$bit": {"a": {"or": 5}}})", R"({"_id": 1, "a": 5})"),
    Ok("OrZeroIsNoop", R"({"_id": 1, "a": 5})", R"({"$bit": {"a": {"or": 0}}})", "="),
    Err("NonIntegralField", R"({"_id": 1, "a": 1.5})", R"({"$bit": {"a": {"and": 1}}})", kBadValue),
    Err("UnknownOperation", R"({"_id": 1, "a": 1})", R"({"$bit": {"a": {"nand": 1}}})", kBadValue),
    Err("DoubleOperand", R"({"_id": 1, "a": 1})", R"({"$bit": {"a": {"and": 1.0}}})", kBadValue),
    Err("NotADocument", R"({"_id": 1, "a": 1})", R"({"$bit": {"a": 1}})", kBadValue),
    Err("NoOperation", R"({"_id": 1, "a": 1})", R"({"$bit": {"a": {}}})", kBadValue));

UPDATE_CASES(
    Positional,
    At(1, Ok("DocumentElement", R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})", R"({"$set": {"a.$.b": 5}})",
             R"({"_id": 1, "a": [{"b": 1}, {"b": 5}]})")),
    At(2, Ok("ScalarElement", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$inc": {"a.$": 10}})",
             R"({"_id": 1, "a": [1, 2, 13]})")),
    At(0, Ok("WithOtherIndex", R"({"_id": 1, "a": [0, 0]})", R"({"$set": {"a.$": 1, "a.1": 2}})",
             R"({"_id": 1, "a": [1, 2]})")),
    At(0, Ok("MergesWithSameIndexSubpaths", R"({"_id": 1, "a": [{"x": 0}]})", R"({"$set": {"a.$.y": 1, "a.0.z": 2}})",
             R"({"_id": 1, "a": [{"x": 0, "y": 1, "z": 2}]})")),
    At(3, Ok("PastTheEndPads", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$": 5}})",
             R"({"_id": 1, "a": [1, null, null, 5]})")),
    At(0, Ok("Unset", R"({"_id": 1, "a": [1, 2]})", R"({"$unset": {"a.$": 1}})", R"({"_id": 1, "a": [null, 2]})")),
    At(1, Ok("Push", R"({"_id": 1, "a": [{"t": []}, {"t": [1]}]})", R"({"$push": {"a.$.t": 2}})",
             R"({"_id": 1, "a": [{"t": []}, {"t": [1, 2]}]})")),
    Err("NoMatch", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$": 5}})", kBadValue),
    Err("First", R"({"_id": 1, "a": [1]})", R"({"$set": {"$.a": 5}})", kBadValue),
    Err("TwoPositionals", R"({"_id": 1, "a": [[1]]})", R"({"$set": {"a.$.$": 5}})", kBadValue),
    At(1, Err("ResolvesOntoAnotherPath", R"({"_id": 1, "a": [0, 0]})", R"({"$set": {"a.$": 1, "a.1": 2}})",
              kConflict)));

UPDATE_CASES(
    AllPositional,
    Ok("Scalars", R"({"_id": 1, "a": [1, 2, 3]})", R"({"$inc": {"a.$[]": 1}})", R"({"_id": 1, "a": [2, 3, 4]})"),
    Ok("Documents", R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})", R"({"$set": {"a.$[].c": 0}})",
       R"({"_id": 1, "a": [{"b": 1, "c": 0}, {"b": 2, "c": 0}]})"),
    Ok("TwoOperators", R"({"_id": 1, "a": [{}, {"y": 0}]})", R"({"$set": {"a.$[].y": 2, "a.$[].x": 1}})",
       R"({"_id": 1, "a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}]})"),
    Ok("Nested", R"({"_id": 1, "a": [[1, 2], [3]]})", R"({"$inc": {"a.$[].$[]": 1}})",
       R"({"_id": 1, "a": [[2, 3], [4]]})"),
    Ok("EmptyArrayIsNoop", R"({"_id": 1, "a": []})", R"({"$set": {"a.$[].b": 1}})", "="),
    Ok("UnderDocument", R"({"_id": 1, "d": {"a": [1, 1]}})", R"({"$set": {"d.a.$[]": 7}})",
       R"({"_id": 1, "d": {"a": [7, 7]}})"),
    Ok("IncCreatesInEach", R"({"_id": 1, "a": [{}, {"n": 1}]})", R"({"$inc": {"a.$[].n": 1}})",
       R"({"_id": 1, "a": [{"n": 1}, {"n": 2}]})"),
    Ok("PullFromEach", R"({"_id": 1, "a": [[1, 2], [2, 3]]})", R"({"$pull": {"a.$[]": 2}})",
       R"({"_id": 1, "a": [[1], [3]]})"),
    Err("Missing", R"({"_id": 1})", R"({"$set": {"a.$[]": 1}})", kBadValue),
    Err("NotAnArray", R"({"_id": 1, "a": 5})", R"({"$set": {"a.$[]": 1}})", kBadValue),
    Err("ScalarElements", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[].b": 1}})", kNotViable),
    Err("ConflictsWithIndex", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[]": 1, "a.0": 2}})", kConflict),
    Err("ConflictsWithSubpath", R"({"_id": 1, "a": [{}]})", R"({"$set": {"a.$[]": 1, "a.$[].b": 2}})", kConflict),
    Err("ArrayFiltersUnsupported", R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", kBadValue),
    Err("First", R"({"_id": 1, "a": [1]})", R"({"$set": {"$[]": 1}})", kBadValue));

UPDATE_CASES(
    VersionField,
    Ok("IncByOneIsAbsorbed", R"({"_id": 1, "version": 3, "a": 1})", R"({"$inc": {"version": 1}})", "="),
    Ok("IncByOneWithOtherOperators", R"({"_id": 1, "version": 3, "a": 1})",
       R"({"$inc": {"version": 1, "a": 1}})", R"({"_id": 1, "version": 3, "a": 2})"),
    Ok("IncByOneDouble", R"({"_id": 1, "version": 3})", R"({"$inc": {"version": 1.0}})", "="),
    Ok("IncByOneLong", R"({"_id": 1, "version": 3})", R"({"$inc": {"version": {"$numberLong": "1"}}})", "="),
    Ok("IncByOneDecimal", R"({"_id": 1, "version": 3})", R"({"$inc": {"version": {"$numberDecimal": "1.0"}}})",
       "="),
    Err("IncByTwo", R"({"_id": 1, "version": 3})", R"({"$inc": {"version": 2}})", kImmutable),
    Err("Set", R"({"_id": 1, "version": 3})", R"({"$set": {"version": 4}})", kImmutable),
    Err("SetSameValue", R"({"_id": 1, "version": 3})", R"({"$set": {"version": 3}})", kImmutable),
    Err("SetBelow", R"({"_id": 1, "version": 3})", R"({"$set": {"version.x": 1}})", kImmutable),
    Err("Unset", R"({"_id": 1, "version": 3})", R"({"$unset": {"version": 1}})", kImmutable),
    Err("RenameFrom", R"({"_id": 1, "version": 3})", R"({"$rename": {"version": "v"}})", kImmutable),
    Err("RenameTo", R"({"_id": 1, "version": 3, "a": 1})", R"({"$rename": {"a": "version"}})", kImmutable),
    Err("Mul", R"({"_id": 1, "version": 3})", R"({"$mul": {"version": 1}})", kImmutable),
    Err("Max", R"({"_id": 1, "version": 3})", R"({"$max": {"version": 9}})", kImmutable),
    Err("CurrentDate", R"({"_id": 1, "version": 3})", R"({"$currentDate": {"version": true}})", kImmutable),
    Err("SetOnInsert", R"({"_id": 1})", R"({"$setOnInsert": {"version": 0}})", kImmutable),
    Err("Push", R"({"_id": 1})", R"({"$push": {"version": 0}})", kImmutable),
    VersionField("rev", Ok("OtherNameLeavesVersionFree", R"({"_id": 1, "rev": 2, "version": 3})",
                           R"({"$set": {"version": 4}, "$inc": {"rev": 1}})", R"({"_id": 1, "rev": 2, "version": 4})")),
    VersionField("rev", Err("OtherNameIsGuarded", R"({"_id": 1, "rev": 2})", R"({"$set": {"rev": 4}})", kImmutable)),
    VersionField("meta.v", Err("DottedParentIsGuarded", R"({"_id": 1, "meta": {"v": 2}})",
                               R"({"$set": {"meta": {}}})", kImmutable)),
    VersionField("meta.v", Ok("DottedSiblingIsFree", R"({"_id": 1, "meta": {"v": 2}})",
                              R"({"$set": {"meta.x": 1}})", R"({"_id": 1, "meta": {"v": 2, "x": 1}})")),
    VersionField("meta.v", Ok("DottedIncByOne", R"({"_id": 1, "meta": {"v": 2}})", R"({"$inc": {"meta.v": 1}})",
                              "=")));

UPDATE_CASES(
    Id,
    Ok("SetSameValue", R"({"_id": 1, "a": 1})", R"({"$set": {"_id": 1, "a": 2}})", R"({"_id": 1, "a": 2})"),
    Ok("SetSameSubfield", R"({"_id": {"a": 1, "b": 2}})", R"({"$set": {"_id.b": 2}})", "="),
    Err("SetOtherValue", R"({"_id": 1})", R"({"$set": {"_id": 2}})", kImmutable),
    Err("SetSameNumberOtherType", R"({"_id": 1})", R"({"$set": {"_id": 1.0}})", kImmutable),
    Err("SetSubfield", R"({"_id": {"a": 1}})", R"({"$set": {"_id.a": 2}})", kImmutable),
    Err("AddSubfield", R"({"_id": {"a": 1}})", R"({"$set": {"_id.b": 2}})", kImmutable),
    Err("Unset", R"({"_id": 1})", R"({"$unset": {"_id": 1}})", kImmutable),
    Err("Inc", R"({"_id": 1})", R"({"$inc": {"_id": 1}})", kImmutable),
    Err("RenameAway", R"({"_id": 1})", R"({"$rename": {"_id": "x"}})", kImmutable),
    Err("RenameOnto", R"({"_id": 1, "x": 2})", R"({"$rename": {"x": "_id"}})", kImmutable),
    Insert(Ok("SetOnUpsertWithoutId", R"({"a": 1})", R"({"$set": {"_id": 5}})", R"({"_id": 5, "a": 1})")));

UPDATE_CASES(
    Conflicts,
    Err("SamePathTwoOperators", R"({"_id": 1})", R"({"$set": {"a": 1}, "$inc": {"a": 1}})", kConflict),
    Err("PathThenPrefix", R"({"_id": 1})", R"({"$set": {"a.b": 1, "a": 1}})", kConflict),
    Err("PrefixThenPath", R"({"_id": 1})", R"({"$set": {"a": 1}, "$unset": {"a.b.c": 1}})", kConflict),
    Err("SetAndPush", R"({"_id": 1})", R"({"$set": {"a.0": 1}, "$push": {"a": 1}})", kConflict),
    Ok("SiblingsDoNotConflict", R"({"_id": 1})", R"({"$set": {"a.b": 1}, "$inc": {"a.c": 1}})",
       R"({"_id": 1, "a": {"b": 1, "c": 1}})"),
    Ok("SharedPrefixNamesDoNotConflict", R"({"_id": 1})", R"({"$set": {"a": 1, "ab": 2}})",
       R"({"_id": 1, "a": 1, "ab": 2})"));

UPDATE_CASES(
    Parse,
    Err("UnknownModifier", R"({"_id": 1})", R"({"$foo": {"a": 1}})", kFailedToParse),
    Err("MixedOperatorAndField", R"({"_id": 1})", R"({"$set": {"a": 1}, "b": 2})", kFailedToParse),
    Err("OperatorArgumentNotDocument", R"({"_id": 1})", R"({"$set": 5})", kFailedToParse),
    Err("ReplacementWithOperator", R"({"_id": 1})", R"({"a": 1, "$set": {"b": 1}})",
        ErrorCode::kDollarPrefixedFieldName),
    Err("ReplacementWithArrayId", R"({"_id": 1})", R"({"_id": [1], "a": 1})", ErrorCode::kInvalidIdField));

UPDATE_CASES(
    Replacement,
    Ok("KeepsId", R"({"_id": 1, "a": 1})", R"({"b": 2})", R"({"_id": 1, "b": 2})"),
    Ok("IdMovesFirst", R"({"_id": 1, "a": 1})", R"({"b": 2, "_id": 1})", R"({"_id": 1, "b": 2})"),
    Ok("SameIdOtherTypeKeepsStoredId", R"({"_id": 1, "a": 1})", R"({"_id": 1.0, "a": 2})", R"({"_id": 1, "a": 2})"),
    Ok("EmptyReplacement", R"({"_id": 1, "a": 1})", R"({})", R"({"_id": 1})"),
    Ok("SameDocumentIsByteIdentical", R"({"_id": 1, "a": 1, "b": [1]})", R"({"a": 1, "b": [1]})", "="),
    Ok("NestedDollarFieldsAllowed", R"({"_id": 1})", R"({"a": {"$b": 1}})", R"({"_id": 1, "a": {"$b": 1}})"),
    Ok("VersionCarriedAtItsIndex", R"({"_id": 1, "version": 3, "a": 1})", R"({"a": 2})",
       R"({"_id": 1, "version": 3, "a": 2})"),
    Ok("VersionCarriedAtEnd", R"({"_id": 1, "a": 1, "version": 3})", R"({"a": 2, "b": 1})",
       R"({"_id": 1, "a": 2, "version": 3, "b": 1})"),
    Ok("VersionSameValueKeepsStoredBytes", R"({"_id": 1, "version": 3, "a": 1})", R"({"a": 2, "version": 3.0})",
       R"({"_id": 1, "a": 2, "version": 3})"),
    Ok("UnchangedWithVersionIsByteIdentical", R"({"_id": 1, "version": 3, "a": 1})", R"({"a": 1})", "="),
    Ok("NoVersionAnywhere", R"({"_id": 1, "a": 1})", R"({"b": 1})", R"({"_id": 1, "b": 1})"),
    Ok("ZeroVersionForUnversionedDocument", R"({"_id": 1, "a": 1})", R"({"b": 1, "version": 0})",
       R"({"_id": 1, "b": 1})"),
    Ok("ZeroTimestampFilled", R"({"_id": 1})", R"({"t": {"$timestamp": {"t": 0, "i": 0}}})",
       R"({"_id": 1, "t": {"$timestamp": {"t": 1700000000, "i": 1}}})"),
    Insert(Ok("UpsertTakesReplacementId", R"({"a": 1})", R"({"b": 2, "_id": 9})", R"({"_id": 9, "b": 2})")),
    Insert(Ok("UpsertWithoutId", R"({"a": 1})", R"({"b": 2})", R"({"b": 2})")),
    Err("OtherId", R"({"_id": 1, "a": 1})", R"({"_id": 2})", kImmutable),
    Err("OtherVersion", R"({"_id": 1, "version": 3})", R"({"version": 4})", kImmutable),
    Err("NonNumericVersion", R"({"_id": 1, "version": 3})", R"({"version": "3"})", kImmutable),
    Err("VersionForUnversionedDocument", R"({"_id": 1})", R"({"version": 1})", kImmutable));

UPDATE_CASES(
    FieldOrder,
    Ok("ExistingKeepPositionNewAppended", R"({"_id": 1, "a": 1, "b": 2, "c": 3})",
       R"({"$set": {"d": 0, "c": 0, "a": 0}})", R"({"_id": 1, "a": 0, "b": 2, "c": 0, "d": 0})"),
    Ok("NewPathsSortedAcrossOperators", R"({"_id": 1})", R"({"$set": {"b.y": 1, "c": 1}, "$inc": {"a": 1, "b.x": 1}})",
       R"({"_id": 1, "a": 1, "b": {"x": 1, "y": 1}, "c": 1})"),
    Ok("UnsetAndSet", R"({"_id": 1, "a": 1, "b": 1})", R"({"$unset": {"a": 1}, "$set": {"c": 1}})",
       R"({"_id": 1, "b": 1, "c": 1})"),
    Ok("UppercaseSortsFirst", R"({"_id": 1})", R"({"$set": {"b": 1, "B": 1, "a": 1}})",
       R"({"_id": 1, "B": 1, "a": 1, "b": 1})"),
    Ok("IdNotMovedOnUpdate", R"({"a": 1, "_id": 1})", R"({"$set": {"b": 1}})", R"({"a": 1, "_id": 1, "b": 1})"));

UPDATE_CASES(
    Noops,
    Ok("SetSame", R"({"_id": 1, "a": {"b": [1, {"c": 2}]}})", R"({"$set": {"a.b.1.c": 2}})", "="),
    Ok("UnsetMissing", R"({"_id": 1, "a": {"b": 1}})", R"({"$unset": {"a.c": 1, "x.y": 1}})", "="),
    Ok("PullAbsent", R"({"_id": 1, "a": [1, 2]})", R"({"$pull": {"a": 3}})", "="),
    Ok("AddToSetPresent", R"({"_id": 1, "a": [1, 2]})", R"({"$addToSet": {"a": {"$each": [2, 1]}}})", "="),
    Ok("MinNotLower", R"({"_id": 1, "a": 1})", R"({"$min": {"a": 2}})", "="),
    Ok("PopEmpty", R"({"_id": 1, "a": []})", R"({"$pop": {"a": -1}})", "="),
    Ok("RenameMissing", R"({"_id": 1, "a": 1})", R"({"$rename": {"b": "c"}})", "="),
    Ok("SetOnInsertOnUpdate", R"({"_id": 1, "a": 1})", R"({"$setOnInsert": {"a": 2}})", "="),
    Ok("MixedTypesPreserved",
       R"({"_id": {"$oid": "65a1b2c3d4e5f60718293a4b"}, "d": {"$date": {"$numberLong": "5"}}, "n": null, "x": {"$numberDecimal": "1.5"}, "b": {"$binary": {"base64": "AAEC", "subType": "04"}}, "r": {"$regularExpression": {"pattern": "a", "options": "i"}}, "m": {"$minKey": 1}})",
       R"({"$set": {"n": null}})", "="),
    Ok("LegacyTypesPreserved",
       R"j({"_id": 1, "b2": {"$binary": {"base64": "AAEC", "subType": "02"}}, "s": {"$symbol": "x"}, "u": {"$undefined": true}, "p": {"$dbPointer": {"$ref": "c", "$id": {"$oid": "65a1b2c3d4e5f60718293a4b"}}}, "cw": {"$code": "f()", "$scope": {"x": 1}}, "c": {"$code": "g()"}, "mx": {"$maxKey": 1}, "nan": {"$numberDouble": "NaN"}, "nz": -0.0})j",
       R"j({"$unset": {"zz": 1}, "$set": {"c": {"$code": "g()"}}})j", "="),
    Ok("UnchangedArrayExpanded", R"({"_id": 1, "a": [1, {"b": 2}, [3]]})", R"({"$addToSet": {"a": 1}})", "="));

// ---------------------------------------------------------------------------

Status ApplyJson(const std::string& doc_json, const std::string& update_json, Document* result,
                 const ApplyContext& ctx = ApplyContext()) {
  Document doc = test::Json(doc_json), update = test::Json(update_json);
  return RunUpdate(doc.bson(), update.bson(), ctx, result);
}

TEST(UpdateDriverTest, ReportsReplacementAndVersionBump) {
  UpdateOptions opts;
  Document u1 = test::Json(R"({"a": 1})");
  auto d1 = UpdateDriver::Parse(u1.bson(), opts);
  ASSERT_OK(d1);
  EXPECT_TRUE((*d1)->is_replacement());
  EXPECT_FALSE((*d1)->bumps_version());

  Document u2 = test::Json(R"({"$inc": {"version": 1}, "$set": {"a": 1}})");
  auto d2 = UpdateDriver::Parse(u2.bson(), opts);
  ASSERT_OK(d2);
  EXPECT_FALSE((*d2)->is_replacement());
  EXPECT_TRUE((*d2)->bumps_version());
  EXPECT_FALSE((*d2)->has_positional());

  Document u3 = test::Json(R"({"$set": {"a.$.b": 1}})");
  auto d3 = UpdateDriver::Parse(u3.bson(), opts);
  ASSERT_OK(d3);
  EXPECT_TRUE((*d3)->has_positional());
  EXPECT_FALSE((*d3)->bumps_version());

  Document empty;
  auto d4 = UpdateDriver::Parse(empty.bson(), opts);
  ASSERT_OK(d4);
  EXPECT_TRUE((*d4)->is_replacement());
}

TEST(UpdateDriverTest, MessagesFollowMongoDB) {
  Document result;
  struct {
    const char* doc;
    const char* update;
    const char* message;
  } cases[] = {
      {R"({"_id": 1})", R"({"$foo": {"a": 1}})",
       "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"},
      {R"({"_id": 1})", R"({"$set": {"a": 1, "a.b": 1}})",
       "Updating the path 'a.b' would create a conflict at 'a'"},
      {R"({"_id": 1})", R"({"$set": {"a.b": 1, "a": 1}})", "Updating the path 'a' would create a conflict at 'a'"},
      {R"({"_id": 1})", R"({"$inc": {"a": "x"}})", "Cannot increment with non-numeric argument: {a: \"x\"}"},
      {R"({"_id": 1, "a": "x"})", R"({"$inc": {"a": 1}})",
       "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"},
      {R"({"_id": 1, "x": "s"})", R"({"$push": {"x": 1}})",
       "The field 'x' must be an array but is of type string in document {_id: 1}"},
      {R"({"_id": 1, "a": 5})", R"({"$set": {"a.b": 1}})", "Cannot create field 'b' in element {a: 5}"},
      {R"({"_id": 1})", R"({"$set": {"_id": 2}})",
       "Performing an update on the path '_id' would modify the immutable field '_id'"},
      {R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$": 1}})",
       "The positional operator did not find the match needed from the query."},
      {R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})", R"({"$inc": {"a": 1}})",
       "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"},
      {R"({"_id": 1, "a": [1]})", R"({"$set": {"a.b": 1}})", "Cannot create field 'b' in element {a: [ 1 ]}"},
      {R"({"_id": 1, "a": {"b": {"c": 1}}})", R"({"$pop": {"a.b.c.d": 1}})",
       "Cannot use the part (d of a.b.c.d) to traverse the element ({c: 1})"},
  };
  for (const auto& c : cases) {
    Status s = ApplyJson(c.doc, c.update, &result);
    EXPECT_EQ(c.message, s.reason()) << c.update;
  }
  Status s = ApplyJson(R"({"_id": 1, "version": 1})", R"({"$set": {"version": 2}})", &result);
  EXPECT_EQ(0u, s.reason().find("the version field 'version' is owned by the store; ")) << s.reason();
}

TEST(UpdateDriverTest, DoesNotModifyInputAndReusesDriver) {
  UpdateOptions opts;
  Document update = test::Json(R"({"$inc": {"n": 1}, "$push": {"l": {"$each": [1], "$slice": -2}}})");
  auto driver = UpdateDriver::Parse(update.bson(), opts);
  ASSERT_OK(driver);
  update = Document();  // the driver owns what it needs
  Document doc = test::Json(R"({"_id": 1, "n": 0, "l": []})");
  Document before = doc;
  ApplyContext ctx;
  for (int i = 1; i <= 3; ++i) {
    bson_t out = BSON_INITIALIZER;
    ASSERT_OK((*driver)->Apply(doc.bson(), ctx, &out));
    EXPECT_TRUE(BinaryEqual(before.view(), doc.view()));
    doc = Document::Copy(&out);
    before = doc;
    bson_destroy(&out);
  }
  EXPECT_TRUE(BinaryEqual(test::Json(R"({"_id": 1, "n": 3, "l": [1, 1]})").view(), doc.view()))
      << doc.ToJson();
}

// A stored regular expression whose options are unsorted or unknown ("mi",
// " ") keeps its bytes when an update writes other fields, at the top and
// inside an expanded subdocument (libbson's append would sort and filter
// them: found by fuzz_update_apply).
TEST(UpdateDriverTest, UnwrittenRegexKeepsItsOptionBytes) {
  auto regex_doc = [](const char* options) {
    bson_t* d = bson_new();
    BSON_APPEND_INT32(d, "_id", 1);
    // Raw element: bson_append_regex would normalize `options` itself.
    bson_value_t v{};
    v.value_type = BSON_TYPE_REGEX;
    v.value.v_regex.regex = const_cast<char*>("a.c");
    v.value.v_regex.options = const_cast<char*>(options);
    EXPECT_TRUE(AppendValueVerbatim(d, "r", 1, &v));
    bson_t sub;
    BSON_APPEND_DOCUMENT_BEGIN(d, "s", &sub);
    EXPECT_TRUE(AppendValueVerbatim(&sub, "r", 1, &v));
    BSON_APPEND_INT32(&sub, "n", 0);
    bson_append_document_end(d, &sub);
    return Document::Adopt(d);
  };
  for (const char* options : {"mi", " ", "xsmi"}) {
    Document doc = regex_doc(options);
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, doc.bson(), "r"));
    const char* stored = nullptr;
    bson_iter_regex(&it, &stored);
    ASSERT_STREQ(options, stored);  // the fixture holds the raw bytes
    UpdateOptions opts;
    auto driver = UpdateDriver::Parse(test::Json(R"({"$set": {"x": 1}, "$inc": {"s.n": 1}})").bson(), opts);
    ASSERT_OK(driver);
    bson_t out = BSON_INITIALIZER;
    ASSERT_OK((*driver)->Apply(doc.bson(), ApplyContext(), &out));
    std::vector<std::string> changed;
    DiffPaths(doc.bson(), &out, "version", &changed);
    EXPECT_EQ(std::vector<std::string>({"s.n", "x"}), changed) << options;
    bson_destroy(&out);
  }
}

// JavaScript code (with and without scope) and a DBPointer whose strings
// hold a NUL byte keep every byte when an update writes other fields
// (libbson's append measures them with strlen: found by fuzz_update_apply
// in CI, tests/fuzz/crashes/fuzz_update_apply-code-with-nul.bin).
TEST(UpdateDriverTest, UnwrittenCodeWithANulKeepsItsBytes) {
  static const char kCode[] = "a\0b";  // 3 bytes
  bson_t* d = bson_new();
  BSON_APPEND_INT32(d, "_id", 1);
  bson_value_t code{};
  code.value_type = BSON_TYPE_CODE;
  code.value.v_code.code = const_cast<char*>(kCode);
  code.value.v_code.code_len = 3;
  ASSERT_TRUE(AppendValueVerbatim(d, "c", 1, &code));
  bson_t scope = BSON_INITIALIZER;
  BSON_APPEND_INT32(&scope, "x", 1);
  bson_value_t cws{};
  cws.value_type = BSON_TYPE_CODEWSCOPE;
  cws.value.v_codewscope.code = const_cast<char*>(kCode);
  cws.value.v_codewscope.code_len = 3;
  cws.value.v_codewscope.scope_data = const_cast<uint8_t*>(bson_get_data(&scope));
  cws.value.v_codewscope.scope_len = scope.len;
  ASSERT_TRUE(AppendValueVerbatim(d, "w", 1, &cws));
  bson_value_t ptr{};
  ptr.value_type = BSON_TYPE_DBPOINTER;
  ptr.value.v_dbpointer.collection = const_cast<char*>(kCode);
  ptr.value.v_dbpointer.collection_len = 3;
  bson_oid_init_from_string(&ptr.value.v_dbpointer.oid, "0123456789abcdef01234567");
  ASSERT_TRUE(AppendValueVerbatim(d, "p", 1, &ptr));
  Document doc = Document::Adopt(d);
  bson_destroy(&scope);
  bson_iter_t it;
  uint32_t len = 0;
  ASSERT_TRUE(bson_iter_init_find(&it, doc.bson(), "c"));
  bson_iter_code(&it, &len);
  ASSERT_EQ(len, 3u);  // the fixture holds the raw bytes
  UpdateOptions opts;
  auto driver = UpdateDriver::Parse(test::Json(R"({"$inc": {"n": 2}})").bson(), opts);
  ASSERT_OK(driver);
  bson_t out = BSON_INITIALIZER;
  ASSERT_OK((*driver)->Apply(doc.bson(), ApplyContext(), &out));
  std::vector<std::string> changed;
  DiffPaths(doc.bson(), &out, "version", &changed);
  EXPECT_EQ(std::vector<std::string>({"n"}), changed);
  ASSERT_TRUE(bson_iter_init_find(&it, &out, "c"));
  const char* got = bson_iter_code(&it, &len);
  EXPECT_EQ(std::string(got, len), std::string(kCode, 3));
  ASSERT_TRUE(bson_iter_init_find(&it, &out, "p"));
  const char* coll = nullptr;
  const bson_oid_t* oid = nullptr;
  bson_iter_dbpointer(&it, &len, &coll, &oid);
  EXPECT_EQ(std::string(coll, len), std::string(kCode, 3));
  bson_destroy(&out);
}

TEST(UpdateDriverTest, CurrentDateTypeDate) {
  // libbson's JSON reader takes {"$type": "date"} for legacy binary, so
  // build the update by hand.
  bson_t update = BSON_INITIALIZER, fields, spec;
  bson_append_document_begin(&update, "$currentDate", -1, &fields);
  bson_append_document_begin(&fields, "d", -1, &spec);
  bson_append_utf8(&spec, "$type", -1, "date", -1);
  bson_append_document_end(&fields, &spec);
  bson_append_document_end(&update, &fields);
  Document doc = test::Json(R"({"_id": 1})");
  ApplyContext ctx;
  ctx.now_millis = kNow;
  Document result;
  ASSERT_OK(RunUpdate(doc.bson(), &update, ctx, &result));
  EXPECT_TRUE(BinaryEqual(test::Json(R"({"_id": 1, "d": {"$date": {"$numberLong": "1700000000123"}}})").view(),
                          result.view()))
      << result.ToJson();
  bson_destroy(&update);

  bson_t bad = BSON_INITIALIZER;
  bson_append_document_begin(&bad, "$currentDate", -1, &fields);
  bson_append_document_begin(&fields, "d", -1, &spec);
  bson_append_utf8(&spec, "$type", -1, "year", -1);
  bson_append_document_end(&fields, &spec);
  bson_append_document_end(&bad, &fields);
  EXPECT_THAT(RunUpdate(doc.bson(), &bad, ctx, &result), test::StatusIs(ErrorCode::kBadValue));
  bson_destroy(&bad);
}

std::string NestedPath(int parts) {
  std::string path = "a";
  for (int i = 1; i < parts; ++i) path += ".a";
  return path;
}

// Appends key: {a: {a: ... 1}} with `docs` nested documents (libbson's JSON
// reader stops at 98 levels, so deep documents are built by hand).
void AppendNested(bson_t* parent, const char* key, int docs) {
  if (docs == 0) {
    bson_append_int32(parent, key, -1, 1);
    return;
  }
  bson_t child;
  bson_append_document_begin(parent, key, -1, &child);
  AppendNested(&child, "a", docs - 1);
  bson_append_document_end(parent, &child);
}

Status SetNested(const char* path, int docs, Document* result, const char* doc_json = R"({"_id": 1})") {
  bson_t update = BSON_INITIALIZER, set;
  bson_append_document_begin(&update, "$set", -1, &set);
  AppendNested(&set, path, docs);
  bson_append_document_end(&update, &set);
  Document doc = test::Json(doc_json);
  Status s = RunUpdate(doc.bson(), &update, ApplyContext(), result);
  bson_destroy(&update);
  return s;
}

TEST(UpdateDriverTest, NestingLimit) {
  Document result;
  // A field at depth 100 is allowed, at 101 it is not.
  ASSERT_OK(ApplyJson(R"({"_id": 1})", R"({"$set": {")" + NestedPath(100) + R"(": 1}})", &result));
  EXPECT_THAT(ApplyJson(R"({"_id": 1})", R"({"$set": {")" + NestedPath(101) + R"(": 1}})", &result),
              test::StatusIs(ErrorCode::kOverflow));
  // The same through a value: x at depth 1 holding 99 more levels.
  ASSERT_OK(SetNested("x", 99, &result));
  EXPECT_THAT(SetNested("x.y", 99, &result), test::StatusIs(ErrorCode::kOverflow));
  EXPECT_THAT(SetNested("x", 100, &result), test::StatusIs(ErrorCode::kOverflow));
  // Also where x exists (the update changes it in place).
  ASSERT_OK(SetNested("x", 99, &result, R"({"_id": 1, "x": 1, "y": 2})"));
  EXPECT_THAT(SetNested("x", 100, &result, R"({"_id": 1, "x": 1, "y": 2})"), test::StatusIs(ErrorCode::kOverflow));
  // A replacement that deep fails at parse time.
  bson_t replacement = BSON_INITIALIZER;
  AppendNested(&replacement, "x", 100);
  Document doc = test::Json(R"({"_id": 1})");
  EXPECT_THAT(RunUpdate(doc.bson(), &replacement, ApplyContext(), &result), test::StatusIs(ErrorCode::kOverflow));
  bson_destroy(&replacement);
  // Absurd paths are refused before any work.
  EXPECT_THAT(ApplyJson(R"({"_id": 1})", R"({"$unset": {")" + NestedPath(300) + R"(": 1}})", &result),
              test::StatusIs(ErrorCode::kOverflow));
}

TEST(UpdateDriverTest, ResultSizeLimit) {
  std::string big(9 * 1024 * 1024, 'x');
  bson_t doc = BSON_INITIALIZER;
  bson_append_int32(&doc, "_id", -1, 1);
  bson_append_utf8(&doc, "a", -1, big.data(), static_cast<int>(big.size()));
  bson_t update = BSON_INITIALIZER, set;
  bson_append_document_begin(&update, "$set", -1, &set);
  bson_append_utf8(&set, "b", -1, big.data(), static_cast<int>(big.size()));
  bson_append_document_end(&update, &set);
  Document result;
  EXPECT_THAT(RunUpdate(&doc, &update, ApplyContext(), &result), test::StatusIs(ErrorCode::kBSONObjectTooLarge));
  bson_destroy(&update);

  // A replacement too.
  bson_t replacement = BSON_INITIALIZER;
  bson_append_utf8(&replacement, "b", -1, big.data(), static_cast<int>(big.size()));
  bson_append_utf8(&replacement, "c", -1, big.data(), static_cast<int>(big.size()));
  EXPECT_THAT(RunUpdate(&doc, &replacement, ApplyContext(), &result),
              test::StatusIs(ErrorCode::kBSONObjectTooLarge));
  bson_destroy(&replacement);
  bson_destroy(&doc);
}

TEST(UpdateDriverTest, ReplacementTopLevelDBRefAllowed) {
  Document result;
  ASSERT_OK(ApplyJson(R"({"_id": 1})", R"({"a": 1, "$ref": "c", "$id": 2})", &result));
  EXPECT_TRUE(BinaryEqual(test::Json(R"({"_id": 1, "a": 1, "$ref": "c", "$id": 2})").view(), result.view()));
  EXPECT_THAT(ApplyJson(R"({"_id": 1})", R"({"a": 1, "$id": 2})", &result),
              test::StatusIs(ErrorCode::kDollarPrefixedFieldName));
}

TEST(UpdateDriverTest, EmptyDocumentTarget) {
  Document result;
  ApplyContext ctx;
  ctx.is_upsert_insert = true;
  ASSERT_OK(ApplyJson(R"({})", R"({"$set": {"a.b": 1}, "$push": {"l": 1}})", &result, ctx));
  EXPECT_TRUE(BinaryEqual(test::Json(R"({"a": {"b": 1}, "l": [1]})").view(), result.view())) << result.ToJson();
}

}  // namespace
}  // namespace update
}  // namespace gatedb
