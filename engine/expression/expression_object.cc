// Object and miscellaneous operators: $mergeObjects $objectToArray
// $arrayToObject $getField $setField $unsetField $rand $binarySize
// $bsonSize.
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

std::string T(const Value& v) { return TypeName(v); }

// An ordered set of fields; setting an existing name keeps its position.
class FieldList {
 public:
  void Set(std::string_view name, Value v) {
    auto it = index_.find(std::string(name));
    if (it != index_.end()) {
      fields_[it->second].second = std::move(v);
      return;
    }
    index_.emplace(std::string(name), fields_.size());
    fields_.emplace_back(std::string(name), std::move(v));
  }
  // Sets every field of a document.
  void Merge(const Value& doc) {
    ForEachField(doc, [this](std::string_view k, const Value& v) {
      Set(k, v);
      return true;
    });
  }
  StatusOr<Value> Build() const {
    ValueBuilder b(ValueBuilder::kDocument);
    for (const auto& [k, v] : fields_) b.Append(k, v);  // a missing value leaves the field out
    return b.Finish();
  }

 private:
  std::vector<std::pair<std::string, Value>> fields_;
  std::unordered_map<std::string, size_t> index_;
};

StatusOr<Value> MergeObjects(const char*, const Value* a, size_t n) {
  FieldList fields;
  for (size_t i = 0; i < n; ++i) {
    if (a[i].nullish()) continue;
    if (!a[i].is_document()) {
      return Err(40400, "$mergeObjects requires object inputs, but input " + a[i].ToString() + " is of type " + T(a[i]));
    }
    fields.Merge(a[i]);
  }
  return fields.Build();
}

StatusOr<Value> ObjectToArray(const char*, const Value* a, size_t) {
  if (a[0].nullish()) return Value::Null();
  if (!a[0].is_document()) return Err(40390, "$objectToArray requires a document input, found: " + T(a[0]));
  ValueBuilder out(ValueBuilder::kArray);
  Status failed;
  ForEachField(a[0], [&](std::string_view k, const Value& v) {
    ValueBuilder pair(ValueBuilder::kDocument);
    pair.Append("k", Value::String(k));
    pair.Append("v", v);
    StatusOr<Value> p = pair.Finish();
    if (!p.ok()) {
      failed = p.status();
      return false;
    }
    out.Append(*p);
    return true;
  });
  RETURN_IF_ERROR(failed);
  return out.Finish();
}

StatusOr<Value> ArrayToObject(const char*, const Value* a, size_t) {
  const Value& input = a[0];
  if (input.nullish()) return Value::Null();
  if (!input.is_array()) return Err(40386, "$arrayToObject requires an array input, found: " + T(input));
  std::vector<Value> elems;
  Elements(input, &elems);
  FieldList fields;
  if (elems.empty()) return fields.Build();
  const bool pairs = elems[0].is_array();
  if (!pairs && !elems[0].is_document()) {
    return Err(40398, "Unrecognised input type format for $arrayToObject: " + T(elems[0]));
  }
  for (const Value& e : elems) {
    Value key, value;
    if (pairs) {
      if (!e.is_array()) {
        return Err(40396, "$arrayToObject requires a consistent input format. Elements must all be arrays or all "
                          "be objects. Array was detected, now found: " + T(e));
      }
      std::vector<Value> kv;
      Elements(e, &kv);
      if (kv.size() != 2) {
        return Err(40397, "$arrayToObject requires an array of size 2 arrays,found array of size: " +
                              std::to_string(kv.size()));
      }
      if (!kv[0].is_string()) {
        return Err(40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type "
                          "string. Found key type: " + T(kv[0]));
      }
      key = kv[0];
      value = kv[1];
      if (key.str().find('\0') != std::string_view::npos) {
        return Err(4940400, "Key field cannot contain an embedded null byte");
      }
    } else {
      if (!e.is_document()) {
        return Err(40391, "$arrayToObject requires a consistent input format. Elements must all be arrays or all "
                          "be objects. Object was detected, now found: " + T(e));
      }
      const uint32_t n = CountElements(e);
      if (n != 2) {
        return Err(40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:" +
                              std::to_string(n));
      }
      bool has_k = false, has_v = false;
      ForEachField(e, [&](std::string_view k, const Value& v) {
        if (k == "k") {
          key = v;
          has_k = true;
        } else if (k == "v") {
          value = v;
          has_v = true;
        }
        return true;
      });
      if (!has_k || !has_v) {
        return Err(40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys "
                          "from: " + e.ToString());
      }
      if (!key.is_string()) {
        return Err(40394, "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be "
                          "of type string. Found type: " + T(key));
      }
      if (key.str().find('\0') != std::string_view::npos) {
        return Err(4940401, "Key field cannot contain an embedded null byte");
      }
    }
    fields.Set(key.str(), value);
  }
  return fields.Build();
}

// ---------------------------------------------------------------------------
// $getField $setField $unsetField

// A literal field name in a $getField/$setField spec must not look like a
// field path: MongoDB makes the user spell it with $literal.
bool LooksLikeFieldPath(const bson_value_t& v) {
  return v.value_type == BSON_TYPE_UTF8 && v.value.v_utf8.len > 0 && v.value.v_utf8.str[0] == '$';
}

class GetFieldExpression final : public Expression {
 public:
  GetFieldExpression(ExprPtr field, ExprPtr input) : field_(std::move(field)), input_(std::move(input)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value field, field_->Evaluate(ctx));
    if (!field.is_string()) {
      return Err(3041704, "$getField requires 'field' to evaluate to type String, but got " + T(field));
    }
    Value input = ctx.current();
    if (input_ != nullptr) {
      ASSIGN_OR_RETURN(input, input_->Evaluate(ctx));
    }
    if (input.nullish()) return input.missing() ? Value() : Value::Null();
    if (!input.is_document()) {
      return Err(3041705, "$getField requires 'input' to evaluate to type Object, but got " + T(input));
    }
    Value out;
    const std::string_view name = field.str();
    ForEachField(input, [&](std::string_view k, const Value& v) {
      if (k != name) return true;
      out = v;
      return false;
    });
    return out;
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$getField");
    s.Add("field", field_.get());
    s.Add("input", input_.get());
  }

 private:
  ExprPtr field_;
  ExprPtr input_;  // null: $$CURRENT
};

StatusOr<ExprPtr> ParseGetField(const char*, const bson_value_t& spec, ParseContext* pc) {
  const bool named = spec.value_type == BSON_TYPE_DOCUMENT && [&] {
    bson_iter_t it;
    return bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len) && bson_iter_next(&it) &&
           bson_iter_key(&it)[0] != '$';
  }();
  if (!named) {
    // {$getField: "name"} or {$getField: <expression>}: a field of $$CURRENT.
    if (LooksLikeFieldPath(spec)) {
      return Err(5654602, "A string that represents a field path is not allowed as the argument of $getField. "
                          "Consider using $literal");
    }
    ASSIGN_OR_RETURN(ExprPtr field, ParseSub(spec, pc));
    return ExprPtr(new GetFieldExpression(std::move(field), nullptr));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"field", "input"}, 3041701, "$getField found an unknown argument: "));
  const bson_value_t* f = args.Get("field");
  if (f == nullptr) return Err(3041702, "$getField requires 'field' to be specified");
  if (LooksLikeFieldPath(*f)) {
    return Err(5654602, "A string that represents a field path is not allowed as 'field' of $getField. "
                        "Consider using $literal");
  }
  ASSIGN_OR_RETURN(ExprPtr field, args.Parse("field", pc));
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  return ExprPtr(new GetFieldExpression(std::move(field), std::move(input)));
}

class SetFieldExpression final : public Expression {
 public:
  // A null `value` unsets the field ($unsetField).
  SetFieldExpression(const char* name, std::string field, ExprPtr input, ExprPtr value)
      : name_(name), field_(std::move(field)), input_(std::move(input)), value_(std::move(value)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_document()) {
      return Err(4161105, std::string(name_) + " requires 'input' to evaluate to type Object");
    }
    Value v;
    if (value_ != nullptr) {
      ASSIGN_OR_RETURN(v, value_->Evaluate(ctx));
    }
    FieldList fields;
    fields.Merge(input);
    fields.Set(field_, v);  // missing removes it
    return fields.Build();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    // As {$const: name}: a plain string could read back as a field path.
    MakeConstant(Value::String(field_))->Serialize(s.args(), "field");
    s.Add("input", input_.get());
    s.Add("value", value_.get());
  }

 private:
  const char* name_;
  std::string field_;
  ExprPtr input_, value_;
};

StatusOr<ExprPtr> ParseSetField(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  const bool unset = op == "$unsetField";
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(4161100, op + " only supports an object as its argument");
  StatusOr<NamedArgs> read = unset ? NamedArgs::Read(spec, {"field", "input"}, 4161101, op + " found an unknown argument: ")
                                   : NamedArgs::Read(spec, {"field", "input", "value"}, 4161101,
                                                     op + " found an unknown argument: ");
  if (!read.ok()) return read.status();
  const NamedArgs& args = *read;
  if (!args.Has("field")) return Err(4161102, op + " requires 'field' to be specified");
  if (!unset && !args.Has("value")) return Err(4161103, op + " requires 'value' to be specified");
  if (!args.Has("input")) return Err(4161109, op + " requires 'input' to be specified");
  // 'field' must be a constant string.
  ASSIGN_OR_RETURN(ExprPtr field_expr, args.Parse("field", pc));
  const Value* field = field_expr->constant();
  if (field == nullptr) {
    if (LooksLikeFieldPath(*args.Get("field"))) {
      return Err(4161108, "A field path reference which is not allowed in this context. Did you mean {$literal: '" +
                              std::string(args.Get("field")->value.v_utf8.str) + "'}?");
    }
    return Err(4161106, op + " requires 'field' to evaluate to a constant, but got a non-constant argument");
  }
  if (!field->is_string()) {
    return Err(4161107, op + " requires 'field' to evaluate to type String, but got " + T(*field));
  }
  if (field->str().find('\0') != std::string_view::npos) {
    return Err(9534700, op + ": 'field' cannot contain an embedded null byte");
  }
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr value, args.Parse("value", pc));
  return ExprPtr(new SetFieldExpression(name, std::string(field->str()), std::move(input), std::move(value)));
}

// ---------------------------------------------------------------------------
// $rand $binarySize $bsonSize

class RandExpression final : public Expression {
 public:
  StatusOr<Value> Evaluate(const EvalContext&) const override {
    thread_local std::mt19937_64 gen{std::random_device{}()};
    return Value::Double(std::uniform_real_distribution<double>(0.0, 1.0)(gen));
  }
  void Serialize(bson_t* out, std::string_view key) const override {
    bson_t sub, empty;
    bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &sub);
    bson_append_document_begin(&sub, "$rand", -1, &empty);
    bson_append_document_end(&sub, &empty);
    bson_append_document_end(out, &sub);
  }
};

StatusOr<ExprPtr> ParseRand(const char*, const bson_value_t& spec, ParseContext*) {
  const bool empty_doc = spec.value_type == BSON_TYPE_DOCUMENT && spec.value.v_doc.data_len == 5;
  const bool empty_array = spec.value_type == BSON_TYPE_ARRAY && spec.value.v_doc.data_len == 5;
  if (!empty_doc && !empty_array) return Err(3040501, "$rand does not currently accept arguments");
  return ExprPtr(new RandExpression());
}

StatusOr<Value> BinarySize(const char*, const Value* a, size_t) {
  if (a[0].nullish()) return Value::Null();
  if (a[0].is_string()) return IntegerValue(static_cast<int64_t>(a[0].str().size()));
  if (a[0].type() == BSON_TYPE_BINARY) return IntegerValue(a[0].bson().value.v_binary.data_len);
  return Err(51276, "$binarySize requires a string or BinData argument, found: " + T(a[0]));
}

StatusOr<Value> BsonSize(const char*, const Value* a, size_t) {
  if (a[0].nullish()) return Value::Null();
  if (!a[0].is_document()) return Err(31393, "$bsonSize requires a document input, found: " + T(a[0]));
  return IntegerValue(a[0].doc_len());
}

}  // namespace

void AddObjectOperators(std::vector<OperatorDef>* ops) {
  ops->push_back(OperatorDef{"$mergeObjects", MergeObjects, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$objectToArray", ObjectToArray, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$arrayToObject", ArrayToObject, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$getField", nullptr, 0, 0, ParseGetField});
  ops->push_back(OperatorDef{"$setField", nullptr, 0, 0, ParseSetField});
  ops->push_back(OperatorDef{"$unsetField", nullptr, 0, 0, ParseSetField});
  ops->push_back(OperatorDef{"$rand", nullptr, 0, 0, ParseRand});
  ops->push_back(OperatorDef{"$binarySize", BinarySize, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$bsonSize", BsonSize, 1, 1, nullptr});
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
