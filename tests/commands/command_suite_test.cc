// Runs every tests/commands/*.test script (see README.md there) against a
// fresh database and checks each reply.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/document/bson_compare.h"
#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

const char* TypeAlias(bson_type_t t) {
  switch (t) {
    case BSON_TYPE_DOUBLE: return "double";
    case BSON_TYPE_UTF8: return "string";
    case BSON_TYPE_DOCUMENT: return "object";
    case BSON_TYPE_ARRAY: return "array";
    case BSON_TYPE_OID: return "objectId";
    case BSON_TYPE_BOOL: return "bool";
    case BSON_TYPE_DATE_TIME: return "date";
    case BSON_TYPE_NULL: return "null";
    case BSON_TYPE_INT32: return "int";
    case BSON_TYPE_INT64: return "long";
    case BSON_TYPE_DECIMAL128: return "decimal";
    case BSON_TYPE_TIMESTAMP: return "timestamp";
    default: return "other";
  }
}

bool ValuesMatch(const bson_value_t& expected, const bson_value_t& actual, bool subset, std::string* why,
                 const std::string& path);

bool DocsMatch(const bson_t* expected, const bson_t* actual, bool subset, bool ordered, std::string* why,
               const std::string& path) {
  bson_iter_t e, a;
  if (ordered) {
    bson_iter_init(&e, expected);
    bson_iter_init(&a, actual);
    size_t i = 0;
    while (true) {
      bool he = bson_iter_next(&e), ha = bson_iter_next(&a);
      if (!he && !ha) return true;
      if (he != ha) {
        *why = path + ": expected " + std::to_string(bson_count_keys(expected)) + " elements, got " +
               std::to_string(bson_count_keys(actual));
        return false;
      }
      if (!ValuesMatch(*bson_iter_value(&e), *bson_iter_value(&a), subset, why, path + "." + std::to_string(i)))
        return false;
      ++i;
    }
  }
  bson_iter_init(&e, expected);
  while (bson_iter_next(&e)) {
    std::string key = bson_iter_key(&e);
    if (!bson_iter_init_find(&a, actual, key.c_str())) {
      *why = path + "." + key + ": missing";
      return false;
    }
    if (!ValuesMatch(*bson_iter_value(&e), *bson_iter_value(&a), subset, why, path + "." + key)) return false;
  }
  if (!subset && bson_count_keys(expected) != bson_count_keys(actual)) {
    *why = path + ": unexpected extra fields";
    return false;
  }
  return true;
}

// The script's captured values (canonical Extended JSON), by name.
std::map<std::string, std::string> g_captures;

bool ValuesMatch(const bson_value_t& expected, const bson_value_t& actual, bool subset, std::string* why,
                 const std::string& path) {
  if (expected.value_type == BSON_TYPE_UTF8 && std::strcmp(expected.value.v_utf8.str, "$any") == 0) return true;
  if (expected.value_type == BSON_TYPE_DOCUMENT) {
    bson_t ed;
    bson_init_static(&ed, expected.value.v_doc.data, expected.value.v_doc.data_len);
    bson_iter_t t;
    if (bson_iter_init_find(&t, &ed, "$capture") && bson_count_keys(&ed) == 1 && BSON_ITER_HOLDS_UTF8(&t)) {
      bson_t* holder = bson_new();
      bson_append_value(holder, "v", 1, &actual);
      char* json = bson_as_canonical_extended_json(holder, nullptr);
      std::string text(json);
      bson_free(json);
      bson_destroy(holder);
      // {"v" : <value> } -> <value>
      size_t colon = text.find(':');
      g_captures[bson_iter_utf8(&t, nullptr)] = text.substr(colon + 1, text.rfind('}') - colon - 1);
      return true;
    }
    if (bson_iter_init_find(&t, &ed, "$type") && bson_count_keys(&ed) == 1 && BSON_ITER_HOLDS_UTF8(&t)) {
      if (std::strcmp(bson_iter_utf8(&t, nullptr), TypeAlias(actual.value_type)) == 0) return true;
      *why = path + ": expected type " + bson_iter_utf8(&t, nullptr) + ", got " + TypeAlias(actual.value_type);
      return false;
    }
    if (actual.value_type != BSON_TYPE_DOCUMENT) {
      *why = path + ": expected a document";
      return false;
    }
    bson_t ad;
    bson_init_static(&ad, actual.value.v_doc.data, actual.value.v_doc.data_len);
    return DocsMatch(&ed, &ad, subset, false, why, path);
  }
  if (expected.value_type == BSON_TYPE_ARRAY) {
    if (actual.value_type != BSON_TYPE_ARRAY) {
      *why = path + ": expected an array";
      return false;
    }
    bson_t ea, aa;
    bson_init_static(&ea, expected.value.v_doc.data, expected.value.v_doc.data_len);
    bson_init_static(&aa, actual.value.v_doc.data, actual.value.v_doc.data_len);
    // Elements of arrays match whole (not as subsets) unless the subset
    // mode was asked for.
    return DocsMatch(&ea, &aa, subset, true, why, path);
  }
  if (CompareValues(expected, actual) != 0) {
    *why = path + ": values differ";
    return false;
  }
  return true;
}

std::vector<std::string> TestFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(GATEDB_COMMAND_TESTS_DIR)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class CommandSuiteTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CommandSuiteTest, Script) {
  g_captures.clear();
  test::TempDir dir;
  auto db = Database::Open(dir.path());
  ASSERT_OK(db);
  std::ifstream in(GetParam());
  ASSERT_TRUE(in) << GetParam();
  std::string line;
  int line_no = 0, checks = 0;
  std::optional<Document> last_reply;
  std::string last_command;
  while (std::getline(in, line)) {
    ++line_no;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b);
    SCOPED_TRACE(GetParam() + ":" + std::to_string(line_no));
    auto directive_end = line.find(' ');
    std::string directive = line.substr(0, directive_end);
    std::string rest = directive_end == std::string::npos ? "" : line.substr(directive_end + 1);
    // "$$name" stands for a value captured by {"$capture": "name"}.
    for (const auto& [name, json] : g_captures) {
      const std::string token = "\"$$" + name + "\"";
      for (size_t at = rest.find(token); at != std::string::npos; at = rest.find(token, at + json.size())) {
        rest.replace(at, token.size(), json);
      }
    }
    if (directive == ">") {
      auto cmd = Document::FromJson(rest);
      ASSERT_OK(cmd) << "bad command JSON: " << rest;
      last_command = rest;
      last_reply = (*db)->RunCommand(cmd->view());
      continue;
    }
    ASSERT_TRUE(last_reply.has_value()) << "an expectation must follow a '>' command line";
    const bson_t* reply = last_reply->bson();
    std::string context = "command: " + last_command + "\nreply:   " + last_reply->ToJson();
    ++checks;
    if (directive == "<" || directive == "<~") {
      auto expected = Document::FromJson(rest);
      ASSERT_OK(expected) << "bad expectation JSON: " << rest;
      std::string why;
      EXPECT_TRUE(DocsMatch(expected->bson(), reply, directive == "<~", false, &why, "reply"))
          << why << "\n" << context << "\nexpected: " << rest;
    } else if (directive == "<!") {
      bson_iter_t it;
      double ok = bson_iter_init_find(&it, reply, "ok") ? bson_iter_as_double(&it) : -1;
      std::string code_name = bson_iter_init_find(&it, reply, "codeName") && BSON_ITER_HOLDS_UTF8(&it)
                                  ? bson_iter_utf8(&it, nullptr) : "";
      EXPECT_EQ(ok, 0.0) << context;
      EXPECT_EQ(code_name, rest) << context;
    } else if (directive == "<w") {
      bson_iter_t it, we;
      bool found = false;
      if (bson_iter_init_find(&it, reply, "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &we)) {
        while (bson_iter_next(&we)) {
          bson_iter_t f;
          if (bson_iter_recurse(&we, &f) && bson_iter_find(&f, "codeName") && BSON_ITER_HOLDS_UTF8(&f) &&
              rest == bson_iter_utf8(&f, nullptr)) {
            found = true;
          }
        }
      }
      EXPECT_TRUE(found) << "expected a writeErrors entry " << rest << "\n" << context;
    } else {
      ADD_FAILURE() << "unknown directive '" << directive << "'";
    }
  }
  EXPECT_GT(checks, 0) << "a script must check at least one reply";
}

std::string NameOf(const ::testing::TestParamInfo<std::string>& info) {
  std::string stem = std::filesystem::path(info.param).stem().string();
  for (char& c : stem) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return stem;
}

INSTANTIATE_TEST_SUITE_P(Scripts, CommandSuiteTest, ::testing::ValuesIn(TestFiles()), NameOf);

}  // namespace
}  // namespace gatedb
