// Helpers shared by the index tests: hints as the engine takes them, and a
// document's integer _id.
#ifndef GATEDB_TESTS_ENGINE_STORAGE_INDEX_TEST_UTIL_H_
#define GATEDB_TESTS_ENGINE_STORAGE_INDEX_TEST_UTIL_H_

#include <string>

#include "gatedb/document.h"
#include "gatedb/value.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace index_test {

// The value of field "v" of `holder`.
inline Value ValueOf(const Document& holder) {
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init_find(&it, holder.bson(), "v"));
  return Value(*bson_iter_value(&it));
}
// {$natural: 1}: a forced collection scan.
inline Value NaturalHint() { return ValueOf(test::Json(R"({"v": {"$natural": 1}})")); }
// An index forced by name.
inline Value NameHint(const std::string& name) {
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "v", name.c_str());
  return ValueOf(Document::Adopt(d));
}
inline int64_t IdOf(const bson_t* doc) {
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init_find(&it, doc, "_id")) << test::ToJson(doc);
  return bson_iter_as_int64(&it);
}

}  // namespace index_test
}  // namespace gatedb

#endif  // GATEDB_TESTS_ENGINE_STORAGE_INDEX_TEST_UTIL_H_
