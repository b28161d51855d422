// Type operators: $type, $isNumber, $convert and its shorthands $toString
// $toInt $toLong $toDouble $toDecimal $toBool $toDate $toObjectId.
//
// A conversion that fails is ConversionFailure (241), which $convert's
// `onError` replaces; a null or missing input gives `onNull` (default null).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

std::string T(const Value& v) { return TypeName(v); }

StatusOr<Value> Type(const char*, const Value* a, size_t) { return Value::String(TypeName(a[0])); }
StatusOr<Value> IsNumber(const char*, const Value* a, size_t) { return Value::Bool(a[0].is_number()); }

// A conversion failure: the message MongoDB appends when there is no onError.
Status ConversionError(const std::string& why) {
  return Err(kConversionFailure, why + " in $convert with no onError value");
}

Status Unsupported(const Value& v, bson_type_t to) {
  return ConversionError("Unsupported conversion from " + T(v) + " to " + BsonTypeName(to));
}

// The target type named by `to` (a type name or a BSON type number).
StatusOr<bson_type_t> TargetType(const Value& to) {
  if (to.is_string()) {
    const std::string_view name = to.str();
    static const std::pair<const char*, bson_type_t> kNames[] = {
        {"double", BSON_TYPE_DOUBLE},       {"string", BSON_TYPE_UTF8},       {"object", BSON_TYPE_DOCUMENT},
        {"array", BSON_TYPE_ARRAY},         {"binData", BSON_TYPE_BINARY},    {"undefined", BSON_TYPE_UNDEFINED},
        {"objectId", BSON_TYPE_OID},        {"bool", BSON_TYPE_BOOL},         {"date", BSON_TYPE_DATE_TIME},
        {"null", BSON_TYPE_NULL},           {"regex", BSON_TYPE_REGEX},       {"dbPointer", BSON_TYPE_DBPOINTER},
        {"javascript", BSON_TYPE_CODE},     {"symbol", BSON_TYPE_SYMBOL},     {"javascriptWithScope", BSON_TYPE_CODEWSCOPE},
        {"int", BSON_TYPE_INT32},           {"timestamp", BSON_TYPE_TIMESTAMP}, {"long", BSON_TYPE_INT64},
        {"decimal", BSON_TYPE_DECIMAL128},  {"minKey", BSON_TYPE_MINKEY},     {"maxKey", BSON_TYPE_MAXKEY},
    };
    for (const auto& [n, t] : kNames) {
      if (name == n) return t;
    }
    return Status(ErrorCode::kBadValue, "Unknown type name: " + std::string(name));
  }
  if (to.is_number()) {
    int64_t code = 0;
    if (!ToInt64Exact(to, &code)) {
      return Status(ErrorCode::kFailedToParse, "In $convert, numeric 'to' argument is not an integer");
    }
    if ((code >= 1 && code <= 19) || code == -1 || code == 127) {
      return static_cast<bson_type_t>(static_cast<uint8_t>(code));
    }
    return Status(ErrorCode::kFailedToParse,
                  "In $convert, numeric value for 'to' does not correspond to a BSON type: " + std::to_string(code));
  }
  return Status(ErrorCode::kFailedToParse, "$convert's 'to' argument must be a string or number, but is " + T(to));
}

// Parses a whole string as a base-10 integer.
Status ParseInteger(std::string_view s, int64_t* out) {
  const std::string quoted = "Failed to parse number '" + std::string(s) + "'";
  if (s.empty()) return ConversionError(quoted + ": No digits");
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return ConversionError(quoted + ": No digits");
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return ConversionError(quoted + ": Did not consume whole string.");
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return ConversionError(quoted + ": Overflow");
    v = v * 10 + d;
  }
  if (negative ? v > 9223372036854775808ULL : v > 9223372036854775807ULL) {
    return ConversionError(quoted + ": Overflow");
  }
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return Status::OK();
}

Status ParseDouble(std::string_view s, double* out) {
  const std::string str(s);
  const std::string quoted = "Failed to parse number '" + str + "'";
  if (str == "Infinity" || str == "+Infinity" || str == "inf" || str == "+inf") {
    *out = HUGE_VAL;
    return Status::OK();
  }
  if (str == "-Infinity" || str == "-inf") {
    *out = -HUGE_VAL;
    return Status::OK();
  }
  if (str == "NaN" || str == "nan" || str == "-NaN") {
    *out = NAN;
    return Status::OK();
  }
  // Plain decimal notation only: no white space, hex floats or "infinity".
  if (str.empty() || str.find_first_not_of("0123456789+-.eE") != std::string::npos) {
    return ConversionError(quoted + ": Did not consume whole string.");
  }
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size()) return ConversionError(quoted + ": Did not consume whole string.");
  if (errno == ERANGE && std::isinf(d)) return ConversionError(quoted + ": Out of range");
  *out = d;
  return Status::OK();
}

// A double or decimal converted to an integer type (truncated toward zero).
StatusOr<int64_t> FloatToInteger(const Value& v, int64_t min, int64_t max) {
  if (v.type() == BSON_TYPE_DECIMAL128) {
    const bson_decimal128_t& d = v.bson().value.v_decimal128;
    if (decimal::IsNaN(d)) return ConversionError("Attempt to convert NaN value to integer type");
    if (decimal::IsInfinity(d)) return ConversionError("Attempt to convert infinity value to integer type");
    const std::optional<int64_t> t = decimal::ToInt64Truncated(d);
    if (!t || *t < min || *t > max) return ConversionError("Conversion would overflow target type");
    return *t;
  }
  const long double d = v.dbl();
  if (std::isnan(d)) return ConversionError("Attempt to convert NaN value to integer type");
  if (std::isinf(d)) return ConversionError("Attempt to convert infinity value to integer type");
  const long double t = std::trunc(d);
  if (t < static_cast<long double>(min) || t > static_cast<long double>(max)) {
    return ConversionError("Conversion would overflow target type");
  }
  return static_cast<int64_t>(t);
}

StatusOr<Value> ToIntegerType(const Value& v, bson_type_t to) {
  const bool is_int = to == BSON_TYPE_INT32;
  const int64_t min = is_int ? INT32_MIN : INT64_MIN;
  const int64_t max = is_int ? INT32_MAX : INT64_MAX;
  auto make = [is_int](int64_t n) { return is_int ? Value::Int32(static_cast<int32_t>(n)) : Value::Int64(n); };
  switch (v.type()) {
    case BSON_TYPE_BOOL: return make(v.boolean() ? 1 : 0);
    case BSON_TYPE_INT32: return make(v.int32());
    case BSON_TYPE_INT64:
      if (v.int64() < min || v.int64() > max) return ConversionError("Conversion would overflow target type");
      return make(v.int64());
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: {
      ASSIGN_OR_RETURN(int64_t n, FloatToInteger(v, min, max));
      return make(n);
    }
    case BSON_TYPE_UTF8: {
      int64_t n = 0;
      RETURN_IF_ERROR(ParseInteger(v.str(), &n));
      if (n < min || n > max) {
        return ConversionError("Failed to parse number '" + std::string(v.str()) + "': Overflow");
      }
      return make(n);
    }
    case BSON_TYPE_DATE_TIME:
      if (!is_int) return Value::Int64(v.date());
      break;
    default:
      break;
  }
  return Unsupported(v, to);
}

StatusOr<Value> Convert(const Value& v, bson_type_t to) {
  if (v.type() == to) return v;
  switch (to) {
    case BSON_TYPE_DOUBLE:
      switch (v.type()) {
        case BSON_TYPE_BOOL: return Value::Double(v.boolean() ? 1 : 0);
        case BSON_TYPE_INT32:
        case BSON_TYPE_INT64: return Value::Double(ToDouble(v));
        case BSON_TYPE_DECIMAL128: {
          // As MongoDB: rounding is fine, leaving the double range is not.
          const bson_decimal128_t& d = v.bson().value.v_decimal128;
          const double x = decimal::ToDouble(d);
          if (!decimal::IsInfinity(d) && !decimal::IsNaN(d) && (std::isinf(x) || (x == 0 && !decimal::IsZero(d)))) {
            return ConversionError("Conversion would overflow target type");
          }
          return Value::Double(x);
        }
        case BSON_TYPE_DATE_TIME: return Value::Double(static_cast<double>(v.date()));
        case BSON_TYPE_UTF8: {
          double d = 0;
          RETURN_IF_ERROR(ParseDouble(v.str(), &d));
          return Value::Double(d);
        }
        default: break;
      }
      break;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
      return ToIntegerType(v, to);
    case BSON_TYPE_DECIMAL128:
      switch (v.type()) {
        case BSON_TYPE_BOOL: return Value::Decimal(decimal::FromInt64(v.boolean() ? 1 : 0));
        case BSON_TYPE_INT32:
        case BSON_TYPE_INT64:
        case BSON_TYPE_DOUBLE: return Value::Decimal(ToDecimal(v));  // a double to 15 digits, as MongoDB
        case BSON_TYPE_DATE_TIME: return Value::Decimal(decimal::FromInt64(v.date()));
        case BSON_TYPE_UTF8: {
          const decimal::Result r = decimal::FromString(v.str());
          if ((r.flags & decimal::kFlagInvalid) != 0) {
            return ConversionError("Failed to parse number '" + std::string(v.str()) +
                                   "': Failed to parse string to decimal");
          }
          return Value::Decimal(r.value);
        }
        default: break;
      }
      break;
    case BSON_TYPE_BOOL:
      if (v.is_number()) return Value::Bool(Truthy(v));
      return Value::Bool(true);
    case BSON_TYPE_UTF8:
      switch (v.type()) {
        case BSON_TYPE_BOOL: return Value::String(v.boolean() ? "true" : "false");
        case BSON_TYPE_INT32:
        case BSON_TYPE_INT64:
        case BSON_TYPE_DOUBLE:
        case BSON_TYPE_DECIMAL128:
        case BSON_TYPE_DATE_TIME: {
          ASSIGN_OR_RETURN(std::string s, CoerceToString(v, "$convert"));
          return Value::String(std::move(s));
        }
        case BSON_TYPE_OID: {
          char hex[25];
          bson_oid_to_string(&v.bson().value.v_oid, hex);
          return Value::String(std::string(hex, 24));
        }
        case BSON_TYPE_SYMBOL:
          return Value::String(std::string(v.bson().value.v_symbol.symbol, v.bson().value.v_symbol.len));
        default: break;
      }
      break;
    case BSON_TYPE_DATE_TIME:
      switch (v.type()) {
        case BSON_TYPE_INT64: return Value::Date(v.int64());
        case BSON_TYPE_DECIMAL128: {
          const bson_decimal128_t& d = v.bson().value.v_decimal128;
          if (decimal::IsNaN(d)) return ConversionError("Attempt to convert NaN value to date");
          if (decimal::IsInfinity(d)) return ConversionError("Attempt to convert infinity value to date");
          const std::optional<int64_t> t = decimal::ToInt64Truncated(d);
          if (!t) return ConversionError("Conversion would overflow target type");
          return Value::Date(*t);
        }
        case BSON_TYPE_DOUBLE: {
          const long double d = v.dbl();
          if (std::isnan(d)) return ConversionError("Attempt to convert NaN value to date");
          if (std::isinf(d)) return ConversionError("Attempt to convert infinity value to date");
          const long double t = std::trunc(d);
          if (t < -9223372036854775808.0L || t >= 9223372036854775808.0L) {
            return ConversionError("Conversion would overflow target type");
          }
          return Value::Date(static_cast<int64_t>(t));
        }
        case BSON_TYPE_UTF8: {
          int64_t ms = 0;
          std::string why;
          if (!ParseIsoDate(v.str(), &ms, &why)) {
            return ConversionError("Error parsing date string '" + std::string(v.str()) + "'; " + why);
          }
          return Value::Date(ms);
        }
        case BSON_TYPE_OID:
        case BSON_TYPE_TIMESTAMP: {
          ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(v));
          return Value::Date(ms);
        }
        default: break;
      }
      break;
    case BSON_TYPE_OID:
      if (v.is_string()) {
        const std::string_view s = v.str();
        if (s.size() != 24) {
          return ConversionError("Failed to parse objectId '" + std::string(s) +
                                 "': Invalid string length for parsing to OID, expected 24 but found " +
                                 std::to_string(s.size()));
        }
        for (char c : s) {
          if (!std::isxdigit(static_cast<unsigned char>(c))) {
            return ConversionError("Failed to parse objectId '" + std::string(s) +
                                   "': Invalid character found in hex string: " + std::string(1, c));
          }
        }
        bson_oid_t oid;
        bson_oid_init_from_string(&oid, std::string(s).c_str());
        return Value::Oid(oid);
      }
      break;
    default:
      break;
  }
  return Unsupported(v, to);
}

class ConvertExpression final : public Expression {
 public:
  // `name` is "$convert" or a shorthand ("$toInt", with a constant `to`).
  ConvertExpression(const char* name, ExprPtr input, ExprPtr to, ExprPtr on_error, ExprPtr on_null)
      : name_(name), input_(std::move(input)), to_(std::move(to)), on_error_(std::move(on_error)), on_null_(std::move(on_null)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value to, to_->Evaluate(ctx));
    if (input.nullish()) {
      if (on_null_ != nullptr) return on_null_->Evaluate(ctx);
      return Value::Null();
    }
    if (to.nullish()) return Value::Null();
    ASSIGN_OR_RETURN(bson_type_t target, TargetType(to));
    StatusOr<Value> out = Convert(input, target);
    if (!out.ok() && out.status().code_number() == kConversionFailure && on_error_ != nullptr) {
      return on_error_->Evaluate(ctx);
    }
    return out;
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    if (std::strcmp(name_, "$convert") != 0) {
      bson_t sub;
      bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &sub);
      input_->Serialize(&sub, name_);
      bson_append_document_end(out, &sub);
      return;
    }
    NamedSerializer s(out, key, "$convert");
    s.Add("input", input_.get());
    s.Add("to", to_.get());
    s.Add("onError", on_error_.get());
    s.Add("onNull", on_null_.get());
  }

 private:
  const char* name_;
  ExprPtr input_, to_, on_error_, on_null_;
};

StatusOr<ExprPtr> ParseConvert(const char* name, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Status(ErrorCode::kFailedToParse,
                  "$convert expects an object of named arguments but found: " + std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "to", "onError", "onNull"},
                                                   static_cast<int>(ErrorCode::kFailedToParse),
                                                   "$convert found an unknown argument: "));
  if (!args.Has("input")) return Status(ErrorCode::kFailedToParse, "Missing 'input' parameter to $convert");
  if (!args.Has("to")) return Status(ErrorCode::kFailedToParse, "Missing 'to' parameter to $convert");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr to, args.Parse("to", pc));
  ASSIGN_OR_RETURN(ExprPtr on_error, args.Parse("onError", pc));
  ASSIGN_OR_RETURN(ExprPtr on_null, args.Parse("onNull", pc));
  // A constant `to` is checked now.
  if (const Value* c = to->constant(); c != nullptr && !c->nullish()) {
    RETURN_IF_ERROR(TargetType(*c).status());
  }
  return ExprPtr(new ConvertExpression(name, std::move(input), std::move(to), std::move(on_error), std::move(on_null)));
}

// $toInt etc.: {$convert: {input: <arg>, to: <type>}}.
StatusOr<ExprPtr> ParseShorthand(const char* name, const bson_value_t& spec, ParseContext* pc) {
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(spec, pc));
  if (args.size() != 1) {
    return Err(50723, std::string(name) + " requires a single argument, got " + std::to_string(args.size()));
  }
  const std::string_view op = name;
  const char* to = op == "$toString" ? "string"
                   : op == "$toInt"   ? "int"
                   : op == "$toLong"  ? "long"
                   : op == "$toDouble" ? "double"
                   : op == "$toDecimal" ? "decimal"
                   : op == "$toBool"  ? "bool"
                   : op == "$toDate"  ? "date"
                                      : "objectId";
  return ExprPtr(new ConvertExpression(name, std::move(args[0]), MakeConstant(Value::String(to)), nullptr, nullptr));
}

}  // namespace

void AddTypeOperators(std::vector<OperatorDef>* ops) {
  ops->push_back(OperatorDef{"$type", Type, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$isNumber", IsNumber, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$convert", nullptr, 0, 0, ParseConvert});
  for (const char* n :
       {"$toString", "$toInt", "$toLong", "$toDouble", "$toDecimal", "$toBool", "$toDate", "$toObjectId"}) {
    ops->push_back(OperatorDef{n, nullptr, 0, 0, ParseShorthand});
  }
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
