// Array operators: $size $arrayElemAt $first $last $filter $map $reduce $in
// $slice $concatArrays $reverseArray $range $isArray $indexOfArray, the set
// operators ($setUnion $setIntersection $setDifference $setEquals
// $setIsSubset $allElementsTrue $anyElementTrue), $zip, $sortArray and
// $firstN $lastN $maxN $minN over arrays.
//
// Elements compare in aggregation's order (CompareForExpression): 1 and 1.0
// are the same set member.  Set results keep the order in which members
// first appear (MongoDB leaves it unspecified).
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

std::string T(const Value& v) { return TypeName(v); }

struct Less {
  bool operator()(const Value& a, const Value& b) const { return CompareForExpression(a, b) < 0; }
};
using ValueSet = std::set<Value, Less>;

std::vector<Value> ElementsOf(const Value& array) {
  std::vector<Value> out;
  Elements(array, &out);
  return out;
}

StatusOr<Value> ArrayOf(const std::vector<Value>& items) {
  ValueBuilder b(ValueBuilder::kArray);
  for (const Value& v : items) b.Append(v);
  return b.Finish();
}

// ---------------------------------------------------------------------------
// $size $arrayElemAt $first $last $isArray $in $concatArrays $reverseArray

StatusOr<Value> Size(const char*, const Value* a, size_t) {
  if (!a[0].is_array()) {
    return Err(17124, "The argument to $size must be an array. Type of the argument is: " + T(a[0]));
  }
  return IntegerValue(CountElements(a[0]));
}

// MongoDB's arrayElemAt, shared with $first and $last.
StatusOr<Value> ElemAt(const std::string& op, const Value& array, const Value& index) {
  if (array.nullish() || index.nullish()) return Value::Null();
  if (!array.is_array()) {
    return Err(28689, op + "'s first argument must be an array, but is " + T(array));
  }
  if (!index.is_number()) {
    return Err(28690, op + "'s second argument must be a numeric value, but is " + T(index));
  }
  int32_t i = 0;
  if (!ToInt32Exact(index, &i)) {
    return Err(28691, op + "'s second argument must be representable as a 32-bit integer: " + index.ToString());
  }
  const int64_t n = CountElements(array);
  const int64_t at = i < 0 ? n + i : i;
  if (at < 0 || at >= n) return Value();
  Value out;
  int64_t k = 0;
  ForEachField(array, [&](std::string_view, const Value& v) {
    if (k++ != at) return true;
    out = v;
    return false;
  });
  return out;
}

StatusOr<Value> ArrayElemAt(const char* name, const Value* a, size_t) { return ElemAt(name, a[0], a[1]); }

StatusOr<Value> FirstOrLast(const char* name, const Value& v, bool last) {
  if (v.nullish()) return Value::Null();
  if (!v.is_array()) return Err(28689, std::string(name) + "'s argument must be an array, but is " + T(v));
  return ElemAt(name, v, Value::Int32(last ? -1 : 0));
}
StatusOr<Value> First(const char* name, const Value* a, size_t) { return FirstOrLast(name, a[0], false); }
StatusOr<Value> Last(const char* name, const Value* a, size_t) { return FirstOrLast(name, a[0], true); }

StatusOr<Value> IsArray(const char*, const Value* a, size_t) { return Value::Bool(a[0].is_array()); }

StatusOr<Value> In(const char*, const Value* a, size_t) {
  if (!a[1].is_array()) return Err(40081, "$in requires an array as a second argument, found: " + T(a[1]));
  bool found = false;
  ForEachField(a[1], [&](std::string_view, const Value& v) {
    found = CompareForExpression(v, a[0]) == 0;
    return !found;
  });
  return Value::Bool(found);
}

StatusOr<Value> ConcatArrays(const char*, const Value* a, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i].nullish()) return Value::Null();
    if (!a[i].is_array()) return Err(28664, "$concatArrays only supports arrays, not " + T(a[i]));
  }
  ValueBuilder b(ValueBuilder::kArray);
  for (size_t i = 0; i < n; ++i) b.AppendElementsOf(a[i]);
  return b.Finish();
}

StatusOr<Value> ReverseArray(const char*, const Value* a, size_t) {
  if (a[0].nullish()) return Value::Null();
  if (!a[0].is_array()) {
    return Err(34435, "The argument to $reverseArray must be an array, but was of type: " + T(a[0]));
  }
  std::vector<Value> items = ElementsOf(a[0]);
  std::reverse(items.begin(), items.end());
  return ArrayOf(items);
}

// ---------------------------------------------------------------------------
// $slice

StatusOr<Value> Slice(const char*, const Value* a, size_t n) {
  const Value& array = a[0];
  if (array.nullish() || a[1].nullish()) return Value::Null();
  if (!array.is_array()) {
    return Err(28724, "First argument to $slice must be an array, but is of type: " + T(array));
  }
  if (!a[1].is_number()) {
    return Err(28725, "Second argument to $slice must be a numeric value, but is of type: " + T(a[1]));
  }
  int32_t arg2 = 0;
  if (!ToInt32Exact(a[1], &arg2)) {
    return Err(28726, "Second argument to $slice can't be represented as a 32-bit integer: " + a[1].ToString());
  }
  const std::vector<Value> items = ElementsOf(array);
  const int64_t size = static_cast<int64_t>(items.size());
  int64_t start = 0, end = 0;
  if (n == 2) {
    if (arg2 < 0) {
      start = std::max<int64_t>(0, size + arg2);
      end = size;
    } else {
      end = std::min<int64_t>(size, arg2);
    }
  } else {
    if (a[2].nullish()) return Value::Null();
    if (!a[2].is_number()) {
      return Err(28727, "Third argument to $slice must be numeric, but is of type: " + T(a[2]));
    }
    int32_t count = 0;
    if (!ToInt32Exact(a[2], &count)) {
      return Err(28728, "Third argument to $slice can't be represented as a 32-bit integer: " + a[2].ToString());
    }
    if (count <= 0) return Err(28729, "Third argument to $slice must be positive: " + a[2].ToString());
    start = arg2 >= 0 ? std::min<int64_t>(arg2, size) : std::max<int64_t>(0, size + arg2);
    end = std::min<int64_t>(size, start + count);
  }
  ValueBuilder b(ValueBuilder::kArray);
  for (int64_t i = start; i < end; ++i) b.Append(items[static_cast<size_t>(i)]);
  return b.Finish();
}

// ---------------------------------------------------------------------------
// $range

StatusOr<Value> Range(const char*, const Value* a, size_t n) {
  if (!a[0].is_number()) {
    return Err(34443, "$range requires a numeric starting value, found value of type: " + T(a[0]));
  }
  int32_t start = 0, end = 0, step = 1;
  if (!ToInt32Exact(a[0], &start)) {
    return Err(34444, "$range requires a starting value that can be represented as a 32-bit integer, found value: " +
                          a[0].ToString());
  }
  if (!a[1].is_number()) {
    return Err(34445, "$range requires a numeric ending value, found value of type: " + T(a[1]));
  }
  if (!ToInt32Exact(a[1], &end)) {
    return Err(34446, "$range requires an ending value that can be represented as a 32-bit integer, found value: " +
                          a[1].ToString());
  }
  if (n > 2) {
    if (!a[2].is_number()) {
      return Err(34447, "$range requires a numeric step value, found value of type: " + T(a[2]));
    }
    if (!ToInt32Exact(a[2], &step)) {
      return Err(34448, "$range requires a step value that can be represented as a 32-bit integer, found value: " +
                            a[2].ToString());
    }
    if (step == 0) return Err(34449, "$range requires a non-zero step value");
  }
  ValueBuilder b(ValueBuilder::kArray);
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) {
    b.Append(Value::Int32(static_cast<int32_t>(i)));
    if (b.full()) break;
  }
  return b.Finish();
}

// ---------------------------------------------------------------------------
// $indexOfArray

StatusOr<Value> IndexOfArray(const char*, const Value* a, size_t n) {
  if (a[0].nullish()) return Value::Null();
  if (!a[0].is_array()) {
    return Err(40090, "$indexOfArray requires an array as a first argument, found: " + T(a[0]));
  }
  const std::vector<Value> items = ElementsOf(a[0]);
  int64_t start = 0, end = static_cast<int64_t>(items.size());
  for (size_t i = 2; i < n; ++i) {
    const char* which = i == 2 ? "starting index" : "ending index";
    int32_t v = 0;
    if (!ToInt32Exact(a[i], &v)) {
      return Err(40096, std::string("$indexOfArray requires an integral ") + which + ", found a value of type: " +
                            T(a[i]) + ", with value: " + a[i].ToString());
    }
    if (v < 0) {
      return Err(40097, std::string("$indexOfArray requires a nonnegative ") + which + ", found: " +
                            std::to_string(v));
    }
    if (i == 2) {
      start = v;
    } else {
      end = std::min<int64_t>(end, v);
    }
  }
  for (int64_t i = start; i < end; ++i) {
    if (CompareForExpression(items[static_cast<size_t>(i)], a[1]) == 0) return IntegerValue(i);
  }
  return Value::Int32(-1);
}

// ---------------------------------------------------------------------------
// Set operators

// The distinct elements of `array`, in first-seen order.
std::vector<Value> Distinct(const Value& array, ValueSet* seen) {
  std::vector<Value> out;
  ForEachField(array, [&](std::string_view, const Value& v) {
    if (seen->insert(v).second) out.push_back(v);
    return true;
  });
  return out;
}

StatusOr<Value> SetUnion(const char*, const Value* a, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i].nullish()) return Value::Null();
    if (!a[i].is_array()) {
      return Err(17043, "All operands of $setUnion must be arrays. One argument is of type: " + T(a[i]));
    }
  }
  ValueSet seen;
  std::vector<Value> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<Value> part = Distinct(a[i], &seen);
    out.insert(out.end(), part.begin(), part.end());
  }
  return ArrayOf(out);
}

StatusOr<Value> SetIntersection(const char*, const Value* a, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i].nullish()) return Value::Null();
    if (!a[i].is_array()) {
      return Err(17047, "All operands of $setIntersection must be arrays. One argument is of type: " + T(a[i]));
    }
  }
  if (n == 0) return ArrayOf({});
  ValueSet seen;
  std::vector<Value> result = Distinct(a[0], &seen);
  for (size_t i = 1; i < n; ++i) {
    ValueSet other;
    Distinct(a[i], &other);
    result.erase(std::remove_if(result.begin(), result.end(), [&](const Value& v) { return other.count(v) == 0; }),
                 result.end());
  }
  return ArrayOf(result);
}

StatusOr<Value> SetDifference(const char*, const Value* a, size_t) {
  if (a[0].nullish() || a[1].nullish()) return Value::Null();
  if (!a[0].is_array()) {
    return Err(17048, "both operands of $setDifference must be arrays. First argument is of type: " + T(a[0]));
  }
  if (!a[1].is_array()) {
    return Err(17049, "both operands of $setDifference must be arrays. Second argument is of type: " + T(a[1]));
  }
  ValueSet seen, exclude;
  Distinct(a[1], &exclude);
  std::vector<Value> out;
  for (Value& v : Distinct(a[0], &seen)) {
    if (exclude.count(v) == 0) out.push_back(std::move(v));
  }
  return ArrayOf(out);
}

StatusOr<Value> SetEquals(const char*, const Value* a, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!a[i].is_array()) {
      return Err(17044, "All operands of $setEquals must be arrays. One argument is of type: " + T(a[i]));
    }
  }
  ValueSet first;
  Distinct(a[0], &first);
  for (size_t i = 1; i < n; ++i) {
    ValueSet other;
    Distinct(a[i], &other);
    if (other.size() != first.size()) return Value::Bool(false);
    for (const Value& v : other) {
      if (first.count(v) == 0) return Value::Bool(false);
    }
  }
  return Value::Bool(true);
}

StatusOr<ExprPtr> ParseSetEquals(const char* name, const bson_value_t& spec, ParseContext* pc) {
  ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(spec, pc));
  if (args.size() < 2) return Err(17045, "$setEquals needs at least two arguments had: " + std::to_string(args.size()));
  return ExprPtr(new NaryExpression(name, SetEquals, std::move(args)));
}

StatusOr<Value> SetIsSubset(const char*, const Value* a, size_t) {
  if (!a[0].is_array()) {
    return Err(17046, "both operands of $setIsSubset must be arrays. First argument is of type: " + T(a[0]));
  }
  if (!a[1].is_array()) {
    return Err(17042, "both operands of $setIsSubset must be arrays. Second argument is of type: " + T(a[1]));
  }
  ValueSet super, sub;
  Distinct(a[1], &super);
  Distinct(a[0], &sub);
  for (const Value& v : sub) {
    if (super.count(v) == 0) return Value::Bool(false);
  }
  return Value::Bool(true);
}

StatusOr<Value> AllElementsTrue(const char*, const Value* a, size_t) {
  if (!a[0].is_array()) {
    return Err(17040, "$allElementsTrue's argument must be an array, but is " + T(a[0]));
  }
  bool all = true;
  ForEachField(a[0], [&](std::string_view, const Value& v) {
    all = Truthy(v);
    return all;
  });
  return Value::Bool(all);
}

StatusOr<Value> AnyElementTrue(const char*, const Value* a, size_t) {
  if (!a[0].is_array()) {
    return Err(17041, "$anyElementTrue's argument must be an array, but is " + T(a[0]));
  }
  bool any = false;
  ForEachField(a[0], [&](std::string_view, const Value& v) {
    any = Truthy(v);
    return !any;
  });
  return Value::Bool(any);
}

// ---------------------------------------------------------------------------
// $map $filter $reduce: they bind variables for their inner expression.

class MapExpression final : public Expression {
 public:
  MapExpression(ExprPtr input, std::string as, VariableId var, ExprPtr in)
      : input_(std::move(input)), as_(std::move(as)), var_(var), in_(std::move(in)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_array()) return Err(16883, "input to $map must be an array not " + T(input));
    Value slot;
    EvalContext inner(ctx, var_, &slot, 1);
    ValueBuilder b(ValueBuilder::kArray);
    Status failed;
    ForEachField(input, [&](std::string_view, const Value& elem) {
      slot = elem;
      StatusOr<Value> r = in_->Evaluate(inner);
      if (!r.ok()) {
        failed = r.status();
        return false;
      }
      b.Append(r->missing() ? Value::Null() : *r);
      return !b.full();
    });
    RETURN_IF_ERROR(failed);
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$map");
    s.Add("input", input_.get());
    bson_append_utf8(s.args(), "as", -1, as_.data(), static_cast<int>(as_.size()));
    s.Add("in", in_.get());
  }

 private:
  ExprPtr input_;
  std::string as_;
  VariableId var_;
  ExprPtr in_;
};

// Reads `as` (default "this") and parses the argument `inner` with that
// variable bound.
Status ParseWithVariable(const NamedArgs& args, const char* inner, ParseContext* pc, std::string* as,
                         VariableId* var, ExprPtr* parsed) {
  *as = "this";
  if (const bson_value_t* v = args.Get("as")) {
    if (v->value_type != BSON_TYPE_UTF8) {
      return Status(ErrorCode::kFailedToParse, "'as' must be a string, found: " + std::string(BsonTypeNameOf(*v)));
    }
    *as = std::string(v->value.v_utf8.str, v->value.v_utf8.len);
  }
  ASSIGN_OR_RETURN(*var, ParserAccess::PushVariable(pc, *as));
  StatusOr<ExprPtr> e = args.Parse(inner, pc);
  ParserAccess::PopVariables(pc, 1);
  if (!e.ok()) return e.status();
  *parsed = std::move(e).value();
  return Status::OK();
}

StatusOr<ExprPtr> ParseMap(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(16878, "$map only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "as", "in"}, 16879, "Unrecognized parameter to $map: "));
  if (!args.Has("input")) return Err(16880, "Missing 'input' parameter to $map");
  if (!args.Has("in")) return Err(16882, "Missing 'in' parameter to $map");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  std::string as;
  VariableId var = 0;
  ExprPtr in;
  RETURN_IF_ERROR(ParseWithVariable(args, "in", pc, &as, &var, &in));
  return ExprPtr(new MapExpression(std::move(input), std::move(as), var, std::move(in)));
}

class FilterExpression final : public Expression {
 public:
  FilterExpression(ExprPtr input, std::string as, VariableId var, ExprPtr cond, ExprPtr limit)
      : input_(std::move(input)), as_(std::move(as)), var_(var), cond_(std::move(cond)), limit_(std::move(limit)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_array()) return Err(28651, "input to $filter must be an array not " + T(input));
    int64_t limit = -1;
    if (limit_ != nullptr) {
      ASSIGN_OR_RETURN(Value l, limit_->Evaluate(ctx));
      if (!l.nullish()) {
        int32_t n = 0;
        if (!ToInt32Exact(l, &n)) {
          return Err(327391, "$filter: limit must be represented as a 32-bit integral value: " + l.ToString());
        }
        if (n < 1) return Err(327392, "$filter: limit must be greater than 0: " + l.ToString());
        limit = n;
      }
    }
    Value slot;
    EvalContext inner(ctx, var_, &slot, 1);
    ValueBuilder b(ValueBuilder::kArray);
    Status failed;
    ForEachField(input, [&](std::string_view, const Value& elem) {
      slot = elem;
      StatusOr<Value> c = cond_->Evaluate(inner);
      if (!c.ok()) {
        failed = c.status();
        return false;
      }
      if (Truthy(*c)) b.Append(elem);
      return limit < 0 || b.count() < static_cast<uint32_t>(limit);
    });
    RETURN_IF_ERROR(failed);
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$filter");
    s.Add("input", input_.get());
    bson_append_utf8(s.args(), "as", -1, as_.data(), static_cast<int>(as_.size()));
    s.Add("cond", cond_.get());
    s.Add("limit", limit_.get());
  }

 private:
  ExprPtr input_;
  std::string as_;
  VariableId var_;
  ExprPtr cond_, limit_;
};

StatusOr<ExprPtr> ParseFilter(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(28646, "$filter only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "as", "cond", "limit"}, 28647,
                                                   "Unrecognized parameter to $filter: "));
  if (!args.Has("input")) return Err(28648, "Missing 'input' parameter to $filter");
  if (!args.Has("cond")) return Err(28650, "Missing 'cond' parameter to $filter");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr limit, args.Parse("limit", pc));
  std::string as;
  VariableId var = 0;
  ExprPtr cond;
  RETURN_IF_ERROR(ParseWithVariable(args, "cond", pc, &as, &var, &cond));
  return ExprPtr(new FilterExpression(std::move(input), std::move(as), var, std::move(cond), std::move(limit)));
}

class ReduceExpression final : public Expression {
 public:
  ReduceExpression(ExprPtr input, ExprPtr initial, VariableId first, ExprPtr in)
      : input_(std::move(input)), initial_(std::move(initial)), first_(first), in_(std::move(in)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_array()) return Err(40080, "$reduce requires that 'input' be an array, found: " + input.ToString());
    Value slots[2];  // $$value, $$this
    ASSIGN_OR_RETURN(slots[0], initial_->Evaluate(ctx));
    EvalContext inner(ctx, first_, slots, 2);
    Status failed;
    ForEachField(input, [&](std::string_view, const Value& elem) {
      slots[1] = elem;
      StatusOr<Value> r = in_->Evaluate(inner);
      if (!r.ok()) {
        failed = r.status();
        return false;
      }
      slots[0] = std::move(r).value();
      return true;
    });
    RETURN_IF_ERROR(failed);
    return slots[0];
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$reduce");
    s.Add("input", input_.get());
    s.Add("initialValue", initial_.get());
    s.Add("in", in_.get());
  }

 private:
  ExprPtr input_, initial_;
  VariableId first_;  // $$value; $$this is first_ + 1
  ExprPtr in_;
};

StatusOr<ExprPtr> ParseReduce(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40075, "$reduce requires an object as an argument, found: " + std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "initialValue", "in"}, 40076,
                                                   "$reduce found an unknown argument: "));
  if (!args.Has("input")) return Err(40077, "$reduce requires 'input' to be specified");
  if (!args.Has("initialValue")) return Err(40078, "$reduce requires 'initialValue' to be specified");
  if (!args.Has("in")) return Err(40079, "$reduce requires 'in' to be specified");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr initial, args.Parse("initialValue", pc));
  ASSIGN_OR_RETURN(VariableId first, ParserAccess::PushVariable(pc, "value"));
  StatusOr<VariableId> this_id = ParserAccess::PushVariable(pc, "this");
  StatusOr<ExprPtr> in = this_id.ok() ? args.Parse("in", pc) : StatusOr<ExprPtr>(this_id.status());
  ParserAccess::PopVariables(pc, 2);
  if (!in.ok()) return in.status();
  return ExprPtr(new ReduceExpression(std::move(input), std::move(initial), first, std::move(in).value()));
}

// ---------------------------------------------------------------------------
// $zip

class ZipExpression final : public Expression {
 public:
  ZipExpression(std::vector<ExprPtr> inputs, std::vector<ExprPtr> defaults, bool longest)
      : inputs_(std::move(inputs)), defaults_(std::move(defaults)), longest_(longest) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    std::vector<std::vector<Value>> arrays;
    size_t min_len = SIZE_MAX, max_len = 0;
    for (const ExprPtr& e : inputs_) {
      ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
      if (v.nullish()) return Value::Null();
      if (!v.is_array()) return Err(34468, "$zip found a non-array expression in input: " + v.ToString());
      arrays.push_back(ElementsOf(v));
      min_len = std::min(min_len, arrays.back().size());
      max_len = std::max(max_len, arrays.back().size());
    }
    std::vector<Value> defaults(arrays.size(), Value::Null());
    for (size_t i = 0; i < defaults_.size() && i < defaults.size(); ++i) {
      ASSIGN_OR_RETURN(defaults[i], defaults_[i]->Evaluate(ctx));
    }
    const size_t rows = longest_ ? max_len : min_len;
    ValueBuilder out(ValueBuilder::kArray);
    for (size_t r = 0; r < rows; ++r) {
      ValueBuilder row(ValueBuilder::kArray);
      for (size_t i = 0; i < arrays.size(); ++i) {
        const Value& v = r < arrays[i].size() ? arrays[i][r] : defaults[i];
        row.Append(v.missing() ? Value::Null() : v);
      }
      ASSIGN_OR_RETURN(Value rv, row.Finish());
      out.Append(rv);
    }
    return out.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$zip");
    auto array = [&](const char* field, const std::vector<ExprPtr>& v) {
      bson_t arr;
      bson_append_array_begin(s.args(), field, -1, &arr);
      for (size_t i = 0; i < v.size(); ++i) v[i]->Serialize(&arr, std::to_string(i));
      bson_append_array_end(s.args(), &arr);
    };
    array("inputs", inputs_);
    bson_append_bool(s.args(), "useLongestLength", -1, longest_);
    if (!defaults_.empty()) array("defaults", defaults_);
  }

 private:
  std::vector<ExprPtr> inputs_, defaults_;
  bool longest_;
};

StatusOr<ExprPtr> ParseZip(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(34460, "$zip only supports an object as an argument, found " + std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"inputs", "defaults", "useLongestLength"}, 34464,
                                                   "$zip found an unknown argument: "));
  std::vector<ExprPtr> inputs, defaults;
  bool longest = false;
  if (const bson_value_t* v = args.Get("inputs")) {
    if (v->value_type != BSON_TYPE_ARRAY) {
      return Err(34461, "inputs must be an array of expressions, found " + std::string(BsonTypeNameOf(*v)));
    }
    ASSIGN_OR_RETURN(inputs, ParseArgs(*v, pc));
  }
  if (const bson_value_t* v = args.Get("defaults")) {
    if (v->value_type != BSON_TYPE_ARRAY) {
      return Err(34462, "defaults must be an array of expressions, found " + std::string(BsonTypeNameOf(*v)));
    }
    ASSIGN_OR_RETURN(defaults, ParseArgs(*v, pc));
  }
  if (const bson_value_t* v = args.Get("useLongestLength")) {
    if (v->value_type != BSON_TYPE_BOOL) {
      return Err(34463, "useLongestLength must be a bool, found " + std::string(BsonTypeNameOf(*v)));
    }
    longest = v->value.v_bool;
  }
  if (inputs.empty()) return Err(34465, "$zip requires at least one input array");
  if (!defaults.empty() && !longest) return Err(34466, "cannot specify defaults unless useLongestLength is true");
  if (!defaults.empty() && defaults.size() != inputs.size()) {
    return Err(34467, "defaults and inputs must have the same length");
  }
  return ExprPtr(new ZipExpression(std::move(inputs), std::move(defaults), longest));
}

// ---------------------------------------------------------------------------
// $sortArray

// The value at a dotted path of a document (arrays are not traversed);
// missing when absent.
Value ValueAtPath(const Value& v, const std::vector<std::string>& path) {
  Value cur = v;
  for (const std::string& part : path) {
    if (!cur.is_document()) return Value();
    Value next;
    ForEachField(cur, [&](std::string_view key, const Value& field) {
      if (key != part) return true;
      next = field;
      return false;
    });
    cur = next;
    if (cur.missing()) return cur;
  }
  return cur;
}

class SortArrayExpression final : public Expression {
 public:
  // An empty `keys` sorts by the whole value in direction `whole_dir`.
  SortArrayExpression(ExprPtr input, Value sort_by, int whole_dir,
                      std::vector<std::pair<std::vector<std::string>, int>> keys)
      : input_(std::move(input)), sort_by_(std::move(sort_by)), whole_dir_(whole_dir), keys_(std::move(keys)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_array()) {
      return Err(2942504, "The input argument to $sortArray must be an array, but was of type: " + T(input));
    }
    std::vector<Value> items = ElementsOf(input);
    std::stable_sort(items.begin(), items.end(), [this](const Value& a, const Value& b) {
      if (keys_.empty()) return whole_dir_ * CompareForExpression(a, b) < 0;
      for (const auto& [path, dir] : keys_) {
        Value x = ValueAtPath(a, path), y = ValueAtPath(b, path);
        // Sorting treats missing as null.
        if (x.missing()) x = Value::Null();
        if (y.missing()) y = Value::Null();
        const int c = CompareForExpression(x, y);
        if (c != 0) return dir * c < 0;
      }
      return false;
    });
    return ArrayOf(items);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$sortArray");
    s.Add("input", input_.get());
    s.AddValue("sortBy", sort_by_);
  }

 private:
  ExprPtr input_;
  Value sort_by_;
  int whole_dir_;
  std::vector<std::pair<std::vector<std::string>, int>> keys_;
};

bool SortDirection(const bson_value_t& v, int* dir) {
  int64_t n = 0;
  if (!ToInt64Exact(Value::Borrow(v), &n) || (n != 1 && n != -1)) return false;
  *dir = static_cast<int>(n);
  return true;
}

StatusOr<ExprPtr> ParseSortArray(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(2942500, "$sortArray requires an object as an argument, found: " + std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "sortBy"}, 2942501,
                                                   "$sortArray found an unknown argument: "));
  if (!args.Has("input")) return Err(2942502, "$sortArray requires 'input' to be specified");
  const bson_value_t* by = args.Get("sortBy");
  if (by == nullptr) return Err(2942503, "$sortArray requires 'sortBy' to be specified");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  int whole_dir = 1;
  std::vector<std::pair<std::vector<std::string>, int>> keys;
  if (by->value_type == BSON_TYPE_DOCUMENT) {
    bson_iter_t it;
    bson_iter_init_from_data(&it, by->value.v_doc.data, by->value.v_doc.data_len);
    while (bson_iter_next(&it)) {
      int dir = 0;
      if (!SortDirection(*bson_iter_value(&it), &dir)) {
        return Err(2942505, "$sortArray: the sort direction of a field must be 1 or -1");
      }
      std::vector<std::string> path;
      std::string_view dotted(bson_iter_key(&it), bson_iter_key_len(&it));
      size_t start = 0;
      while (true) {
        const size_t dot = dotted.find('.', start);
        path.emplace_back(dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
      }
      keys.emplace_back(std::move(path), dir);
    }
    if (keys.empty()) return Err(2942505, "$sortArray: sortBy must not be an empty document");
  } else if (by->value_type == BSON_TYPE_INT32 || by->value_type == BSON_TYPE_INT64 ||
             by->value_type == BSON_TYPE_DOUBLE || by->value_type == BSON_TYPE_DECIMAL128) {
    if (!SortDirection(*by, &whole_dir)) return Err(2942506, "$sortArray: sortBy must be 1 or -1");
  } else {
    return Err(2942507, "$sortArray: sortBy must be a number or a document, found: " + std::string(BsonTypeNameOf(*by)));
  }
  return ExprPtr(new SortArrayExpression(std::move(input), Value::Copy(*by), whole_dir, std::move(keys)));
}

// ---------------------------------------------------------------------------
// $firstN $lastN $maxN $minN over an array: {n: <expr>, input: <expr>}

enum class NKind { kFirst, kLast, kMax, kMin };

class NExpression final : public Expression {
 public:
  NExpression(const char* name, NKind kind, ExprPtr n, ExprPtr input)
      : name_(name), kind_(kind), n_(std::move(n)), input_(std::move(input)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value nv, n_->Evaluate(ctx));
    int64_t n = 0;
    if (!ToInt64Exact(nv, &n)) {
      return Err(5787902, std::string("Value for 'n' must be of integral type, but found ") + nv.ToString());
    }
    if (n < 1) return Err(5787908, std::string("'n' must be greater than 0, found ") + nv.ToString());
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (!input.is_array()) {
      return Err(5788200, std::string("Input to ") + name_ + " must be an array, but found " + T(input));
    }
    std::vector<Value> items = ElementsOf(input);
    if (kind_ == NKind::kMax || kind_ == NKind::kMin) {
      items.erase(std::remove_if(items.begin(), items.end(), [](const Value& v) { return v.nullish(); }), items.end());
      std::stable_sort(items.begin(), items.end(), [this](const Value& a, const Value& b) {
        const int c = CompareForExpression(a, b);
        return kind_ == NKind::kMax ? c > 0 : c < 0;
      });
    }
    const size_t count = std::min<size_t>(items.size(), static_cast<size_t>(std::min<int64_t>(n, INT32_MAX)));
    ValueBuilder b(ValueBuilder::kArray);
    const size_t begin = kind_ == NKind::kLast ? items.size() - count : 0;
    for (size_t i = begin; i < begin + count; ++i) b.Append(items[i]);
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("n", n_.get());
    s.Add("input", input_.get());
  }

 private:
  const char* name_;
  NKind kind_;
  ExprPtr n_, input_;
};

StatusOr<ExprPtr> ParseN(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(5787801, op + " requires an object as an argument, found: " + std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"n", "input"}, 5787901, "Unknown argument to " + op + ": "));
  if (!args.Has("n")) return Err(5787906, "Missing value for 'n'");
  if (!args.Has("input")) return Err(5787907, "Missing value for 'input'");
  ASSIGN_OR_RETURN(ExprPtr n, args.Parse("n", pc));
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  const NKind kind = op == "$firstN" ? NKind::kFirst
                                     : (op == "$lastN" ? NKind::kLast : (op == "$maxN" ? NKind::kMax : NKind::kMin));
  return ExprPtr(new NExpression(name, kind, std::move(n), std::move(input)));
}

}  // namespace

void AddArrayOperators(std::vector<OperatorDef>* ops) {
  ops->push_back(OperatorDef{"$size", Size, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$arrayElemAt", ArrayElemAt, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$first", First, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$last", Last, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$isArray", IsArray, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$in", In, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$concatArrays", ConcatArrays, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$reverseArray", ReverseArray, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$slice", Slice, 2, 3, nullptr});
  ops->push_back(OperatorDef{"$range", Range, 2, 3, nullptr});
  ops->push_back(OperatorDef{"$indexOfArray", IndexOfArray, 2, 4, nullptr});
  ops->push_back(OperatorDef{"$setUnion", SetUnion, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$setIntersection", SetIntersection, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$setDifference", SetDifference, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$setEquals", nullptr, 0, 0, ParseSetEquals});
  ops->push_back(OperatorDef{"$setIsSubset", SetIsSubset, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$allElementsTrue", AllElementsTrue, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$anyElementTrue", AnyElementTrue, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$map", nullptr, 0, 0, ParseMap});
  ops->push_back(OperatorDef{"$filter", nullptr, 0, 0, ParseFilter});
  ops->push_back(OperatorDef{"$reduce", nullptr, 0, 0, ParseReduce});
  ops->push_back(OperatorDef{"$zip", nullptr, 0, 0, ParseZip});
  ops->push_back(OperatorDef{"$sortArray", nullptr, 0, 0, ParseSortArray});
  for (const char* n : {"$firstN", "$lastN", "$maxN", "$minN"}) ops->push_back(OperatorDef{n, nullptr, 0, 0, ParseN});
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
