// Helpers shared by the operator files (expression_internal.h): arity and
// named-argument parsing, the plain operator node, serialization, and
// number and string coercions.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

Status CheckArity(std::string_view op, size_t n, int min, int max) {
  if (min == max && n != static_cast<size_t>(min)) {
    return Err(16020, "Expression " + std::string(op) + " takes exactly " + std::to_string(min) +
                          " arguments. " + std::to_string(n) + " were passed in.");
  }
  if (n < static_cast<size_t>(min) || (max >= 0 && n > static_cast<size_t>(max))) {
    if (max < 0) {
      return Err(28667, "Expression " + std::string(op) + " takes at least " + std::to_string(min) +
                            " arguments, but " + std::to_string(n) + " were passed in.");
    }
    return Err(28667, "Expression " + std::string(op) + " takes at least " + std::to_string(min) +
                          " arguments, and at most " + std::to_string(max) + ", but " + std::to_string(n) +
                          " were passed in.");
  }
  return Status::OK();
}

StatusOr<std::vector<ExprPtr>> ParseArgs(const bson_value_t& spec, ParseContext* pc) {
  std::vector<ExprPtr> args;
  if (spec.value_type != BSON_TYPE_ARRAY) {
    ASSIGN_OR_RETURN(ExprPtr e, ParseSub(spec, pc));
    args.push_back(std::move(e));
    return args;
  }
  bson_iter_t it;
  if (bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len)) {
    while (bson_iter_next(&it)) {
      ASSIGN_OR_RETURN(ExprPtr e, ParseSub(*bson_iter_value(&it), pc));
      args.push_back(std::move(e));
    }
  }
  return args;
}

namespace {

class ConstantNode final : public Expression {
 public:
  explicit ConstantNode(Value v) : value_(std::move(v)) {}
  StatusOr<Value> Evaluate(const EvalContext&) const override { return value_; }
  void Serialize(bson_t* out, std::string_view key) const override {
    bson_t sub;
    bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &sub);
    if (value_.missing()) {
      bson_append_utf8(&sub, "$const", -1, "$$REMOVE", -1);  // {$const: missing} cannot be written
    } else {
      value_.AppendTo(&sub, "$const");
    }
    bson_append_document_end(out, &sub);
  }
  const Value* constant() const override { return &value_; }

 private:
  Value value_;
};

}  // namespace

ExprPtr MakeConstant(Value v) { return ExprPtr(new ConstantNode(std::move(v))); }

StatusOr<NamedArgs> NamedArgs::Read(const bson_value_t& spec, std::initializer_list<const char*> allowed,
                                    int unknown_code, const std::string& unknown_prefix) {
  NamedArgs out;
  bson_iter_t it;
  if (spec.value_type != BSON_TYPE_DOCUMENT ||
      !bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len)) {
    return out;
  }
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    bool known = false;
    for (const char* a : allowed) {
      if (key == a) {
        known = true;
        break;
      }
    }
    if (!known) return Err(unknown_code, unknown_prefix + std::string(key));
    out.args_.push_back(Arg{key, *bson_iter_value(&it)});
  }
  return out;
}

const bson_value_t* NamedArgs::Get(std::string_view name) const {
  // The last one wins when a key repeats, as MongoDB's BSONObj lookups do not
  // promise either; gatedb picks the last.
  for (auto it = args_.rbegin(); it != args_.rend(); ++it) {
    if (it->name == name) return &it->value;
  }
  return nullptr;
}

StatusOr<ExprPtr> NamedArgs::Parse(std::string_view name, ParseContext* pc) const {
  const bson_value_t* v = Get(name);
  if (v == nullptr) return ExprPtr();
  return ParseSub(*v, pc);
}

StatusOr<Value> NaryExpression::Evaluate(const EvalContext& ctx) const {
  const size_t n = args_.size();
  if (n <= 4) {
    Value local[4];
    for (size_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(local[i], args_[i]->Evaluate(ctx));
    }
    return fn_(name_, local, n);
  }
  std::vector<Value> vals(n);
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(vals[i], args_[i]->Evaluate(ctx));
  }
  return fn_(name_, vals.data(), n);
}

void NaryExpression::Serialize(bson_t* out, std::string_view key) const {
  SerializeOperator(out, key, name_, args_);
}

void SerializeOperator(bson_t* out, std::string_view key, const char* name, const std::vector<ExprPtr>& args) {
  bson_t outer, arr;
  bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &outer);
  bson_append_array_begin(&outer, name, -1, &arr);
  for (size_t i = 0; i < args.size(); ++i) args[i]->Serialize(&arr, std::to_string(i));
  bson_append_array_end(&outer, &arr);
  bson_append_document_end(out, &outer);
}

NamedSerializer::NamedSerializer(bson_t* out, std::string_view key, const char* name) : out_(out) {
  bson_append_document_begin(out_, key.data(), static_cast<int>(key.size()), &outer_);
  bson_append_document_begin(&outer_, name, -1, &args_);
}

NamedSerializer::~NamedSerializer() {
  bson_append_document_end(&outer_, &args_);
  bson_append_document_end(out_, &outer_);
}

void NamedSerializer::Add(const char* field, const Expression* e) {
  if (e != nullptr) e->Serialize(&args_, field);
}

void NamedSerializer::AddValue(const char* field, const Value& v) { v.AppendTo(&args_, field); }

// ---------------------------------------------------------------------------
// Numbers

NumType NumTypeOf(const Value& v) {
  switch (v.type()) {
    case BSON_TYPE_INT32: return NumType::kInt32;
    case BSON_TYPE_INT64: return NumType::kInt64;
    case BSON_TYPE_DOUBLE: return NumType::kDouble;
    default: return NumType::kDecimal;
  }
}

double ToDouble(const Value& v) {
  switch (v.type()) {
    case BSON_TYPE_INT32: return v.int32();
    case BSON_TYPE_INT64: return static_cast<double>(v.int64());
    case BSON_TYPE_DOUBLE: return v.dbl();
    case BSON_TYPE_DECIMAL128: return decimal::ToDouble(v.bson().value.v_decimal128);  // correctly rounded
    default: return 0;
  }
}

bson_decimal128_t ToDecimal(const Value& v) {
  switch (v.type()) {
    case BSON_TYPE_INT32: return decimal::FromInt64(v.int32());
    case BSON_TYPE_INT64: return decimal::FromInt64(v.int64());
    case BSON_TYPE_DOUBLE: return decimal::FromDouble(v.dbl());
    case BSON_TYPE_DECIMAL128: return v.bson().value.v_decimal128;
    default: return decimal::FromInt64(0);
  }
}

bool ToInt64Exact(const Value& v, int64_t* out) {
  switch (v.type()) {
    case BSON_TYPE_INT32: *out = v.int32(); return true;
    case BSON_TYPE_INT64: *out = v.int64(); return true;
    case BSON_TYPE_DECIMAL128: {
      std::optional<int64_t> n = decimal::ToInt64Exact(v.bson().value.v_decimal128);
      if (!n) return false;
      *out = *n;
      return true;
    }
    case BSON_TYPE_DOUBLE: {
      const long double d = NumberAsLongDouble(v.bson());
      if (!std::isfinite(d) || d != std::trunc(d)) return false;
      if (d < -9223372036854775808.0L || d >= 9223372036854775808.0L) return false;
      *out = static_cast<int64_t>(d);
      return true;
    }
    default: return false;
  }
}

bool ToInt32Exact(const Value& v, int32_t* out) {
  int64_t n = 0;
  if (!ToInt64Exact(v, &n) || n < INT32_MIN || n > INT32_MAX) return false;
  *out = static_cast<int32_t>(n);
  return true;
}

Value IntegerValue(int64_t n) {
  if (n >= INT32_MIN && n <= INT32_MAX) return Value::Int32(static_cast<int32_t>(n));
  return Value::Int64(n);
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

StatusOr<std::string> CoerceToString(const Value& v, std::string_view op) {
  switch (v.type()) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED: return std::string();
    case BSON_TYPE_UTF8: return std::string(v.str());
    case BSON_TYPE_SYMBOL: return std::string(v.bson().value.v_symbol.symbol, v.bson().value.v_symbol.len);
    case BSON_TYPE_INT32: return std::to_string(v.int32());
    case BSON_TYPE_INT64: return std::to_string(v.int64());
    case BSON_TYPE_DOUBLE: return FormatDouble(v.dbl());
    case BSON_TYPE_DECIMAL128: {
      char buf[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.bson().value.v_decimal128, buf);
      return std::string(buf);
    }
    case BSON_TYPE_DATE_TIME: return FormatIsoDate(v.date());
    case BSON_TYPE_TIMESTAMP:
      // MongoDB's Timestamp::toStringPretty is "Mon DD HH:MM:SS:inc"; gatedb
      // writes the ISO date of the seconds and the increment.
      return FormatIsoDate(int64_t{v.bson().value.v_timestamp.timestamp} * 1000) + ":" +
             std::to_string(v.bson().value.v_timestamp.increment);
    case BSON_TYPE_CODE: return std::string(v.bson().value.v_code.code, v.bson().value.v_code.code_len);
    default:
      return Err(16007, "can't convert from BSON type " + std::string(TypeName(v)) + " to String");
  }
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
