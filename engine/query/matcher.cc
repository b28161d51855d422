#include "engine/query/matcher.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "engine/query/expression_parser.h"
#include "engine/query/match_expression.h"

namespace gatedb {
namespace query {

Matcher::Matcher(std::unique_ptr<MatchExpression> root) : root_(std::move(root)) {}

Matcher::~Matcher() = default;

namespace {

// $expr can only sit under the top level and $and/$or/$nor.
bool ContainsExpr(const MatchExpression* e) {
  switch (e->kind()) {
    case ExprKind::kExpr: return true;
    case ExprKind::kRoot: return ContainsExpr(static_cast<const RootExpression*>(e)->child());
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNor:
      for (const ExprPtr& c : static_cast<const ListExpression*>(e)->children()) {
        if (ContainsExpr(c.get())) return true;
      }
      return false;
    default: return false;
  }
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<Matcher>> Matcher::Parse(const bson_t* filter) { return Parse(filter, nullptr); }

StatusOr<std::unique_ptr<Matcher>> Matcher::Parse(const bson_t* filter, expression::ParseContext* pc) {
  if (filter == nullptr) return Status(ErrorCode::kBadValue, "filter must be a document");
  // The tree points into this private copy of the filter.
  bson_t* backing = bson_copy(filter);
  if (backing == nullptr) return Status(ErrorCode::kInvalidBSON, "filter is not valid BSON");
  StatusOr<ExprPtr> tree = ParseFilter(backing, pc, NowMs());
  if (!tree.ok()) {
    bson_destroy(backing);
    return tree.status();
  }
  auto root = std::make_unique<RootExpression>(backing, std::move(tree).value());
  const bool has_expr = ContainsExpr(root.get());
  std::unique_ptr<Matcher> m(new Matcher(std::move(root)));
  m->has_expr_ = has_expr;
  m->can_fail_ = m->root_->MayFail();
  return m;
}

StatusOr<bool> Matcher::MatchesOrError(const bson_t* doc, expression::EvalContext* ctx,
                                       MatchDetails* details) const {
  Status error;
  ExprEvalScope scope(ctx, &error);
  const bool matched = Matches(doc, details);
  if (!error.ok()) return error;
  return matched;
}

bool Matcher::Matches(const bson_t* doc, MatchDetails* details) const {
  if (details != nullptr) details->elem_match_index.reset();
  if (doc == nullptr) return false;
  int64_t elem_key = -1;
  const bool matched =
      root_->MatchesDocument(bson_get_data(doc), doc->len, details ? &elem_key : nullptr);
  if (details != nullptr && matched && elem_key >= 0) {
    details->elem_match_index = static_cast<size_t>(elem_key);
  }
  return matched;
}

bool Matcher::MatchesAll() const {
  const MatchExpression* top = static_cast<const RootExpression*>(root_.get())->child();
  return top->kind() == ExprKind::kAnd &&
         static_cast<const ListExpression*>(top)->children().empty();
}

namespace {

struct Equality {
  const std::string* path;  // dotted
  const FieldPath* parts;
  const bson_value_t* value;
};

// MongoDB's extractEqualityMatches over the optimized tree: equalities at
// the top level and under $and; a one-entry $or or $in counts as its entry.
void CollectEqualities(const MatchExpression* e, std::vector<Equality>* out) {
  switch (e->kind()) {
    case ExprKind::kRoot:
      CollectEqualities(static_cast<const RootExpression*>(e)->child(), out);
      break;
    case ExprKind::kAnd:
      for (const ExprPtr& c : static_cast<const ListExpression*>(e)->children()) {
        CollectEqualities(c.get(), out);
      }
      break;
    case ExprKind::kOr: {
      const auto& children = static_cast<const ListExpression*>(e)->children();
      if (children.size() == 1) CollectEqualities(children[0].get(), out);
      break;
    }
    case ExprKind::kEq: {
      auto* eq = static_cast<const ComparisonExpression*>(e);
      out->push_back({&eq->path().dotted, &eq->path(), &eq->rhs()});
      break;
    }
    case ExprKind::kIn: {
      auto* in = static_cast<const InExpression*>(e);
      if (in->equalities().size() == 1 && in->regex_count() == 0) {
        out->push_back({&in->path().dotted, &in->path(), &in->equalities()[0].value});
      }
      break;
    }
    default:
      break;
  }
}

bool IsPathPrefix(const std::string& prefix, const std::string& path) {
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
         path[prefix.size()] == '.';
}

struct Node {
  std::string name;
  const bson_value_t* value = nullptr;
  std::vector<Node> children;
};

void Insert(Node* root, const Equality& eq) {
  Node* cur = root;
  for (const FieldPath::Part& part : eq.parts->parts) {
    auto it = std::find_if(cur->children.begin(), cur->children.end(),
                           [&](const Node& n) { return n.name == part.name; });
    if (it == cur->children.end()) {
      cur->children.push_back(Node{part.name, nullptr, {}});
      cur = &cur->children.back();
    } else {
      cur = &*it;
    }
  }
  cur->value = eq.value;
}

void Emit(const Node& node, bson_t* out) {
  for (const Node& child : node.children) {
    const int len = static_cast<int>(child.name.size());
    if (child.value != nullptr) {
      bson_append_value(out, child.name.data(), len, child.value);
    } else {
      bson_t sub;
      bson_append_document_begin(out, child.name.data(), len, &sub);
      Emit(child, &sub);
      bson_append_document_end(out, &sub);
    }
  }
}

}  // namespace

Status ExtractEqualityFields(const bson_t* filter, bson_t* out) {
  if (out == nullptr) return Status(ErrorCode::kBadValue, "no output document");
  ASSIGN_OR_RETURN(ExprPtr tree, ParseFilter(filter));
  std::vector<Equality> eqs;
  CollectEqualities(tree.get(), &eqs);
  // MongoDB orders the fields by path; _id goes first, as in a new document.
  std::stable_sort(eqs.begin(), eqs.end(),
                   [](const Equality& a, const Equality& b) { return *a.path < *b.path; });
  for (size_t i = 0; i < eqs.size(); ++i) {
    for (size_t j = i + 1; j < eqs.size(); ++j) {
      const std::string& a = *eqs[i].path;
      const std::string& b = *eqs[j].path;
      if (a == b) {
        return Status(ErrorCode::kNotSingleValueField,
                      "cannot infer query fields to set, path '" + a + "' is matched twice");
      }
      if (IsPathPrefix(a, b)) {
        return Status(ErrorCode::kNotSingleValueField,
                      "cannot infer query fields to set, both paths '" + b + "' and '" + a +
                          "' are matched");
      }
    }
  }
  std::stable_partition(eqs.begin(), eqs.end(),
                        [](const Equality& e) { return e.parts->parts[0].name == "_id"; });
  Node root;
  for (const Equality& eq : eqs) Insert(&root, eq);
  Emit(root, out);
  return Status::OK();
}

}  // namespace query
}  // namespace gatedb
