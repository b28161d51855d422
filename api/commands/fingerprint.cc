#include "api/commands/fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "engine/util/coding.h"

namespace gatedb {
namespace commands {

namespace {

bool LeftOut(std::string_view key) {
  static const char* const kSkip[] = {
      "writeContext", "lsid", "txnNumber", "autocommit", "startTransaction", "writeConcern", "comment",
      "maxTimeMS", "$clusterTime", "$readPreference", "readPreference", "apiVersion", "apiStrict",
      "apiDeprecationErrors", "$client", "$audit", "mayBypassWriteBlocking"};
  for (const char* s : kSkip) {
    if (key == s) return true;
  }
  return false;
}

enum class Shape {
  kExact,        // copy as is
  kTopSorted,    // sort this document's own fields only
  kUpdate,       // operators sorted, and the paths under each
  kStatement,    // an update/delete statement
  kStatements,   // an array of statements
};

Shape ShapeOfTopLevel(std::string_view key) {
  if (key == "updates" || key == "deletes") return Shape::kStatements;
  if (key == "query" || key == "fields" || key == "filter" || key == "projection") return Shape::kTopSorted;
  if (key == "update") return Shape::kUpdate;
  return Shape::kExact;
}

Shape ShapeInStatement(std::string_view key) {
  if (key == "q") return Shape::kTopSorted;
  if (key == "u") return Shape::kUpdate;
  return Shape::kExact;
}

struct Field {
  std::string_view key;
  bson_iter_t it;
};

std::vector<Field> Fields(const bson_t* doc) {
  std::vector<Field> out;
  bson_iter_t it;
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) out.push_back(Field{bson_iter_key(&it), it});
  }
  return out;
}

void SortFields(std::vector<Field>* fields) {
  // Insertion sort: stable, with no temporary buffer (std::stable_sort's
  // would under-align the bson_iter_t inside Field); commands have few fields.
  for (size_t i = 1; i < fields->size(); ++i) {
    for (size_t j = i; j > 0 && (*fields)[j].key < (*fields)[j - 1].key; --j) std::swap((*fields)[j], (*fields)[j - 1]);
  }
}

bool SubDocument(const bson_iter_t* it, bson_t* out) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (BSON_ITER_HOLDS_DOCUMENT(it)) {
    bson_iter_document(it, &len, &data);
  } else if (BSON_ITER_HOLDS_ARRAY(it)) {
    bson_iter_array(it, &len, &data);
  } else {
    return false;
  }
  return bson_init_static(out, data, len);
}

void AppendShaped(bson_t* out, const Field& f, Shape shape);

void AppendDocShaped(bson_t* out, std::string_view key, const bson_t* doc, Shape shape, bool is_array) {
  bson_t child;
  if (is_array) {
    bson_append_array_begin(out, key.data(), static_cast<int>(key.size()), &child);
  } else {
    bson_append_document_begin(out, key.data(), static_cast<int>(key.size()), &child);
  }
  std::vector<Field> fields = Fields(doc);
  bool operators = shape == Shape::kUpdate && !fields.empty() && fields[0].key[0] == '$';
  if (shape == Shape::kTopSorted || shape == Shape::kStatement || operators) SortFields(&fields);
  for (const Field& f : fields) {
    Shape inner = Shape::kExact;
    if (shape == Shape::kStatements) inner = Shape::kStatement;
    if (shape == Shape::kStatement) inner = ShapeInStatement(f.key);
    if (operators) inner = Shape::kTopSorted;
    AppendShaped(&child, f, inner);
  }
  if (is_array) {
    bson_append_array_end(out, &child);
  } else {
    bson_append_document_end(out, &child);
  }
}

void AppendShaped(bson_t* out, const Field& f, Shape shape) {
  bson_t sub;
  if (shape != Shape::kExact && SubDocument(&f.it, &sub)) {
    AppendDocShaped(out, f.key, &sub, shape, BSON_ITER_HOLDS_ARRAY(&f.it));
    return;
  }
  bson_append_iter(out, f.key.data(), static_cast<int>(f.key.size()), &f.it);
}

}  // namespace

std::string CanonicalCommand(const bson_t* cmd) {
  bson_t out = BSON_INITIALIZER;
  std::vector<Field> fields = Fields(cmd);
  if (!fields.empty()) {
    bson_append_iter(&out, fields[0].key.data(), static_cast<int>(fields[0].key.size()), &fields[0].it);
    std::vector<Field> rest(fields.begin() + 1, fields.end());
    rest.erase(std::remove_if(rest.begin(), rest.end(), [](const Field& f) { return LeftOut(f.key); }), rest.end());
    SortFields(&rest);
    for (const Field& f : rest) AppendShaped(&out, f, ShapeOfTopLevel(f.key));
  }
  std::string bytes(reinterpret_cast<const char*>(bson_get_data(&out)), out.len);
  bson_destroy(&out);
  return bytes;
}

std::string CommandFingerprint(const bson_t* cmd) {
  std::string canonical = CanonicalCommand(cmd);
  XXH128_hash_t h = XXH3_128bits(canonical.data(), canonical.size());
  std::string out;
  PutFixed64BE(&out, h.high64);
  PutFixed64BE(&out, h.low64);
  return out;
}

}  // namespace commands
}  // namespace gatedb
