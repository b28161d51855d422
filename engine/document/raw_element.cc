#include "engine/document/raw_element.h"

#include <bson/bson.h>

#include <climits>
#include <cstring>

namespace gatedb {

namespace {

// The int32 little-endian at p, as an unsigned length; false when negative.
bool Length(const uint8_t* p, uint32_t* out) {
  uint32_t le;
  std::memcpy(&le, p, sizeof le);
  const uint32_t v = BSON_UINT32_FROM_LE(le);
  if (v > static_cast<uint32_t>(INT32_MAX)) return false;
  *out = v;
  return true;
}

}  // namespace

RawRead ReadRawElement(const uint8_t* data, uint32_t len, uint32_t offset, RawElement* out) {
  // The elements lie in [4, len - 1); the byte at len - 1 is the terminator.
  if (len < 5 || offset < 4 || offset >= len) return RawRead::kStop;
  const uint32_t limit = len - 1;
  if (offset == limit) return data[offset] == 0 ? RawRead::kEnd : RawRead::kStop;
  const uint8_t type = data[offset];
  const uint8_t* key = data + offset + 1;
  const void* nul = std::memchr(key, 0, limit - offset - 1);
  if (nul == nullptr) return RawRead::kStop;
  const uint32_t key_len = static_cast<uint32_t>(static_cast<const uint8_t*>(nul) - key);
  const uint32_t value = offset + 1 + key_len + 1;
  const uint32_t room = limit - value;  // bytes the value may take
  uint32_t size = 0;
  switch (type) {
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_TIMESTAMP:
    case BSON_TYPE_INT64: size = 8; break;
    case BSON_TYPE_INT32: size = 4; break;
    case BSON_TYPE_DECIMAL128: size = 16; break;
    case BSON_TYPE_OID: size = 12; break;
    case BSON_TYPE_BOOL: size = 1; break;
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_NULL:
    case BSON_TYPE_MAXKEY:
    case BSON_TYPE_MINKEY: size = 0; break;
    case BSON_TYPE_UTF8:
    case BSON_TYPE_CODE:
    case BSON_TYPE_SYMBOL: {
      uint32_t n = 0;
      if (room < 4 || !Length(data + value, &n) || n < 1 || n > room - 4) return RawRead::kStop;
      size = 4 + n;
      break;
    }
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
    case BSON_TYPE_CODEWSCOPE: {
      uint32_t n = 0;
      if (room < 4 || !Length(data + value, &n) || n < 5) return RawRead::kStop;
      size = n;
      break;
    }
    case BSON_TYPE_BINARY: {
      uint32_t n = 0;
      if (room < 5 || !Length(data + value, &n) || n > room - 5) return RawRead::kStop;
      size = 5 + n;
      break;
    }
    case BSON_TYPE_DBPOINTER: {
      uint32_t n = 0;
      if (room < 4 || !Length(data + value, &n) || n < 1 || n > room - 4 || room - 4 - n < 12) return RawRead::kStop;
      size = 4 + n + 12;
      break;
    }
    case BSON_TYPE_REGEX: {
      const void* a = std::memchr(data + value, 0, room);
      if (a == nullptr) return RawRead::kStop;
      const uint32_t pattern = static_cast<uint32_t>(static_cast<const uint8_t*>(a) - (data + value)) + 1;
      const void* b = std::memchr(data + value + pattern, 0, room - pattern);
      if (b == nullptr) return RawRead::kStop;
      size = static_cast<uint32_t>(static_cast<const uint8_t*>(b) - (data + value)) + 1;
      break;
    }
    default: return RawRead::kStop;
  }
  if (size > room) return RawRead::kStop;
  out->type = type;
  out->key = std::string_view(reinterpret_cast<const char*>(key), key_len);
  out->start = offset;
  out->end = value + size;
  return RawRead::kElement;
}

}  // namespace gatedb
