#include <string>

#include "engine/storage/requests.h"

namespace gatedb {

const char* ConflictModeName(ConflictMode mode) {
  switch (mode) {
    case ConflictMode::kReject: return "reject";
    case ConflictMode::kFieldMerge: return "fieldMerge";
    case ConflictMode::kSourcePriority: return "sourcePriority";
    case ConflictMode::kAppendOnly: return "appendOnly";
  }
  return "reject";
}

Status ParseConflictPolicy(const bson_t* spec, ConflictPolicy* out) {
  ConflictPolicy policy;
  bool have_mode = false;
  bson_iter_t it;
  bson_iter_init(&it, spec);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (key == "mode") {
      if (!BSON_ITER_HOLDS_UTF8(&it)) return Status(ErrorCode::kTypeMismatch, "conflictPolicy.mode must be a string");
      std::string mode = bson_iter_utf8(&it, nullptr);
      if (mode == "reject") {
        policy.mode = ConflictMode::kReject;
      } else if (mode == "fieldMerge") {
        policy.mode = ConflictMode::kFieldMerge;
      } else if (mode == "sourcePriority") {
        policy.mode = ConflictMode::kSourcePriority;
      } else if (mode == "appendOnly") {
        policy.mode = ConflictMode::kAppendOnly;
      } else {
        return Status(ErrorCode::kInvalidOptions, "unknown conflictPolicy.mode '" + mode +
                                                      "' (reject, fieldMerge, sourcePriority or appendOnly)");
      }
      have_mode = true;
    } else if (key == "sourcePriority") {
      bson_iter_t arr;
      if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) {
        return Status(ErrorCode::kTypeMismatch, "conflictPolicy.sourcePriority must be an array of strings");
      }
      while (bson_iter_next(&arr)) {
        if (!BSON_ITER_HOLDS_UTF8(&arr)) {
          return Status(ErrorCode::kTypeMismatch, "conflictPolicy.sourcePriority must be an array of strings");
        }
        policy.source_priority.emplace_back(bson_iter_utf8(&arr, nullptr));
      }
    } else if (key == "mergeIncrements") {
      if (!BSON_ITER_HOLDS_BOOL(&it)) return Status(ErrorCode::kTypeMismatch, "conflictPolicy.mergeIncrements must be a bool");
      policy.merge_increments = bson_iter_bool(&it);
    } else {
      return Status(ErrorCode::kLocation40415, "BSON field 'conflictPolicy." + key + "' is an unknown field.");
    }
  }
  if (!have_mode) return Status(ErrorCode::kInvalidOptions, "conflictPolicy needs a mode");
  if (policy.mode == ConflictMode::kSourcePriority && policy.source_priority.empty()) {
    return Status(ErrorCode::kInvalidOptions, "conflictPolicy mode sourcePriority needs a non-empty sourcePriority list");
  }
  *out = std::move(policy);
  return Status::OK();
}

void AppendConflictPolicy(const ConflictPolicy& policy, bson_t* out, const char* key) {
  bson_t p, arr;
  bson_append_document_begin(out, key, -1, &p);
  BSON_APPEND_UTF8(&p, "mode", ConflictModeName(policy.mode));
  if (!policy.source_priority.empty()) {
    BSON_APPEND_ARRAY_BEGIN(&p, "sourcePriority", &arr);
    char buf[16];
    for (size_t i = 0; i < policy.source_priority.size(); ++i) {
      const char* k;
      bson_uint32_to_string(static_cast<uint32_t>(i), &k, buf, sizeof buf);
      BSON_APPEND_UTF8(&arr, k, policy.source_priority[i].c_str());
    }
    bson_append_array_end(&p, &arr);
  }
  if (policy.merge_increments) BSON_APPEND_BOOL(&p, "mergeIncrements", true);
  bson_append_document_end(out, &p);
}

}  // namespace gatedb
