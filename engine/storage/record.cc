#include "engine/storage/record.h"

#include "engine/util/coding.h"

namespace gatedb {

void EncodeRecord(int64_t version, const bson_t* writer, const bson_t* doc, std::string* out) {
  out->clear();
  uint32_t wlen = writer ? writer->len : 0;
  out->reserve(kRecordHeaderSize + wlen + doc->len);
  out->push_back(static_cast<char>(kRecordFormatV1));
  PutFixed64BE(out, static_cast<uint64_t>(version));
  PutFixed32BE(out, wlen);
  if (writer) out->append(reinterpret_cast<const char*>(bson_get_data(writer)), wlen);
  out->append(reinterpret_cast<const char*>(bson_get_data(doc)), doc->len);
}

Status DecodeRecord(std::string_view bytes, RecordView* out) {
  if (bytes.size() < kRecordHeaderSize + 5 || static_cast<uint8_t>(bytes[0]) != kRecordFormatV1) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record header");
  }
  out->version = static_cast<int64_t>(DecodeFixed64BE(bytes.data() + 1));
  uint32_t wlen = DecodeFixed32BE(bytes.data() + 9);
  if (bytes.size() < kRecordHeaderSize + wlen + 5) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record length");
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data()) + kRecordHeaderSize;
  out->has_writer = wlen > 0;
  if (out->has_writer && !bson_init_static(&out->writer, p, wlen)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record writer block");
  }
  if (!bson_init_static(&out->doc, p + wlen, bytes.size() - kRecordHeaderSize - wlen)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record BSON");
  }
  return Status::OK();
}

}  // namespace gatedb
