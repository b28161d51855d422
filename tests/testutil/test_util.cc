#include "tests/testutil/test_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdlib>
#include <filesystem>
#include <random>

namespace gatedb {
namespace test {

Document Json(const std::string& json) {
  StatusOr<Document> d = Document::FromJson(json);
  EXPECT_TRUE(d.ok()) << d.status().ToString() << " in " << json;
  if (!d.ok()) return Document();
  return std::move(d).value();
}

namespace {
bool Find(const bson_t* doc, const char* path, bson_iter_t* out) {
  bson_iter_t it;
  return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, out);
}
}  // namespace

int64_t IntAt(const bson_t* doc, const char* path) {
  bson_iter_t f;
  if (!Find(doc, path, &f)) return -999;
  if (BSON_ITER_HOLDS_DATE_TIME(&f)) return bson_iter_date_time(&f);
  return bson_iter_as_int64(&f);
}

std::string StrAt(const bson_t* doc, const char* path) {
  bson_iter_t f;
  if (!Find(doc, path, &f) || !BSON_ITER_HOLDS_UTF8(&f)) return "";
  return bson_iter_utf8(&f, nullptr);
}

bool HasPath(const bson_t* doc, const char* path) {
  bson_iter_t f;
  return Find(doc, path, &f);
}

std::vector<std::string> StringsAt(const bson_t* doc, const char* path) {
  std::vector<std::string> out;
  bson_iter_t f, arr;
  if (Find(doc, path, &f) && bson_iter_recurse(&f, &arr)) {
    while (bson_iter_next(&arr)) {
      if (BSON_ITER_HOLDS_UTF8(&arr)) out.emplace_back(bson_iter_utf8(&arr, nullptr));
    }
  }
  return out;
}

std::vector<std::string> Keys(const bson_t* doc) {
  std::vector<std::string> out;
  bson_iter_t it;
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) out.emplace_back(bson_iter_key(&it));
  }
  return out;
}

std::vector<uint32_t> TopLevelOffsets(const bson_t* doc, const std::vector<std::string>& names) {
  std::vector<uint32_t> out;
  for (const std::string& name : names) {
    bson_iter_t it;
    const bool found = bson_iter_init_find_w_len(&it, doc, name.data(), static_cast<int>(name.size()));
    out.push_back(found ? bson_iter_offset(&it) : 0);
  }
  return out;
}

std::string ToJson(const bson_t* b) { return DocumentView(b).ToJson(); }

TempDir::TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path root = base ? base : std::filesystem::temp_directory_path();
  std::random_device rd;
  for (int i = 0; i < 100; ++i) {
    std::filesystem::path p = root / ("gatedb_test_" + std::to_string(rd()));
    std::error_code ec;
    if (std::filesystem::create_directory(p, ec)) {
      path_ = p.string();
      return;
    }
  }
  ADD_FAILURE() << "could not create a temporary directory";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

KilledChild RunAndKill(const std::function<void(int fd)>& child, int64_t warm_up, int delay_ms) {
  KilledChild out;
  int fds[2];
  if (pipe(fds) != 0) return out;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    _exit(7);  // `child` must not return
  }
  out.started = true;
  close(fds[1]);
  int64_t v;
  while (out.last < warm_up && read(fds[0], &v, sizeof v) == sizeof v) out.last = v;
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  out.killed = WIFSIGNALED(status);
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  while (read(fds[0], &v, sizeof v) == sizeof v) out.last = v;
  close(fds[0]);
  return out;
}

Document EveryJsonType() {
  return Json(R"json({
    "double": 1.5, "string": "s", "doc": {"a": 1, "b": [1, {"c": 2}]}, "array": [1, "two"],
    "binary": {"$binary": {"base64": "AQID", "subType": "04"}},
    "old": {"$binary": {"base64": "AQID", "subType": "02"}},
    "undefined": {"$undefined": true},
    "oid": {"$oid": "0123456789abcdef01234567"}, "bool": true,
    "date": {"$date": {"$numberLong": "-5"}}, "null": null,
    "regex": {"$regularExpression": {"pattern": "^a.c$", "options": "imx"}},
    "dbpointer": {"$dbPointer": {"$ref": "c", "$id": {"$oid": "0123456789abcdef01234567"}}},
    "code": {"$code": "f()"}, "symbol": {"$symbol": "sym"},
    "codews": {"$code": "g()", "$scope": {"x": 1}},
    "int32": 7, "timestamp": {"$timestamp": {"t": 5, "i": 6}},
    "int64": {"$numberLong": "9000000000"}, "decimal": {"$numberDecimal": "1.25"},
    "min": {"$minKey": 1}, "max": {"$maxKey": 1}, "": "empty key"})json");
}

}  // namespace test
}  // namespace gatedb
