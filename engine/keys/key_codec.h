// File: engine/keys/key_codec.h
//
// Order-preserving encoding of BSON values into byte strings, and the
// document keys built from it.  For any two values a and b,
//
//   sign(memcmp-order(EncodeValue(a), EncodeValue(b))) == sign(CompareValues(a, b))
//
// where memcmp-order is RocksDB's bytewise comparator and CompareValues is
// MongoDB's BSON order (engine/document/bson_compare.h).  In particular
// values that CompareValues calls equal encode to identical bytes (1, 1L,
// 1.0, NumberDecimal("1.0"); 0 and -0.0; a string and an equal symbol), so
// they are the same _id; distinct values encode differently (decimals
// exactly, in every digit).  Encodings are self-delimiting: a concatenation
// of encodings sorts component by component.  They are not prefix-free: a
// decimal just above a 64-bit binary value v starts with v's bytes and
// 0xFF, so the keys equal to v are [EncodeValue(v), EncodeValue(v) + 0xFF).
// The byte layout is in key_format.h.
//
// There is no decoder: the _id's original BSON type lives in the stored
// document, and equal numbers of different types share one encoding.
//
// Thread safety: pure functions.
//
//   bson_iter_t it;
//   if (bson_iter_init_find(&it, doc, "_id")) {
//     std::string key = keys::EncodeDocKey(collection_id, *bson_iter_value(&it));
//   }
#ifndef GATEDB_ENGINE_KEYS_KEY_CODEC_H_
#define GATEDB_ENGINE_KEYS_KEY_CODEC_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gatedb {
namespace keys {

// Appends the order-preserving encoding of `v` to *out.
// REQUIRES: documents, arrays and code-with-scope scopes inside `v` are
// well-formed BSON (as after ValidateForStorage or Document::FromBytes);
// malformed nested bytes are encoded as if the document ended there.
// Nesting is walked iteratively; only code-with-scope scopes recurse.
void EncodeValue(const bson_value_t& v, std::string* out);

// Appends the encoding of `v` for a descending index component: the bytes of
// EncodeValue(v) inverted, except for a top-level decimal that no 64-bit
// binary value equals (key_format.h).  Bytewise order is the reverse of
// MongoDB's; the keys equal to v are [E, E + 0xFF) with E these bytes.
// REQUIRES: as EncodeValue.
void EncodeValueDescending(const bson_value_t& v, std::string* out);

// True when `v` (or a document: any value in it, at any depth) holds a
// decimal128 that no 64-bit binary value equals: the values whose encoding
// format version 2 changed (key_format.h).
bool HasInexactDecimal(const bson_value_t& v);
bool HasInexactDecimal(const bson_t* doc);

// Key format version 1's encoding (decimals as their nearest 80-bit long
// double), for tests that build a store of that version.
void TEST_EncodeValueFormat1(const bson_value_t& v, std::string* out);

// The 4-byte big-endian prefix shared by every key of the collection.
std::string CollectionPrefix(uint32_t collection_id);

// An exclusive upper bound for the collection's keys (prefix + 0xFF), for
// ReadOptions::iterate_upper_bound.
std::string CollectionUpperBound(uint32_t collection_id);

// CollectionPrefix(collection_id) + EncodeValue(id).
std::string EncodeDocKey(uint32_t collection_id, const bson_value_t& id);

// The collection id of a document key (or of a CollectionPrefix).
// REQUIRES: key.size() >= kCollectionIdSize (4).
uint32_t DecodeCollectionId(std::string_view key);

}  // namespace keys
}  // namespace gatedb

#endif  // GATEDB_ENGINE_KEYS_KEY_CODEC_H_
