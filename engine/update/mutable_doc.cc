// The mutable document tree, path helpers and message formatting shared by
// the update operators (see update_internal.h).
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/document/validate.h"
#include "engine/update/update_internal.h"

namespace gatedb {
namespace update {
namespace internal {

namespace {

bool IsContainerType(bson_type_t t) { return t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY; }

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

// Names of the first array indexes, so that `$[]` need not allocate them.
const std::string* SmallIndexName(size_t i) {
  static const std::vector<std::string>* const kNames = [] {
    auto* v = new std::vector<std::string>();
    for (size_t k = 0; k < 1000; ++k) v->push_back(std::to_string(k));
    return v;
  }();
  return i < kNames->size() ? &(*kNames)[i] : nullptr;
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "nan.0";
  if (std::isinf(d)) return d > 0 ? "inf.0" : "-inf.0";
  char buf[64];
  if (d == std::floor(d) && std::fabs(d) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.1f", d);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.15g", d);
  if (std::strtod(buf, nullptr) != d) std::snprintf(buf, sizeof(buf), "%.17g", d);
  return buf;
}

void FormatValueTo(const bson_value_t& v, int depth, std::string* out);

void FormatContainerTo(const bson_value_t& v, int depth, std::string* out) {
  bool is_array = v.value_type == BSON_TYPE_ARRAY;
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len)) {
    out->append(is_array ? "[]" : "{}");
    return;
  }
  if (depth > 20) {
    out->append(is_array ? "[ ... ]" : "{ ... }");
    return;
  }
  bool first = true;
  out->append(is_array ? "[" : "{");
  while (bson_iter_next(&it)) {
    out->append(first ? " " : ", ");
    first = false;
    if (!is_array) {
      out->append(bson_iter_key(&it), bson_iter_key_len(&it));
      out->append(": ");
    }
    FormatValueTo(*bson_iter_value(&it), depth + 1, out);
  }
  out->append(first ? (is_array ? "]" : "}") : (is_array ? " ]" : " }"));
}

void FormatValueTo(const bson_value_t& v, int depth, std::string* out) {
  char buf[128];
  switch (v.value_type) {
    case BSON_TYPE_EOD: out->append("EOO"); return;
    case BSON_TYPE_DOUBLE: out->append(FormatDouble(v.value.v_double)); return;
    case BSON_TYPE_UTF8:
      out->push_back('"');
      out->append(v.value.v_utf8.str, v.value.v_utf8.len);
      out->push_back('"');
      return;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: FormatContainerTo(v, depth, out); return;
    case BSON_TYPE_BINARY: {
      std::snprintf(buf, sizeof(buf), "BinData(%d, ", static_cast<int>(v.value.v_binary.subtype));
      out->append(buf);
      static const char kHex[] = "0123456789ABCDEF";
      for (uint32_t i = 0; i < v.value.v_binary.data_len && i < 64; ++i) {
        out->push_back(kHex[v.value.v_binary.data[i] >> 4]);
        out->push_back(kHex[v.value.v_binary.data[i] & 15]);
      }
      out->push_back(')');
      return;
    }
    case BSON_TYPE_UNDEFINED: out->append("undefined"); return;
    case BSON_TYPE_OID: {
      char hex[25];
      bson_oid_to_string(&v.value.v_oid, hex);
      out->append("ObjectId('").append(hex).append("')");
      return;
    }
    case BSON_TYPE_BOOL: out->append(v.value.v_bool ? "true" : "false"); return;
    case BSON_TYPE_DATE_TIME:
      std::snprintf(buf, sizeof(buf), "new Date(%" PRId64 ")", v.value.v_datetime);
      out->append(buf);
      return;
    case BSON_TYPE_NULL: out->append("null"); return;
    case BSON_TYPE_REGEX:
      out->append("/").append(v.value.v_regex.regex ? v.value.v_regex.regex : "").append("/");
      out->append(v.value.v_regex.options ? v.value.v_regex.options : "");
      return;
    case BSON_TYPE_DBPOINTER: {
      char hex[25];
      bson_oid_to_string(&v.value.v_dbpointer.oid, hex);
      out->append("DBRef('").append(v.value.v_dbpointer.collection, v.value.v_dbpointer.collection_len);
      out->append("', ").append(hex).append(")");
      return;
    }
    case BSON_TYPE_CODE: out->append(v.value.v_code.code, v.value.v_code.code_len); return;
    case BSON_TYPE_SYMBOL: out->append(v.value.v_symbol.symbol, v.value.v_symbol.len); return;
    case BSON_TYPE_CODEWSCOPE:
      out->append(v.value.v_codewscope.code, v.value.v_codewscope.code_len);
      return;
    case BSON_TYPE_INT32:
      std::snprintf(buf, sizeof(buf), "%" PRId32, v.value.v_int32);
      out->append(buf);
      return;
    case BSON_TYPE_TIMESTAMP:
      std::snprintf(buf, sizeof(buf), "Timestamp(%" PRIu32 ", %" PRIu32 ")", v.value.v_timestamp.timestamp,
                    v.value.v_timestamp.increment);
      out->append(buf);
      return;
    case BSON_TYPE_INT64:
      std::snprintf(buf, sizeof(buf), "%" PRId64, v.value.v_int64);
      out->append(buf);
      return;
    case BSON_TYPE_DECIMAL128: {
      char dec[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, dec);
      out->append("NumberDecimal(\"").append(dec).append("\")");
      return;
    }
    case BSON_TYPE_MAXKEY: out->append("MaxKey"); return;
    case BSON_TYPE_MINKEY: out->append("MinKey"); return;
  }
  out->append("?");
}

}  // namespace

// ---------------------------------------------------------------------------
// Names, paths and the update tree.

const char* OpName(OpType type) {
  switch (type) {
    case OpType::kSet: return "$set";
    case OpType::kUnset: return "$unset";
    case OpType::kInc: return "$inc";
    case OpType::kMul: return "$mul";
    case OpType::kMin: return "$min";
    case OpType::kMax: return "$max";
    case OpType::kRename: return "$rename";
    case OpType::kCurrentDate: return "$currentDate";
    case OpType::kSetOnInsert: return "$setOnInsert";
    case OpType::kPush: return "$push";
    case OpType::kAddToSet: return "$addToSet";
    case OpType::kPull: return "$pull";
    case OpType::kPullAll: return "$pullAll";
    case OpType::kPop: return "$pop";
    case OpType::kBit: return "$bit";
  }
  return "$unknown";
}

bool CreatesPath(OpType type) {
  switch (type) {
    case OpType::kUnset:
    case OpType::kPull:
    case OpType::kPullAll:
    case OpType::kPop: return false;
    default: return true;
  }
}

Op::~Op() {
  if (pull_filter != nullptr) bson_destroy(pull_filter);
}

bool FieldNameLess::operator()(const std::string& a, const std::string& b) const {
  if (a.size() != b.size() && AllDigits(a) && AllDigits(b)) return a.size() < b.size();
  return a < b;
}

bool IsPositional(std::string_view part) { return part == "$"; }

bool IsArrayFilter(std::string_view part) {
  return part.size() >= 3 && part[0] == '$' && part[1] == '[' && part.back() == ']';
}

bool ParseIndex(std::string_view part, size_t* index) {
  if (!AllDigits(part)) return false;
  size_t v = 0;
  for (char ch : part) {
    size_t digit = static_cast<size_t>(ch - '0');
    if (v > (std::numeric_limits<size_t>::max() - digit) / 10) {
      v = std::numeric_limits<size_t>::max();  // far past any padding limit
      break;
    }
    v = v * 10 + digit;
  }
  *index = v;
  return true;
}

std::string JoinPath(const std::vector<std::string>& parts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < parts.size(); ++i) {
    if (i > begin) out.push_back('.');
    out.append(parts[i]);
  }
  return out;
}

Status InsertPath(UpdateNode* root, const std::vector<std::string>& parts, const Op* op,
                  ConflictStyle style) {
  auto conflict = [&](size_t prefix_len) {
    std::string at = JoinPath(parts, 0, prefix_len);
    if (style == ConflictStyle::kApply) {
      return Status(ErrorCode::kConflictingUpdateOperators, "Update created a conflict at '" + at + "'");
    }
    return Status(ErrorCode::kConflictingUpdateOperators,
                  "Updating the path '" + JoinPath(parts, 0, parts.size()) +
                      "' would create a conflict at '" + at + "'");
  };
  UpdateNode* current = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string name = IsArrayFilter(parts[i]) ? std::string() : parts[i];
    bool child_is_array = IsArrayFilter(parts[i + 1]);
    UpdateNode::Kind want = child_is_array ? UpdateNode::Kind::kArray : UpdateNode::Kind::kObject;
    auto it = current->children.find(name);
    if (it != current->children.end()) {
      if (it->second->kind != want) return conflict(i + 1);
    } else {
      it = current->children.emplace(std::move(name), std::make_unique<UpdateNode>(want)).first;
    }
    current = it->second.get();
  }
  std::string name = IsArrayFilter(parts.back()) ? std::string() : parts.back();
  if (current->children.count(name) != 0) return conflict(parts.size());
  auto leaf = std::make_unique<UpdateNode>(UpdateNode::Kind::kLeaf);
  leaf->op = op;
  current->children.emplace(std::move(name), std::move(leaf));
  return Status::OK();
}

std::string Cursor::Dotted() const { return DottedPrefix(path.size()); }

std::string Cursor::DottedPrefix(size_t n) const {
  std::string out;
  for (size_t i = 0; i < n && i < path.size(); ++i) {
    if (i > 0) out.push_back('.');
    out.append(path[i]);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Messages and values.

const char* TypeName(bson_type_t type) { return BsonTypeName(type); }

std::string FormatValue(const bson_value_t& v) {
  std::string out;
  FormatValueTo(v, 0, &out);
  return out;
}

std::string FormatElement(std::string_view name, const bson_value_t& v) {
  std::string out(name);
  out.append(": ");
  FormatValueTo(v, 0, &out);
  return out;
}

bson_value_t Int32Value(int32_t v) {
  bson_value_t out{};
  out.value_type = BSON_TYPE_INT32;
  out.value.v_int32 = v;
  return out;
}

bson_value_t Int64Value(int64_t v) {
  bson_value_t out{};
  out.value_type = BSON_TYPE_INT64;
  out.value.v_int64 = v;
  return out;
}

bson_value_t DoubleValue(double v) {
  bson_value_t out{};
  out.value_type = BSON_TYPE_DOUBLE;
  out.value.v_double = v;
  return out;
}

Status ParseIntegerToLong(std::string_view name, const bson_value_t& v, int64_t* out) {
  auto fail = [&](const char* what) {
    return Status(ErrorCode::kFailedToParse, std::string(what) + FormatElement(name, v));
  };
  switch (v.value_type) {
    case BSON_TYPE_INT32: *out = v.value.v_int32; return Status::OK();
    case BSON_TYPE_INT64: *out = v.value.v_int64; return Status::OK();
    case BSON_TYPE_DECIMAL128: {
      const bson_decimal128_t& dec = v.value.v_decimal128;
      if (decimal::IsNaN(dec)) return fail("Expected an integer, but found NaN in: ");
      if (decimal::ToInt64Truncated(dec)) {
        std::optional<int64_t> n = decimal::ToInt64Exact(dec);
        if (!n) return fail("Expected an integer: ");
        *out = *n;
        return Status::OK();
      }
      return fail("Cannot represent as a 64-bit integer: ");
    }
    case BSON_TYPE_DOUBLE: {
      long double d = NumberAsLongDouble(v);
      if (std::isnan(d)) return fail("Expected an integer, but found NaN in: ");
      if (d >= 9223372036854775808.0L || d < -9223372036854775808.0L) {
        return fail("Cannot represent as a 64-bit integer: ");
      }
      if (d != std::trunc(d)) return fail("Expected an integer: ");
      *out = static_cast<int64_t>(d);
      return Status::OK();
    }
    default: return fail("Expected a number in: ");
  }
}

bool ValuesIdentical(const bson_value_t& a, const bson_value_t& b) {
  if (a.value_type != b.value_type) return false;
  bson_t x = BSON_INITIALIZER, y = BSON_INITIALIZER;
  bson_append_value(&x, "", 0, &a);
  bson_append_value(&y, "", 0, &b);
  bool same = x.len == y.len && std::memcmp(bson_get_data(&x), bson_get_data(&y), x.len) == 0;
  bson_destroy(&x);
  bson_destroy(&y);
  return same;
}

bool DepthWithin(const bson_value_t& v, int level) {
  if (!IsContainerType(v.value_type)) return true;
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len)) return true;
  while (bson_iter_next(&it)) {
    if (level > kMaxDepth) return false;
    if (IsContainerType(bson_iter_type(&it)) && !DepthWithin(*bson_iter_value(&it), level + 1)) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// MNode and ApplyState.

bool MNode::IsDocLike() const {
  return kind == Kind::kDoc || (kind == Kind::kValue && value.value_type == BSON_TYPE_DOCUMENT);
}

bool MNode::IsArrayLike() const {
  return kind == Kind::kArray || (kind == Kind::kValue && value.value_type == BSON_TYPE_ARRAY);
}

bson_type_t MNode::type() const {
  switch (kind) {
    case Kind::kDoc: return BSON_TYPE_DOCUMENT;
    case Kind::kArray: return BSON_TYPE_ARRAY;
    case Kind::kValue: return value.value_type;
  }
  return value.value_type;
}

void MNode::SetValue(const bson_value_t& v, bool trusted_value) {
  kind = Kind::kValue;
  value = v;
  children.clear();
  trusted = trusted_value;
  raw = nullptr;
}

ApplyState::ApplyState(const bson_t* doc, int64_t now_millis, bool is_insert)
    : now_millis_(now_millis), is_insert_(is_insert) {
  root_ = NewNode();
  root_->kind = MNode::Kind::kDoc;
  root_->trusted = true;
  root_->children.reserve(16);  // most documents: one allocation
  bson_iter_t it;
  if (doc != nullptr && bson_iter_init(&it, doc)) {
    source_len_ = doc->len;
    while (bson_iter_next(&it)) {
      MNode* child = NewValueNode(*bson_iter_value(&it));
      child->trusted = true;
      // bson_iter_t's off and next_off (public fields) bound the element.
      child->raw = it.raw + it.off;
      child->raw_len = it.next_off - it.off;
      root_->children.push_back(
          MChild{std::string_view(bson_iter_key(&it), bson_iter_key_len(&it)), child});
    }
  }
}

ApplyState::~ApplyState() {
  for (bson_t* b : buffers_) bson_destroy(b);
}

MNode* ApplyState::NewNode() {
  arena_.emplace_back();
  return &arena_.back();
}

MNode* ApplyState::NewValueNode(const bson_value_t& v) {
  MNode* n = NewNode();
  n->value = v;
  return n;
}

MNode* ApplyState::NewNullNode() {
  bson_value_t v{};
  v.value_type = BSON_TYPE_NULL;
  return NewValueNode(v);
}

MNode* ApplyState::CloneShallow(const MNode* n) {
  MNode* copy = NewNode();
  copy->kind = n->kind;
  copy->value = n->value;
  copy->children = n->children;
  copy->trusted = false;
  return copy;
}

std::string_view ApplyState::Intern(std::string s) {
  names_.push_back(std::move(s));
  return names_.back();
}

void ApplyState::Expand(MNode* n) {
  if (n->kind != MNode::Kind::kValue || !IsContainerType(n->value.value_type)) return;
  bool is_array = n->value.value_type == BSON_TYPE_ARRAY;
  bson_iter_t it;
  std::vector<MChild> children;
  if (bson_iter_init_from_data(&it, n->value.value.v_doc.data, n->value.value.v_doc.data_len)) {
    while (bson_iter_next(&it)) {
      MNode* child = NewValueNode(*bson_iter_value(&it));
      child->trusted = n->trusted;
      std::string_view name =
          is_array ? std::string_view() : std::string_view(bson_iter_key(&it), bson_iter_key_len(&it));
      children.push_back(MChild{name, child});
    }
  }
  n->children = std::move(children);
  n->kind = is_array ? MNode::Kind::kArray : MNode::Kind::kDoc;
}

MNode* ApplyState::Lookup(MNode* n, std::string_view name) {
  if (n->IsDocLike()) {
    Expand(n);
    for (const MChild& c : n->children) {
      if (c.name == name) return c.node;
    }
    return nullptr;
  }
  if (n->IsArrayLike()) {
    size_t index = 0;
    if (!ParseIndex(name, &index)) return nullptr;
    Expand(n);
    return index < n->children.size() ? n->children[index].node : nullptr;
  }
  return nullptr;
}

bson_value_t ApplyState::ValueOf(MNode* n) {
  if (n->kind == MNode::Kind::kValue) return n->value;
  bson_t* b = bson_new();
  buffers_.push_back(b);
  // Serializing what is already in memory; limits are checked on output.
  const char* key = nullptr;
  char buf[16];
  uint32_t index = 0;
  for (const MChild& c : n->children) {
    bson_value_t v = ValueOf(c.node);
    if (n->kind == MNode::Kind::kArray) {
      size_t len = bson_uint32_to_string(index++, &key, buf, sizeof(buf));
      AppendValueVerbatim(b, key, static_cast<int>(len), &v);
    } else {
      AppendValueVerbatim(b, c.name.data(), static_cast<int>(c.name.size()), &v);
    }
  }
  bson_value_t out{};
  out.value_type = n->kind == MNode::Kind::kArray ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
  out.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(b));
  out.value.v_doc.data_len = b->len;
  return out;
}

std::string ApplyState::IdElementString() {
  for (const MChild& c : root_->children) {
    if (c.name == "_id") return FormatElement("_id", ValueOf(c.node));
  }
  return "no id";
}

Status ApplyState::AppendNode(bson_t* out, std::string_view key, MNode* n, int level) {
  if (!n->trusted) {
    if (level > kMaxDepth ||
        (n->kind == MNode::Kind::kValue && !DepthWithin(n->value, level + 1))) {
      return Status(ErrorCode::kOverflow,
                    "Document exceeds maximum nesting depth of " + std::to_string(kMaxDepth));
    }
  }
  int key_len = static_cast<int>(key.size());
  switch (n->kind) {
    case MNode::Kind::kValue:
      if (!AppendValueVerbatim(out, key.data(), key_len, &n->value)) break;
      return Status::OK();
    case MNode::Kind::kDoc: {
      bson_t child;
      if (!bson_append_document_begin(out, key.data(), key_len, &child)) break;
      Status s = AppendChildren(n, &child, level + 1);
      bool ended = bson_append_document_end(out, &child);
      RETURN_IF_ERROR(s);
      if (!ended) break;
      return Status::OK();
    }
    case MNode::Kind::kArray: {
      bson_t child;
      if (!bson_append_array_begin(out, key.data(), key_len, &child)) break;
      Status s = AppendChildren(n, &child, level + 1);
      bool ended = bson_append_array_end(out, &child);
      RETURN_IF_ERROR(s);
      if (!ended) break;
      return Status::OK();
    }
  }
  return Status(ErrorCode::kBSONObjectTooLarge, "Resulting document after update is larger than " +
                                                    std::to_string(kMaxDocumentSize));
}

Status ApplyState::AppendChildren(MNode* n, bson_t* out, int level) {
  if (n->kind == MNode::Kind::kArray) {
    char buf[16];
    const char* key = nullptr;
    uint32_t index = 0;
    for (const MChild& c : n->children) {
      size_t len = bson_uint32_to_string(index++, &key, buf, sizeof(buf));
      RETURN_IF_ERROR(AppendNode(out, std::string_view(key, len), c.node, level));
    }
    return Status::OK();
  }
  for (const MChild& c : n->children) RETURN_IF_ERROR(AppendNode(out, c.name, c.node, level));
  return Status::OK();
}

bool ApplyState::RawUsable(const MChild& c) {
  const MNode* n = c.node;
  if (n->raw == nullptr || n->kind != MNode::Kind::kValue || !n->trusted) return false;
  // The element still says what the node holds, under the child's name.
  const size_t name_len = c.name.size();
  return n->raw_len > name_len + 1 && n->raw[0] == static_cast<uint8_t>(n->value.value_type) &&
         std::memcmp(n->raw + 1, c.name.data(), name_len) == 0 && n->raw[1 + name_len] == '\0';
}

Status ApplyState::AppendRoot(bson_t* out, std::vector<uint32_t>* child_offsets) {
  if (out->len != 5) return AppendChildren(root_, out, 1);
  if (child_offsets != nullptr) {
    child_offsets->clear();
    child_offsets->reserve(root_->children.size());
  }
  // The document is assembled here, then handed to `out` whole.
  std::string doc(4, '\0');
  doc.reserve(source_len_ + 256);
  bson_t changed = BSON_INITIALIZER;  // one changed field at a time, appended as AppendChildren would
  for (const MChild& c : root_->children) {
    if (child_offsets != nullptr) child_offsets->push_back(static_cast<uint32_t>(doc.size()));
    if (RawUsable(c)) {
      doc.append(reinterpret_cast<const char*>(c.node->raw), c.node->raw_len);
      continue;
    }
    bson_reinit(&changed);
    Status s = AppendNode(&changed, c.name, c.node, 1);
    if (!s.ok()) {
      bson_destroy(&changed);
      return s;
    }
    doc.append(reinterpret_cast<const char*>(bson_get_data(&changed)) + 4, changed.len - 5);
  }
  bson_destroy(&changed);
  doc.push_back('\0');
  if (doc.size() > static_cast<size_t>(INT32_MAX)) {
    return Status(ErrorCode::kBSONObjectTooLarge, "Resulting document after update is larger than " +
                                                      std::to_string(kMaxDocumentSize));
  }
  const uint32_t len = static_cast<uint32_t>(doc.size());
  for (int i = 0; i < 4; ++i) doc[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  uint8_t* dst = bson_reserve_buffer(out, len);  // `out` is empty: documented use
  if (dst == nullptr) {
    if (child_offsets != nullptr) child_offsets->clear();
    return AppendChildren(root_, out, 1);
  }
  std::memcpy(dst, doc.data(), len);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Path creation.

Status CreatePath(ApplyState* st, Cursor* c, MNode* leaf) {
  MNode* anchor = c->node();
  size_t k = c->chain.size() - 1;  // index of the first missing component
  std::string_view first = c->path[k];
  auto not_viable = [&]() {
    std::string anchor_name = k > 0 ? std::string(c->path[k - 1]) : std::string();
    return Status(ErrorCode::kPathNotViable,
                  "Cannot create field '" + std::string(first) + "' in element {" +
                      FormatElement(anchor_name, st->ValueOf(anchor)) + "}");
  };
  MNode* current = anchor;
  size_t i = k;
  if (anchor->IsArrayLike()) {
    size_t index = 0;
    if (!ParseIndex(first, &index)) return not_viable();
    st->Expand(anchor);
    if (index > anchor->children.size()) {
      size_t to_pad = index - anchor->children.size();
      if (to_pad > kMaxPaddingAllowed) {
        return Status(ErrorCode::kBadValue,
                      "can't backfill more than " + std::to_string(kMaxPaddingAllowed) + " elements");
      }
      for (size_t p = 0; p < to_pad; ++p) anchor->children.push_back(MChild{{}, st->NewNullNode()});
    }
    MNode* element = leaf;
    if (k + 1 < c->path.size()) {
      element = st->NewNode();
      element->kind = MNode::Kind::kDoc;
    }
    anchor->children.push_back(MChild{{}, element});
    c->chain.push_back(element);
    if (element == leaf) return Status::OK();
    current = element;
    i = k + 1;
  } else if (anchor->IsDocLike()) {
    st->Expand(anchor);
  } else {
    return not_viable();
  }
  for (; i + 1 < c->path.size(); ++i) {
    MNode* doc = st->NewNode();
    doc->kind = MNode::Kind::kDoc;
    current->children.push_back(MChild{c->path[i], doc});
    c->chain.push_back(doc);
    current = doc;
  }
  current->children.push_back(MChild{c->path.back(), leaf});
  c->chain.push_back(leaf);
  return Status::OK();
}

std::string_view IndexName(ApplyState* st, size_t i) {
  if (const std::string* s = SmallIndexName(i)) return *s;
  return st->Intern(std::to_string(i));
}

}  // namespace internal
}  // namespace update
}  // namespace gatedb
