#include "gatedb/document.h"

#include <cctype>
#include <cstring>
#include <string>

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

namespace {

// libbson's JSON reader takes {"$type": <number or array>} for the legacy
// binary syntax and fails, though it is the query operator $type (MongoDB's
// shell reads it fine).  Such keys are renamed to kTypeStandIn before
// parsing and back after.  ({"$type": "string"} and the legacy binary form
// {"$binary": "...", "$type": "00"} are left alone.)
constexpr char kTypeStandIn[] = "$__gatedb_type_operator__";

bool RewriteTypeOperators(std::string_view json, std::string* out) {
  bool changed = false;
  bool in_string = false;
  size_t token_start = 0;
  out->clear();
  out->reserve(json.size() + 32);
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') {
        out->push_back(c);
        if (i + 1 < json.size()) out->push_back(json[++i]);
        continue;
      }
      if (c == '"') {
        in_string = false;
        std::string_view token = json.substr(token_start, i - token_start);
        if (token == "$type") {
          size_t j = i + 1;
          while (j < json.size() && isspace(static_cast<unsigned char>(json[j]))) ++j;
          if (j < json.size() && json[j] == ':') {
            ++j;
            while (j < json.size() && isspace(static_cast<unsigned char>(json[j]))) ++j;
            if (j < json.size() && (isdigit(static_cast<unsigned char>(json[j])) || json[j] == '-' || json[j] == '[')) {
              out->resize(out->size() - token.size());
              out->append(kTypeStandIn);
              changed = true;
            }
          }
        }
      }
      out->push_back(c);
      continue;
    }
    if (c == '"') {
      in_string = true;
      token_start = i + 1;
    }
    out->push_back(c);
  }
  return changed;
}

void RenameStandIns(const bson_t* in, bson_t* out, int depth) {
  bson_iter_t it;
  if (!bson_iter_init(&it, in)) return;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (std::strcmp(key, kTypeStandIn) == 0) key = "$type";
    if ((BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && depth < 256) {
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bool is_array = BSON_ITER_HOLDS_ARRAY(&it);
      if (is_array) {
        bson_iter_array(&it, &len, &data);
      } else {
        bson_iter_document(&it, &len, &data);
      }
      bson_t sub_in, sub_out;
      if (bson_init_static(&sub_in, data, len)) {
        if (is_array) {
          bson_append_array_begin(out, key, -1, &sub_out);
          RenameStandIns(&sub_in, &sub_out, depth + 1);
          bson_append_array_end(out, &sub_out);
        } else {
          bson_append_document_begin(out, key, -1, &sub_out);
          RenameStandIns(&sub_in, &sub_out, depth + 1);
          bson_append_document_end(out, &sub_out);
        }
        continue;
      }
    }
    bson_append_value(out, key, -1, bson_iter_value(&it));
  }
}

}  // namespace

StatusOr<Document> Document::FromJson(std::string_view json) {
  size_t first = 0;
  while (first < json.size() && isspace(static_cast<unsigned char>(json[first]))) ++first;
  if (first == json.size() || json[first] != '{') {
    return Status(ErrorCode::kFailedToParse, "invalid JSON: expected a document ({...}) at position " +
                                                 std::to_string(first));
  }
  std::string rewritten;
  bool renamed = RewriteTypeOperators(json, &rewritten);
  std::string_view text = renamed ? std::string_view(rewritten) : json;
  bson_error_t error;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(text.data()),
                                 static_cast<ssize_t>(text.size()), &error);
  if (b == nullptr) {
    std::string msg = std::string("invalid JSON: ") + error.message;
    if (msg.find("position") == std::string::npos && msg.find("Incomplete") != std::string::npos) {
      msg += " (input ends at position " + std::to_string(json.size()) + ")";
    }
    return Status(ErrorCode::kFailedToParse, msg);
  }
  if (renamed) {
    bson_t* fixed = bson_new();
    RenameStandIns(b, fixed, 0);
    bson_destroy(b);
    b = fixed;
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
