#include "engine/document/validate.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/document/element_at.h"

namespace gatedb {

namespace {

// bson_iter_t's alignment attribute is dropped when the typedef is a
// template argument, so std::vector<bson_iter_t> would under-align it; a
// struct keeps the member's alignment and gets aligned storage.
struct AlignedIter {
  bson_iter_t it;
};

bool IsContainer(bson_type_t type) {
  return type == BSON_TYPE_DOCUMENT || type == BSON_TYPE_ARRAY;
}

// The bytes of the document or array at `it`; null when it holds neither
// (or libbson finds them corrupt).
const uint8_t* ContainerData(const bson_iter_t* it, uint32_t* len) {
  const uint8_t* data = nullptr;
  *len = 0;
  if (BSON_ITER_HOLDS_DOCUMENT(it)) {
    bson_iter_document(it, len, &data);
  } else if (BSON_ITER_HOLDS_ARRAY(it)) {
    bson_iter_array(it, len, &data);
  }
  return data;
}

enum class WalkResult { kOk, kTooDeep, kBadUtf8, kMalformed };

// True when no byte of s[0, len) has its high bit set: ASCII, which is
// valid UTF-8 as it stands.  Eight bytes per step.
bool AllAscii(const char* s, size_t len) {
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t word;
    std::memcpy(&word, s + i, sizeof word);
    if ((word & 0x8080808080808080ull) != 0) return false;
  }
  for (; i < len; ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0x80) != 0) return false;
  }
  return true;
}

// Most names and strings are ASCII: they need only the high-bit scan (and,
// where 0x00 is not allowed, a look for it); the rest go to libbson.
bool ValidUtf8(const char* s, size_t len, bool allow_null) {
  if (s == nullptr) return true;
  if (AllAscii(s, len)) return allow_null || std::memchr(s, 0, len) == nullptr;
  return bson_utf8_validate(s, len, allow_null);
}

// UTF-8 of the element's field name and of its string-like value (strings
// may hold 0x00, as BSON allows; a name ends at its first 0x00, so it holds
// none).  `type`: the element's.
bool ElementUtf8Ok(const bson_iter_t* it, bson_type_t type) {
  if (!ValidUtf8(bson_iter_key(it), bson_iter_key_len(it), true)) return false;
  uint32_t len = 0;
  switch (type) {
    case BSON_TYPE_UTF8: {
      const char* s = bson_iter_utf8(it, &len);
      return ValidUtf8(s, len, true);
    }
    case BSON_TYPE_SYMBOL: {
      const char* s = bson_iter_symbol(it, &len);
      return ValidUtf8(s, len, true);
    }
    case BSON_TYPE_CODE: {
      const char* s = bson_iter_code(it, &len);
      return ValidUtf8(s, len, true);
    }
    case BSON_TYPE_CODEWSCOPE: {
      uint32_t scope_len = 0;
      const uint8_t* scope = nullptr;
      const char* s = bson_iter_codewscope(it, &len, &scope_len, &scope);
      return ValidUtf8(s, len, true);
    }
    case BSON_TYPE_REGEX: {
      const char* options = nullptr;
      const char* pattern = bson_iter_regex(it, &options);
      return ValidUtf8(pattern, pattern ? std::strlen(pattern) : 0, false) &&
             ValidUtf8(options, options ? std::strlen(options) : 0, false);
    }
    case BSON_TYPE_DBPOINTER: {
      const char* collection = nullptr;
      const bson_oid_t* oid = nullptr;
      bson_iter_dbpointer(it, &len, &collection, &oid);
      return ValidUtf8(collection, len, true);
    }
    default:
      return true;
  }
}

// One pass over every field of the document at `data`, with an explicit
// stack (safe on any nesting): kTooDeep when a field lies deeper than
// `max_depth` (top-level fields are at depth 1), kBadUtf8 when a field name
// or string is not UTF-8, kMalformed for bytes bson_iter_next refuses or a
// container whose own length or terminator is wrong.  It replaces libbson's
// bson_validate, which 1.23 makes weaker (no UTF-8 check of some values,
// fixed upstream in CDRIVER-6017; an embedded element whose length runs past
// its parent, which a later read would silently lose), unbounded in depth,
// and a second walk of every string; validate_test holds this walk to
// refusing everything bson_validate refuses.
WalkResult WalkFields(const uint8_t* data, size_t len, int max_depth) {
  // The iterators of the documents being walked, innermost last: the first
  // kShallow levels on the stack (no allocation for most documents), deeper
  // ones in `deep`.
  constexpr int kShallow = 8;
  AlignedIter shallow[kShallow];
  std::vector<AlignedIter> deep;
  int depth = 1;
  auto at = [&](int level) { return level <= kShallow ? &shallow[level - 1].it : &deep[level - kShallow - 1].it; };
  if (!bson_iter_init_from_data(&shallow[0].it, data, len)) return WalkResult::kMalformed;
  while (depth > 0) {
    bson_iter_t* it = at(depth);
    if (!bson_iter_next(it)) {
      // bson_iter_next sets err_off when it stopped on a corrupt element
      // rather than at the document's end.
      if (it->err_off != 0) return WalkResult::kMalformed;
      if (depth > kShallow) deep.pop_back();
      --depth;
      continue;
    }
    if (depth > max_depth) return WalkResult::kTooDeep;
    const bson_type_t type = bson_iter_type(it);
    if (!ElementUtf8Ok(it, type)) return WalkResult::kBadUtf8;
    if (IsContainer(type)) {
      // bson_iter_init_from_data, unlike bson_iter_recurse, also checks the
      // embedded document's own length header and its closing 0x00 (found
      // by fuzz_bson_insert: a nonzero terminator passed everything else).
      uint32_t child_len = 0;
      const uint8_t* child_data = ContainerData(it, &child_len);
      bson_iter_t child;
      if (child_data == nullptr || !bson_iter_init_from_data(&child, child_data, child_len)) {
        return WalkResult::kMalformed;
      }
      if (depth < kShallow) {
        shallow[depth].it = child;
      } else {
        deep.push_back(AlignedIter{child});
      }
      ++depth;
    } else if (type == BSON_TYPE_CODEWSCOPE) {
      // The scope is a document too: same checks, one level down.
      uint32_t code_len = 0, scope_len = 0;
      const uint8_t* scope = nullptr;
      bson_iter_codewscope(it, &code_len, &scope_len, &scope);
      if (scope == nullptr) return WalkResult::kMalformed;
      WalkResult r = WalkFields(scope, scope_len, max_depth - depth);
      if (r != WalkResult::kOk) return r;
    }
  }
  return WalkResult::kOk;
}

Status WalkStatus(WalkResult result, const std::string& too_deep_message) {
  switch (result) {
    case WalkResult::kOk: return Status::OK();
    case WalkResult::kTooDeep: return Status(ErrorCode::kOverflow, too_deep_message);
    case WalkResult::kBadUtf8:
      return Status(ErrorCode::kInvalidBSON, "invalid BSON: a field name or string is not valid UTF-8");
    case WalkResult::kMalformed:
      return Status(ErrorCode::kInvalidBSON, "invalid BSON: a corrupt or truncated element");
  }
  return Status::OK();
}

Status DollarInId(const char* name) {
  return Status(ErrorCode::kDollarPrefixedFieldName,
                std::string("_id fields may not contain '$'-prefixed fields: ") + name +
                    " is not valid for storage.");
}

// MongoDB's BSONObj::storageValidEmbedded: no '$'-prefixed field names at
// any depth, except a DBRef ($ref: string, $id, optionally $db: string) at
// the start of a document.  `depth` is the nesting level of this document.
Status CheckEmbedded(const uint8_t* data, size_t len, int depth) {
  if (depth > kMaxStorageNestingDepth) {
    return Status(ErrorCode::kOverflow, "Document exceeds maximum nesting depth of " +
                                            std::to_string(kMaxStorageNestingDepth));
  }
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, data, len)) {
    return Status(ErrorCode::kInvalidBSON, "invalid BSON: corrupt embedded document in _id");
  }
  bool first = true;
  bool more = bson_iter_next(&it);
  while (more) {
    const char* name = bson_iter_key(&it);
    if (name[0] == '$') {
      bool dbref = false;
      if (first && std::strcmp(name, "$ref") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
        bson_iter_t peek = it;
        dbref = bson_iter_next(&peek) && std::strcmp(bson_iter_key(&peek), "$id") == 0;
      }
      if (!dbref) return DollarInId(name);
      // Skip $ref and $id (the $id value is not inspected, as in MongoDB),
      // then look at the field after them.
      bson_iter_next(&it);
      first = false;
      more = bson_iter_next(&it);
      if (!more) break;
      name = bson_iter_key(&it);
      if (std::strcmp(name, "$db") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
        more = bson_iter_next(&it);
        continue;
      }
      if (name[0] == '$') return DollarInId(name);
    }
    bson_type_t type = bson_iter_type(&it);
    if (IsContainer(type)) {
      uint32_t child_len = 0;
      const uint8_t* child = ContainerData(&it, &child_len);
      if (child == nullptr) {
        return Status(ErrorCode::kInvalidBSON, "invalid BSON: corrupt embedded document in _id");
      }
      RETURN_IF_ERROR(CheckEmbedded(child, child_len, depth + 1));
    } else if (type == BSON_TYPE_CODEWSCOPE) {
      uint32_t code_len = 0, scope_len = 0;
      const uint8_t* scope = nullptr;
      bson_iter_codewscope(&it, &code_len, &scope_len, &scope);
      if (scope == nullptr) {
        return Status(ErrorCode::kInvalidBSON, "invalid BSON: corrupt code scope in _id");
      }
      RETURN_IF_ERROR(CheckEmbedded(scope, scope_len, depth + 1));
    }
    first = false;
    more = bson_iter_next(&it);
  }
  return Status::OK();
}

}  // namespace

Status ValidateIdValue(const bson_value_t& id) {
  switch (id.value_type) {
    case BSON_TYPE_ARRAY:
      return Status(ErrorCode::kInvalidIdField, "The '_id' value cannot be of type array");
    case BSON_TYPE_REGEX:
      return Status(ErrorCode::kInvalidIdField, "The '_id' value cannot be of type regex");
    case BSON_TYPE_UNDEFINED:
      return Status(ErrorCode::kInvalidIdField, "The '_id' value cannot be of type undefined");
    case BSON_TYPE_DOCUMENT:
      // The _id field itself is at depth 1, so its fields are at depth 2.
      return CheckEmbedded(id.value.v_doc.data, id.value.v_doc.data_len, 2);
    default:
      return Status::OK();
  }
}

namespace {

Status CheckSize(const bson_t* doc) {
  if (doc->len > kMaxUserDocumentSize) {
    return Status(ErrorCode::kBSONObjectTooLarge,
                  "object to insert too large. size in bytes: " + std::to_string(doc->len) +
                      ", max size: " + std::to_string(kMaxUserDocumentSize));
  }
  return Status::OK();
}

bool Listed(const std::vector<std::string>& fields, const char* name, size_t len) {
  for (const std::string& f : fields) {
    if (f.size() == len && std::memcmp(f.data(), name, len) == 0) return true;
  }
  return false;
}

// The top-level rules (names, _id) on one field; `seen_id` carries whether
// an _id came before.
Status CheckTopLevelName(bson_iter_t* it, const char* name, bool* seen_id);
// The top-level rules on every field; with a summary, also what it holds.
Status CheckTopLevelNames(const bson_t* doc, const std::string& probe, TopLevelSummary* summary);

}  // namespace

Status ValidateForStorage(const bson_t* doc) { return ValidateForStorage(doc, std::string(), nullptr); }

Status ValidateForStorage(const bson_t* doc, const std::string& probe, TopLevelSummary* summary) {
  RETURN_IF_ERROR(CheckSize(doc));
  RETURN_IF_ERROR(WalkStatus(
      WalkFields(bson_get_data(doc), doc->len, kMaxStorageNestingDepth),
      "Document exceeds maximum nesting depth of " + std::to_string(kMaxStorageNestingDepth)));
  return CheckTopLevelNames(doc, probe, summary);
}

Status ValidateStampedDocument(const bson_t* doc, const std::string& version_field) {
  RETURN_IF_ERROR(CheckSize(doc));
  if (!ValidUtf8(version_field.data(), version_field.size(), false)) return WalkStatus(WalkResult::kBadUtf8, "");
  if (version_field.empty()) {
    return Status(ErrorCode::kEmptyFieldName, "Document can't have an empty top-level field name");
  }
  if (version_field[0] == '$') {
    return Status(ErrorCode::kDollarPrefixedFieldName,
                  "Document can't have $ prefixed field names: " + version_field);
  }
  return Status::OK();
}

namespace {

// ValidateWrittenFields' checks of one listed field at `it`; a name error
// goes to `name_error` (the first one only) and is answered after the walk.
Status CheckWrittenField(bson_iter_t* it, const char* name, bool* seen_id, Status* name_error) {
  const bson_type_t type = bson_iter_type(it);
  if (!ElementUtf8Ok(it, type)) return WalkStatus(WalkResult::kBadUtf8, "");
  if (IsContainer(type)) {
    uint32_t len = 0;
    const uint8_t* data = ContainerData(it, &len);
    if (data == nullptr) return WalkStatus(WalkResult::kMalformed, "");
    // The fields inside a top-level field are at depth 2.
    RETURN_IF_ERROR(WalkStatus(
        WalkFields(data, len, kMaxStorageNestingDepth - 1),
        "Document exceeds maximum nesting depth of " + std::to_string(kMaxStorageNestingDepth)));
  }
  if (name_error->ok()) *name_error = CheckTopLevelName(it, name, seen_id);
  return Status::OK();
}

}  // namespace

Status ValidateWrittenFields(const bson_t* doc, const std::vector<std::string>& fields) {
  RETURN_IF_ERROR(CheckSize(doc));
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return Status(ErrorCode::kInvalidBSON, "invalid BSON");
  // One walk; a name error is answered only when no field's value is
  // malformed, as if the names were checked in a second walk.
  Status name_error;
  bool seen_id = false;
  while (bson_iter_next(&it)) {
    const char* name = bson_iter_key(&it);
    if (!Listed(fields, name, bson_iter_key_len(&it))) continue;
    RETURN_IF_ERROR(CheckWrittenField(&it, name, &seen_id, &name_error));
  }
  return name_error;
}

Status ValidateWrittenFields(const bson_t* doc, const std::vector<std::string>& fields,
                             const std::vector<uint32_t>& offsets) {
  RETURN_IF_ERROR(CheckSize(doc));
  // The listed fields `doc` has, in its order (as the walk above meets them).
  std::vector<std::pair<uint32_t, size_t>> order;
  order.reserve(fields.size());
  for (size_t f = 0; f < fields.size(); ++f) {
    if (offsets[f] != 0) order.emplace_back(offsets[f], f);
  }
  std::sort(order.begin(), order.end());
  Status name_error;
  bool seen_id = false;
  for (const auto& entry : order) {
    bson_iter_t it;
    if (!ElementAt(doc, entry.first, fields[entry.second], &it)) return Status(ErrorCode::kInvalidBSON, "invalid BSON");
    RETURN_IF_ERROR(CheckWrittenField(&it, bson_iter_key(&it), &seen_id, &name_error));
  }
  return name_error;
}

namespace {

Status CheckTopLevelName(bson_iter_t* it, const char* name, bool* seen_id) {
  if (name[0] == '\0') {
    return Status(ErrorCode::kEmptyFieldName, "Document can't have an empty top-level field name");
  }
  if (name[0] == '$') {
    return Status(ErrorCode::kDollarPrefixedFieldName,
                  std::string("Document can't have $ prefixed field names: ") + name);
  }
  if (std::strcmp(name, "_id") == 0) {
    if (*seen_id) return Status(ErrorCode::kBadValue, "can't have multiple _id fields in one document");
    *seen_id = true;
    RETURN_IF_ERROR(ValidateIdValue(*bson_iter_value(it)));
  }
  return Status::OK();
}

Status CheckTopLevelNames(const bson_t* doc, const std::string& probe, TopLevelSummary* summary) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return Status(ErrorCode::kInvalidBSON, "invalid BSON");
  if (summary != nullptr) {
    *summary = TopLevelSummary();
    summary->rest.reserve(16);  // most documents: one allocation
  }
  bool seen_id = false;
  bool first = true;
  while (bson_iter_next(&it)) {
    const char* name = bson_iter_key(&it);
    const bool was_id = seen_id;
    RETURN_IF_ERROR(CheckTopLevelName(&it, name, &seen_id));
    if (summary == nullptr) continue;
    const size_t len = bson_iter_key_len(&it);
    if (seen_id != was_id) {
      summary->id_first = first;
    } else if (len == probe.size() && std::memcmp(name, probe.data(), len) == 0) {
      if (summary->probe == TopLevelSummary::Probe::kAbsent) {
        summary->probe = BSON_ITER_HOLDS_INT64(&it) ? TopLevelSummary::Probe::kInt64 : TopLevelSummary::Probe::kOther;
        summary->probe_offset = bson_iter_offset(&it);
      }
    } else {
      summary->rest.emplace_back(name, len);
    }
    first = false;
  }
  return Status::OK();
}

}  // namespace

Status ValidateIncoming(const uint8_t* data, size_t len) {
  if (data == nullptr || len < 5) {
    return Status(ErrorCode::kInvalidBSON,
                  "invalid BSON: " + std::to_string(len) + " bytes is too short for a document");
  }
  if (len > static_cast<size_t>(INT32_MAX)) {
    return Status(ErrorCode::kInvalidBSON, "invalid BSON: " + std::to_string(len) +
                                               " bytes is too long for a document");
  }
  int32_t declared = 0;
  std::memcpy(&declared, data, sizeof(declared));
  declared = BSON_UINT32_FROM_LE(declared);
  if (declared < 0 || static_cast<size_t>(declared) != len) {
    return Status(ErrorCode::kInvalidBSON, "invalid BSON: length header says " +
                                               std::to_string(declared) + " bytes, but " +
                                               std::to_string(len) + " were received");
  }
  if (data[len - 1] != 0) {
    return Status(ErrorCode::kInvalidBSON, "invalid BSON: document does not end with 0x00");
  }
  return WalkStatus(WalkFields(data, len, kMaxIncomingNestingDepth),
                    "BSONObj exceeded maximum nested object depth: " + std::to_string(kMaxIncomingNestingDepth));
}

std::optional<Document> EnsureId(const bson_t* doc, bool* id_generated) {
  if (id_generated != nullptr) *id_generated = false;
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return std::nullopt;
  bson_iter_t id_it;
  bool found = false;
  bool first = true;
  while (bson_iter_next(&it)) {
    if (std::strcmp(bson_iter_key(&it), "_id") == 0) {
      if (first) return std::nullopt;
      id_it = it;
      found = true;
      break;
    }
    first = false;
  }

  bson_t* out = bson_sized_new(doc->len + (found ? 0 : 17));
  uint32_t id_offset = 0;
  if (found) {
    id_offset = bson_iter_offset(&id_it);
    bson_append_iter(out, "_id", 3, &id_it);
  } else {
    bson_oid_t oid;
    bson_oid_init(&oid, nullptr);
    bson_append_oid(out, "_id", 3, &oid);
    if (id_generated != nullptr) *id_generated = true;
  }
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) {
      if (found && bson_iter_offset(&it) == id_offset) continue;
      AppendValueVerbatim(out, bson_iter_key(&it), static_cast<int>(bson_iter_key_len(&it)), bson_iter_value(&it));
    }
  }
  return Document::Adopt(out);
}

namespace {

void PutLen(std::string* raw, size_t n) {
  const uint32_t le = BSON_UINT32_TO_LE(static_cast<uint32_t>(n));
  raw->append(reinterpret_cast<const char*>(&le), 4);
}

}  // namespace

bool AppendValueVerbatim(bson_t* out, const char* key, int key_len, const bson_value_t* v) {
  // libbson's append sorts a regex's options (dropping unknown ones) and
  // measures JavaScript code and DBPointer names with strlen, cutting them
  // at an embedded NUL: those types are written as raw bytes instead.
  const bson_type_t t = v->value_type;
  if (t != BSON_TYPE_REGEX && t != BSON_TYPE_CODE && t != BSON_TYPE_CODEWSCOPE && t != BSON_TYPE_DBPOINTER) {
    return bson_append_value(out, key, key_len, v);
  }
  const size_t klen = key_len < 0 ? std::strlen(key) : static_cast<size_t>(key_len);
  // One element in a document of its own: {int32 size, type key\0 payload, 0x00}.
  std::string raw(4, '\0');
  raw.push_back(static_cast<char>(t));
  raw.append(key, klen);
  raw.push_back('\0');
  switch (t) {
    case BSON_TYPE_REGEX: {
      const char* options = v->value.v_regex.options ? v->value.v_regex.options : "";
      raw.append(v->value.v_regex.regex);
      raw.push_back('\0');
      raw.append(options);
      raw.push_back('\0');
      break;
    }
    case BSON_TYPE_CODE:
      PutLen(&raw, v->value.v_code.code_len + 1);
      raw.append(v->value.v_code.code, v->value.v_code.code_len);
      raw.push_back('\0');
      break;
    case BSON_TYPE_CODEWSCOPE: {
      const auto& c = v->value.v_codewscope;
      PutLen(&raw, 4 + 4 + c.code_len + 1 + c.scope_len);
      PutLen(&raw, c.code_len + 1);
      raw.append(c.code, c.code_len);
      raw.push_back('\0');
      raw.append(reinterpret_cast<const char*>(c.scope_data), c.scope_len);
      break;
    }
    default: {  // BSON_TYPE_DBPOINTER
      const auto& d = v->value.v_dbpointer;
      PutLen(&raw, d.collection_len + 1);
      raw.append(d.collection, d.collection_len);
      raw.push_back('\0');
      raw.append(reinterpret_cast<const char*>(d.oid.bytes), 12);
      break;
    }
  }
  raw.push_back('\0');
  const uint32_t le = BSON_UINT32_TO_LE(static_cast<uint32_t>(raw.size()));
  std::memcpy(&raw[0], &le, 4);
  bson_t one;
  if (!bson_init_static(&one, reinterpret_cast<const uint8_t*>(raw.data()), raw.size())) return false;
  return bson_concat(out, &one);
}

}  // namespace gatedb
