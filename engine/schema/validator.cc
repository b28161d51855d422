#include "engine/schema/validator.h"

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/document/bson_compare.h"
#include "engine/query/match_expression.h"
#include "engine/query/matcher.h"
#include "engine/schema/json_schema.h"
#include "gatedb/document.h"

namespace gatedb {
namespace schema {

// ---------------------------------------------------------------------------
// The parsed tree.

namespace {

// How a leaf clause explains a failure (MongoDB's doc_validation_error
// visitor for the operator).
enum class LeafKind {
  kComparison,  // $eq (also implicit), $ne, $lt, $lte, $gt, $gte
  kIn,          // $in, $nin
  kExists,      // $exists
  kType,        // $type
  kMod,         // $mod
  kRegex,       // $regex (also an implicit regex)
  kSize,        // $size
  kElemMatch,   // $elemMatch
  kAll,         // $all
  kAlways,      // $alwaysFalse, $alwaysTrue, $all: []
};

struct Leaf {
  std::string operator_name;
  BsonPtr filter;  // {path: ...}: what the Matcher evaluates, and specifiedAs
  std::unique_ptr<query::Matcher> matcher;
  std::vector<std::string> parts;  // the dotted path, split
  LeafKind kind = LeafKind::kComparison;
  bool negated = false;  // $ne, $nin, $exists: false report the inverted reason
};

}  // namespace

struct ValidatorNode {
  enum class Kind { kAnd, kOr, kNor, kNot, kLeaf, kJsonSchema };
  Kind kind = Kind::kAnd;
  std::vector<std::unique_ptr<ValidatorNode>> children;  // kAnd/kOr/kNor; kNot has one
  std::unique_ptr<Leaf> leaf;
  std::unique_ptr<JsonSchema> schema;
};

namespace {

using NodePtr = std::unique_ptr<ValidatorNode>;

Status BadValue(std::string msg) { return Status(ErrorCode::kBadValue, std::move(msg)); }

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) {
      parts.emplace_back(path.substr(start));
      return parts;
    }
    parts.emplace_back(path.substr(start, dot - start));
    start = dot + 1;
  }
}

// BSONElement::trueValue(), for $exists.
bool TrueValue(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED:
      return false;
    case BSON_TYPE_BOOL:
      return v.value.v_bool;
    case BSON_TYPE_INT32:
      return v.value.v_int32 != 0;
    case BSON_TYPE_INT64:
      return v.value.v_int64 != 0;
    case BSON_TYPE_DOUBLE:
      return v.value.v_double != 0;
    case BSON_TYPE_DECIMAL128: {
      ExactDecimal d;
      return !ToExactDecimal(v, &d) || d.kind != ExactDecimal::Kind::kFinite || d.coefficient != 0;
    }
    default:
      return true;
  }
}

// The query parser's rule (engine/query/expression_parser.cc): a non-empty
// document whose first key starts with '$' and that is not a DBRef.
bool IsExpressionDocument(const bson_value_t& v) {
  if (v.value_type != BSON_TYPE_DOCUMENT) return false;
  ElemIter it(v);
  if (!it.Next() || it.key().empty() || it.key()[0] != '$') return false;
  bool has_ref = false, has_id = false;
  ElemIter all(v);
  while (all.Next()) {
    if (all.key() == "$ref") has_ref = true;
    if (all.key() == "$id") has_id = true;
  }
  return !(has_ref && has_id);
}

// One iterative walk over the validator: its nesting, and the operators
// MongoDB bans from validators anywhere in them (MongoDB's
// checkValidatorForBannedExpressions).
Status CheckValidatorShape(const bson_t* validator) {
  static const char* const kBanned[] = {"$geoNear", "$near", "$nearSphere", "$text", "$where"};
  // bson_iter_t is over-aligned (128 bytes, more than its size), which
  // neither std::vector nor a plain array honours: the stack of iterators is
  // one aligned block with a stride rounded up to the alignment.
  struct Free {
    void operator()(uint8_t* p) const { bson_free(p); }
  };
  constexpr size_t kAlign = alignof(bson_iter_t);
  constexpr size_t kStride = (sizeof(bson_iter_t) + kAlign - 1) / kAlign * kAlign;
  const size_t capacity = static_cast<size_t>(kMaxValidatorNesting) + 1;
  std::unique_ptr<uint8_t, Free> block(
      static_cast<uint8_t*>(bson_aligned_alloc(kAlign, kStride * capacity)));
  auto at = [&block](size_t i) {
    return reinterpret_cast<bson_iter_t*>(block.get() + i * kStride);
  };
  size_t depth = 1;
  if (!bson_iter_init(at(0), validator)) {
    return Status(ErrorCode::kInvalidBSON, "validator is not valid BSON");
  }
  while (depth > 0) {
    bson_iter_t& it = *at(depth - 1);
    if (!bson_iter_next(&it)) {
      --depth;
      continue;
    }
    const std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (!key.empty() && key[0] == '$') {
      for (const char* banned : kBanned) {
        if (key == banned) {
          return Status(ErrorCode::kInvalidOptions,
                        std::string(key) + " is not allowed in collection validators");
        }
      }
    }
    if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
      if (depth >= static_cast<size_t>(kMaxValidatorNesting)) {
        return BadValue("validator exceeds the maximum nesting depth of " +
                        std::to_string(kMaxValidatorNesting));
      }
      if (!bson_iter_recurse(&it, at(depth))) {
        return Status(ErrorCode::kInvalidBSON, "validator is not valid BSON");
      }
      ++depth;
    }
  }
  return Status::OK();
}

// {key: value}
BsonPtr MakeFilter(std::string_view key, const bson_value_t& value) {
  BsonPtr f = NewBson();
  AppendValue(f.get(), key, value);
  return f;
}

// {path: {op: arg}}
BsonPtr MakeOperatorFilter(std::string_view path, std::string_view op, const bson_value_t& arg) {
  BsonPtr f = NewBson();
  bson_t sub;
  bson_append_document_begin(f.get(), path.data(), static_cast<int>(path.size()), &sub);
  AppendValue(&sub, op, arg);
  bson_append_document_end(f.get(), &sub);
  return f;
}

StatusOr<NodePtr> MakeLeaf(std::string operator_name, BsonPtr filter, std::string_view path,
                           LeafKind kind, bool negated) {
  auto leaf = std::make_unique<Leaf>();
  ASSIGN_OR_RETURN(leaf->matcher, query::Matcher::Parse(filter.get()));
  leaf->operator_name = std::move(operator_name);
  leaf->filter = std::move(filter);
  if (!path.empty()) leaf->parts = SplitPath(path);
  leaf->kind = kind;
  leaf->negated = negated;
  auto node = std::make_unique<ValidatorNode>();
  node->kind = ValidatorNode::Kind::kLeaf;
  node->leaf = std::move(leaf);
  return node;
}

NodePtr MakeList(ValidatorNode::Kind kind, std::vector<NodePtr> children) {
  auto node = std::make_unique<ValidatorNode>();
  node->kind = kind;
  node->children = std::move(children);
  return node;
}

class Parser {
 public:
  // A filter document: the validator itself or an $and/$or/$nor entry.
  // Several clauses become an AND; a single clause is returned as is.
  StatusOr<NodePtr> ParseDocument(const bson_value_t& doc, int depth);

 private:
  // {path: {$op: ..., ...}}: one node per operator.
  Status AddOperators(std::string_view path, const bson_value_t& ops, int depth,
                      std::vector<NodePtr>* out);
  StatusOr<NodePtr> ParseNot(std::string_view path, const bson_value_t& arg, int depth);
};

StatusOr<NodePtr> Parser::ParseDocument(const bson_value_t& doc, int depth) {
  if (depth > 100) return BadValue("filter exceeds the maximum nesting depth of 100");
  std::vector<NodePtr> clauses;
  ElemIter it(doc);
  while (it.Next()) {
    const std::string_view key = it.key();
    const bson_value_t& value = it.value();
    if (!key.empty() && key[0] == '$') {
      if (key == "$and" || key == "$or" || key == "$nor") {
        if (value.value_type != BSON_TYPE_ARRAY) {
          return BadValue(std::string(key) + " must be an array");
        }
        std::vector<NodePtr> children;
        ElemIter entries(value);
        while (entries.Next()) {
          if (entries.value().value_type != BSON_TYPE_DOCUMENT) {
            return BadValue("$or/$and/$nor entries need to be full objects");
          }
          ASSIGN_OR_RETURN(NodePtr child, ParseDocument(entries.value(), depth + 1));
          children.push_back(std::move(child));
        }
        if (children.empty()) return BadValue("$and/$or/$nor must be a nonempty array");
        const ValidatorNode::Kind kind = key == "$and"  ? ValidatorNode::Kind::kAnd
                                         : key == "$or" ? ValidatorNode::Kind::kOr
                                                        : ValidatorNode::Kind::kNor;
        clauses.push_back(MakeList(kind, std::move(children)));
      } else if (key == "$jsonSchema") {
        auto node = std::make_unique<ValidatorNode>();
        node->kind = ValidatorNode::Kind::kJsonSchema;
        ASSIGN_OR_RETURN(node->schema, JsonSchema::Parse(value));
        clauses.push_back(std::move(node));
      } else if (key == "$comment") {
        // Ignored, as in a query.
      } else if (key == "$expr") {
        return Status(ErrorCode::kInvalidOptions,
                      "$expr is not supported in collection validators by gatedb");
      } else {
        // $alwaysTrue/$alwaysFalse, a DBRef field ($id, $ref, $db), or an
        // operator the Matcher refuses with MongoDB's message.
        const bool always = key == "$alwaysTrue" || key == "$alwaysFalse";
        ASSIGN_OR_RETURN(NodePtr leaf,
                         MakeLeaf(always ? std::string(key) : "$eq", MakeFilter(key, value),
                                  always ? std::string_view() : key,
                                  always ? LeafKind::kAlways : LeafKind::kComparison, false));
        clauses.push_back(std::move(leaf));
      }
      continue;
    }
    // A path.  The Matcher checks the whole clause first, so that a bad
    // operator is reported exactly as a query reports it.
    BsonPtr whole = MakeFilter(key, value);
    {
      StatusOr<std::unique_ptr<query::Matcher>> check = query::Matcher::Parse(whole.get());
      if (!check.ok()) return check.status();
    }
    if (IsExpressionDocument(value)) {
      RETURN_IF_ERROR(AddOperators(key, value, depth, &clauses));
    } else if (value.value_type == BSON_TYPE_REGEX) {
      ASSIGN_OR_RETURN(NodePtr leaf,
                       MakeLeaf("$regex", std::move(whole), key, LeafKind::kRegex, false));
      clauses.push_back(std::move(leaf));
    } else {
      ASSIGN_OR_RETURN(NodePtr leaf,
                       MakeLeaf("$eq", std::move(whole), key, LeafKind::kComparison, false));
      clauses.push_back(std::move(leaf));
    }
  }
  if (clauses.size() == 1) return std::move(clauses[0]);
  return MakeList(ValidatorNode::Kind::kAnd, std::move(clauses));
}

Status Parser::AddOperators(std::string_view path, const bson_value_t& ops, int depth,
                            std::vector<NodePtr>* out) {
  if (depth > 100) return BadValue("filter exceeds the maximum nesting depth of 100");
  bool regex_done = false;
  ElemIter it(ops);
  while (it.Next()) {
    const std::string_view op = it.key();
    const bson_value_t& arg = it.value();
    if (op == "$not") {
      ASSIGN_OR_RETURN(NodePtr node, ParseNot(path, arg, depth + 1));
      out->push_back(std::move(node));
      continue;
    }
    if (op == "$regex" || op == "$options") {
      if (regex_done) continue;
      regex_done = true;
      // {path: {$regex: ..., $options: ...}}, in the order written.
      BsonPtr filter = NewBson();
      bson_t sub;
      bson_append_document_begin(filter.get(), path.data(), static_cast<int>(path.size()), &sub);
      ElemIter all(ops);
      while (all.Next()) {
        if (all.key() == "$regex" || all.key() == "$options") {
          AppendValue(&sub, all.key(), all.value());
        }
      }
      bson_append_document_end(filter.get(), &sub);
      ASSIGN_OR_RETURN(NodePtr leaf,
                       MakeLeaf("$regex", std::move(filter), path, LeafKind::kRegex, false));
      out->push_back(std::move(leaf));
      continue;
    }
    LeafKind kind = LeafKind::kComparison;
    bool negated = false;
    if (op == "$ne") {
      negated = true;
    } else if (op == "$in") {
      kind = LeafKind::kIn;
    } else if (op == "$nin") {
      kind = LeafKind::kIn;
      negated = true;
    } else if (op == "$exists") {
      kind = LeafKind::kExists;
      negated = !TrueValue(arg);
    } else if (op == "$type") {
      kind = LeafKind::kType;
    } else if (op == "$mod") {
      kind = LeafKind::kMod;
    } else if (op == "$size") {
      kind = LeafKind::kSize;
    } else if (op == "$elemMatch") {
      kind = LeafKind::kElemMatch;
    } else if (op == "$all") {
      kind = arg.value_type == BSON_TYPE_ARRAY && CountElements(arg) == 0 ? LeafKind::kAlways
                                                                          : LeafKind::kAll;
    }
    ASSIGN_OR_RETURN(NodePtr leaf, MakeLeaf(std::string(op), MakeOperatorFilter(path, op, arg),
                                            path, kind, negated));
    out->push_back(std::move(leaf));
  }
  return Status::OK();
}

StatusOr<NodePtr> Parser::ParseNot(std::string_view path, const bson_value_t& arg, int depth) {
  NodePtr child;
  if (arg.value_type == BSON_TYPE_REGEX) {
    ASSIGN_OR_RETURN(child, MakeLeaf("$regex", MakeFilter(path, arg), path, LeafKind::kRegex,
                                     false));
  } else {
    std::vector<NodePtr> ops;
    RETURN_IF_ERROR(AddOperators(path, arg, depth, &ops));
    if (ops.empty()) return BadValue("$not cannot be empty");
    child = ops.size() == 1 ? std::move(ops[0])
                            : MakeList(ValidatorNode::Kind::kAnd, std::move(ops));
  }
  auto node = std::make_unique<ValidatorNode>();
  node->kind = ValidatorNode::Kind::kNot;
  node->children.push_back(std::move(child));
  return node;
}

// ---------------------------------------------------------------------------
// Evaluation and MongoDB's error details.

bool Matches(const ValidatorNode& node, const bson_t* doc) {
  switch (node.kind) {
    case ValidatorNode::Kind::kAnd:
      for (const NodePtr& c : node.children) {
        if (!Matches(*c, doc)) return false;
      }
      return true;
    case ValidatorNode::Kind::kOr:
      for (const NodePtr& c : node.children) {
        if (Matches(*c, doc)) return true;
      }
      return false;
    case ValidatorNode::Kind::kNor:
      for (const NodePtr& c : node.children) {
        if (Matches(*c, doc)) return false;
      }
      return true;
    case ValidatorNode::Kind::kNot:
      return !Matches(*node.children[0], doc);
    case ValidatorNode::Kind::kLeaf:
      return node.leaf->matcher->Matches(doc);
    case ValidatorNode::Kind::kJsonSchema:
      return node.schema->Matches(doc);
  }
  return false;
}

struct Reasons {
  const char* normal;
  const char* inverted;
};

Reasons ReasonsFor(LeafKind kind) {
  switch (kind) {
    case LeafKind::kComparison: return {"comparison failed", "comparison succeeded"};
    case LeafKind::kIn:
      return {"no matching value found in array", "matching value found in array"};
    case LeafKind::kExists: return {"path does not exist", "path does exist"};
    case LeafKind::kType: return {"type did not match", "type did match"};
    case LeafKind::kMod:
      return {"$mod did not evaluate to expected remainder",
              "$mod did evaluate to expected remainder"};
    case LeafKind::kRegex:
      return {"regular expression did not match", "regular expression did match"};
    case LeafKind::kSize:
      return {"array length was not equal to given size", "array length was equal to given size"};
    case LeafKind::kElemMatch:
      return {"array did not satisfy the child predicate", "array did satisfy the child predicate"};
    case LeafKind::kAll:
      return {"array did not contain all specified values",
              "array did contain all specified values"};
    case LeafKind::kAlways:
      return {"expression always evaluates to false", "expression always evaluates to true"};
  }
  return {"", ""};
}

// The BSON types an operator applies to (MongoDB's type names, sorted);
// empty when it takes any type.
std::vector<std::string> ExpectedTypes(LeafKind kind) {
  switch (kind) {
    case LeafKind::kMod: return {"decimal", "double", "int", "long"};
    case LeafKind::kRegex: return {"regex", "string", "symbol"};
    case LeafKind::kSize:
    case LeafKind::kElemMatch: return {"array"};
    default: return {};
  }
}

// consideredType / consideredTypes: the distinct type names, sorted.
void AppendConsideredTypes(bson_t* out, const std::vector<BsonValue>& values) {
  if (values.empty()) return;
  std::set<std::string> types;
  for (const BsonValue& v : values) types.insert(BsonTypeName(v.value_type));
  if (types.size() == 1) {
    AppendUtf8(out, "consideredType", *types.begin());
  } else {
    AppendStringArray(out, "consideredTypes", std::vector<std::string>(types.begin(), types.end()));
  }
}

void ExplainLeaf(const Leaf& leaf, const bson_t* doc, bool inverted, bson_t* out) {
  AppendUtf8(out, "operatorName", leaf.operator_name);
  AppendDocument(out, "specifiedAs", leaf.filter.get());
  const Reasons reasons = ReasonsFor(leaf.kind);
  const bool effective_inverted = inverted != leaf.negated;
  if (leaf.kind == LeafKind::kExists) {
    AppendUtf8(out, "reason", effective_inverted ? reasons.inverted : reasons.normal);
    return;
  }
  if (leaf.kind == LeafKind::kAlways) {
    AppendUtf8(out, "reason", leaf.matcher->Matches(doc) ? reasons.inverted : reasons.normal);
    return;
  }
  // $size, $elemMatch and $all consider the array itself; the others the
  // elements of an array at the end of the path.
  const bool expand = leaf.kind != LeafKind::kSize && leaf.kind != LeafKind::kElemMatch &&
                      leaf.kind != LeafKind::kAll;
  PathValues pv;
  CollectPathValues(doc, leaf.parts, expand, kMaxConsideredValues, &pv);
  bool have_reason = false;
  if (!pv.exists) {
    AppendUtf8(out, "reason", "field was missing");
    have_reason = true;
  } else {
    const std::vector<std::string> expected = ExpectedTypes(leaf.kind);
    if (!expected.empty()) {
      bool any = false;
      for (const BsonValue& v : pv.values) {
        for (const std::string& t : expected) any = any || t == BsonTypeName(v.value_type);
      }
      if (!any) {
        AppendUtf8(out, "reason", "type did not match");
        AppendConsideredTypes(out, pv.values);
        if (expected.size() == 1) {
          AppendUtf8(out, "expectedType", expected[0]);
        } else {
          AppendStringArray(out, "expectedTypes", expected);
        }
        have_reason = true;
      }
    }
  }
  if (!have_reason) {
    AppendUtf8(out, "reason", effective_inverted ? reasons.inverted : reasons.normal);
  }
  if (pv.exists) {
    if (pv.values.size() == 1) {
      AppendValue(out, "consideredValue", pv.values[0]);
    } else {
      AppendValueArray(out, "consideredValues", pv.values);
    }
    if (pv.truncated) AppendBool(out, "consideredValuesTruncated", true);
    if (leaf.kind == LeafKind::kType) AppendConsideredTypes(out, pv.values);
  }
}

// Appends the error for `node`, which fails to match `doc` (or, when
// `inverted`, matches it under a $not/$nor).
void Explain(const ValidatorNode& node, const bson_t* doc, bool inverted, bson_t* out) {
  switch (node.kind) {
    case ValidatorNode::Kind::kLeaf:
      ExplainLeaf(*node.leaf, doc, inverted, out);
      return;
    case ValidatorNode::Kind::kJsonSchema:
      if (inverted) {
        AppendUtf8(out, "operatorName", "$jsonSchema");
        AppendUtf8(out, "reason", "schema matched");
      } else {
        node.schema->AppendError(doc, out);
      }
      return;
    case ValidatorNode::Kind::kNot: {
      AppendUtf8(out, "operatorName", "$not");
      BsonPtr details = NewBson();
      Explain(*node.children[0], doc, !inverted, details.get());
      AppendDocument(out, "details", details.get());
      return;
    }
    case ValidatorNode::Kind::kAnd:
    case ValidatorNode::Kind::kOr:
    case ValidatorNode::Kind::kNor:
      break;
  }
  // Which clauses are reported, and in which sense:
  //   $and: normal -> the failing ones;   inverted -> all (all matched)
  //   $or:  normal -> all (all failed);   inverted -> the matching ones
  //   $nor: normal -> the matching ones, inverted; inverted -> all, normal
  const char* name = node.kind == ValidatorNode::Kind::kAnd  ? "$and"
                     : node.kind == ValidatorNode::Kind::kOr ? "$or"
                                                             : "$nor";
  const bool is_nor = node.kind == ValidatorNode::Kind::kNor;
  const bool child_inverted = is_nor ? !inverted : inverted;
  std::vector<BsonPtr> clauses;
  for (size_t i = 0; i < node.children.size(); ++i) {
    const ValidatorNode& child = *node.children[i];
    bool report = true;
    if (node.kind == ValidatorNode::Kind::kAnd && !inverted) report = !Matches(child, doc);
    if (node.kind != ValidatorNode::Kind::kAnd && child_inverted) report = Matches(child, doc);
    if (!report) continue;
    BsonPtr details = NewBson();
    Explain(child, doc, child_inverted, details.get());
    BsonPtr entry = NewBson();
    AppendInt32(entry.get(), "index", static_cast<int32_t>(i));
    AppendDocument(entry.get(), "details", details.get());
    clauses.push_back(std::move(entry));
  }
  AppendUtf8(out, "operatorName", name);
  AppendDocumentArray(out, child_inverted ? "clausesSatisfied" : "clausesNotSatisfied", clauses);
}

}  // namespace

// ---------------------------------------------------------------------------
// Validator.

Validator::Validator(BsonPtr backing, std::unique_ptr<ValidatorNode> root)
    : backing_(std::move(backing)), root_(std::move(root)) {}

Validator::~Validator() = default;

StatusOr<std::unique_ptr<Validator>> Validator::Parse(const bson_t* validator) {
  if (validator == nullptr) return Status(ErrorCode::kInvalidBSON, "validator must be a document");
  try {
    // The tree points into this private copy.
    BsonPtr backing(bson_copy(validator));
    if (!backing) return Status(ErrorCode::kInvalidBSON, "validator is not valid BSON");
    // The iterative shape check bounds the nesting before libbson's
    // recursive validator runs.
    RETURN_IF_ERROR(CheckValidatorShape(backing.get()));
    size_t offset = 0;
    if (!bson_validate(backing.get(), BSON_VALIDATE_NONE, &offset)) {
      return Status(ErrorCode::kInvalidBSON,
                    "validator is not valid BSON (at byte " + std::to_string(offset) + ")");
    }
    Parser parser;
    ASSIGN_OR_RETURN(NodePtr root, parser.ParseDocument(DocumentValue(backing.get()), 0));
    return std::unique_ptr<Validator>(new Validator(std::move(backing), std::move(root)));
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternalError, std::string("validator parse failed: ") + e.what());
  }
}

bool Validator::Validate(const bson_t* doc, bson_t* details) const {
  if (doc == nullptr) return false;
  try {
    if (Matches(*root_, doc)) return true;
    if (details != nullptr) Explain(*root_, doc, false, details);
  } catch (...) {
    // Out of memory while explaining: the document still fails.
  }
  return false;
}

Status Validator::Check(const bson_t* doc) const {
  // A regex (a query $regex or a $jsonSchema pattern) that reaches a PCRE2
  // limit fails the write with that error rather than calling the document
  // invalid.
  Status match_error;
  bool valid = false;
  BsonPtr details = NewBson();
  {
    query::ExprEvalScope scope(nullptr, &match_error);
    valid = Validate(doc, details.get());
  }
  if (match_error.code() == ErrorCode::kLocation51156) return match_error;
  if (valid) return Status::OK();
  bson_t* info = bson_new();
  bson_iter_t it;
  if (doc != nullptr && bson_iter_init_find(&it, doc, "_id")) {
    bson_append_value(info, "failingDocumentId", -1, bson_iter_value(&it));
  }
  bson_append_document(info, "details", -1, details.get());
  return Status(ErrorCode::kDocumentValidationFailure, "Document failed validation",
                std::make_shared<const Document>(Document::Adopt(info)));
}

}  // namespace schema
}  // namespace gatedb
