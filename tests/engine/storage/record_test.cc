// EncodeRecord / DecodeRecord (engine/storage/record.h): round trips, the
// documented byte layout (records built by hand here, independently of the
// encoder), and corrupt input.  Every decode reads from a heap buffer of
// exactly the record's size, so an out-of-bounds read shows under ASan
// (-DGATEDB_SANITIZE=ON); without ASan, the decoded views are checked to
// lie inside the input.
#include "engine/storage/record.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::StatusIs;

// ---- The layout of record.h, written out by hand ---------------------------

std::string BE32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
  return s;
}

std::string BE64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * (7 - i))) & 0xff);
  return s;
}

std::string Bytes(const bson_t* b) {
  if (b == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(bson_get_data(b)), b->len);
}

// byte 0 format, 1..8 version BE, 9..12 W BE, W bytes writer, then the doc.
std::string HandMadeV1(int64_t version, const bson_t* writer, const bson_t* doc) {
  std::string w = Bytes(writer);
  return std::string(1, '\x01') + BE64(static_cast<uint64_t>(version)) + BE32(static_cast<uint32_t>(w.size())) + w +
         Bytes(doc);
}

// As V1, with F (4 bytes BE) and F bytes of field versions before the doc.
std::string HandMadeV2(int64_t version, const bson_t* writer, const bson_t* fv, const bson_t* doc) {
  std::string w = Bytes(writer);
  std::string f = Bytes(fv);
  return std::string(1, '\x02') + BE64(static_cast<uint64_t>(version)) + BE32(static_cast<uint32_t>(w.size())) + w +
         BE32(static_cast<uint32_t>(f.size())) + f + Bytes(doc);
}

// A copy of `bytes` in a heap block of exactly that size: reading one byte
// past it is a heap-buffer-overflow under ASan.
class ExactBuffer {
 public:
  explicit ExactBuffer(const std::string& bytes) : size_(bytes.size()), data_(new char[bytes.size() ? bytes.size() : 1]) {
    if (size_) std::memcpy(data_.get(), bytes.data(), size_);
  }
  std::string_view view() const { return std::string_view(data_.get(), size_); }
  const uint8_t* begin() const { return reinterpret_cast<const uint8_t*>(data_.get()); }
  const uint8_t* end() const { return begin() + size_; }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

// A bson_t view lies inside the buffer it was decoded from.
::testing::AssertionResult Inside(const ExactBuffer& buf, const bson_t* b, const char* what) {
  const uint8_t* p = bson_get_data(b);
  if (p < buf.begin() || p > buf.end() || static_cast<size_t>(buf.end() - p) < b->len) {
    return ::testing::AssertionFailure() << what << " (" << b->len << " bytes) is not inside the record";
  }
  return ::testing::AssertionSuccess();
}

// Checks every view of a successful decode against the input buffer and
// reads all of its bytes (bson_validate walks the whole document).
void CheckViews(const ExactBuffer& buf, const RecordView& rec) {
  EXPECT_TRUE(Inside(buf, &rec.doc, "doc"));
  size_t off = 0;
  bson_validate(&rec.doc, BSON_VALIDATE_NONE, &off);
  if (rec.has_writer) {
    bson_t writer;
    rec.Writer(&writer);
    EXPECT_TRUE(Inside(buf, &writer, "writer"));
    bson_validate(&writer, BSON_VALIDATE_NONE, &off);
  }
  if (rec.has_field_versions) {
    EXPECT_TRUE(Inside(buf, &rec.field_versions, "field versions"));
    bson_validate(&rec.field_versions, BSON_VALIDATE_NONE, &off);
  }
}

Status Decode(const ExactBuffer& buf, RecordView* rec) {
  Status s = DecodeRecord(buf.view(), rec);
  if (s.ok()) CheckViews(buf, *rec);
  return s;
}

Status DecodeBytes(const std::string& bytes) {
  ExactBuffer buf(bytes);
  RecordView rec;
  return Decode(buf, &rec);
}

class RecordTest : public ::testing::Test {
 protected:
  Document writer_ = Json(R"({"agentId": "agent-7", "taskId": "t-1", "source": "ui", "at": {"$date": 1700000000000}})");
  Document fv_ = Json(R"({"a": {"$numberLong": "3"}, "b.c": {"$numberLong": "5"}})");
  Document doc_ = Json(R"({"_id": "o1", "version": {"$numberLong": "5"}, "a": 1, "b": {"c": "x"}})");
};

// ---- Round trips -----------------------------------------------------------

// Elements of `doc` written into an open BsonWriter document, as a write
// builds its blocks in place.
void CopyFields(const bson_t* doc, BsonWriter* w) {
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, doc));
  while (bson_iter_next(&it)) w->Value(bson_iter_key(&it), *bson_iter_value(&it));
}

TEST_F(RecordTest, EncodeRecordWithWritesWhatEncodeRecordDoes) {
  std::string want, got;
  EncodeRecord(5, writer_.bson(), doc_.bson(), &want, fv_.bson());
  EncodeRecordWith(
      5, [&](BsonWriter* w) { CopyFields(writer_.bson(), w); }, [&](BsonWriter* w) { CopyFields(fv_.bson(), w); },
      doc_.bson(), &got);
  EXPECT_EQ(want, got);

  // An empty table is stored as none.
  Document empty = Json("{}");
  EncodeRecord(7, writer_.bson(), doc_.bson(), &want, empty.bson());
  EncodeRecordWith(
      7, [&](BsonWriter* w) { CopyFields(writer_.bson(), w); }, [](BsonWriter*) {}, doc_.bson(), &got);
  EXPECT_EQ(want, got);
  RecordView rec;
  ASSERT_OK(DecodeRecord(got, &rec));
  EXPECT_FALSE(rec.has_field_versions);
  EXPECT_EQ(7, rec.version);
}

TEST_F(RecordTest, RoundTripsEveryPart) {
  std::string enc;
  EncodeRecord(5, writer_.bson(), doc_.bson(), &enc, fv_.bson());
  ExactBuffer buf(enc);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_EQ(rec.version, 5);
  ASSERT_TRUE(rec.has_writer);
  bson_t writer;
  rec.Writer(&writer);
  EXPECT_EQ(Bytes(&writer), Bytes(writer_.bson()));
  EXPECT_TRUE(rec.tracks_field_versions);
  ASSERT_TRUE(rec.has_field_versions);
  EXPECT_EQ(Bytes(&rec.field_versions), Bytes(fv_.bson()));
  EXPECT_EQ(Bytes(&rec.doc), Bytes(doc_.bson()));
}

TEST_F(RecordTest, EncodingFollowsTheDocumentedLayout) {
  // The header is a storage format (DO NOT CHANGE): the encoder must write
  // exactly the bytes record.h describes, built here by hand.
  const int64_t version = 0x0102030405060708;
  std::string enc;
  EncodeRecord(version, writer_.bson(), doc_.bson(), &enc, fv_.bson());
  EXPECT_EQ(enc, HandMadeV2(version, writer_.bson(), fv_.bson(), doc_.bson()));
  ASSERT_GE(enc.size(), kRecordHeaderSize);
  EXPECT_EQ(static_cast<uint8_t>(enc[0]), kRecordFormatV2);
  EXPECT_EQ(enc.substr(1, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));

  // Without a writer: W = 0, and F = 0 without a table.
  EncodeRecord(version, nullptr, doc_.bson(), &enc);
  EXPECT_EQ(enc, HandMadeV2(version, nullptr, nullptr, doc_.bson()));
  EXPECT_EQ(enc.size(), kRecordHeaderSize + 4 + doc_.size());
}

TEST_F(RecordTest, VersionExtremesRoundTrip) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min(), int64_t{0x00000000ffffffff}, int64_t{0x0000000100000000}}) {
    std::string enc;
    EncodeRecord(v, writer_.bson(), doc_.bson(), &enc);
    ExactBuffer buf(enc);
    RecordView rec;
    ASSERT_OK(Decode(buf, &rec)) << v;
    EXPECT_EQ(rec.version, v);
  }
}

TEST_F(RecordTest, NoWriterDecodesAsUnknownWriter) {
  std::string enc;
  EncodeRecord(2, nullptr, doc_.bson(), &enc, fv_.bson());
  ExactBuffer buf(enc);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_FALSE(rec.has_writer);
  EXPECT_EQ(rec.version, 2);
  ASSERT_TRUE(rec.has_field_versions);
  EXPECT_EQ(Bytes(&rec.field_versions), Bytes(fv_.bson()));
  EXPECT_EQ(Bytes(&rec.doc), Bytes(doc_.bson()));
}

TEST_F(RecordTest, NullOrEmptyFieldVersionTableIsStoredAsNone) {
  Document empty;  // {}
  for (const bson_t* table : {static_cast<const bson_t*>(nullptr), empty.bson()}) {
    std::string enc;
    EncodeRecord(1, writer_.bson(), doc_.bson(), &enc, table);
    // F = 0 right after the writer block.
    ASSERT_GE(enc.size(), kRecordHeaderSize + writer_.size() + 4);
    EXPECT_EQ(enc.substr(kRecordHeaderSize + writer_.size(), 4), BE32(0));
    ExactBuffer buf(enc);
    RecordView rec;
    ASSERT_OK(Decode(buf, &rec));
    // A V2 record tracks field versions even when no field changed yet.
    EXPECT_TRUE(rec.tracks_field_versions);
    EXPECT_FALSE(rec.has_field_versions);
    EXPECT_EQ(Bytes(&rec.doc), Bytes(doc_.bson()));
  }
}

TEST_F(RecordTest, EncodeReplacesWhatTheOutputHeld) {
  std::string enc = "leftover bytes that must not survive";
  EncodeRecord(1, nullptr, doc_.bson(), &enc);
  EXPECT_EQ(enc, HandMadeV2(1, nullptr, nullptr, doc_.bson()));
}

TEST_F(RecordTest, DecodedViewsBorrowTheInputBytes) {
  std::string enc;
  EncodeRecord(3, writer_.bson(), doc_.bson(), &enc, fv_.bson());
  ExactBuffer buf(enc);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  // Static views over the record: no copy.
  const uint8_t* base = buf.begin();
  bson_t writer;
  rec.Writer(&writer);
  EXPECT_EQ(bson_get_data(&writer), base + kRecordHeaderSize);
  EXPECT_EQ(bson_get_data(&rec.field_versions), base + kRecordHeaderSize + writer_.size() + 4);
  EXPECT_EQ(bson_get_data(&rec.doc), base + enc.size() - doc_.size());
}

TEST_F(RecordTest, SmallestDocumentRoundTrips) {
  Document empty;  // {}: 5 bytes
  std::string enc;
  EncodeRecord(0, nullptr, empty.bson(), &enc);
  ExactBuffer buf(enc);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_EQ(rec.doc.len, 5u);
  EXPECT_EQ(bson_count_keys(&rec.doc), 0u);
}

// ---- Format 0x01 -----------------------------------------------------------

TEST_F(RecordTest, FormatV1DecodesWithoutFieldVersionTracking) {
  std::string v1 = HandMadeV1(9, writer_.bson(), doc_.bson());
  ExactBuffer buf(v1);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_EQ(rec.version, 9);
  EXPECT_FALSE(rec.tracks_field_versions);
  EXPECT_FALSE(rec.has_field_versions);
  ASSERT_TRUE(rec.has_writer);
  bson_t writer;
  rec.Writer(&writer);
  EXPECT_EQ(Bytes(&writer), Bytes(writer_.bson()));
  EXPECT_EQ(Bytes(&rec.doc), Bytes(doc_.bson()));
}

TEST_F(RecordTest, FormatV1WithoutWriter) {
  std::string v1 = HandMadeV1(-4, nullptr, doc_.bson());
  ExactBuffer buf(v1);
  RecordView rec;
  // A stale view from an earlier decode must not leak into this one.
  rec.has_field_versions = true;
  rec.tracks_field_versions = true;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_EQ(rec.version, -4);
  EXPECT_FALSE(rec.has_writer);
  EXPECT_FALSE(rec.tracks_field_versions);
  EXPECT_FALSE(rec.has_field_versions);
  EXPECT_EQ(Bytes(&rec.doc), Bytes(doc_.bson()));
}

TEST_F(RecordTest, FormatV1BytesAreNotReadAsAFieldVersionLength) {
  // In V1 the doc follows the writer block directly; a decoder that read a
  // V2 length there would take the doc's own length prefix for F.
  Document small = Json(R"({"_id": 1})");
  std::string v1 = HandMadeV1(1, nullptr, small.bson());
  ExactBuffer buf(v1);
  RecordView rec;
  ASSERT_OK(Decode(buf, &rec));
  EXPECT_EQ(Bytes(&rec.doc), Bytes(small.bson()));
}

// ---- Corruption ------------------------------------------------------------

TEST_F(RecordTest, EmptyAndShortHeadersAreCorrupt) {
  EXPECT_THAT(DecodeBytes(""), StatusIs(ErrorCode::kDataCorruptionDetected));
  std::string full = HandMadeV2(1, nullptr, nullptr, doc_.bson());
  for (size_t n = 1; n <= kRecordHeaderSize; ++n) {
    EXPECT_THAT(DecodeBytes(full.substr(0, n)), StatusIs(ErrorCode::kDataCorruptionDetected)) << n << " bytes";
  }
}

TEST_F(RecordTest, EveryTruncationIsCorrupt) {
  // A strict prefix of a record always cuts its document's BSON short (the
  // doc is last), so no prefix may decode, whatever part it stops in.
  const std::vector<std::string> records = {
      HandMadeV2(7, writer_.bson(), fv_.bson(), doc_.bson()),
      HandMadeV2(7, nullptr, nullptr, doc_.bson()),
      HandMadeV1(7, writer_.bson(), doc_.bson()),
      HandMadeV1(7, nullptr, doc_.bson()),
  };
  for (size_t r = 0; r < records.size(); ++r) {
    ASSERT_OK(DecodeBytes(records[r])) << "record " << r;
    for (size_t n = 0; n < records[r].size(); ++n) {
      EXPECT_THAT(DecodeBytes(records[r].substr(0, n)), StatusIs(ErrorCode::kDataCorruptionDetected))
          << "record " << r << " cut to " << n << " of " << records[r].size() << " bytes";
    }
  }
}

TEST_F(RecordTest, UnknownFormatBytesAreCorrupt) {
  std::string v2 = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  std::string v1 = HandMadeV1(1, writer_.bson(), doc_.bson());
  for (int f : {0x00, 0x03, 0x10, 0x7f, 0x80, 0xff}) {
    for (std::string rec : {v1, v2}) {
      rec[0] = static_cast<char>(f);
      EXPECT_THAT(DecodeBytes(rec), StatusIs(ErrorCode::kDataCorruptionDetected)) << "format " << f;
    }
  }
}

TEST_F(RecordTest, WriterLengthBeyondTheRecordIsCorrupt) {
  std::string good = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  const uint32_t rest = static_cast<uint32_t>(good.size() - kRecordHeaderSize);
  for (uint32_t w : {rest - 4, rest, rest + 1, uint32_t{0x7fffffff}, uint32_t{0xfffffff0}, uint32_t{0xffffffff}}) {
    std::string bad = good;
    bad.replace(9, 4, BE32(w));
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "W = " << w;
  }
}

TEST_F(RecordTest, WriterLengthThatMisframesTheWriterIsCorrupt) {
  // W in the record disagreeing with the writer block's own BSON length.
  std::string good = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  const uint32_t wlen = writer_.size();
  for (uint32_t w : {uint32_t{1}, uint32_t{4}, uint32_t{5}, wlen - 1, wlen + 1}) {
    std::string bad = good;
    bad.replace(9, 4, BE32(w));
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "W = " << w;
  }
  // The block's own length right but its closing 0x00 not (what
  // bson_init_static refused before the writer's view became lazy).
  std::string unterminated = good;
  unterminated[kRecordHeaderSize + wlen - 1] = 'x';
  EXPECT_THAT(DecodeBytes(unterminated), StatusIs(ErrorCode::kDataCorruptionDetected));
  // Same for V1.
  std::string v1 = HandMadeV1(1, writer_.bson(), doc_.bson());
  for (uint32_t w : {uint32_t{3}, wlen - 1, wlen + 1}) {
    std::string bad = v1;
    bad.replace(9, 4, BE32(w));
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "V1 W = " << w;
  }
}

TEST_F(RecordTest, FieldVersionLengthBeyondTheRecordIsCorrupt) {
  std::string good = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  const size_t f_at = kRecordHeaderSize + writer_.size();
  const uint32_t rest = static_cast<uint32_t>(good.size() - f_at - 4);
  for (uint32_t f : {rest - 4, rest, rest + 1, uint32_t{0x80000000}, uint32_t{0xfffffffb}, uint32_t{0xffffffff}}) {
    std::string bad = good;
    bad.replace(f_at, 4, BE32(f));
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "F = " << f;
  }
}

TEST_F(RecordTest, FieldVersionLengthThatMisframesTheTableIsCorrupt) {
  std::string good = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  const size_t f_at = kRecordHeaderSize + writer_.size();
  const uint32_t flen = fv_.size();
  for (uint32_t f : {uint32_t{1}, uint32_t{4}, flen - 1, flen + 1}) {
    std::string bad = good;
    bad.replace(f_at, 4, BE32(f));
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "F = " << f;
  }
}

TEST_F(RecordTest, V1BodyUnderTheV2FormatByteIsCorrupt) {
  // A V2 format byte over a V1 body: the document's first 4 bytes, read as
  // F, leave no valid table and document behind.
  std::string v1 = HandMadeV1(1, writer_.bson(), doc_.bson());
  v1[0] = static_cast<char>(kRecordFormatV2);
  EXPECT_THAT(DecodeBytes(v1), StatusIs(ErrorCode::kDataCorruptionDetected));
}

TEST_F(RecordTest, BadDocumentFramingIsCorrupt) {
  std::string good = HandMadeV2(1, writer_.bson(), fv_.bson(), doc_.bson());
  const size_t doc_at = good.size() - doc_.size();
  // A trailing byte after the document.
  EXPECT_THAT(DecodeBytes(good + std::string(1, '\0')), StatusIs(ErrorCode::kDataCorruptionDetected));
  // The document's own length too long, too short, absurd.
  for (uint32_t len : {static_cast<uint32_t>(doc_.size()) + 1, static_cast<uint32_t>(doc_.size()) - 1,
                       uint32_t{0xffffffff}, uint32_t{0}}) {
    std::string bad = good;
    for (int i = 0; i < 4; ++i) bad[doc_at + i] = static_cast<char>((len >> (8 * i)) & 0xff);  // BSON is LE
    EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected)) << "doc len " << len;
  }
  // A document whose terminating byte is not 0.
  std::string bad = good;
  bad.back() = '\x01';
  EXPECT_THAT(DecodeBytes(bad), StatusIs(ErrorCode::kDataCorruptionDetected));
  // Fewer than 5 bytes of document.
  std::string tiny = good.substr(0, doc_at) + std::string("\x04\x00\x00\x00", 4);
  EXPECT_THAT(DecodeBytes(tiny), StatusIs(ErrorCode::kDataCorruptionDetected));
  // No document at all.
  EXPECT_THAT(DecodeBytes(good.substr(0, doc_at)), StatusIs(ErrorCode::kDataCorruptionDetected));
}

TEST_F(RecordTest, RandomDamageNeverDecodesOutsideTheInput) {
  // Random byte changes and cuts: the decoder answers OK or
  // DataCorruptionDetected, and every view it returns stays inside the
  // input (checked by Decode; ASan checks the reads themselves).
  const std::vector<std::string> seeds = {
      HandMadeV2(3, writer_.bson(), fv_.bson(), doc_.bson()),
      HandMadeV1(3, writer_.bson(), doc_.bson()),
  };
  std::mt19937 rng(12345);
  int ok = 0, corrupt = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string bytes = seeds[iter % seeds.size()];
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      // Bias toward the header and length fields, where framing lives.
      size_t at = rng() % 2 ? rng() % std::min<size_t>(bytes.size(), 40) : rng() % bytes.size();
      bytes[at] = static_cast<char>(rng() & 0xff);
    }
    if (rng() % 4 == 0) bytes.resize(rng() % (bytes.size() + 1));
    ExactBuffer buf(bytes);
    RecordView rec;
    Status s = Decode(buf, &rec);
    if (s.ok()) {
      ++ok;
    } else {
      ++corrupt;
      ASSERT_EQ(s.code(), ErrorCode::kDataCorruptionDetected) << s.ToString();
    }
  }
  // Both outcomes must have been exercised for the test to mean anything.
  EXPECT_GT(ok, 0);
  EXPECT_GT(corrupt, 0);
}

}  // namespace
}  // namespace gatedb
