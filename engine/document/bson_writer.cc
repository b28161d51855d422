#include "engine/document/bson_writer.h"

#include <cassert>
#include <cstring>

#include "engine/document/validate.h"

namespace gatedb {

BsonWriter::BsonWriter(std::string* out) : out_(out) {
  open_[0] = out_->size();
  Fixed32(0);  // the length, written by Finish()
}

void BsonWriter::Fixed32(uint32_t v) {
  const uint32_t le = BSON_UINT32_TO_LE(v);
  out_->append(reinterpret_cast<const char*>(&le), sizeof le);
}

void BsonWriter::Fixed64(uint64_t v) {
  const uint64_t le = BSON_UINT64_TO_LE(v);
  out_->append(reinterpret_cast<const char*>(&le), sizeof le);
}

void BsonWriter::Head(bson_type_t type, std::string_view key) {
  assert(key.find('\0') == std::string_view::npos);
  out_->push_back(static_cast<char>(type));
  out_->append(key.data(), key.size());
  out_->push_back('\0');
}

void BsonWriter::Int64(std::string_view key, int64_t v) {
  Head(BSON_TYPE_INT64, key);
  Fixed64(static_cast<uint64_t>(v));
}

void BsonWriter::Int32(std::string_view key, int32_t v) {
  Head(BSON_TYPE_INT32, key);
  Fixed32(static_cast<uint32_t>(v));
}

void BsonWriter::Double(std::string_view key, double v) {
  Head(BSON_TYPE_DOUBLE, key);
  const double le = BSON_DOUBLE_TO_LE(v);
  out_->append(reinterpret_cast<const char*>(&le), sizeof le);
}

void BsonWriter::Bool(std::string_view key, bool v) {
  Head(BSON_TYPE_BOOL, key);
  out_->push_back(v ? '\1' : '\0');
}

void BsonWriter::DateTime(std::string_view key, int64_t ms) {
  Head(BSON_TYPE_DATE_TIME, key);
  Fixed64(static_cast<uint64_t>(ms));
}

void BsonWriter::Null(std::string_view key) { Head(BSON_TYPE_NULL, key); }

void BsonWriter::Utf8(std::string_view key, std::string_view v) {
  Head(BSON_TYPE_UTF8, key);
  Fixed32(static_cast<uint32_t>(v.size() + 1));
  out_->append(v.data(), v.size());
  out_->push_back('\0');
}

void BsonWriter::Binary(std::string_view key, bson_subtype_t subtype, const uint8_t* data, uint32_t len) {
  Head(BSON_TYPE_BINARY, key);
  if (subtype == BSON_SUBTYPE_BINARY_DEPRECATED) {
    // The old binary subtype holds its length twice.
    Fixed32(len + 4);
    out_->push_back(static_cast<char>(subtype));
    Fixed32(len);
  } else {
    Fixed32(len);
    out_->push_back(static_cast<char>(subtype));
  }
  out_->append(reinterpret_cast<const char*>(data), len);
}

void BsonWriter::Document(std::string_view key, const uint8_t* data, uint32_t len) {
  Head(BSON_TYPE_DOCUMENT, key);
  out_->append(reinterpret_cast<const char*>(data), len);
}

void BsonWriter::Array(std::string_view key, const uint8_t* data, uint32_t len) {
  Head(BSON_TYPE_ARRAY, key);
  out_->append(reinterpret_cast<const char*>(data), len);
}

void BsonWriter::Element(const uint8_t* element, size_t len) {
  out_->append(reinterpret_cast<const char*>(element), len);
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

void BsonWriter::OpenDocument(std::string_view key) {
  assert(depth_ < kMaxOpen);
  Head(BSON_TYPE_DOCUMENT, key);
  open_[++depth_] = out_->size();
  Fixed32(0);
}

void BsonWriter::OpenArray(std::string_view key) {
  assert(depth_ < kMaxOpen);
  Head(BSON_TYPE_ARRAY, key);
  open_[++depth_] = out_->size();
  Fixed32(0);
}

void BsonWriter::End(size_t start) {
  out_->push_back('\0');
  const uint32_t le = BSON_UINT32_TO_LE(static_cast<uint32_t>(out_->size() - start));
  std::memcpy(&(*out_)[start], &le, sizeof le);
}

void BsonWriter::Close() {
  assert(depth_ > 0);
  End(open_[depth_--]);
}

uint32_t BsonWriter::Finish() {
  assert(depth_ == 0);
  End(open_[0]);
  return static_cast<uint32_t>(out_->size() - open_[0]);
}

std::string_view BsonWriter::ArrayKey(uint32_t i, char* buf) {
  const char* key = nullptr;
  const size_t len = bson_uint32_to_string(i, &key, buf, 16);
  return std::string_view(key, len);
}

}  // namespace gatedb
