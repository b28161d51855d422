#include "gatedb/document.h"

#include <cstring>

#include "engine/document/validate.h"

namespace gatedb {

const uint8_t* DocumentView::data() const { return bson_ ? bson_get_data(bson_) : nullptr; }
size_t DocumentView::size() const { return bson_ ? bson_->len : 0; }
bool DocumentView::empty() const { return bson_ == nullptr || bson_count_keys(bson_) == 0; }

std::string DocumentView::ToJson(JsonMode mode) const {
  if (bson_ == nullptr) return "{}";
  size_t len = 0;
  char* s = mode == JsonMode::kCanonical ? bson_as_canonical_extended_json(bson_, &len)
                                         : bson_as_relaxed_extended_json(bson_, &len);
  if (s == nullptr) return "{}";
  std::string out(s, len);
  bson_free(s);
  return out;
}

Document::Document() : bson_(bson_new()) {}

Document Document::Adopt(bson_t* bson) { return Document(bson); }

Document Document::Copy(const bson_t* bson) { return Document(bson_copy(bson)); }

Document::Document(const Document& other) : bson_(other.bson_ ? bson_copy(other.bson_) : bson_new()) {}

Document& Document::operator=(const Document& other) {
  if (this != &other) {
    bson_t* copy = other.bson_ ? bson_copy(other.bson_) : bson_new();
    if (bson_) bson_destroy(bson_);
    bson_ = copy;
  }
  return *this;
}

Document& Document::operator=(Document&& other) noexcept {
  if (this != &other) {
    if (bson_) bson_destroy(bson_);
    bson_ = other.bson_;
    other.bson_ = nullptr;
  }
  return *this;
}

Document::~Document() {
  if (bson_) bson_destroy(bson_);
}

StatusOr<Document> Document::FromJson(std::string_view json) {
  bson_error_t error;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()),
                                 static_cast<ssize_t>(json.size()), &error);
  if (b == nullptr) {
    return Status(ErrorCode::kFailedToParse, std::string("invalid JSON: ") + error.message);
  }
  return Document(b);
}

StatusOr<Document> Document::FromBytes(const uint8_t* data, size_t len) {
  RETURN_IF_ERROR(ValidateIncoming(data, len));
  bson_t* b = bson_new_from_data(data, len);
  if (b == nullptr) return Status(ErrorCode::kInvalidBSON, "invalid BSON: bad length or terminator");
  return Document(b);
}

bool BinaryEqual(DocumentView a, DocumentView b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace gatedb
