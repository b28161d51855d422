// $set $unset $min $max $currentDate $setOnInsert $rename.
#include <string>

#include "engine/document/bson_compare.h"
#include "engine/update/update_internal.h"

namespace gatedb {
namespace update {
namespace internal {

namespace {

bson_value_t CurrentDateValue(const Op& op, const ApplyState& st) {
  bson_value_t v{};
  if (op.date_type) {
    v.value_type = BSON_TYPE_DATE_TIME;
    v.value.v_datetime = st.now_millis();
  } else {
    v.value_type = BSON_TYPE_TIMESTAMP;
    v.value.v_timestamp.timestamp = static_cast<uint32_t>(st.now_millis() / 1000);
    v.value.v_timestamp.increment = 1;
  }
  return v;
}

Status ParseCurrentDate(Op* op) {
  if (op->operand.value_type == BSON_TYPE_BOOL) {
    op->date_type = true;  // true or false: MongoDB sets a Date either way
    return Status::OK();
  }
  if (op->operand.value_type != BSON_TYPE_DOCUMENT) {
    return Status(ErrorCode::kBadValue, std::string(TypeName(op->operand.value_type)) +
                                            " is not valid type for $currentDate. Please use a boolean ('true') "
                                            "or a $type expression ({$type: 'timestamp/date'}).");
  }
  bool found = false;
  bson_iter_t it;
  if (bson_iter_init_from_data(&it, op->operand.value.v_doc.data, op->operand.value.v_doc.data_len)) {
    while (bson_iter_next(&it)) {
      std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
      if (key != "$type") {
        return Status(ErrorCode::kBadValue, "Unrecognized $currentDate option: " + std::string(key));
      }
      if (bson_iter_type(&it) == BSON_TYPE_UTF8) {
        std::string_view type(bson_iter_utf8(&it, nullptr));
        if (type == "date") {
          op->date_type = true;
          found = true;
        } else if (type == "timestamp") {
          op->date_type = false;
          found = true;
        }
      }
    }
  }
  if (!found) {
    return Status(ErrorCode::kBadValue,
                  "The '$type' string field is required to be 'date' or 'timestamp': "
                  "{$currentDate: {field : {$type: 'date'}}}");
  }
  return Status::OK();
}

void MarkUntrusted(MNode* n) {
  n->trusted = false;
  for (MChild& c : n->children) MarkUntrusted(c.node);
}

void RemoveChild(MNode* parent, const MNode* child) {
  for (auto it = parent->children.begin(); it != parent->children.end(); ++it) {
    if (it->node == child) {
      parent->children.erase(it);
      return;
    }
  }
}

}  // namespace

Status InitFieldOp(Op* op) {
  if (op->type == OpType::kCurrentDate) return ParseCurrentDate(op);
  return Status::OK();  // $set $unset $min $max $setOnInsert take any value
}

Status ApplyFieldOp(const Op& op, ApplyState* st, Cursor* c) {
  MNode* e = c->node();
  switch (op.type) {
    case OpType::kSet:
    case OpType::kSetOnInsert: e->SetValue(op.operand, false); return Status::OK();
    case OpType::kUnset: {
      MNode* parent = c->parent();
      if (parent->kind == MNode::Kind::kArray) {
        // An array element is nulled, not removed, so indexes stay put.
        bson_value_t null_value{};
        null_value.value_type = BSON_TYPE_NULL;
        e->SetValue(null_value, false);
      } else {
        RemoveChild(parent, e);
      }
      return Status::OK();
    }
    case OpType::kMin:
    case OpType::kMax: {
      int cmp = CompareValues(st->ValueOf(e), op.operand);
      if ((op.type == OpType::kMin && cmp > 0) || (op.type == OpType::kMax && cmp < 0)) {
        e->SetValue(op.operand, false);
      }
      return Status::OK();
    }
    case OpType::kCurrentDate: e->SetValue(CurrentDateValue(op, *st), false); return Status::OK();
    default: break;
  }
  return Status(ErrorCode::kInternalError, std::string("not a field operator: ") + OpName(op.type));
}

StatusOr<MNode*> NewFieldValue(const Op& op, ApplyState* st) {
  if (op.type == OpType::kCurrentDate) return st->NewValueNode(CurrentDateValue(op, *st));
  return st->NewValueNode(op.operand);  // $set $setOnInsert $min $max
}

Status ApplyRename(const Op& op, ApplyState* st, Cursor* c) {
  // Find the source from the root (pathsupport::findLongestPrefix).
  std::vector<MNode*> chain{st->root()};
  for (size_t i = 0; i < op.from_parts.size(); ++i) {
    MNode* node = chain.back();
    const std::string& part = op.from_parts[i];
    size_t index = 0;
    bool viable = node->IsDocLike() || (node->IsArrayLike() && ParseIndex(part, &index));
    if (!viable) {
      const std::string& name = op.from_parts[i - 1];  // i > 0: the root is a document
      return Status(ErrorCode::kPathNotViable, "cannot use the part (" + name + " of " + op.from_path +
                                                   ") to traverse the element ({" +
                                                   FormatElement(name, st->ValueOf(node)) + "})");
    }
    MNode* next = st->Lookup(node, part);
    if (next == nullptr) return Status::OK();  // no source: a no-op
    chain.push_back(next);
  }
  MNode* source = chain.back();

  // Renaming through an array is not allowed, at either end.
  for (size_t j = chain.size() - 1; j-- > 1;) {
    if (chain[j]->IsArrayLike()) {
      return Status(ErrorCode::kBadValue, "The source field cannot be an array element, '" + op.from_path +
                                              "' in doc with " + st->IdElementString() +
                                              " has an array field called '" + op.from_parts[j - 1] + "'");
    }
  }
  size_t start = c->exists() ? c->chain.size() - 2 : c->chain.size() - 1;
  for (size_t j = start + 1; j-- > 1;) {
    if (c->chain[j]->IsArrayLike()) {
      return Status(ErrorCode::kBadValue, "The destination field cannot be an array element, '" + op.path +
                                              "' in doc with " + st->IdElementString() +
                                              " has an array field called '" + std::string(c->path[j - 1]) + "'");
    }
  }

  // $set the destination to the source's value, then $unset the source.
  MNode* moved = st->CloneShallow(source);
  MarkUntrusted(moved);
  if (c->exists()) {
    MNode* dest = c->node();
    dest->kind = moved->kind;
    dest->value = moved->value;
    dest->children = moved->children;
    dest->trusted = false;
    dest->raw = nullptr;
  } else {
    RETURN_IF_ERROR(CreatePath(st, c, moved));
  }
  RemoveChild(chain[chain.size() - 2], source);
  return Status::OK();
}

}  // namespace internal
}  // namespace update
}  // namespace gatedb
