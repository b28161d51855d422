#include "engine/keys/key_codec.h"

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/document/bson_compare.h"
#include "engine/keys/key_format.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace keys {
namespace {

int Sign(int x) { return (x > 0) - (x < 0); }

// bson_value_t carries an alignment attribute that std::vector would drop.
struct Value {
  bson_value_t v;
};

// memcmp order with the shorter string first, as RocksDB's BytewiseComparator.
int CompareKeys(const std::string& a, const std::string& b) { return Sign(a.compare(b)); }

std::string Hex(const std::string& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Owns values: each lives as field "v" of its own document.
class ValueHolder {
 public:
  // Adds the value stored at "v" of `doc`.
  size_t Add(Document doc) {
    docs_.push_back(std::move(doc));
    return docs_.size() - 1;
  }
  bson_t* NewDoc() {
    docs_.emplace_back();
    return docs_.back().mutable_bson();
  }
  size_t size() const { return docs_.size(); }
  bson_value_t Value(size_t i) const {
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, docs_[i].bson(), "v"));
    return *bson_iter_value(&it);  // points into docs_[i], whose bson_t never moves
  }
  std::string Json(size_t i) const { return docs_[i].ToJson(JsonMode::kCanonical); }

 private:
  std::vector<Document> docs_;
};

std::string Enc(const bson_value_t& v) {
  std::string out;
  EncodeValue(v, &out);
  return out;
}

// Encodes field "v" of an Extended JSON document.
std::string EncJson(const std::string& json) {
  Document d = test::Json(json);
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init_find(&it, d.bson(), "v")) << json;
  return Enc(*bson_iter_value(&it));
}

std::string EncString(const std::string& s) {
  bson_value_t v;
  v.value_type = BSON_TYPE_UTF8;
  v.value.v_utf8.str = const_cast<char*>(s.data());
  v.value.v_utf8.len = static_cast<uint32_t>(s.size());
  return Enc(v);
}

std::string EncInt32(int32_t x) {
  bson_value_t v;
  v.value_type = BSON_TYPE_INT32;
  v.value.v_int32 = x;
  return Enc(v);
}

std::string EncInt64(int64_t x) {
  bson_value_t v;
  v.value_type = BSON_TYPE_INT64;
  v.value.v_int64 = x;
  return Enc(v);
}

std::string EncDouble(double x) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DOUBLE;
  v.value.v_double = x;
  return Enc(v);
}

std::string EncDecimal(const char* s) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DECIMAL128;
  EXPECT_TRUE(bson_decimal128_from_string(s, &v.value.v_decimal128)) << s;
  return Enc(v);
}

// ---------------------------------------------------------------------------
// Random values of every type, drawn from small pools so that equal values,
// shared prefixes and boundary cases are common.

class RandomValues {
 public:
  explicit RandomValues(uint32_t seed) : rng_(seed) {}

  // Appends one random value named `key` to `b`.
  void Append(bson_t* b, const char* key, int depth) {
    switch (Pick(22)) {
      case 0: case 1: AppendInt32(b, key); break;
      case 2: case 3: AppendInt64(b, key); break;
      case 4: case 5: AppendDouble(b, key); break;
      case 6: case 7: AppendDecimal(b, key); break;
      case 8: case 9: {
        std::string s = RandomString();
        bson_append_utf8(b, key, -1, s.data(), static_cast<int>(s.size()));
        break;
      }
      case 10: {
        std::string s = RandomString();
        bson_append_symbol(b, key, -1, s.data(), static_cast<int>(s.size()));
        break;
      }
      case 11: case 12: AppendDocument(b, key, depth, /*array=*/false); break;
      case 13: AppendDocument(b, key, depth, /*array=*/true); break;
      case 14: {
        static const bson_subtype_t kSubtypes[] = {BSON_SUBTYPE_BINARY, BSON_SUBTYPE_FUNCTION,
                                                   BSON_SUBTYPE_UUID, BSON_SUBTYPE_MD5,
                                                   BSON_SUBTYPE_USER};
        uint8_t bytes[4];
        size_t n = Pick(4);
        for (size_t i = 0; i < n; ++i) bytes[i] = RandomByte();
        bson_append_binary(b, key, -1, kSubtypes[Pick(5)], bytes, static_cast<uint32_t>(n));
        break;
      }
      case 15: {
        bson_oid_t oid;
        for (uint8_t& byte : oid.bytes) byte = Pick(4) == 0 ? RandomByte() : 0x11;
        bson_append_oid(b, key, -1, &oid);
        break;
      }
      case 16: bson_append_bool(b, key, -1, Pick(2) == 1); break;
      case 17: {
        static const int64_t kDates[] = {0, 1, -1, std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max(), 1700000000000LL,
                                         -62135596800000LL};
        int64_t d = Pick(3) == 0 ? static_cast<int64_t>(Next64()) : kDates[Pick(7)];
        bson_append_date_time(b, key, -1, d);
        break;
      }
      case 18: {
        static const uint32_t kParts[] = {0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};
        bson_append_timestamp(b, key, -1, kParts[Pick(6)], kParts[Pick(6)]);
        break;
      }
      case 19: {
        static const char* kPatterns[] = {"", "a", "ab", "a.b", "\xc3\xa9"};
        static const char* kOptions[] = {"", "i", "im", "s"};
        bson_append_regex(b, key, -1, kPatterns[Pick(5)], kOptions[Pick(4)]);
        break;
      }
      case 20:
        switch (Pick(4)) {
          case 0: bson_append_null(b, key, -1); break;
          case 1: bson_append_undefined(b, key, -1); break;
          case 2: bson_append_minkey(b, key, -1); break;
          default: bson_append_maxkey(b, key, -1); break;
        }
        break;
      default:
        switch (Pick(3)) {
          case 0: {
            std::string s = RandomString();
            bson_append_code(b, key, -1, s.c_str());
            break;
          }
          case 1: {
            bson_t scope;
            bson_init(&scope);
            if (Pick(2)) Append(&scope, "x", depth + 2);
            bson_append_code_with_scope(b, key, -1, Pick(2) ? "f" : "g", &scope);
            bson_destroy(&scope);
            break;
          }
          default: {
            bson_oid_t oid;
            for (uint8_t& byte : oid.bytes) byte = Pick(3) == 0 ? RandomByte() : 0;
            bson_append_dbpointer(b, key, -1, Pick(2) ? "c" : "cd", &oid);
            break;
          }
        }
        break;
    }
  }

  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  uint64_t Next64() { return (uint64_t{rng_()} << 32) | rng_(); }

 private:
  uint8_t RandomByte() {
    static const uint8_t kBytes[] = {0x00, 0x01, 0x7F, 0x80, 0xFF};
    return Pick(3) == 0 ? static_cast<uint8_t>(rng_()) : kBytes[Pick(5)];
  }

  std::string RandomString() {
    static const char* kPieces[] = {"a", "b", "ab", "\x01", "\x7f", "\xc3\xa9" /* é */,
                                    "\xf0\x9f\x98\x80" /* emoji */, "z"};
    std::string s;
    size_t n = Pick(5);
    for (size_t i = 0; i < n; ++i) {
      if (Pick(6) == 0) {
        s.push_back('\0');
      } else {
        s += kPieces[Pick(8)];
      }
    }
    return s;
  }

  void AppendInt32(bson_t* b, const char* key) {
    static const int32_t kInts[] = {0, 1, -1, 2, -2, 7, std::numeric_limits<int32_t>::min(),
                                    std::numeric_limits<int32_t>::max()};
    int32_t x;
    switch (Pick(3)) {
      case 0: x = static_cast<int32_t>(rng_()); break;
      case 1: x = static_cast<int32_t>(Pick(201)) - 100; break;
      default: x = kInts[Pick(8)]; break;
    }
    bson_append_int32(b, key, -1, x);
  }

  void AppendInt64(bson_t* b, const char* key) {
    const int64_t k53 = int64_t{1} << 53;
    const int64_t kInts[] = {0, 1, -1, 3,
                             std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::min() + 1,
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::max() - 1,
                             k53, k53 + 1, k53 - 1, k53 + 2, -k53, -k53 - 1,
                             int64_t{1} << 62, (int64_t{1} << 62) + 1,
                             std::numeric_limits<int32_t>::max() + int64_t{1}};
    int64_t x;
    switch (Pick(4)) {
      case 0: x = static_cast<int64_t>(Next64()); break;
      case 1: x = static_cast<int64_t>(Pick(201)) - 100; break;
      case 2: x = static_cast<int64_t>(Next64() >> Pick(64)) * (Pick(2) ? 1 : -1); break;
      default: x = kInts[Pick(sizeof(kInts) / sizeof(kInts[0]))]; break;
    }
    bson_append_int64(b, key, -1, x);
  }

  void AppendDouble(bson_t* b, const char* key) {
    const double kDoubles[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -1.5, 2.0, 0.1,
                               std::numeric_limits<double>::quiet_NaN(),
                               -std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               9007199254740992.0, 9007199254740994.0, -9007199254740992.0,
                               9.223372036854776e18, -9.223372036854776e18,
                               4611686018427387904.0, 1e300, -1e300, DBL_MAX, -DBL_MAX,
                               DBL_MIN, -DBL_MIN, std::numeric_limits<double>::denorm_min(),
                               -std::numeric_limits<double>::denorm_min(), 2147483648.0};
    double x;
    switch (Pick(4)) {
      case 0: x = std::uniform_real_distribution<double>(-100, 100)(rng_); break;
      case 1: x = static_cast<double>(static_cast<int>(Pick(201)) - 100); break;
      case 2: {
        uint64_t bits = Next64();
        std::memcpy(&x, &bits, sizeof(x));  // any double, NaN payloads included
        break;
      }
      default: x = kDoubles[Pick(sizeof(kDoubles) / sizeof(kDoubles[0]))]; break;
    }
    bson_append_double(b, key, -1, x);
  }

  void AppendDecimal(bson_t* b, const char* key) {
    static const char* kDecimals[] = {
        "1.0", "1", "1.000", "-0", "0", "0E+10", "0.1", "-0.1", "1.5", "-2.50", "2",
        "NaN", "-NaN", "Infinity", "-Infinity", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "9007199254740993", "9007199254740992", "1E+6144",
        "-1E+6144", "1E-6176", "9.999999999999999999999999999999999E+6144",
        "123456789012345678901234567890123", "0.1000000000000000000000000000000001",
        "1E+400", "1E+5000", "-1E-5000", "4611686018427387904",
        // Decimals between adjacent 64-bit binary values, and their
        // neighbours: the exact suffix (key_format.h).
        "5", "5.000000000000000000000000000000001", "4.999999999999999999999999999999999",
        "-5.000000000000000000000000000000001", "-4.999999999999999999999999999999999",
        "5.000000000000000000000000000000002", "5.0000000000000000000000000000000010",
        "9999999999999999999999999999999999", "9999999999999999999999999999999998",
        "0.1000000000000000055511151231257827", "0.1000000000000000055511151231257828",
        "-0.1000000000000000055511151231257827", "18446744073709551615", "18446744073709551615.5",
        "18446744073709551616", "-18446744073709551615.5", "15E-6176", "-1E-6176"};
    std::string s;
    if (Pick(3) == 0) {
      s = std::to_string(static_cast<int>(Pick(2001)) - 1000);
      if (Pick(2)) s += "." + std::to_string(Pick(1000));
      if (Pick(3) == 0) s += "E" + std::to_string(static_cast<int>(Pick(41)) - 20);
    } else {
      s = kDecimals[Pick(sizeof(kDecimals) / sizeof(kDecimals[0]))];
    }
    bson_decimal128_t d;
    if (!bson_decimal128_from_string(s.c_str(), &d)) {
      ADD_FAILURE() << "bad decimal " << s;
      return;
    }
    bson_append_decimal128(b, key, -1, &d);
  }

  void AppendDocument(bson_t* b, const char* key, int depth, bool array) {
    static const char* kKeys[] = {"a", "b", "ab", "_id", "", "\xc3\xa9"};
    bson_t child;
    if (array) {
      bson_append_array_begin(b, key, -1, &child);
    } else {
      bson_append_document_begin(b, key, -1, &child);
    }
    size_t n = depth >= 3 ? Pick(2) : Pick(4);
    for (size_t i = 0; i < n; ++i) {
      std::string k = array ? std::to_string(i) : kKeys[Pick(6)];
      if (depth >= 3) {
        // Keep deep levels scalar.
        if (Pick(2)) {
          bson_append_int32(&child, k.c_str(), -1, static_cast<int32_t>(Pick(3)));
        } else {
          bson_append_utf8(&child, k.c_str(), -1, Pick(2) ? "a" : "b", -1);
        }
      } else {
        Append(&child, k.c_str(), depth + 1);
      }
    }
    if (array) {
      bson_append_array_end(b, &child);
    } else {
      bson_append_document_end(b, &child);
    }
  }

  std::mt19937 rng_;
};

uint32_t TestSeed() {
  const char* env = std::getenv("GATEDB_TEST_SEED");
  return env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                        : std::random_device{}();
}

// ---------------------------------------------------------------------------

TEST(KeyCodecTest, RandomValuesOrderLikeCompareValues) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with GATEDB_TEST_SEED=" +
               std::to_string(seed) + ")");
  RandomValues gen(seed);
  ValueHolder holder;
  const size_t kValues = 2500;
  for (size_t i = 0; i < kValues; ++i) gen.Append(holder.NewDoc(), "v", 0);

  std::vector<Value> values;
  std::vector<std::string> encodings;
  for (size_t i = 0; i < holder.size(); ++i) {
    values.push_back({holder.Value(i)});
    encodings.push_back(Enc(values.back().v));
  }

  int failures = 0;
  size_t equal_pairs = 0;
  for (size_t i = 0; i < values.size() && failures < 10; ++i) {
    for (size_t j = i; j < values.size() && failures < 10; ++j) {
      int want = Sign(CompareValues(values[i].v, values[j].v));
      int got = CompareKeys(encodings[i], encodings[j]);
      if (want == 0) ++equal_pairs;
      if (want != got) {
        ++failures;
        ADD_FAILURE() << "CompareValues says " << want << ", keys say " << got << "\n  a = "
                      << holder.Json(i) << "  " << Hex(encodings[i]) << "\n  b = "
                      << holder.Json(j) << "  " << Hex(encodings[j]);
      }
    }
  }
  // The pools are small on purpose: many distinct pairs must compare equal.
  EXPECT_GT(equal_pairs, values.size());

  // Concatenations (a composite key) order component by component.
  for (int n = 0; n < 200000 && failures < 20; ++n) {
    size_t a1 = gen.Pick(values.size()), a2 = gen.Pick(values.size());
    size_t b1 = gen.Pick(values.size()), b2 = gen.Pick(values.size());
    if (gen.Pick(4) == 0) b1 = a1;  // force ties on the first component
    int want = Sign(CompareValues(values[a1].v, values[b1].v));
    if (want == 0) want = Sign(CompareValues(values[a2].v, values[b2].v));
    int got = CompareKeys(encodings[a1] + encodings[a2], encodings[b1] + encodings[b2]);
    if (want != got) {
      ++failures;
      ADD_FAILURE() << "composite: want " << want << ", got " << got << "\n  a = ("
                    << holder.Json(a1) << ", " << holder.Json(a2) << ")\n  b = ("
                    << holder.Json(b1) << ", " << holder.Json(b2) << ")";
    }
  }
}

TEST(KeyCodecTest, EqualNumbersEncodeIdentically) {
  const std::string one = EncInt32(1);
  EXPECT_EQ(one, EncInt64(1));
  EXPECT_EQ(one, EncDouble(1.0));
  EXPECT_EQ(one, EncDecimal("1.0"));
  EXPECT_EQ(one, EncDecimal("1"));
  EXPECT_EQ(one, EncDecimal("100E-2"));
  EXPECT_EQ(one, EncJson(R"({"v": {"$numberLong": "1"}})"));

  const std::string zero = EncInt32(0);
  EXPECT_EQ(zero, EncInt64(0));
  EXPECT_EQ(zero, EncDouble(0.0));
  EXPECT_EQ(zero, EncDouble(-0.0));
  EXPECT_EQ(zero, EncDecimal("-0"));
  EXPECT_EQ(zero, EncDecimal("0E+10"));

  EXPECT_EQ(EncInt32(-7), EncDouble(-7.0));
  EXPECT_EQ(EncInt64(int64_t{1} << 53), EncDouble(9007199254740992.0));
  EXPECT_EQ(EncInt64(std::numeric_limits<int64_t>::min()), EncDouble(-9.223372036854776e18));
  EXPECT_EQ(EncDouble(0.5), EncDecimal("0.5"));
  EXPECT_EQ(EncDouble(std::numeric_limits<double>::quiet_NaN()), EncDecimal("NaN"));
  EXPECT_EQ(EncDouble(-std::numeric_limits<double>::quiet_NaN()), EncDecimal("NaN"));
  EXPECT_EQ(EncDouble(std::numeric_limits<double>::infinity()), EncDecimal("Infinity"));
  EXPECT_EQ(EncDouble(-std::numeric_limits<double>::infinity()), EncDecimal("-Infinity"));
  // A string and a symbol with the same bytes are the same value.
  EXPECT_EQ(EncJson(R"({"v": "abc"})"), EncJson(R"({"v": {"$symbol": "abc"}})"));
}

TEST(KeyCodecTest, NumbersOrderByValue) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  // 2^63 - 1 as an int64 is below the double 9.223372036854776e18 (= 2^63).
  EXPECT_LT(EncInt64(kMax), EncDouble(9.223372036854776e18));
  EXPECT_LT(EncInt64(kMax - 1), EncInt64(kMax));
  EXPECT_GT(EncInt64((int64_t{1} << 53) + 1), EncDouble(9007199254740992.0));
  EXPECT_LT(EncInt64((int64_t{1} << 53) + 1), EncDouble(9007199254740994.0));
  EXPECT_LT(EncInt64(std::numeric_limits<int64_t>::min()),
            EncInt64(std::numeric_limits<int64_t>::min() + 1));

  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<std::string> ordered = {
      EncDouble(kNaN),         EncDouble(-kInf),        EncDecimal("-1E+4000"),
      EncDouble(-DBL_MAX),     EncInt64(std::numeric_limits<int64_t>::min()),
      EncInt32(-2),            EncDouble(-1.5),         EncInt32(-1),
      EncDouble(-0.5),         EncDouble(-std::numeric_limits<double>::denorm_min()),
      EncInt32(0),             EncDouble(std::numeric_limits<double>::denorm_min()),
      EncDouble(DBL_MIN),      EncDecimal("0.1"),       EncDouble(0.5),
      EncInt32(1),             EncDecimal("1.000000000000000001"),
      EncDouble(1.5),          EncInt64(2),             EncInt64(kMax),
      EncDouble(9.223372036854776e18), EncDouble(DBL_MAX), EncDecimal("1E+400"),
      EncDouble(kInf)};
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_LT(ordered[i], ordered[i + 1]) << "at " << i;
  }

  // Decimals encode exactly (format version 2): beyond the long double
  // range they stay finite, and digits past 64 bits still count.
  EXPECT_GT(EncDecimal("-1E+6000"), EncDouble(-kInf));
  EXPECT_LT(EncDecimal("-1E+6000"), EncDouble(-DBL_MAX));
  EXPECT_GT(EncDecimal("1E-6000"), EncInt32(0));
  EXPECT_LT(EncDecimal("1E-6000"), EncDouble(std::numeric_limits<double>::denorm_min()));
  EXPECT_GT(EncDecimal("1.000000000000000000001"), EncInt32(1));
  EXPECT_LT(EncDecimal("1.000000000000000000001"), EncDouble(std::nextafter(1.0, 2.0)));
  EXPECT_LT(EncDecimal("9999999999999999999999999999999998"), EncDecimal("9999999999999999999999999999999999"));
  EXPECT_LT(EncDecimal("0.1000000000000000055511151231257827"), EncDouble(0.1));
  EXPECT_GT(EncDecimal("0.1000000000000000055511151231257828"), EncDouble(0.1));
  EXPECT_EQ(EncDecimal("5.10"), EncDecimal("5.1"));
  bson_value_t one, almost_one;
  one.value_type = almost_one.value_type = BSON_TYPE_DECIMAL128;
  ASSERT_TRUE(bson_decimal128_from_string("1", &one.value.v_decimal128));
  ASSERT_TRUE(bson_decimal128_from_string("1.000000000000000000001", &almost_one.value.v_decimal128));
  EXPECT_LT(CompareValues(one, almost_one), 0);
}

// The bytes key_format.h documents.
TEST(KeyCodecTest, InexactDecimalBytes) {
  // 0.1: L = 0xCCCCCCCCCCCCCCCC * 2^-67 (exponent -3 + 0x8000), then 0xFF,
  // the adjusted exponent -1 + 0x8000, the digit 1 as 0x02, the end 0x00.
  EXPECT_EQ(Hex(EncDecimal("0.1")), "1e" "05" "7ffd" "cccccccccccccccc" "ff" "7fff" "02" "00");
  // -0.1: L = -u with u = 0xCCCCCCCCCCCCCCCD * 2^-67, then ~P(0.1).
  EXPECT_EQ(Hex(EncDecimal("-0.1")), "1e" "03" "8002" "3333333333333332" "ff" "8000" "fd" "ff");
  // 5 + 1E-33: L = 5 (its int32 bytes), then 34 digits 5 0 ... 0 1.
  std::string zeros;
  for (int i = 0; i < 32; ++i) zeros += "01";
  EXPECT_EQ(Hex(EncDecimal("5.000000000000000000000000000000001")),
            Hex(EncInt32(5)) + "ff" + "8000" + "06" + zeros + "02" + "00");
  // A carry: -x just above -2^64 has L = -u with u = 2^64 = 2^63 * 2^1.
  std::string neg = EncDecimal("-18446744073709551615.5");
  EXPECT_EQ(Hex(neg.substr(0, 13)), "1e" "03" "7fbe" "7fffffffffffffff" "ff");
  // Exact decimals keep the layout of ints and doubles, without a suffix:
  // 10^27 = 5^27 * 2^27 with 5^27 = 0x6765C793FA10079D (63 bits).
  EXPECT_EQ(Hex(EncDecimal("1E+27")), "1e" "05" "805a" "cecb8f27f4200f3a");
  EXPECT_EQ(EncDecimal("-0.0000152587890625"), EncDouble(-0.0000152587890625));
  EXPECT_EQ(Hex(EncDecimal("18446744073709551615")), "1e" "05" "8040" "ffffffffffffffff");
}

std::string EncDesc(const bson_value_t& v) {
  std::string out;
  EncodeValueDescending(v, &out);
  return out;
}

std::string Inverted(std::string s) {
  for (char& c : s) c = static_cast<char>(~static_cast<uint8_t>(c));
  return s;
}

TEST(KeyCodecTest, DescendingComponentsOrderInReverse) {
  ValueHolder holder;
  for (const char* s : {"5", "5.000000000000000000000000000000001", "4.999999999999999999999999999999999",
                        "-5.000000000000000000000000000000001", "-4.999999999999999999999999999999999"}) {
    holder.Add(test::Json(std::string(R"({"v": {"$numberDecimal": ")") + s + "\"}}"));
  }
  const bson_value_t five = holder.Value(0), above = holder.Value(1), below = holder.Value(2);
  const bson_value_t neg_below = holder.Value(3), neg_above = holder.Value(4);
  // Descending: larger values first, with nothing after the component (a
  // unique index) and with something after it.
  EXPECT_LT(EncDesc(above), EncDesc(five));
  EXPECT_LT(EncDesc(five), EncDesc(below));
  EXPECT_LT(EncDesc(neg_above), EncDesc(neg_below));
  EXPECT_LT(EncDesc(above) + EncInt32(1), EncDesc(five));
  EXPECT_LT(EncDesc(above), EncDesc(five) + EncInt32(1));
  EXPECT_LT(EncDesc(five) + EncInt32(1), EncDesc(below));
  // Why a top-level decimal is not simply the inverted ascending bytes:
  // ~EncodeValue(5) is a prefix of ~EncodeValue(5 + 1E-33), so alone (a
  // unique descending index) it would sort first although 5 is smaller.
  EXPECT_GT(Inverted(Enc(above)), Inverted(Enc(five)));
  // Non-decimals and exact decimals are the inverted bytes.
  EXPECT_EQ(EncDesc(five), Inverted(Enc(five)));
  // The keys equal to v are [C, C + 0xFF): 5's neighbours fall outside.
  const std::string c = EncDesc(five);
  EXPECT_FALSE(EncDesc(above) >= c && EncDesc(above) < c + "\xFF");
  EXPECT_FALSE(EncDesc(below) >= c && EncDesc(below) < c + "\xFF");
  EXPECT_TRUE(c + EncInt32(7) < c + "\xFF");
}

TEST(KeyCodecTest, RandomDescendingComponentsOrderInReverse) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomValues gen(seed);
  ValueHolder holder;
  for (size_t i = 0; i < 1500; ++i) gen.Append(holder.NewDoc(), "v", 0);
  std::vector<Value> values;
  std::vector<std::string> asc, desc;
  for (size_t i = 0; i < holder.size(); ++i) {
    values.push_back({holder.Value(i)});
    asc.push_back(Enc(values.back().v));
    desc.push_back(EncDesc(values.back().v));
  }
  int failures = 0;
  for (size_t i = 0; i < values.size() && failures < 10; ++i) {
    for (size_t j = i; j < values.size() && failures < 10; ++j) {
      int want = -Sign(CompareValues(values[i].v, values[j].v));
      if (CompareKeys(desc[i], desc[j]) != want) {
        ++failures;
        ADD_FAILURE() << "descending: want " << want << "\n  a = " << holder.Json(i) << "  " << Hex(desc[i])
                      << "\n  b = " << holder.Json(j) << "  " << Hex(desc[j]);
      }
    }
  }
  // Composite keys of mixed directions, with and without a trailing _id.
  for (int n = 0; n < 200000 && failures < 20; ++n) {
    size_t a1 = gen.Pick(values.size()), a2 = gen.Pick(values.size());
    size_t b1 = gen.Pick(values.size()), b2 = gen.Pick(values.size());
    if (gen.Pick(3) == 0) b1 = a1;
    const int shape = static_cast<int>(gen.Pick(4));
    const bool d1 = shape & 1, d2 = shape & 2;
    int want = Sign(CompareValues(values[a1].v, values[b1].v)) * (d1 ? -1 : 1);
    if (want == 0) want = Sign(CompareValues(values[a2].v, values[b2].v)) * (d2 ? -1 : 1);
    std::string ka = (d1 ? desc[a1] : asc[a1]) + (d2 ? desc[a2] : asc[a2]);
    std::string kb = (d1 ? desc[b1] : asc[b1]) + (d2 ? desc[b2] : asc[b2]);
    if (gen.Pick(2) == 0) {  // a non-unique index appends the _id
      ka += EncInt32(static_cast<int32_t>(a1));
      kb += EncInt32(static_cast<int32_t>(b1));
      if (want == 0) want = Sign(static_cast<int>(a1) - static_cast<int>(b1));
    }
    int got = CompareKeys(ka, kb);
    if (want != got) {
      ++failures;
      ADD_FAILURE() << "composite (" << d1 << d2 << "): want " << want << ", got " << got << "\n  a = ("
                    << holder.Json(a1) << ", " << holder.Json(a2) << ")\n  b = (" << holder.Json(b1) << ", "
                    << holder.Json(b2) << ")";
    }
  }
}

TEST(KeyCodecTest, StringsOrderBytewiseShorterFirst) {
  const std::string a = EncString("a");
  const std::string a0 = EncString(std::string("a\0", 2));
  const std::string a1 = EncString("a\x01");
  const std::string ab = EncString("ab");
  EXPECT_LT(EncString(""), EncString(std::string("\0", 1)));
  EXPECT_LT(a, a0);
  EXPECT_LT(a0, a1);
  EXPECT_LT(a1, ab);
  EXPECT_LT(ab, EncString("\xc3\xa9"));  // UTF-8 bytes compare unsigned
  EXPECT_EQ(Sign(CompareKeys(a0, EncString(std::string("a\0\0", 3)))), -1);
}

TEST(KeyCodecTest, DocumentsAndArraysOrderElementwise) {
  EXPECT_LT(EncJson(R"({"v": {"a": 1}})"), EncJson(R"({"v": {"a": 1, "b": 1}})"));
  EXPECT_LT(EncJson(R"({"v": {}})"), EncJson(R"({"v": {"a": {"$minKey": 1}}})"));
  EXPECT_LT(EncJson(R"({"v": {"a": 1}})"), EncJson(R"({"v": {"b": 0}})"));
  EXPECT_LT(EncJson(R"({"v": {"a": 5}})"), EncJson(R"({"v": {"a": "0"}})"));  // type first
  EXPECT_LT(EncJson(R"({"v": {"a": 1}})"), EncJson(R"({"v": {"ab": 0}})"));
  EXPECT_EQ(EncJson(R"({"v": {"a": 1}})"), EncJson(R"({"v": {"a": 1.0}})"));
  EXPECT_LT(EncJson(R"({"v": [1, 2]})"), EncJson(R"({"v": [1, 2, 0]})"));
  EXPECT_LT(EncJson(R"({"v": [1, 2]})"), EncJson(R"({"v": [1, 3]})"));
  EXPECT_LT(EncJson(R"({"v": {"z": [9]}})"), EncJson(R"({"v": []})"));  // object < array
}

TEST(KeyCodecTest, TypesOrderByCanonicalRank) {
  const char* ordered[] = {
      R"({"v": {"$minKey": 1}})",
      R"({"v": {"$undefined": true}})",
      R"({"v": null})",
      R"({"v": {"$numberDouble": "Infinity"}})",
      R"({"v": ""})",
      R"({"v": {}})",
      R"({"v": []})",
      R"({"v": {"$binary": {"base64": "", "subType": "00"}}})",
      R"({"v": {"$binary": {"base64": "", "subType": "80"}}})",
      R"({"v": {"$binary": {"base64": "AA==", "subType": "00"}}})",
      R"({"v": {"$oid": "000000000000000000000000"}})",
      R"({"v": {"$oid": "ffffffffffffffffffffffff"}})",
      R"({"v": false})",
      R"({"v": true})",
      R"({"v": {"$date": {"$numberLong": "-1"}}})",
      R"({"v": {"$date": {"$numberLong": "0"}}})",
      R"({"v": {"$timestamp": {"t": 0, "i": 5}}})",
      R"({"v": {"$timestamp": {"t": 1, "i": 0}}})",
      R"({"v": {"$regularExpression": {"pattern": "a", "options": "i"}}})",
      R"({"v": {"$regularExpression": {"pattern": "ab", "options": ""}}})",
      R"({"v": {"$maxKey": 1}})"};
  for (size_t i = 0; i + 1 < sizeof(ordered) / sizeof(ordered[0]); ++i) {
    EXPECT_LT(EncJson(ordered[i]), EncJson(ordered[i + 1])) << ordered[i] << " vs " << ordered[i + 1];
  }
}

TEST(KeyCodecTest, ObjectIdEncodingIsTypeByteAndRawBytes) {
  std::string e = EncJson(R"({"v": {"$oid": "0102030405060708090a0b0c"}})");
  EXPECT_EQ(Hex(e), "500102030405060708090a0b0c");
  EXPECT_EQ(Hex(EncInt32(1)), "1e05" "8001" "8000000000000000");
  EXPECT_EQ(Hex(EncString("a")), "28" "61" "0001");
}

TEST(KeyCodecTest, DocKeysSeparateAndOrderCollections) {
  Document ids = test::Json(R"({"a": {"$minKey": 1}, "b": {"$numberDouble": "NaN"}, "c": 0,
                                "d": "zzz", "e": {"x": [1]}, "f": {"$maxKey": 1}})");
  std::vector<Value> values;
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, ids.bson()));
  while (bson_iter_next(&it)) values.push_back({*bson_iter_value(&it)});

  const uint32_t kIds[] = {0, 1, 2, 255, 256, 0x01000000, 0xFFFFFFFE, 0xFFFFFFFF};
  std::string previous_max;
  for (uint32_t cid : kIds) {
    const std::string prefix = CollectionPrefix(cid);
    const std::string bound = CollectionUpperBound(cid);
    ASSERT_EQ(prefix.size(), kCollectionIdSize);
    EXPECT_EQ(DecodeCollectionId(prefix), cid);
    std::string min_key, max_key;
    for (const Value& value : values) {
      std::string key = EncodeDocKey(cid, value.v);
      EXPECT_EQ(key.compare(0, prefix.size(), prefix), 0);
      EXPECT_EQ(DecodeCollectionId(key), cid);
      EXPECT_GT(key, prefix);
      EXPECT_LT(key, bound);
      EXPECT_GT(key, previous_max) << "collection " << cid << " overlaps the one before it";
      if (min_key.empty() || key < min_key) min_key = key;
      if (key > max_key) max_key = key;
    }
    if (cid < 0xFFFFFFFF) {
      EXPECT_LE(bound, CollectionPrefix(cid + 1));
    }
    previous_max = max_key;
  }
  EXPECT_LT(EncodeDocKey(1, values.back().v), EncodeDocKey(2, values.front().v));
}

}  // namespace
}  // namespace keys
}  // namespace gatedb
