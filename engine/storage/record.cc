#include "engine/storage/record.h"

namespace gatedb {

void EncodeRecord(int64_t version, const bson_t* doc, std::string* out) {
  out->clear();
  out->reserve(kRecordHeaderSize + doc->len);
  out->push_back(static_cast<char>(kRecordFormatV1));
  uint64_t v = static_cast<uint64_t>(version);
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
  out->append(reinterpret_cast<const char*>(bson_get_data(doc)), doc->len);
}

Status DecodeRecord(std::string_view bytes, RecordView* out) {
  if (bytes.size() < kRecordHeaderSize + 5 || static_cast<uint8_t>(bytes[0]) != kRecordFormatV1) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record header");
  }
  uint64_t v = 0;
  for (size_t i = 1; i < kRecordHeaderSize; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  out->version = static_cast<int64_t>(v);
  if (!bson_init_static(&out->doc, reinterpret_cast<const uint8_t*>(bytes.data()) + kRecordHeaderSize,
                        bytes.size() - kRecordHeaderSize)) {
    return Status(ErrorCode::kDataCorruptionDetected, "bad document record BSON");
  }
  return Status::OK();
}

}  // namespace gatedb
