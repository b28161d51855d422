#include "engine/projection/paths.h"

#include <cstring>
#include <utility>

#include "engine/document/bson_compare.h"

namespace gatedb {
namespace projection {

namespace {

bson_value_t MakeTypedValue(bson_type_t type) {
  bson_value_t v;
  std::memset(&v, 0, sizeof(v));
  v.value_type = type;
  return v;
}

const bson_value_t kNullValue = MakeTypedValue(BSON_TYPE_NULL);
const bson_value_t kUndefinedValue = MakeTypedValue(BSON_TYPE_UNDEFINED);

class PathWalker {
 public:
  PathWalker(const std::vector<std::string_view>& parts, MissingPolicy missing,
             PathValueVisitor* visitor)
      : parts_(parts), missing_(missing), visitor_(visitor) {}

  void WalkRoot(const bson_t* doc) {
    bson_iter_t it;
    if (bson_iter_init(&it, doc) && FindField(&it, parts_[0])) {
      Walk(&it, 1);
    } else {
      Missing();
    }
  }

 private:
  static bool FindField(bson_iter_t* it, std::string_view name) {
    return bson_iter_find_w_len(it, name.data(), static_cast<int>(name.size()));
  }

  void Missing() {
    if (missing_ == MissingPolicy::kNullAndUndefined) visitor_->Visit(kNullValue);
  }

  // `it` is positioned on the element reached by parts_[0, i).
  void Walk(bson_iter_t* it, size_t i) {
    const bson_type_t type = bson_iter_type(it);
    if (i == parts_.size()) {
      if (type != BSON_TYPE_ARRAY) {
        visitor_->Visit(*bson_iter_value(it));
        return;
      }
      bson_iter_t elems;
      bool any = false;
      if (bson_iter_recurse(it, &elems)) {
        while (bson_iter_next(&elems)) {
          any = true;
          visitor_->Visit(*bson_iter_value(&elems));
        }
      }
      if (!any && missing_ == MissingPolicy::kNullAndUndefined) visitor_->Visit(kUndefinedValue);
      return;
    }

    if (type == BSON_TYPE_DOCUMENT) {
      bson_iter_t child;
      if (bson_iter_recurse(it, &child) && FindField(&child, parts_[i])) {
        Walk(&child, i + 1);
      } else {
        Missing();
      }
      return;
    }

    if (type == BSON_TYPE_ARRAY) {
      bson_iter_t elems;
      if (!bson_iter_recurse(it, &elems)) {
        Missing();
        return;
      }
      if (IsPositionalComponent(parts_[i])) {
        // The array is looked up as the document {"0": ..., "1": ...}.
        if (FindField(&elems, parts_[i])) {
          Walk(&elems, i + 1);
        } else {
          Missing();
        }
        return;
      }
      bool any = false;
      while (bson_iter_next(&elems)) {
        any = true;
        if (bson_iter_type(&elems) == BSON_TYPE_DOCUMENT) {
          Walk(&elems, i);
        } else {
          Missing();
        }
      }
      if (!any) Missing();
      return;
    }

    Missing();
  }

  const std::vector<std::string_view>& parts_;
  const MissingPolicy missing_;
  PathValueVisitor* const visitor_;
};

class VectorCollector : public PathValueVisitor {
 public:
  explicit VectorCollector(std::vector<BsonValue>* out) : out_(out) {}
  void Visit(const bson_value_t& value) override { out_->push_back(value); }

 private:
  std::vector<BsonValue>* out_;
};

class SetCollector : public PathValueVisitor {
 public:
  explicit SetCollector(DistinctSet* set) : set_(set) {}
  void Visit(const bson_value_t& value) override { set_->Add(value); }

 private:
  DistinctSet* set_;
};

// Bytes of a value's payload in BSON (after the type byte and the key).
size_t PayloadSize(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_DOUBLE: return 8;
    case BSON_TYPE_UTF8: return 4 + v.value.v_utf8.len + 1;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: return v.value.v_doc.data_len;
    case BSON_TYPE_BINARY:
      return 4 + 1 + v.value.v_binary.data_len +
             (v.value.v_binary.subtype == BSON_SUBTYPE_BINARY_DEPRECATED ? 4 : 0);
    case BSON_TYPE_OID: return 12;
    case BSON_TYPE_BOOL: return 1;
    case BSON_TYPE_DATE_TIME: return 8;
    case BSON_TYPE_REGEX:
      return std::strlen(v.value.v_regex.regex) + 1 +
             (v.value.v_regex.options ? std::strlen(v.value.v_regex.options) : 0) + 1;
    case BSON_TYPE_DBPOINTER: return 4 + v.value.v_dbpointer.collection_len + 1 + 12;
    case BSON_TYPE_CODE: return 4 + v.value.v_code.code_len + 1;
    case BSON_TYPE_SYMBOL: return 4 + v.value.v_symbol.len + 1;
    case BSON_TYPE_CODEWSCOPE:
      return 4 + 4 + v.value.v_codewscope.code_len + 1 + v.value.v_codewscope.scope_len;
    case BSON_TYPE_INT32: return 4;
    case BSON_TYPE_TIMESTAMP: return 8;
    case BSON_TYPE_INT64: return 8;
    case BSON_TYPE_DECIMAL128: return 16;
    default: return 0;  // null, undefined, MinKey, MaxKey, EOD
  }
}

size_t DecimalDigits(size_t n) {
  size_t digits = 1;
  while (n >= 10) {
    n /= 10;
    ++digits;
  }
  return digits;
}

}  // namespace

std::vector<std::string_view> SplitDottedPath(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) {
      parts.push_back(path.substr(start));
      return parts;
    }
    parts.push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
}

Status ValidateFieldPath(std::string_view path) {
  if (path.empty()) {
    return Status(ErrorCode::kBadValue, "FieldPath cannot be constructed with empty string");
  }
  for (std::string_view part : SplitDottedPath(path)) {
    if (part.empty()) {
      return Status(ErrorCode::kBadValue, "FieldPath field names may not be empty strings.");
    }
    if (part[0] == '$') {
      return Status(ErrorCode::kBadValue,
                    "FieldPath field names may not start with '$'. Consider using $getField or "
                    "$setField.");
    }
  }
  return Status::OK();
}

bool IsPositionalComponent(std::string_view component) {
  if (component.empty()) return false;
  for (char c : component) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void VisitPathValues(const bson_t* doc, const std::vector<std::string_view>& parts,
                     MissingPolicy missing, PathValueVisitor* visitor) {
  PathWalker(parts, missing, visitor).WalkRoot(doc);
}

void CollectDistinctValues(const bson_t* doc, std::string_view dotted_path,
                           std::vector<BsonValue>* out) {
  const std::vector<std::string_view> parts = SplitDottedPath(dotted_path);
  VectorCollector collector(out);
  VisitPathValues(doc, parts, MissingPolicy::kSkip, &collector);
}

bool DistinctSet::ValueLess::operator()(const bson_value_t& a, const bson_value_t& b) const {
  return CompareValues(a, b) < 0;
}

DistinctSet::~DistinctSet() { Clear(); }

DistinctSet::DistinctSet(DistinctSet&& other) noexcept
    : values_(std::move(other.values_)), byte_size_(other.byte_size_) {
  other.values_.clear();
  other.byte_size_ = 0;
}

DistinctSet& DistinctSet::operator=(DistinctSet&& other) noexcept {
  if (this != &other) {
    Clear();
    values_ = std::move(other.values_);
    byte_size_ = other.byte_size_;
    other.values_.clear();
    other.byte_size_ = 0;
  }
  return *this;
}

void DistinctSet::Clear() {
  for (const bson_value_t& v : values_) {
    bson_value_destroy(const_cast<bson_value_t*>(&v));
  }
  values_.clear();
  byte_size_ = 0;
}

bool DistinctSet::Add(const bson_value_t& value) {
  auto hint = values_.lower_bound(value);
  if (hint != values_.end() && CompareValues(*hint, value) == 0) return false;
  bson_value_t copy;
  bson_value_copy(&value, &copy);
  const size_t index = values_.size();
  values_.emplace_hint(hint, copy);
  // Type byte, index key with its NUL, payload.
  byte_size_ += 1 + DecimalDigits(index) + 1 + PayloadSize(value);
  return true;
}

void DistinctSet::AddFromDocument(const bson_t* doc, std::string_view dotted_path) {
  const std::vector<std::string_view> parts = SplitDottedPath(dotted_path);
  SetCollector collector(this);
  VisitPathValues(doc, parts, MissingPolicy::kSkip, &collector);
}

void DistinctSet::AppendToArray(bson_t* array) const {
  uint32_t index = 0;
  char buf[16];
  for (const bson_value_t& v : values_) {
    const char* key;
    size_t key_len = bson_uint32_to_string(index++, &key, buf, sizeof(buf));
    bson_append_value(array, key, static_cast<int>(key_len), &v);
  }
}

}  // namespace projection
}  // namespace gatedb
