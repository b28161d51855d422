// File: gatedb/document.h
//
// Document owns one BSON document (a libbson bson_t); DocumentView borrows
// one.  Extended JSON in (canonical or relaxed, by libbson's parser) and out
// (relaxed by default, by libbson's writer).
//
// Thread safety: const methods may be called concurrently; mutation needs
// external synchronization.
//
//   auto doc = gatedb::Document::FromJson(R"({"_id": "order_1", "qty": 2})");
//   if (doc.ok()) std::cout << doc->ToJson() << "\n";
#ifndef GATEDB_DOCUMENT_H_
#define GATEDB_DOCUMENT_H_

#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gatedb/status.h"

namespace gatedb {

namespace internal {
class DocumentArena;  // engine/document/document_arena.h: a query's copies
}  // namespace internal

enum class JsonMode {
  kRelaxed,    // {"n": 1, "d": {"$date": "2024-01-01T00:00:00Z"}}
  kCanonical,  // {"n": {"$numberInt": "1"}, ...}
};

// A borrowed, read-only document.  REQUIRES: the bson_t it points to outlives
// the view and is not modified while the view is used.
class DocumentView {
 public:
  DocumentView() = default;
  explicit DocumentView(const bson_t* bson) : bson_(bson) {}

  const bson_t* bson() const { return bson_; }
  const uint8_t* data() const;
  size_t size() const;
  bool empty() const;
  std::string ToJson(JsonMode mode = JsonMode::kRelaxed) const;

 private:
  const bson_t* bson_ = nullptr;
};

class Document {
 public:
  // An empty document, {}.  Costs no allocation: the bytes are allocated
  // the first time mutable_bson() or Release() is called.
  Document();
  // Takes ownership of `bson`, which must come from bson_new() or a
  // bson_new_from_*() call.
  static Document Adopt(bson_t* bson);
  // A copy of the bytes of `view`.
  static Document Copy(const bson_t* bson);

  // Parses Extended JSON (canonical or relaxed).  Errors: FailedToParse with
  // the line and position, or a document that is not an object.
  static StatusOr<Document> FromJson(std::string_view json);
  // Copies and validates raw BSON bytes.  Errors: InvalidBSON.
  static StatusOr<Document> FromBytes(const uint8_t* data, size_t len);

  Document(Document&& other) noexcept : bson_(other.bson_), block_(other.block_) {
    other.bson_ = nullptr;
    other.block_ = false;
  }
  Document& operator=(Document&& other) noexcept {
    if (this != &other) {
      if (bson_ != nullptr) FreeBytes();
      bson_ = other.bson_;
      block_ = other.block_;
      other.bson_ = nullptr;
      other.block_ = false;
    }
    return *this;
  }
  Document(const Document& other);
  Document& operator=(const Document& other);
  // Inline: a moved-from Document (every result moves several times on
  // its way out) frees nothing.
  ~Document() {
    if (bson_ != nullptr) FreeBytes();
  }

  // Never null, except after Release() or in a moved-from Document.
  const bson_t* bson() const { return bson_; }
  bson_t* mutable_bson();
  DocumentView view() const { return DocumentView(bson_); }
  const uint8_t* data() const { return view().data(); }
  size_t size() const { return view().size(); }
  bool empty() const { return view().empty(); }
  std::string ToJson(JsonMode mode = JsonMode::kRelaxed) const { return view().ToJson(mode); }

  // Releases ownership of the bson_t to the caller (free with bson_destroy).
  bson_t* Release();

 private:
  friend class internal::DocumentArena;
  Document(bson_t* b, bool block) : bson_(b), block_(block) {}
  // Makes bson_ an ordinary libbson document (one that can grow).
  void Unblock();
  // Frees what bson_ owns (nothing for the shared empty document), leaving
  // bson_ dangling.  REQUIRES: bson_ != nullptr.
  void FreeBytes();
  bson_t* bson_;  // owned and freed with bson_destroy, unless it is the shared empty document or a block
  // bson_ is a read-only copy (document.cc's blocks): a bson_t over the
  // bytes that follow it, in an allocation of its own or a DocumentArena's
  // chunk shared with other copies, which this class frees or leaves.
  bool block_;
};

// True when both documents hold the same bytes.
bool BinaryEqual(DocumentView a, DocumentView b);

}  // namespace gatedb

#endif  // GATEDB_DOCUMENT_H_
