#include "engine/index/index_spec.h"

#include <cmath>
#include <cstring>

#include "engine/document/bson_compare.h"
#include "engine/projection/paths.h"

namespace gatedb {
namespace index {

namespace {

Status CannotCreate(const std::string& why) { return Status(ErrorCode::kCannotCreateIndex, why); }

// The direction's text as MongoDB's default name spells it.
std::string DirectionText(const bson_iter_t* it) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_INT32: return std::to_string(bson_iter_int32(it));
    case BSON_TYPE_INT64: return std::to_string(bson_iter_int64(it));
    case BSON_TYPE_DOUBLE: {
      double d = bson_iter_double(it);
      if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", d);
      return buf;
    }
    case BSON_TYPE_UTF8: return bson_iter_utf8(it, nullptr);
    default: return "1";
  }
}

// A key pattern value: a non-zero number gives the direction; the strings
// MongoDB knows name index types gatedb does not build.
Status ParseDirection(const char* field, const bson_iter_t* it, bool* descending) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: {
      long double v = NumberAsLongDouble(*bson_iter_value(const_cast<bson_iter_t*>(it)));
      if (std::isnan(static_cast<double>(v)) || v == 0) {
        return CannotCreate(std::string("Values in the index key pattern can't be 0 or NaN; field '") + field +
                            "' has value 0");
      }
      *descending = v < 0;
      return Status::OK();
    }
    case BSON_TYPE_UTF8: {
      std::string type = bson_iter_utf8(it, nullptr);
      if (type == "text" || type == "2d" || type == "2dsphere" || type == "geoHaystack" || type == "hashed" ||
          type == "columnstore") {
        return CannotCreate("gatedb does not build '" + type + "' indexes (field '" + std::string(field) + "')");
      }
      return CannotCreate("Unknown index plugin '" + type + "'");
    }
    default:
      return CannotCreate(std::string("Values in v:2 index key pattern cannot be of type ") +
                          BsonTypeName(bson_iter_type(it)) + ". Only numbers > 0, numbers < 0, and strings are allowed.");
  }
}

Status ParseKeyPattern(const bson_t* key, IndexSpec* spec) {
  bson_iter_t it;
  if (!bson_iter_init(&it, key)) return Status(ErrorCode::kInvalidBSON, "invalid key pattern");
  while (bson_iter_next(&it)) {
    const char* field = bson_iter_key(&it);
    std::string path = field;
    if (path == "$**" || (path.size() > 4 && path.compare(path.size() - 4, 4, ".$**") == 0)) {
      return CannotCreate("gatedb does not build wildcard indexes ('" + path + "')");
    }
    if (path.empty()) return CannotCreate("Index keys cannot be an empty field.");
    Status fp = projection::ValidateFieldPath(path);
    if (!fp.ok()) return CannotCreate("Index key contains an illegal field name: " + fp.reason());
    IndexField f;
    RETURN_IF_ERROR(ParseDirection(field, &it, &f.descending));
    for (const IndexField& other : spec->fields) {
      if (other.path == path) return CannotCreate("Index key contains duplicate field: " + path);
    }
    f.path = path;
    for (std::string_view part : projection::SplitDottedPath(path)) f.parts.emplace_back(part);
    spec->fields.push_back(std::move(f));
  }
  if (spec->fields.empty()) return CannotCreate("Index keys cannot be empty.");
  if (spec->fields.size() > 32) return CannotCreate("Index key pattern has more than 32 fields");
  return Status::OK();
}

// The operators a partial filter may hold (MongoDB 6.0's list).
Status CheckPartialFilter(const bson_t* filter, int depth) {
  if (depth > 4) return CannotCreate("partialFilterExpression is nested too deeply");
  bson_iter_t it;
  if (!bson_iter_init(&it, filter)) return Status(ErrorCode::kInvalidBSON, "invalid partialFilterExpression");
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (key == "$and" || key == "$or") {
      if (!BSON_ITER_HOLDS_ARRAY(&it)) return Status(ErrorCode::kBadValue, key + " must be an array");
      bson_iter_t elems;
      bson_iter_recurse(&it, &elems);
      while (bson_iter_next(&elems)) {
        if (!BSON_ITER_HOLDS_DOCUMENT(&elems)) return Status(ErrorCode::kBadValue, key + " entries must be objects");
        uint32_t len;
        const uint8_t* data;
        bson_iter_document(&elems, &len, &data);
        bson_t sub;
        if (!bson_init_static(&sub, data, len)) return Status(ErrorCode::kInvalidBSON, "invalid BSON");
        RETURN_IF_ERROR(CheckPartialFilter(&sub, depth + 1));
      }
      continue;
    }
    if (!key.empty() && key[0] == '$') return CannotCreate("Expression not supported in partial index: " + key);
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) continue;  // equality
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops)) {
      std::string op = bson_iter_key(&ops);
      if (op.empty() || op[0] != '$') break;  // an object to compare with
      if (op == "$eq" || op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte" || op == "$type" ||
          op == "$in") {
        continue;
      }
      if (op == "$exists" && bson_iter_as_bool(&ops)) continue;
      return CannotCreate("Expression not supported in partial index: " + key + " " + op);
    }
  }
  return Status::OK();
}

Status ReadBoolOption(const bson_iter_t* it, const char* name, bool* out) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_BOOL:
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
      *out = bson_iter_as_bool(it);
      return Status::OK();
    default:
      return Status(ErrorCode::kTypeMismatch, std::string("The field '") + name + "' must be a boolean, not " +
                                                  BsonTypeName(bson_iter_type(it)));
  }
}

}  // namespace

std::string DefaultIndexName(const bson_t* key_pattern) {
  std::string name;
  bson_iter_t it;
  if (!bson_iter_init(&it, key_pattern)) return name;
  while (bson_iter_next(&it)) {
    if (!name.empty()) name += '_';
    name += bson_iter_key(&it);
    name += '_';
    name += DirectionText(&it);
  }
  return name;
}

StatusOr<IndexSpec> ParseIndexSpec(const bson_t* spec_doc) {
  IndexSpec spec;
  bool have_key = false, have_name = false;
  bson_iter_t it;
  if (!bson_iter_init(&it, spec_doc)) return Status(ErrorCode::kInvalidBSON, "invalid index specification");
  while (bson_iter_next(&it)) {
    std::string field = bson_iter_key(&it);
    if (field == "key") {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
        return Status(ErrorCode::kTypeMismatch, "The field 'key' must be an object, not " +
                                                     std::string(BsonTypeName(bson_iter_type(&it))));
      }
      uint32_t len;
      const uint8_t* data;
      bson_iter_document(&it, &len, &data);
      StatusOr<Document> key = Document::FromBytes(data, len);
      if (!key.ok()) return key.status();
      spec.key = std::move(*key);
      RETURN_IF_ERROR(ParseKeyPattern(spec.key.bson(), &spec));
      have_key = true;
    } else if (field == "name") {
      if (!BSON_ITER_HOLDS_UTF8(&it)) {
        return Status(ErrorCode::kTypeMismatch, "The field 'name' must be a string, not " +
                                                     std::string(BsonTypeName(bson_iter_type(&it))));
      }
      spec.name = bson_iter_utf8(&it, nullptr);
      if (spec.name.empty()) return CannotCreate("The index name cannot be empty");
      if (spec.name == "*") return CannotCreate("The index name '*' is not valid");
      have_name = true;
    } else if (field == "unique") {
      RETURN_IF_ERROR(ReadBoolOption(&it, "unique", &spec.unique));
    } else if (field == "sparse") {
      RETURN_IF_ERROR(ReadBoolOption(&it, "sparse", &spec.sparse));
    } else if (field == "partialFilterExpression") {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
        return Status(ErrorCode::kTypeMismatch, "The field 'partialFilterExpression' must be an object, not " +
                                                     std::string(BsonTypeName(bson_iter_type(&it))));
      }
      uint32_t len;
      const uint8_t* data;
      bson_iter_document(&it, &len, &data);
      StatusOr<Document> f = Document::FromBytes(data, len);
      if (!f.ok()) return f.status();
      spec.partial_filter = std::move(*f);
      RETURN_IF_ERROR(CheckPartialFilter(spec.partial_filter.bson(), 0));
    } else if (field == "expireAfterSeconds") {
      if (!BSON_ITER_HOLDS_NUMBER(&it)) {
        return Status(ErrorCode::kTypeMismatch, "The field 'expireAfterSeconds' must be a number, not " +
                                                     std::string(BsonTypeName(bson_iter_type(&it))));
      }
      double v = bson_iter_as_double(&it);
      if (std::isnan(v) || v < 0 || v > 2147483647.0) {
        return Status(ErrorCode::kInvalidOptions,
                      "TTL index 'expireAfterSeconds' option must be within an acceptable range [0, 2147483647]");
      }
      spec.expire_after_seconds = static_cast<int64_t>(v);
    } else if (field == "v") {
      if (!BSON_ITER_HOLDS_NUMBER(&it) || (bson_iter_as_int64(&it) != 1 && bson_iter_as_int64(&it) != 2)) {
        return CannotCreate("Invalid index specification: index version must be 1 or 2");
      }
    } else if (field == "background" || field == "ns") {
      // Accepted and ignored, as by MongoDB 4.2+.
    } else if (field == "collation" || field == "hidden" || field == "wildcardProjection" ||
               field == "weights" || field == "default_language" || field == "language_override" ||
               field == "textIndexVersion" || field == "2dsphereIndexVersion" || field == "bits" ||
               field == "min" || field == "max" || field == "bucketSize" || field == "storageEngine" ||
               field == "clustered" || field == "prepareUnique") {
      return Status(ErrorCode::kInvalidIndexSpecificationOption,
                    "The index option '" + field + "' is not supported by gatedb");
    } else {
      return Status(ErrorCode::kInvalidIndexSpecificationOption,
                    "The field '" + field + "' is not valid for an index specification. Specification: " +
                        DocumentView(spec_doc).ToJson());
    }
  }
  if (!have_key) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'key' field is a required property of an index specification");
  }
  if (!have_name) spec.name = DefaultIndexName(spec.key.bson());
  bool is_id = spec.fields.size() == 1 && spec.fields[0].path == "_id";
  if (spec.sparse && spec.has_partial_filter()) {
    return CannotCreate("cannot mix \"partialFilterExpression\" and \"sparse\" options");
  }
  if (spec.expire_after_seconds) {
    if (spec.fields.size() != 1) {
      return CannotCreate("TTL index 'expireAfterSeconds' option is only supported on single-field indexes");
    }
    if (is_id) return CannotCreate("The field 'expireAfterSeconds' is not valid for an _id index specification.");
  }
  if (spec.name == kIdIndexName && !is_id) {
    return Status(ErrorCode::kBadValue, "The index name '_id_' is reserved for the _id index");
  }
  return spec;
}

void AppendIndexDescription(const IndexSpec& spec, bson_t* out) {
  BSON_APPEND_INT32(out, "v", 2);
  BSON_APPEND_DOCUMENT(out, "key", spec.key.bson());
  BSON_APPEND_UTF8(out, "name", spec.name.c_str());
  if (spec.unique) BSON_APPEND_BOOL(out, "unique", true);
  if (spec.sparse) BSON_APPEND_BOOL(out, "sparse", true);
  if (spec.has_partial_filter()) BSON_APPEND_DOCUMENT(out, "partialFilterExpression", spec.partial_filter.bson());
  if (spec.expire_after_seconds) BSON_APPEND_INT64(out, "expireAfterSeconds", *spec.expire_after_seconds);
}

void AppendIdIndexDescription(bson_t* out) {
  BSON_APPEND_INT32(out, "v", 2);
  bson_t key;
  BSON_APPEND_DOCUMENT_BEGIN(out, "key", &key);
  BSON_APPEND_INT32(&key, "_id", 1);
  bson_append_document_end(out, &key);
  BSON_APPEND_UTF8(out, "name", kIdIndexName);
}

bool SameKeyPattern(const IndexSpec& a, const IndexSpec& b) {
  if (a.fields.size() != b.fields.size()) return false;
  for (size_t i = 0; i < a.fields.size(); ++i) {
    if (a.fields[i].path != b.fields[i].path || a.fields[i].descending != b.fields[i].descending) return false;
  }
  return true;
}

bool SameDefinition(const IndexSpec& a, const IndexSpec& b) {
  if (!SameKeyPattern(a, b) || a.unique != b.unique || a.sparse != b.sparse ||
      a.expire_after_seconds != b.expire_after_seconds || a.has_partial_filter() != b.has_partial_filter()) {
    return false;
  }
  return !a.has_partial_filter() || CompareDocuments(a.partial_filter.bson(), b.partial_filter.bson()) == 0;
}

std::string EncodeIndexSpec(const IndexSpec& spec) {
  bson_t out = BSON_INITIALIZER;
  AppendIndexDescription(spec, &out);
  BSON_APPEND_INT64(&out, "gatedbId", spec.id);
  BSON_APPEND_BOOL(&out, "ready", spec.ready);
  BSON_APPEND_BOOL(&out, "multikey", spec.multikey);
  std::string bytes(reinterpret_cast<const char*>(bson_get_data(&out)), out.len);
  bson_destroy(&out);
  return bytes;
}

StatusOr<IndexSpec> DecodeIndexSpec(std::string_view bytes) {
  bson_t doc;
  if (!bson_init_static(&doc, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    return Status(ErrorCode::kDataCorruptionDetected, "corrupt index catalog entry");
  }
  // The engine's fields are read here; the rest parses as a specification.
  bson_t definition = BSON_INITIALIZER;
  uint32_t id = 0;
  bool ready = false, multikey = false;
  bson_iter_t it;
  bson_iter_init(&it, &doc);
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (std::strcmp(key, "gatedbId") == 0) {
      id = static_cast<uint32_t>(bson_iter_as_int64(&it));
    } else if (std::strcmp(key, "ready") == 0) {
      ready = bson_iter_as_bool(&it);
    } else if (std::strcmp(key, "multikey") == 0) {
      multikey = bson_iter_as_bool(&it);
    } else {
      bson_append_iter(&definition, key, -1, &it);
    }
  }
  StatusOr<IndexSpec> spec = ParseIndexSpec(&definition);
  bson_destroy(&definition);
  if (!spec.ok()) {
    return Status(ErrorCode::kDataCorruptionDetected, "corrupt index catalog entry: " + spec.status().reason());
  }
  spec->id = id;
  spec->ready = ready;
  spec->multikey = multikey;
  return spec;
}

}  // namespace index
}  // namespace gatedb
