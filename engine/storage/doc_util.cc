#include "engine/storage/doc_util.h"

#include <cstring>

#include "engine/document/element_at.h"

namespace gatedb {

void SetVersionField(const bson_t* in, const std::string& field, int64_t version, bson_t* out) {
  using Probe = TopLevelSummary::Probe;
  bson_iter_t it;
  if (!bson_iter_init_find(&it, in, field.c_str())) {
    SetVersionField(in, field, version, Probe::kAbsent, 0, out);
    return;
  }
  SetVersionField(in, field, version, BSON_ITER_HOLDS_INT64(&it) ? Probe::kInt64 : Probe::kOther,
                  bson_iter_offset(&it), out);
}

void SetVersionField(const bson_t* in, const std::string& field, int64_t version, TopLevelSummary::Probe present,
                     uint32_t offset, bson_t* out) {
  using Probe = TopLevelSummary::Probe;
  if (present == Probe::kAbsent) {
    // No version yet: every element in one copy, the version after them.
    bson_concat(out, in);
    bson_append_int64(out, field.c_str(), static_cast<int>(field.size()), version);
    return;
  }
  if (present == Probe::kInt64) {
    // An int64 version: the copy's 8 bytes overwritten.  The copy into an
    // empty `out` keeps every offset, so the field is at `offset` there.
    bson_concat(out, in);
    if (!OverwriteVersionFieldAt(out, field, offset, version)) OverwriteVersionField(out, field, version);
    return;
  }
  bool replaced = false;
  bson_iter_t it;
  if (bson_iter_init(&it, in)) {
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (!replaced && field == key) {
        bson_append_int64(out, key, -1, version);
        replaced = true;
      } else {
        bson_append_iter(out, key, -1, &it);
      }
    }
  }
  if (!replaced) bson_append_int64(out, field.c_str(), static_cast<int>(field.size()), version);
}

bool OverwriteVersionField(bson_t* doc, const std::string& field, int64_t version) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, field.c_str()) || !BSON_ITER_HOLDS_INT64(&it)) return false;
  bson_iter_overwrite_int64(&it, version);
  return true;
}

bool OverwriteVersionFieldAt(bson_t* doc, const std::string& field, uint32_t offset, int64_t version) {
  bson_iter_t it;
  if (!ElementAt(doc, offset, field, &it) || !BSON_ITER_HOLDS_INT64(&it)) return false;
  bson_iter_overwrite_int64(&it, version);
  return true;
}

bool GetId(const bson_t* doc, bson_value_t* id) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "_id")) return false;
  *id = *bson_iter_value(&it);
  return true;
}

namespace {
bool IsPlainEqualityValue(const bson_value_t& v) {
  if (v.value_type == BSON_TYPE_REGEX || v.value_type == BSON_TYPE_ARRAY) return false;
  if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_t sub;
    if (!bson_init_static(&sub, v.value.v_doc.data, v.value.v_doc.data_len)) return false;
    bson_iter_t it;
    if (bson_iter_init(&it, &sub) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$') return false;
  }
  return true;
}

// The _id a filter's `_id` value pins down: a plain value or {$eq: v}.
bool PointIdFromValue(const bson_value_t* v, bson_value_t* id) {
  if (IsPlainEqualityValue(*v)) {
    *id = *v;
    return true;
  }
  if (v->value_type != BSON_TYPE_DOCUMENT) return false;
  bson_t sub;
  if (!bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len)) return false;
  bson_iter_t op;
  if (!bson_iter_init(&op, &sub) || !bson_iter_next(&op)) return false;
  if (std::strcmp(bson_iter_key(&op), "$eq") != 0) return false;
  const bson_value_t* eq = bson_iter_value(&op);
  if (bson_iter_next(&op)) return false;  // more operators
  if (!IsPlainEqualityValue(*eq)) return false;
  *id = *eq;
  return true;
}
}  // namespace

bool PointIdFromFilter(const bson_t* filter, bson_value_t* id) {
  bson_iter_t it;
  return bson_iter_init_find(&it, filter, "_id") && PointIdFromValue(bson_iter_value(&it), id);
}

bool IdOnlyFilter(const bson_t* filter, bson_value_t* id) {
  // One pass: the only field is _id (a second field, another _id too, is
  // more than a point read).
  bson_iter_t it;
  if (filter == nullptr || !bson_iter_init(&it, filter) || !bson_iter_next(&it)) return false;
  if (std::strcmp(bson_iter_key(&it), "_id") != 0) return false;
  const bson_value_t v = *bson_iter_value(&it);  // points into `filter`, not into `it`
  if (bson_iter_next(&it)) return false;
  return PointIdFromValue(&v, id);
}

}  // namespace gatedb
