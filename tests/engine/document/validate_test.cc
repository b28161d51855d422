#include "engine/document/validate.h"

#include <cstring>
#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::StatusIs;

// ValidateForStorage, checked against the overload that also summarizes
// the top level: every case below holds for both.
Status Validate(const std::string& json) {
  Document d = test::Json(json);
  Status plain = ValidateForStorage(d.bson());
  TopLevelSummary summary;
  Status with_summary = ValidateForStorage(d.bson(), "_v", &summary);
  EXPECT_EQ(plain, with_summary) << json;
  return plain;
}

std::vector<uint8_t> Bytes(const bson_t* b) {
  const uint8_t* data = bson_get_data(b);
  return std::vector<uint8_t>(data, data + b->len);
}

Status Incoming(const std::vector<uint8_t>& bytes) {
  return ValidateIncoming(bytes.data(), bytes.size());
}

// Raw bytes of {a: {a: ... {a: <leaf>}}}, whose deepest field is at `depth`
// (top-level fields are at depth 1).  With `empty_leaf` the innermost value
// is {} rather than 1, which adds a container but no deeper field.
// Built directly as bytes so that very deep documents are cheap.
std::vector<uint8_t> NestedBytes(int depth, bool use_arrays, bool empty_leaf) {
  // Each container level: int32 len, then elements, then 0x00.
  // Innermost document: {a: 1} = len(4) + [0x10 'a' 0x00 int32] + 0x00 = 12
  // bytes, or {a: {}} = len(4) + [0x03 'a' 0x00 {5 bytes}] + 0x00 = 13 bytes.
  // Arrays use the key "0" instead of "a".
  const char key = use_arrays ? '0' : 'a';
  const uint8_t container = use_arrays ? 0x04 : 0x03;
  std::vector<uint8_t> inner;
  auto put32 = [](std::vector<uint8_t>* v, size_t at, uint32_t x) {
    for (int i = 0; i < 4; ++i) (*v)[at + i] = static_cast<uint8_t>(x >> (8 * i));
  };
  if (empty_leaf) {
    inner = {0, 0, 0, 0, container, static_cast<uint8_t>(key), 0, 5, 0, 0, 0, 0, 0};
  } else {
    inner = {0, 0, 0, 0, 0x10, static_cast<uint8_t>(key), 0, 1, 0, 0, 0, 0};
  }
  put32(&inner, 0, static_cast<uint32_t>(inner.size()));
  // Levels above the innermost one: `depth - 1` of them.  The top level is a
  // document, the rest are `container`s.
  const size_t levels = static_cast<size_t>(depth - 1);
  const size_t total = inner.size() + levels * 8;
  std::vector<uint8_t> out(total, 0);
  for (size_t level = 0; level < levels; ++level) {
    size_t at = level * 7;  // 7 prefix bytes per outer level
    put32(&out, at, static_cast<uint32_t>(total - level * 8));
    out[at + 4] = container;
    out[at + 5] = static_cast<uint8_t>(key);
    out[at + 6] = 0;
  }
  std::memcpy(out.data() + levels * 7, inner.data(), inner.size());
  // The remaining `levels` bytes are the outer terminators, already 0.
  return out;
}

Status ValidateBytesForStorage(const std::vector<uint8_t>& bytes) {
  bson_t b;
  EXPECT_TRUE(bson_init_static(&b, bytes.data(), bytes.size()));
  return ValidateForStorage(&b);
}

// ---------------------------------------------------------------------------
// ValidateForStorage

TEST(ValidateForStorageTest, AcceptsOrdinaryDocuments) {
  EXPECT_OK(Validate(R"({"_id": 1, "a": "x", "b": {"c": [1, 2, {"d": null}]}})"));
  EXPECT_OK(Validate(R"({"a": 1})"));  // no _id: EnsureId adds one
  EXPECT_OK(Validate(R"({})"));
  EXPECT_OK(Validate(R"({"_id": {"a": 1, "b": {"c": 2}}})"));
  EXPECT_OK(Validate(R"({"_id": {"$oid": "0102030405060708090a0b0c"}})"));
  EXPECT_OK(Validate(R"({"_id": null})"));
  EXPECT_OK(Validate(R"({"_id": {"$minKey": 1}})"));
  // As in MongoDB 5.0+: '$' and '.' are fine below the top level.
  EXPECT_OK(Validate(R"({"_id": 1, "a": {"$x": 1, "y.z": 2}})"));
  EXPECT_OK(Validate(R"({"_id": 1, "a.b": 1})"));
  // Empty names are refused at the top level only (the issue's rule).
  EXPECT_OK(Validate(R"({"a": {"": 2}})"));
  EXPECT_THAT(Validate(R"({"": 1})"), StatusIs(ErrorCode::kEmptyFieldName));
  // A DBRef is allowed inside _id.
  EXPECT_OK(Validate(R"({"_id": {"$ref": "c", "$id": 1}})"));
  EXPECT_OK(Validate(R"({"_id": {"$ref": "c", "$id": {"$x": 1}, "$db": "d", "n": 1}})"));
}

TEST(ValidateForStorageTest, SummaryNamesWhatTheTopLevelHolds) {
  using Probe = TopLevelSummary::Probe;
  TopLevelSummary s;
  Document d = test::Json(R"({"_id": 1, "a": {"b": 2}, "_v": {"$numberLong": "3"}, "c": [1], "_v": "x"})");
  ASSERT_OK(ValidateForStorage(d.bson(), "_v", &s));
  EXPECT_TRUE(s.id_first);
  EXPECT_EQ(s.probe, Probe::kInt64);  // the first of the two counts
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, d.bson(), "_v"));
  EXPECT_EQ(s.probe_offset, bson_iter_offset(&it));
  EXPECT_EQ(s.rest, (std::vector<std::string>{"a", "c"}));

  d = test::Json(R"({"a": 1, "_id": 2, "version": 1.5})");
  ASSERT_OK(ValidateForStorage(d.bson(), "version", &s));
  EXPECT_FALSE(s.id_first);
  EXPECT_EQ(s.probe, Probe::kOther);
  EXPECT_EQ(s.rest, (std::vector<std::string>{"a"}));

  d = test::Json(R"({"a": 1, "_vv": 2, "_": 3})");
  ASSERT_OK(ValidateForStorage(d.bson(), "_v", &s));
  EXPECT_FALSE(s.id_first);
  EXPECT_EQ(s.probe, Probe::kAbsent);
  EXPECT_EQ(s.rest, (std::vector<std::string>{"a", "_vv", "_"}));

  d = test::Json("{}");
  ASSERT_OK(ValidateForStorage(d.bson(), "_v", &s));
  EXPECT_FALSE(s.id_first);
  EXPECT_TRUE(s.rest.empty());
}

TEST(ValidateForStorageTest, RejectsTopLevelDollarFields) {
  EXPECT_THAT(Validate(R"({"$set": {"a": 1}})"), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  Status s = Validate(R"({"_id": 1, "$a": 1})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_NE(s.reason().find("$a"), std::string::npos) << s.reason();
  // No DBRef exception at the top level.
  EXPECT_THAT(Validate(R"({"$ref": "c", "$id": 1})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
}

TEST(ValidateForStorageTest, RejectsBadIdTypes) {
  Status s = Validate(R"({"_id": [1, 2]})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kInvalidIdField));
  EXPECT_EQ(s.reason(), "The '_id' value cannot be of type array");
  EXPECT_THAT(Validate(R"({"_id": []})"), StatusIs(ErrorCode::kInvalidIdField));
  s = Validate(R"({"a": 1, "_id": {"$regularExpression": {"pattern": "a", "options": ""}}})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kInvalidIdField));
  EXPECT_EQ(s.reason(), "The '_id' value cannot be of type regex");
  s = Validate(R"({"_id": {"$undefined": true}})");
  EXPECT_THAT(s, StatusIs(ErrorCode::kInvalidIdField));
  EXPECT_EQ(s.reason(), "The '_id' value cannot be of type undefined");
  // Only the top-level _id is special.
  EXPECT_OK(Validate(R"({"_id": 1, "a": {"_id": [1]}})"));
}

TEST(ValidateForStorageTest, RejectsDollarFieldsInsideId) {
  EXPECT_THAT(Validate(R"({"_id": {"$gt": 1}})"), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"a": {"$x": 1}}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"a": [{"b": 1}, {"$x": 1}]}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
  // Malformed DBRefs.
  EXPECT_THAT(Validate(R"({"_id": {"$ref": 1, "$id": 1}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"$id": 1}})"), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"$ref": "c"}})"), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"a": 1, "$ref": "c", "$id": 1}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"$ref": "c", "$id": 1, "$db": 5}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_THAT(Validate(R"({"_id": {"$ref": "c", "$id": 1, "n": {"$x": 1}}})"),
              StatusIs(ErrorCode::kDollarPrefixedFieldName));
}

TEST(ValidateForStorageTest, RejectsDuplicateIds) {
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  BSON_APPEND_INT32(b, "a", 2);
  BSON_APPEND_INT32(b, "_id", 3);
  Document d = Document::Adopt(b);
  EXPECT_THAT(ValidateForStorage(d.bson()), StatusIs(ErrorCode::kBadValue));
}

TEST(ValidateForStorageTest, NestingDepthLimitIs100) {
  for (bool arrays : {false, true}) {
    SCOPED_TRACE(arrays ? "arrays" : "documents");
    EXPECT_OK(ValidateBytesForStorage(NestedBytes(1, arrays, false)));
    EXPECT_OK(ValidateBytesForStorage(NestedBytes(100, arrays, false)));
    Status s = ValidateBytesForStorage(NestedBytes(101, arrays, false));
    EXPECT_THAT(s, StatusIs(ErrorCode::kOverflow));
    EXPECT_EQ(s.reason(), "Document exceeds maximum nesting depth of 100");
    // An empty innermost container holds no field, so it is not deeper.
    EXPECT_OK(ValidateBytesForStorage(NestedBytes(100, arrays, true)));
    EXPECT_THAT(ValidateBytesForStorage(NestedBytes(101, arrays, true)),
                StatusIs(ErrorCode::kOverflow));
  }
  // The builder makes what it says: {a: {a: 1}} has depth 2.
  std::vector<uint8_t> two = NestedBytes(2, false, false);
  bson_t b;
  ASSERT_TRUE(bson_init_static(&b, two.data(), two.size()));
  EXPECT_EQ(test::ToJson(&b), test::ToJson(test::Json(R"({"a": {"a": 1}})").bson()));
}

TEST(ValidateForStorageTest, VeryDeepDocumentFailsWithoutRecursing) {
  // 200000 levels would overflow the stack of a recursive validator.
  std::vector<uint8_t> deep = NestedBytes(200000, false, false);
  EXPECT_THAT(ValidateBytesForStorage(deep), StatusIs(ErrorCode::kOverflow));
  EXPECT_THAT(Incoming(deep), StatusIs(ErrorCode::kOverflow));
}

TEST(ValidateForStorageTest, SizeLimitIs16MiB) {
  // {b: BinData(n)} is n + 13 bytes.
  std::vector<uint8_t> payload(kMaxUserDocumentSize - 13, 0xAB);
  bson_t* b = bson_new();
  bson_append_binary(b, "b", 1, BSON_SUBTYPE_BINARY, payload.data(),
                     static_cast<uint32_t>(payload.size()));
  Document exact = Document::Adopt(b);
  ASSERT_EQ(exact.size(), kMaxUserDocumentSize);
  EXPECT_OK(ValidateForStorage(exact.bson()));

  payload.push_back(0xCD);
  b = bson_new();
  bson_append_binary(b, "b", 1, BSON_SUBTYPE_BINARY, payload.data(),
                     static_cast<uint32_t>(payload.size()));
  Document over = Document::Adopt(b);
  ASSERT_EQ(over.size(), kMaxUserDocumentSize + 1);
  Status s = ValidateForStorage(over.bson());
  EXPECT_THAT(s, StatusIs(ErrorCode::kBSONObjectTooLarge));
  EXPECT_NE(s.reason().find("16777217"), std::string::npos) << s.reason();
}

TEST(ValidateForStorageTest, RejectsInvalidUtf8) {
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  bson_append_utf8(b, "s", 1, "\xff\xfe", 2);  // libbson's append does not check
  Document bad = Document::Adopt(b);
  EXPECT_THAT(ValidateForStorage(bad.bson()), StatusIs(ErrorCode::kInvalidBSON));

  b = bson_new();
  bson_t child;
  bson_append_document_begin(b, "a", 1, &child);
  bson_append_utf8(&child, "s", 1, "ok\xc3", 3);  // truncated sequence, nested
  bson_append_document_end(b, &child);
  Document nested = Document::Adopt(b);
  EXPECT_THAT(ValidateForStorage(nested.bson()), StatusIs(ErrorCode::kInvalidBSON));

  // Embedded 0x00 in a string is valid BSON.
  b = bson_new();
  bson_append_utf8(b, "s", 1, "a\0b", 3);
  Document with_nul = Document::Adopt(b);
  EXPECT_OK(ValidateForStorage(with_nul.bson()));
}

// ValidateWrittenFields both ways: searching `doc` for the fields, and told
// where they are (as the update path is); the two must agree.
Status Written(const bson_t* doc, const std::vector<std::string>& fields) {
  Status searched = ValidateWrittenFields(doc, fields);
  Status told = ValidateWrittenFields(doc, fields, test::TopLevelOffsets(doc, fields));
  EXPECT_EQ(searched.code(), told.code()) << searched.ToString() << " / " << told.ToString();
  EXPECT_EQ(searched.reason(), told.reason());
  return told;
}

TEST(ValidateWrittenFieldsTest, ChecksTheListedFieldsWhole) {
  // Invalid UTF-8 deep inside a written field is found...
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  bson_t child;
  bson_append_document_begin(b, "a", 1, &child);
  bson_append_utf8(&child, "s", 1, "ok\xc3", 3);
  bson_append_document_end(b, &child);
  bson_append_utf8(b, "t", 1, "\xff", 1);
  Document d = Document::Adopt(b);
  EXPECT_THAT(Written(d.bson(), {"a"}), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Written(d.bson(), {"t"}), StatusIs(ErrorCode::kInvalidBSON));
  // ...and fields the update did not write are the stored, checked bytes:
  // by contract they are not walked again.
  EXPECT_OK(Written(d.bson(), {"_id"}));
  // A listed field the document lacks is not an error.
  EXPECT_OK(Written(d.bson(), {"missing", "_id"}));
  EXPECT_THAT(Written(d.bson(), {"missing", "t"}), StatusIs(ErrorCode::kInvalidBSON));

  // Top-level name and _id rules apply to written fields.
  Document dollar = test::Json(R"({"_id": 1, "$x": 1})");
  EXPECT_THAT(Written(dollar.bson(), {"$x"}), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  Document array_id = test::Json(R"({"_id": [1]})");
  EXPECT_THAT(Written(array_id.bson(), {"_id"}), StatusIs(ErrorCode::kInvalidIdField));

  // A malformed value anywhere among the written fields is answered before
  // a bad name, whichever comes first in the document (one walk does both,
  // as ValidateForStorage walks the values before it checks the names).
  b = bson_new();
  BSON_APPEND_INT32(b, "$x", 1);
  bson_append_utf8(b, "t", 1, "\xff", 1);
  Document name_then_value = Document::Adopt(b);
  EXPECT_THAT(Written(name_then_value.bson(), {"$x", "t"}), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_EQ(ValidateForStorage(name_then_value.bson()).code(), ErrorCode::kInvalidBSON);
  EXPECT_THAT(Written(name_then_value.bson(), {"$x"}), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  // Of two bad names, the first in the document.
  Document two_names = test::Json(R"({"_id": [1], "$y": 1})");
  EXPECT_THAT(Written(two_names.bson(), {"$y", "_id"}), StatusIs(ErrorCode::kInvalidIdField));
}

// A stamped document (an insert's, with its _id and version added) is
// judged as ValidateForStorage judges it, without another walk: its size
// (the stamp may push it over the limit) and the version field's name.
TEST(ValidateStampedDocumentTest, AgreesWithValidateForStorage) {
  const std::string big(kMaxUserDocumentSize, 'x');
  for (size_t extra : {0u, 100u}) {  // the document 61 bytes under the limit, 39 over
    bson_t* b = bson_new();
    BSON_APPEND_INT32(b, "_id", 1);
    BSON_APPEND_UTF8(b, "s", big.substr(0, big.size() - 100 + extra).c_str());
    BSON_APPEND_INT64(b, "version", 0);
    Document d = Document::Adopt(b);
    SCOPED_TRACE(d.size());
    EXPECT_EQ(ValidateStampedDocument(d.bson(), "version").code(), ValidateForStorage(d.bson()).code());
    EXPECT_EQ(ValidateStampedDocument(d.bson(), "version").code(),
              extra == 0 ? ErrorCode::kOK : ErrorCode::kBSONObjectTooLarge);
  }
  Document ok = test::Json(R"({"_id": 1, "v": {"$numberLong": "0"}})");
  EXPECT_OK(ValidateStampedDocument(ok.bson(), "v"));
  Document dollar = test::Json(R"({"_id": 1, "$v": {"$numberLong": "0"}})");
  EXPECT_THAT(ValidateStampedDocument(dollar.bson(), "$v"), StatusIs(ErrorCode::kDollarPrefixedFieldName));
  EXPECT_EQ(ValidateStampedDocument(dollar.bson(), "$v").code(), ValidateForStorage(dollar.bson()).code());
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  BSON_APPEND_INT64(b, "v\xff", 0);
  Document bad_name = Document::Adopt(b);
  EXPECT_THAT(ValidateStampedDocument(bad_name.bson(), "v\xff"), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_EQ(ValidateForStorage(bad_name.bson()).code(), ErrorCode::kInvalidBSON);
}

TEST(ValidateWrittenFieldsTest, DepthCountsFromTheTop) {
  for (bool arrays : {false, true}) {
    SCOPED_TRACE(arrays ? "arrays" : "documents");
    for (int depth : {99, 100, 101}) {
      std::vector<uint8_t> bytes = NestedBytes(depth, arrays, false);  // {a: {a: ...}}
      bson_t nested;
      ASSERT_TRUE(bson_init_static(&nested, bytes.data(), bytes.size()));
      Status full = ValidateForStorage(&nested);
      Status written = ValidateWrittenFields(&nested, {arrays ? "0" : "a"});  // NestedBytes' key
      EXPECT_EQ(full.code(), written.code()) << depth;
      EXPECT_EQ(depth > 100, written.code() == ErrorCode::kOverflow) << depth;
    }
  }
}

TEST(ValidateWrittenFieldsTest, SizeLimitStillApplies) {
  std::vector<uint8_t> payload(kMaxUserDocumentSize, 0xAB);
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  bson_append_binary(b, "b", 1, BSON_SUBTYPE_BINARY, payload.data(), static_cast<uint32_t>(payload.size()));
  Document over = Document::Adopt(b);
  EXPECT_THAT(ValidateWrittenFields(over.bson(), {"_id"}), StatusIs(ErrorCode::kBSONObjectTooLarge));
}

TEST(ValidateForStorageTest, RejectsAnEmbeddedDocumentWithoutItsTerminator) {
  // Found by fuzz_bson_insert (tests/fuzz/crashes/fuzz_bson_insert-bad-terminator.bson):
  // {a: {b: [..]}} whose "a" ends in 0x40 instead of 0x00 passed
  // bson_validate and bson_iter_recurse.
  Document d = test::Json(R"({"_id": "k", "a": {"b": [1]}, "n": 1})");
  std::vector<uint8_t> bytes = Bytes(d.bson());
  // "a"'s closing byte: the byte before the element "n" (0x10 'n' 0x00 int32 0x00 at the end).
  size_t a_end = bytes.size() - 1 - (1 + 2 + 4) - 1;
  ASSERT_EQ(bytes[a_end], 0);
  ASSERT_EQ(bytes[a_end + 1], 0x10);
  bytes[a_end] = 0x40;
  EXPECT_THAT(ValidateBytesForStorage(bytes), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Incoming(bytes), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(ValidateForStorageTest, ChecksTheScopeOfCodeWithScope) {
  bson_t* scope = bson_new();
  BSON_APPEND_INT32(scope, "x", 1);
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "_id", 1);
  bson_append_code_with_scope(b, "c", 1, "return x;", scope);
  bson_destroy(scope);
  Document d = Document::Adopt(b);
  EXPECT_OK(ValidateForStorage(d.bson()));
  std::vector<uint8_t> bytes = Bytes(d.bson());
  // The scope {x: 1} ends the "c" element: its own terminator is the byte
  // before the document's.
  ASSERT_EQ(bytes[bytes.size() - 2], 0);
  bytes[bytes.size() - 2] = 0x40;
  EXPECT_THAT(ValidateBytesForStorage(bytes), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(ValidateForStorageTest, RejectsCorruptNestedBytes) {
  Document d = test::Json(R"({"_id": 1, "a": {"b": "xyz"}})");
  std::vector<uint8_t> bytes = Bytes(d.bson());
  // The string length inside "a" claims more bytes than the document holds.
  // Layout: len(4) 0x10 "_id\0" int32(4) 0x03 "a\0" len(4) 0x02 "b\0" strlen(4) ...
  size_t strlen_at = 4 + 1 + 4 + 4 + 1 + 2 + 4 + 1 + 2;
  ASSERT_EQ(bytes[strlen_at], 4);  // "xyz" plus its terminator
  bytes[strlen_at] = 40;
  EXPECT_THAT(ValidateBytesForStorage(bytes), StatusIs(ErrorCode::kInvalidBSON));
}

// The one walk (WalkFields) replaced libbson's bson_validate on the write
// path: whatever bson_validate_with_error(UTF8 | UTF8_ALLOW_NULL) refuses,
// ValidateForStorage and ValidateIncoming must refuse too.  Documents with
// every BSON type, ASCII and multi-byte strings, corrupted at random bytes
// (the length header and terminator kept, so libbson reads them at all).
TEST(ValidateForStorageTest, RefusesAllThatLibbsonsValidateRefuses) {
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  auto next = [&rng]() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  auto fill = [&](bson_t* b, int depth, auto& self) -> void {
    const int n = 1 + static_cast<int>(next() % 5);
    for (int i = 0; i < n; ++i) {
      std::string key = (next() % 4 == 0) ? "k\xc3\xa9" + std::to_string(i) : "k" + std::to_string(i);
      const int kind = static_cast<int>(next() % 21);
      switch (kind) {
        case 0: BSON_APPEND_DOUBLE(b, key.c_str(), 1.5); break;
        case 1: {
          const char* text = next() % 2 ? "plain ascii text" : "caf\xc3\xa9 \xe2\x82\xac";  // the macro reads its argument twice
          BSON_APPEND_UTF8(b, key.c_str(), text);
          break;
        }
        case 2:
        case 3:
          if (depth < 4) {
            bson_t child;
            if (kind == 2) {
              BSON_APPEND_DOCUMENT_BEGIN(b, key.c_str(), &child);
            } else {
              BSON_APPEND_ARRAY_BEGIN(b, key.c_str(), &child);
            }
            self(&child, depth + 1, self);
            if (kind == 2) {
              bson_append_document_end(b, &child);
            } else {
              bson_append_array_end(b, &child);
            }
          } else {
            BSON_APPEND_INT32(b, key.c_str(), 7);
          }
          break;
        case 4: {
          const uint8_t bin[] = {1, 2, 3, 0x80, 0xFF};
          bson_append_binary(b, key.c_str(), -1, next() % 2 ? BSON_SUBTYPE_BINARY : BSON_SUBTYPE_UUID, bin,
                             sizeof bin);
          break;
        }
        case 5: BSON_APPEND_UNDEFINED(b, key.c_str()); break;
        case 6: {
          bson_oid_t oid;
          bson_oid_init_from_string(&oid, "0123456789abcdef01234567");
          BSON_APPEND_OID(b, key.c_str(), &oid);
          break;
        }
        case 7: BSON_APPEND_BOOL(b, key.c_str(), next() % 2 == 0); break;
        case 8: BSON_APPEND_DATE_TIME(b, key.c_str(), 1700000000000); break;
        case 9: BSON_APPEND_NULL(b, key.c_str()); break;
        case 10: BSON_APPEND_REGEX(b, key.c_str(), "^a.c\xc3\xa9", "im"); break;
        case 11: {
          bson_oid_t oid;
          bson_oid_init_from_string(&oid, "0123456789abcdef01234567");
          BSON_APPEND_DBPOINTER(b, key.c_str(), "db.coll", &oid);
          break;
        }
        case 12: BSON_APPEND_CODE(b, key.c_str(), "function() { return 1; }"); break;
        case 13: BSON_APPEND_SYMBOL(b, key.c_str(), "sym"); break;
        case 14: {
          bson_t* scope = bson_new();
          BSON_APPEND_INT32(scope, "x", 1);
          BSON_APPEND_UTF8(scope, "y", "\xe2\x82\xac");
          BSON_APPEND_CODE_WITH_SCOPE(b, key.c_str(), "return x;", scope);
          bson_destroy(scope);
          break;
        }
        case 15: BSON_APPEND_INT32(b, key.c_str(), -5); break;
        case 16: BSON_APPEND_TIMESTAMP(b, key.c_str(), 12, 34); break;
        case 17: BSON_APPEND_INT64(b, key.c_str(), 1234567890123); break;
        case 18: {
          bson_decimal128_t dec;
          bson_decimal128_from_string("1.25", &dec);
          BSON_APPEND_DECIMAL128(b, key.c_str(), &dec);
          break;
        }
        case 19: BSON_APPEND_MAXKEY(b, key.c_str()); break;
        default: BSON_APPEND_MINKEY(b, key.c_str()); break;
      }
    }
  };
  const uint8_t interesting[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x7F, 0x80, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF8, 0xFF};
  int refused_by_libbson = 0;
  for (int round = 0; round < 20000; ++round) {
    bson_t* b = bson_new();
    fill(b, 0, fill);
    std::vector<uint8_t> bytes = Bytes(b);
    bson_destroy(b);
    const int flips = 1 + static_cast<int>(next() % 3);
    for (int f = 0; f < flips && bytes.size() > 5; ++f) {
      const size_t at = 4 + next() % (bytes.size() - 5);  // not the header, not the terminator
      bytes[at] = next() % 2 ? interesting[next() % sizeof interesting] : static_cast<uint8_t>(next());
    }
    bson_t doc;
    ASSERT_TRUE(bson_init_static(&doc, bytes.data(), bytes.size()));
    bson_error_t error;
    const bool libbson_ok = bson_validate_with_error(
        &doc, static_cast<bson_validate_flags_t>(BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL), &error);
    if (libbson_ok) continue;
    ++refused_by_libbson;
    Status storage = ValidateForStorage(&doc);
    Status incoming = Incoming(bytes);
    ASSERT_FALSE(storage.ok())
        << "round " << round << ": bson_validate refused (" << error.message << ") what ValidateForStorage accepts";
    ASSERT_FALSE(incoming.ok())
        << "round " << round << ": bson_validate refused (" << error.message << ") what ValidateIncoming accepts";
  }
  EXPECT_GT(refused_by_libbson, 1000);  // the corruption does reach libbson's checks
}

// ---------------------------------------------------------------------------
// ValidateIncoming

TEST(ValidateIncomingTest, AcceptsValidBytes) {
  Document d = test::Json(R"({"_id": 1, "$set": {"a": [1, "x", {"b": null}]}})");
  EXPECT_OK(Incoming(Bytes(d.bson())));
  Document empty;
  EXPECT_OK(Incoming(Bytes(empty.bson())));
}

TEST(ValidateIncomingTest, RejectsBadFraming) {
  Document d = test::Json(R"({"a": 1, "b": "xyz"})");
  const std::vector<uint8_t> good = Bytes(d.bson());

  EXPECT_THAT(ValidateIncoming(nullptr, 0), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Incoming({}), StatusIs(ErrorCode::kInvalidBSON));
  EXPECT_THAT(Incoming({5, 0, 0, 0}), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> truncated(good.begin(), good.end() - 3);
  EXPECT_THAT(Incoming(truncated), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> header_too_big = good;
  header_too_big[0] = static_cast<uint8_t>(header_too_big[0] + 1);
  EXPECT_THAT(Incoming(header_too_big), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> header_too_small = good;
  header_too_small[0] = 5;
  EXPECT_THAT(Incoming(header_too_small), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> negative = good;
  negative[3] = 0x80;
  EXPECT_THAT(Incoming(negative), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> no_terminator = good;
  no_terminator.back() = 1;
  EXPECT_THAT(Incoming(no_terminator), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> trailing = good;  // header no longer matches
  trailing.push_back(0);
  EXPECT_THAT(Incoming(trailing), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(ValidateIncomingTest, RejectsCorruptElements) {
  Document d = test::Json(R"({"a": 1, "b": "xyz"})");
  const std::vector<uint8_t> good = Bytes(d.bson());
  // Layout: len(4) | 0x10 "a\0" int32 | 0x02 "b\0" strlen(4) "xyz\0" | 0x00
  const size_t type_b = 4 + 1 + 2 + 4;
  const size_t strlen_at = type_b + 1 + 2;
  ASSERT_EQ(good[type_b], 0x02);

  std::vector<uint8_t> bad_type = good;
  bad_type[type_b] = 0x77;
  EXPECT_THAT(Incoming(bad_type), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> long_string = good;
  long_string[strlen_at] = 100;
  EXPECT_THAT(Incoming(long_string), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> zero_string = good;  // a string length must count its 0x00
  zero_string[strlen_at] = 0;
  EXPECT_THAT(Incoming(zero_string), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> bad_utf8 = good;
  bad_utf8[strlen_at + 4] = 0xFF;  // "\xffyz"
  EXPECT_THAT(Incoming(bad_utf8), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> overlong = good;  // 0xC0 0xAF: an overlong encoding of '/'
  overlong[strlen_at + 4] = 0xC0;
  overlong[strlen_at + 5] = 0xAF;
  EXPECT_THAT(Incoming(overlong), StatusIs(ErrorCode::kInvalidBSON));

  std::vector<uint8_t> bad_key = good;  // field name "\xff"
  bad_key[type_b + 1] = 0xFF;
  EXPECT_THAT(Incoming(bad_key), StatusIs(ErrorCode::kInvalidBSON));
}

TEST(ValidateIncomingTest, NestingLimitIs200) {
  EXPECT_OK(Incoming(NestedBytes(200, false, false)));
  EXPECT_THAT(Incoming(NestedBytes(201, false, false)), StatusIs(ErrorCode::kOverflow));
}

// ---------------------------------------------------------------------------
// EnsureId

TEST(EnsureIdTest, LeavesDocumentStartingWithIdAlone) {
  Document d = test::Json(R"({"_id": 7, "a": 1})");
  bool generated = true;
  EXPECT_FALSE(EnsureId(d.bson(), &generated).has_value());
  EXPECT_FALSE(generated);
  EXPECT_FALSE(EnsureId(d.bson()).has_value());
}

TEST(EnsureIdTest, MovesIdToTheFront) {
  Document d = test::Json(R"({"a": 1, "b": {"c": 2}, "_id": {"k": "x"}, "z": [3]})");
  bool generated = true;
  std::optional<Document> fixed = EnsureId(d.bson(), &generated);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_FALSE(generated);
  Document want = test::Json(R"({"_id": {"k": "x"}, "a": 1, "b": {"c": 2}, "z": [3]})");
  EXPECT_TRUE(BinaryEqual(fixed->view(), want.view()))
      << test::ToJson(fixed->bson()) << " vs " << test::ToJson(want.bson());
  EXPECT_OK(ValidateForStorage(fixed->bson()));
}

TEST(EnsureIdTest, AddsObjectIdFirst) {
  Document d = test::Json(R"({"a": 1, "sub": {"_id": 5}, "s": "x"})");
  bool generated = false;
  std::optional<Document> fixed = EnsureId(d.bson(), &generated);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_TRUE(generated);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, fixed->bson()));
  ASSERT_TRUE(bson_iter_next(&it));
  EXPECT_STREQ(bson_iter_key(&it), "_id");
  EXPECT_TRUE(BSON_ITER_HOLDS_OID(&it));
  const std::string id_hex = [&] {
    char hex[25];
    bson_oid_to_string(bson_iter_oid(&it), hex);
    return std::string(hex);
  }();
  // The rest is the original document, in order.
  Document want = test::Json(R"({"_id": {"$oid": ")" + id_hex +
                             R"("}, "a": 1, "sub": {"_id": 5}, "s": "x"})");
  EXPECT_TRUE(BinaryEqual(fixed->view(), want.view())) << test::ToJson(fixed->bson());
  EXPECT_OK(ValidateForStorage(fixed->bson()));

  // Another call draws another ObjectId.
  std::optional<Document> again = EnsureId(d.bson());
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(BinaryEqual(fixed->view(), again->view()));
}

TEST(EnsureIdTest, EmptyDocumentGetsAnId) {
  Document empty;
  bool generated = false;
  std::optional<Document> fixed = EnsureId(empty.bson(), &generated);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_TRUE(generated);
  EXPECT_EQ(bson_count_keys(fixed->bson()), 1u);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, fixed->bson(), "_id"));
  EXPECT_TRUE(BSON_ITER_HOLDS_OID(&it));
}

}  // namespace
}  // namespace gatedb
