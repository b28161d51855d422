// File: engine/query/match_expression.h
//
// The parsed form of a query filter: a tree of MatchExpression nodes, built
// once by ParseFilter() (expression_parser.h) and evaluated against raw BSON
// bytes without copying them.  Internal to engine/query.
//
// Two ways to evaluate a node, as in MongoDB:
//   MatchesDocument(doc)  - the node against a whole (sub)document; path
//                           nodes walk their path (WalkPath) and test each
//                           element it yields.
//   MatchesValue(value)   - the node against one value, ignoring any path:
//                           how a path node tests what its walk yields, and
//                           how $elemMatch's operator form tests elements.
//
// Both take `elem_key`: null when positional information is not wanted,
// else it receives the array offset ("elemMatchKey") of the element that
// made the match, outermost array first.
//
// Values inside the tree (comparison operands, $in lists) point into the
// filter's bytes, which must outlive the tree (RootExpression keeps a copy).
//
// Thread safety: immutable after parsing; evaluation is const and may run on
// many threads at once.
#ifndef GATEDB_ENGINE_QUERY_MATCH_EXPRESSION_H_
#define GATEDB_ENGINE_QUERY_MATCH_EXPRESSION_H_

#include <bson/bson.h>

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expression/expression.h"
#include "engine/regex/regex_matcher.h"

namespace gatedb {
namespace query {

// The matcher compiles $regex and $in's regexes with engine/regex.
using regex::RegexMatcher;

// A dotted path ("a.b.0.c") split into its components.
struct FieldPath {
  struct Part {
    std::string name;
    bool is_index = false;  // all digits: may address an array element
  };

  explicit FieldPath(std::string_view dotted_path);

  std::string dotted;
  std::vector<Part> parts;
};

// Receives the elements a path yields.
class ElementSink {
 public:
  // `array_offset` is the index of the element in the outermost array that
  // was traversed implicitly, or -1.  Returns true to stop the walk.
  virtual bool Yield(const bson_value_t& value, int64_t array_offset) = 0;

 protected:
  ~ElementSink() = default;
};

// Yields the elements that `path` reaches in the document `data[0, len)`,
// as MongoDB's BSONElementIterator: a missing field yields one EOD value;
// arrays on the way are traversed (documents inside them are searched for
// the rest of the path, and a numeric component also indexes the array); an
// array at the end yields each element and then itself, or only itself when
// `traverse_leaf_arrays` is false.  Returns true when the sink stopped it.
bool WalkPath(const uint8_t* data, uint32_t len, const FieldPath& path,
              bool traverse_leaf_arrays, ElementSink* sink);

enum class ExprKind {
  kRoot,
  kAnd,
  kOr,
  kNor,
  kNot,
  kAlwaysFalse,
  kEq,
  kLt,
  kLte,
  kGt,
  kGte,
  kIn,
  kRegex,
  kExists,
  kType,
  kMod,
  kSize,
  kElemMatchObject,
  kElemMatchValue,
  kExpr,
};

class MatchExpression {
 public:
  explicit MatchExpression(ExprKind kind) : kind_(kind) {}
  virtual ~MatchExpression();
  MatchExpression(const MatchExpression&) = delete;
  MatchExpression& operator=(const MatchExpression&) = delete;

  ExprKind kind() const { return kind_; }

  // The node against the document data[0, len).
  virtual bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const = 0;
  // The node against one value (BSON_TYPE_EOD for a missing one).
  virtual bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const = 0;
  // True when matching can fail with an error (an $expr's evaluation, a
  // regex reaching a PCRE2 limit) somewhere in this subtree.  Such errors
  // are recorded in the current ExprEvalScope (see below).
  virtual bool MayFail() const { return false; }

 private:
  const ExprKind kind_;
};

using ExprPtr = std::unique_ptr<MatchExpression>;

inline bool AnyMayFail(const std::vector<ExprPtr>& nodes) {
  for (const ExprPtr& n : nodes) {
    if (n->MayFail()) return true;
  }
  return false;
}

// $and, $or, $nor (and the implicit $and of a filter's fields).  An empty
// $and matches everything.
class ListExpression final : public MatchExpression {
 public:
  explicit ListExpression(ExprKind kind) : MatchExpression(kind) {}
  bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const override;
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;

  void Add(ExprPtr child) { children_.push_back(std::move(child)); }
  const std::vector<ExprPtr>& children() const { return children_; }
  std::vector<ExprPtr>* mutable_children() { return &children_; }
  bool MayFail() const override { return AnyMayFail(children_); }

 private:
  std::vector<ExprPtr> children_;
};

class NotExpression final : public MatchExpression {
 public:
  explicit NotExpression(ExprPtr child) : MatchExpression(ExprKind::kNot), child_(std::move(child)) {}
  bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const override;
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  bool MayFail() const override { return child_->MayFail(); }

 private:
  ExprPtr child_;
};

class AlwaysFalseExpression final : public MatchExpression {
 public:
  AlwaysFalseExpression() : MatchExpression(ExprKind::kAlwaysFalse) {}
  bool MatchesDocument(const uint8_t*, uint32_t, int64_t*) const override { return false; }
  bool MatchesValue(const bson_value_t&, int64_t*) const override { return false; }
};

// Owns the copy of the filter bytes that the tree's values point into.
class RootExpression final : public MatchExpression {
 public:
  RootExpression(bson_t* backing, ExprPtr child)
      : MatchExpression(ExprKind::kRoot), backing_(backing), child_(std::move(child)) {}
  ~RootExpression() override;
  bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const override {
    return child_->MatchesDocument(data, len, elem_key);
  }
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override {
    return child_->MatchesValue(value, elem_key);
  }
  const MatchExpression* child() const { return child_.get(); }
  bool MayFail() const override { return child_->MayFail(); }

 private:
  bson_t* backing_;  // owned
  ExprPtr child_;    // points into backing_
};

// A predicate on the values a path yields.  An empty path ("") is used by
// the operator form of $elemMatch, where only MatchesValue() is called.
class PathExpression : public MatchExpression {
 public:
  PathExpression(ExprKind kind, std::string_view path, bool traverse_leaf_arrays)
      : MatchExpression(kind), path_(path), traverse_leaf_arrays_(traverse_leaf_arrays) {}
  bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const final;
  const FieldPath& path() const { return path_; }

 private:
  FieldPath path_;
  bool traverse_leaf_arrays_;
};

// $eq, $lt, $lte, $gt, $gte (and implicit equality), with MongoDB's type
// bracketing: values of another canonical type never match, except for
// null vs undefined and MinKey/MaxKey operands.
class ComparisonExpression final : public PathExpression {
 public:
  ComparisonExpression(ExprKind kind, std::string_view path, const bson_value_t& rhs)
      : PathExpression(kind, path, true), rhs_(rhs) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  const bson_value_t& rhs() const { return rhs_; }

 private:
  bson_value_t rhs_;  // points into the filter
};

// A bson_value_t held by value in a container (the type's alignment
// attribute would be dropped from a template argument).
struct ValueRef {
  bson_value_t value;  // shallow: points into the filter
};

class InExpression final : public PathExpression {
 public:
  // `equalities` need not be sorted or unique.
  InExpression(std::string_view path, std::vector<ValueRef> equalities,
               std::vector<std::unique_ptr<RegexMatcher>> regexes);
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  const std::vector<ValueRef>& equalities() const { return equalities_; }
  size_t regex_count() const { return regexes_.size(); }
  bool MayFail() const override;

 private:
  std::vector<ValueRef> equalities_;  // sorted by CompareValues, unique
  std::vector<std::unique_ptr<RegexMatcher>> regexes_;
  bool has_null_ = false;
};

class RegexExpression final : public PathExpression {
 public:
  RegexExpression(std::string_view path, std::unique_ptr<RegexMatcher> re)
      : PathExpression(ExprKind::kRegex, path, true), re_(std::move(re)) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  bool MayFail() const override { return re_->may_fail(); }
  // The shared test used by $regex and $in's regexes: a string matches the
  // pattern, a BSON regex equals it.  A PCRE2 limit reached is recorded in
  // the current ExprEvalScope and does not match.
  static bool Matches(const RegexMatcher& re, const bson_value_t& value);

 private:
  std::unique_ptr<RegexMatcher> re_;
};

class ExistsExpression final : public PathExpression {
 public:
  explicit ExistsExpression(std::string_view path) : PathExpression(ExprKind::kExists, path, true) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
};

class TypeExpression final : public PathExpression {
 public:
  TypeExpression(std::string_view path, std::bitset<256> types, bool all_numbers)
      : PathExpression(ExprKind::kType, path, true), types_(types), all_numbers_(all_numbers) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;

 private:
  std::bitset<256> types_;  // indexed by the bson_type_t byte
  bool all_numbers_;
};

class ModExpression final : public PathExpression {
 public:
  ModExpression(std::string_view path, int64_t divisor, int64_t remainder)
      : PathExpression(ExprKind::kMod, path, true), divisor_(divisor), remainder_(remainder) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;

 private:
  int64_t divisor_;  // never 0
  int64_t remainder_;
};

// $size: tests the array itself (a leaf array is not traversed).
class SizeExpression final : public PathExpression {
 public:
  SizeExpression(std::string_view path, int64_t size)
      : PathExpression(ExprKind::kSize, path, false), size_(size) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;

 private:
  int64_t size_;
};

// {a: {$elemMatch: {b: 1, c: {$gt: 2}}}}: some element of the array (a
// document, or an array seen as a document) matches the sub-filter.
class ElemMatchObjectExpression final : public PathExpression {
 public:
  ElemMatchObjectExpression(std::string_view path, ExprPtr sub)
      : PathExpression(ExprKind::kElemMatchObject, path, false), sub_(std::move(sub)) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  bool MayFail() const override { return sub_->MayFail(); }

 private:
  ExprPtr sub_;
};

// {a: {$elemMatch: {$gt: 1, $lt: 5}}}: some element satisfies all operators.
class ElemMatchValueExpression final : public PathExpression {
 public:
  ElemMatchValueExpression(std::string_view path, std::vector<ExprPtr> subs)
      : PathExpression(ExprKind::kElemMatchValue, path, false), subs_(std::move(subs)) {}
  bool MatchesValue(const bson_value_t& value, int64_t* elem_key) const override;
  bool MayFail() const override { return AnyMayFail(subs_); }

 private:
  std::vector<ExprPtr> subs_;
};

// {$expr: <aggregation expression>}: the document matches when the
// expression, evaluated with $$ROOT and $$CURRENT set to it, is truthy
// (expression::Truthy).  Only a whole document can be tested (MatchesValue
// is false): $expr is parsed at the top level of a filter and inside $and,
// $or and $nor only.
//
// Evaluation uses the EvalContext of the innermost ExprEvalScope on this
// thread (the caller's variables and $$NOW), else a fresh one whose $$NOW
// is the time the filter was parsed.  An evaluation error does not match,
// and is recorded in that scope, which then fails the match
// (Matcher::MatchesOrError).
class ExprMatchExpression final : public MatchExpression {
 public:
  ExprMatchExpression(std::unique_ptr<expression::Expression> expr, int64_t now_ms)
      : MatchExpression(ExprKind::kExpr), expr_(std::move(expr)), now_ms_(now_ms) {}
  bool MatchesDocument(const uint8_t* data, uint32_t len, int64_t* elem_key) const override;
  bool MatchesValue(const bson_value_t&, int64_t*) const override { return false; }
  bool MayFail() const override { return true; }

 private:
  std::unique_ptr<expression::Expression> expr_;
  int64_t now_ms_;
};

// While alive, $expr nodes evaluated on this thread use `ctx` (may be null)
// and record their first evaluation error in *error.  Scopes nest.
class ExprEvalScope {
 public:
  ExprEvalScope(expression::EvalContext* ctx, Status* error);
  ~ExprEvalScope();
  ExprEvalScope(const ExprEvalScope&) = delete;
  ExprEvalScope& operator=(const ExprEvalScope&) = delete;

  expression::EvalContext* ctx() const { return ctx_; }
  void Record(const Status& s) {
    if (error_->ok()) *error_ = s;
  }
  // The innermost scope on this thread, or null.
  static ExprEvalScope* Current();
  // *r when it holds a value; else records the error in the current scope
  // (if any) and returns false: how a regex limit reached inside a match
  // fails the match.
  static bool ValueOrRecord(const StatusOr<bool>& r);

 private:
  expression::EvalContext* ctx_;
  Status* error_;
  ExprEvalScope* outer_;
};

}  // namespace query
}  // namespace gatedb

#endif  // GATEDB_ENGINE_QUERY_MATCH_EXPRESSION_H_
