// $push (with $each $slice $sort $position) $addToSet $pull $pullAll $pop.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "engine/document/bson_compare.h"
#include "engine/query/match_expression.h"
#include "engine/update/update_internal.h"

namespace gatedb {
namespace update {
namespace internal {

namespace {

// MatchExpressionParser::parsePathAcceptingKeyword: a $pull condition whose
// first field is one of these is matched against each element itself.
bool IsPathAcceptingKeyword(std::string_view name) {
  static const char* const kKeywords[] = {
      "$all",        "$bitsAllClear", "$bitsAllSet",    "$bitsAnyClear", "$bitsAnySet", "$elemMatch",
      "$eq",         "$exists",       "$geoIntersects", "$geoWithin",    "$gt",         "$gte",
      "$in",         "$lt",           "$lte",           "$maxDistance",  "$minDistance", "$mod",
      "$ne",         "$near",         "$nearSphere",    "$nin",          "$not",        "$options",
      "$regex",      "$size",         "$type",          "$within",
  };
  for (const char* k : kKeywords) {
    if (name == k) return true;
  }
  return false;
}

std::vector<BValue> ArrayValues(const bson_value_t& array) {
  std::vector<BValue> values;
  bson_iter_t it;
  if (bson_iter_init_from_data(&it, array.value.v_doc.data, array.value.v_doc.data_len)) {
    while (bson_iter_next(&it)) values.push_back(*bson_iter_value(&it));
  }
  return values;
}

Status CheckSortPattern(const bson_value_t& pattern, std::vector<SortField>* fields) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, pattern.value.v_doc.data, pattern.value.v_doc.data_len) ||
      pattern.value.v_doc.data_len <= 5) {
    return Status(ErrorCode::kBadValue, "The $sort pattern is empty when it should be a set of fields.");
  }
  while (bson_iter_next(&it)) {
    const bson_value_t& dir = *bson_iter_value(&it);
    long double order = IsNumberType(dir.value_type) ? NumberAsLongDouble(dir) : 0;
    if (order != 1 && order != -1) {
      return Status(ErrorCode::kBadValue, "The $sort element value must be either 1 or -1");
    }
    std::string name(bson_iter_key(&it), bson_iter_key_len(&it));
    if (name.empty()) return Status(ErrorCode::kBadValue, "The $sort field cannot be empty");
    SortField field;
    size_t start = 0;
    while (true) {
      size_t dot = name.find('.', start);
      field.parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (field.parts.back().empty()) {
        return Status(ErrorCode::kBadValue, "The $sort field is a dotted field but has an empty part: " + name);
      }
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    field.direction = order < 0 ? -1 : 1;
    fields->push_back(std::move(field));
  }
  return Status::OK();
}

Status ParsePush(Op* op) {
  const bson_value_t& v = op->operand;
  bson_iter_t it;
  bool has_each = v.value_type == BSON_TYPE_DOCUMENT &&
                  bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len) &&
                  bson_iter_find(&it, "$each");
  if (!has_each) {
    op->values.push_back(v);  // the value itself, even an array
    return Status::OK();
  }
  static const char* const kClauses[] = {"$each", "$slice", "$sort", "$position"};
  bson_value_t clauses[4] = {};
  bool found[4] = {false, false, false, false};
  bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len);
  while (bson_iter_next(&it)) {
    const char* name = bson_iter_key(&it);
    size_t i = 0;
    while (i < 4 && std::strcmp(name, kClauses[i]) != 0) ++i;
    if (i == 4) return Status(ErrorCode::kBadValue, std::string("Unrecognized clause in $push: ") + name);
    if (found[i]) return Status(ErrorCode::kBadValue, std::string("Only one ") + name + " is supported.");
    found[i] = true;
    clauses[i] = *bson_iter_value(&it);
  }
  if (clauses[0].value_type != BSON_TYPE_ARRAY) {
    return Status(ErrorCode::kBadValue, std::string("The argument to $each in $push must be an array but it was of type: ") +
                                            TypeName(clauses[0].value_type));
  }
  op->values = ArrayValues(clauses[0]);
  if (found[1]) {
    if (!ParseIntegerToLong("$slice", clauses[1], &op->slice).ok()) {
      return Status(ErrorCode::kBadValue, std::string("The value for $slice must be an integer value but was given type: ") +
                                              TypeName(clauses[1].value_type));
    }
    op->has_slice = true;
  }
  if (found[2]) {
    const bson_value_t& sort = clauses[2];
    if (sort.value_type == BSON_TYPE_DOCUMENT) {
      RETURN_IF_ERROR(CheckSortPattern(sort, &op->sort_fields));
      op->sort_kind = Op::SortKind::kFields;
    } else if (IsNumberType(sort.value_type)) {
      long double order = NumberAsLongDouble(sort);
      if (order != 1 && order != -1) {
        return Status(ErrorCode::kBadValue, "The $sort element value must be either 1 or -1");
      }
      op->sort_kind = Op::SortKind::kWhole;
      op->sort_direction = order < 0 ? -1 : 1;
    } else {
      return Status(ErrorCode::kBadValue,
                    "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields");
    }
  }
  if (found[3]) {
    if (!ParseIntegerToLong("$position", clauses[3], &op->position).ok()) {
      return Status(ErrorCode::kBadValue, std::string("The value for $position must be an integer value, not of type: ") +
                                              TypeName(clauses[3].value_type));
    }
    op->has_position = true;
  }
  return Status::OK();
}

Status ParseAddToSet(Op* op) {
  const bson_value_t& v = op->operand;
  std::vector<BValue> candidates;
  bson_iter_t it;
  if (v.value_type == BSON_TYPE_DOCUMENT && bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len) &&
      bson_iter_next(&it) && std::strcmp(bson_iter_key(&it), "$each") == 0) {
    if (bson_iter_type(&it) != BSON_TYPE_ARRAY) {
      return Status(ErrorCode::kTypeMismatch,
                    std::string("The argument to $each in $addToSet must be an array but it was of type ") +
                        TypeName(bson_iter_type(&it)));
    }
    candidates = ArrayValues(*bson_iter_value(&it));
    if (bson_iter_next(&it)) {
      return Status(ErrorCode::kBadValue, "Found unexpected fields after $each in $addToSet: " + FormatValue(v));
    }
  } else {
    candidates.push_back(v);
  }
  // Deduplicate, keeping the first of equal values (numbers by value).
  for (const bson_value_t& candidate : candidates) {
    bool seen = false;
    for (const bson_value_t& kept : op->values) {
      if (CompareValues(kept, candidate) == 0) {
        seen = true;
        break;
      }
    }
    if (!seen) op->values.push_back(candidate);
  }
  return Status::OK();
}

Status MakeMatcher(Op* op, bson_t* filter) {
  op->pull_filter = filter;
  StatusOr<std::unique_ptr<query::Matcher>> matcher = query::Matcher::Parse(filter);
  if (!matcher.ok()) return matcher.status();
  op->matcher = std::move(matcher).value();
  return Status::OK();
}

Status ParsePull(Op* op) {
  const bson_value_t& v = op->operand;
  if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_iter_t it;
    bool wrapped = bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len) &&
                   bson_iter_next(&it) && IsPathAcceptingKeyword(bson_iter_key(&it));
    if (!wrapped) {
      // A query on document elements: {$pull: {a: {x: 1, y: {$gt: 2}}}}.
      op->pull_kind = PullKind::kObject;
      return MakeMatcher(op, bson_new_from_data(v.value.v_doc.data, v.value.v_doc.data_len));
    }
  } else if (v.value_type != BSON_TYPE_REGEX) {
    op->pull_kind = PullKind::kEquality;
    return Status::OK();
  }
  // A condition on each element: {$gte: 6}, or a regex.  MongoDB wraps
  // both sides as {"": ...}; any one field name works the same.
  op->pull_kind = PullKind::kWrapped;
  bson_t* filter = bson_new();
  bson_append_value(filter, "v", 1, &v);
  return MakeMatcher(op, filter);
}

bool PullMatches(const Op& op, const bson_value_t& element) {
  switch (op.pull_kind) {
    case PullKind::kEquality: return CompareValues(element, op.operand) == 0;
    case PullKind::kObject: {
      if (element.value_type != BSON_TYPE_DOCUMENT) return false;
      bson_t doc;
      if (!bson_init_static(&doc, element.value.v_doc.data, element.value.v_doc.data_len)) return false;
      return op.matcher->Matches(&doc);
    }
    case PullKind::kWrapped: {
      bson_t doc = BSON_INITIALIZER;
      bson_append_value(&doc, "v", 1, &element);
      bool matched = op.matcher->Matches(&doc);
      bson_destroy(&doc);
      return matched;
    }
  }
  return false;
}

bool PullAllMatches(const Op& op, const bson_value_t& element) {
  for (const bson_value_t& v : op.values) {
    if (CompareValues(element, v) == 0) return true;
  }
  return false;
}

// The value at a dotted path inside `v` (documents by name, arrays by
// index), or null when missing: dotted_path_support's extraction with
// useNullIfMissing.
bson_value_t ExtractSortKey(const bson_value_t& v, const std::vector<std::string>& parts) {
  bson_value_t null_value{};
  null_value.value_type = BSON_TYPE_NULL;
  bson_value_t current = v;
  for (const std::string& part : parts) {
    if (current.value_type != BSON_TYPE_DOCUMENT && current.value_type != BSON_TYPE_ARRAY) return null_value;
    bson_iter_t it;
    if (!bson_iter_init_from_data(&it, current.value.v_doc.data, current.value.v_doc.data_len)) return null_value;
    bool found = false;
    while (bson_iter_next(&it)) {
      if (bson_iter_key_len(&it) == part.size() && std::memcmp(bson_iter_key(&it), part.data(), part.size()) == 0) {
        current = *bson_iter_value(&it);
        found = true;
        break;
      }
    }
    if (!found) return null_value;
  }
  return current;
}

// PushNode::performPush after the values are in: $sort, then $slice.
void SortAndSlice(const Op& op, ApplyState* st, MNode* array) {
  std::vector<MChild>& children = array->children;
  if (op.sort_kind != Op::SortKind::kNone && children.size() > 1) {
    std::vector<BValue> values;
    values.reserve(children.size());
    for (const MChild& c : children) values.push_back(st->ValueOf(c.node));
    std::vector<size_t> order(children.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (op.sort_kind == Op::SortKind::kWhole) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return CompareValues(values[a], values[b]) * op.sort_direction < 0;
      });
    } else {
      // Non-documents sort as if every key were null.
      std::vector<std::vector<BValue>> keys(children.size());
      for (size_t i = 0; i < children.size(); ++i) {
        for (const SortField& f : op.sort_fields) {
          bson_value_t key{};
          key.value_type = BSON_TYPE_NULL;
          if (values[i].value_type == BSON_TYPE_DOCUMENT) key = ExtractSortKey(values[i], f.parts);
          keys[i].push_back(key);
        }
      }
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        for (size_t f = 0; f < op.sort_fields.size(); ++f) {
          int cmp = CompareValues(keys[a][f], keys[b][f]) * op.sort_fields[f].direction;
          if (cmp != 0) return cmp < 0;
        }
        return false;
      });
    }
    std::vector<MChild> sorted;
    sorted.reserve(children.size());
    for (size_t i : order) sorted.push_back(children[i]);
    children = std::move(sorted);
  }
  if (op.has_slice) {
    uint64_t keep = op.slice == std::numeric_limits<int64_t>::min()
                        ? static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                        : static_cast<uint64_t>(op.slice < 0 ? -op.slice : op.slice);
    if (children.size() > keep) {
      size_t drop = children.size() - static_cast<size_t>(keep);
      if (op.slice >= 0) {
        children.resize(static_cast<size_t>(keep));
      } else {
        children.erase(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(drop));
      }
    }
  }
}

void InsertValues(const Op& op, ApplyState* st, MNode* array) {
  if (op.values.empty()) return;
  std::vector<MChild>& children = array->children;
  int64_t size = static_cast<int64_t>(children.size());
  int64_t at = size;  // append unless $position says otherwise
  if (op.has_position && size > 0) {
    int64_t p = op.position;
    if (p > size) {
      at = size;
    } else if (p >= 0) {
      at = p;
    } else if (-p < size) {
      at = size + p;
    } else {
      at = 0;
    }
  }
  std::vector<MChild> inserted;
  inserted.reserve(op.values.size());
  for (const bson_value_t& v : op.values) inserted.push_back(MChild{{}, st->NewValueNode(v)});
  children.insert(children.begin() + static_cast<std::ptrdiff_t>(at), inserted.begin(), inserted.end());
}

}  // namespace

Status InitArrayOp(Op* op) {
  switch (op->type) {
    case OpType::kPush: return ParsePush(op);
    case OpType::kAddToSet: return ParseAddToSet(op);
    case OpType::kPull: return ParsePull(op);
    case OpType::kPullAll:
      if (op->operand.value_type != BSON_TYPE_ARRAY) {
        return Status(ErrorCode::kBadValue, std::string("$pullAll requires an array argument but was given a ") +
                                                TypeName(op->operand.value_type));
      }
      op->values = ArrayValues(op->operand);
      return Status::OK();
    case OpType::kPop: {
      int64_t n = 0;
      RETURN_IF_ERROR(ParseIntegerToLong(op->field_name, op->operand, &n));
      if (n != 1 && n != -1) {
        return Status(ErrorCode::kFailedToParse, "$pop expects 1 or -1, found: " + std::to_string(n));
      }
      op->pop_front = n == -1;
      return Status::OK();
    }
    default: break;
  }
  return Status(ErrorCode::kInternalError, std::string("not an array operator: ") + OpName(op->type));
}

Status ApplyArrayOp(const Op& op, ApplyState* st, Cursor* c) {
  MNode* e = c->node();
  bool is_array = e->IsArrayLike();
  switch (op.type) {
    case OpType::kPush:
      if (!is_array) {
        return Status(ErrorCode::kBadValue, "The field '" + c->Dotted() + "' must be an array but is of type " +
                                                TypeName(e->type()) + " in document {" + st->IdElementString() + "}");
      }
      st->Expand(e);
      InsertValues(op, st, e);
      SortAndSlice(op, st, e);
      return Status::OK();
    case OpType::kAddToSet: {
      if (!is_array) {
        return Status(ErrorCode::kBadValue, "Cannot apply $addToSet to non-array field. Field named '" +
                                                std::string(c->path.back()) + "' has non-array type " +
                                                TypeName(e->type()));
      }
      st->Expand(e);
      size_t existing = e->children.size();
      for (const bson_value_t& v : op.values) {
        bool present = false;
        for (size_t i = 0; i < existing && !present; ++i) {
          present = CompareValues(st->ValueOf(e->children[i].node), v) == 0;
        }
        if (!present) e->children.push_back(MChild{{}, st->NewValueNode(v)});
      }
      return Status::OK();
    }
    case OpType::kPull:
    case OpType::kPullAll: {
      if (!is_array) return Status(ErrorCode::kBadValue, "Cannot apply $pull to a non-array value");
      st->Expand(e);
      std::vector<MChild> kept;
      kept.reserve(e->children.size());
      Status match_error;  // a $pull condition's regex reaching a PCRE2 limit
      {
        query::ExprEvalScope scope(nullptr, &match_error);
        for (const MChild& child : e->children) {
          bson_value_t v = st->ValueOf(child.node);
          bool remove = op.type == OpType::kPull ? PullMatches(op, v) : PullAllMatches(op, v);
          if (!remove) kept.push_back(child);
        }
      }
      RETURN_IF_ERROR(match_error);
      if (kept.size() != e->children.size()) e->children = std::move(kept);
      return Status::OK();
    }
    case OpType::kPop:
      if (!is_array) {
        return Status(ErrorCode::kTypeMismatch, "Path '" + c->Dotted() + "' contains an element of non-array type '" +
                                                    TypeName(e->type()) + "'");
      }
      st->Expand(e);
      if (e->children.empty()) return Status::OK();
      if (op.pop_front) {
        e->children.erase(e->children.begin());
      } else {
        e->children.pop_back();
      }
      return Status::OK();
    default: break;
  }
  return Status(ErrorCode::kInternalError, std::string("not an array operator: ") + OpName(op.type));
}

StatusOr<MNode*> NewArrayValue(const Op& op, ApplyState* st) {
  MNode* array = st->NewNode();
  array->kind = MNode::Kind::kArray;
  for (const bson_value_t& v : op.values) array->children.push_back(MChild{{}, st->NewValueNode(v)});
  if (op.type == OpType::kPush) SortAndSlice(op, st, array);
  return array;
}

}  // namespace internal
}  // namespace update
}  // namespace gatedb
