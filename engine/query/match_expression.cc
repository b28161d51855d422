#include "engine/query/match_expression.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"

namespace gatedb {
namespace query {

namespace {

const bson_value_t kMissing = {};  // value_type BSON_TYPE_EOD

bool KeyEquals(const bson_iter_t* it, const std::string& name) {
  return bson_iter_key_len(it) == name.size() &&
         std::memcmp(bson_iter_key(it), name.data(), name.size()) == 0;
}

bool FindField(bson_iter_t* it, const std::string& name) {
  while (bson_iter_next(it)) {
    if (KeyEquals(it, name)) return true;
  }
  return false;
}

bool InitIter(bson_iter_t* it, const bson_value_t& doc_or_array) {
  return bson_iter_init_from_data(it, doc_or_array.value.v_doc.data,
                                  doc_or_array.value.v_doc.data_len);
}

// Forwards to another sink with the offset of an enclosing array element,
// which takes precedence over offsets found deeper (MongoDB reports the
// outermost implicitly traversed array).
class OffsetSink final : public ElementSink {
 public:
  OffsetSink(ElementSink* inner, int64_t offset) : inner_(inner), offset_(offset) {}
  bool Yield(const bson_value_t& value, int64_t) override { return inner_->Yield(value, offset_); }

 private:
  ElementSink* inner_;
  int64_t offset_;
};

bool WalkFrom(const uint8_t* data, uint32_t len, const FieldPath& path, size_t start, bool leaf,
              ElementSink* sink);

// The array `arr` sits at path component `part`; continues the walk in it.
bool WalkArray(const bson_value_t& arr, const FieldPath& path, size_t part, bool leaf,
               ElementSink* sink) {
  const size_t n = path.parts.size();
  bson_iter_t ai;
  if (!InitIter(&ai, arr)) return false;
  if (part + 1 == n) {
    if (!leaf) return sink->Yield(arr, -1);
    for (int64_t i = 0; bson_iter_next(&ai); ++i) {
      if (sink->Yield(*bson_iter_value(&ai), i)) return true;
    }
    return sink->Yield(arr, -1);
  }
  const FieldPath::Part& next = path.parts[part + 1];
  const bool next_is_last = part + 2 == n;
  for (int64_t i = 0; bson_iter_next(&ai); ++i) {
    const bson_type_t type = bson_iter_type(&ai);
    const bool offset_match = next.is_index && KeyEquals(&ai, next.name);
    const bson_value_t* elem = bson_iter_value(&ai);
    if (type == BSON_TYPE_DOCUMENT) {
      // The rest of the path inside the element...
      OffsetSink with_offset(sink, i);
      if (WalkFrom(elem->value.v_doc.data, elem->value.v_doc.data_len, path, part + 1, leaf,
                   &with_offset)) {
        return true;
      }
      // ...and, for "a.0.b", the element addressed by position.
      if (offset_match) {
        if (next_is_last) {
          if (sink->Yield(*elem, -1)) return true;
        } else if (WalkFrom(elem->value.v_doc.data, elem->value.v_doc.data_len, path, part + 2,
                            leaf, sink)) {
          return true;
        }
      }
    } else if (offset_match) {
      if (next_is_last) {
        if (sink->Yield(*elem, -1)) return true;
      } else if (type == BSON_TYPE_ARRAY) {
        if (WalkArray(*elem, path, part + 1, leaf, sink)) return true;
      }
    }
  }
  return false;
}

bool WalkFrom(const uint8_t* data, uint32_t len, const FieldPath& path, size_t start, bool leaf,
              ElementSink* sink) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, data, len)) return sink->Yield(kMissing, -1);
  const size_t n = path.parts.size();
  size_t part = start;
  for (;;) {
    if (!FindField(&it, path.parts[part].name)) return sink->Yield(kMissing, -1);
    const bson_type_t type = bson_iter_type(&it);
    if (type == BSON_TYPE_ARRAY) break;
    if (part + 1 == n) return sink->Yield(*bson_iter_value(&it), -1);
    if (type != BSON_TYPE_DOCUMENT) return sink->Yield(kMissing, -1);
    bson_iter_t child;
    if (!bson_iter_recurse(&it, &child)) return sink->Yield(kMissing, -1);
    it = child;
    ++part;
  }
  return WalkArray(*bson_iter_value(&it), path, part, leaf, sink);
}

bool IsNaN(const bson_value_t& v) {
  if (v.value_type == BSON_TYPE_DOUBLE) return std::isnan(v.value.v_double);
  if (v.value_type == BSON_TYPE_DECIMAL128) {
    return (v.value.v_decimal128.high & 0x7C00000000000000ull) == 0x7C00000000000000ull;
  }
  return false;
}

// MongoDB's order; a strict weak order over all values.
struct ValueLess {
  bool operator()(const ValueRef& a, const ValueRef& b) const {
    return CompareValues(a.value, b.value) < 0;
  }
  bool operator()(const ValueRef& a, const bson_value_t& b) const {
    return CompareValues(a.value, b) < 0;
  }
  bool operator()(const bson_value_t& a, const ValueRef& b) const {
    return CompareValues(a, b.value) < 0;
  }
};

}  // namespace

FieldPath::FieldPath(std::string_view dotted_path) : dotted(dotted_path) {
  size_t start = 0;
  for (;;) {
    size_t dot = dotted_path.find('.', start);
    std::string_view piece = dotted_path.substr(start, dot == std::string_view::npos
                                                           ? std::string_view::npos
                                                           : dot - start);
    Part part;
    part.name = std::string(piece);
    part.is_index = !piece.empty() &&
                    std::all_of(piece.begin(), piece.end(), [](char c) { return c >= '0' && c <= '9'; });
    parts.push_back(std::move(part));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
}

bool WalkPath(const uint8_t* data, uint32_t len, const FieldPath& path,
              bool traverse_leaf_arrays, ElementSink* sink) {
  return WalkFrom(data, len, path, 0, traverse_leaf_arrays, sink);
}

MatchExpression::~MatchExpression() = default;

RootExpression::~RootExpression() {
  child_.reset();
  if (backing_ != nullptr) bson_destroy(backing_);
}

// ---- logical nodes ----

bool ListExpression::MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const {
  switch (kind()) {
    case ExprKind::kAnd:
      for (const ExprPtr& c : children_) {
        if (!c->MatchesDocument(data, len, elem_key)) return false;
      }
      return true;
    case ExprKind::kOr:
      for (const ExprPtr& c : children_) {
        if (c->MatchesDocument(data, len, elem_key)) return true;
      }
      return false;
    default:  // kNor
      for (const ExprPtr& c : children_) {
        if (c->MatchesDocument(data, len, nullptr)) return false;
      }
      return true;
  }
}

bool ListExpression::MatchesValue(const bson_value_t& value, int64_t* elem_key) const {
  switch (kind()) {
    case ExprKind::kAnd:
      for (const ExprPtr& c : children_) {
        if (!c->MatchesValue(value, elem_key)) return false;
      }
      return true;
    case ExprKind::kOr:
      for (const ExprPtr& c : children_) {
        if (c->MatchesValue(value, elem_key)) return true;
      }
      return false;
    default:  // kNor
      for (const ExprPtr& c : children_) {
        if (c->MatchesValue(value, nullptr)) return false;
      }
      return true;
  }
}

bool NotExpression::MatchesDocument(const uint8_t* data, uint32_t len, int64_t*) const {
  return !child_->MatchesDocument(data, len, nullptr);
}

bool NotExpression::MatchesValue(const bson_value_t& value, int64_t*) const {
  return !child_->MatchesValue(value, nullptr);
}

// ---- path nodes ----

namespace {

class LeafSink final : public ElementSink {
 public:
  LeafSink(const PathExpression* expr, int64_t* elem_key) : expr_(expr), elem_key_(elem_key) {}
  bool Yield(const bson_value_t& value, int64_t array_offset) override {
    if (!expr_->MatchesValue(value, elem_key_)) return false;
    if (elem_key_ != nullptr && array_offset >= 0) *elem_key_ = array_offset;
    return true;
  }

 private:
  const PathExpression* expr_;
  int64_t* elem_key_;
};

}  // namespace

bool PathExpression::MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const {
  LeafSink sink(this, elem_key);
  return WalkPath(data, len, path_, traverse_leaf_arrays_, &sink);
}

bool ComparisonExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  const bson_type_t lt = v.value_type;
  const bson_type_t rt = rhs_.value_type;
  if (lt != rt && CanonicalTypeRank(lt) != CanonicalTypeRank(rt)) {
    // Missing ranks with null (CanonicalTypeRank), so {$eq: null} matches a
    // missing field; undefined does not equal null (MongoDB 8.0).
    if (rt == BSON_TYPE_MAXKEY || rt == BSON_TYPE_MINKEY) {
      switch (kind()) {
        case ExprKind::kLt:
        case ExprKind::kLte: return rt == BSON_TYPE_MAXKEY;
        case ExprKind::kGt:
        case ExprKind::kGte: return rt == BSON_TYPE_MINKEY;
        default: return false;
      }
    }
    return false;
  }
  if (kind() == ExprKind::kEq) {
    if (lt == BSON_TYPE_UTF8 && rt == BSON_TYPE_UTF8) {
      return v.value.v_utf8.len == rhs_.value.v_utf8.len &&
             std::memcmp(v.value.v_utf8.str, rhs_.value.v_utf8.str, v.value.v_utf8.len) == 0;
    }
    return CompareValues(v, rhs_) == 0;
  }
  // NaN equals NaN but is neither less nor greater than anything.
  const bool lnan = IsNaN(v), rnan = IsNaN(rhs_);
  if (lnan || rnan) {
    const bool both = lnan && rnan;
    return (kind() == ExprKind::kLte || kind() == ExprKind::kGte) && both;
  }
  const int c = CompareValues(v, rhs_);
  switch (kind()) {
    case ExprKind::kLt: return c < 0;
    case ExprKind::kLte: return c <= 0;
    case ExprKind::kGt: return c > 0;
    case ExprKind::kGte: return c >= 0;
    default: return false;
  }
}

InExpression::InExpression(std::string_view path, std::vector<ValueRef> equalities,
                           std::vector<std::unique_ptr<RegexMatcher>> regexes)
    : PathExpression(ExprKind::kIn, path, true),
      equalities_(std::move(equalities)),
      regexes_(std::move(regexes)) {
  std::sort(equalities_.begin(), equalities_.end(), ValueLess());
  equalities_.erase(std::unique(equalities_.begin(), equalities_.end(),
                                [](const ValueRef& a, const ValueRef& b) {
                                  return CompareValues(a.value, b.value) == 0;
                                }),
                    equalities_.end());
  for (const ValueRef& v : equalities_) {
    if (v.value.value_type == BSON_TYPE_NULL) has_null_ = true;
  }
}

bool InExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  // With a null in the list, $in also matches a missing field, as {$eq: null}
  // does.
  if (has_null_ && v.value_type == BSON_TYPE_EOD) return true;
  if (!equalities_.empty() && v.value_type != BSON_TYPE_EOD &&
      std::binary_search(equalities_.begin(), equalities_.end(), v, ValueLess())) {
    return true;
  }
  for (const auto& re : regexes_) {
    if (RegexExpression::Matches(*re, v)) return true;
  }
  return false;
}

bool InExpression::MayFail() const {
  for (const auto& re : regexes_) {
    if (re->may_fail()) return true;
  }
  return false;
}

bool RegexExpression::Matches(const RegexMatcher& re, const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_UTF8:
      return ExprEvalScope::ValueOrRecord(re.Search(v.value.v_utf8.str, v.value.v_utf8.len));
    case BSON_TYPE_SYMBOL:
      return ExprEvalScope::ValueOrRecord(re.Search(v.value.v_symbol.symbol, v.value.v_symbol.len));
    case BSON_TYPE_REGEX:
      return re.pattern() == v.value.v_regex.regex &&
             re.flags() == (v.value.v_regex.options ? v.value.v_regex.options : "");
    default:
      return false;
  }
}

bool RegexExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  return Matches(*re_, v);
}

bool ExistsExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  return v.value_type != BSON_TYPE_EOD;
}

bool TypeExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  if (v.value_type == BSON_TYPE_EOD) return false;
  if (all_numbers_ && IsNumberType(v.value_type)) return true;
  return types_.test(static_cast<uint8_t>(v.value_type));
}

bool ModExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  int64_t dividend = 0;
  switch (v.value_type) {
    case BSON_TYPE_INT32:
      dividend = v.value.v_int32;
      break;
    case BSON_TYPE_INT64:
      dividend = v.value.v_int64;
      break;
    case BSON_TYPE_DECIMAL128: {
      // Truncated exactly (a long double would round 2^63 - 0.5 up).
      std::optional<int64_t> t = decimal::ToInt64Truncated(v.value.v_decimal128);
      if (!t) return false;
      dividend = *t;
      break;
    }
    case BSON_TYPE_DOUBLE: {
      long double d = NumberAsLongDouble(v);
      if (!std::isfinite(d)) return false;
      d = std::trunc(d);
      // Only values representable as a 64-bit integer can match.
      if (d < -9223372036854775808.0L || d >= 9223372036854775808.0L) return false;
      dividend = static_cast<int64_t>(d);
      break;
    }
    default:
      return false;
  }
  const int64_t r = divisor_ == -1 ? 0 : dividend % divisor_;
  return r == remainder_;
}

bool SizeExpression::MatchesValue(const bson_value_t& v, int64_t*) const {
  if (v.value_type != BSON_TYPE_ARRAY) return false;
  bson_iter_t it;
  if (!InitIter(&it, v)) return false;
  int64_t count = 0;
  while (bson_iter_next(&it)) {
    if (++count > size_) return false;
  }
  return count == size_;
}

bool ElemMatchObjectExpression::MatchesValue(const bson_value_t& v, int64_t* elem_key) const {
  if (v.value_type != BSON_TYPE_ARRAY) return false;
  bson_iter_t it;
  if (!InitIter(&it, v)) return false;
  for (int64_t i = 0; bson_iter_next(&it); ++i) {
    const bson_type_t t = bson_iter_type(&it);
    if (t != BSON_TYPE_DOCUMENT && t != BSON_TYPE_ARRAY) continue;
    const bson_value_t* elem = bson_iter_value(&it);
    if (sub_->MatchesDocument(elem->value.v_doc.data, elem->value.v_doc.data_len, nullptr)) {
      if (elem_key != nullptr) *elem_key = i;
      return true;
    }
  }
  return false;
}

bool ElemMatchValueExpression::MatchesValue(const bson_value_t& v, int64_t* elem_key) const {
  if (v.value_type != BSON_TYPE_ARRAY) return false;
  bson_iter_t it;
  if (!InitIter(&it, v)) return false;
  for (int64_t i = 0; bson_iter_next(&it); ++i) {
    const bson_value_t* elem = bson_iter_value(&it);
    bool all = true;
    for (const ExprPtr& sub : subs_) {
      if (!sub->MatchesValue(*elem, nullptr)) {
        all = false;
        break;
      }
    }
    if (all) {
      if (elem_key != nullptr) *elem_key = i;
      return true;
    }
  }
  return false;
}

namespace {
thread_local ExprEvalScope* tls_expr_scope = nullptr;
}  // namespace

ExprEvalScope::ExprEvalScope(expression::EvalContext* ctx, Status* error)
    : ctx_(ctx), error_(error), outer_(tls_expr_scope) {
  tls_expr_scope = this;
}

ExprEvalScope::~ExprEvalScope() { tls_expr_scope = outer_; }

ExprEvalScope* ExprEvalScope::Current() { return tls_expr_scope; }

bool ExprEvalScope::ValueOrRecord(const StatusOr<bool>& r) {
  if (r.ok()) return *r;
  if (tls_expr_scope != nullptr) tls_expr_scope->Record(r.status());
  return false;
}

bool ExprMatchExpression::MatchesDocument(const uint8_t* data, uint32_t len, int64_t*) const {
  bson_value_t doc = {};
  doc.value_type = BSON_TYPE_DOCUMENT;
  doc.value.v_doc.data = const_cast<uint8_t*>(data);
  doc.value.v_doc.data_len = len;
  ExprEvalScope* scope = ExprEvalScope::Current();
  StatusOr<expression::Value> v = [&]() -> StatusOr<expression::Value> {
    if (scope != nullptr && scope->ctx() != nullptr) {
      scope->ctx()->SetRoot(expression::Value::Borrow(doc));
      return expr_->Evaluate(*scope->ctx());
    }
    expression::EvalContext ctx;
    ctx.SetNow(now_ms_);
    ctx.SetRoot(expression::Value::Borrow(doc));
    return expr_->Evaluate(ctx);
  }();
  if (!v.ok()) {
    if (scope != nullptr) scope->Record(v.status());
    return false;
  }
  return expression::Truthy(*v);
}

}  // namespace query
}  // namespace gatedb
