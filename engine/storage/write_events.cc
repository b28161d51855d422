#include "engine/storage/write_events.h"

#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/decimal/decimal128.h"
#include "engine/document/bson_compare.h"
#include "engine/document/bson_writer.h"
#include "engine/document/element_at.h"
#include "engine/document/raw_element.h"

namespace gatedb {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

// The writeContext document's fields (PROTOCOL.md).
void WriteContextFields(BsonWriter* w, const WriteContext& ctx) {
  if (!ctx.agent_id.empty()) w->Utf8("agentId", ctx.agent_id);
  if (!ctx.task_id.empty()) w->Utf8("taskId", ctx.task_id);
  if (ctx.write_seq) w->Int64("writeSeq", *ctx.write_seq);
  if (!ctx.source.empty()) w->Utf8("source", ctx.source);
  if (ctx.read_at_ms) w->DateTime("readAt", *ctx.read_at_ms);
}

// An array's elements: the strings, keyed "0", "1", ...
void StringElements(BsonWriter* w, const std::vector<std::string>& values) {
  char buf[16];
  for (size_t i = 0; i < values.size(); ++i) w->Utf8(BsonWriter::ArrayKey(static_cast<uint32_t>(i), buf), values[i]);
}

void StringArray(BsonWriter* w, std::string_view key, const std::vector<std::string>& values) {
  w->OpenArray(key);
  StringElements(w, values);
  w->Close();
}

// Appends the document or array `write` writes (into a BsonWriter) to `out`
// under `key`.
template <typename Write>
void AppendWritten(bson_t* out, const char* key, bool array, const Write& write) {
  std::string bytes;
  {
    BsonWriter w(&bytes);
    write(&w);
    w.Finish();
  }
  bson_t sub;
  if (bson_init_static(&sub, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    if (array) {
      bson_append_array(out, key, -1, &sub);
    } else {
      bson_append_document(out, key, -1, &sub);
    }
  }
}

}  // namespace

void AppendWriteContext(bson_t* out, const char* key, const WriteContext& ctx) {
  AppendWritten(out, key, false, [&](BsonWriter* w) { WriteContextFields(w, ctx); });
}

void WriteWriterBlock(const WriteContext& ctx, int64_t now_ms, BsonWriter* out) {
  if (!ctx.agent_id.empty()) out->Utf8("agentId", ctx.agent_id);
  if (!ctx.task_id.empty()) out->Utf8("taskId", ctx.task_id);
  if (!ctx.source.empty()) out->Utf8("source", ctx.source);
  out->DateTime("at", now_ms);
}

Document BuildWriterBlock(const WriteContext& ctx, int64_t now_ms) {
  std::string bytes;
  BsonWriter w(&bytes, 64 + ctx.agent_id.size() + ctx.task_id.size() + ctx.source.size());
  WriteWriterBlock(ctx, now_ms, &w);
  w.Finish();
  bson_t view;
  bson_init_static(&view, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return Document::Copy(&view);
}

namespace {

void OptionalVersion(BsonWriter* w, std::string_view key, std::optional<int64_t> v) {
  if (v) {
    w->Int64(key, *v);
  } else {
    w->Null(key);
  }
}

void AppendStringArray(bson_t* b, const char* key, const std::vector<std::string>& values) {
  AppendWritten(b, key, true, [&](BsonWriter* w) { StringElements(w, values); });
}

bool NumberAsInt64(const bson_value_t& v, int64_t* out) {
  if (!IsNumberType(v.value_type)) return false;
  if (v.value_type == BSON_TYPE_DECIMAL128) {
    // Exactly: 3.0000000000000000000000000001 is no version.
    std::optional<int64_t> n = decimal::ToInt64Exact(v.value.v_decimal128);
    if (!n) return false;
    *out = *n;
    return true;
  }
  long double d = NumberAsLongDouble(v);
  if (std::isnan(d) || d != std::floor(d) || d < -9.2e18L || d > 9.2e18L) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

// The version field's equality operand, if the element is one.
bool VersionEqualityOperand(bson_iter_t* it, int64_t* expected) {
  const bson_value_t* v = bson_iter_value(it);
  if (NumberAsInt64(*v, expected)) return true;
  if (v->value_type != BSON_TYPE_DOCUMENT) return false;
  bson_iter_t sub;
  if (!bson_iter_recurse(it, &sub) || !bson_iter_next(&sub)) return false;
  if (std::strcmp(bson_iter_key(&sub), "$eq") != 0) return false;
  if (!NumberAsInt64(*bson_iter_value(&sub), expected)) return false;
  return !bson_iter_next(&sub);
}

// What a write changed, for change streams and sync: an insert's or a
// replacement's whole document; an update's new values of the changed paths
// and the paths it removed.
// Finds the dotted `path` in `after` as bson_iter_find_descendant does from
// its start; its first component is read where `known` says, when it names
// it.
bool FindChanged(const bson_t* after, const std::string& path, const KnownFields* known, bson_iter_t* out) {
  const size_t dot = path.find('.');
  const size_t first_len = dot == std::string::npos ? path.size() : dot;
  if (known != nullptr) {
    const std::vector<std::string>& names = *known->names;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].size() != first_len || path.compare(0, first_len, names[i]) != 0) continue;
      const uint32_t offset = (*known->offsets)[i];
      if (offset == 0) return false;  // absent
      bson_iter_t top;
      if (!ElementAt(after, offset, names[i], &top)) break;  // search instead
      if (dot == std::string::npos) {
        *out = top;
        return true;
      }
      bson_iter_t child;
      return (BSON_ITER_HOLDS_DOCUMENT(&top) || BSON_ITER_HOLDS_ARRAY(&top)) && bson_iter_recurse(&top, &child) &&
             bson_iter_find_descendant(&child, path.c_str() + dot + 1, out);
    }
  }
  bson_iter_t it;
  return bson_iter_init(&it, after) && bson_iter_find_descendant(&it, path.c_str(), out);
}

// The element `it` is on, a top-level one of `doc` (the store's new
// document) named `path`: its bytes copied whole, or its value written
// anew where the raw reader does not measure it.
void CopyElement(const bson_t* doc, bson_iter_t* it, const std::string& path, BsonWriter* w) {
  RawElement e;
  if (ReadRawElement(bson_get_data(doc), doc->len, bson_iter_offset(it), &e) == RawRead::kElement) {
    w->Element(bson_get_data(doc) + e.start, e.end - e.start);
  } else {
    w->Value(path, *bson_iter_value(it));
  }
}

void WriteChange(const char* op, const bson_t* after, const std::vector<std::string>& changed_paths,
                 const KnownFields* known, BsonWriter* w) {
  if (std::strcmp(op, "update") != 0) {
    w->Document("fullDocument", bson_get_data(after), after->len);
    return;
  }
  w->OpenDocument("updatedFields");
  std::vector<std::string> gone;
  for (const std::string& path : changed_paths) {
    bson_iter_t f;
    const bool found = FindChanged(after, path, known, &f);
#ifndef NDEBUG
    bson_iter_t it, searched;
    const bool was_found = bson_iter_init(&it, after) && bson_iter_find_descendant(&it, path.c_str(), &searched);
    assert(found == was_found && (!found || bson_iter_value(&f)->value_type == bson_iter_value(&searched)->value_type));
    assert(!found || bson_iter_offset(&f) == bson_iter_offset(&searched));
#endif
    if (!found) {
      gone.push_back(path);
    } else if (path.find('.') == std::string::npos) {
      CopyElement(after, &f, path, w);  // its key is the path
    } else {
      w->Value(path, *bson_iter_value(&f));
    }
  }
  w->Close();
  StringArray(w, "removedFields", gone);
}

// Both refusals (VersionConflict, StaleBasis) are cured by reading again.
const char* SuggestedAction(ErrorCode) { return "reread_and_retry"; }

}  // namespace

void EncodeWriteEvent(std::string* out, std::string_view txn, const char* op, std::string_view ns, const bson_value_t& id,
                      std::optional<int64_t> version_before, std::optional<int64_t> version_after,
                      const WriteContext& ctx, const std::vector<std::string>& changed_paths,
                      const WriteGate& gate, int64_t now_ms, const char* merged_by, const bson_t* after,
                      const KnownFields* known) {
  // Sized once: the fields below take about 300 bytes; the paths, and an
  // insert's or a replacement's full document, come on top.
  const bool full = after != nullptr && std::strcmp(op, "update") != 0;
  size_t paths = 0;
  for (const std::string& p : changed_paths) paths += p.size() + 8;
  BsonWriter w(out, 384 + ns.size() + paths * (after != nullptr ? 2 : 1) + (full ? after->len : 0));
  w.Int64("seq", 0);  // the journal writes the seq in place at commit
  w.Utf8("op", op);
  w.Utf8("ns", ns);
  w.Value("_id", id);
  OptionalVersion(&w, "versionBefore", version_before);
  OptionalVersion(&w, "versionAfter", version_after);
  w.OpenDocument("writeContext");
  WriteContextFields(&w, ctx);
  w.Close();
  StringArray(&w, "changedPaths", changed_paths);
  w.DateTime("at", now_ms);
  w.Bool("gated", gate.gated());
  if (gate.basis_version) w.Int64("basisVersion", *gate.basis_version);
  if (merged_by != nullptr) {
    w.Bool("merged", true);
    w.Utf8("policy", merged_by);
  }
  if (after != nullptr) WriteChange(op, after, changed_paths, known, &w);
  if (!txn.empty()) w.Utf8("txn", txn);
  w.Finish();
}

Document BuildWriteEvent(const char* op, const std::string& ns, const bson_value_t& id,
                         std::optional<int64_t> version_before, std::optional<int64_t> version_after,
                         const WriteContext& ctx, const std::vector<std::string>& changed_paths,
                         const WriteGate& gate, int64_t now_ms, const char* merged_by, const bson_t* after,
                         const KnownFields* known) {
  std::string bytes;
  EncodeWriteEvent(&bytes, std::string_view(), op, ns, id, version_before, version_after, ctx, changed_paths, gate, now_ms, merged_by,
                   after, known);
  bson_t view;
  bson_init_static(&view, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return Document::Copy(&view);
}

Document BuildDdlEvent(const char* op, const std::string& ns, int64_t now_ms, const std::string* to) {
  bson_t* b = bson_new();
  BSON_APPEND_INT64(b, "seq", 0);  // the journal writes the seq in place at commit
  BSON_APPEND_UTF8(b, "op", op);
  BSON_APPEND_UTF8(b, "ns", ns.c_str());
  if (to != nullptr) BSON_APPEND_UTF8(b, "to", to->c_str());
  BSON_APPEND_DATE_TIME(b, "at", now_ms);
  return Document::Adopt(b);
}

std::vector<std::string> TopLevelPaths(const bson_t* doc, const std::string& version_field) {
  std::vector<std::string> out;
  out.reserve(16);  // most documents: one allocation
  bson_iter_t it;
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) {
      std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
      if (key != version_field) out.emplace_back(key);
    }
  }
  return out;
}

void AppendChangedPaths(const bson_t* event, std::vector<std::string>* paths) {
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, event, "changedPaths") || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &arr)) {
    return;
  }
  while (bson_iter_next(&arr)) {
    if (!BSON_ITER_HOLDS_UTF8(&arr)) continue;
    std::string p = bson_iter_utf8(&arr, nullptr);
    bool seen = false;
    for (const std::string& q : *paths) seen |= q == p;
    if (!seen) paths->push_back(std::move(p));
  }
}

Document BuildConflictErrInfo(const ConflictInfo& info) {
  bson_t* b = bson_new();
  if (info.basis_version) {
    BSON_APPEND_INT64(b, "basisVersion", *info.basis_version);
  } else {
    BSON_APPEND_NULL(b, "basisVersion");
  }
  BSON_APPEND_INT64(b, "currentVersion", info.current_version);
  if (info.current) {
    BSON_APPEND_DOCUMENT(b, "current", info.current);
  } else {
    BSON_APPEND_NULL(b, "current");
  }
  AppendStringArray(b, "conflictingFields", info.conflicting_fields);
  BSON_APPEND_BOOL(b, "conflictingFieldsComplete", info.conflicting_fields_complete);
  if (info.last_writer) {
    BSON_APPEND_DOCUMENT(b, "lastWriter", info.last_writer);
  } else {
    BSON_APPEND_NULL(b, "lastWriter");
  }
  BSON_APPEND_UTF8(b, "reason", info.reason.c_str());
  BSON_APPEND_UTF8(b, "suggestedAction", SuggestedAction(info.code));
  BSON_APPEND_UTF8(b, "policy", info.policy);
  if (info.current && !info.conflicting_fields.empty()) {
    // The conflicting paths' current values, so the agent can decide.
    bson_t vals;
    BSON_APPEND_DOCUMENT_BEGIN(b, "conflictingValues", &vals);
    for (const std::string& path : info.conflicting_fields) {
      bson_iter_t it, f;
      if (!path.empty() && bson_iter_init(&it, info.current) && bson_iter_find_descendant(&it, path.c_str(), &f)) {
        bson_append_value(&vals, path.c_str(), static_cast<int>(path.size()), bson_iter_value(&f));
      }
    }
    bson_append_document_end(b, &vals);
  }
  if (info.by_source) {
    BSON_APPEND_UTF8(b, "source", info.source.c_str());
    BSON_APPEND_UTF8(b, "lastWriterSource", info.last_source.c_str());
  }
  return Document::Adopt(b);
}

Document BuildConflictEvent(const ConflictInfo& info) {
  bson_t* b = bson_new();
  BSON_APPEND_INT64(b, "seq", 0);  // the journal writes the seq in place at commit
  BSON_APPEND_UTF8(b, "op", "conflict");
  BSON_APPEND_UTF8(b, "ns", info.ns.c_str());
  if (info.id) {
    info.id->AppendTo(b, "_id");
  } else {
    BSON_APPEND_NULL(b, "_id");
  }
  BSON_APPEND_INT64(b, "versionBefore", info.current_version);
  BSON_APPEND_INT64(b, "versionAfter", info.current_version);
  if (info.basis_version) BSON_APPEND_INT64(b, "basisVersion", *info.basis_version);
  AppendWriteContext(b, "writeContext", info.context ? *info.context : WriteContext());
  AppendStringArray(b, "changedPaths", {});
  AppendStringArray(b, "conflictingFields", info.conflicting_fields);
  BSON_APPEND_UTF8(b, "code", ErrorCodeName(info.code));
  BSON_APPEND_UTF8(b, "reason", info.reason.c_str());
  BSON_APPEND_UTF8(b, "policy", info.policy);
  if (info.action != nullptr) {
    BSON_APPEND_UTF8(b, "action", info.action);
    BSON_APPEND_UTF8(b, "path", info.path.c_str());
  }
  BSON_APPEND_DATE_TIME(b, "at", info.now_ms);
  BSON_APPEND_BOOL(b, "gated", info.gated);
  return Document::Adopt(b);
}

std::string BuildConflictMessage(const ConflictInfo& info) {
  std::string what = info.code == ErrorCode::kStaleBasis ? "stale basis" : "version conflict";
  std::string msg = what + " on " + info.ns;
  if (info.id) msg += " _id: " + info.id->ToJson();
  msg += ": " + info.reason;
  if (info.by_source) {
    msg += "; source '" + info.source + "' does not outrank the last writer's source '" + info.last_source + "'";
  }
  if (!info.conflicting_fields.empty()) {
    msg += "; changed since the basis:";
    for (size_t i = 0; i < info.conflicting_fields.size(); ++i) {
      msg += (i ? ", " : " ") + info.conflicting_fields[i];
    }
  }
  return msg + ". Reread the document and decide again.";
}

bool HasVersionEquality(const bson_t* filter, const std::string& version_field) {
  bson_iter_t it;
  int64_t v;
  return bson_iter_init_find(&it, filter, version_field.c_str()) && VersionEqualityOperand(&it, &v);
}

bool SplitVersionEquality(const bson_t* filter, const std::string& version_field, int64_t* expected,
                          Document* without) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, filter, version_field.c_str()) || !VersionEqualityOperand(&it, expected)) {
    return false;
  }
  bson_t* rest = bson_new();
  bson_iter_init(&it, filter);
  while (bson_iter_next(&it)) {
    if (version_field != bson_iter_key(&it)) bson_append_iter(rest, nullptr, 0, &it);
  }
  *without = Document::Adopt(rest);
  return true;
}

}  // namespace gatedb
