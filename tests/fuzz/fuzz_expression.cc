// fuzz_expression: the input is two BSON documents (fuzz_split.h).  The
// value of the first document's first field is an aggregation expression;
// the second document is $$ROOT.  Parse the expression, evaluate it, and
// check:
//   - the result appends as well-formed BSON;
//   - the explain form (Serialize) parses again, unless it is too deep, and
//     evaluates to the same value or the same error code ($rand aside);
//   - feeding the result to every accumulator, and merging its partial
//     state into a fresh one, works and gives the same result.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "engine/expression/accumulator.h"
#include "engine/expression/expression.h"
#include "tests/fuzz/fuzz_split.h"

namespace {

using gatedb::StatusOr;
using gatedb::expression::Accumulator;
using gatedb::expression::EvalContext;
using gatedb::expression::Expression;
using gatedb::expression::ParseContext;
using gatedb::expression::Value;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ INVARIANT FAILED: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string Canonical(const Value& v) {
  if (v.missing()) return "missing";
  bson_t tmp = BSON_INITIALIZER;
  v.AppendTo(&tmp, "v");
  char* json = bson_as_canonical_extended_json(&tmp, nullptr);
  std::string s = json ? json : "?";
  bson_free(json);
  bson_destroy(&tmp);
  return s;
}

void CheckWellFormed(const Value& v, const char* what) {
  bson_t tmp = BSON_INITIALIZER;
  v.AppendTo(&tmp, "v");
  if (!gatedb_fuzz::StrictlyValid(&tmp)) Fail(what, Canonical(v));
  bson_destroy(&tmp);
}

StatusOr<Value> Run(const Expression& e, const bson_t* root) {
  EvalContext ctx;
  ctx.SetNow(1700000000000);
  ctx.SetRoot(root);
  StatusOr<Value> v = e.Evaluate(ctx);
  if (!v.ok()) return v.status();
  return v->Detached();
}

void CheckAccumulators(const Value& v) {
  for (const char* op : {"$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet",
                         "$mergeObjects", "$stdDevPop"}) {
    StatusOr<std::unique_ptr<Accumulator>> a = gatedb::expression::NewAccumulator(op);
    StatusOr<std::unique_ptr<Accumulator>> b = gatedb::expression::NewAccumulator(op);
    if (!a.ok() || !b.ok()) Fail("NewAccumulator failed", op);
    if (!(*a)->Process(v).ok() || !(*a)->Process(v).ok()) continue;
    StatusOr<Value> whole = (*a)->Finalize();
    StatusOr<Value> partial = (*a)->SerializePartial();
    if (!whole.ok() || !partial.ok()) continue;  // e.g. too large
    CheckWellFormed(*whole, "accumulator result is malformed BSON");
    if (!partial->self_contained()) Fail("partial state borrows its input", op);
    if (!(*b)->MergePartial(*partial).ok()) Fail("MergePartial refused SerializePartial's output", op);
    StatusOr<Value> merged = (*b)->Finalize();
    if (!merged.ok()) Fail("Finalize after MergePartial failed", op);
    const bool approx = std::strcmp(op, "$avg") == 0 || std::strcmp(op, "$stdDevPop") == 0 ||
                        std::strcmp(op, "$sum") == 0;
    if (!approx && Canonical(*whole) != Canonical(*merged)) {
      Fail("merged partial differs", std::string(op) + ": " + Canonical(*whole) + " vs " + Canonical(*merged));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gatedb_fuzz::TwoDocs docs;
  if (!gatedb_fuzz::SplitTwo(data, size, &docs)) return 0;
  bson_iter_t it;
  if (!bson_iter_init(&it, &docs.a) || !bson_iter_next(&it)) return 0;

  ParseContext pc;
  StatusOr<std::unique_ptr<Expression>> e = gatedb::expression::ParseExpression(*bson_iter_value(&it), &pc);
  if (!e.ok()) return 0;
  StatusOr<Value> v = Run(**e, &docs.b);
  if (v.ok()) {
    CheckWellFormed(*v, "expression result is malformed BSON");
    CheckAccumulators(*v);
  }

  // The explain form parses back to an equivalent expression.
  bson_t serialized = BSON_INITIALIZER;
  (*e)->Serialize(&serialized, "e");
  if (!gatedb_fuzz::StrictlyValid(&serialized)) Fail("Serialize produced malformed BSON", "");
  bson_iter_t sit;
  if (!bson_iter_init_find(&sit, &serialized, "e")) Fail("Serialize wrote nothing", "");
  ParseContext pc2;
  StatusOr<std::unique_ptr<Expression>> again = gatedb::expression::ParseExpression(*bson_iter_value(&sit), &pc2);
  if (!again.ok()) {
    // Operators serialize their arguments as arrays, which adds nesting.
    if (again.status().code() != gatedb::ErrorCode::kOverflow) {
      char* json = bson_as_relaxed_extended_json(&serialized, nullptr);
      std::string detail = again.status().ToString() + "\n" + (json ? json : "");
      bson_free(json);
      Fail("the serialized expression does not parse", detail);
    }
  } else {
    StatusOr<Value> v2 = Run(**again, &docs.b);
    char* json = bson_as_relaxed_extended_json(&serialized, nullptr);
    const std::string form = json ? json : "";
    bson_free(json);
    if (form.find("$rand") == std::string::npos) {
      if (v.ok() != v2.ok()) Fail("the serialized expression evaluates differently", form);
      if (v.ok() && Canonical(*v) != Canonical(*v2)) {
        Fail("the serialized expression gives another value", form + "\n" + Canonical(*v) + " vs " + Canonical(*v2));
      }
      if (!v.ok() && v.status().code() != v2.status().code()) {
        Fail("the serialized expression fails differently", form + "\n" + v.status().ToString() + " vs " +
                                                                 v2.status().ToString());
      }
    }
  }
  bson_destroy(&serialized);
  return 0;
}
