// Helpers for the engine/schema tests: validators and documents from JSON,
// and the details of a failed validation as relaxed Extended JSON.
#ifndef GATEDB_TESTS_ENGINE_SCHEMA_SCHEMA_TEST_UTIL_H_
#define GATEDB_TESTS_ENGINE_SCHEMA_SCHEMA_TEST_UTIL_H_

#include <bson/bson.h>

#include <memory>
#include <string>

#include "engine/schema/validator.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace schema {
namespace testing_util {

// libbson's JSON reader claims some keys for legacy Extended JSON ("$type",
// "$regex", "$options"), so tests spell them "%type", "%regex", "%options";
// CopyRenaming turns every leading '%' of a key into '$'.
inline void CopyRenaming(const bson_t* src, bson_t* dst) {
  bson_iter_t it;
  if (!bson_iter_init(&it, src)) return;
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (!key.empty() && key[0] == '%') key[0] = '$';
    const int key_len = static_cast<int>(key.size());
    if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
      const uint8_t* data = nullptr;
      uint32_t len = 0;
      const bool is_array = BSON_ITER_HOLDS_ARRAY(&it);
      if (is_array) {
        bson_iter_array(&it, &len, &data);
      } else {
        bson_iter_document(&it, &len, &data);
      }
      bson_t sub_src, sub_dst;
      bson_init_static(&sub_src, data, len);
      if (is_array) {
        bson_append_array_begin(dst, key.c_str(), key_len, &sub_dst);
        CopyRenaming(&sub_src, &sub_dst);
        bson_append_array_end(dst, &sub_dst);
      } else {
        bson_append_document_begin(dst, key.c_str(), key_len, &sub_dst);
        CopyRenaming(&sub_src, &sub_dst);
        bson_append_document_end(dst, &sub_dst);
      }
    } else {
      bson_append_value(dst, key.c_str(), key_len, bson_iter_value(&it));
    }
  }
}

// A document from relaxed Extended JSON, '%' keys renamed to '$'.
inline Document Q(const std::string& json) {
  Document parsed = test::Json(json);
  bson_t* out = bson_new();
  CopyRenaming(parsed.bson(), out);
  return Document::Adopt(out);
}

// The canonical rendering used to compare details: relaxed Extended JSON as
// libbson prints it.
inline std::string Canon(const std::string& json) { return test::ToJson(Q(json).bson()); }

inline StatusOr<std::unique_ptr<Validator>> ParseValidator(const std::string& json) {
  Document spec = Q(json);
  return Validator::Parse(spec.bson());
}

// Parses a validator that must be valid (fails the test otherwise).
inline std::unique_ptr<Validator> MustParse(const std::string& json) {
  StatusOr<std::unique_ptr<Validator>> v = ParseValidator(json);
  EXPECT_TRUE(v.ok()) << v.status().ToString() << " for " << json;
  if (!v.ok()) return nullptr;
  return std::move(v).value();
}

// True when `doc_json` passes `validator_json`.
inline bool Passes(const std::string& validator_json, const std::string& doc_json) {
  std::unique_ptr<Validator> v = MustParse(validator_json);
  if (v == nullptr) return false;
  Document doc = Q(doc_json);
  return v->Validate(doc.bson(), nullptr);
}

// The details of `doc_json` failing `validator_json`, as relaxed JSON;
// "<passed>" when it passes.
inline std::string Details(const std::string& validator_json, const std::string& doc_json) {
  std::unique_ptr<Validator> v = MustParse(validator_json);
  if (v == nullptr) return "<invalid validator>";
  Document doc = Q(doc_json);
  bson_t details;
  bson_init(&details);
  const bool passed = v->Validate(doc.bson(), &details);
  std::string out = passed ? "<passed>" : test::ToJson(&details);
  bson_destroy(&details);
  return out;
}

}  // namespace testing_util
}  // namespace schema
}  // namespace gatedb

#endif  // GATEDB_TESTS_ENGINE_SCHEMA_SCHEMA_TEST_UTIL_H_
