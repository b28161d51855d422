#include "engine/document/bson_writer.h"

#include <algorithm>

#include "engine/document/validate.h"

namespace gatedb {

BsonWriter::BsonWriter(std::string* out, size_t expected_len) : out_(out), pos_(out->size()) {
  out_->resize(pos_ + std::max<size_t>(expected_len, 5));
  open_[0] = pos_;
  Fixed32(0);  // the length, written by Finish()
}

void BsonWriter::Grow(size_t n) {
  out_->resize(std::max(out_->size() * 2, pos_ + n + 256));
}

void BsonWriter::Binary(std::string_view key, bson_subtype_t subtype, const uint8_t* data, uint32_t len) {
  Head(BSON_TYPE_BINARY, key);
  if (subtype == BSON_SUBTYPE_BINARY_DEPRECATED) {
    // The old binary subtype holds its length twice.
    Fixed32(len + 4);
    *Room(1) = static_cast<char>(subtype);
    Fixed32(len);
  } else {
    Fixed32(len);
    *Room(1) = static_cast<char>(subtype);
  }
  Bytes(data, len);
}

void BsonWriter::Value(std::string_view key, const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT64: Int64(key, v.value.v_int64); return;
    case BSON_TYPE_INT32: Int32(key, v.value.v_int32); return;
    case BSON_TYPE_DOUBLE: Double(key, v.value.v_double); return;
    case BSON_TYPE_BOOL: Bool(key, v.value.v_bool); return;
    case BSON_TYPE_DATE_TIME: DateTime(key, v.value.v_datetime); return;
    case BSON_TYPE_NULL: Null(key); return;
    case BSON_TYPE_UTF8: Utf8(key, std::string_view(v.value.v_utf8.str, v.value.v_utf8.len)); return;
    case BSON_TYPE_DOCUMENT: Document(key, v.value.v_doc.data, v.value.v_doc.data_len); return;
    case BSON_TYPE_ARRAY: Array(key, v.value.v_doc.data, v.value.v_doc.data_len); return;
    default: break;
  }
  // The rarer types: libbson's bytes (as the write path stores them), from
  // a one-element document: {int32 size, element, 0x00}.
  bson_t one = BSON_INITIALIZER;
  if (AppendValueVerbatim(&one, key.data(), static_cast<int>(key.size()), &v)) {
    Element(bson_get_data(&one) + 4, one.len - 5);
  }
  bson_destroy(&one);
}

uint32_t BsonWriter::Finish() {
  assert(depth_ == 0);
  End(open_[0]);
  out_->resize(pos_);
  return static_cast<uint32_t>(pos_ - open_[0]);
}

std::string_view BsonWriter::ArrayKey(uint32_t i, char* buf) {
  const char* key = nullptr;
  const size_t len = bson_uint32_to_string(i, &key, buf, 16);
  return std::string_view(key, len);
}

}  // namespace gatedb
