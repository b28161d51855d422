// File: engine/document/bson_writer.h
//
// BsonWriter: writes one BSON document at the end of a std::string, element
// by element, in exactly the bytes libbson's bson_append_* functions write.
// For the write path's own documents (journal events, idempotency records),
// built once per write: libbson's appends go through a varargs copy routine
// and its own buffer; here an element is a few stores into the string,
// which is grown ahead of the writes (by the size the caller expects, then
// by doubling) and cut to the document's end by Finish().
//
//   std::string out;
//   BsonWriter w(&out);
//   w.Int64("seq", 0);
//   w.OpenArray("paths");
//   char buf[16];
//   w.Utf8(BsonWriter::ArrayKey(0, buf), "a.b");
//   w.Close();
//   w.Finish();   // out now ends with the document
//
// Keys are written as given and must hold no NUL.  Not thread-safe.
#ifndef GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_
#define GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_

#include <bson/bson.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gatedb {

class BsonWriter {
 public:
  // Starts a document at the end of *out, whose bytes will likely come to
  // `expected_len` (more is fine: the string grows).  REQUIRES: *out
  // outlives the writer, and nothing else touches it until Finish() (its
  // tail holds unwritten bytes until then).
  explicit BsonWriter(std::string* out, size_t expected_len = 256);
  BsonWriter(const BsonWriter&) = delete;
  BsonWriter& operator=(const BsonWriter&) = delete;

  void Int64(std::string_view key, int64_t v) {
    Head(BSON_TYPE_INT64, key);
    Fixed64(static_cast<uint64_t>(v));
  }
  void Int32(std::string_view key, int32_t v) {
    Head(BSON_TYPE_INT32, key);
    Fixed32(static_cast<uint32_t>(v));
  }
  void Double(std::string_view key, double v) {
    Head(BSON_TYPE_DOUBLE, key);
    const double le = BSON_DOUBLE_TO_LE(v);
    std::memcpy(Room(sizeof le), &le, sizeof le);
  }
  void Bool(std::string_view key, bool v) {
    Head(BSON_TYPE_BOOL, key);
    *Room(1) = v ? '\1' : '\0';
  }
  void DateTime(std::string_view key, int64_t ms) {
    Head(BSON_TYPE_DATE_TIME, key);
    Fixed64(static_cast<uint64_t>(ms));
  }
  void Null(std::string_view key) { Head(BSON_TYPE_NULL, key); }
  void Utf8(std::string_view key, std::string_view v) {
    Head(BSON_TYPE_UTF8, key);
    char* p = Room(4 + v.size() + 1);
    const uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(v.size() + 1));
    std::memcpy(p, &len, 4);
    std::memcpy(p + 4, v.data(), v.size());
    p[4 + v.size()] = '\0';
  }
  void Binary(std::string_view key, bson_subtype_t subtype, const uint8_t* data, uint32_t len);
  // Any value, as AppendValueVerbatim (engine/document/validate.h) writes
  // it.
  void Value(std::string_view key, const bson_value_t& v);
  // A document's or array's bytes as the value of `key`.
  void Document(std::string_view key, const uint8_t* data, uint32_t len) {
    Head(BSON_TYPE_DOCUMENT, key);
    Bytes(data, len);
  }
  void Array(std::string_view key, const uint8_t* data, uint32_t len) {
    Head(BSON_TYPE_ARRAY, key);
    Bytes(data, len);
  }
  // A whole element (type byte, key, value) copied as it is.
  void Element(const uint8_t* element, size_t len) { Bytes(element, len); }

  // Opens a document or an array as the value of `key`; the elements that
  // follow go into it until Close().  At most kMaxOpen deep.
  static constexpr int kMaxOpen = 8;
  void OpenDocument(std::string_view key) { Open(BSON_TYPE_DOCUMENT, key); }
  void OpenArray(std::string_view key) { Open(BSON_TYPE_ARRAY, key); }
  void Close() {
    assert(depth_ > 0);
    End(open_[depth_--]);
  }

  // Ends the document (every open one must be closed) and cuts *out after
  // it.  Returns the document's length.
  uint32_t Finish();

  // Where in *out the next element will start.
  size_t offset() const { return pos_; }

  // The key of array element `i`, in `buf` (at least 16 bytes).
  static std::string_view ArrayKey(uint32_t i, char* buf);

 private:
  // `n` bytes at the write position, which moves past them.
  char* Room(size_t n) {
    if (out_->size() - pos_ < n) Grow(n);
    char* p = &(*out_)[pos_];
    pos_ += n;
    return p;
  }
  void Grow(size_t n);
  void Bytes(const void* data, size_t n) {
    if (n != 0) std::memcpy(Room(n), data, n);
  }
  void Head(bson_type_t type, std::string_view key) {
    assert(key.find('\0') == std::string_view::npos);
    char* p = Room(1 + key.size() + 1);
    p[0] = static_cast<char>(type);
    std::memcpy(p + 1, key.data(), key.size());
    p[1 + key.size()] = '\0';
  }
  void Fixed32(uint32_t v) {
    const uint32_t le = BSON_UINT32_TO_LE(v);
    std::memcpy(Room(sizeof le), &le, sizeof le);
  }
  void Fixed64(uint64_t v) {
    const uint64_t le = BSON_UINT64_TO_LE(v);
    std::memcpy(Room(sizeof le), &le, sizeof le);
  }
  void Open(bson_type_t type, std::string_view key) {
    assert(depth_ < kMaxOpen);
    Head(type, key);
    open_[++depth_] = pos_;
    Fixed32(0);
  }
  // Writes the terminator and the length of the document that starts at
  // `start`.
  void End(size_t start) {
    *Room(1) = '\0';
    const uint32_t le = BSON_UINT32_TO_LE(static_cast<uint32_t>(pos_ - start));
    std::memcpy(&(*out_)[start], &le, sizeof le);
  }

  std::string* out_;
  size_t pos_;                 // where the next byte goes
  size_t open_[kMaxOpen + 1];  // [0]: the document; then each open one
  int depth_ = 0;
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_
