#include "engine/expression/accumulator.h"

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/decimal/decimal128.h"
#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {

using internal::Err;
using internal::NumType;
using internal::NumTypeOf;

namespace {

Status MalformedPartial(const char* op) {
  return Status(ErrorCode::kInternalError, std::string("malformed partial state for ") + op);
}

// The field `name` of a document Value; missing when absent.
Value FieldOf(const Value& doc, std::string_view name) {
  Value out;
  if (!doc.is_document()) return out;
  ForEachField(doc, [&](std::string_view key, const Value& v) {
    if (key != name) return true;
    out = v;
    return false;
  });
  return out;
}

int64_t IntOf(const Value& v) { return v.type() == BSON_TYPE_INT32 ? v.int32() : v.int64(); }

// MongoDB's $sum and $avg keep decimals apart: decimal inputs add up in
// decimal, the others exactly (integers) or in long double; at the end the
// non-decimal total joins the decimal one (as its DoubleDoubleSummation's
// getDecimal: exact when integral, else Decimal128(double)).
class NumericTotal {
 public:
  void Add(const Value& v) {
    const NumType t = NumTypeOf(v);
    if (t > widest_) widest_ = t;
    if (t == NumType::kDecimal) {
      dec_ = decimal::Add(dec_, v.bson().value.v_decimal128).value;
    } else if (t == NumType::kDouble) {
      dsum_ += v.dbl();
    } else {
      AddInt(IntOf(v));
    }
  }
  NumType widest() const { return widest_; }
  // The total in the widest type seen (int32/int64 exact, double, decimal).
  Value Total() const {
    if (widest_ == NumType::kDecimal) return Value::Decimal(DecimalTotal());
    if (widest_ == NumType::kDouble || overflow_) return Value::Double(static_cast<double>(dsum_ + isum_));
    if (widest_ == NumType::kInt64) return Value::Int64(isum_);
    return internal::IntegerValue(isum_);
  }
  bson_decimal128_t DecimalTotal() const {
    const bson_decimal128_t rest = (dsum_ == 0 && !overflow_)
                                       ? decimal::FromInt64(isum_)
                                       : decimal::FromDouble(static_cast<double>(dsum_ + isum_));
    return decimal::Add(dec_, rest).value;
  }
  long double NonDecimal() const { return dsum_ + isum_; }

  void AppendPartial(ValueBuilder* b) const {
    b->Append("w", Value::Int32(static_cast<int32_t>(widest_)));
    b->Append("i", Value::Int64(isum_));
    b->Append("o", Value::Bool(overflow_));
    b->Append("d", Value::Double(static_cast<double>(dsum_)));
    b->Append("m", Value::Decimal(dec_));
  }
  // False when the partial is malformed.
  bool MergePartial(const Value& p) {
    const Value w = FieldOf(p, "w"), i = FieldOf(p, "i"), o = FieldOf(p, "o"), d = FieldOf(p, "d"),
                m = FieldOf(p, "m");
    if (w.type() != BSON_TYPE_INT32 || w.int32() < 0 || w.int32() > 3 || i.type() != BSON_TYPE_INT64 ||
        o.type() != BSON_TYPE_BOOL || d.type() != BSON_TYPE_DOUBLE || m.type() != BSON_TYPE_DECIMAL128) {
      return false;
    }
    const NumType t = static_cast<NumType>(w.int32());
    if (t > widest_) widest_ = t;
    if (o.boolean()) overflow_ = true;
    dsum_ += d.dbl();
    dec_ = decimal::Add(dec_, m.bson().value.v_decimal128).value;
    AddInt(i.int64());
    return true;
  }

 private:
  void AddInt(int64_t x) {
    const int64_t before = isum_;
    if (__builtin_add_overflow(before, x, &isum_)) {
      // From here on the integer total is a double.
      overflow_ = true;
      dsum_ += static_cast<long double>(before) + x;
      isum_ = 0;
    }
  }

  NumType widest_ = NumType::kInt32;
  int64_t isum_ = 0;       // exact integer part
  bool overflow_ = false;  // the integers overflowed int64 once
  long double dsum_ = 0;   // doubles, and integers past an overflow
  bson_decimal128_t dec_ = decimal::FromInt64(0);  // the decimal inputs
};

// ---------------------------------------------------------------------------
// $sum and $count

class SumAccumulator final : public Accumulator {
 public:
  const char* name() const override { return "$sum"; }

  Status Process(const Value& v) override {
    if (v.is_number()) total_.Add(v);
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override { return total_.Total(); }

  size_t MemoryUsage() const override { return sizeof(*this); }

  StatusOr<Value> SerializePartial() const override {
    ValueBuilder b(ValueBuilder::kDocument);
    total_.AppendPartial(&b);
    return b.Finish();
  }

  Status MergePartial(const Value& p) override {
    return total_.MergePartial(p) ? Status::OK() : MalformedPartial("$sum");
  }

 private:
  NumericTotal total_;
};

// ---------------------------------------------------------------------------
// $avg

class AvgAccumulator final : public Accumulator {
 public:
  const char* name() const override { return "$avg"; }

  Status Process(const Value& v) override {
    if (!v.is_number()) return Status::OK();
    total_.Add(v);
    ++count_;
    return Status::OK();
  }

  // A double, or with any decimal input a decimal (MongoDB's AccumulatorAvg).
  StatusOr<Value> Finalize() const override {
    if (count_ == 0) return Value::Null();
    if (total_.widest() == NumType::kDecimal) {
      return Value::Decimal(decimal::Divide(total_.DecimalTotal(), decimal::FromInt64(count_)).value);
    }
    return Value::Double(static_cast<double>(total_.NonDecimal() / count_));
  }

  size_t MemoryUsage() const override { return sizeof(*this); }

  StatusOr<Value> SerializePartial() const override {
    ValueBuilder b(ValueBuilder::kDocument);
    total_.AppendPartial(&b);
    b.Append("n", Value::Int64(count_));
    return b.Finish();
  }

  Status MergePartial(const Value& p) override {
    const Value n = FieldOf(p, "n");
    if (n.type() != BSON_TYPE_INT64 || !total_.MergePartial(p)) return MalformedPartial("$avg");
    count_ += n.int64();
    return Status::OK();
  }

 private:
  NumericTotal total_;
  int64_t count_ = 0;
};

// ---------------------------------------------------------------------------
// $min / $max

class MinMaxAccumulator final : public Accumulator {
 public:
  explicit MinMaxAccumulator(bool is_max) : is_max_(is_max) {}
  const char* name() const override { return is_max_ ? "$max" : "$min"; }

  Status Process(const Value& v) override {
    if (v.nullish()) return Status::OK();
    if (!has_) {
      best_ = v.Detached();
      has_ = true;
      return Status::OK();
    }
    const int c = CompareForExpression(v, best_);
    if (is_max_ ? c > 0 : c < 0) best_ = v.Detached();
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override { return has_ ? best_ : Value::Null(); }
  size_t MemoryUsage() const override { return sizeof(*this) + (has_ ? best_.ApproximateSize() : 0); }
  StatusOr<Value> SerializePartial() const override { return Finalize(); }
  Status MergePartial(const Value& p) override { return Process(p); }

 private:
  bool is_max_;
  bool has_ = false;
  Value best_;
};

// ---------------------------------------------------------------------------
// $first / $last

class FirstLastAccumulator final : public Accumulator {
 public:
  explicit FirstLastAccumulator(bool is_last) : is_last_(is_last) {}
  const char* name() const override { return is_last_ ? "$last" : "$first"; }

  Status Process(const Value& v) override {
    if (!has_ || is_last_) {
      value_ = v.Detached();
      has_ = true;
    }
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override { return value_.missing() ? Value::Null() : value_; }
  size_t MemoryUsage() const override { return sizeof(*this) + value_.ApproximateSize(); }

  // {h: <seen anything>, v: <value, absent when missing>}
  StatusOr<Value> SerializePartial() const override {
    ValueBuilder b(ValueBuilder::kDocument);
    b.Append("h", Value::Bool(has_));
    b.Append("v", value_);
    return b.Finish();
  }

  Status MergePartial(const Value& p) override {
    const Value h = FieldOf(p, "h");
    if (h.type() != BSON_TYPE_BOOL) return MalformedPartial(name());
    if (!h.boolean()) return Status::OK();
    return Process(FieldOf(p, "v"));
  }

 private:
  bool is_last_;
  bool has_ = false;
  Value value_;
};

// ---------------------------------------------------------------------------
// $push / $addToSet

class PushAccumulator final : public Accumulator {
 public:
  const char* name() const override { return "$push"; }

  Status Process(const Value& v) override {
    if (v.missing()) return Status::OK();
    items_.push_back(v.Detached());
    bytes_ += items_.back().ApproximateSize();
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override {
    ValueBuilder b(ValueBuilder::kArray);
    for (const Value& v : items_) b.Append(v);
    return b.Finish();
  }

  size_t MemoryUsage() const override { return sizeof(*this) + bytes_; }
  StatusOr<Value> SerializePartial() const override { return Finalize(); }

  Status MergePartial(const Value& p) override {
    if (!p.is_array()) return MalformedPartial("$push");
    Status s;
    ForEachField(p, [&](std::string_view, const Value& v) {
      s = Process(v);
      return s.ok();
    });
    return s;
  }

 private:
  std::vector<Value> items_;
  size_t bytes_ = 0;
};

struct ValueLess {
  bool operator()(const Value& a, const Value& b) const { return CompareForExpression(a, b) < 0; }
};

class AddToSetAccumulator final : public Accumulator {
 public:
  const char* name() const override { return "$addToSet"; }

  Status Process(const Value& v) override {
    if (v.missing()) return Status::OK();
    if (set_.count(v) != 0) return Status::OK();
    Value kept = v.Detached();
    bytes_ += kept.ApproximateSize() + 32;  // + the tree node
    set_.insert(std::move(kept));
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override {
    ValueBuilder b(ValueBuilder::kArray);
    for (const Value& v : set_) b.Append(v);
    return b.Finish();
  }

  size_t MemoryUsage() const override { return sizeof(*this) + bytes_; }
  StatusOr<Value> SerializePartial() const override { return Finalize(); }

  Status MergePartial(const Value& p) override {
    if (!p.is_array()) return MalformedPartial("$addToSet");
    Status s;
    ForEachField(p, [&](std::string_view, const Value& v) {
      s = Process(v);
      return s.ok();
    });
    return s;
  }

 private:
  std::set<Value, ValueLess> set_;
  size_t bytes_ = 0;
};

// ---------------------------------------------------------------------------
// $mergeObjects

class MergeObjectsAccumulator final : public Accumulator {
 public:
  const char* name() const override { return "$mergeObjects"; }

  Status Process(const Value& v) override {
    if (v.nullish()) return Status::OK();
    if (!v.is_document()) {
      return Err(40400, "$mergeObjects requires object inputs, but input " + v.ToString() + " is of type " +
                            TypeName(v));
    }
    ForEachField(v, [&](std::string_view key, const Value& field) {
      std::string k(key);
      auto it = index_.find(k);
      Value kept = field.Detached();
      bytes_ += kept.ApproximateSize();
      if (it == index_.end()) {
        index_.emplace(k, fields_.size());
        bytes_ += 2 * k.size() + 64;
        fields_.emplace_back(std::move(k), std::move(kept));
      } else {
        fields_[it->second].second = std::move(kept);
      }
      return true;
    });
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override {
    ValueBuilder b(ValueBuilder::kDocument);
    for (const auto& [k, v] : fields_) b.Append(k, v);
    return b.Finish();
  }

  size_t MemoryUsage() const override { return sizeof(*this) + bytes_; }
  StatusOr<Value> SerializePartial() const override { return Finalize(); }

  Status MergePartial(const Value& p) override {
    if (!p.is_document()) return MalformedPartial("$mergeObjects");
    return Process(p);
  }

 private:
  std::vector<std::pair<std::string, Value>> fields_;  // in first-seen order
  std::unordered_map<std::string, size_t> index_;
  size_t bytes_ = 0;
};

// ---------------------------------------------------------------------------
// $stdDevPop / $stdDevSamp (Welford's algorithm; partials merge with Chan's)

class StdDevAccumulator final : public Accumulator {
 public:
  explicit StdDevAccumulator(bool sample) : sample_(sample) {}
  const char* name() const override { return sample_ ? "$stdDevSamp" : "$stdDevPop"; }

  Status Process(const Value& v) override {
    if (!v.is_number()) return Status::OK();
    const double x = internal::ToDouble(v);
    ++count_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (x - mean_);
    return Status::OK();
  }

  StatusOr<Value> Finalize() const override {
    const int64_t min = sample_ ? 2 : 1;
    if (count_ < min) return Value::Null();
    return Value::Double(std::sqrt(m2_ / static_cast<double>(sample_ ? count_ - 1 : count_)));
  }

  size_t MemoryUsage() const override { return sizeof(*this); }

  StatusOr<Value> SerializePartial() const override {
    ValueBuilder b(ValueBuilder::kDocument);
    b.Append("n", Value::Int64(count_));
    b.Append("m", Value::Double(mean_));
    b.Append("q", Value::Double(m2_));
    return b.Finish();
  }

  Status MergePartial(const Value& p) override {
    const Value n = FieldOf(p, "n"), m = FieldOf(p, "m"), q = FieldOf(p, "q");
    if (n.type() != BSON_TYPE_INT64 || m.type() != BSON_TYPE_DOUBLE || q.type() != BSON_TYPE_DOUBLE) {
      return MalformedPartial(name());
    }
    if (n.int64() <= 0) return Status::OK();
    const double na = static_cast<double>(count_), nb = static_cast<double>(n.int64());
    const double delta = m.dbl() - mean_;
    const double total = na + nb;
    mean_ += delta * nb / total;
    m2_ += q.dbl() + delta * delta * na * nb / total;
    count_ += n.int64();
    return Status::OK();
  }

 private:
  bool sample_;
  int64_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;
};

}  // namespace

Accumulator::~Accumulator() = default;

StatusOr<std::unique_ptr<Accumulator>> NewAccumulator(std::string_view op) {
  if (op == "$sum" || op == "$count") return std::unique_ptr<Accumulator>(new SumAccumulator());
  if (op == "$avg") return std::unique_ptr<Accumulator>(new AvgAccumulator());
  if (op == "$min") return std::unique_ptr<Accumulator>(new MinMaxAccumulator(false));
  if (op == "$max") return std::unique_ptr<Accumulator>(new MinMaxAccumulator(true));
  if (op == "$first") return std::unique_ptr<Accumulator>(new FirstLastAccumulator(false));
  if (op == "$last") return std::unique_ptr<Accumulator>(new FirstLastAccumulator(true));
  if (op == "$push") return std::unique_ptr<Accumulator>(new PushAccumulator());
  if (op == "$addToSet") return std::unique_ptr<Accumulator>(new AddToSetAccumulator());
  if (op == "$mergeObjects") return std::unique_ptr<Accumulator>(new MergeObjectsAccumulator());
  if (op == "$stdDevPop") return std::unique_ptr<Accumulator>(new StdDevAccumulator(false));
  if (op == "$stdDevSamp") return std::unique_ptr<Accumulator>(new StdDevAccumulator(true));
  return Err(15952, "unknown group operator '" + std::string(op) + "'");
}

namespace {

// The canonical operator names (op() returns one of these).
const char* CanonicalName(std::string_view op) {
  static const char* const kNames[] = {"$sum",  "$avg",      "$min",          "$max",
                                       "$first", "$last",    "$push",         "$addToSet",
                                       "$mergeObjects", "$stdDevPop", "$stdDevSamp"};
  for (const char* n : kNames) {
    if (op == n) return n;
  }
  return nullptr;
}

}  // namespace

StatusOr<AccumulationStatement> AccumulationStatement::Parse(std::string_view field, const bson_value_t& spec,
                                                             ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40234, "The field '" + std::string(field) + "' must be an accumulator object");
  }
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len) ||
      !bson_iter_next(&it)) {
    return Err(40238, "The field '" + std::string(field) + "' must specify one accumulator");
  }
  const std::string op(bson_iter_key(&it), bson_iter_key_len(&it));
  const bson_value_t arg = *bson_iter_value(&it);
  if (bson_iter_next(&it)) {
    return Err(40238, "The field '" + std::string(field) + "' must specify one accumulator");
  }
  if (op == "$count") {
    if (arg.value_type != BSON_TYPE_DOCUMENT || arg.value.v_doc.data_len != 5) {
      return Status(ErrorCode::kTypeMismatch, "$count takes no arguments, i.e. $count:{}");
    }
    return AccumulationStatement(std::string(field), "$sum", internal::MakeConstant(Value::Int32(1)));
  }
  const char* name = CanonicalName(op);
  if (name == nullptr) return Err(15952, "unknown group operator '" + op + "'");
  if (arg.value_type == BSON_TYPE_ARRAY) return Err(40237, "The " + op + " accumulator is a unary operator");
  ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, ParseExpression(arg, pc));
  return AccumulationStatement(std::string(field), name, std::move(e));
}

std::unique_ptr<Accumulator> AccumulationStatement::NewAccumulator() const {
  StatusOr<std::unique_ptr<Accumulator>> acc = expression::NewAccumulator(op_);
  return acc.ok() ? std::move(acc).value() : nullptr;  // op_ is always a known name
}

void AccumulationStatement::Serialize(bson_t* out) const {
  bson_t sub;
  bson_append_document_begin(out, field_.data(), static_cast<int>(field_.size()), &sub);
  argument_->Serialize(&sub, op_);
  bson_append_document_end(out, &sub);
}

}  // namespace expression
}  // namespace gatedb
