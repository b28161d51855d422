#include "engine/storage/record.h"

#include "engine/util/coding.h"

namespace gatedb {

void EncodeRecord(int64_t version, const bson_t* writer, const bson_t* doc, std::string* out,
                  const bson_t* field_versions) {
  out->clear();
  uint32_t wlen = writer ? writer->len : 0;
  uint32_t flen = field_versions && !bson_empty(field_versions) ? field_versions->len : 0;
  out->reserve(kRecordHeaderSize + wlen + 4 + flen + doc->len);
  out->push_back(static_cast<char>(kRecordFormatV2));
  PutFixed64BE(out, static_cast<uint64_t>(version));
  PutFixed32BE(out, wlen);
  if (writer) out->append(reinterpret_cast<const char*>(bson_get_data(writer)), wlen);
  PutFixed32BE(out, flen);
  if (flen) out->append(reinterpret_cast<const char*>(bson_get_data(field_versions)), flen);
  out->append(reinterpret_cast<const char*>(bson_get_data(doc)), doc->len);
}

Status DecodeRecord(std::string_view bytes, RecordView* out) {
  uint8_t format = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]);
  if (bytes.size() < kRecordHeaderSize + 5 || (format != kRecordFormatV1 && format != kRecordFormatV2)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record header");
  }
  out->version = static_cast<int64_t>(DecodeFixed64BE(bytes.data() + 1));
  uint32_t wlen = DecodeFixed32BE(bytes.data() + 9);
  if (bytes.size() < kRecordHeaderSize + wlen + 5) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record length");
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data()) + kRecordHeaderSize;
  out->has_writer = wlen > 0;
  out->writer_bytes = p;
  out->writer_len = wlen;
  // What bson_init_static checks, without a view nobody may read.
  if (out->has_writer && (wlen < 5 || DecodeFixed32LE(reinterpret_cast<const char*>(p)) != wlen || p[wlen - 1] != 0)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record writer block");
  }
  size_t used = kRecordHeaderSize + wlen;
  p += wlen;
  out->has_field_versions = false;
  out->tracks_field_versions = format == kRecordFormatV2;
  if (format == kRecordFormatV2) {
    if (bytes.size() < used + 4 + 5) return Status(ErrorCode::kDataCorruptionDetected, "bad document record length");
    uint32_t flen = DecodeFixed32BE(reinterpret_cast<const char*>(p));
    p += 4;
    used += 4;
    if (bytes.size() < used + flen + 5) return Status(ErrorCode::kDataCorruptionDetected, "bad field versions length");
    if (flen > 0) {
      if (!bson_init_static(&out->field_versions, p, flen)) {
        return Status(ErrorCode::kDataCorruptionDetected, "bad field versions block");
      }
      out->has_field_versions = true;
    }
    p += flen;
    used += flen;
  }
  if (!bson_init_static(&out->doc, p, bytes.size() - used)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record BSON");
  }
  return Status::OK();
}

}  // namespace gatedb
