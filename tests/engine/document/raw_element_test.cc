#include "engine/document/raw_element.h"

#include <random>
#include <string>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

// The walk libbson's iterator makes: (type, key, start, end) per element.
std::vector<std::string> IterWalk(const bson_t* doc) {
  std::vector<std::string> out;
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init(&it, doc));
  bool more = bson_iter_next(&it);
  while (more) {
    const uint32_t start = bson_iter_offset(&it);
    const std::string head = std::to_string(bson_iter_type(&it)) + " " + bson_iter_key(&it) + " " +
                             std::to_string(start);
    more = bson_iter_next(&it);
    out.push_back(head + " " + std::to_string(more ? bson_iter_offset(&it) : doc->len - 1));
  }
  return out;
}

std::vector<std::string> RawWalk(const bson_t* doc, RawRead* last) {
  std::vector<std::string> out;
  RawElement e;
  for (uint32_t at = 4;; at = e.end) {
    *last = ReadRawElement(bson_get_data(doc), doc->len, at, &e);
    if (*last != RawRead::kElement) break;
    out.push_back(std::to_string(e.type) + " " + std::string(e.key) + " " + std::to_string(e.start) + " " +
                  std::to_string(e.end));
  }
  return out;
}

TEST(RawElementTest, WalksTheTopLevelAsLibbsonsIteratorDoes) {
  Document doc = test::EveryJsonType();
  RawRead last;
  const std::vector<std::string> raw = RawWalk(doc.bson(), &last);
  EXPECT_EQ(RawRead::kEnd, last);
  EXPECT_EQ(IterWalk(doc.bson()), raw);
  EXPECT_EQ(test::kEveryJsonTypeFields, raw.size());

  Document empty = test::Json("{}");
  EXPECT_TRUE(RawWalk(empty.bson(), &last).empty());
  EXPECT_EQ(RawRead::kEnd, last);
}

TEST(RawElementTest, StopsAtWhatItCannotMeasureInsideTheDocument) {
  auto read = [](std::string bytes, uint32_t offset = 4) {
    RawElement e;
    return ReadRawElement(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<uint32_t>(bytes.size()), offset,
                          &e);
  };
  const std::string len_placeholder(4, '\0');  // the header's value is not read
  // {a: int32}: fine; cut short, it runs past the terminator.
  EXPECT_EQ(RawRead::kElement, read(len_placeholder + std::string("\x10" "a\0" "\1\0\0\0" "\0", 8)));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x10" "a\0" "\1\0\0" "\0", 7)));
  // A key with no terminator inside the document.
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x10" "abc", 4) + std::string(1, '\0')));
  // A type this reader does not know (0x05 is binary; 0x14 and 0x80 are none).
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x14" "a\0" "\0", 4)));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x80" "a\0" "\0", 4)));
  // A string whose length reaches past the document, is 0, or is negative.
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x02" "a\0" "\x09\0\0\0" "abc\0" "\0", 13)));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x02" "a\0" "\0\0\0\0" "\0", 8)));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x02" "a\0" "\xff\xff\xff\xff" "\0", 8)));
  // A nested document's length under 5, or past the end.
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x03" "a\0" "\x04\0\0\0" "\0", 8)));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x03" "a\0" "\x40\0\0\0" "\0\0\0\0\0\0", 13)));
  // A regex missing its options' terminator.
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string("\x0b" "a\0" "x\0" "i", 6) + std::string(1, '\0')));
  // The terminator, a non-zero one, and offsets outside the document.
  EXPECT_EQ(RawRead::kEnd, read(len_placeholder + std::string(1, '\0')));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string(1, '\1')));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string(1, '\0'), 5));
  EXPECT_EQ(RawRead::kStop, read(len_placeholder + std::string(1, '\0'), 2));
}

// Corrupted copies of a valid document: whatever the reader accepts lies
// inside the document (an out-of-bounds read shows under ASan).
TEST(RawElementTest, CorruptBytesNeverTakeItOutsideTheDocument) {
  Document doc = test::EveryJsonType();
  const std::string original(reinterpret_cast<const char*>(bson_get_data(doc.bson())), doc.bson()->len);
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = original;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[4 + rng() % (bytes.size() - 4)] = static_cast<char>(rng());
    const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint32_t len = static_cast<uint32_t>(bytes.size());
    RawElement e;
    int steps = 0;
    for (uint32_t at = 4; ReadRawElement(data, len, at, &e) == RawRead::kElement; at = e.end) {
      ASSERT_GT(e.end, e.start);
      ASSERT_LE(e.end, len - 1);
      ASSERT_LE(e.start + 2 + e.key.size(), e.end);
      ASSERT_LT(++steps, 1000);
    }
  }
}

}  // namespace
}  // namespace gatedb
