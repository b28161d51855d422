// File: engine/storage/record.h
//
// The value stored under a document key in the `docs` column family:
//
//   byte 0        format (kRecordFormatV2 = 0x02; 0x01 has no field
//                 versions)                                          DO NOT CHANGE
//   bytes 1..8    version, int64, big-endian
//   bytes 9..12   uint32 big-endian length W of the last-writer block
//   W bytes       last writer: BSON {agentId, taskId, source, at} (W = 0: unknown)
//   4 bytes       (V2) uint32 big-endian length F of the field versions
//   F bytes       (V2) field versions: BSON {"<dotted path>": int64 version}
//                 (F = 0: none; every field is as old as the insert)
//   the rest      the document's BSON (which also holds the version field,
//                 so that filters and readers see it)
//
// The header lets the store read a document's version and last writer
// without parsing the document.
#ifndef GATEDB_ENGINE_STORAGE_RECORD_H_
#define GATEDB_ENGINE_STORAGE_RECORD_H_

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/document/bson_writer.h"
#include "engine/util/coding.h"
#include "gatedb/status.h"

namespace gatedb {

constexpr uint8_t kRecordFormatV1 = 0x01;
constexpr uint8_t kRecordFormatV2 = 0x02;
constexpr size_t kRecordHeaderSize = 13;

// `writer` and `field_versions` may be null.
void EncodeRecord(int64_t version, const bson_t* writer, const bson_t* doc, std::string* out,
                  const bson_t* field_versions = nullptr);

// EncodeRecord for a write that builds its last-writer block and field
// versions as it encodes them: write_writer and write_table each fill a
// document just begun (BsonWriter*) in place; a table left empty is stored
// as none.
template <typename WriteWriter, typename WriteTable>
void EncodeRecordWith(int64_t version, const WriteWriter& write_writer, const WriteTable& write_table,
                      const bson_t* doc, std::string* out) {
  out->clear();
  out->reserve(kRecordHeaderSize + 4 + 256 + doc->len);
  out->push_back(static_cast<char>(kRecordFormatV2));
  PutFixed64BE(out, static_cast<uint64_t>(version));
  // A block: its uint32 BE length, then the document `write` fills.
  auto block = [out](const auto& write, uint32_t* len) {
    const size_t len_at = out->size();
    PutFixed32BE(out, 0);
    BsonWriter w(out, 128);
    write(&w);
    *len = w.Finish();
    return len_at;
  };
  uint32_t wlen = 0, flen = 0;
  const size_t wlen_at = block(write_writer, &wlen);
  const size_t flen_at = block(write_table, &flen);
  if (flen == 5) {  // {}: no table
    out->resize(flen_at + 4);
    flen = 0;
  }
  EncodeFixed32BE(&(*out)[wlen_at], wlen);
  EncodeFixed32BE(&(*out)[flen_at], flen);
  out->append(reinterpret_cast<const char*>(bson_get_data(doc)), doc->len);
}

// A decoded record that borrows the bytes it was decoded from.
struct RecordView {
  int64_t version = 0;
  bool has_writer = false;
  // The writer block's bytes (checked: a BSON length prefix equal to
  // writer_len and a closing 0x00); Writer() makes a view of them.  Most
  // reads never look at them.
  const uint8_t* writer_bytes = nullptr;
  uint32_t writer_len = 0;
  // Format 0x02 keeps field versions; without a table, no field changed
  // since the insert.  Format 0x01 records have no history.
  bool tracks_field_versions = false;
  bool has_field_versions = false;
  bson_t field_versions;  // static view; valid when has_field_versions
  bson_t doc;     // static view over the record's bytes; never destroy

  // A static view of the writer block into *out.  REQUIRES: has_writer.
  void Writer(bson_t* out) const { bson_init_static(out, writer_bytes, writer_len); }
};

// Errors: DataCorruptionDetected for a bad header or BSON framing.
Status DecodeRecord(std::string_view bytes, RecordView* out);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_RECORD_H_
