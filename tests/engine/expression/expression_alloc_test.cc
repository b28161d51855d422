// The performance contract of field paths: evaluating "$qty" (and simple
// arithmetic or comparisons over it) for many documents allocates nothing
// per document.  This file replaces the global operator new of the test
// binary with one that counts, while a test asks it to, the allocations
// made on the test's thread.
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "tests/engine/expression/expression_test_util.h"

namespace {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them):
// every form must come from this file, or a sanitizer sees a library new
// freed by this delete.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace gatedb {
namespace expression {
namespace test {
namespace {

// Allocations made by evaluating `expr` once per document, for 1000
// documents (the documents are built before counting starts).
size_t AllocationsFor(const std::string& expr) {
  StatusOr<std::unique_ptr<Expression>> e = Parse(expr);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return SIZE_MAX;
  std::vector<Document> docs;
  for (int i = 0; i < 1000; ++i) {
    docs.push_back(gatedb::test::Json(R"({"_id": )" + std::to_string(i) + R"(, "item": "abc", "qty": )" +
                                      std::to_string(i) + R"(, "price": 2.5, "tags": ["a", "b"]})"));
  }
  EvalContext ctx;
  size_t failures = 0;
  g_allocations = 0;
  g_counting = true;
  for (const Document& d : docs) {
    ctx.SetRoot(d.bson());
    StatusOr<Value> v = (*e)->Evaluate(ctx);
    if (!v.ok()) ++failures;
  }
  g_counting = false;
  EXPECT_EQ(0u, failures);
  return g_allocations;
}

TEST(AllocationTest, FieldPathsBorrowAndNumbersAreInline) {
  EXPECT_EQ(0u, AllocationsFor(R"("$qty")"));
  EXPECT_EQ(0u, AllocationsFor(R"("$item")"));  // a string borrowed from the document
  EXPECT_EQ(0u, AllocationsFor(R"("$tags")"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$add": ["$qty", 1]})"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$multiply": ["$qty", "$price"]})"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$gt": ["$qty", 500]})"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$and": [{"$gte": ["$qty", 10]}, {"$eq": ["$item", "abc"]}]})"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$cond": [{"$lt": ["$qty", 5]}, "low", "high"]})"));
  EXPECT_EQ(0u, AllocationsFor(R"({"$size": "$tags"})"));
}

TEST(AllocationTest, CounterSeesAllocations) {
  // The counter works: building a string allocates.
  EXPECT_GT(AllocationsFor(R"({"$concat": ["$item", "-more-than-fifteen-bytes"]})"), 0u);
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
