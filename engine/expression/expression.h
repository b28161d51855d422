// File: engine/expression/expression.h
//
// MongoDB's aggregation expression language: parsed once from BSON into an
// immutable tree of Expression nodes, then evaluated against many documents.
//
//   "$a.b"                    a field path of $$CURRENT, with MongoDB's array
//                             traversal ("$a.b" over [{b: 1}, {b: 2}] is [1, 2])
//   "$$var", "$$var.path"     a variable: ROOT, CURRENT, NOW, REMOVE, a user
//                             variable ($let, $map, $filter, $reduce), or one
//                             the caller declared (DeclareVariable)
//   {a: <expr>, b: <expr>}    an object; fields that evaluate to missing are
//                             left out
//   [<expr>, ...]             an array; missing elements become null
//   {$op: <args>}             an operator (expression_internal.h lists them)
//   anything else             a literal
//
// Usage:
//   ParseContext pc;
//   ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, ParseExpression(spec, &pc));
//   EvalContext ctx;
//   ctx.SetNow(command_start_ms);
//   for (const bson_t* doc : docs) {
//     ctx.SetRoot(doc);
//     ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));   // see value.h for v's lifetime
//   }
//
// Errors follow MongoDB: the same codes (many are MongoDB "Location" codes
// that error_codes.def does not list, e.g. 16554 for $add of a string) and,
// where practical, the same messages.  Parse errors come from
// ParseExpression(); type errors and the like from Evaluate().  An operator
// gatedb does not implement is refused by name with InvalidPipelineOperator
// (168), never ignored.
//
// Thread safety: a parsed Expression is immutable; Evaluate() may run on
// many threads at once, each with its own EvalContext.  A ParseContext and
// an EvalContext are used by one thread at a time.
#ifndef GATEDB_ENGINE_EXPRESSION_EXPRESSION_H_
#define GATEDB_ENGINE_EXPRESSION_EXPRESSION_H_

#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/expression/value.h"
#include "gatedb/status.h"

namespace gatedb {
namespace expression {

// Deepest nesting of operators, objects and arrays inside one expression
// (MongoDB's BSON depth limit).  Deeper specs fail with Overflow.
constexpr int kMaxExpressionDepth = 200;

// Identifies a variable within one ParseContext.  Builtins are negative;
// user and declared variables count up from 0.
using VariableId = int32_t;
constexpr VariableId kRootVariable = -1;     // $$ROOT
constexpr VariableId kCurrentVariable = -2;  // $$CURRENT
constexpr VariableId kNowVariable = -3;      // $$NOW
constexpr VariableId kRemoveVariable = -4;   // $$REMOVE

class Expression;
namespace internal {
class ParserAccess;
}  // namespace internal

// What ParseExpression() needs besides the spec: the variables in scope.
class ParseContext {
 public:
  ParseContext() = default;
  ParseContext(const ParseContext&) = delete;
  ParseContext& operator=(const ParseContext&) = delete;

  // Declares a variable that expressions parsed afterwards with this context
  // may read as $$name, and that the caller binds for each evaluation with
  // EvalContext::SetVariable ($lookup's `let`).  Declaring a name again
  // returns its existing id.  Errors (MongoDB's rules for a user variable
  // name: a lowercase ASCII letter or non-ASCII byte, then letters, digits,
  // '_' or non-ASCII bytes): Location16866 (empty), Location16867 (first
  // character), Location16868 (other characters).
  StatusOr<VariableId> DeclareVariable(std::string_view name);

  // The declared variables, in declaration order.
  const std::vector<std::pair<std::string, VariableId>>& declared() const { return declared_; }

 private:
  friend class internal::ParserAccess;

  std::vector<std::pair<std::string, VariableId>> declared_;
  // Variables bound by enclosing $let/$map/$filter/$reduce while parsing,
  // innermost last.
  std::vector<std::pair<std::string, VariableId>> scope_;
  VariableId next_id_ = 0;
  int depth_ = 0;
  // The private copy of the spec being parsed: literals point into it.
  Value spec_;
};

// Where an expression is evaluated: $$ROOT/$$CURRENT, $$NOW and the
// caller's variables.  Expressions make nested contexts for the variables
// they bind; a caller only uses the setters.
class EvalContext {
 public:
  // $$ROOT and $$CURRENT start missing; $$NOW starts at the wall-clock time
  // of construction.
  EvalContext();
  EvalContext(const EvalContext&) = delete;
  EvalContext& operator=(const EvalContext&) = delete;

  // Sets $$ROOT and $$CURRENT.  The first form borrows `doc`, which must
  // outlive this context and every Value evaluated with it (value.h).
  void SetRoot(const bson_t* doc);
  void SetRoot(Value doc);
  // $$NOW: the command's start time in ms since the Unix epoch, the same
  // for every document the command touches.
  void SetNow(int64_t unix_ms) { now_ = unix_ms; }
  // Binds a variable that ParseContext::DeclareVariable returned, in the
  // ParseContext the evaluated expressions were parsed with.  A declared
  // variable left unbound fails evaluation with Location17276.
  void SetVariable(VariableId id, Value value);

  // --- For expressions ---------------------------------------------------

  const Value& root() const { return top_->root_; }
  const Value& current() const { return *current_; }
  int64_t now() const { return top_->now_; }
  // The value of user or declared variable `id`; null when unbound.
  const Value* Find(VariableId id) const;

  // A context inside `outer` that binds variables first..first+count-1 to
  // values[0..count) (owned by the caller, who may change them between
  // evaluations), and $$CURRENT to *current when it is not null.
  EvalContext(const EvalContext& outer, VariableId first, const Value* values, size_t count,
              const Value* current = nullptr);

 private:
  const EvalContext* top_;    // the caller's context: root_, now_, bound_
  const EvalContext* outer_;  // null at the top
  const Value* current_;
  VariableId first_ = 0;
  const Value* values_ = nullptr;
  size_t count_ = 0;

  // Used at the top only.
  Value root_;
  int64_t now_ = 0;
  std::vector<Value> bound_;
  std::vector<bool> is_bound_;
};

class Expression {
 public:
  Expression() = default;
  Expression(const Expression&) = delete;
  Expression& operator=(const Expression&) = delete;
  virtual ~Expression();

  // The expression's value in `ctx`: missing is a valid result.  Errors:
  // the operator's MongoDB error (type mismatches, division by zero, an
  // undefined variable, ...).
  virtual StatusOr<Value> Evaluate(const EvalContext& ctx) const = 0;

  // Appends the expression's BSON form to `out` under `key`, as MongoDB's
  // explain shows it: literals as {$const: v}, operators as {$op: [args]}
  // or {$op: {named args}}.  Parsing it back gives an equivalent expression.
  virtual void Serialize(bson_t* out, std::string_view key) const = 0;

  // The literal's value, or null when this is not a literal.
  virtual const Value* constant() const { return nullptr; }

  // True when this is a field path of $$CURRENT ("$a.b"); *dotted gets
  // "a.b".  $group and $sort use it to recognise plain paths.
  virtual bool IsFieldPath(std::string* dotted) const { return false; }
};

// Parses `spec`.  The tree keeps its own copy of what it needs: `spec` may
// be freed afterwards.  Errors: MongoDB's parse errors (InvalidPipelineOperator
// 168 "Unrecognized expression '$foo'", Location15983 for an operator object
// with more than one field, Location16872/15998/16410/40353 for bad field
// paths, Location17276 for an undefined variable, arity errors 16020 and
// 28667, each operator's argument errors), Overflow past
// kMaxExpressionDepth.
StatusOr<std::unique_ptr<Expression>> ParseExpression(const bson_value_t& spec, ParseContext* pc);

// Shorthand: the expression's serialized form as relaxed Extended JSON of
// {"": <form>}'s value, for explain output in tests and logs.
std::string ExpressionToJson(const Expression& e);

}  // namespace expression
}  // namespace gatedb

#endif  // GATEDB_ENGINE_EXPRESSION_EXPRESSION_H_
