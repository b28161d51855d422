// The parser (ParseExpression and the operator table), field paths and
// variables, literals, object and array expressions, and the operators that
// control evaluation: $literal, $let, $and, $or, $not, the comparisons,
// $cond, $ifNull and $switch.
#include "engine/expression/expression.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {

using internal::BsonTypeNameOf;
using internal::Err;
using internal::ExprPtr;
using internal::NamedArgs;
using internal::ParserAccess;

namespace {

// Most components in one field path ("a.b.c").
constexpr size_t kMaxPathComponents = 200;

bool IsLowerAscii(unsigned char c) { return c >= 'a' && c <= 'z'; }
bool IsUpperAscii(unsigned char c) { return c >= 'A' && c <= 'Z'; }
bool IsDigitAscii(unsigned char c) { return c >= '0' && c <= '9'; }

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// MongoDB's Variables::validateNameForUserWrite: a variable a user binds
// ($let, $map's `as`, a declared variable).
Status ValidateNameForWrite(std::string_view name) {
  if (name.empty()) return Err(16866, "empty variable names are not allowed");
  const unsigned char first = name[0];
  if (!IsLowerAscii(first) && first < 0x80) {
    return Err(16867, Quote(name) + " starts with an invalid character for a user variable name");
  }
  for (unsigned char c : name.substr(1)) {
    if (!IsLowerAscii(c) && !IsUpperAscii(c) && !IsDigitAscii(c) && c != '_' && c < 0x80) {
      return Err(16868, Quote(name) + " contains an invalid character for a variable name: '" +
                            std::string(1, static_cast<char>(c)) + "'");
    }
  }
  return Status::OK();
}

// Variables::validateNameForUserRead: a variable referenced as $$name
// (builtins are upper case).
Status ValidateNameForRead(std::string_view name) {
  if (name.empty()) return Err(16869, "empty variable names are not allowed");
  const unsigned char first = name[0];
  if (!IsLowerAscii(first) && !IsUpperAscii(first) && first < 0x80) {
    return Err(16870, Quote(name) + " starts with an invalid character for a variable name");
  }
  for (unsigned char c : name.substr(1)) {
    if (!IsLowerAscii(c) && !IsUpperAscii(c) && !IsDigitAscii(c) && c != '_' && c < 0x80) {
      return Err(16871, Quote(name) + " contains an invalid character for a variable name: '" +
                            std::string(1, static_cast<char>(c)) + "'");
    }
  }
  return Status::OK();
}

// Splits a dotted path and validates each component as MongoDB's FieldPath.
Status SplitFieldPath(std::string_view path, std::vector<std::string>* parts) {
  if (path.empty()) return Err(40352, "FieldPath cannot be constructed with empty string");
  if (path.back() == '.') return Err(40353, "FieldPath must not end with a '.'.");
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    std::string_view part = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty()) return Err(15998, "FieldPath field names may not be empty strings.");
    if (part[0] == '$') {
      return Err(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.");
    }
    parts->emplace_back(part);
    if (parts->size() > kMaxPathComponents) return Status(ErrorCode::kBadValue, "FieldPath is too long");
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return Status::OK();
}

// A field name of an object expression ({a: ..., b: ...}).
Status ValidateFieldName(std::string_view name) {
  if (name.empty()) return Err(15998, "FieldPath field names may not be empty strings.");
  if (name[0] == '$') {
    return Err(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.");
  }
  if (name.find('.') != std::string_view::npos) {
    return Err(16412, "FieldPath field names may not contain '.'.");
  }
  return Status::OK();
}

std::string JsonOfValue(const bson_value_t& v) { return Value::Borrow(v).ToString(); }

// ---------------------------------------------------------------------------
// Literals, field paths, variables

// "$a.b" (a path of $$CURRENT), "$$x", "$$x.a.b".
class FieldPathExpression final : public Expression {
 public:
  FieldPathExpression(VariableId var, std::vector<std::string> parts, std::string raw)
      : var_(var), parts_(std::move(parts)), raw_(std::move(raw)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    const Value* base = nullptr;
    Value tmp;
    switch (var_) {
      case kRootVariable: base = &ctx.root(); break;
      case kCurrentVariable: base = &ctx.current(); break;
      case kNowVariable: tmp = Value::Date(ctx.now()); base = &tmp; break;
      case kRemoveVariable: return Value();
      default:
        base = ctx.Find(var_);
        if (base == nullptr) return Err(17276, "Use of undefined variable: " + VariableName());
    }
    if (parts_.empty()) return *base;
    if (base->is_document()) return WalkDocument(*base, 0);
    if (base->is_array()) return WalkArray(*base, 0);
    return Value();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    bson_append_utf8(out, key.data(), static_cast<int>(key.size()), raw_.data(), static_cast<int>(raw_.size()));
  }

  bool IsFieldPath(std::string* dotted) const override {
    if (var_ != kCurrentVariable || parts_.empty()) return false;
    if (dotted != nullptr) *dotted = raw_.substr(1);
    return true;
  }

 private:
  std::string VariableName() const {
    const size_t dot = raw_.find('.');
    return raw_.substr(2, dot == std::string::npos ? std::string::npos : dot - 2);
  }

  // The rest of the path from parts_[i] in document `doc`.
  StatusOr<Value> WalkDocument(const Value& doc, size_t i) const {
    bson_iter_t it;
    if (!bson_iter_init_from_data(&it, doc.doc_data(), doc.doc_len()) ||
        !bson_iter_find_w_len(&it, parts_[i].data(), static_cast<int>(parts_[i].size()))) {
      return Value();
    }
    Value v = Value::Within(*bson_iter_value(&it), doc);
    if (i + 1 == parts_.size()) return v;
    if (v.is_document()) return WalkDocument(v, i + 1);
    if (v.is_array()) return WalkArray(v, i + 1);
    return Value();
  }

  // MongoDB's array traversal: the path from parts_[i] in each document
  // element of `array`; other elements, and missing results, are skipped.
  StatusOr<Value> WalkArray(const Value& array, size_t i) const {
    ValueBuilder b(ValueBuilder::kArray);
    Status failed;
    ForEachField(array, [&](std::string_view, const Value& elem) {
      if (!elem.is_document()) return true;
      StatusOr<Value> r = WalkDocument(elem, i);
      if (!r.ok()) {
        failed = r.status();
        return false;
      }
      b.Append(*r);
      return true;
    });
    RETURN_IF_ERROR(failed);
    return b.Finish();
  }

  VariableId var_;
  std::vector<std::string> parts_;
  std::string raw_;  // as written, for Serialize
};

class ObjectExpression final : public Expression {
 public:
  explicit ObjectExpression(std::vector<std::pair<std::string, ExprPtr>> fields) : fields_(std::move(fields)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ValueBuilder b(ValueBuilder::kDocument);
    for (const auto& [name, e] : fields_) {
      ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
      b.Append(name, v);
    }
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    bson_t sub;
    bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &sub);
    for (const auto& [name, e] : fields_) e->Serialize(&sub, name);
    bson_append_document_end(out, &sub);
  }

 private:
  std::vector<std::pair<std::string, ExprPtr>> fields_;
};

class ArrayExpression final : public Expression {
 public:
  explicit ArrayExpression(std::vector<ExprPtr> elems) : elems_(std::move(elems)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ValueBuilder b(ValueBuilder::kArray);
    for (const ExprPtr& e : elems_) {
      ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
      b.Append(v.missing() ? Value::Null() : v);
    }
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    bson_t sub;
    bson_append_array_begin(out, key.data(), static_cast<int>(key.size()), &sub);
    for (size_t i = 0; i < elems_.size(); ++i) elems_[i]->Serialize(&sub, std::to_string(i));
    bson_append_array_end(out, &sub);
  }

 private:
  std::vector<ExprPtr> elems_;
};

// ---------------------------------------------------------------------------
// $let

class LetExpression final : public Expression {
 public:
  LetExpression(std::vector<std::string> names, std::vector<ExprPtr> values, VariableId first,
                int current_index, ExprPtr in)
      : names_(std::move(names)),
        values_(std::move(values)),
        first_(first),
        current_index_(current_index),
        in_(std::move(in)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    std::vector<Value> vals(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) {
      ASSIGN_OR_RETURN(vals[i], values_[i]->Evaluate(ctx));
    }
    EvalContext inner(ctx, first_, vals.data(), vals.size(),
                      current_index_ >= 0 ? &vals[static_cast<size_t>(current_index_)] : nullptr);
    return in_->Evaluate(inner);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    internal::NamedSerializer s(out, key, "$let");
    bson_t vars;
    bson_append_document_begin(s.args(), "vars", -1, &vars);
    for (size_t i = 0; i < names_.size(); ++i) values_[i]->Serialize(&vars, names_[i]);
    bson_append_document_end(s.args(), &vars);
    s.Add("in", in_.get());
  }

 private:
  std::vector<std::string> names_;
  std::vector<ExprPtr> values_;
  VariableId first_;
  int current_index_;  // the var that rebinds CURRENT, or -1
  ExprPtr in_;
};

StatusOr<ExprPtr> ParseLet(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(16874, "$let only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"vars", "in"}, 16875, "Unrecognized parameter to $let: "));
  const bson_value_t* vars = args.Get("vars");
  const bson_value_t* in = args.Get("in");
  if (vars == nullptr) return Err(16876, "Missing 'vars' parameter to $let");
  if (in == nullptr) return Err(16877, "Missing 'in' parameter to $let");
  if (vars->value_type != BSON_TYPE_DOCUMENT) {
    return Err(10065, "invalid parameter: expected an object (vars)");
  }
  // The values are parsed in the enclosing scope: a variable cannot see its
  // siblings.
  std::vector<std::string> names;
  std::vector<ExprPtr> values;
  bson_iter_t it;
  if (bson_iter_init_from_data(&it, vars->value.v_doc.data, vars->value.v_doc.data_len)) {
    while (bson_iter_next(&it)) {
      std::string name(bson_iter_key(&it), bson_iter_key_len(&it));
      if (name != "CURRENT") RETURN_IF_ERROR(ValidateNameForWrite(name));
      ASSIGN_OR_RETURN(ExprPtr v, ParserAccess::Parse(*bson_iter_value(&it), pc));
      names.push_back(std::move(name));
      values.push_back(std::move(v));
    }
  }
  VariableId first = 0;
  int current_index = -1;
  size_t pushed = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    // CURRENT is rebound through the context, but keeps a slot so that the
    // ids stay consecutive.
    VariableId id;
    if (names[i] == "CURRENT") {
      id = ParserAccess::PushSlot(pc);
      current_index = static_cast<int>(i);
    } else {
      StatusOr<VariableId> pushed_id = ParserAccess::PushVariable(pc, names[i]);
      if (!pushed_id.ok()) {
        ParserAccess::PopVariables(pc, pushed);
        return pushed_id.status();
      }
      id = *pushed_id;
    }
    ++pushed;
    if (i == 0) first = id;
  }
  StatusOr<ExprPtr> body = ParserAccess::Parse(*in, pc);
  ParserAccess::PopVariables(pc, pushed);
  if (!body.ok()) return body.status();
  return ExprPtr(new LetExpression(std::move(names), std::move(values), first, current_index,
                                   std::move(body).value()));
}

// ---------------------------------------------------------------------------
// $literal, boolean operators, comparisons

StatusOr<ExprPtr> ParseLiteral(const char*, const bson_value_t& spec, ParseContext* pc) {
  return internal::MakeConstant(ParserAccess::Literal(spec, *pc));
}

// $and / $or: short-circuit.
class LogicalExpression final : public Expression {
 public:
  LogicalExpression(bool is_and, std::vector<ExprPtr> args) : is_and_(is_and), args_(std::move(args)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    for (const ExprPtr& a : args_) {
      ASSIGN_OR_RETURN(Value v, a->Evaluate(ctx));
      const bool t = Truthy(v);
      if (is_and_ && !t) return Value::Bool(false);
      if (!is_and_ && t) return Value::Bool(true);
    }
    return Value::Bool(is_and_);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    internal::SerializeOperator(out, key, is_and_ ? "$and" : "$or", args_);
  }

 private:
  bool is_and_;
  std::vector<ExprPtr> args_;
};

StatusOr<ExprPtr> ParseAndOr(const char* name, const bson_value_t& spec, ParseContext* pc) {
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, internal::ParseArgs(spec, pc));
  return ExprPtr(new LogicalExpression(std::strcmp(name, "$and") == 0, std::move(args)));
}

StatusOr<Value> Not(const char*, const Value* a, size_t) { return Value::Bool(!Truthy(a[0])); }

StatusOr<Value> Cmp(const char*, const Value* a, size_t) {
  const int c = CompareForExpression(a[0], a[1]);
  return Value::Int32(c < 0 ? -1 : (c > 0 ? 1 : 0));
}
StatusOr<Value> Eq(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) == 0); }
StatusOr<Value> Ne(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) != 0); }
StatusOr<Value> Gt(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) > 0); }
StatusOr<Value> Gte(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) >= 0); }
StatusOr<Value> Lt(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) < 0); }
StatusOr<Value> Lte(const char*, const Value* a, size_t) { return Value::Bool(CompareForExpression(a[0], a[1]) <= 0); }

// ---------------------------------------------------------------------------
// $cond, $ifNull, $switch

class CondExpression final : public Expression {
 public:
  CondExpression(ExprPtr if_e, ExprPtr then_e, ExprPtr else_e)
      : if_(std::move(if_e)), then_(std::move(then_e)), else_(std::move(else_e)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value c, if_->Evaluate(ctx));
    return Truthy(c) ? then_->Evaluate(ctx) : else_->Evaluate(ctx);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    internal::NamedSerializer s(out, key, "$cond");
    s.Add("if", if_.get());
    s.Add("then", then_.get());
    s.Add("else", else_.get());
  }

 private:
  ExprPtr if_, then_, else_;
};

StatusOr<ExprPtr> ParseCond(const char* name, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    ASSIGN_OR_RETURN(std::vector<ExprPtr> args, internal::ParseArgs(spec, pc));
    RETURN_IF_ERROR(internal::CheckArity(name, args.size(), 3, 3));
    return ExprPtr(new CondExpression(std::move(args[0]), std::move(args[1]), std::move(args[2])));
  }
  ASSIGN_OR_RETURN(NamedArgs args,
                   NamedArgs::Read(spec, {"if", "then", "else"}, 17083, "Unrecognized parameter to $cond: "));
  if (!args.Has("if")) return Err(17080, "Missing 'if' parameter to $cond");
  if (!args.Has("then")) return Err(17081, "Missing 'then' parameter to $cond");
  if (!args.Has("else")) return Err(17082, "Missing 'else' parameter to $cond");
  ASSIGN_OR_RETURN(ExprPtr if_e, args.Parse("if", pc));
  ASSIGN_OR_RETURN(ExprPtr then_e, args.Parse("then", pc));
  ASSIGN_OR_RETURN(ExprPtr else_e, args.Parse("else", pc));
  return ExprPtr(new CondExpression(std::move(if_e), std::move(then_e), std::move(else_e)));
}

class IfNullExpression final : public Expression {
 public:
  explicit IfNullExpression(std::vector<ExprPtr> args) : args_(std::move(args)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    for (size_t i = 0; i + 1 < args_.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, args_[i]->Evaluate(ctx));
      if (!v.nullish()) return v;
    }
    return args_.back()->Evaluate(ctx);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    internal::SerializeOperator(out, key, "$ifNull", args_);
  }

 private:
  std::vector<ExprPtr> args_;
};

StatusOr<ExprPtr> ParseIfNull(const char*, const bson_value_t& spec, ParseContext* pc) {
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, internal::ParseArgs(spec, pc));
  if (args.size() < 2) {
    return Err(1257300, "$ifNull needs at least two arguments, had: " + std::to_string(args.size()));
  }
  return ExprPtr(new IfNullExpression(std::move(args)));
}

class SwitchExpression final : public Expression {
 public:
  SwitchExpression(std::vector<std::pair<ExprPtr, ExprPtr>> branches, ExprPtr default_e)
      : branches_(std::move(branches)), default_(std::move(default_e)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    for (const auto& [case_e, then_e] : branches_) {
      ASSIGN_OR_RETURN(Value c, case_e->Evaluate(ctx));
      if (Truthy(c)) return then_e->Evaluate(ctx);
    }
    if (default_ == nullptr) {
      return Err(40066, "$switch could not find a matching branch for an input, and no default was specified.");
    }
    return default_->Evaluate(ctx);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    internal::NamedSerializer s(out, key, "$switch");
    bson_t arr;
    bson_append_array_begin(s.args(), "branches", -1, &arr);
    for (size_t i = 0; i < branches_.size(); ++i) {
      bson_t br;
      const std::string k = std::to_string(i);
      bson_append_document_begin(&arr, k.c_str(), -1, &br);
      branches_[i].first->Serialize(&br, "case");
      branches_[i].second->Serialize(&br, "then");
      bson_append_document_end(&arr, &br);
    }
    bson_append_array_end(s.args(), &arr);
    s.Add("default", default_.get());
  }

 private:
  std::vector<std::pair<ExprPtr, ExprPtr>> branches_;
  ExprPtr default_;  // may be null
};

StatusOr<ExprPtr> ParseSwitch(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40060, "$switch requires an object as an argument, found: " + std::string(BsonTypeNameOf(spec)));
  }
  std::vector<std::pair<ExprPtr, ExprPtr>> branches;
  ExprPtr default_e;
  bson_iter_t it;
  bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len);
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    const bson_value_t& v = *bson_iter_value(&it);
    if (key == "branches") {
      if (v.value_type != BSON_TYPE_ARRAY) {
        return Err(40061, "$switch expected an array for 'branches', found: " + std::string(BsonTypeNameOf(v)));
      }
      bson_iter_t bit;
      bson_iter_init_from_data(&bit, v.value.v_doc.data, v.value.v_doc.data_len);
      while (bson_iter_next(&bit)) {
        const bson_value_t& br = *bson_iter_value(&bit);
        if (br.value_type != BSON_TYPE_DOCUMENT) {
          return Err(40062, "$switch expected each branch to be an object, found: " +
                                std::string(BsonTypeNameOf(br)));
        }
        ASSIGN_OR_RETURN(NamedArgs b, NamedArgs::Read(br, {"case", "then"}, 40063,
                                                      "$switch found an unknown argument to a branch: "));
        if (!b.Has("case")) return Err(40064, "$switch requires each branch have a 'case' expression");
        if (!b.Has("then")) return Err(40065, "$switch requires each branch have a 'then' expression.");
        ASSIGN_OR_RETURN(ExprPtr case_e, b.Parse("case", pc));
        ASSIGN_OR_RETURN(ExprPtr then_e, b.Parse("then", pc));
        branches.emplace_back(std::move(case_e), std::move(then_e));
      }
    } else if (key == "default") {
      ASSIGN_OR_RETURN(default_e, ParserAccess::Parse(v, pc));
    } else {
      return Err(40067, "$switch found an unknown argument: " + std::string(key));
    }
  }
  if (branches.empty()) return Err(40068, "$switch requires at least one branch.");
  return ExprPtr(new SwitchExpression(std::move(branches), std::move(default_e)));
}

void AddCoreOperators(std::vector<internal::OperatorDef>* ops) {
  using internal::OperatorDef;
  ops->push_back(OperatorDef{"$literal", nullptr, 0, 0, ParseLiteral});
  ops->push_back(OperatorDef{"$const", nullptr, 0, 0, ParseLiteral});
  ops->push_back(OperatorDef{"$let", nullptr, 0, 0, ParseLet});
  ops->push_back(OperatorDef{"$and", nullptr, 0, 0, ParseAndOr});
  ops->push_back(OperatorDef{"$or", nullptr, 0, 0, ParseAndOr});
  ops->push_back(OperatorDef{"$not", Not, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$cmp", Cmp, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$eq", Eq, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$ne", Ne, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$gt", Gt, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$gte", Gte, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$lt", Lt, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$lte", Lte, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$cond", nullptr, 0, 0, ParseCond});
  ops->push_back(OperatorDef{"$ifNull", nullptr, 0, 0, ParseIfNull});
  ops->push_back(OperatorDef{"$switch", nullptr, 0, 0, ParseSwitch});
}

// MongoDB expression operators that gatedb does not implement: refused by
// name rather than reported as unknown.
constexpr const char* kUnsupportedOperators[] = {
    "$accumulator", "$function",       "$meta",        "$toHashedIndexKey",
    "$tsSecond",    "$tsIncrement",    "$median",      "$percentile",
    "$top",         "$topN",           "$bottom",      "$bottomN",
    "$covariancePop", "$covarianceSamp", "$derivative", "$integral",
    "$expMovingAvg", "$shift",         "$rank",        "$denseRank",
    "$documentNumber", "$locf",        "$linearFill",  "$createObjectId",
    "$encStrStartsWith", "$encStrEndsWith", "$encStrContains", "$encStrNormalizedEq",
    "$sigmoid",     "$similarityCosine", "$similarityDotProduct", "$similarityEuclidean",
    "$hash",        "$hexHash",        "$serializeEJSON", "$deserializeEJSON",
    "$currentDate", "$subtype",
};

using OperatorMap = std::unordered_map<std::string_view, internal::OperatorDef>;

const OperatorMap& Operators() {
  static const OperatorMap* map = [] {
    std::vector<internal::OperatorDef> ops;
    AddCoreOperators(&ops);
    internal::AddArithOperators(&ops);
    internal::AddStringOperators(&ops);
    internal::AddArrayOperators(&ops);
    internal::AddTypeOperators(&ops);
    internal::AddDateOperators(&ops);
    internal::AddObjectOperators(&ops);
    auto* m = new OperatorMap();
    for (const internal::OperatorDef& op : ops) m->emplace(op.name, op);
    return m;
  }();
  return *map;
}

StatusOr<ExprPtr> ParseOperator(std::string_view name, const bson_value_t& arg, ParseContext* pc) {
  const OperatorMap& ops = Operators();
  auto it = ops.find(name);
  if (it == ops.end()) {
    for (const char* n : kUnsupportedOperators) {
      if (name == n) {
        return Err(internal::kInvalidPipelineOperator,
                   "Expression '" + std::string(name) + "' is not supported by gatedb");
      }
    }
    return Err(internal::kInvalidPipelineOperator, "Unrecognized expression '" + std::string(name) + "'");
  }
  const internal::OperatorDef& op = it->second;
  if (op.parse != nullptr) return op.parse(op.name, arg, pc);
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, internal::ParseArgs(arg, pc));
  RETURN_IF_ERROR(internal::CheckArity(op.name, args.size(), op.min_args, op.max_args));
  return ExprPtr(new internal::NaryExpression(op.name, op.fn, std::move(args)));
}

StatusOr<ExprPtr> ParseFieldPathOrVariable(std::string_view s, ParseContext* pc);

StatusOr<ExprPtr> ParseDocument(const bson_value_t& spec, ParseContext* pc) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len)) {
    return Status(ErrorCode::kInvalidBSON, "expression is not valid BSON");
  }
  if (!bson_iter_next(&it)) return ExprPtr(new ObjectExpression({}));
  std::string_view first(bson_iter_key(&it), bson_iter_key_len(&it));
  if (!first.empty() && first[0] == '$') {
    size_t n = 1;
    bson_iter_t count_it = it;
    while (bson_iter_next(&count_it)) ++n;
    if (n != 1) {
      return Err(15983, "an expression specification must contain exactly one field, the name of the "
                        "expression. Found " + std::to_string(n) + " fields in " + JsonOfValue(spec));
    }
    return ParseOperator(first, *bson_iter_value(&it), pc);
  }
  std::vector<std::pair<std::string, ExprPtr>> fields;
  do {
    std::string name(bson_iter_key(&it), bson_iter_key_len(&it));
    RETURN_IF_ERROR(ValidateFieldName(name));
    for (const auto& f : fields) {
      if (f.first == name) {
        return Err(16406, "duplicate field name specified in object literal: " + JsonOfValue(spec));
      }
    }
    ASSIGN_OR_RETURN(ExprPtr e, ParserAccess::Parse(*bson_iter_value(&it), pc));
    fields.emplace_back(std::move(name), std::move(e));
  } while (bson_iter_next(&it));
  return ExprPtr(new ObjectExpression(std::move(fields)));
}

StatusOr<ExprPtr> ParseArray(const bson_value_t& spec, ParseContext* pc) {
  std::vector<ExprPtr> elems;
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len)) {
    return Status(ErrorCode::kInvalidBSON, "expression is not valid BSON");
  }
  while (bson_iter_next(&it)) {
    ASSIGN_OR_RETURN(ExprPtr e, ParserAccess::Parse(*bson_iter_value(&it), pc));
    elems.push_back(std::move(e));
  }
  return ExprPtr(new ArrayExpression(std::move(elems)));
}

}  // namespace

// ---------------------------------------------------------------------------
// ParserAccess

namespace internal {

namespace {

struct DepthGuard {
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  int* depth_;
};

}  // namespace

StatusOr<ExprPtr> ParserAccess::Parse(const bson_value_t& spec, ParseContext* pc) {
  DepthGuard guard(&pc->depth_);
  if (pc->depth_ > kMaxExpressionDepth) {
    return Status(ErrorCode::kOverflow,
                  "expression exceeds the maximum nesting depth of " + std::to_string(kMaxExpressionDepth));
  }
  switch (spec.value_type) {
    case BSON_TYPE_UTF8:
      if (spec.value.v_utf8.len > 0 && spec.value.v_utf8.str[0] == '$') {
        return ParseFieldPathOrVariable(std::string_view(spec.value.v_utf8.str, spec.value.v_utf8.len), pc);
      }
      break;
    case BSON_TYPE_DOCUMENT:
      return ParseDocument(spec, pc);
    case BSON_TYPE_ARRAY:
      return ParseArray(spec, pc);
    default:
      break;
  }
  return MakeConstant(Literal(spec, *pc));
}

StatusOr<VariableId> ParserAccess::PushVariable(ParseContext* pc, std::string_view name) {
  RETURN_IF_ERROR(ValidateNameForWrite(name));
  const VariableId id = pc->next_id_++;
  pc->scope_.emplace_back(std::string(name), id);
  return id;
}

void ParserAccess::PopVariables(ParseContext* pc, size_t n) {
  pc->scope_.resize(pc->scope_.size() - std::min(n, pc->scope_.size()));
}

Value ParserAccess::Literal(const bson_value_t& v, const ParseContext& pc) { return Value::Within(v, pc.spec_); }

StatusOr<VariableId> ParserAccess::Resolve(std::string_view name, const ParseContext& pc) {
  for (auto it = pc.scope_.rbegin(); it != pc.scope_.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  if (name == "ROOT") return kRootVariable;
  if (name == "CURRENT") return kCurrentVariable;
  if (name == "NOW") return kNowVariable;
  if (name == "REMOVE") return kRemoveVariable;
  if (name == "CLUSTER_TIME" || name == "USER_ROLES" || name == "SEARCH_META" || name == "SEARCH_SCORE") {
    return Err(51144, "Builtin variable '$$" + std::string(name) + "' is not available");
  }
  for (const auto& d : pc.declared_) {
    if (d.first == name) return d.second;
  }
  return Err(17276, "Use of undefined variable: " + std::string(name));
}

StatusOr<ExprPtr> ParserAccess::ParseTop(const bson_value_t& spec, ParseContext* pc) {
  // Literals point into this private copy.
  Value saved = std::move(pc->spec_);
  pc->spec_ = Value::Copy(spec);
  if (pc->spec_.missing()) pc->spec_ = Value::Null();
  StatusOr<ExprPtr> e = Parse(pc->spec_.bson(), pc);
  pc->spec_ = std::move(saved);
  return e;
}

VariableId ParserAccess::PushSlot(ParseContext* pc) {
  const VariableId id = pc->next_id_++;
  pc->scope_.emplace_back(std::string(), id);
  return id;
}

}  // namespace internal

namespace {

StatusOr<ExprPtr> ParseFieldPathOrVariable(std::string_view s, ParseContext* pc) {
  if (s.find('\0') != std::string_view::npos) {
    return Err(16419, "field path must not contain embedded null characters");
  }
  if (s == "$") return Err(16872, "'$' by itself is not a valid FieldPath");
  std::vector<std::string> parts;
  if (s.size() >= 2 && s[1] == '$') {
    std::string_view rest = s.substr(2);
    const size_t dot = rest.find('.');
    std::string_view name = rest.substr(0, dot);
    RETURN_IF_ERROR(ValidateNameForRead(name));
    if (dot != std::string_view::npos) RETURN_IF_ERROR(SplitFieldPath(rest.substr(dot + 1), &parts));
    // DESCEND, PRUNE and KEEP are $redact's answers: constant strings.
    if (name == "DESCEND" || name == "PRUNE" || name == "KEEP") {
      if (!parts.empty()) return Err(17276, "Use of undefined variable: " + std::string(name));
      std::string lower(name);
      for (char& c : lower) c = static_cast<char>(c - 'A' + 'a');
      return internal::MakeConstant(Value::String(std::move(lower)));
    }
    ASSIGN_OR_RETURN(VariableId id, ParserAccess::Resolve(name, *pc));
    return ExprPtr(new FieldPathExpression(id, std::move(parts), std::string(s)));
  }
  RETURN_IF_ERROR(SplitFieldPath(s.substr(1), &parts));
  return ExprPtr(new FieldPathExpression(kCurrentVariable, std::move(parts), std::string(s)));
}

}  // namespace

// ---------------------------------------------------------------------------
// ParseContext, EvalContext, Expression

StatusOr<VariableId> ParseContext::DeclareVariable(std::string_view name) {
  RETURN_IF_ERROR(ValidateNameForWrite(name));
  for (const auto& d : declared_) {
    if (d.first == name) return d.second;
  }
  const VariableId id = next_id_++;
  declared_.emplace_back(std::string(name), id);
  return id;
}

namespace {
int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

EvalContext::EvalContext() : top_(this), outer_(nullptr), current_(&root_), now_(WallClockMs()) {}

EvalContext::EvalContext(const EvalContext& outer, VariableId first, const Value* values, size_t count,
                         const Value* current)
    : top_(outer.top_),
      outer_(&outer),
      current_(current != nullptr ? current : outer.current_),
      first_(first),
      values_(values),
      count_(count) {}

void EvalContext::SetRoot(const bson_t* doc) {
  bson_value_t v;
  v.value_type = BSON_TYPE_DOCUMENT;
  v.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(doc));
  v.value.v_doc.data_len = doc->len;
  root_ = Value::Borrow(v);
}

void EvalContext::SetRoot(Value doc) { root_ = std::move(doc); }

void EvalContext::SetVariable(VariableId id, Value value) {
  if (id < 0) return;
  const size_t i = static_cast<size_t>(id);
  if (bound_.size() <= i) {
    bound_.resize(i + 1);
    is_bound_.resize(i + 1, false);
  }
  bound_[i] = std::move(value);
  is_bound_[i] = true;
}

const Value* EvalContext::Find(VariableId id) const {
  for (const EvalContext* c = this; c != nullptr; c = c->outer_) {
    if (id >= c->first_ && static_cast<size_t>(id - c->first_) < c->count_) {
      return &c->values_[id - c->first_];
    }
  }
  const size_t i = static_cast<size_t>(id);
  if (id >= 0 && i < top_->bound_.size() && top_->is_bound_[i]) return &top_->bound_[i];
  return nullptr;
}

Expression::~Expression() = default;

StatusOr<std::unique_ptr<Expression>> ParseExpression(const bson_value_t& spec, ParseContext* pc) {
  return ParserAccess::ParseTop(spec, pc);
}

std::string ExpressionToJson(const Expression& e) {
  bson_t tmp = BSON_INITIALIZER;
  e.Serialize(&tmp, "");
  bson_iter_t it;
  std::string out;
  if (bson_iter_init(&it, &tmp) && bson_iter_next(&it)) out = Value::Borrow(*bson_iter_value(&it)).ToString();
  bson_destroy(&tmp);
  return out;
}

}  // namespace expression
}  // namespace gatedb
