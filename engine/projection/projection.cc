#include "engine/projection/projection.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/projection/paths.h"

namespace gatedb {
namespace projection {

struct Projection::Node {
  enum class Kind {
    kPath,     // an interior node: children apply below this field
    kInclude,  // keep the field (inclusion projection, or _id)
    kExclude,  // drop the field
    kSlice,    // keep the field, slicing an array value
  };

  explicit Node(Kind k) : kind(k) {}

  const Node* Find(std::string_view name) const {
    auto it = children.find(name);
    return it == children.end() ? nullptr : it->second.get();
  }

  Kind kind;
  // kSlice: MongoDB's sliceArray(skip, limit).
  std::optional<int> skip;
  int limit = 0;
  // kPath: one child per field name.
  std::map<std::string, std::unique_ptr<Node>, std::less<>> children;
};

namespace {

using Node = Projection::Node;
using Kind = Projection::Node::Kind;

// Deeper specs are refused; deeper documents are copied (exclusion) or
// dropped (inclusion) below this depth rather than recursed into.  MongoDB
// refuses documents nested this deep on insert.
constexpr int kMaxDepth = 200;

Status BadValue(std::string message) { return Status(ErrorCode::kBadValue, std::move(message)); }

// MongoDB's typeName(), as its error messages print a BSON type.

// MongoDB's BSONElement::trueValue() for a bool or number.
bool IsTruthy(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_BOOL: return v.value.v_bool;
    case BSON_TYPE_INT32: return v.value.v_int32 != 0;
    case BSON_TYPE_INT64: return v.value.v_int64 != 0;
    case BSON_TYPE_DOUBLE: return v.value.v_double != 0;  // NaN is true
    case BSON_TYPE_DECIMAL128: return !decimal::IsZero(v.value.v_decimal128);  // NaN is true
    default: return false;
  }
}

// MongoDB's BSONElement::numberInt(), saturating instead of wrapping.
// REQUIRES: IsNumberType(v.value_type).
int NumberInt(const bson_value_t& v) {
  if (v.value_type == BSON_TYPE_INT32) return v.value.v_int32;
  long double x = NumberAsLongDouble(v);
  if (std::isnan(x)) return 0;
  if (x >= INT_MAX) return INT_MAX;
  if (x <= INT_MIN) return INT_MIN;
  return static_cast<int>(x);
}

// MongoDB's findFirstPositionalOperator(): "a.$", "a.$.b", "$".
bool HasPositionalOperator(std::string_view path) {
  if (path == "$") return true;
  if (path.find(".$.") != std::string_view::npos) return true;
  return path.size() >= 2 && path.substr(path.size() - 2) == ".$";
}

struct ParseContext {
  // Set by the first inclusion or exclusion of a field other than _id.
  std::optional<bool> inclusion;
  bool id_specified = false;  // a top-level "_id" or "_id.x"
  bool id_included = false;   // {_id: 1}
  bool has_slice = false;
};

// MongoDB's addNodeAtPath(): adds `node` at the dotted `path` below
// `parent`, creating interior nodes.
Status AddNodeAtPath(Node* parent, std::string_view path, std::unique_ptr<Node> node) {
  RETURN_IF_ERROR(ValidateFieldPath(path));
  std::vector<std::string_view> parts = SplitDottedPath(path);
  Node* current = parent;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    auto it = current->children.find(parts[i]);
    if (it == current->children.end()) {
      it = current->children
               .emplace(std::string(parts[i]), std::make_unique<Node>(Kind::kPath))
               .first;
    } else if (it->second->kind != Kind::kPath) {
      return Status(ErrorCode::kLocation31249, "Path collision at " + std::string(path) + " remaining portion " +
                                                   std::string(path.substr(path.find('.') + 1)));
    }
    current = it->second.get();
  }
  if (!current->children.emplace(std::string(parts.back()), std::move(node)).second) {
    return Status(ErrorCode::kLocation31250, "Path collision at " + std::string(path));
  }
  return Status::OK();
}

// The interior node for a sub-projection {path: {...}}, created or reused.
StatusOr<Node*> GetOrAddPathNode(Node* parent, std::string_view path) {
  Node* current = parent;
  for (std::string_view part : SplitDottedPath(path)) {
    auto it = current->children.find(part);
    if (it == current->children.end()) {
      it = current->children.emplace(std::string(part), std::make_unique<Node>(Kind::kPath)).first;
    } else if (it->second->kind != Kind::kPath) {
      return Status(ErrorCode::kLocation31249, "Path collision at " + std::string(path));
    }
    current = it->second.get();
  }
  return current;
}

Status ParseSlice(ParseContext* ctx, std::string_view path, bson_iter_t* arg, Node* parent) {
  auto node = std::make_unique<Node>(Kind::kSlice);
  const bson_type_t type = bson_iter_type(arg);
  if (IsNumberType(type)) {
    node->limit = NumberInt(*bson_iter_value(arg));
  } else if (type == BSON_TYPE_ARRAY) {
    bson_iter_t elems;
    if (!bson_iter_recurse(arg, &elems)) return BadValue("invalid $slice argument");
    bson_value_t values[2] = {};
    int count = 0;
    while (bson_iter_next(&elems)) {
      if (count < 2) values[count] = *bson_iter_value(&elems);
      ++count;
    }
    if (count != 2) return BadValue("$slice array argument should be of form [skip, limit]");
    if (!IsNumberType(values[0].value_type)) {
      return BadValue(std::string("$slice expects the skip argument to be a number, got ") +
                      BsonTypeName(values[0].value_type));
    }
    if (!IsNumberType(values[1].value_type)) {
      return BadValue(std::string("$slice expects the limit argument to be a number, got ") +
                      BsonTypeName(values[1].value_type));
    }
    node->skip = NumberInt(values[0]);
    node->limit = NumberInt(values[1]);
    if (node->limit <= 0) {
      return BadValue("$slice limit must be positive, got " + std::to_string(node->limit));
    }
  } else {
    return BadValue("$slice only supports numbers and [skip, limit] arrays");
  }
  RETURN_IF_ERROR(AddNodeAtPath(parent, path, std::move(node)));
  ctx->has_slice = true;
  return Status::OK();
}

// MongoDB's parseElement(): one field of the spec (or of a sub-projection).
Status ParseElement(ParseContext* ctx, bson_iter_t* it, Node* parent, bool parent_is_root,
                    int depth) {
  const std::string_view key(bson_iter_key(it), bson_iter_key_len(it));
  if (HasPositionalOperator(key)) {
    return BadValue("positional projection operator is not supported: " + std::string(key));
  }
  RETURN_IF_ERROR(ValidateFieldPath(key));
  const bson_type_t type = bson_iter_type(it);

  if (type == BSON_TYPE_DOCUMENT) {
    bson_iter_t sub;
    if (!bson_iter_recurse(it, &sub)) return BadValue("invalid projection specification");
    bson_iter_t probe = sub;
    int count = 0;
    std::string first_key;
    while (bson_iter_next(&probe)) {
      if (count++ == 0) first_key.assign(bson_iter_key(&probe), bson_iter_key_len(&probe));
    }
    if (count == 0) {
      return BadValue("An empty sub-projection is not a valid value. Found empty object at path");
    }
    if (count == 1 && first_key[0] == '$') {
      if (first_key == "$slice") {
        bson_iter_t arg = sub;
        bson_iter_next(&arg);
        return ParseSlice(ctx, key, &arg, parent);
      }
      return BadValue("projection operator " + first_key + " is not supported");
    }
    if (depth >= kMaxDepth) return BadValue("projection specification is nested too deeply");
    ASSIGN_OR_RETURN(Node * node, GetOrAddPathNode(parent, key));
    while (bson_iter_next(&sub)) {
      RETURN_IF_ERROR(ParseElement(ctx, &sub, node, /*parent_is_root=*/false, depth + 1));
    }
    return Status::OK();
  }

  if (type == BSON_TYPE_BOOL || IsNumberType(type)) {
    const bool top_level_id = parent_is_root && key == "_id";
    if (IsTruthy(*bson_iter_value(it))) {
      RETURN_IF_ERROR(AddNodeAtPath(parent, key, std::make_unique<Node>(Kind::kInclude)));
      if (top_level_id) {
        ctx->id_included = true;
      } else {
        if (ctx->inclusion.has_value() && !*ctx->inclusion) {
          return Status(ErrorCode::kLocation31253, "Cannot do inclusion on field " +
                                                       std::string(key) + " in exclusion projection");
        }
        ctx->inclusion = true;
      }
    } else {
      RETURN_IF_ERROR(AddNodeAtPath(parent, key, std::make_unique<Node>(Kind::kExclude)));
      if (!top_level_id) {
        if (ctx->inclusion.has_value() && *ctx->inclusion) {
          return Status(ErrorCode::kLocation31254, "Cannot do exclusion on field " +
                                                       std::string(key) + " in inclusion projection");
        }
        ctx->inclusion = false;
      }
    }
    return Status::OK();
  }

  return BadValue("projection expressions are not supported");
}

// ---- Applying a projection ----------------------------------------------

const char* IndexKey(uint32_t index, char (&buf)[16], int* key_len) {
  const char* key;
  *key_len = static_cast<int>(bson_uint32_to_string(index, &key, buf, sizeof(buf)));
  return key;
}

// MongoDB's sliceArray(): appends to `out`, under `key`, the part of the
// array at `it` that `node` selects.
void AppendSlicedArray(const Node& node, bson_iter_t* it, const char* key, int key_len,
                       bson_t* out) {
  bson_iter_t elems;
  long long len = 0;
  if (bson_iter_recurse(it, &elems)) {
    while (bson_iter_next(&elems)) ++len;
  }
  long long start = 0, forward = 0;
  if (!node.skip.has_value()) {
    if (node.limit < 0) {
      start = std::max(0LL, len + node.limit);
      forward = len - start;
    } else {
      forward = std::min(len, static_cast<long long>(node.limit));
    }
  } else if (*node.skip < 0) {
    start = std::max(0LL, len + *node.skip);
    forward = std::min(len - start, static_cast<long long>(node.limit));
  } else {
    start = std::min(len, static_cast<long long>(*node.skip));
    forward = std::min(len - start, static_cast<long long>(node.limit));
  }

  bson_t array;
  bson_append_array_begin(out, key, key_len, &array);
  if (bson_iter_recurse(it, &elems)) {
    long long pos = 0;
    uint32_t index = 0;
    char buf[16];
    while (pos < start + forward && bson_iter_next(&elems)) {
      if (pos++ < start) continue;
      int index_len;
      const char* index_key = IndexKey(index++, buf, &index_len);
      bson_append_iter(&array, index_key, index_len, &elems);
    }
  }
  bson_append_array_end(out, &array);
}

// A $slice leaf: slices an array (unless it sits inside a nested array,
// where MongoDB's find $slice does not look), keeps any other value.
void AppendSliceLeaf(const Node& node, bson_iter_t* it, const char* key, int key_len,
                     bool slice_ok, bson_t* out) {
  if (slice_ok && bson_iter_type(it) == BSON_TYPE_ARRAY) {
    AppendSlicedArray(node, it, key, key_len, out);
  } else {
    bson_append_iter(out, key, key_len, it);
  }
}

void IncludeFields(const Node& node, bson_iter_t* fields, bson_t* out, bool slice_ok, int depth);
void ExcludeFields(const Node& node, bson_iter_t* fields, bson_t* out, bool slice_ok, int depth);

// Inclusion: `node` (kPath) applied to the value at `it`.  A document gives
// its projected sub-document, an array the projection of each document or
// array element (scalars dropped), a scalar nothing.  Returns whether it
// appended anything.
bool IncludeValue(const Node& node, bson_iter_t* it, const char* key, int key_len, bson_t* out,
                  bool slice_ok, int depth) {
  if (depth > kMaxDepth) return false;
  const bson_type_t type = bson_iter_type(it);
  bson_iter_t sub;
  if (type == BSON_TYPE_DOCUMENT) {
    if (!bson_iter_recurse(it, &sub)) return false;
    bson_t child;
    bson_append_document_begin(out, key, key_len, &child);
    IncludeFields(node, &sub, &child, slice_ok, depth + 1);
    bson_append_document_end(out, &child);
    return true;
  }
  if (type == BSON_TYPE_ARRAY) {
    if (!bson_iter_recurse(it, &sub)) return false;
    bson_t child;
    bson_append_array_begin(out, key, key_len, &child);
    uint32_t index = 0;
    char buf[16];
    while (bson_iter_next(&sub)) {
      const bson_type_t elem_type = bson_iter_type(&sub);
      if (elem_type != BSON_TYPE_DOCUMENT && elem_type != BSON_TYPE_ARRAY) continue;
      int index_len;
      const char* index_key = IndexKey(index, buf, &index_len);
      if (IncludeValue(node, &sub, index_key, index_len, &child,
                       slice_ok && elem_type != BSON_TYPE_ARRAY, depth + 1)) {
        ++index;
      }
    }
    bson_append_array_end(out, &child);
    return true;
  }
  return false;
}

void IncludeFields(const Node& node, bson_iter_t* fields, bson_t* out, bool slice_ok,
                   int depth) {
  while (bson_iter_next(fields)) {
    const char* key = bson_iter_key(fields);
    const int key_len = static_cast<int>(bson_iter_key_len(fields));
    const Node* child = node.Find(std::string_view(key, key_len));
    if (child == nullptr) continue;
    switch (child->kind) {
      case Kind::kInclude: bson_append_iter(out, key, key_len, fields); break;
      case Kind::kExclude: break;
      case Kind::kSlice: AppendSliceLeaf(*child, fields, key, key_len, slice_ok, out); break;
      case Kind::kPath: IncludeValue(*child, fields, key, key_len, out, slice_ok, depth); break;
    }
  }
}

// Exclusion: `node` (kPath) applied to the value at `it`.  A document or
// array is rebuilt without the excluded paths; anything else is kept.
void ExcludeValue(const Node& node, bson_iter_t* it, const char* key, int key_len, bson_t* out,
                  bool slice_ok, int depth) {
  const bson_type_t type = bson_iter_type(it);
  bson_iter_t sub;
  if (depth > kMaxDepth || (type != BSON_TYPE_DOCUMENT && type != BSON_TYPE_ARRAY) ||
      !bson_iter_recurse(it, &sub)) {
    bson_append_iter(out, key, key_len, it);
    return;
  }
  bson_t child;
  if (type == BSON_TYPE_DOCUMENT) {
    bson_append_document_begin(out, key, key_len, &child);
    ExcludeFields(node, &sub, &child, slice_ok, depth + 1);
    bson_append_document_end(out, &child);
    return;
  }
  bson_append_array_begin(out, key, key_len, &child);
  uint32_t index = 0;
  char buf[16];
  while (bson_iter_next(&sub)) {
    int index_len;
    const char* index_key = IndexKey(index++, buf, &index_len);
    const bson_type_t elem_type = bson_iter_type(&sub);
    ExcludeValue(node, &sub, index_key, index_len, &child,
                 slice_ok && elem_type != BSON_TYPE_ARRAY, depth + 1);
  }
  bson_append_array_end(out, &child);
}

void ExcludeFields(const Node& node, bson_iter_t* fields, bson_t* out, bool slice_ok,
                   int depth) {
  while (bson_iter_next(fields)) {
    const char* key = bson_iter_key(fields);
    const int key_len = static_cast<int>(bson_iter_key_len(fields));
    const Node* child = node.Find(std::string_view(key, key_len));
    if (child == nullptr) {
      bson_append_iter(out, key, key_len, fields);
      continue;
    }
    switch (child->kind) {
      case Kind::kInclude: bson_append_iter(out, key, key_len, fields); break;
      case Kind::kExclude: break;
      case Kind::kSlice: AppendSliceLeaf(*child, fields, key, key_len, slice_ok, out); break;
      case Kind::kPath: ExcludeValue(*child, fields, key, key_len, out, slice_ok, depth); break;
    }
  }
}

}  // namespace

Projection::Projection(std::unique_ptr<Node> root, bool inclusion)
    : root_(std::move(root)), inclusion_(inclusion) {}

Projection::~Projection() = default;

StatusOr<std::unique_ptr<Projection>> Projection::Parse(const bson_t* spec) {
  auto root = std::make_unique<Node>(Kind::kPath);
  ParseContext ctx;
  bson_iter_t it;
  if (!bson_iter_init(&it, spec)) return BadValue("invalid projection specification");
  while (bson_iter_next(&it)) {
    const std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (key == "_id" || key.substr(0, 4) == "_id.") ctx.id_specified = true;
    RETURN_IF_ERROR(ParseElement(&ctx, &it, root.get(), /*parent_is_root=*/true, 0));
  }

  // MongoDB's computeProjectionType(): with no field other than _id
  // included or excluded, {_id: 1} (with or without $slice) is an
  // inclusion, anything else ({}, {_id: 0}, {a: {$slice: 1}}) an exclusion.
  const bool inclusion = ctx.inclusion.value_or(ctx.id_included);
  if (inclusion && !ctx.id_specified) {
    root->children.emplace("_id", std::make_unique<Node>(Kind::kInclude));
  }
  if (!inclusion && ctx.id_included) {
    // {_id: 1, a: 0}: legal, and _id is kept anyway.
    root->children.erase("_id");
  }
  return std::unique_ptr<Projection>(new Projection(std::move(root), inclusion));
}

bool Projection::is_identity() const { return !inclusion_ && root_->children.empty(); }

void Projection::Apply(const bson_t* doc, bson_t* out) const {
  if (is_identity()) {
    bson_concat(out, doc);
    return;
  }
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return;
  if (inclusion_) {
    IncludeFields(*root_, &it, out, /*slice_ok=*/true, 0);
  } else {
    ExcludeFields(*root_, &it, out, /*slice_ok=*/true, 0);
  }
}

}  // namespace projection
}  // namespace gatedb
