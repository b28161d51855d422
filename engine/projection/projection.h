// File: engine/projection/projection.h
//
// Projection: a parsed find() projection ({a: 1, "b.c": 1}, {secret: 0},
// {comments: {$slice: -5}}) applied to documents with MongoDB 4.4+ find
// semantics:
//   * an inclusion projection keeps _id (unless {_id: 0}) and the listed
//     paths; an exclusion projection drops the listed paths and keeps the
//     rest.  true/false and numbers (non-zero includes) are allowed; mixing
//     the two is an error, except that _id may be excluded from an inclusion
//     projection and included in an exclusion one;
//   * {} (or an exclusion with nothing to exclude) is the identity;
//   * dotted paths ("a.b") and sub-projections ({a: {b: 1}}) reach through
//     embedded documents and arrays of documents: {"a.b": 1} keeps each
//     element's b and drops scalar elements of a, {"a.b": 0} removes each
//     element's b and keeps scalar elements; nested arrays are traversed;
//   * {"a.b": 1} on {a: 5} drops a; on {a: {c: 1}} gives {a: {}};
//   * output fields keep the document's order, not the spec's;
//   * {arr: {$slice: n}} keeps the first n (n >= 0) or last -n elements of
//     an array, {$slice: [skip, limit]} skips first (from the end when
//     negative).  $slice on its own is an exclusion projection ({_id: 1}
//     alongside makes it an inclusion); in an inclusion projection the
//     sliced path is included.  A non-array value is left alone.
// Not supported: positional ("a.$"), $elemMatch, $meta and other $-operators,
// and 4.4+ computed fields/literals ({a: "x"}, {a: "$b"}, {a: null}).
//
// Thread safety: a Projection is immutable after Parse(); Apply() may be
// called from many threads at once.
//
//   ASSIGN_OR_RETURN(auto proj, projection::Projection::Parse(spec));
//   bson_t out = BSON_INITIALIZER;
//   proj->Apply(doc, &out);
#ifndef GATEDB_ENGINE_PROJECTION_PROJECTION_H_
#define GATEDB_ENGINE_PROJECTION_PROJECTION_H_

#include <bson/bson.h>

#include <memory>

#include "gatedb/status.h"

namespace gatedb {
namespace projection {

class Projection {
 public:
  // Parses a find() projection.  Errors (MongoDB's codes where gatedb has
  // them, BadValue with MongoDB's message otherwise):
  //   * Location31253 "Cannot do inclusion on field x in exclusion projection";
  //   * Location31254 "Cannot do exclusion on field x in inclusion projection";
  //   * BadValue "Path collision at a.b remaining portion b" ({a: 1, "a.b": 1})
  //     and "Path collision at a" ({"a.b": 1, a: 1}; MongoDB 31249/31250);
  //   * BadValue for a bad field path ("", "a..b", "$a"; see
  //     ValidateFieldPath), an empty sub-projection {a: {}} (MongoDB 51270),
  //     a malformed $slice argument (MongoDB 31257-31259, 31272, 31273);
  //   * BadValue "projection operator $x is not supported" for $elemMatch,
  //     $meta or any other {$x: ...} value, "positional projection operator
  //     is not supported: a.$" for a positional path, and "projection
  //     expressions are not supported" for a value that is not a number,
  //     bool or object.
  static StatusOr<std::unique_ptr<Projection>> Parse(const bson_t* spec);

  ~Projection();
  Projection(const Projection&) = delete;
  Projection& operator=(const Projection&) = delete;

  // Appends the projection of `doc` to `out`, which the caller has
  // initialized (normally empty; fields already in it are kept).
  void Apply(const bson_t* doc, bson_t* out) const;

  // True when Apply() copies every document unchanged ({}, {_id: 1, x: 0}
  // is not: it drops x).
  bool is_identity() const;
  // True for an inclusion projection (only the listed paths and _id kept).
  bool is_inclusion() const { return inclusion_; }

  struct Node;  // the parsed path tree; internal to projection.cc

 private:
  Projection(std::unique_ptr<Node> root, bool inclusion);

  // Constant after construction.
  const std::unique_ptr<Node> root_;
  const bool inclusion_;
};

}  // namespace projection
}  // namespace gatedb

#endif  // GATEDB_ENGINE_PROJECTION_PROJECTION_H_
