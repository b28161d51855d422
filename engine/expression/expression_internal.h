// File: engine/expression/expression_internal.h
//
// What the expression_*.cc files share: the operator table's entry type,
// the generic node for operators whose arguments are all evaluated first,
// argument-parsing helpers, MongoDB's error codes, and number, string and
// date helpers used by more than one area.  Internal to engine/expression.
//
// Each area file (expression_arith.cc, expression_string.cc, ...) defines
// an `Add...Operators()` function that appends its OperatorDefs; the parser
// (expression.cc) collects them once into its lookup table.
#ifndef GATEDB_ENGINE_EXPRESSION_EXPRESSION_INTERNAL_H_
#define GATEDB_ENGINE_EXPRESSION_EXPRESSION_INTERNAL_H_

#include <bson/bson.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/document/bson_compare.h"
#include "engine/expression/expression.h"
#include "engine/expression/value.h"
#include "gatedb/status.h"

namespace gatedb {
namespace expression {
namespace internal {

using ExprPtr = std::unique_ptr<Expression>;

// ---------------------------------------------------------------------------
// Errors

// A Status with a MongoDB code that error_codes.def may not list (most
// expression errors are MongoDB "Location<N>" codes).
inline Status Err(int code, std::string msg) { return Status(static_cast<ErrorCode>(code), std::move(msg)); }

constexpr int kInvalidPipelineOperator = 168;
// MongoDB's type name of a raw value ("missing" for EOD).
inline const char* BsonTypeNameOf(const bson_value_t& v) { return BsonTypeName(v.value_type); }

constexpr int kConversionFailure = 241;

// "Expression $op takes exactly N arguments. M were passed in." (16020) or
// the ranged form (28667); max < 0 means no upper bound.
Status CheckArity(std::string_view op, size_t n, int min, int max);

// ---------------------------------------------------------------------------
// Parsing

// The parser's view of ParseContext's private state.
class ParserAccess {
 public:
  // ParseExpression(): copies the spec, then parses the copy.
  static StatusOr<ExprPtr> ParseTop(const bson_value_t& spec, ParseContext* pc);
  // Parses a sub-expression of the spec being parsed.
  static StatusOr<ExprPtr> Parse(const bson_value_t& spec, ParseContext* pc);
  // Binds a user variable ($let's vars, $map's `as`, ...) for what is parsed
  // until PopVariables.  Errors: the user-variable naming rules.
  static StatusOr<VariableId> PushVariable(ParseContext* pc, std::string_view name);
  // Reserves a variable id that no name refers to.
  static VariableId PushSlot(ParseContext* pc);
  static void PopVariables(ParseContext* pc, size_t n);
  // The id of $$name in the current scope.  Errors: Location17276 for an
  // undefined variable, Location51144 for an unavailable builtin.
  static StatusOr<VariableId> Resolve(std::string_view name, const ParseContext& pc);
  // A literal taken from the spec being parsed: it shares the spec copy.
  static Value Literal(const bson_value_t& v, const ParseContext& pc);
};

inline StatusOr<ExprPtr> ParseSub(const bson_value_t& spec, ParseContext* pc) {
  return ParserAccess::Parse(spec, pc);
}

// The arguments of an operator: an array gives one per element, anything
// else is the single argument ({$abs: -1} == {$abs: [-1]}).
StatusOr<std::vector<ExprPtr>> ParseArgs(const bson_value_t& spec, ParseContext* pc);

// A literal expression holding `v` (which must be self-contained or point
// into the spec).
ExprPtr MakeConstant(Value v);

// The named arguments of an operator such as {$trim: {input: ..., chars: ...}}.
class NamedArgs {
 public:
  // Reads `spec`, which must be a document whose keys are all in `allowed`.
  // Errors: Err(unknown_code, unknown_prefix + key) for any other key.
  static StatusOr<NamedArgs> Read(const bson_value_t& spec, std::initializer_list<const char*> allowed,
                                  int unknown_code, const std::string& unknown_prefix);

  // The argument, or null when absent.
  const bson_value_t* Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name) != nullptr; }

  // The parsed argument; a null ExprPtr when absent.
  StatusOr<ExprPtr> Parse(std::string_view name, ParseContext* pc) const;

 private:
  struct Arg {
    std::string_view name;
    bson_value_t value;
  };
  std::vector<Arg> args_;
};

// ---------------------------------------------------------------------------
// Operators

// An operator whose arguments are evaluated (all of them, in order) before
// it runs; `name` is the operator ("$add") for error messages.
using NaryFn = StatusOr<Value> (*)(const char* name, const Value* args, size_t n);
// An operator with its own parse (lazy arguments, named arguments, ...).
using ParseFn = StatusOr<ExprPtr> (*)(const char* name, const bson_value_t& spec, ParseContext* pc);

struct OperatorDef {
  const char* name;        // "$add"
  NaryFn fn = nullptr;     // a plain operator, or
  int min_args = 0;        // (its arity; max_args < 0: unbounded)
  int max_args = -1;
  ParseFn parse = nullptr;  // an operator with its own parse
};

void AddArithOperators(std::vector<OperatorDef>* ops);
void AddStringOperators(std::vector<OperatorDef>* ops);
void AddArrayOperators(std::vector<OperatorDef>* ops);
void AddTypeOperators(std::vector<OperatorDef>* ops);
void AddDateOperators(std::vector<OperatorDef>* ops);
void AddObjectOperators(std::vector<OperatorDef>* ops);

// A plain operator node: evaluates its arguments, then calls `fn`.
class NaryExpression final : public Expression {
 public:
  NaryExpression(const char* name, NaryFn fn, std::vector<ExprPtr> args)
      : name_(name), fn_(fn), args_(std::move(args)) {}
  StatusOr<Value> Evaluate(const EvalContext& ctx) const override;
  void Serialize(bson_t* out, std::string_view key) const override;

 private:
  const char* name_;
  NaryFn fn_;
  std::vector<ExprPtr> args_;
};

// Appends {name: [args...]} under key.
void SerializeOperator(bson_t* out, std::string_view key, const char* name,
                       const std::vector<ExprPtr>& args);

// Helps Serialize() of operators with named arguments:
//   NamedSerializer s(out, key, "$trim");
//   s.Add("input", input_.get());
//   s.Add("chars", chars_.get());  // skipped when null
class NamedSerializer {
 public:
  NamedSerializer(bson_t* out, std::string_view key, const char* name);
  ~NamedSerializer();
  void Add(const char* field, const Expression* e);
  void AddValue(const char* field, const Value& v);
  bson_t* args() { return &args_; }

 private:
  bson_t* out_;
  bson_t outer_;
  bson_t args_;
};

// ---------------------------------------------------------------------------
// Numbers

// int32 < int64 < double < decimal: the type of an arithmetic result.
enum class NumType { kInt32 = 0, kInt64 = 1, kDouble = 2, kDecimal = 3 };
NumType NumTypeOf(const Value& v);  // REQUIRES: v.is_number()

// The number as a double (a decimal correctly rounded).  REQUIRES:
// is_number().
double ToDouble(const Value& v);

// The number as a decimal, as MongoDB's Value::coerceToDecimal: integers
// exactly, a double to 15 significant digits (MongoDB's Decimal128(double)).
// REQUIRES: is_number().
bson_decimal128_t ToDecimal(const Value& v);

// True when `v` is a number with an integral value that fits in int64
// (for doubles and decimals: exactly).  *out gets it.
bool ToInt64Exact(const Value& v, int64_t* out);
// Same, for int32.
bool ToInt32Exact(const Value& v, int32_t* out);

// The narrowest of int32/int64 that holds `n`.
Value IntegerValue(int64_t n);

// A double in the shortest form that reads back exactly ("2.5", "0.1",
// "1e+20"), as $toString and $concat-style coercions write it.
std::string FormatDouble(double d);

// MongoDB's Value::coerceToString for $substr, $toLower, $strcasecmp, ...:
// numbers, dates, timestamps, strings and symbols; null/missing give "".
// Errors: Location16007 "can't convert from BSON type X to String".
StatusOr<std::string> CoerceToString(const Value& v, std::string_view op);

// ---------------------------------------------------------------------------
// Dates (expression_date.cc)

// "2018-03-27T16:58:51.538Z".
std::string FormatIsoDate(int64_t unix_ms);
// Parses a date string ($toDate, $convert, $dateFromString's default
// format): ISO 8601 dates and date-times with an optional zone.  False when
// the string is not one.
bool ParseIsoDate(std::string_view s, int64_t* unix_ms, std::string* why);
// A value usable as a date: a date, a timestamp (seconds) or an ObjectId
// (its creation second).  Errors: Location16006 "can't convert from BSON
// type X to Date".
StatusOr<int64_t> CoerceToDate(const Value& v);

}  // namespace internal
}  // namespace expression
}  // namespace gatedb

#endif  // GATEDB_ENGINE_EXPRESSION_EXPRESSION_INTERNAL_H_
