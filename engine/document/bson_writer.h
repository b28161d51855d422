// File: engine/document/bson_writer.h
//
// BsonWriter: writes one BSON document at the end of a std::string, element
// by element, in exactly the bytes libbson's bson_append_* functions write.
// For the write path's own documents (journal events, records), built once
// per write: libbson's appends go through a varargs copy routine and its
// own buffer; here each element is a few stores into one buffer, which may
// also hold what precedes the document (a journal value's header).
//
//   std::string out;
//   BsonWriter w(&out);
//   w.Int64("seq", 0);
//   w.OpenArray("paths");
//   w.Utf8(BsonWriter::ArrayKey(0, buf), "a.b");
//   w.Close();
//   w.Finish();   // out now ends with the document
//
// Keys are written as given and must hold no NUL.  Not thread-safe.
#ifndef GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_
#define GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gatedb {

class BsonWriter {
 public:
  // Starts a document at the end of *out.  REQUIRES: *out outlives the
  // writer, and nothing else appends to it until Finish().
  explicit BsonWriter(std::string* out);
  BsonWriter(const BsonWriter&) = delete;
  BsonWriter& operator=(const BsonWriter&) = delete;

  void Int64(std::string_view key, int64_t v);
  void Int32(std::string_view key, int32_t v);
  void Double(std::string_view key, double v);
  void Bool(std::string_view key, bool v);
  void DateTime(std::string_view key, int64_t ms);
  void Null(std::string_view key);
  void Utf8(std::string_view key, std::string_view v);
  void Binary(std::string_view key, bson_subtype_t subtype, const uint8_t* data, uint32_t len);
  // Any value, as AppendValueVerbatim (engine/document/validate.h) writes
  // it.
  void Value(std::string_view key, const bson_value_t& v);
  // A document's or array's bytes as the value of `key`.
  void Document(std::string_view key, const uint8_t* data, uint32_t len);
  void Array(std::string_view key, const uint8_t* data, uint32_t len);
  // A whole element (type byte, key, value) copied as it is.
  void Element(const uint8_t* element, size_t len);

  // Opens a document or an array as the value of `key`; the elements that
  // follow go into it until Close().  At most kMaxOpen deep.
  static constexpr int kMaxOpen = 8;
  void OpenDocument(std::string_view key);
  void OpenArray(std::string_view key);
  void Close();

  // Ends the document (every open one must be closed).  Returns its length.
  uint32_t Finish();

  // The key of array element `i`, in `buf` (at least 16 bytes).
  static std::string_view ArrayKey(uint32_t i, char* buf);

 private:
  void Head(bson_type_t type, std::string_view key);
  void Fixed32(uint32_t v);
  void Fixed64(uint64_t v);
  // Writes the length of the document that starts at `start`, ending it.
  void End(size_t start);

  std::string* out_;
  size_t open_[kMaxOpen + 1];  // [0]: the document; then each open one
  int depth_ = 0;
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_BSON_WRITER_H_
