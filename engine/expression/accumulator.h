// File: engine/expression/accumulator.h
//
// $group's accumulators: $sum, $avg, $min, $max, $first, $last, $push,
// $addToSet, $count, $mergeObjects, $stdDevPop and $stdDevSamp, with
// MongoDB's semantics:
//   - $sum ignores non-numbers (0 for a group without numbers); int32 sums
//     that overflow widen to int64, int64 sums that overflow become double.
//   - $avg ignores non-numbers; null for a group without numbers.
//   - $min and $max skip null, undefined and missing; null when nothing
//     else was seen.  They compare in MongoDB's BSON order.
//   - $first / $last keep the first / last input (missing gives null).
//   - $push and $addToSet skip missing inputs; $addToSet keeps one of each
//     value (1 and 1.0 are the same value) and answers them in BSON order.
//   - $mergeObjects skips null and missing; other non-documents are
//     Location40400.
//   - With a Decimal128 input, $sum and $avg answer a decimal: decimal
//     inputs add up in decimal, the others apart, and the totals meet at the
//     end (MongoDB's AccumulatorSum/Avg); $stdDev* read decimals as doubles
//     and answer a double, as MongoDB does.
//
// Partial state, for a $group that spills: SerializePartial() writes an
// accumulator's state as a self-contained Value; MergePartial() folds such
// a Value into another accumulator of the same operator.  Merging the
// partials of consecutive runs of the input, in input order, gives the
// result of processing the whole input in order ($first, $last and $push
// keep input order).
//
//   ASSIGN_OR_RETURN(AccumulationStatement s, AccumulationStatement::Parse("total", spec, &pc));
//   std::unique_ptr<Accumulator> acc = s.NewAccumulator();
//   for each document: ASSIGN_OR_RETURN(Value v, s.argument().Evaluate(ctx));
//                      RETURN_IF_ERROR(acc->Process(v));
//   ASSIGN_OR_RETURN(Value total, acc->Finalize());
//
// Thread safety: an Accumulator is used by one thread at a time.  An
// AccumulationStatement is immutable after Parse().
#ifndef GATEDB_ENGINE_EXPRESSION_ACCUMULATOR_H_
#define GATEDB_ENGINE_EXPRESSION_ACCUMULATOR_H_

#include <bson/bson.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/expression/expression.h"
#include "engine/expression/value.h"
#include "gatedb/status.h"

namespace gatedb {
namespace expression {

class Accumulator {
 public:
  virtual ~Accumulator();

  // The operator's name ("$sum").
  virtual const char* name() const = 0;

  // Adds one input (the argument evaluated for one document of the group;
  // missing is a valid input).  Values kept are copied (Value::Detached), so
  // the input need not outlive the call.  Errors: $sum/$avg of a decimal
  // (TypeMismatch), $mergeObjects of a non-document (Location40400).
  virtual Status Process(const Value& input) = 0;

  // The result for the inputs so far; the state is unchanged.  Errors:
  // BSONObjectTooLarge when a $push/$addToSet/$mergeObjects result exceeds
  // the document size limit.
  virtual StatusOr<Value> Finalize() const = 0;

  // Approximate heap bytes held: what $group counts against its memory
  // limit.
  virtual size_t MemoryUsage() const = 0;

  // The state as a self-contained Value (see the file comment).  Errors as
  // Finalize().
  virtual StatusOr<Value> SerializePartial() const = 0;

  // Folds in a Value that SerializePartial() of an accumulator of the same
  // operator produced.  Errors: InternalError for a malformed partial, and
  // Process()'s errors.
  virtual Status MergePartial(const Value& partial) = 0;
};

// A fresh accumulator for `op` ("$sum", "$count", ...).  Errors:
// Location15952 "unknown group operator '$foo'".
StatusOr<std::unique_ptr<Accumulator>> NewAccumulator(std::string_view op);

// One accumulator field of $group: `total: {$sum: "$qty"}`.
class AccumulationStatement {
 public:
  // Parses `spec`, the value of the $group field `field`, with `pc`'s
  // variables in scope.  Errors: Location40234 when `spec` is not a
  // document, Location40238 when it has more than one key, Location15952 for
  // an unknown operator, Location40237 for an array argument ("The $sum
  // accumulator is a unary operator"), TypeMismatch for a $count argument
  // other than {}, and the argument's parse errors.
  static StatusOr<AccumulationStatement> Parse(std::string_view field, const bson_value_t& spec,
                                                ParseContext* pc);

  AccumulationStatement(AccumulationStatement&&) = default;
  AccumulationStatement& operator=(AccumulationStatement&&) = default;

  const std::string& field() const { return field_; }
  // The accumulator ("$sum"; $count is {$sum: 1}).
  const char* op() const { return op_; }
  // What each document contributes.
  const Expression& argument() const { return *argument_; }

  std::unique_ptr<Accumulator> NewAccumulator() const;

  // Appends `field: {op: <argument>}` to `out`, as explain shows it.
  void Serialize(bson_t* out) const;

 private:
  AccumulationStatement(std::string field, const char* op, std::unique_ptr<Expression> argument)
      : field_(std::move(field)), op_(op), argument_(std::move(argument)) {}

  std::string field_;
  const char* op_;
  std::unique_ptr<Expression> argument_;
};

}  // namespace expression
}  // namespace gatedb

#endif  // GATEDB_ENGINE_EXPRESSION_ACCUMULATOR_H_
