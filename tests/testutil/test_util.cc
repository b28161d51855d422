#include "tests/testutil/test_util.h"

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

}  // namespace test
}  // namespace gatedb
