// $inc $mul $bit, with MongoDB's SafeNum arithmetic: int32 results that
// overflow widen to int64; int64 overflow is an error; any double makes a
// double; any decimal makes a decimal (the other operand converted as
// MongoDB's Decimal128(double) does, to 15 significant digits; integers
// exactly), computed in the decimal128 context (engine/decimal).
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/update/update_internal.h"

namespace gatedb {
namespace update {
namespace internal {

namespace {

enum class Arith { kAdd, kMul };

double AsDouble(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return v.value.v_int32;
    case BSON_TYPE_INT64: return static_cast<double>(v.value.v_int64);
    case BSON_TYPE_DOUBLE: return v.value.v_double;
    default: return 0;
  }
}

bson_decimal128_t AsDecimal(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return decimal::FromInt64(v.value.v_int32);
    case BSON_TYPE_INT64: return decimal::FromInt64(v.value.v_int64);
    case BSON_TYPE_DOUBLE: return decimal::FromDouble(v.value.v_double);
    default: return v.value.v_decimal128;
  }
}

int64_t AsInt64(const bson_value_t& v) {
  return v.value_type == BSON_TYPE_INT32 ? v.value.v_int32 : v.value.v_int64;
}

// SafeNum::debugString.
std::string DebugNumber(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return "(NumberInt)" + FormatValue(v);
    case BSON_TYPE_INT64: return "(NumberLong)" + FormatValue(v);
    case BSON_TYPE_DOUBLE: return "(NumberDouble)" + FormatValue(v);
    case BSON_TYPE_DECIMAL128: return "(NumberDecimal)" + FormatValue(v);
    default: return "(EOO)";
  }
}

// a (op) b.  Sets *overflow when an int64 result does not fit.
Status Compute(Arith arith, const bson_value_t& a, const bson_value_t& b, bson_value_t* out, bool* overflow) {
  *overflow = false;
  if (a.value_type == BSON_TYPE_DECIMAL128 || b.value_type == BSON_TYPE_DECIMAL128) {
    const bson_decimal128_t x = AsDecimal(a), y = AsDecimal(b);
    const decimal::Result r = arith == Arith::kAdd ? decimal::Add(x, y) : decimal::Multiply(x, y);
    *out = bson_value_t{};
    out->value_type = BSON_TYPE_DECIMAL128;
    out->value.v_decimal128 = r.value;
    return Status::OK();
  }
  if (a.value_type == BSON_TYPE_DOUBLE || b.value_type == BSON_TYPE_DOUBLE) {
    double x = AsDouble(a), y = AsDouble(b);
    *out = DoubleValue(arith == Arith::kAdd ? x + y : x * y);
    return Status::OK();
  }
  if (a.value_type == BSON_TYPE_INT32 && b.value_type == BSON_TYPE_INT32) {
    int64_t x = a.value.v_int32, y = b.value.v_int32;
    int64_t r = arith == Arith::kAdd ? x + y : x * y;  // cannot overflow int64
    if (r >= std::numeric_limits<int32_t>::min() && r <= std::numeric_limits<int32_t>::max()) {
      *out = Int32Value(static_cast<int32_t>(r));
    } else {
      *out = Int64Value(r);
    }
    return Status::OK();
  }
  int64_t r = 0;
  bool over = arith == Arith::kAdd ? __builtin_add_overflow(AsInt64(a), AsInt64(b), &r)
                                   : __builtin_mul_overflow(AsInt64(a), AsInt64(b), &r);
  if (over) {
    *overflow = true;
    return Status::OK();
  }
  *out = Int64Value(r);
  return Status::OK();
}

bool IsIntegral(bson_type_t t) { return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64; }

bson_value_t ApplyBits(const Op& op, bson_value_t value) {
  for (const auto& [bit_op, operand] : op.bit_ops) {
    if (value.value_type == BSON_TYPE_INT32 && operand.value_type == BSON_TYPE_INT32) {
      uint32_t x = static_cast<uint32_t>(value.value.v_int32), y = static_cast<uint32_t>(operand.value.v_int32);
      uint32_t r = bit_op == BitOp::kAnd ? (x & y) : bit_op == BitOp::kOr ? (x | y) : (x ^ y);
      value = Int32Value(static_cast<int32_t>(r));
    } else {
      uint64_t x = static_cast<uint64_t>(AsInt64(value)), y = static_cast<uint64_t>(AsInt64(operand));
      uint64_t r = bit_op == BitOp::kAnd ? (x & y) : bit_op == BitOp::kOr ? (x | y) : (x ^ y);
      value = Int64Value(static_cast<int64_t>(r));
    }
  }
  return value;
}

Status ParseBit(Op* op) {
  const bson_value_t& v = op->operand;
  if (v.value_type != BSON_TYPE_DOCUMENT) {
    return Status(ErrorCode::kBadValue, std::string("The $bit modifier is not compatible with a ") +
                                            TypeName(v.value_type) +
                                            ". You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}");
  }
  bson_iter_t it;
  if (bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len)) {
    while (bson_iter_next(&it)) {
      std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
      const bson_value_t& operand = *bson_iter_value(&it);
      BitOp bit_op;
      if (key == "and") {
        bit_op = BitOp::kAnd;
      } else if (key == "or") {
        bit_op = BitOp::kOr;
      } else if (key == "xor") {
        bit_op = BitOp::kXor;
      } else {
        return Status(ErrorCode::kBadValue, "The $bit modifier only supports 'and', 'or', and 'xor', not '" +
                                                std::string(key) + "' which is an unknown operator: {" +
                                                FormatElement(key, operand) + "}");
      }
      if (!IsIntegral(operand.value_type)) {
        return Status(ErrorCode::kBadValue, std::string("The $bit modifier field must be an Integer(32/64 bit); a '") +
                                                TypeName(operand.value_type) + "' is not supported here: {" +
                                                FormatElement(key, operand) + "}");
      }
      op->bit_ops.emplace_back(bit_op, operand);
    }
  }
  if (op->bit_ops.empty()) {
    return Status(ErrorCode::kBadValue,
                  "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}");
  }
  return Status::OK();
}

}  // namespace

Status InitArithOp(Op* op) {
  if (op->type == OpType::kBit) return ParseBit(op);
  if (!IsNumberType(op->operand.value_type)) {
    return Status(ErrorCode::kTypeMismatch, std::string("Cannot ") +
                                                (op->type == OpType::kInc ? "increment" : "multiply") +
                                                " with non-numeric argument: {" +
                                                FormatElement(op->field_name, op->operand) + "}");
  }
  return Status::OK();
}

Status ApplyArithOp(const Op& op, ApplyState* st, Cursor* c) {
  MNode* e = c->node();
  bson_value_t current = st->ValueOf(e);
  if (op.type == OpType::kBit) {
    if (!IsIntegral(current.value_type)) {
      return Status(ErrorCode::kBadValue, "Cannot apply $bit to a value of non-integral type." +
                                              st->IdElementString() + " has the field " +
                                              std::string(c->path.back()) + " of non-integer type " +
                                              TypeName(current.value_type));
    }
    e->SetValue(ApplyBits(op, current), false);
    return Status::OK();
  }
  const char* modifier = OpName(op.type);
  if (!IsNumberType(current.value_type)) {
    return Status(ErrorCode::kTypeMismatch, std::string("Cannot apply ") + modifier +
                                                " to a value of non-numeric type. {" + st->IdElementString() +
                                                "} has the field '" + std::string(c->path.back()) +
                                                "' of non-numeric type " + TypeName(current.value_type));
  }
  bson_value_t result{};
  bool overflow = false;
  RETURN_IF_ERROR(Compute(op.type == OpType::kInc ? Arith::kAdd : Arith::kMul, op.operand, current, &result,
                          &overflow));
  if (overflow) {
    return Status(ErrorCode::kBadValue, std::string("Failed to apply ") + modifier +
                                            " operations to current value (" + DebugNumber(current) +
                                            ") for document {" + st->IdElementString() + "}");
  }
  e->SetValue(result, false);
  return Status::OK();
}

bool ArithResult(const Op& op, const bson_value_t& current, bson_value_t* result) {
  if (op.type == OpType::kBit || !IsNumberType(current.value_type)) return false;
  bool overflow = false;
  Status s = Compute(op.type == OpType::kInc ? Arith::kAdd : Arith::kMul, op.operand, current, result, &overflow);
  return s.ok() && !overflow;
}

StatusOr<MNode*> NewArithValue(const Op& op, ApplyState* st) {
  switch (op.type) {
    case OpType::kInc: return st->NewValueNode(op.operand);
    case OpType::kMul: {
      // The operand's type with value 0 (SafeNum: operand * int32 0).
      bson_value_t result{};
      bool overflow = false;
      RETURN_IF_ERROR(Compute(Arith::kMul, op.operand, Int32Value(0), &result, &overflow));
      return st->NewValueNode(result);
    }
    case OpType::kBit: return st->NewValueNode(ApplyBits(op, Int32Value(0)));
    default: break;
  }
  return Status(ErrorCode::kInternalError, std::string("not an arithmetic operator: ") + OpName(op.type));
}

}  // namespace internal
}  // namespace update
}  // namespace gatedb
