// Test helpers shared by every gatedb test: status assertions, temporary
// directories, and JSON shorthands.
#ifndef GATEDB_TESTS_TESTUTIL_TEST_UTIL_H_
#define GATEDB_TESTS_TESTUTIL_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/status.h"

// ASSERT_OK(expr) << "more context"; evaluates expr once.
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::gatedb::test::IsOkPredFormat, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::gatedb::test::IsOkPredFormat, expr)

namespace gatedb {
namespace test {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const StatusOr<T>& s) { return s.status(); }

template <typename T>
::testing::AssertionResult IsOkPredFormat(const char* expr_text, const T& s) {
  if (StatusOf(s).ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr_text << " is " << StatusOf(s).ToString();
}

// Matches a Status or StatusOr whose code is `code`.
MATCHER_P(StatusIs, code, std::string("has code ") + ErrorCodeName(code)) {
  const Status& s = StatusOf(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code;
}

// Parses relaxed or canonical Extended JSON; fails the test on bad input.
Document Json(const std::string& json);

// Values at a dotted path of a document, for assertions.  IntAt reads any
// number or a date (ms); -999 when the path is missing.  StrAt is "" when
// missing or not a string; StringsAt reads an array of strings.
int64_t IntAt(const bson_t* doc, const char* path);
std::string StrAt(const bson_t* doc, const char* path);
bool HasPath(const bson_t* doc, const char* path);
std::vector<std::string> StringsAt(const bson_t* doc, const char* path);
// The document's top-level field names, in order (repeats included).
std::vector<std::string> Keys(const bson_t* doc);

// The offset of each of `names`' first top-level element in `doc`
// (bson_iter_offset), 0 where `doc` lacks it: a search, to check offsets
// that the code under test noted without one.
std::vector<uint32_t> TopLevelOffsets(const bson_t* doc, const std::vector<std::string>& names);

// Relaxed Extended JSON of a bson_t, for assertions.
std::string ToJson(const bson_t* b);

// A document holding one field of every type Extended JSON can spell (the
// old binary subtype too, nested documents and arrays, an empty key): 23
// top-level fields.
Document EveryJsonType();
constexpr size_t kEveryJsonTypeFields = 23;

// A fresh empty directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The kill -9 scaffold of the crash tests.  Forks; the child runs
// `child(fd)`, which must not return and reports progress by writing int64
// numbers to fd.  The parent reads until the child has reported `warm_up`
// (or ended), waits `delay_ms`, SIGKILLs it and reads what it reported
// before dying.  Forking only from a single-threaded test process.
struct KilledChild {
  bool started = false;   // pipe and fork worked
  bool killed = false;    // the child died of the SIGKILL, not on its own
  int exit_code = 0;      // when it exited on its own
  int64_t last = -1;      // the last number it reported (-1: none)
};
KilledChild RunAndKill(const std::function<void(int fd)>& child, int64_t warm_up, int delay_ms);

}  // namespace test
}  // namespace gatedb

#endif  // GATEDB_TESTS_TESTUTIL_TEST_UTIL_H_
