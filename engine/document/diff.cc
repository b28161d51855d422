#include "engine/document/diff.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "engine/document/element_at.h"

namespace gatedb {

namespace {

// An element's value bytes: from its value offset to the next element.
// (bson_iter_t's d1 and next_off are documented public fields.)
bool SameValueBytes(const bson_iter_t* a, const bson_iter_t* b) {
  if (bson_iter_type(a) != bson_iter_type(b)) return false;
  size_t la = a->next_off - a->d1, lb = b->next_off - b->d1;
  return la == lb && std::memcmp(a->raw + a->d1, b->raw + b->d1, la) == 0;
}

bool Listed(const std::vector<std::string>* only, const char* key) {
  if (only == nullptr) return true;
  for (const std::string& f : *only) {
    if (f == key) return true;
  }
  return false;
}

void DiffInto(const bson_t* before, const bson_t* after, const std::string& prefix, const std::string& ignore,
              int depth, const std::vector<std::string>* only, std::vector<std::string>* paths);

// The paths under `path` where the values at `ib` and `ia`, whose bytes
// differ, differ: the changed fields of two documents (the path itself when
// only their order differs), else `path`.  `depth`: of `path`.
void DiffValues(const bson_iter_t* ib, const bson_iter_t* ia, std::string path, const std::string& ignore, int depth,
                std::vector<std::string>* paths) {
  if (BSON_ITER_HOLDS_DOCUMENT(ib) && BSON_ITER_HOLDS_DOCUMENT(ia) && depth < 200) {
    uint32_t lb = 0, la = 0;
    const uint8_t *db = nullptr, *da = nullptr;
    bson_iter_document(ib, &lb, &db);
    bson_iter_document(ia, &la, &da);
    bson_t sb, sa;
    if (bson_init_static(&sb, db, lb) && bson_init_static(&sa, da, la)) {
      size_t before_count = paths->size();
      DiffInto(&sb, &sa, path, ignore, depth + 1, nullptr, paths);
      if (paths->size() == before_count) paths->push_back(std::move(path));
      return;
    }
  }
  paths->push_back(std::move(path));
}

// `only` (top level only): when non-null, the top-level fields to compare.
void DiffInto(const bson_t* before, const bson_t* after, const std::string& prefix, const std::string& ignore,
              int depth, const std::vector<std::string>* only, std::vector<std::string>* paths) {
  bson_iter_t ib, ia;
  if (!bson_iter_init(&ib, before)) return;
  while (bson_iter_next(&ib)) {
    const char* key = bson_iter_key(&ib);
    if (prefix.empty() && (ignore == key || !Listed(only, key))) continue;
    const bool found = bson_iter_init_find(&ia, after, key);
    if (found && SameValueBytes(&ib, &ia)) continue;
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!found) {
      paths->push_back(std::move(path));  // removed
      continue;
    }
    DiffValues(&ib, &ia, std::move(path), ignore, depth, paths);
  }
  if (!bson_iter_init(&ia, after)) return;
  while (bson_iter_next(&ia)) {
    const char* key = bson_iter_key(&ia);
    if (prefix.empty() && (ignore == key || !Listed(only, key))) continue;
    if (!bson_iter_init_find(&ib, before, key)) {
      paths->push_back(prefix.empty() ? key : prefix + "." + key);  // added
    }
  }
}

}  // namespace

void DiffPaths(const bson_t* before, const bson_t* after, const std::string& ignore,
               std::vector<std::string>* paths) {
  DiffInto(before, after, "", ignore, 0, nullptr, paths);
}

void DiffPathsOfFields(const bson_t* before, const bson_t* after, const std::vector<std::string>& fields,
                       const std::string& ignore, std::vector<std::string>* paths) {
  // DiffInto's two walks, cut to what an operator update needs: one walk of
  // `before`, its names matched against the few listed fields by length
  // first; `after` is searched only for a listed field that was there, and
  // walked only when a listed field was not in `before` (an added field).
  constexpr size_t kMaxListed = 64;
  if (fields.size() > kMaxListed) {
    DiffInto(before, after, "", ignore, 0, &fields, paths);
    return;
  }
  auto listed = [&fields](const char* key, uint32_t len) {
    size_t f = 0;
    while (f < fields.size() && !(fields[f].size() == len && std::memcmp(fields[f].data(), key, len) == 0)) ++f;
    return f;  // fields.size(): not listed
  };
  // seen[f]: fields[f] was in `before` (or is ignored: never a change).
  bool seen[kMaxListed] = {};
  for (size_t f = 0; f < fields.size(); ++f) seen[f] = fields[f] == ignore;
  bson_iter_t ib, ia;
  if (!bson_iter_init(&ib, before)) return;
  while (bson_iter_next(&ib)) {
    const uint32_t len = bson_iter_key_len(&ib);
    const char* key = bson_iter_key(&ib);
    const size_t f = listed(key, len);
    if (f == fields.size() || fields[f] == ignore) continue;
    seen[f] = true;
    if (!bson_iter_init_find_w_len(&ia, after, key, static_cast<int>(len))) {
      paths->emplace_back(key, len);  // removed
      continue;
    }
    if (!SameValueBytes(&ib, &ia)) DiffValues(&ib, &ia, std::string(key, len), ignore, 0, paths);
  }
  bool any_unseen = false;
  for (size_t f = 0; f < fields.size(); ++f) any_unseen |= !seen[f];
  if (!any_unseen) return;
  // Added fields, in the order of `after` (as DiffInto's second walk).
  if (!bson_iter_init(&ia, after)) return;
  while (bson_iter_next(&ia)) {
    const uint32_t len = bson_iter_key_len(&ia);
    const char* key = bson_iter_key(&ia);
    const size_t f = listed(key, len);
    if (f < fields.size() && !seen[f]) paths->emplace_back(key, len);
  }
}

void DiffPathsOfFields(const bson_t* before, const bson_t* after, const std::vector<std::string>& fields,
                       const std::vector<uint32_t>& before_offsets, const std::vector<uint32_t>& after_offsets,
                       const std::string& ignore, std::vector<std::string>* paths) {
  // DiffInto's order: the fields `before` has, by their place there; then
  // the added ones, by theirs in `after`.  A field's sort key is its offset
  // in `before`, or past every such offset its offset in `after`.
  constexpr uint64_t kAdded = uint64_t{1} << 32;
  std::vector<std::pair<uint64_t, size_t>> order;
  order.reserve(fields.size());
  for (size_t f = 0; f < fields.size(); ++f) {
    if (fields[f] == ignore) continue;
    if (before_offsets[f] != 0) {
      order.emplace_back(before_offsets[f], f);
    } else if (after_offsets[f] != 0) {
      order.emplace_back(kAdded + after_offsets[f], f);
    }
  }
  std::sort(order.begin(), order.end());
  for (const auto& entry : order) {
    const size_t f = entry.second;
    bson_iter_t ib, ia;
    if (!ElementAt(before, before_offsets[f], fields[f], &ib) || !ElementAt(after, after_offsets[f], fields[f], &ia)) {
      paths->push_back(fields[f]);  // added or removed
      continue;
    }
    if (!SameValueBytes(&ib, &ia)) DiffValues(&ib, &ia, fields[f], ignore, 0, paths);
  }
}

bool HasDuplicateTopLevelNames(const bson_t* doc) {
  std::vector<std::string_view> names;
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  while (bson_iter_next(&it)) {
    std::string_view name(bson_iter_key(&it), bson_iter_key_len(&it));
    for (std::string_view seen : names) {
      if (seen == name) return true;
    }
    names.push_back(name);
  }
  return false;
}

bool PathsOverlap(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  if (longer.compare(0, shorter.size(), shorter) != 0) return false;
  return longer.size() == shorter.size() || longer[shorter.size()] == '.';
}

}  // namespace gatedb
