// File: engine/keys/key_format.h
//
// Byte layout of gatedb's order-preserving keys.  Keys are compared by
// RocksDB's default bytewise comparator (memcmp, then shorter first), and the
// encoding below makes that order equal to MongoDB's BSON comparison order as
// implemented by CompareValues (engine/document/bson_compare.h).
//
// DO NOT CHANGE any byte value or layout below: every stored key depends on
// it.  A new layout needs a new format version and a migration.
//
// Format versions (the store records its own: the catalog's
// "meta:format_version", engine/storage/db_impl_open.cc):
//   1  decimal128 encoded as its nearest 80-bit long double, so distinct
//      decimals could share a key and order inexactly.
//   2  (current) decimal128 encoded exactly (below); every other byte as in
//      version 1, and a decimal that a 64-bit binary value equals encodes
//      as in version 1 too.  Opening a version-1 store re-keys documents
//      whose _id holds another decimal and rebuilds the indexes of
//      collections holding one (DBImpl::MigrateKeyFormat).
//
// ---------------------------------------------------------------------------
// Document key ("docs" column family)
//
//   +----------------------------+--------------------------------+
//   | collection id: 4 bytes,    | EncodeValue(_id)               |
//   | big-endian uint32          | (variable, self-delimiting)    |
//   +----------------------------+--------------------------------+
//
// All documents of one collection share the 4-byte prefix, and collections
// sort by id.  The byte after the prefix is always a type byte (<= 0xF0), so
// prefix + 0xFF is an exclusive upper bound for the collection.
//
// ---------------------------------------------------------------------------
// EncodeValue(v) := type byte, then the body for that type.
//
// Type bytes follow MongoDB's canonical type rank; types of equal rank share
// a byte (int32/int64/double/decimal128 -> kTypeNumber, string/symbol ->
// kTypeString, null/EOO -> kTypeNull).  All are non-zero and below 0xFF.
//
// Bodies (BE = big-endian):
//   MinKey, undefined, null, MaxKey
//       (empty)
//   number
//       class byte, then for finite non-zero numbers 10 more bytes:
//         kNumNaN      0x01   every NaN (int, double or decimal: NaN == NaN)
//         kNumNegInf   0x02   -Infinity
//         kNumNegative 0x03   ~exponent (2 bytes BE), ~mantissa (8 bytes BE)
//         kNumZero     0x04   0 and -0 of every type
//         kNumPositive 0x05   exponent (2 bytes BE), mantissa (8 bytes BE)
//         kNumPosInf   0x06   +Infinity
//       where |v| = mantissa * 2^(exponent - kExponentBias - 64), and the
//       mantissa's top bit is set (normalized; 64 significant bits, the
//       x87 80-bit long double's).  ~ is bitwise NOT, so larger magnitudes
//       sort first among negatives.  Every int32, int64 and double is such a
//       value exactly, and so is a decimal128 that some 64-bit binary value
//       equals (5, 5.0, 0.5, 1E+27, 2^-16): equal numbers of different
//       types (1, 1L, 1.0, 1.0m) encode equal.
//
//       Any other decimal x (0.1, 1.000000000000000000000000000000001,
//       1E+400) lies strictly between two adjacent 64-bit values: with
//       t = |x| truncated to 64 significant bits and u the next 64-bit
//       value above t (its mantissa may carry into the exponent),
//       t < |x| < u.  Let L < x < H be those neighbours with signs
//       (x > 0: L = t, H = u; x < 0: L = -u, H = -t), and
//         P(|x|) = adjusted exponent + kDecimalExponentBias (2 bytes BE),
//                  then each digit d of the coefficient without trailing
//                  zeros as d + 1 (0x01..0x0A), then kDecimalEnd (0x00)
//         S(x)   = P(|x|) for x > 0, ~P(|x|) (every byte inverted) for x < 0
//       (the adjusted exponent of c * 10^q with n digits is q + n - 1, so
//       P orders magnitudes and is cohort-free: 5.10 and 5.1 are alike).
//       Then x's body is
//         L's 11 bytes above, kDecimalSuffix (0xFF), S(x)
//       e.g. 0.1's body is 05 7F FD CC CC CC CC CC CC CC CC FF 7F FF 02 00
//       (t = 0xCCCCCCCCCCCCCCCC * 2^-67; adjusted exponent -1; digit 1).
//       Why it sorts: every byte that can follow a complete number
//       encoding is below 0xFF (a type byte, kEndOfDocument, the inverted
//       type byte of a descending index component) or the key ends there,
//       so x's key sorts after every key of L and before H's, whose
//       11 bytes are larger; within one interval S orders by value.  The
//       exponent field covers decimal128's whole range (|x| from 2^-20517
//       to 2^20415: exponent + 0x8000 stays within 2 bytes).
//
//       Consequence: a number's encoding is no longer prefix-free (x's
//       starts with L's).  "Every key equal to v" is [E, E + 0xFF) with
//       E = EncodeValue(v), not "every key that starts with E"
//       (engine/index/planner.cc).
//
//       A descending index component (EncodeValueDescending) is the
//       inverted encoding, except for such a top-level decimal: there it is
//         ~(kTypeNumber), ~(H's 11 bytes), kDecimalSuffix (0xFF), ~S(x)
//       Inverting x's ascending bytes would put ~L's bytes first, and in a
//       unique index (no _id after the component) ~L's key alone would be a
//       prefix of x's and sort before it although L < x.  Inside a
//       document or array a number is always followed by a type byte or
//       kEndOfDocument, so there the plain inversion orders correctly.
//   string, symbol
//       escaped bytes: each 0x00 becomes 0x00 0xFF; then 0x00 0x01.
//   document, array
//       for each element: type byte, field name bytes, 0x00, body;
//       then kEndOfDocument (0x00).  (Field names cannot hold 0x00.  Array
//       elements keep their "0", "1", ... names, as CompareValues does.)
//   binary
//       length (4 bytes BE), subtype (1 byte), the bytes.
//   ObjectId
//       the 12 bytes.
//   bool
//       0x00 false, 0x01 true.
//   date
//       (uint64)millis XOR 2^63, 8 bytes BE (signed order).
//   timestamp
//       seconds (4 bytes BE), increment (4 bytes BE).
//   regex
//       pattern bytes, 0x00, options bytes, 0x00.
//   DBPointer
//       escaped collection name (as a string), 12 ObjectId bytes.
//   code
//       escaped bytes (as a string).
//   code with scope
//       escaped code (as a string), then the scope as a document body.
//
// Every body is self-delimiting, so encodings can be concatenated in a
// composite key (index key + _id) and still sort component by component
// (an exact decimal's suffix starts with 0xFF, which no following byte is).
#ifndef GATEDB_ENGINE_KEYS_KEY_FORMAT_H_
#define GATEDB_ENGINE_KEYS_KEY_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace gatedb {
namespace keys {

// Length of the collection-id prefix of a document key.
constexpr size_t kCollectionIdSize = 4;

// Type bytes, in canonical rank order.  DO NOT CHANGE.
enum KeyType : uint8_t {
  kEndOfDocument = 0x00,  // ends a document/array body; below every type
  kTypeMinKey = 0x05,
  kTypeUndefined = 0x0A,
  kTypeNull = 0x14,
  kTypeNumber = 0x1E,
  kTypeString = 0x28,
  kTypeObject = 0x32,
  kTypeArray = 0x3C,
  kTypeBinary = 0x46,
  kTypeObjectId = 0x50,
  kTypeBool = 0x5A,
  kTypeDate = 0x64,
  kTypeTimestamp = 0x6E,
  kTypeRegex = 0x78,
  kTypeDBPointer = 0x82,
  kTypeCode = 0x8C,
  kTypeCodeWithScope = 0x96,
  kTypeMaxKey = 0xF0,
};

// Greater than every type byte: CollectionPrefix(id) + kAfterAllTypes bounds
// a collection's keys from above.
constexpr uint8_t kAfterAllTypes = 0xFF;

// Number class bytes.  DO NOT CHANGE.
enum NumberClass : uint8_t {
  kNumNaN = 0x01,
  kNumNegInf = 0x02,
  kNumNegative = 0x03,
  kNumZero = 0x04,
  kNumPositive = 0x05,
  kNumPosInf = 0x06,
};

// Stored exponent = binary exponent (frexp convention, mantissa in
// [0.5, 1)) + kExponentBias.  The long double range, -16444..16384, fits,
// and so does decimal128's, about -20517..20415.
constexpr int kExponentBias = 0x8000;

// The exact decimal suffix (format version 2).  DO NOT CHANGE.
constexpr uint8_t kDecimalSuffix = 0xFF;       // after L's number bytes
constexpr int kDecimalExponentBias = 0x8000;   // + the adjusted exponent, 2 bytes BE
constexpr uint8_t kDecimalEnd = 0x00;          // ends P's digits (each digit + 1)

// String escaping.  DO NOT CHANGE.
constexpr uint8_t kEscape = 0x00;          // introduces an escape pair
constexpr uint8_t kEscapedZero = 0xFF;     // 0x00 0xFF is a 0x00 byte
constexpr uint8_t kStringTerminator = 0x01;  // 0x00 0x01 ends a string

}  // namespace keys
}  // namespace gatedb

#endif  // GATEDB_ENGINE_KEYS_KEY_FORMAT_H_
