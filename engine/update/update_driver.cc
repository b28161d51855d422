#include "engine/update/update_driver.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "engine/document/bson_compare.h"
#include "engine/document/bson_writer.h"
#include "engine/document/raw_element.h"
#include "engine/document/validate.h"
#include "engine/update/update_internal.h"

namespace gatedb {
namespace update {

using internal::ApplyState;
using internal::ConflictStyle;
using internal::Cursor;
using internal::MChild;
using internal::MNode;
using internal::Op;
using internal::OpType;
using internal::UpdateNode;

namespace {

struct ModifierName {
  const char* name;
  OpType type;
};

constexpr ModifierName kModifiers[] = {
    {"$set", OpType::kSet},           {"$unset", OpType::kUnset},
    {"$inc", OpType::kInc},           {"$mul", OpType::kMul},
    {"$min", OpType::kMin},           {"$max", OpType::kMax},
    {"$rename", OpType::kRename},     {"$currentDate", OpType::kCurrentDate},
    {"$setOnInsert", OpType::kSetOnInsert}, {"$push", OpType::kPush},
    {"$addToSet", OpType::kAddToSet}, {"$pull", OpType::kPull},
    {"$pullAll", OpType::kPullAll},   {"$pop", OpType::kPop},
    {"$bit", OpType::kBit},
};

bool LookupModifier(const char* name, OpType* type) {
  for (const ModifierName& m : kModifiers) {
    if (std::strcmp(m.name, name) == 0) {
      *type = m.type;
      return true;
    }
  }
  return false;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) {
      parts.emplace_back(path.substr(start));
      break;
    }
    parts.emplace_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

// fieldchecker::isUpdatable plus UpdateObjectNode::parseAndMerge's checks
// of `$` and `$[<id>]`.
Status CheckUpdatePath(const std::string& path, std::vector<std::string>* parts) {
  if (path.empty()) return Status(ErrorCode::kEmptyFieldName, "An empty update path is not valid.");
  *parts = SplitPath(path);
  for (const std::string& part : *parts) {
    if (part.empty()) {
      return Status(ErrorCode::kEmptyFieldName,
                    "The update path '" + path + "' contains an empty field name, which is not allowed.");
    }
  }
  if (parts->size() > static_cast<size_t>(internal::kMaxPathParts)) {
    return Status(ErrorCode::kOverflow, "The update path '" + path.substr(0, 100) + "...' has more than " +
                                            std::to_string(internal::kMaxPathParts) + " parts");
  }
  size_t positional_count = 0;
  for (size_t i = 0; i < parts->size(); ++i) {
    const std::string& part = (*parts)[i];
    if (internal::IsPositional(part)) {
      if (i == 0) {
        return Status(ErrorCode::kBadValue,
                      "Cannot have positional (i.e. '$') element in the first position in path '" + path + "'");
      }
      if (++positional_count > 1) {
        return Status(ErrorCode::kBadValue,
                      "Too many positional (i.e. '$') elements found in path '" + path + "'");
      }
    } else if (internal::IsArrayFilter(part)) {
      if (i == 0) {
        return Status(ErrorCode::kBadValue,
                      "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position "
                      "in path '" + path + "'");
      }
      std::string identifier = part.substr(2, part.size() - 3);
      if (!identifier.empty()) {
        // gatedb takes no arrayFilters, so every identifier lacks its filter.
        return Status(ErrorCode::kBadValue, "No array filter found for identifier '" + identifier +
                                                "' in path '" + path + "' (arrayFilters are not supported)");
      }
    }
  }
  return Status::OK();
}

bool HasDynamicPart(const std::vector<std::string>& parts) {
  for (const std::string& p : parts) {
    if (internal::IsPositional(p) || internal::IsArrayFilter(p)) return true;
  }
  return false;
}

bool IsPrefixOf(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

Status DollarPrefixedError(std::string_view name) {
  std::string n(name);
  return Status(ErrorCode::kDollarPrefixedFieldName,
                "The dollar ($) prefixed field '" + n + "' in '" + n +
                    "' is not allowed in the context of an update's replacement document. Consider using "
                    "an aggregation pipeline with $replaceWith.");
}

// A value at a dotted path through documents only; false when absent.
bool FindDotted(const bson_t* doc, const std::vector<std::string>& parts, bson_value_t* out) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!bson_iter_find(&it, parts[i].c_str())) return false;
    if (i + 1 == parts.size()) {
      *out = *bson_iter_value(&it);
      return true;
    }
    if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) return false;
    bson_iter_t child;
    if (!bson_iter_recurse(&it, &child)) return false;
    it = child;
  }
  return false;
}

// Moves the apply cursor as deep along its path as the document now goes.
void Normalize(ApplyState* st, Cursor* c) {
  while (c->chain.size() <= c->path.size()) {
    MNode* next = st->Lookup(c->node(), c->path[c->chain.size() - 1]);
    if (next == nullptr) break;
    c->chain.push_back(next);
  }
}

void Descend(ApplyState* st, Cursor* c, std::string_view name) {
  bool existed = c->exists();
  c->path.push_back(name);
  if (existed) {
    MNode* next = st->Lookup(c->node(), name);
    if (next != nullptr) c->chain.push_back(next);
  }
}

void Truncate(Cursor* c, size_t path_size) {
  c->path.resize(path_size);
  if (c->chain.size() > path_size + 1) c->chain.resize(path_size + 1);
}

// Walks the update tree and the document together, applying the leaves in
// the tree's order (MongoDB's UpdateObjectNode/UpdateArrayNode::apply).
class Walker {
 public:
  explicit Walker(ApplyState* st) : st_(st) {}

  const std::string& first_id_path() const { return first_id_path_; }

  Status Node(const UpdateNode& node, Cursor* c) {
    switch (node.kind) {
      case UpdateNode::Kind::kLeaf:
        return node.op != nullptr ? Leaf(*node.op, c) : Status::OK();
      case UpdateNode::Kind::kObject: {
        size_t base = c->path.size();
        for (const auto& [name, child] : node.children) {
          Normalize(st_, c);
          Descend(st_, c, name);
          Status s = Node(*child, c);
          Truncate(c, base);
          RETURN_IF_ERROR(s);
        }
        return Status::OK();
      }
      case UpdateNode::Kind::kArray: {
        Normalize(st_, c);
        if (!c->exists()) {
          return Status(ErrorCode::kBadValue, "The path '" + c->Dotted() +
                                                  "' must exist in the document in order to apply array updates.");
        }
        MNode* array = c->node();
        if (!array->IsArrayLike()) {
          return Status(ErrorCode::kBadValue, "Cannot apply array updates to non-array element " +
                                                  internal::FormatElement(c->path.back(), st_->ValueOf(array)));
        }
        st_->Expand(array);
        const UpdateNode& child = *node.children.begin()->second;
        size_t base = c->path.size();
        size_t n = array->children.size();
        for (size_t i = 0; i < n; ++i) {
          c->path.push_back(internal::IndexName(st_, i));
          c->chain.push_back(array->children[i].node);
          Status s = Node(child, c);
          Truncate(c, base);
          RETURN_IF_ERROR(s);
        }
        return Status::OK();
      }
    }
    return Status::OK();
  }

 private:
  Status Leaf(const Op& op, Cursor* c) {
    if (op.type == OpType::kSetOnInsert && !st_->is_insert()) return Status::OK();
    if (first_id_path_.empty()) {
      if (c->path[0] == "_id") {
        first_id_path_ = c->Dotted();
      } else if (op.type == OpType::kRename && op.from_parts[0] == "_id") {
        first_id_path_ = op.from_path;
      }
    }
    if (op.type == OpType::kRename) return internal::ApplyRename(op, st_, c);
    if (c->exists()) {
      switch (op.type) {
        case OpType::kInc:
        case OpType::kMul:
        case OpType::kBit: return internal::ApplyArithOp(op, st_, c);
        case OpType::kPush:
        case OpType::kAddToSet:
        case OpType::kPull:
        case OpType::kPullAll:
        case OpType::kPop: return internal::ApplyArrayOp(op, st_, c);
        default: return internal::ApplyFieldOp(op, st_, c);
      }
    }
    if (!internal::CreatesPath(op.type)) {
      if (op.type == OpType::kUnset) return Status::OK();
      return CheckViability(c);
    }
    StatusOr<MNode*> leaf = Status(ErrorCode::kInternalError, "no value");
    switch (op.type) {
      case OpType::kInc:
      case OpType::kMul:
      case OpType::kBit: leaf = internal::NewArithValue(op, st_); break;
      case OpType::kPush:
      case OpType::kAddToSet: leaf = internal::NewArrayValue(op, st_); break;
      default: leaf = internal::NewFieldValue(op, st_); break;
    }
    if (!leaf.ok()) return leaf.status();
    return internal::CreatePath(st_, c, *leaf);
  }

  // UpdateLeafNode::checkViability: $pop/$pull/$pullAll on a missing path
  // are no-ops unless the path could never be created.
  Status CheckViability(Cursor* c) {
    MNode* anchor = c->node();
    size_t k = c->chain.size() - 1;
    std::string_view first = c->path[k];
    size_t index = 0;
    if (anchor->IsDocLike() || (anchor->IsArrayLike() && internal::ParseIndex(first, &index))) {
      return Status::OK();
    }
    std::string anchor_name = k > 0 ? std::string(c->path[k - 1]) : std::string();
    return Status(ErrorCode::kPathNotViable,
                  "Cannot use the part (" + std::string(first) + " of " + c->Dotted() +
                      ") to traverse the element ({" + internal::FormatElement(anchor_name, st_->ValueOf(anchor)) +
                      "})");
  }

  ApplyState* st_;
  std::string first_id_path_;
};

}  // namespace

UpdateDriver::UpdateDriver() = default;

UpdateDriver::~UpdateDriver() {
  tree_.reset();
  ops_.clear();
  if (update_ != nullptr && owns_update_) bson_destroy(update_);
}

StatusOr<std::unique_ptr<UpdateDriver>> UpdateDriver::Parse(const bson_t* update, const UpdateOptions& opts) {
  if (update == nullptr) return Status(ErrorCode::kFailedToParse, "the update document is missing");
  std::unique_ptr<UpdateDriver> driver(new UpdateDriver());
  driver->owns_update_ = !opts.borrow_update;
  driver->update_ = opts.borrow_update ? const_cast<bson_t*>(update) : bson_copy(update);
  if (driver->update_ == nullptr) return Status(ErrorCode::kInvalidBSON, "invalid BSON in the update document");
  driver->version_field_ = opts.version_field;
  if (!opts.version_field.empty()) driver->version_parts_ = SplitPath(opts.version_field);

  bson_iter_t it;
  bool operators = bson_iter_init(&it, driver->update_) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$';
  if (operators) {
    RETURN_IF_ERROR(driver->ParseOperators());
    driver->PlanSplice();
  } else {
    driver->replacement_ = driver->update_;
    RETURN_IF_ERROR(driver->ParseReplacement());
  }
  return driver;
}

Status UpdateDriver::ParseReplacement() {
  bson_iter_t it;
  if (!bson_iter_init(&it, replacement_)) return Status(ErrorCode::kInvalidBSON, "invalid BSON in the update");
  std::string previous;  // for MongoDB's DBRef exception: $ref, $id[, $db]
  bool seen_id = false;
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (!key.empty() && key[0] == '$') {
      bool dbref_ok = (key == "$ref" && bson_iter_type(&it) == BSON_TYPE_UTF8) ||
                      (key == "$id" && previous == "$ref") ||
                      (key == "$db" && previous == "$id" && bson_iter_type(&it) == BSON_TYPE_UTF8);
      if (key == "$ref") {
        bson_iter_t next = it;
        dbref_ok = dbref_ok && bson_iter_next(&next) && std::strcmp(bson_iter_key(&next), "$id") == 0;
      }
      if (!dbref_ok) return DollarPrefixedError(key);
    }
    if (key == "_id" && !seen_id) {
      seen_id = true;
      RETURN_IF_ERROR(ValidateIdValue(*bson_iter_value(&it)));
    }
    previous.assign(key);
  }
  bson_value_t whole{};
  whole.value_type = BSON_TYPE_DOCUMENT;
  whole.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(replacement_));
  whole.value.v_doc.data_len = replacement_->len;
  if (!internal::DepthWithin(whole, 1)) {
    return Status(ErrorCode::kOverflow,
                  "Document exceeds maximum nesting depth of " + std::to_string(internal::kMaxDepth));
  }
  return Status::OK();
}

void UpdateDriver::AddWrittenPath(const std::vector<std::string>& parts) {
  // The path as the field-version table records it: cut at a positional
  // component ("$", "$[]").
  std::string cut;
  for (const std::string& part : parts) {
    if (!part.empty() && part[0] == '$') break;
    if (!cut.empty()) cut += '.';
    cut += part;
  }
  target_paths_.push_back(std::move(cut));
  if (std::find(top_level_fields_.begin(), top_level_fields_.end(), parts[0]) == top_level_fields_.end()) {
    top_level_fields_.push_back(parts[0]);
  }
}

Status UpdateDriver::ParseOperators() {
  tree_ = std::make_unique<UpdateNode>(UpdateNode::Kind::kObject);
  auto version_overlaps = [this](const std::vector<std::string>& parts) {
    return !version_parts_.empty() &&
           (IsPrefixOf(version_parts_, parts) || IsPrefixOf(parts, version_parts_));
  };
  auto version_error = [this](OpType type, const std::string& path) {
    return Status(ErrorCode::kImmutableField,
                  "the version field '" + version_field_ + "' is owned by the store; " +
                      internal::OpName(type) + " on the path '" + path +
                      "' is not allowed (only $inc: {" + version_field_ +
                      ": 1} is accepted, and the store applies it)");
  };

  bson_iter_t top;
  if (!bson_iter_init(&top, update_)) return Status(ErrorCode::kInvalidBSON, "invalid BSON in the update");
  while (bson_iter_next(&top)) {
    const char* modifier = bson_iter_key(&top);
    OpType type;
    if (!LookupModifier(modifier, &type)) {
      return Status(ErrorCode::kFailedToParse,
                    std::string("Unknown modifier: ") + modifier +
                        ". Expected a valid update modifier or pipeline-style update specified as an array");
    }
    if (bson_iter_type(&top) != BSON_TYPE_DOCUMENT) {
      return Status(ErrorCode::kFailedToParse,
                    std::string("Modifiers operate on fields but we found type ") +
                        internal::TypeName(bson_iter_type(&top)) +
                        " instead. For example: {$mod: {<field>: ...}} not {" +
                        internal::FormatElement(modifier, *bson_iter_value(&top)) + "}");
    }
    bson_iter_t field;
    if (!bson_iter_recurse(&top, &field)) return Status(ErrorCode::kInvalidBSON, "invalid BSON in the update");
    while (bson_iter_next(&field)) {
      auto op = std::make_unique<Op>();
      op->type = type;
      op->field_name.assign(bson_iter_key(&field), bson_iter_key_len(&field));
      op->operand = *bson_iter_value(&field);

      if (type == OpType::kRename) {
        // MongoDB adds a placeholder at the source, then the rename at the
        // destination, which must be a string.
        op->from_path = op->field_name;
        RETURN_IF_ERROR(CheckUpdatePath(op->from_path, &op->from_parts));
        if (version_overlaps(op->from_parts)) return version_error(type, op->from_path);
        RETURN_IF_ERROR(internal::InsertPath(tree_.get(), op->from_parts, nullptr, ConflictStyle::kParse));
        if (op->operand.value_type != BSON_TYPE_UTF8) {
          return Status(ErrorCode::kBadValue, "The 'to' field for $rename must be a string: " +
                                                  internal::FormatElement(op->field_name, op->operand));
        }
        if (std::strlen(op->operand.value.v_utf8.str) != op->operand.value.v_utf8.len) {
          return Status(ErrorCode::kBadValue, "The 'to' field for $rename cannot contain an embedded null byte");
        }
        op->path.assign(op->operand.value.v_utf8.str, op->operand.value.v_utf8.len);
        RETURN_IF_ERROR(CheckUpdatePath(op->path, &op->parts));
        if (op->from_parts == op->parts) {
          return Status(ErrorCode::kBadValue, "The source and target field for $rename must differ: " +
                                                  internal::FormatElement(op->field_name, op->operand));
        }
        if (IsPrefixOf(op->from_parts, op->parts) || IsPrefixOf(op->parts, op->from_parts)) {
          return Status(ErrorCode::kBadValue, "The source and target field for $rename must not be on the same path: " +
                                                  internal::FormatElement(op->field_name, op->operand));
        }
        if (HasDynamicPart(op->from_parts)) {
          return Status(ErrorCode::kBadValue, "The source field for $rename may not be dynamic: " + op->from_path);
        }
        if (HasDynamicPart(op->parts)) {
          return Status(ErrorCode::kBadValue, "The destination field for $rename may not be dynamic: " + op->path);
        }
        if (version_overlaps(op->parts)) return version_error(type, op->path);
        if (op->parts[0][0] == '$') return DollarPrefixedError(op->parts[0]);
      } else {
        op->path = op->field_name;
        RETURN_IF_ERROR(CheckUpdatePath(op->path, &op->parts));
        switch (type) {
          case OpType::kInc:
          case OpType::kMul:
          case OpType::kBit: RETURN_IF_ERROR(internal::InitArithOp(op.get())); break;
          case OpType::kPush:
          case OpType::kAddToSet:
          case OpType::kPull:
          case OpType::kPullAll:
          case OpType::kPop: RETURN_IF_ERROR(internal::InitArrayOp(op.get())); break;
          default: RETURN_IF_ERROR(internal::InitFieldOp(op.get())); break;
        }
        if (version_overlaps(op->parts)) {
          bool bump = type == OpType::kInc && op->parts == version_parts_ && IsNumberType(op->operand.value_type) &&
                      CompareValues(op->operand, internal::Int32Value(1)) == 0;
          if (!bump) return version_error(type, op->path);
          // Absorbed: the store raises the version.  The placeholder keeps
          // MongoDB's conflict rules for the path.
          RETURN_IF_ERROR(internal::InsertPath(tree_.get(), op->parts, nullptr, ConflictStyle::kParse));
          bumps_version_ = true;
          continue;
        }
        if (internal::CreatesPath(type) && op->parts[0][0] == '$') return DollarPrefixedError(op->parts[0]);
      }
      RETURN_IF_ERROR(internal::InsertPath(tree_.get(), op->parts, op.get(), ConflictStyle::kParse));
      for (const std::string& part : op->parts) {
        if (internal::IsPositional(part)) has_positional_ = true;
      }
      if (op->parts[0] == "_id" || (!op->from_parts.empty() && op->from_parts[0] == "_id")) touches_id_ = true;
      AddWrittenPath(op->parts);
      if (!op->from_parts.empty()) AddWrittenPath(op->from_parts);
      ops_.push_back(std::move(op));
    }
  }
  return Status::OK();
}

Status UpdateDriver::Apply(const bson_t* doc, const ApplyContext& ctx, bson_t* out, FieldLayout* layout) const {
  if (layout != nullptr) layout->known = false;
  Status s = is_replacement() ? ApplyReplacement(doc, ctx, out) : ApplyOperators(doc, ctx, out, layout);
  if (s.ok() && out->len > internal::kMaxDocumentSize) {
    s = Status(ErrorCode::kBSONObjectTooLarge,
               "Resulting document after update is larger than " + std::to_string(internal::kMaxDocumentSize));
  }
  if (!s.ok()) {
    bson_reinit(out);
    if (layout != nullptr) layout->known = false;
  }
  return s;
}

Status UpdateDriver::ApplyReplacement(const bson_t* doc, const ApplyContext& ctx, bson_t* out) const {
  bool single_part_version = version_parts_.size() == 1;
  const std::string& vname = version_field_;

  // The current document's _id and version.
  bson_value_t doc_id{}, doc_version{};
  bool has_doc_id = false, has_doc_version = false;
  size_t doc_version_index = 0;
  bson_iter_t it;
  if (bson_iter_init(&it, doc)) {
    size_t index = 0;
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (!has_doc_id && std::strcmp(key, "_id") == 0) {
        doc_id = *bson_iter_value(&it);
        has_doc_id = true;
      } else if (single_part_version && !has_doc_version && vname == key) {
        doc_version = *bson_iter_value(&it);
        has_doc_version = true;
        doc_version_index = index;
      }
      ++index;
    }
  }
  if (!single_part_version && !version_parts_.empty()) {
    has_doc_version = FindDotted(doc, version_parts_, &doc_version);
  }

  // The replacement's.
  bson_value_t new_id{}, new_version{};
  bool has_new_id = false, has_new_version = false;
  if (bson_iter_init(&it, replacement_)) {
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (!has_new_id && std::strcmp(key, "_id") == 0) {
        new_id = *bson_iter_value(&it);
        has_new_id = true;
      } else if (single_part_version && !has_new_version && vname == key) {
        new_version = *bson_iter_value(&it);
        has_new_version = true;
      }
    }
  }
  if (!single_part_version && !version_parts_.empty()) {
    has_new_version = FindDotted(replacement_, version_parts_, &new_version);
  }

  if (has_doc_id && has_new_id && CompareValues(doc_id, new_id) != 0) {
    return Status(ErrorCode::kImmutableField,
                  "After applying the update, the (immutable) field '_id' was found to have been altered to " +
                      internal::FormatElement("_id", new_id));
  }
  if (has_new_version) {
    bson_value_t current = has_doc_version ? doc_version : internal::Int32Value(0);
    if (!IsNumberType(new_version.value_type) || !IsNumberType(current.value_type) ||
        CompareValues(current, new_version) != 0) {
      return Status(ErrorCode::kImmutableField,
                    "the version field '" + vname + "' is owned by the store; a replacement may not change it from " +
                        internal::FormatValue(current) + " to " + internal::FormatValue(new_version));
    }
  }

  size_t count = 0;
  if (has_doc_id || has_new_id) {
    bson_append_value(out, "_id", 3, has_doc_id ? &doc_id : &new_id);
    ++count;
  }
  // Keep doc's version where it was, so an unchanged replacement is
  // byte-identical; the caller stamps the new version anyway.
  bool carry_version = single_part_version && has_doc_version && !has_new_version;
  if (bson_iter_init(&it, replacement_)) {
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      int key_len = static_cast<int>(bson_iter_key_len(&it));
      if (std::strcmp(key, "_id") == 0) continue;
      if (carry_version && count == doc_version_index) {
        bson_append_value(out, vname.c_str(), static_cast<int>(vname.size()), &doc_version);
        ++count;
        carry_version = false;
      }
      if (single_part_version && vname == key) {
        if (has_doc_version) {
          bson_append_value(out, key, key_len, &doc_version);
          ++count;
        }
        continue;
      }
      bson_value_t v = *bson_iter_value(&it);
      if (v.value_type == BSON_TYPE_TIMESTAMP && v.value.v_timestamp.timestamp == 0 &&
          v.value.v_timestamp.increment == 0) {
        // MongoDB fills a top-level zero Timestamp with the current time.
        v.value.v_timestamp.timestamp = static_cast<uint32_t>(ctx.now_millis / 1000);
        v.value.v_timestamp.increment = 1;
      }
      if (!bson_append_value(out, key, key_len, &v)) {
        return Status(ErrorCode::kBSONObjectTooLarge, "Resulting document after update is larger than " +
                                                          std::to_string(internal::kMaxDocumentSize));
      }
      ++count;
    }
  }
  if (carry_version) bson_append_value(out, vname.c_str(), static_cast<int>(vname.size()), &doc_version);
  return Status::OK();
}

namespace {

// A name length as one bit of a mask (lengths past 63 share the last), so
// that a walk passes over most names on their length alone.
uint64_t LengthBit(size_t len) { return uint64_t{1} << std::min<size_t>(len, 63); }

// Notes in offsets[i] where names[i] lies among the root's children, child
// k at offset_of(k) (0: not there), and in *extra_offset where *extra does
// (when given).  False when a name is there twice.
template <typename OffsetOf>
bool NoteOffsets(const std::vector<internal::MChild>& children, const std::vector<std::string>& names,
                 const std::string* extra, const OffsetOf& offset_of, std::vector<uint32_t>* offsets,
                 uint32_t* extra_offset) {
  // Most children are passed over on their name's length alone.
  uint64_t lengths = 0;
  for (const std::string& name : names) lengths |= LengthBit(name.size());
  if (extra != nullptr) lengths |= LengthBit(extra->size());
  offsets->assign(names.size(), 0);
  for (size_t k = 0; k < children.size(); ++k) {
    const std::string_view name = children[k].name;
    if ((lengths & LengthBit(name.size())) == 0) continue;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != name) continue;
      if ((*offsets)[i] != 0) return false;
      (*offsets)[i] = offset_of(k);
    }
    if (extra != nullptr && *extra == name) {
      if (*extra_offset != 0) return false;
      *extra_offset = offset_of(k);
    }
  }
  return true;
}

}  // namespace

namespace {

// At most this many ops take the short path: its bookkeeping lives on the
// stack.
constexpr size_t kMaxSpliceOps = 8;

}  // namespace

void UpdateDriver::PlanSplice() {
  spliceable_ = false;
  if (ops_.empty() || ops_.size() > kMaxSpliceOps || has_positional_ || touches_id_ ||
      top_level_fields_.size() != ops_.size()) {
    return;
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = *ops_[i];
    if (op.parts.size() != 1 || op.parts[0] != top_level_fields_[i]) return;
    if (op.type == OpType::kInc || op.type == OpType::kMul) continue;
    if (op.type != OpType::kSet) return;
    // ApplyTree refuses a value that would nest too deep (Overflow).
    if (!internal::DepthWithin(op.operand, 2)) return;
  }
  spliceable_ = true;
}

bool UpdateDriver::TrySplice(const bson_t* doc, bson_t* out, FieldLayout* layout) const {
  const size_t n = ops_.size();
  if (out->len != 5) return false;
  uint64_t lengths = LengthBit(version_field_.size());
  for (const std::string& name : top_level_fields_) lengths |= LengthBit(name.size());

  // One pass over the top level: where each op's element starts and ends,
  // the arithmetic results, where the version field is.
  uint32_t start[kMaxSpliceOps] = {}, end[kMaxSpliceOps] = {};
  bson_value_t arith[kMaxSpliceOps];
  uint32_t version_at = 0;
  // The document is a stored one, valid BSON: its top level is read by its
  // bytes (ReadRawElement), and anything that reader stops at goes to
  // ApplyTree.
  const uint8_t* data = bson_get_data(doc);
  RawElement e;
  for (uint32_t at = 4;; at = e.end) {
    const RawRead r = ReadRawElement(data, doc->len, at, &e);
    if (r == RawRead::kEnd) break;
    if (r == RawRead::kStop) return false;
    if ((lengths & LengthBit(e.key.size())) == 0) continue;
    for (size_t i = 0; i < n; ++i) {
      if (top_level_fields_[i] != e.key) continue;
      if (start[i] != 0) return false;  // there twice: ApplyTree decides
      start[i] = e.start;
      end[i] = e.end;
      const Op& op = *ops_[i];
      if (op.type != OpType::kSet) {
        bson_iter_t it;
        if (!bson_iter_init_from_data_at_offset(&it, data, doc->len, e.start, static_cast<uint32_t>(e.key.size())) ||
            !internal::ArithResult(op, *bson_iter_value(&it), &arith[i])) {
          return false;
        }
      }
      break;
    }
    if (e.key == version_field_) {
      if (version_at != 0) return false;
      version_at = e.start;
    }
  }

  // The ops in document order.
  size_t order[kMaxSpliceOps];
  for (size_t i = 0; i < n; ++i) {
    if (start[i] == 0) return false;  // missing: ApplyTree adds it in its place
    size_t k = i;
    for (; k > 0 && start[order[k - 1]] > start[i]; --k) order[k] = order[k - 1];
    order[k] = i;
  }
  // Their new elements, in that order, written as ApplyTree writes them:
  // element j is fresh[fresh_at[j], fresh_at[j + 1]).
  std::string fresh;
  size_t fresh_at[kMaxSpliceOps + 1];
  {
    BsonWriter w(&fresh, 64);
    for (size_t j = 0; j < n; ++j) {
      const size_t i = order[j];
      fresh_at[j] = w.offset();
      w.Value(top_level_fields_[i], ops_[i]->type == OpType::kSet ? ops_[i]->operand : arith[i]);
    }
    fresh_at[n] = w.offset();
    w.Finish();
  }
  int64_t total = doc->len;
  for (size_t j = 0; j < n; ++j) {
    total += static_cast<int64_t>(fresh_at[j + 1] - fresh_at[j]) - (end[order[j]] - start[order[j]]);
  }
  if (total > INT32_MAX) return false;
  uint8_t* dst = bson_reserve_buffer(out, static_cast<uint32_t>(total));
  if (dst == nullptr) return false;

  const uint32_t len_le = BSON_UINT32_TO_LE(static_cast<uint32_t>(total));
  std::memcpy(dst, &len_le, 4);
  if (layout != nullptr) {
    layout->before.assign(start, start + n);
    layout->after.assign(n, 0);
  }
  int64_t version_shift = 0;  // how far the ops before the version field move it
  size_t pos = 4, from = 4;
  for (size_t j = 0; j < n; ++j) {
    const size_t i = order[j];
    std::memcpy(dst + pos, data + from, start[i] - from);
    pos += start[i] - from;
    if (layout != nullptr) layout->after[i] = static_cast<uint32_t>(pos);
    const size_t element_len = fresh_at[j + 1] - fresh_at[j];
    std::memcpy(dst + pos, fresh.data() + fresh_at[j], element_len);
    pos += element_len;
    if (start[i] < version_at) version_shift += static_cast<int64_t>(element_len) - (end[i] - start[i]);
    from = end[i];
  }
  std::memcpy(dst + pos, data + from, doc->len - from);
  if (layout != nullptr) {
    layout->version_after = version_at == 0 ? 0 : static_cast<uint32_t>(version_at + version_shift);
    layout->known = true;
  }
  return true;
}

Status UpdateDriver::ApplyOperators(const bson_t* doc, const ApplyContext& ctx, bson_t* out,
                                    FieldLayout* layout) const {
  if (spliceable_ && ctx.allow_in_place && !ctx.is_upsert_insert && TrySplice(doc, out, layout)) {
#ifndef NDEBUG
    // The short path writes what the general one does, and notes the same.
    bson_t slow = BSON_INITIALIZER;
    FieldLayout slow_layout;
    Status again = ApplyTree(doc, ctx, &slow, &slow_layout);
    assert(again.ok() && slow.len == out->len &&
           std::memcmp(bson_get_data(&slow), bson_get_data(out), out->len) == 0 && "TrySplice differs");
    assert((layout == nullptr ||
            (slow_layout.known && slow_layout.before == layout->before && slow_layout.after == layout->after &&
             slow_layout.version_after == layout->version_after)) &&
           "TrySplice's layout differs");
    bson_destroy(&slow);
#endif
    return Status::OK();
  }
  return ApplyTree(doc, ctx, out, layout);
}

Status UpdateDriver::ApplyTree(const bson_t* doc, const ApplyContext& ctx, bson_t* out,
                               FieldLayout* layout) const {
  if (ops_.empty() && !ctx.is_upsert_insert) {
    // {$set: {}} or only the absorbed version $inc: the document as it is.
    if (!bson_concat(out, doc)) return Status(ErrorCode::kInternalError, "could not copy the document");
    return Status::OK();
  }

  // `$` resolves per document, so the tree is rebuilt with the index in
  // place; the resolved paths may now collide.
  const UpdateNode* tree = tree_.get();
  std::unique_ptr<UpdateNode> resolved;
  if (has_positional_) {
    if (!ctx.positional_index.has_value()) {
      return Status(ErrorCode::kBadValue, "The positional operator did not find the match needed from the query.");
    }
    std::string index = std::to_string(*ctx.positional_index);
    resolved = std::make_unique<UpdateNode>(UpdateNode::Kind::kObject);
    for (const auto& op : ops_) {
      if (op->type == OpType::kRename) {
        RETURN_IF_ERROR(internal::InsertPath(resolved.get(), op->from_parts, nullptr, ConflictStyle::kApply));
      }
      std::vector<std::string> parts = op->parts;
      for (std::string& part : parts) {
        if (internal::IsPositional(part)) part = index;
      }
      RETURN_IF_ERROR(internal::InsertPath(resolved.get(), parts, op.get(), ConflictStyle::kApply));
    }
    tree = resolved.get();
  }

  ApplyState st(doc, ctx.now_millis, ctx.is_upsert_insert);
  // Where the named fields are before the walk changes the root: each
  // child still points at its element of `doc`.
  auto before_offset = [&](size_t k) {
    return static_cast<uint32_t>(st.root()->children[k].node->raw - bson_get_data(doc));
  };
  bool layout_ok = layout != nullptr &&
                   NoteOffsets(st.root()->children, top_level_fields_, nullptr, before_offset, &layout->before, nullptr);
  Walker walker(&st);
  Cursor cursor;
  cursor.chain.push_back(st.root());
  RETURN_IF_ERROR(walker.Node(*tree, &cursor));

  MNode* root = st.root();
  auto find_id = [root]() -> size_t {
    for (size_t i = 0; i < root->children.size(); ++i) {
      if (root->children[i].name == "_id") return i;
    }
    return root->children.size();
  };
  if (touches_id_) {
    bson_iter_t it;
    bool had_id = bson_iter_init_find(&it, doc, "_id");
    size_t id_index = find_id();
    if (had_id) {
      if (id_index == root->children.size() ||
          !internal::ValuesIdentical(*bson_iter_value(&it), st.ValueOf(root->children[id_index].node))) {
        std::string path = walker.first_id_path().empty() ? std::string("_id") : walker.first_id_path();
        return Status(ErrorCode::kImmutableField,
                      "Performing an update on the path '" + path + "' would modify the immutable field '_id'");
      }
    } else if (id_index != root->children.size()) {
      RETURN_IF_ERROR(ValidateIdValue(st.ValueOf(root->children[id_index].node)));
    }
  }
  if (ctx.is_upsert_insert) {
    size_t id_index = find_id();
    if (id_index != 0 && id_index != root->children.size()) {
      MChild id = root->children[id_index];
      root->children.erase(root->children.begin() + static_cast<std::ptrdiff_t>(id_index));
      root->children.insert(root->children.begin(), id);
    }
  }
  std::vector<uint32_t> child_offsets;
  Status s = st.AppendRoot(out, layout_ok ? &child_offsets : nullptr);
  if (s.ok() && layout_ok && child_offsets.size() == root->children.size()) {
    layout->version_after = 0;
    layout->known = NoteOffsets(
        root->children, top_level_fields_, &version_field_, [&](size_t k) { return child_offsets[k]; },
        &layout->after, &layout->version_after);
  }
#ifndef NDEBUG
  if (s.ok()) {
    // The byte blocks copied from the original make the same document.
    bson_t slow = BSON_INITIALIZER;
    Status again = st.AppendChildren(root, &slow, 1);
    assert(again.ok() && slow.len == out->len &&
           std::memcmp(bson_get_data(&slow), bson_get_data(out), out->len) == 0 && "AppendRoot differs");
    bson_destroy(&slow);
  }
#endif
  return s;
}

std::vector<std::string> UpdateDriver::IncrementPaths() const {
  std::vector<std::string> out;
  for (const auto& op : ops_) {
    if (op->type == internal::OpType::kInc) out.push_back(op->path);
  }
  return out;
}

}  // namespace update
}  // namespace gatedb
