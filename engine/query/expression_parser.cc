#include "engine/query/expression_parser.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"

namespace gatedb {
namespace query {

namespace {

// One element of a document or array in the filter.  `value` is shallow: it
// points into the filter's bytes.
struct Elem {
  std::string_view key;
  bson_value_t value;
};

class ElemIter {
 public:
  explicit ElemIter(const bson_value_t& doc_or_array)
      : ok_(bson_iter_init_from_data(&it_, doc_or_array.value.v_doc.data,
                                     doc_or_array.value.v_doc.data_len)) {}
  bool Next(Elem* e) {
    if (!ok_ || !bson_iter_next(&it_)) return false;
    e->key = std::string_view(bson_iter_key(&it_), bson_iter_key_len(&it_));
    e->value = *bson_iter_value(&it_);
    return true;
  }

 private:
  bson_iter_t it_;
  bool ok_;
};

Status BadValue(std::string msg) { return Status(ErrorCode::kBadValue, std::move(msg)); }

Status TooDeep() {
  return BadValue("filter exceeds the maximum nesting depth of " + std::to_string(kMaxFilterDepth));
}

bool IsDocument(const bson_value_t& v) { return v.value_type == BSON_TYPE_DOCUMENT; }
bool IsArray(const bson_value_t& v) { return v.value_type == BSON_TYPE_ARRAY; }

// The first key of a document value; empty when it has none.
std::string_view FirstKey(const bson_value_t& doc) {
  ElemIter it(doc);
  Elem e;
  return it.Next(&e) ? e.key : std::string_view();
}

bool IsDBRefDocument(const bson_value_t& doc, bool allow_incomplete) {
  bool has_ref = false, has_id = false, has_db = false;
  ElemIter it(doc);
  Elem e;
  while (!(has_ref && has_id) && it.Next(&e)) {
    if (e.key == "$ref") {
      has_ref = true;
    } else if (e.key == "$id") {
      has_id = true;
    } else if (e.key == "$db") {
      has_db = true;
    }
  }
  return allow_incomplete ? (has_ref || has_id || has_db) : (has_ref && has_id);
}

// MongoDB's isExpressionDocument: a non-empty document whose FIRST key
// starts with '$' and that is not a DBRef.  {a: {b: 1, $gt: 2}} is thus a
// literal, while {a: {$gt: 2, b: 1}} is an operator document with an
// unknown operator "b".
bool IsExpressionDocument(const bson_value_t& v, bool allow_incomplete_dbref) {
  if (!IsDocument(v)) return false;
  std::string_view first = FirstKey(v);
  if (first.empty() || first[0] != '$') return false;
  return !IsDBRefDocument(v, allow_incomplete_dbref);
}

// Operators that take no path (they appear at the top level of a filter).
bool IsPathlessOperator(std::string_view name) {
  static const char* const kNames[] = {"and",  "or",         "nor",        "comment",
                                       "expr", "where",      "text",       "db",
                                       "id",   "ref",        "jsonSchema", "alwaysTrue",
                                       "alwaysFalse", "sampleRate"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

enum class Op {
  kUnknown,
  kUnsupported,  // a MongoDB operator gatedb does not implement
  kNot,
  kEq,
  kNe,
  kLt,
  kLte,
  kGt,
  kGte,
  kIn,
  kNin,
  kExists,
  kType,
  kMod,
  kRegex,
  kOptions,
  kElemMatch,
  kAll,
  kSize,
};

Op LookupOp(std::string_view key) {
  static const std::pair<const char*, Op> kOps[] = {
      {"$eq", Op::kEq},
      {"$ne", Op::kNe},
      {"$lt", Op::kLt},
      {"$lte", Op::kLte},
      {"$gt", Op::kGt},
      {"$gte", Op::kGte},
      {"$in", Op::kIn},
      {"$nin", Op::kNin},
      {"$exists", Op::kExists},
      {"$type", Op::kType},
      {"$mod", Op::kMod},
      {"$regex", Op::kRegex},
      {"$options", Op::kOptions},
      {"$elemMatch", Op::kElemMatch},
      {"$all", Op::kAll},
      {"$size", Op::kSize},
      {"$not", Op::kNot},
      {"$bitsAllSet", Op::kUnsupported},
      {"$bitsAllClear", Op::kUnsupported},
      {"$bitsAnySet", Op::kUnsupported},
      {"$bitsAnyClear", Op::kUnsupported},
      {"$geoWithin", Op::kUnsupported},
      {"$geoIntersects", Op::kUnsupported},
      {"$near", Op::kUnsupported},
      {"$nearSphere", Op::kUnsupported},
      {"$within", Op::kUnsupported},
  };
  if (key.size() < 3 || key[0] != '$') return Op::kUnknown;
  for (const auto& [name, op] : kOps) {
    if (key == name) return op;
  }
  return Op::kUnknown;
}

// MongoDB's parsePathAcceptingKeyword() != none.
bool IsPathAcceptingKeyword(std::string_view key) {
  Op op = LookupOp(key);
  return op != Op::kUnknown && op != Op::kNot;
}

std::string NumberToString(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return std::to_string(v.value.v_int32);
    case BSON_TYPE_INT64: return std::to_string(v.value.v_int64);
    case BSON_TYPE_DOUBLE: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", v.value.v_double);
      return buf;
    }
    case BSON_TYPE_DECIMAL128: {
      char buf[BSON_DECIMAL128_STRING];
      bson_decimal128_to_string(&v.value.v_decimal128, buf);
      return buf;
    }
    default: return "?";
  }
}

// A number with an exact integral value that fits in int64.
bool ExactInteger(const bson_value_t& v, int64_t* out) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: *out = v.value.v_int32; return true;
    case BSON_TYPE_INT64: *out = v.value.v_int64; return true;
    case BSON_TYPE_DECIMAL128: {
      std::optional<int64_t> n = decimal::ToInt64Exact(v.value.v_decimal128);
      if (!n) return false;
      *out = *n;
      return true;
    }
    case BSON_TYPE_DOUBLE: {
      long double d = NumberAsLongDouble(v);
      if (!std::isfinite(d) || d != std::trunc(d)) return false;
      if (d < -9223372036854775808.0L || d >= 9223372036854775808.0L) return false;
      *out = static_cast<int64_t>(d);
      return true;
    }
    default: return false;
  }
}

// A finite number truncated toward zero to int64 (MongoDB's tryCoerce).
bool CoerceToLong(const bson_value_t& v, int64_t* out) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: *out = v.value.v_int32; return true;
    case BSON_TYPE_INT64: *out = v.value.v_int64; return true;
    case BSON_TYPE_DECIMAL128: {
      std::optional<int64_t> n = decimal::ToInt64Truncated(v.value.v_decimal128);
      if (!n) return false;
      *out = *n;
      return true;
    }
    case BSON_TYPE_DOUBLE: {
      long double d = NumberAsLongDouble(v);
      if (!std::isfinite(d)) return false;
      d = std::trunc(d);
      if (d < -9223372036854775808.0L || d >= 9223372036854775808.0L) return false;
      *out = static_cast<int64_t>(d);
      return true;
    }
    default: return false;
  }
}

// BSONElement::trueValue().
bool TrueValue(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED: return false;
    case BSON_TYPE_BOOL: return v.value.v_bool;
    case BSON_TYPE_INT32: return v.value.v_int32 != 0;
    case BSON_TYPE_INT64: return v.value.v_int64 != 0;
    case BSON_TYPE_DOUBLE: return v.value.v_double != 0;
    case BSON_TYPE_DECIMAL128: return !decimal::IsZero(v.value.v_decimal128);
    default: return true;
  }
}

// True when a document or array nests deeper than `levels_left` more levels.
bool NestsDeeperThan(const uint8_t* data, uint32_t len, int levels_left) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, data, len)) return false;
  while (bson_iter_next(&it)) {
    const bson_type_t t = bson_iter_type(&it);
    if (t != BSON_TYPE_DOCUMENT && t != BSON_TYPE_ARRAY) continue;
    if (levels_left == 0) return true;
    const bson_value_t* v = bson_iter_value(&it);
    if (NestsDeeperThan(v->value.v_doc.data, v->value.v_doc.data_len, levels_left - 1)) return true;
  }
  return false;
}

Status CheckPath(std::string_view path) {
  size_t parts = 1;
  for (char c : path) parts += c == '.';
  if (parts > kMaxPathComponents) return BadValue("FieldPath is too long");
  return Status::OK();
}

StatusOr<ExprPtr> MakeRegexLeaf(std::string_view path, std::string_view pattern,
                                std::string_view options) {
  ASSIGN_OR_RETURN(std::unique_ptr<RegexMatcher> re, RegexMatcher::Compile(pattern, options));
  return ExprPtr(new RegexExpression(path, std::move(re)));
}

StatusOr<ExprPtr> MakeRegexLeaf(std::string_view path, const bson_value_t& regex) {
  return MakeRegexLeaf(path, regex.value.v_regex.regex,
                       regex.value.v_regex.options ? regex.value.v_regex.options : "");
}

StatusOr<ExprPtr> ParseComparison(ExprKind kind, std::string_view path, const bson_value_t& v) {
  if (v.value_type == BSON_TYPE_UNDEFINED) return BadValue("cannot compare to undefined");
  if (kind != ExprKind::kEq && v.value_type == BSON_TYPE_REGEX) {
    return BadValue("Can't have RegEx as arg to predicate over field '" + std::string(path) + "'.");
  }
  return ExprPtr(new ComparisonExpression(kind, path, v));
}

StatusOr<ExprPtr> ParseIn(std::string_view path, const bson_value_t& arr) {
  std::vector<ValueRef> equalities;
  std::vector<std::unique_ptr<RegexMatcher>> regexes;
  ElemIter it(arr);
  Elem e;
  while (it.Next(&e)) {
    if (IsExpressionDocument(e.value, false)) return BadValue("cannot nest $ under $in");
    if (e.value.value_type == BSON_TYPE_REGEX) {
      ASSIGN_OR_RETURN(std::unique_ptr<RegexMatcher> re,
                       RegexMatcher::Compile(e.value.value.v_regex.regex,
                                    e.value.value.v_regex.options ? e.value.value.v_regex.options : ""));
      regexes.push_back(std::move(re));
    } else if (e.value.value_type == BSON_TYPE_UNDEFINED) {
      return BadValue("InMatchExpression equality cannot be undefined");
    } else {
      equalities.push_back(ValueRef{e.value});
    }
  }
  return ExprPtr(new InExpression(path, std::move(equalities), std::move(regexes)));
}

StatusOr<ExprPtr> ParseSize(std::string_view path, const bson_value_t& v) {
  int64_t n = 0;
  switch (v.value_type) {
    case BSON_TYPE_INT32:
      n = v.value.v_int32;
      break;
    case BSON_TYPE_INT64:
      if (v.value.v_int64 < INT32_MIN || v.value.v_int64 > INT32_MAX) {
        return BadValue("$size must be representable as a 32-bit integer");
      }
      n = v.value.v_int64;
      break;
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128:
      if (!ExactInteger(v, &n)) return BadValue("$size must be a whole number");
      if (n < INT32_MIN || n > INT32_MAX) {
        return BadValue("$size must be representable as a 32-bit integer");
      }
      break;
    default:
      return BadValue("$size needs a number");
  }
  if (n < 0) return BadValue("$size may not be negative");
  return ExprPtr(new SizeExpression(path, n));
}

struct TypeAlias {
  const char* name;
  int code;
};
constexpr TypeAlias kTypeAliases[] = {
    {"double", 1},     {"string", 2},      {"object", 3},     {"array", 4},
    {"binData", 5},    {"undefined", 6},   {"objectId", 7},   {"bool", 8},
    {"date", 9},       {"null", 10},       {"regex", 11},     {"dbPointer", 12},
    {"javascript", 13}, {"symbol", 14},    {"javascriptWithScope", 15},
    {"int", 16},       {"timestamp", 17},  {"long", 18},      {"decimal", 19},
    {"minKey", -1},    {"maxKey", 127},
};

Status AddType(const bson_value_t& t, std::bitset<256>* types, bool* all_numbers) {
  if (t.value_type == BSON_TYPE_UTF8) {
    std::string_view alias(t.value.v_utf8.str, t.value.v_utf8.len);
    if (alias == "number") {
      *all_numbers = true;
      return Status::OK();
    }
    for (const TypeAlias& a : kTypeAliases) {
      if (alias == a.name) {
        types->set(static_cast<uint8_t>(a.code));
        return Status::OK();
      }
    }
    if (alias == "missing") {
      return BadValue(
          "'missing' is not a legal type name. To query for non-existence of a field, use "
          "{$exists:false}.");
    }
    return BadValue("Unknown type name alias: " + std::string(alias));
  }
  if (!IsNumberType(t.value_type)) {
    return Status(ErrorCode::kTypeMismatch, "type must be represented as a number or a string");
  }
  int64_t code = 0;
  if (!ExactInteger(t, &code) || code < INT32_MIN || code > INT32_MAX) {
    return BadValue("Invalid numerical type code: " + NumberToString(t));
  }
  if (code == 0) {
    return BadValue("Invalid numerical type code: " + NumberToString(t) +
                    ". Instead use {$exists:false}.");
  }
  if (!((code >= 1 && code <= 19) || code == -1 || code == 127)) {
    return BadValue("Invalid numerical type code: " + NumberToString(t));
  }
  types->set(static_cast<uint8_t>(code));  // -1 (MinKey) is 0xFF
  return Status::OK();
}

StatusOr<ExprPtr> ParseType(std::string_view path, const bson_value_t& v) {
  std::bitset<256> types;
  bool all_numbers = false;
  if (IsArray(v)) {
    ElemIter it(v);
    Elem e;
    while (it.Next(&e)) RETURN_IF_ERROR(AddType(e.value, &types, &all_numbers));
  } else {
    RETURN_IF_ERROR(AddType(v, &types, &all_numbers));
  }
  if (!all_numbers && types.none()) {
    return Status(ErrorCode::kFailedToParse,
                  std::string(path) + " must match at least one type");
  }
  return ExprPtr(new TypeExpression(path, types, all_numbers));
}

StatusOr<ExprPtr> ParseMod(std::string_view path, const bson_value_t& v) {
  if (!IsArray(v)) return BadValue("malformed mod, needs to be an array");
  ElemIter it(v);
  Elem d, r, extra;
  if (!it.Next(&d)) return BadValue("malformed mod, not enough elements");
  if (!IsNumberType(d.value.value_type)) return BadValue("malformed mod, divisor not a number");
  if (!it.Next(&r)) return BadValue("malformed mod, not enough elements");
  if (!IsNumberType(r.value.value_type)) return BadValue("malformed mod, remainder not a number");
  if (it.Next(&extra)) return BadValue("malformed mod, too many elements");
  int64_t divisor = 0, remainder = 0;
  if (!CoerceToLong(d.value, &divisor)) return BadValue("malformed mod, divisor value is invalid");
  if (!CoerceToLong(r.value, &remainder)) {
    return BadValue("malformed mod, remainder value is invalid");
  }
  if (divisor == 0) return BadValue("divisor cannot be 0");
  return ExprPtr(new ModExpression(path, divisor, remainder));
}

// {$regex: ..., $options: ...}: reads both from the operator document.
StatusOr<ExprPtr> ParseRegexDocument(std::string_view path, const bson_value_t& context) {
  std::string_view regex, options;
  ElemIter it(context);
  Elem e;
  while (it.Next(&e)) {
    Op op = LookupOp(e.key);
    if (op == Op::kRegex) {
      if (e.value.value_type == BSON_TYPE_UTF8) {
        regex = std::string_view(e.value.value.v_utf8.str, e.value.value.v_utf8.len);
      } else if (e.value.value_type == BSON_TYPE_REGEX) {
        regex = e.value.value.v_regex.regex;
        std::string_view flags = e.value.value.v_regex.options ? e.value.value.v_regex.options : "";
        if (!flags.empty()) {
          if (!options.empty()) return BadValue("options set in both $regex and $options");
          options = flags;
        }
      } else {
        return BadValue("$regex has to be a string");
      }
    } else if (op == Op::kOptions) {
      if (e.value.value_type != BSON_TYPE_UTF8) return BadValue("$options has to be a string");
      if (!options.empty()) return BadValue("options set in both $regex and $options");
      options = std::string_view(e.value.value.v_utf8.str, e.value.value.v_utf8.len);
    }
  }
  return MakeRegexLeaf(path, regex, options);
}

class Parser {
 public:
  Parser(expression::ParseContext* pc, int64_t now_ms) : pc_(pc), now_ms_(now_ms) {}

  // A filter document (the top level, an $and/$or/$nor entry, or the
  // document form of $elemMatch).  `allow_expr`: $expr may appear (not in
  // $elemMatch, as in MongoDB).
  StatusOr<ExprPtr> ParseDocument(const bson_value_t& doc, int depth, bool allow_expr);

 private:
  StatusOr<ExprPtr> ParseTree(ExprKind kind, const Elem& e, int depth, bool allow_expr);
  StatusOr<ExprPtr> ParseExpr(const bson_value_t& v);
  // {path: {$op: ..., $op2: ...}}: adds one node per operator to `out`.
  Status ParseSub(std::string_view path, const bson_value_t& sub, ListExpression* out, int depth);
  // One operator of such a document; may return null ($options).
  StatusOr<ExprPtr> ParseSubField(std::string_view path, const bson_value_t& context,
                                  const Elem& e, int depth);
  StatusOr<ExprPtr> ParseNot(std::string_view path, const bson_value_t& v, int depth);
  StatusOr<ExprPtr> ParseElemMatch(std::string_view path, const bson_value_t& v, int depth);
  StatusOr<ExprPtr> ParseAll(std::string_view path, const bson_value_t& v, int depth);

  expression::ParseContext* pc_;  // may be null
  int64_t now_ms_;
};

StatusOr<ExprPtr> Parser::ParseExpr(const bson_value_t& v) {
  expression::ParseContext local;
  ASSIGN_OR_RETURN(std::unique_ptr<expression::Expression> e,
                   expression::ParseExpression(v, pc_ != nullptr ? pc_ : &local));
  return ExprPtr(new ExprMatchExpression(std::move(e), now_ms_));
}

StatusOr<ExprPtr> Parser::ParseDocument(const bson_value_t& doc, int depth, bool allow_expr) {
  if (depth > kMaxFilterDepth) return TooDeep();
  auto root = std::make_unique<ListExpression>(ExprKind::kAnd);
  ElemIter it(doc);
  Elem e;
  while (it.Next(&e)) {
    if (!e.key.empty() && e.key[0] == '$') {
      std::string_view name = e.key.substr(1);
      if (name == "and" || name == "or" || name == "nor") {
        ExprKind kind = name == "and" ? ExprKind::kAnd
                                      : (name == "or" ? ExprKind::kOr : ExprKind::kNor);
        ASSIGN_OR_RETURN(ExprPtr tree, ParseTree(kind, e, depth, allow_expr));
        root->Add(std::move(tree));
      } else if (name == "expr") {
        if (!allow_expr) return BadValue("$expr can only be applied to the top-level document");
        ASSIGN_OR_RETURN(ExprPtr expr, ParseExpr(e.value));
        root->Add(std::move(expr));
      } else if (name == "comment") {
        // Ignored.
      } else if (name == "ref" || name == "id" || name == "db") {
        // A DBRef field queried by itself.
        ASSIGN_OR_RETURN(ExprPtr eq, ParseComparison(ExprKind::kEq, e.key, e.value));
        root->Add(std::move(eq));
      } else if (name == "alwaysTrue" || name == "alwaysFalse") {
        int64_t n = 0;
        if (!ExactInteger(e.value, &n) || n != 1) {
          return Status(ErrorCode::kFailedToParse,
                        std::string(e.key) + " must be an integer value of 1");
        }
        if (name == "alwaysFalse") root->Add(std::make_unique<AlwaysFalseExpression>());
      } else if (IsPathlessOperator(name)) {
        return BadValue(std::string(e.key) + " is not supported");
      } else {
        return BadValue("unknown top level operator: " + std::string(e.key));
      }
      continue;
    }
    RETURN_IF_ERROR(CheckPath(e.key));
    if (IsExpressionDocument(e.value, false)) {
      RETURN_IF_ERROR(ParseSub(e.key, e.value, root.get(), depth + 1));
    } else if (e.value.value_type == BSON_TYPE_REGEX) {
      ASSIGN_OR_RETURN(ExprPtr re, MakeRegexLeaf(e.key, e.value));
      root->Add(std::move(re));
    } else {
      ASSIGN_OR_RETURN(ExprPtr eq, ParseComparison(ExprKind::kEq, e.key, e.value));
      root->Add(std::move(eq));
    }
  }
  if (root->children().size() == 1) return std::move((*root->mutable_children())[0]);
  return ExprPtr(std::move(root));
}

StatusOr<ExprPtr> Parser::ParseTree(ExprKind kind, const Elem& e, int depth, bool allow_expr) {
  if (!IsArray(e.value)) return BadValue(std::string(e.key) + " must be an array");
  auto list = std::make_unique<ListExpression>(kind);
  ElemIter it(e.value);
  Elem child;
  while (it.Next(&child)) {
    if (!IsDocument(child.value)) {
      return BadValue("$or/$and/$nor entries need to be full objects");
    }
    ASSIGN_OR_RETURN(ExprPtr sub, ParseDocument(child.value, depth + 1, allow_expr));
    list->Add(std::move(sub));
  }
  if (list->children().empty()) return BadValue("$and/$or/$nor must be a nonempty array");
  return ExprPtr(std::move(list));
}

Status Parser::ParseSub(std::string_view path, const bson_value_t& sub, ListExpression* out,
                        int depth) {
  if (depth > kMaxFilterDepth) return TooDeep();
  ElemIter it(sub);
  Elem e;
  while (it.Next(&e)) {
    ASSIGN_OR_RETURN(ExprPtr node, ParseSubField(path, sub, e, depth));
    if (node) out->Add(std::move(node));
  }
  return Status::OK();
}

StatusOr<ExprPtr> Parser::ParseSubField(std::string_view path, const bson_value_t& context,
                                        const Elem& e, int depth) {
  const bson_value_t& v = e.value;
  switch (LookupOp(e.key)) {
    case Op::kNot:
      return ParseNot(path, v, depth);
    case Op::kEq:
      return ParseComparison(ExprKind::kEq, path, v);
    case Op::kLt:
      return ParseComparison(ExprKind::kLt, path, v);
    case Op::kLte:
      return ParseComparison(ExprKind::kLte, path, v);
    case Op::kGt:
      return ParseComparison(ExprKind::kGt, path, v);
    case Op::kGte:
      return ParseComparison(ExprKind::kGte, path, v);
    case Op::kNe: {
      if (v.value_type == BSON_TYPE_REGEX) return BadValue("Can't have regex as arg to $ne.");
      ASSIGN_OR_RETURN(ExprPtr eq, ParseComparison(ExprKind::kEq, path, v));
      return ExprPtr(new NotExpression(std::move(eq)));
    }
    case Op::kIn:
      if (!IsArray(v)) return BadValue("$in needs an array");
      return ParseIn(path, v);
    case Op::kNin: {
      if (!IsArray(v)) return BadValue("$nin needs an array");
      ASSIGN_OR_RETURN(ExprPtr in, ParseIn(path, v));
      return ExprPtr(new NotExpression(std::move(in)));
    }
    case Op::kSize:
      return ParseSize(path, v);
    case Op::kExists: {
      ExprPtr exists(new ExistsExpression(path));
      if (TrueValue(v)) return exists;
      return ExprPtr(new NotExpression(std::move(exists)));
    }
    case Op::kType:
      return ParseType(path, v);
    case Op::kMod:
      return ParseMod(path, v);
    case Op::kOptions: {
      // Validated with its $regex, wherever that is in the document.
      ElemIter it(context);
      Elem other;
      while (it.Next(&other)) {
        if (LookupOp(other.key) == Op::kRegex) return ExprPtr();
      }
      return BadValue("$options needs a $regex");
    }
    case Op::kRegex:
      return ParseRegexDocument(path, context);
    case Op::kElemMatch:
      return ParseElemMatch(path, v, depth);
    case Op::kAll:
      return ParseAll(path, v, depth);
    case Op::kUnsupported:
      return BadValue(std::string(e.key) + " is not supported");
    case Op::kUnknown:
      break;
  }
  if (e.key == "$where") return BadValue("$where cannot be applied to a field");
  return BadValue("unknown operator: " + std::string(e.key));
}

StatusOr<ExprPtr> Parser::ParseNot(std::string_view path, const bson_value_t& v, int depth) {
  if (v.value_type == BSON_TYPE_REGEX) {
    ASSIGN_OR_RETURN(ExprPtr re, MakeRegexLeaf(path, v));
    return ExprPtr(new NotExpression(std::move(re)));
  }
  if (!IsDocument(v)) return BadValue("$not needs a regex or a document");
  if (v.value.v_doc.data_len <= 5) return BadValue("$not cannot be empty");
  auto list = std::make_unique<ListExpression>(ExprKind::kAnd);
  RETURN_IF_ERROR(ParseSub(path, v, list.get(), depth + 1));
  ExprPtr child;
  if (list->children().size() == 1) {
    child = std::move((*list->mutable_children())[0]);
  } else {
    child = std::move(list);
  }
  return ExprPtr(new NotExpression(std::move(child)));
}

StatusOr<ExprPtr> Parser::ParseElemMatch(std::string_view path, const bson_value_t& v, int depth) {
  if (!IsDocument(v)) return BadValue("$elemMatch needs an Object");
  bool value_form = false;
  if (IsExpressionDocument(v, true)) value_form = !IsPathlessOperator(FirstKey(v).substr(1));
  if (value_form) {
    // {$elemMatch: {$gt: 1, $lt: 5}}: every operator tests the same element.
    ListExpression list(ExprKind::kAnd);
    RETURN_IF_ERROR(ParseSub("", v, &list, depth + 1));
    return ExprPtr(new ElemMatchValueExpression(path, std::move(*list.mutable_children())));
  }
  ASSIGN_OR_RETURN(ExprPtr sub, ParseDocument(v, depth + 1, false));
  return ExprPtr(new ElemMatchObjectExpression(path, std::move(sub)));
}

StatusOr<ExprPtr> Parser::ParseAll(std::string_view path, const bson_value_t& v, int depth) {
  if (!IsArray(v)) return BadValue("$all needs an array");
  auto list = std::make_unique<ListExpression>(ExprKind::kAnd);
  ElemIter first_it(v);
  Elem first;
  const bool elem_match_form = first_it.Next(&first) && IsDocument(first.value) &&
                               FirstKey(first.value) == "$elemMatch";
  ElemIter it(v);
  Elem e;
  if (elem_match_form) {
    // {$all: [{$elemMatch: ...}, {$elemMatch: ...}]}
    while (it.Next(&e)) {
      if (!IsDocument(e.value) || FirstKey(e.value) != "$elemMatch") {
        return BadValue("$all/$elemMatch has to be consistent");
      }
      ElemIter inner(e.value);
      Elem em;
      inner.Next(&em);
      ASSIGN_OR_RETURN(ExprPtr node, ParseElemMatch(path, em.value, depth + 1));
      list->Add(std::move(node));
    }
    return ExprPtr(std::move(list));
  }
  while (it.Next(&e)) {
    if (e.value.value_type == BSON_TYPE_REGEX) {
      ASSIGN_OR_RETURN(ExprPtr re, MakeRegexLeaf(path, e.value));
      list->Add(std::move(re));
    } else if (IsDocument(e.value) && IsPathAcceptingKeyword(FirstKey(e.value))) {
      return BadValue("no $ expressions in $all");
    } else {
      ASSIGN_OR_RETURN(ExprPtr eq, ParseComparison(ExprKind::kEq, path, e.value));
      list->Add(std::move(eq));
    }
  }
  if (list->children().empty()) return ExprPtr(new AlwaysFalseExpression());
  return ExprPtr(std::move(list));
}

}  // namespace

StatusOr<ExprPtr> ParseFilter(const bson_t* filter, expression::ParseContext* pc, int64_t now_ms) {
  if (filter == nullptr) return BadValue("filter must be a document");
  const uint8_t* data = bson_get_data(filter);
  // Bound the nesting before anything recurses over the filter.
  if (NestsDeeperThan(data, filter->len, kMaxFilterDepth)) return TooDeep();
  size_t offset = 0;
  if (!bson_validate(filter, BSON_VALIDATE_NONE, &offset)) {
    return Status(ErrorCode::kInvalidBSON,
                  "filter is not valid BSON (at byte " + std::to_string(offset) + ")");
  }
  bson_value_t doc = {};
  doc.value_type = BSON_TYPE_DOCUMENT;
  doc.value.v_doc.data = const_cast<uint8_t*>(data);
  doc.value.v_doc.data_len = filter->len;
  Parser parser(pc, now_ms);
  return parser.ParseDocument(doc, 0, true);
}

}  // namespace query
}  // namespace gatedb
