#include "engine/storage/field_versions.h"

#include <algorithm>

#include "engine/document/bson_writer.h"
#include "engine/document/diff.h"

namespace gatedb {

namespace {

// The root path "" overlaps every path.
bool Overlap(const std::string& a, const std::string& b) {
  return a.empty() || b.empty() || PathsOverlap(a, b);
}

// `child` is `parent` or under it.
bool Covers(const std::string& parent, const std::string& child) {
  if (parent.empty()) return true;
  return child.size() >= parent.size() && child.compare(0, parent.size(), parent) == 0 &&
         (child.size() == parent.size() || child[parent.size()] == '.');
}

}  // namespace

void UpdateFieldVersions(const bson_t* old_table, const std::vector<std::string>& changed, int64_t version,
                         BsonWriter* out) {
  std::vector<std::pair<std::string, int64_t>> entries;
  bson_iter_t it;
  if (old_table != nullptr && bson_iter_init(&it, old_table)) {
    while (bson_iter_next(&it)) {
      std::string path = bson_iter_key(&it);
      bool superseded = false;
      for (const std::string& c : changed) superseded |= Covers(c, path);
      if (!superseded) entries.emplace_back(std::move(path), bson_iter_as_int64(&it));
    }
  }
  for (const std::string& c : changed) {
    bool dup = false;
    for (const auto& e : entries) dup |= e.first == c;
    if (!dup) entries.emplace_back(c, version);
  }
  if (entries.size() > kMaxFieldVersionEntries) {
    // Too many distinct paths: fold them into the root at the newest version
    // (conservative: everything counts as changed then).
    int64_t newest = version;
    for (const auto& e : entries) newest = std::max(newest, e.second);
    entries.assign(1, {std::string(), newest});
  }
  for (const auto& e : entries) out->Int64(e.first, e.second);
}

std::vector<std::string> ChangedSinceOverlapping(const bson_t* table, int64_t basis,
                                                 const std::vector<std::string>& written) {
  std::vector<std::string> out;
  bson_iter_t it;
  if (table == nullptr || !bson_iter_init(&it, table)) return out;
  while (bson_iter_next(&it)) {
    if (bson_iter_as_int64(&it) <= basis) continue;
    std::string path = bson_iter_key(&it);
    for (const std::string& w : written) {
      if (Overlap(path, w)) {
        out.push_back(path);
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> PathsToRecord(const std::vector<std::string>& changed,
                                       const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  for (const std::string& c : changed) {
    const std::string* best = nullptr;
    for (const std::string& t : targets) {
      if (!t.empty() && Covers(t, c) && (best == nullptr || t.size() < best->size())) best = &t;
    }
    const std::string& chosen = best ? *best : c;
    if (std::find(out.begin(), out.end(), chosen) == out.end()) out.push_back(chosen);
  }
  return out;
}

std::vector<std::string> ChangedSince(const bson_t* table, int64_t basis) {
  std::vector<std::string> out;
  bson_iter_t it;
  if (table == nullptr || !bson_iter_init(&it, table)) return out;
  while (bson_iter_next(&it)) {
    if (bson_iter_as_int64(&it) > basis) out.emplace_back(bson_iter_key(&it));
  }
  return out;
}

}  // namespace gatedb
