// File: engine/util/coding.h
//
// Fixed-width integer coding, header-only.  Big-endian ("BE") forms sort by
// memcmp in unsigned numeric order and are used inside keys; little-endian
// ("LE") forms are for values, where order does not matter.
//
// Families (NN is 16, 32 or 64):
//   EncodeFixedNN{BE,LE}(char* dst, v)   writes sizeof(v) bytes at dst
//   PutFixedNN{BE,LE}(std::string*, v)   appends sizeof(v) bytes
//   DecodeFixedNN{BE,LE}(const char* p)  REQUIRES: p has sizeof(v) bytes
//   GetFixedNN{BE,LE}(std::string_view* in, uintNN_t* v)
//       false (and *in, *v untouched) when *in is too short; otherwise
//       stores the value and advances *in past it.
//
// Thread safety: pure functions.
#ifndef GATEDB_ENGINE_UTIL_CODING_H_
#define GATEDB_ENGINE_UTIL_CODING_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gatedb {

// ---- Big-endian -----------------------------------------------------------

inline void EncodeFixed16BE(char* dst, uint16_t v) {
  dst[0] = static_cast<char>(v >> 8);
  dst[1] = static_cast<char>(v);
}

inline void EncodeFixed32BE(char* dst, uint32_t v) {
  dst[0] = static_cast<char>(v >> 24);
  dst[1] = static_cast<char>(v >> 16);
  dst[2] = static_cast<char>(v >> 8);
  dst[3] = static_cast<char>(v);
}

inline void EncodeFixed64BE(char* dst, uint64_t v) {
  EncodeFixed32BE(dst, static_cast<uint32_t>(v >> 32));
  EncodeFixed32BE(dst + 4, static_cast<uint32_t>(v));
}

inline uint16_t DecodeFixed16BE(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((uint16_t{u[0]} << 8) | uint16_t{u[1]});
}

inline uint32_t DecodeFixed32BE(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

inline uint64_t DecodeFixed64BE(const char* p) {
  return (uint64_t{DecodeFixed32BE(p)} << 32) | DecodeFixed32BE(p + 4);
}

inline void PutFixed16BE(std::string* dst, uint16_t v) {
  char buf[2];
  EncodeFixed16BE(buf, v);
  dst->append(buf, sizeof(buf));
}

inline void PutFixed32BE(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32BE(buf, v);
  dst->append(buf, sizeof(buf));
}

inline void PutFixed64BE(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64BE(buf, v);
  dst->append(buf, sizeof(buf));
}

inline bool GetFixed16BE(std::string_view* in, uint16_t* v) {
  if (in->size() < 2) return false;
  *v = DecodeFixed16BE(in->data());
  in->remove_prefix(2);
  return true;
}

inline bool GetFixed32BE(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32BE(in->data());
  in->remove_prefix(4);
  return true;
}

inline bool GetFixed64BE(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64BE(in->data());
  in->remove_prefix(8);
  return true;
}

// ---- Little-endian --------------------------------------------------------

inline void EncodeFixed32LE(char* dst, uint32_t v) {
  dst[0] = static_cast<char>(v);
  dst[1] = static_cast<char>(v >> 8);
  dst[2] = static_cast<char>(v >> 16);
  dst[3] = static_cast<char>(v >> 24);
}

inline void EncodeFixed64LE(char* dst, uint64_t v) {
  EncodeFixed32LE(dst, static_cast<uint32_t>(v));
  EncodeFixed32LE(dst + 4, static_cast<uint32_t>(v >> 32));
}

inline uint32_t DecodeFixed32LE(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | (uint32_t{u[1]} << 8) | (uint32_t{u[2]} << 16) | (uint32_t{u[3]} << 24);
}

inline uint64_t DecodeFixed64LE(const char* p) {
  return uint64_t{DecodeFixed32LE(p)} | (uint64_t{DecodeFixed32LE(p + 4)} << 32);
}

inline void PutFixed32LE(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32LE(buf, v);
  dst->append(buf, sizeof(buf));
}

inline void PutFixed64LE(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64LE(buf, v);
  dst->append(buf, sizeof(buf));
}

inline bool GetFixed32LE(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32LE(in->data());
  in->remove_prefix(4);
  return true;
}

inline bool GetFixed64LE(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64LE(in->data());
  in->remove_prefix(8);
  return true;
}

}  // namespace gatedb

#endif  // GATEDB_ENGINE_UTIL_CODING_H_
