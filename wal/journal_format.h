// File: wal/journal_format.h
//
// The on-disk layout of gatedb's journal.  Everything in this file is a
// persistent format: DO NOT CHANGE a name, a byte or an order once released;
// add a new format byte instead.
//
// Three RocksDB column families, opened by the engine (Journal does not own
// them):
//
// "journal"      one entry per event, keyed by its global sequence number.
//   key   = seq, uint64, 8 bytes big-endian (so keys sort in commit order).
//           Nothing else lives in this family: every key is a seq, so
//           SeekToLast() finds the last event.
//   value = byte 0        format (kEventFormatV1 = 0x01)
//           bytes 1..4    uint32 big-endian length N of the document key
//           N bytes       the document key (N = 0: the event has none)
//           the rest      the event, a BSON document whose FIRST field is
//                         "seq" (int64, equal to the key) and which holds an
//                         "at" field (BSON date) used by retention.
//
// "journal_doc"  per-document index: which events touched one document, in
//                commit order.  One entry per event written with
//                index_doc = true (never for "conflict" events).
//   key   = document key bytes + seq (uint64, 8 bytes big-endian)
//   value = version_after, int64 stored sign-flipped big-endian
//           (EncodeVersion), 8 bytes.
//   A document's entries are the keys whose length is N + 8 and that start
//   with its key; when document keys are prefix-free (the engine's are:
//   collection id + an order-preserving, self-delimiting _id encoding) they
//   are also contiguous.  The key holds the seq rather than the version so
//   that entries are unique: a document that is deleted and inserted again
//   starts again at version 0 and must not overwrite (or, when collected,
//   delete) the entries of its new life.
//
// "journal_meta" small records about the journal.
//   "first_seq" -> uint64 8 bytes big-endian: the first retained seq.  Every
//                  event with a smaller seq has been collected (or is being
//                  deleted).  Absent: 1 (nothing ever collected).
//
// Thread safety: pure functions and constants.
#ifndef GATEDB_WAL_JOURNAL_FORMAT_H_
#define GATEDB_WAL_JOURNAL_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/util/coding.h"

namespace gatedb {
namespace wal {

// Column family names.  DO NOT CHANGE.
constexpr char kJournalCfName[] = "journal";
constexpr char kJournalDocCfName[] = "journal_doc";
constexpr char kJournalMetaCfName[] = "journal_meta";

// Format byte of a "journal" value.  DO NOT CHANGE.
constexpr uint8_t kEventFormatV1 = 0x01;
// Bytes before the document key in a "journal" value.
constexpr size_t kEventHeaderSize = 5;

// Keys in "journal_meta".  DO NOT CHANGE.
constexpr char kMetaFirstSeqKey[] = "first_seq";

// Field names the journal reads or writes inside an event.  DO NOT CHANGE.
constexpr char kFieldSeq[] = "seq";  // int64, set by the journal, first field
constexpr char kFieldAt[] = "at";    // BSON date; stamped from the clock when absent
constexpr char kFieldNs[] = "ns";    // "db.coll": ReadOptions::ns filters on it
constexpr char kFieldOp[] = "op";    // "conflict" events are never indexed per document
constexpr char kOpConflict[] = "conflict";

// ---- "journal" keys --------------------------------------------------------

inline std::string EncodeSeqKey(uint64_t seq) {
  std::string k;
  PutFixed64BE(&k, seq);
  return k;
}

// False when `key` is not exactly 8 bytes.
inline bool DecodeSeqKey(std::string_view key, uint64_t* seq) {
  if (key.size() != 8) return false;
  *seq = DecodeFixed64BE(key.data());
  return true;
}

// ---- "journal" values ------------------------------------------------------

// Appends the value for an event to `*out`.  REQUIRES: doc_key.size() fits
// in uint32; `bson` is a complete BSON document of `bson_len` bytes.
// Appends what precedes the BSON in an event's value.
inline void EncodeEventValueHeader(std::string_view doc_key, std::string* out) {
  out->push_back(static_cast<char>(kEventFormatV1));
  PutFixed32BE(out, static_cast<uint32_t>(doc_key.size()));
  out->append(doc_key.data(), doc_key.size());
}

inline void EncodeEventValue(std::string_view doc_key, const uint8_t* bson, size_t bson_len,
                             std::string* out) {
  EncodeEventValueHeader(doc_key, out);
  out->append(reinterpret_cast<const char*>(bson), bson_len);
}

// Splits a "journal" value into its document key and BSON bytes, which
// borrow from `value`.  False when the format byte is unknown or the value
// is too short (the BSON itself is not checked here).
inline bool DecodeEventValue(std::string_view value, std::string_view* doc_key,
                             std::string_view* bson) {
  if (value.size() < kEventHeaderSize || static_cast<uint8_t>(value[0]) != kEventFormatV1) return false;
  value.remove_prefix(1);
  uint32_t n = 0;
  if (!GetFixed32BE(&value, &n) || value.size() < n) return false;
  *doc_key = value.substr(0, n);
  *bson = value.substr(n);
  return true;
}

// ---- "journal_doc" ----------------------------------------------------------

// int64 -> 8 bytes that sort by memcmp in signed order (the sign bit flipped).
inline void PutVersion(std::string* out, int64_t v) {
  PutFixed64BE(out, static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}

inline int64_t DecodeVersion(const char* p) {
  return static_cast<int64_t>(DecodeFixed64BE(p) ^ (uint64_t{1} << 63));
}

inline std::string EncodeDocIndexKey(std::string_view doc_key, uint64_t seq) {
  std::string k(doc_key);
  PutFixed64BE(&k, seq);
  return k;
}

// True when `key` is an entry of document `doc_key`; then sets *seq.
inline bool DecodeDocIndexKey(std::string_view key, std::string_view doc_key, uint64_t* seq) {
  if (key.size() != doc_key.size() + 8 || key.substr(0, doc_key.size()) != doc_key) return false;
  *seq = DecodeFixed64BE(key.data() + doc_key.size());
  return true;
}

inline std::string EncodeDocIndexValue(int64_t version_after) {
  std::string v;
  PutVersion(&v, version_after);
  return v;
}

// False when `value` is not exactly 8 bytes.
inline bool DecodeDocIndexValue(std::string_view value, int64_t* version_after) {
  if (value.size() != 8) return false;
  *version_after = DecodeVersion(value.data());
  return true;
}

// ---- "journal_meta" ---------------------------------------------------------

inline std::string EncodeFirstSeq(uint64_t first_seq) { return EncodeSeqKey(first_seq); }
inline bool DecodeFirstSeq(std::string_view value, uint64_t* first_seq) {
  return DecodeSeqKey(value, first_seq);
}

}  // namespace wal
}  // namespace gatedb

#endif  // GATEDB_WAL_JOURNAL_FORMAT_H_
