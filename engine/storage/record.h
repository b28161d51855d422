// File: engine/storage/record.h
//
// The value stored under a document key in the `docs` column family:
//
//   byte 0      format (kRecordFormatV1 = 0x01)       DO NOT CHANGE
//   bytes 1..8  version, int64, big-endian
//   bytes 9..   the document's BSON (which also holds the version field,
//               so that filters and readers see it)
//
// The header lets the store read a document's version without parsing the
// BSON.
#ifndef GATEDB_ENGINE_STORAGE_RECORD_H_
#define GATEDB_ENGINE_STORAGE_RECORD_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gatedb/status.h"

namespace gatedb {

constexpr uint8_t kRecordFormatV1 = 0x01;
constexpr size_t kRecordHeaderSize = 9;

void EncodeRecord(int64_t version, const bson_t* doc, std::string* out);

// A decoded record that borrows the bytes it was decoded from.
struct RecordView {
  int64_t version = 0;
  bson_t doc;  // static view over the record's bytes; never destroy
};

// Errors: DataCorruptionDetected for a bad header or BSON framing.
Status DecodeRecord(std::string_view bytes, RecordView* out);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_RECORD_H_
