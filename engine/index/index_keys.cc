#include "engine/index/index_keys.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "engine/document/bson_compare.h"
#include "engine/keys/key_codec.h"
#include "engine/projection/paths.h"
#include "engine/util/coding.h"
#include "gatedb/value.h"

namespace gatedb {
namespace index {

namespace {

// A document gives at most this many keys to one index (a cartesian product
// of arrays under one shared path can otherwise explode).
constexpr size_t kMaxKeysPerDocument = 100000;

class Collect : public projection::PathValueVisitor {
 public:
  explicit Collect(std::vector<projection::BsonValue>* out) : out_(out) {}
  void Visit(const bson_value_t& value) override { out_->push_back(value); }

 private:
  std::vector<projection::BsonValue>* out_;
};

// The number of leading path parts after which the path first meets an
// array (so 1 for "a.b" when a is an array), or 0 when it meets none.
size_t FirstArrayDepth(const bson_t* doc, const std::vector<std::string>& parts) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!bson_iter_find_w_len(&it, parts[i].data(), static_cast<int>(parts[i].size()))) return 0;
    if (BSON_ITER_HOLDS_ARRAY(&it)) return i + 1;
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return 0;
    bson_iter_t child;
    if (!bson_iter_recurse(&it, &child)) return 0;
    it = child;
  }
  return 0;
}

// True when the path reaches some value (an empty array counts), as
// MongoDB's sparse indexes decide.
bool PathExists(bson_iter_t* it, const std::vector<std::string>& parts, size_t i, int depth) {
  if (i == parts.size()) return true;
  if (depth > 200) return false;
  bson_iter_t child;
  if (BSON_ITER_HOLDS_DOCUMENT(it)) {
    if (!bson_iter_recurse(it, &child)) return false;
    if (!bson_iter_find_w_len(&child, parts[i].data(), static_cast<int>(parts[i].size()))) return false;
    return PathExists(&child, parts, i + 1, depth + 1);
  }
  if (BSON_ITER_HOLDS_ARRAY(it)) {
    if (!bson_iter_recurse(it, &child)) return false;
    if (projection::IsPositionalComponent(parts[i])) {
      bson_iter_t elem = child;
      if (bson_iter_find_w_len(&elem, parts[i].data(), static_cast<int>(parts[i].size())) &&
          PathExists(&elem, parts, i + 1, depth + 1)) {
        return true;
      }
    }
    while (bson_iter_next(&child)) {
      if (BSON_ITER_HOLDS_DOCUMENT(&child) && PathExists(&child, parts, i, depth + 1)) return true;
    }
  }
  return false;
}

const bson_value_t kNullValue = [] {
  bson_value_t v;
  std::memset(&v, 0, sizeof v);
  v.value_type = BSON_TYPE_NULL;
  return v;
}();

// The values of a one-part path whose field is missing or holds no array,
// found with one search: the field's value, or null when it is missing
// (what the general walk below gives them).  False for any other path:
// dotted, or through an array.
bool TopLevelScalar(const bson_t* doc, const std::vector<std::string>& parts,
                    std::vector<projection::BsonValue>* values) {
  if (parts.size() != 1) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  if (!bson_iter_find_w_len(&it, parts[0].data(), static_cast<int>(parts[0].size()))) {
    values->push_back(kNullValue);
  } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
    return false;
  } else {
    values->push_back(*bson_iter_value(&it));
  }
#ifndef NDEBUG
  std::vector<projection::BsonValue> walked;
  Collect collect(&walked);
  std::vector<std::string_view> view(parts.begin(), parts.end());
  projection::VisitPathValues(doc, view, projection::MissingPolicy::kNullAndUndefined, &collect);
  if (walked.empty()) walked.push_back(kNullValue);
  assert(FirstArrayDepth(doc, parts) == 0 && walked.size() == 1 &&
         walked[0].value_type == values->back().value_type &&
         CompareValues(walked[0], values->back()) == 0 && "TopLevelScalar differs from the walk");
#endif
  return true;
}

bool DocHasPath(const bson_t* doc, const std::vector<std::string>& parts) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  if (!bson_iter_find_w_len(&it, parts[0].data(), static_cast<int>(parts[0].size()))) return false;
  return PathExists(&it, parts, 1, 0);
}

}  // namespace

void AppendComponent(const bson_value_t& v, bool descending, std::string* out) {
  if (descending) {
    keys::EncodeValueDescending(v, out);
  } else {
    keys::EncodeValue(v, out);
  }
}

std::string IndexPrefix(uint32_t collection_id, uint32_t index_id) {
  std::string out;
  PutFixed32BE(&out, collection_id);
  PutFixed32BE(&out, index_id);
  return out;
}

std::string PrefixSuccessor(std::string_view s) {
  std::string out(s);
  while (!out.empty() && static_cast<uint8_t>(out.back()) == 0xFF) out.pop_back();
  if (!out.empty()) out.back() = static_cast<char>(static_cast<uint8_t>(out.back()) + 1);
  return out;
}

Status GenerateKeys(const IndexSpec& spec, const bson_t* doc, std::vector<IndexKey>* out, bool* multikey) {
  out->clear();
  if (spec.sparse) {
    bool any = false;
    for (const IndexField& f : spec.fields) {
      if (DocHasPath(doc, f.parts)) {
        any = true;
        break;
      }
    }
    if (!any) return Status::OK();
  }
  const bool single = spec.fields.size() == 1;
  if (single) {
    // One field holding no array (the common index): its one key, built
    // without the product below (which then need not look again).
    IndexKey key;
    if (TopLevelScalar(doc, spec.fields[0].parts, &key.values)) {
      AppendComponent(key.values[0], spec.fields[0].descending, &key.body);
      out->push_back(std::move(key));
      return Status::OK();
    }
  }
  // Each field's values; at most one distinct array may be expanded.
  std::vector<std::vector<projection::BsonValue>> values(spec.fields.size());
  size_t array_field = spec.fields.size();
  size_t array_depth = 0;
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    const IndexField& f = spec.fields[i];
    if (!single && TopLevelScalar(doc, f.parts, &values[i])) continue;
    size_t depth = FirstArrayDepth(doc, f.parts);
    if (depth != 0) {
      *multikey = true;
      if (array_field != spec.fields.size()) {
        const IndexField& g = spec.fields[array_field];
        bool shared = depth == array_depth &&
                      std::equal(f.parts.begin(), f.parts.begin() + static_cast<std::ptrdiff_t>(depth), g.parts.begin());
        if (!shared) {
          return Status(ErrorCode::kCannotIndexParallelArrays,
                        "cannot index parallel arrays [" + f.parts[depth - 1] + "] [" + g.parts[array_depth - 1] + "]");
        }
      } else {
        array_field = i;
        array_depth = depth;
      }
    }
    std::vector<std::string_view> parts(f.parts.begin(), f.parts.end());
    Collect collect(&values[i]);
    projection::VisitPathValues(doc, parts, projection::MissingPolicy::kNullAndUndefined, &collect);
    if (values[i].empty()) values[i].push_back(kNullValue);  // keep one key regardless
  }
  size_t total = 1;
  for (const auto& v : values) {
    total *= v.size();
    if (total > kMaxKeysPerDocument) {
      return Status(ErrorCode::kBadValue, "a document gives index '" + spec.name + "' more than " +
                                              std::to_string(kMaxKeysPerDocument) + " keys");
    }
  }
  // The cartesian product, odometer style.
  std::vector<size_t> pos(values.size(), 0);
  out->reserve(total);
  for (size_t n = 0; n < total; ++n) {
    IndexKey key;
    key.values.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      AppendComponent(values[i][pos[i]], spec.fields[i].descending, &key.body);
      key.values.push_back(values[i][pos[i]]);
    }
    out->push_back(std::move(key));
    for (size_t i = values.size(); i-- > 0;) {
      if (++pos[i] < values[i].size()) break;
      pos[i] = 0;
    }
  }
  std::sort(out->begin(), out->end(), [](const IndexKey& a, const IndexKey& b) { return a.body < b.body; });
  out->erase(std::unique(out->begin(), out->end(), [](const IndexKey& a, const IndexKey& b) { return a.body == b.body; }),
             out->end());
  return Status::OK();
}

void AppendKeyValue(const IndexSpec& spec, const IndexKey& key, bson_t* out) {
  for (size_t i = 0; i < spec.fields.size() && i < key.values.size(); ++i) {
    bson_append_value(out, spec.fields[i].path.c_str(), -1, &key.values[i]);
  }
}

}  // namespace index
}  // namespace gatedb
