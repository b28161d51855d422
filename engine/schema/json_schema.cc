#include "engine/schema/json_schema.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/document/bson_compare.h"
#include "engine/query/match_expression.h"
#include "engine/regex/regex_matcher.h"
#include "engine/schema/bson_util.h"

namespace gatedb {
namespace schema {

// ---------------------------------------------------------------------------
// The parsed form.

namespace {

struct TypeSet {
  std::bitset<256> types;  // indexed by the BSON type byte (MinKey is 0xFF)
  bool all_numbers = false;

  bool Matches(bson_type_t t) const {
    return types.test(static_cast<uint8_t>(t)) || (all_numbers && IsNumberType(t));
  }
  bool HasObject() const { return types.test(BSON_TYPE_DOCUMENT); }
  bool Empty() const { return types.none() && !all_numbers; }
};

enum class Additional { kAbsent, kTrue, kFalse, kSchema };

// A keyword's argument as written, for specifiedAs.
struct Spec {
  bool present = false;
  bson_value_t value;
};

}  // namespace

struct Subschema {
  std::optional<std::string> title;
  std::optional<std::string> description;

  // type / bsonType
  const char* type_keyword = nullptr;  // "type" or "bsonType"; null when absent
  Spec type_spec;
  TypeSet types;

  // Strings.
  Spec pattern_spec;
  std::unique_ptr<regex::RegexMatcher> pattern;
  Spec max_length_spec, min_length_spec;
  int64_t max_length = 0, min_length = 0;

  // Numbers.
  Spec multiple_of_spec;
  ExactDecimal multiple_of;
  Spec maximum_spec, exclusive_maximum_spec, minimum_spec, exclusive_minimum_spec;
  bool exclusive_maximum = false, exclusive_minimum = false;

  // Arrays.
  Spec min_items_spec, max_items_spec;
  int64_t min_items = 0, max_items = 0;
  bool unique_items = false;
  Spec unique_items_spec;
  bool has_items = false;
  bool items_is_array = false;
  std::unique_ptr<Subschema> items;                // items: {schema}
  std::vector<std::unique_ptr<Subschema>> item_list;  // items: [schemas]
  Additional additional_items = Additional::kAbsent;
  std::unique_ptr<Subschema> additional_items_schema;

  // Objects.
  bool has_properties = false;
  std::vector<std::pair<std::string, std::unique_ptr<Subschema>>> properties;
  std::set<std::string, std::less<>> property_names;
  struct PatternProperty {
    std::string pattern;
    std::unique_ptr<regex::RegexMatcher> regex;
    std::unique_ptr<Subschema> schema;
  };
  bool has_pattern_properties = false;
  std::vector<PatternProperty> pattern_properties;
  Additional additional_properties = Additional::kAbsent;
  std::unique_ptr<Subschema> additional_properties_schema;
  Spec required_spec;
  std::vector<std::string> required;  // sorted bytewise, as MongoDB reports them
  Spec min_properties_spec, max_properties_spec;
  int64_t min_properties = 0, max_properties = 0;
  struct Dependency {
    std::string property;
    std::unique_ptr<Subschema> schema;    // a schema dependency, or
    std::vector<std::string> properties;  // a property dependency
  };
  std::vector<Dependency> dependencies;

  // Logic.
  std::vector<std::unique_ptr<Subschema>> all_of, any_of, one_of;
  std::unique_ptr<Subschema> not_schema;
  Spec enum_spec;
  std::vector<CanonicalValue> enum_values;
  bool enum_has_object = false;

  bool IsRequired(std::string_view name) const {
    return std::binary_search(required.begin(), required.end(), name);
  }
  // A top-level schema whose type excludes "object" matches nothing.
  bool RootAlwaysFalse() const { return type_keyword != nullptr && !types.HasObject(); }
};

namespace {

// ---------------------------------------------------------------------------
// Parsing.

using SubschemaPtr = std::unique_ptr<Subschema>;

Status TypeMismatch(std::string msg) { return Status(ErrorCode::kTypeMismatch, std::move(msg)); }
Status FailedToParse(std::string msg) { return Status(ErrorCode::kFailedToParse, std::move(msg)); }
Status BadValue(std::string msg) { return Status(ErrorCode::kBadValue, std::move(msg)); }

std::string Kw(std::string_view keyword) {
  return "$jsonSchema keyword '" + std::string(keyword) + "'";
}

std::string TypeName(const bson_value_t& v) { return BsonTypeName(v.value_type); }

bool IsDocument(const bson_value_t& v) { return v.value_type == BSON_TYPE_DOCUMENT; }
bool IsArray(const bson_value_t& v) { return v.value_type == BSON_TYPE_ARRAY; }
std::string_view Str(const bson_value_t& v) {
  return std::string_view(v.value.v_utf8.str, v.value.v_utf8.len);
}

enum Keyword {
  kAdditionalItems,
  kAdditionalProperties,
  kAllOf,
  kAnyOf,
  kBsonType,
  kDependencies,
  kDescription,
  kEnum,
  kExclusiveMaximum,
  kExclusiveMinimum,
  kItems,
  kMaxItems,
  kMaxLength,
  kMaxProperties,
  kMaximum,
  kMinItems,
  kMinLength,
  kMinProperties,
  kMinimum,
  kMultipleOf,
  kNot,
  kOneOf,
  kPattern,
  kPatternProperties,
  kProperties,
  kRequired,
  kTitle,
  kType,
  kUniqueItems,
  kNumKeywords,
};

constexpr const char* kKeywordNames[kNumKeywords] = {
    "additionalItems", "additionalProperties", "allOf",         "anyOf",
    "bsonType",        "dependencies",         "description",   "enum",
    "exclusiveMaximum", "exclusiveMinimum",    "items",         "maxItems",
    "maxLength",       "maxProperties",        "maximum",       "minItems",
    "minLength",       "minProperties",        "minimum",       "multipleOf",
    "not",             "oneOf",                "pattern",       "patternProperties",
    "properties",      "required",             "title",         "type",
    "uniqueItems",
};

// Keywords MongoDB knows but refuses; gatedb adds its encryption keywords.
constexpr const char* kUnsupportedKeywords[] = {"$ref",   "$schema", "default", "definitions",
                                                "format", "id",      "encrypt", "encryptMetadata"};

struct TypeAlias {
  const char* name;
  bson_type_t type;
};
constexpr TypeAlias kBsonTypeAliases[] = {
    {"double", BSON_TYPE_DOUBLE},     {"string", BSON_TYPE_UTF8},
    {"object", BSON_TYPE_DOCUMENT},   {"array", BSON_TYPE_ARRAY},
    {"binData", BSON_TYPE_BINARY},    {"undefined", BSON_TYPE_UNDEFINED},
    {"objectId", BSON_TYPE_OID},      {"bool", BSON_TYPE_BOOL},
    {"date", BSON_TYPE_DATE_TIME},    {"null", BSON_TYPE_NULL},
    {"regex", BSON_TYPE_REGEX},       {"dbPointer", BSON_TYPE_DBPOINTER},
    {"javascript", BSON_TYPE_CODE},   {"symbol", BSON_TYPE_SYMBOL},
    {"javascriptWithScope", BSON_TYPE_CODEWSCOPE},
    {"int", BSON_TYPE_INT32},         {"timestamp", BSON_TYPE_TIMESTAMP},
    {"long", BSON_TYPE_INT64},        {"decimal", BSON_TYPE_DECIMAL128},
    {"minKey", BSON_TYPE_MINKEY},     {"maxKey", BSON_TYPE_MAXKEY},
};
constexpr TypeAlias kJsonTypeAliases[] = {
    {"array", BSON_TYPE_ARRAY},   {"boolean", BSON_TYPE_BOOL}, {"null", BSON_TYPE_NULL},
    {"object", BSON_TYPE_DOCUMENT}, {"string", BSON_TYPE_UTF8},
};

// MongoDB's JSONSchemaParser::parseTypeSet + MatcherTypeSet::fromStringAliases.
Status ParseTypeSet(std::string_view keyword, const bson_value_t& v, bool json_types,
                    TypeSet* out) {
  std::set<std::string> aliases;
  if (v.value_type == BSON_TYPE_UTF8) {
    if (Str(v) == "integer") {
      return FailedToParse("$jsonSchema type 'integer' is not currently supported.");
    }
    aliases.insert(std::string(Str(v)));
  } else if (IsArray(v)) {
    ElemIter it(v);
    while (it.Next()) {
      const bson_value_t& e = it.value();
      if (e.value_type != BSON_TYPE_UTF8) {
        return TypeMismatch(Kw(keyword) + " array elements must be strings");
      }
      if (Str(e) == "integer") {
        return FailedToParse("$jsonSchema type 'integer' is not currently supported.");
      }
      if (!aliases.insert(std::string(Str(e))).second) {
        return FailedToParse(Kw(keyword) + " has duplicate value: " + std::string(Str(e)));
      }
    }
  } else {
    return TypeMismatch(Kw(keyword) + " must be either a string or an array of strings");
  }
  for (const std::string& alias : aliases) {
    if (alias == "number") {
      out->all_numbers = true;
      continue;
    }
    bool found = false;
    if (json_types) {
      for (const TypeAlias& a : kJsonTypeAliases) {
        if (alias == a.name) {
          out->types.set(static_cast<uint8_t>(a.type));
          found = true;
        }
      }
    } else {
      for (const TypeAlias& a : kBsonTypeAliases) {
        if (alias == a.name) {
          out->types.set(static_cast<uint8_t>(a.type));
          found = true;
        }
      }
    }
    if (!found) return BadValue("Unknown type name alias: " + alias);
  }
  if (out->Empty()) return FailedToParse(Kw(keyword) + " must name at least one type");
  return Status::OK();
}

// MongoDB's MatchExpressionParser::parseIntegerElementToNonNegativeLong.
Status ParseNonNegativeLong(std::string_view keyword, const bson_value_t& v, int64_t* out) {
  const std::string elem = std::string(keyword) + ": " + ValueToString(v);
  switch (v.value_type) {
    case BSON_TYPE_INT32:
      *out = v.value.v_int32;
      break;
    case BSON_TYPE_INT64:
      *out = v.value.v_int64;
      break;
    case BSON_TYPE_DOUBLE: {
      const double d = v.value.v_double;
      if (std::isnan(d)) return FailedToParse("Expected an integer, but found NaN in: " + elem);
      if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
        return FailedToParse("Cannot represent as a 64-bit integer: " + elem);
      }
      if (d != std::trunc(d)) return FailedToParse("Expected an integer: " + elem);
      *out = static_cast<int64_t>(d);
      break;
    }
    case BSON_TYPE_DECIMAL128: {
      ExactDecimal dec;
      ToExactDecimal(v, &dec);
      // Exactly integral and within int64.
      bool ok = dec.kind == ExactDecimal::Kind::kFinite;
      unsigned __int128 mag = dec.coefficient;
      int32_t exp = dec.exponent;
      while (ok && exp > 0) {
        if (mag > (static_cast<unsigned __int128>(1) << 64)) ok = false;
        mag *= 10;
        --exp;
      }
      while (ok && exp < 0) {
        if (mag % 10 != 0) ok = false;
        mag /= 10;
        ++exp;
      }
      const unsigned __int128 limit =
          static_cast<unsigned __int128>(INT64_MAX) + (dec.negative ? 1 : 0);
      if (!ok || mag > limit) return FailedToParse("Cannot represent as a 64-bit integer: " + elem);
      *out = dec.negative ? static_cast<int64_t>(0 - static_cast<uint64_t>(mag))
                          : static_cast<int64_t>(mag);
      break;
    }
    default:
      return FailedToParse("Expected a number in: " + elem);
  }
  if (*out < 0) return FailedToParse("Expected a positive number in: " + elem);
  return Status::OK();
}

class Parser {
 public:
  StatusOr<SubschemaPtr> Parse(const bson_value_t& schema, int depth);

 private:
  Status ParseScalarKeywords(const Spec* kw, Subschema* s);
  Status ParseArrayKeywords(const Spec* kw, Subschema* s, int depth);
  Status ParseObjectKeywords(const Spec* kw, Subschema* s, int depth);
  Status ParseLogicalKeywords(const Spec* kw, Subschema* s, int depth);
  Status ParseList(std::string_view keyword, const bson_value_t& v, int depth,
                   std::vector<SubschemaPtr>* out);
  Status ParseAdditional(std::string_view keyword, const bson_value_t& v, int depth,
                         Additional* kind, SubschemaPtr* schema);
};

StatusOr<SubschemaPtr> Parser::Parse(const bson_value_t& schema, int depth) {
  if (depth > kMaxSchemaDepth) {
    return BadValue("$jsonSchema is nested too deeply: the maximum depth of subschemas is " +
                    std::to_string(kMaxSchemaDepth));
  }
  Spec kw[kNumKeywords];
  ElemIter it(schema);
  while (it.Next()) {
    const std::string_view key = it.key();
    int found = -1;
    for (int i = 0; i < kNumKeywords; ++i) {
      if (key == kKeywordNames[i]) {
        found = i;
        break;
      }
    }
    if (found < 0) {
      for (const char* name : kUnsupportedKeywords) {
        if (key == name) {
          return FailedToParse(Kw(key) + " is not currently supported");
        }
      }
      return FailedToParse("Unknown $jsonSchema keyword: " + std::string(key));
    }
    if (kw[found].present) {
      return FailedToParse("Duplicate $jsonSchema keyword: " + std::string(key));
    }
    kw[found].present = true;
    kw[found].value = it.value();
  }

  auto s = std::make_unique<Subschema>();
  // Metadata.
  if (kw[kDescription].present) {
    if (kw[kDescription].value.value_type != BSON_TYPE_UTF8) {
      return TypeMismatch(Kw("description") + " must be of type string");
    }
    s->description = std::string(Str(kw[kDescription].value));
  }
  if (kw[kTitle].present) {
    if (kw[kTitle].value.value_type != BSON_TYPE_UTF8) {
      return TypeMismatch(Kw("title") + " must be of type string");
    }
    s->title = std::string(Str(kw[kTitle].value));
  }

  // Type.
  if (kw[kType].present && kw[kBsonType].present) {
    return FailedToParse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
  }
  if (kw[kType].present) {
    RETURN_IF_ERROR(ParseTypeSet("type", kw[kType].value, true, &s->types));
    s->type_keyword = "type";
    s->type_spec = kw[kType];
  } else if (kw[kBsonType].present) {
    RETURN_IF_ERROR(ParseTypeSet("bsonType", kw[kBsonType].value, false, &s->types));
    s->type_keyword = "bsonType";
    s->type_spec = kw[kBsonType];
  }

  // The rest in MongoDB's order, so that the first error reported is
  // MongoDB's.
  RETURN_IF_ERROR(ParseScalarKeywords(kw, s.get()));
  RETURN_IF_ERROR(ParseArrayKeywords(kw, s.get(), depth));
  RETURN_IF_ERROR(ParseObjectKeywords(kw, s.get(), depth));
  RETURN_IF_ERROR(ParseLogicalKeywords(kw, s.get(), depth));
  return s;
}

Status Parser::ParseScalarKeywords(const Spec* kw, Subschema* s) {
  if (kw[kPattern].present) {
    const bson_value_t& v = kw[kPattern].value;
    if (v.value_type != BSON_TYPE_UTF8) return TypeMismatch(Kw("pattern") + " must be a string");
    ASSIGN_OR_RETURN(s->pattern, regex::RegexMatcher::Compile(Str(v), ""));
    s->pattern_spec = kw[kPattern];
  }
  if (kw[kMaxLength].present) {
    RETURN_IF_ERROR(ParseNonNegativeLong("maxLength", kw[kMaxLength].value, &s->max_length));
    s->max_length_spec = kw[kMaxLength];
  }
  if (kw[kMinLength].present) {
    RETURN_IF_ERROR(ParseNonNegativeLong("minLength", kw[kMinLength].value, &s->min_length));
    s->min_length_spec = kw[kMinLength];
  }
  if (kw[kMultipleOf].present) {
    const bson_value_t& v = kw[kMultipleOf].value;
    if (!ToExactDecimal(v, &s->multiple_of)) {
      return TypeMismatch(Kw("multipleOf") + " must be a number");
    }
    if (IsZeroOrNegative(s->multiple_of)) {
      return FailedToParse(Kw("multipleOf") + " must have a positive value");
    }
    s->multiple_of_spec = kw[kMultipleOf];
  }
  if (kw[kMaximum].present) {
    if (kw[kExclusiveMaximum].present) {
      if (kw[kExclusiveMaximum].value.value_type != BSON_TYPE_BOOL) {
        return TypeMismatch(Kw("exclusiveMaximum") + " must be a boolean");
      }
      s->exclusive_maximum = kw[kExclusiveMaximum].value.value.v_bool;
      s->exclusive_maximum_spec = kw[kExclusiveMaximum];
    }
    if (!IsNumberType(kw[kMaximum].value.value_type)) {
      return TypeMismatch(Kw("maximum") + " must be a number");
    }
    s->maximum_spec = kw[kMaximum];
  } else if (kw[kExclusiveMaximum].present) {
    return FailedToParse(Kw("maximum") + " must be a present if exclusiveMaximum is present");
  }
  if (kw[kMinimum].present) {
    if (kw[kExclusiveMinimum].present) {
      if (kw[kExclusiveMinimum].value.value_type != BSON_TYPE_BOOL) {
        return TypeMismatch(Kw("exclusiveMinimum") + " must be a boolean");
      }
      s->exclusive_minimum = kw[kExclusiveMinimum].value.value.v_bool;
      s->exclusive_minimum_spec = kw[kExclusiveMinimum];
    }
    if (!IsNumberType(kw[kMinimum].value.value_type)) {
      return TypeMismatch(Kw("minimum") + " must be a number");
    }
    s->minimum_spec = kw[kMinimum];
  } else if (kw[kExclusiveMinimum].present) {
    return FailedToParse(Kw("minimum") + " must be a present if exclusiveMinimum is present");
  }
  return Status::OK();
}

Status Parser::ParseAdditional(std::string_view keyword, const bson_value_t& v, int depth,
                               Additional* kind, SubschemaPtr* schema) {
  if (v.value_type == BSON_TYPE_BOOL) {
    *kind = v.value.v_bool ? Additional::kTrue : Additional::kFalse;
    return Status::OK();
  }
  ASSIGN_OR_RETURN(*schema, Parse(v, depth + 1));
  *kind = Additional::kSchema;
  return Status::OK();
}

Status Parser::ParseArrayKeywords(const Spec* kw, Subschema* s, int depth) {
  if (kw[kMinItems].present) {
    RETURN_IF_ERROR(ParseNonNegativeLong("minItems", kw[kMinItems].value, &s->min_items));
    s->min_items_spec = kw[kMinItems];
  }
  if (kw[kMaxItems].present) {
    RETURN_IF_ERROR(ParseNonNegativeLong("maxItems", kw[kMaxItems].value, &s->max_items));
    s->max_items_spec = kw[kMaxItems];
  }
  if (kw[kUniqueItems].present) {
    if (kw[kUniqueItems].value.value_type != BSON_TYPE_BOOL) {
      return TypeMismatch(Kw("uniqueItems") + " must be a boolean");
    }
    s->unique_items = kw[kUniqueItems].value.value.v_bool;
    s->unique_items_spec = kw[kUniqueItems];
  }
  if (kw[kItems].present) {
    const bson_value_t& v = kw[kItems].value;
    if (IsArray(v)) {
      ElemIter it(v);
      while (it.Next()) {
        if (!IsDocument(it.value())) {
          return TypeMismatch(Kw("items") +
                              " requires that each element of the array is an object, but "
                              "found a " +
                              TypeName(it.value()));
        }
        ASSIGN_OR_RETURN(SubschemaPtr sub, Parse(it.value(), depth + 1));
        s->item_list.push_back(std::move(sub));
      }
      s->items_is_array = true;
    } else if (IsDocument(v)) {
      ASSIGN_OR_RETURN(s->items, Parse(v, depth + 1));
    } else {
      return TypeMismatch(Kw("items") + " must be an array or an object, not " + TypeName(v));
    }
    s->has_items = true;
  }
  if (kw[kAdditionalItems].present) {
    const bson_value_t& v = kw[kAdditionalItems].value;
    if (v.value_type != BSON_TYPE_BOOL && !IsDocument(v)) {
      return TypeMismatch(Kw("additionalItems") +
                          " must be either an object or a boolean, but got a " + TypeName(v));
    }
    Additional kind = Additional::kAbsent;
    SubschemaPtr schema;
    RETURN_IF_ERROR(ParseAdditional("additionalItems", v, depth, &kind, &schema));
    // Only meaningful after an array of item schemas, as in MongoDB.
    if (s->items_is_array) {
      s->additional_items = kind;
      s->additional_items_schema = std::move(schema);
    }
  }
  return Status::OK();
}

Status Parser::ParseObjectKeywords(const Spec* kw, Subschema* s, int depth) {
  if (kw[kRequired].present) {
    const bson_value_t& v = kw[kRequired].value;
    if (!IsArray(v)) {
      return TypeMismatch(Kw("required") + " must be an array, but found an element of type " +
                          TypeName(v));
    }
    ElemIter it(v);
    while (it.Next()) {
      if (it.value().value_type != BSON_TYPE_UTF8) {
        return TypeMismatch(Kw("required") +
                            " must be an array of strings, but found an element of type: " +
                            TypeName(it.value()));
      }
      s->required.emplace_back(Str(it.value()));
    }
    if (s->required.empty()) return FailedToParse(Kw("required") + " cannot be an empty array");
    std::sort(s->required.begin(), s->required.end());
    if (std::adjacent_find(s->required.begin(), s->required.end()) != s->required.end()) {
      return FailedToParse(Kw("required") + " array cannot contain duplicate values");
    }
    s->required_spec = kw[kRequired];
  }
  if (kw[kProperties].present) {
    const bson_value_t& v = kw[kProperties].value;
    if (!IsDocument(v)) return TypeMismatch(Kw("properties") + " must be an object");
    ElemIter it(v);
    while (it.Next()) {
      if (!IsDocument(it.value())) {
        return TypeMismatch("Nested schema for $jsonSchema property '" + std::string(it.key()) +
                            "' must be an object");
      }
      ASSIGN_OR_RETURN(SubschemaPtr sub, Parse(it.value(), depth + 1));
      s->property_names.emplace(it.key());
      s->properties.emplace_back(std::string(it.key()), std::move(sub));
    }
    s->has_properties = true;
  }
  if (kw[kPatternProperties].present) {
    const bson_value_t& v = kw[kPatternProperties].value;
    if (!IsDocument(v)) return TypeMismatch(Kw("patternProperties") + " must be an object");
    ElemIter it(v);
    while (it.Next()) {
      if (!IsDocument(it.value())) {
        return TypeMismatch(Kw("patternProperties") + " has property '" + std::string(it.key()) +
                            "' which is not an object");
      }
      Subschema::PatternProperty pp;
      ASSIGN_OR_RETURN(pp.schema, Parse(it.value(), depth + 1));
      pp.pattern = std::string(it.key());
      ASSIGN_OR_RETURN(pp.regex, regex::RegexMatcher::Compile(pp.pattern, ""));
      s->pattern_properties.push_back(std::move(pp));
    }
    s->has_pattern_properties = true;
  }
  if (kw[kAdditionalProperties].present) {
    const bson_value_t& v = kw[kAdditionalProperties].value;
    if (v.value_type != BSON_TYPE_BOOL && !IsDocument(v)) {
      return TypeMismatch(Kw("additionalProperties") + " must be an object or a boolean");
    }
    RETURN_IF_ERROR(ParseAdditional("additionalProperties", v, depth, &s->additional_properties,
                                    &s->additional_properties_schema));
  }
  if (kw[kMinProperties].present) {
    RETURN_IF_ERROR(
        ParseNonNegativeLong("minProperties", kw[kMinProperties].value, &s->min_properties));
    s->min_properties_spec = kw[kMinProperties];
  }
  if (kw[kMaxProperties].present) {
    RETURN_IF_ERROR(
        ParseNonNegativeLong("maxProperties", kw[kMaxProperties].value, &s->max_properties));
    s->max_properties_spec = kw[kMaxProperties];
  }
  if (kw[kDependencies].present) {
    const bson_value_t& v = kw[kDependencies].value;
    if (!IsDocument(v)) return TypeMismatch(Kw("dependencies") + " must be an object");
    ElemIter it(v);
    while (it.Next()) {
      const std::string name(it.key());
      const bson_value_t& dep = it.value();
      Subschema::Dependency d;
      d.property = name;
      if (IsDocument(dep)) {
        ASSIGN_OR_RETURN(d.schema, Parse(dep, depth + 1));
      } else if (IsArray(dep)) {
        ElemIter names(dep);
        std::set<std::string, std::less<>> seen;
        while (names.Next()) {
          if (names.value().value_type != BSON_TYPE_UTF8) {
            return TypeMismatch("array '" + name +
                                "' in $jsonSchema keyword 'dependencies' can only contain "
                                "strings, but found element of type: " +
                                TypeName(names.value()));
          }
          const std::string prop(Str(names.value()));
          if (!seen.insert(prop).second) {
            return FailedToParse("array '" + name +
                                 "' in $jsonSchema keyword 'dependencies' contains duplicate "
                                 "element: " +
                                 prop);
          }
          d.properties.push_back(prop);
        }
        if (d.properties.empty()) {
          return FailedToParse("property '" + name +
                               "' in $jsonSchema keyword 'dependencies' cannot be an empty array");
        }
      } else {
        return TypeMismatch("property '" + name +
                            "' in $jsonSchema keyword 'dependencies' must be either an object or "
                            "an array");
      }
      s->dependencies.push_back(std::move(d));
    }
  }
  return Status::OK();
}

Status Parser::ParseList(std::string_view keyword, const bson_value_t& v, int depth,
                         std::vector<SubschemaPtr>* out) {
  if (!IsArray(v)) return TypeMismatch(Kw(keyword) + " must be an array");
  ElemIter it(v);
  bool any = false;
  while (it.Next()) {
    any = true;
    if (!IsDocument(it.value())) {
      return TypeMismatch(Kw(keyword) +
                          " must be an array of objects, but found an element of type " +
                          TypeName(it.value()));
    }
    ASSIGN_OR_RETURN(SubschemaPtr sub, Parse(it.value(), depth + 1));
    out->push_back(std::move(sub));
  }
  if (!any) return BadValue(Kw(keyword) + " must be a non-empty array");
  return Status::OK();
}

Status Parser::ParseLogicalKeywords(const Spec* kw, Subschema* s, int depth) {
  if (kw[kAllOf].present) RETURN_IF_ERROR(ParseList("allOf", kw[kAllOf].value, depth, &s->all_of));
  if (kw[kAnyOf].present) RETURN_IF_ERROR(ParseList("anyOf", kw[kAnyOf].value, depth, &s->any_of));
  if (kw[kOneOf].present) RETURN_IF_ERROR(ParseList("oneOf", kw[kOneOf].value, depth, &s->one_of));
  if (kw[kNot].present) {
    const bson_value_t& v = kw[kNot].value;
    if (!IsDocument(v)) {
      return TypeMismatch(Kw("not") + " must be an object, but found an element of type " +
                          TypeName(v));
    }
    ASSIGN_OR_RETURN(s->not_schema, Parse(v, depth + 1));
  }
  if (kw[kEnum].present) {
    const bson_value_t& v = kw[kEnum].value;
    if (!IsArray(v)) {
      return TypeMismatch(Kw("enum") + " must be an array, but found an element of type " +
                          TypeName(v));
    }
    std::vector<BsonValue> raw;
    ElemIter it(v);
    while (it.Next()) raw.push_back(it.value());
    if (raw.empty()) return FailedToParse(Kw("enum") + " cannot be an empty array");
    if (FirstDuplicateIndex(raw) >= 0) {
      return FailedToParse(Kw("enum") + " array cannot contain duplicate values.");
    }
    s->enum_values.reserve(raw.size());
    for (const BsonValue& e : raw) {
      s->enum_values.emplace_back(e);
      if (IsDocument(e)) s->enum_has_object = true;
    }
    s->enum_spec = kw[kEnum];
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Evaluation and MongoDB's error details.

using Entries = std::vector<BsonPtr>;

void AppendAnnotations(bson_t* out, const Subschema& s) {
  if (s.title) AppendUtf8(out, "title", *s.title);
  if (s.description) AppendUtf8(out, "description", *s.description);
}

// specifiedAs: {keyword: value}.
void AppendSpecifiedAs(bson_t* out, std::string_view keyword, const Spec& spec) {
  bson_t child;
  bson_append_document_begin(out, "specifiedAs", -1, &child);
  AppendValue(&child, keyword, spec.value);
  bson_append_document_end(out, &child);
}

BsonPtr NewEntry(std::string_view operator_name) {
  BsonPtr e = NewBson();
  AppendUtf8(e.get(), "operatorName", operator_name);
  return e;
}

// {operatorName, specifiedAs: {keyword: spec}, reason, consideredValue}.
BsonPtr KeywordEntry(std::string_view keyword, const Spec& spec, std::string_view reason,
                     const bson_value_t& considered) {
  BsonPtr e = NewEntry(keyword);
  AppendSpecifiedAs(e.get(), keyword, spec);
  AppendUtf8(e.get(), "reason", reason);
  AppendValue(e.get(), "consideredValue", considered);
  return e;
}

bool IsNaNNumber(const bson_value_t& v) {
  ExactDecimal d;
  return ToExactDecimal(v, &d) && d.kind == ExactDecimal::Kind::kNaN;
}

// value <= bound (or <, >=, >), MongoDB's comparison: NaN equals only NaN.
bool BoundHolds(const bson_value_t& value, const bson_value_t& bound, bool is_max, bool exclusive) {
  const bool value_nan = IsNaNNumber(value), bound_nan = IsNaNNumber(bound);
  if (value_nan || bound_nan) return value_nan && bound_nan && !exclusive;
  const int c = CompareValues(value, bound);
  if (is_max) return exclusive ? c < 0 : c <= 0;
  return exclusive ? c > 0 : c >= 0;
}

class Evaluator {
 public:
  // Evaluates `s` against `value` (null: a missing required property);
  // `root` when the value is the document itself.  With `errors`, appends
  // MongoDB's error entries for the failing keywords, in MongoDB's order.
  bool Eval(const Subschema& s, const bson_value_t* value, bool root, Entries* errors) const;

 private:
  bool EvalString(const Subschema& s, const bson_value_t& v, Entries* errors) const;
  bool EvalNumber(const Subschema& s, const bson_value_t& v, Entries* errors) const;
  bool EvalArray(const Subschema& s, const bson_value_t& v, Entries* errors) const;
  bool EvalObject(const Subschema& s, const bson_value_t& v, bool root, Entries* errors) const;
  bool EvalLogic(const Subschema& s, const bson_value_t* v, bool root, Entries* errors) const;
  bool InEnum(const Subschema& s, const bson_value_t& v) const;
};

bool Evaluator::Eval(const Subschema& s, const bson_value_t* v, bool root, Entries* errors) const {
  if (root && s.RootAlwaysFalse()) {
    // A subschema applied to the document whose type excludes "object"
    // (MongoDB makes it $alwaysFalse).  Reported as a type mismatch.
    if (errors != nullptr && v != nullptr) {
      BsonPtr e = KeywordEntry(s.type_keyword, s.type_spec, "type did not match", *v);
      AppendUtf8(e.get(), "consideredType", BsonTypeName(v->value_type));
      errors->push_back(std::move(e));
    }
    return false;
  }
  bool ok = true;
  if (!root && v != nullptr) {
    const bson_type_t t = v->value_type;
    if (t == BSON_TYPE_UTF8) {
      ok = EvalString(s, *v, errors) && ok;
    } else if (IsNumberType(t)) {
      ok = EvalNumber(s, *v, errors) && ok;
    } else if (t == BSON_TYPE_ARRAY) {
      ok = EvalArray(s, *v, errors) && ok;
    }
    if (!ok && errors == nullptr) return false;
  }
  if (v != nullptr && (root || v->value_type == BSON_TYPE_DOCUMENT)) {
    ok = EvalObject(s, *v, root, errors) && ok;
    if (!ok && errors == nullptr) return false;
  }
  ok = EvalLogic(s, v, root, errors) && ok;
  if (!ok && errors == nullptr) return false;
  if (!root && s.type_keyword != nullptr) {
    if (v == nullptr) {
      ok = false;  // a missing required property: reported by 'required'
    } else if (!s.types.Matches(v->value_type)) {
      ok = false;
      if (errors != nullptr) {
        BsonPtr e = KeywordEntry(s.type_keyword, s.type_spec, "type did not match", *v);
        AppendUtf8(e.get(), "consideredType", BsonTypeName(v->value_type));
        errors->push_back(std::move(e));
      }
    }
  }
  return ok;
}

bool Evaluator::EvalString(const Subschema& s, const bson_value_t& v, Entries* errors) const {
  bool ok = true;
  const char* str = v.value.v_utf8.str;
  const size_t len = v.value.v_utf8.len;
  if (s.pattern && !query::ExprEvalScope::ValueOrRecord(s.pattern->Search(str, len))) {
    ok = false;
    if (errors == nullptr) return false;
    errors->push_back(
        KeywordEntry("pattern", s.pattern_spec, "regular expression did not match", v));
  }
  if (s.max_length_spec.present || s.min_length_spec.present) {
    const int64_t n = CountCodePoints(str, len);
    if (s.max_length_spec.present && n > s.max_length) {
      ok = false;
      if (errors == nullptr) return false;
      errors->push_back(KeywordEntry("maxLength", s.max_length_spec,
                                     "specified string length was not satisfied", v));
    }
    if (s.min_length_spec.present && n < s.min_length) {
      ok = false;
      if (errors == nullptr) return false;
      errors->push_back(KeywordEntry("minLength", s.min_length_spec,
                                     "specified string length was not satisfied", v));
    }
  }
  return ok;
}

bool Evaluator::EvalNumber(const Subschema& s, const bson_value_t& v, Entries* errors) const {
  bool ok = true;
  if (s.multiple_of_spec.present) {
    ExactDecimal d;
    if (!ToExactDecimal(v, &d) || !IsMultipleOf(d, s.multiple_of)) {
      ok = false;
      if (errors == nullptr) return false;
      errors->push_back(KeywordEntry("multipleOf", s.multiple_of_spec,
                                     "considered value is not a multiple of the specified value",
                                     v));
    }
  }
  const struct {
    const char* name;
    const Spec& spec;
    const char* exclusive_name;
    const Spec& exclusive_spec;
    bool exclusive;
    bool is_max;
  } bounds[] = {
      {"maximum", s.maximum_spec, "exclusiveMaximum", s.exclusive_maximum_spec,
       s.exclusive_maximum, true},
      {"minimum", s.minimum_spec, "exclusiveMinimum", s.exclusive_minimum_spec,
       s.exclusive_minimum, false},
  };
  for (const auto& b : bounds) {
    if (!b.spec.present || BoundHolds(v, b.spec.value, b.is_max, b.exclusive)) continue;
    ok = false;
    if (errors == nullptr) return false;
    BsonPtr e = NewEntry(b.name);
    bson_t spec;
    bson_append_document_begin(e.get(), "specifiedAs", -1, &spec);
    AppendValue(&spec, b.name, b.spec.value);
    if (b.exclusive_spec.present) AppendValue(&spec, b.exclusive_name, b.exclusive_spec.value);
    bson_append_document_end(e.get(), &spec);
    AppendUtf8(e.get(), "reason", "comparison failed");
    AppendValue(e.get(), "consideredValue", v);
    errors->push_back(std::move(e));
  }
  return ok;
}

bool Evaluator::EvalArray(const Subschema& s, const bson_value_t& v, Entries* errors) const {
  bool ok = true;
  std::vector<BsonValue> elems;
  {
    ElemIter it(v);
    while (it.Next()) elems.push_back(it.value());
  }
  const int64_t n = static_cast<int64_t>(elems.size());
  const struct {
    const char* name;
    const Spec& spec;
    bool failed;
  } lengths[] = {
      {"minItems", s.min_items_spec, s.min_items_spec.present && n < s.min_items},
      {"maxItems", s.max_items_spec, s.max_items_spec.present && n > s.max_items},
  };
  for (const auto& l : lengths) {
    if (!l.failed) continue;
    ok = false;
    if (errors == nullptr) return false;
    BsonPtr e = KeywordEntry(l.name, l.spec, "array did not match specified length", v);
    AppendInt32(e.get(), "numberOfItems", static_cast<int32_t>(n));
    errors->push_back(std::move(e));
  }
  if (s.unique_items) {
    const int64_t dup = FirstDuplicateIndex(elems);
    if (dup >= 0) {
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = KeywordEntry("uniqueItems", s.unique_items_spec, "found a duplicate item", v);
      AppendValue(e.get(), "duplicatedValue", elems[static_cast<size_t>(dup)]);
      errors->push_back(std::move(e));
    }
  }
  if (s.items) {
    for (size_t i = 0; i < elems.size(); ++i) {
      Entries sub;
      if (Eval(*s.items, &elems[i], false, errors ? &sub : nullptr)) continue;
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = NewEntry("items");
      AppendAnnotations(e.get(), *s.items);
      AppendUtf8(e.get(), "reason", "At least one item did not match the sub-schema");
      AppendInt32(e.get(), "itemIndex", static_cast<int32_t>(i));
      AppendDocumentArray(e.get(), "details", sub);
      errors->push_back(std::move(e));
      break;
    }
  } else if (s.items_is_array) {
    Entries failed;
    for (size_t i = 0; i < elems.size() && i < s.item_list.size(); ++i) {
      Entries sub;
      if (Eval(*s.item_list[i], &elems[i], false, errors ? &sub : nullptr)) continue;
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr f = NewBson();
      bson_append_int64(f.get(), "itemIndex", -1, static_cast<int64_t>(i));
      AppendDocumentArray(f.get(), "details", sub);
      failed.push_back(std::move(f));
    }
    if (!failed.empty()) {
      BsonPtr e = NewEntry("items");
      AppendDocumentArray(e.get(), "details", failed);
      errors->push_back(std::move(e));
    }
  }
  const size_t start = s.item_list.size();
  if (s.additional_items == Additional::kFalse && elems.size() > start) {
    ok = false;
    if (errors == nullptr) return false;
    BsonPtr e = NewEntry("additionalItems");
    bson_t spec;
    bson_append_document_begin(e.get(), "specifiedAs", -1, &spec);
    bson_append_bool(&spec, "additionalItems", -1, false);
    bson_append_document_end(e.get(), &spec);
    AppendUtf8(e.get(), "reason", "found additional items");
    AppendValueArray(e.get(), "additionalItems",
                     std::vector<BsonValue>(elems.begin() + static_cast<std::ptrdiff_t>(start),
                                            elems.end()));
    errors->push_back(std::move(e));
  } else if (s.additional_items == Additional::kSchema) {
    for (size_t i = start; i < elems.size(); ++i) {
      Entries sub;
      if (Eval(*s.additional_items_schema, &elems[i], false, errors ? &sub : nullptr)) continue;
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = NewEntry("additionalItems");
      AppendAnnotations(e.get(), *s.additional_items_schema);
      AppendUtf8(e.get(), "reason", "At least one additional item did not match the sub-schema");
      AppendInt32(e.get(), "itemIndex", static_cast<int32_t>(i));
      AppendDocumentArray(e.get(), "details", sub);
      errors->push_back(std::move(e));
      break;
    }
  }
  return ok;
}

bool Evaluator::EvalObject(const Subschema& s, const bson_value_t& obj, bool root,
                           Entries* errors) const {
  bool ok = true;
  if (s.has_properties) {
    Entries failed;
    for (const auto& [name, sub] : s.properties) {
      bson_value_t pv;
      const bool found = FindField(obj, name, &pv);
      if (!found && !s.IsRequired(name)) continue;
      Entries sub_errors;
      if (Eval(*sub, found ? &pv : nullptr, false, errors ? &sub_errors : nullptr)) continue;
      ok = false;
      if (errors == nullptr) return false;
      // A property that fails without details (a missing required one) is
      // left to 'required', as in MongoDB.
      if (sub_errors.empty()) continue;
      BsonPtr f = NewBson();
      AppendUtf8(f.get(), "propertyName", name);
      AppendAnnotations(f.get(), *sub);
      AppendDocumentArray(f.get(), "details", sub_errors);
      failed.push_back(std::move(f));
    }
    if (!failed.empty()) {
      BsonPtr e = NewEntry("properties");
      AppendDocumentArray(e.get(), "propertiesNotSatisfied", failed);
      errors->push_back(std::move(e));
    }
  }

  if (s.has_pattern_properties || s.additional_properties != Additional::kAbsent) {
    std::vector<std::string> additional;  // additionalProperties: false
    BsonPtr additional_error;             // additionalProperties: {schema}
    std::vector<BsonPtr> pattern_errors(s.pattern_properties.size());
    ElemIter it(obj);
    while (it.Next()) {
      const std::string_view key = it.key();
      const bson_value_t& value = it.value();
      bool check_additional = s.property_names.find(key) == s.property_names.end();
      for (size_t i = 0; i < s.pattern_properties.size(); ++i) {
        const Subschema::PatternProperty& pp = s.pattern_properties[i];
        if (!query::ExprEvalScope::ValueOrRecord(pp.regex->Search(key.data(), key.size()))) continue;
        check_additional = false;
        const bool want = errors != nullptr && !pattern_errors[i];
        Entries sub;
        if (Eval(*pp.schema, &value, false, want ? &sub : nullptr)) continue;
        ok = false;
        if (errors == nullptr) return false;
        if (!want) continue;
        BsonPtr f = NewBson();
        AppendUtf8(f.get(), "propertyName", key);
        AppendAnnotations(f.get(), *pp.schema);
        AppendUtf8(f.get(), "regexMatched", pp.pattern);
        AppendDocumentArray(f.get(), "details", sub);
        pattern_errors[i] = std::move(f);
      }
      if (!check_additional) continue;
      if (s.additional_properties == Additional::kFalse) {
        ok = false;
        if (errors == nullptr) return false;
        additional.emplace_back(key);
      } else if (s.additional_properties == Additional::kSchema) {
        const bool want = errors != nullptr && !additional_error;
        Entries sub;
        if (Eval(*s.additional_properties_schema, &value, false, want ? &sub : nullptr)) continue;
        ok = false;
        if (errors == nullptr) return false;
        if (!want) continue;
        additional_error = NewEntry("additionalProperties");
        AppendAnnotations(additional_error.get(), *s.additional_properties_schema);
        AppendUtf8(additional_error.get(), "reason",
                   "at least one additional property did not match the subschema");
        AppendUtf8(additional_error.get(), "failingProperty", key);
        AppendDocumentArray(additional_error.get(), "details", sub);
      }
    }
    if (errors != nullptr) {
      if (!additional.empty()) {
        BsonPtr e = NewEntry("additionalProperties");
        bson_t spec;
        bson_append_document_begin(e.get(), "specifiedAs", -1, &spec);
        bson_append_bool(&spec, "additionalProperties", -1, false);
        bson_append_document_end(e.get(), &spec);
        AppendStringArray(e.get(), "additionalProperties", additional);
        errors->push_back(std::move(e));
      }
      if (additional_error) errors->push_back(std::move(additional_error));
      Entries failed;
      for (BsonPtr& p : pattern_errors) {
        if (p) failed.push_back(std::move(p));
      }
      if (!failed.empty()) {
        BsonPtr e = NewEntry("patternProperties");
        AppendDocumentArray(e.get(), "details", failed);
        errors->push_back(std::move(e));
      }
    }
  }

  if (!s.required.empty()) {
    std::vector<std::string> missing;
    bson_value_t unused;
    for (const std::string& name : s.required) {
      if (!FindField(obj, name, &unused)) missing.push_back(name);
    }
    if (!missing.empty()) {
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = NewEntry("required");
      AppendSpecifiedAs(e.get(), "required", s.required_spec);
      AppendStringArray(e.get(), "missingProperties", missing);
      errors->push_back(std::move(e));
    }
  }

  if (s.min_properties_spec.present || s.max_properties_spec.present) {
    const int64_t n = CountElements(obj);
    const struct {
      const char* name;
      const Spec& spec;
      bool failed;
    } counts[] = {
        {"minProperties", s.min_properties_spec,
         s.min_properties_spec.present && n < s.min_properties},
        {"maxProperties", s.max_properties_spec,
         s.max_properties_spec.present && n > s.max_properties},
    };
    for (const auto& c : counts) {
      if (!c.failed) continue;
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = NewEntry(c.name);
      AppendSpecifiedAs(e.get(), c.name, c.spec);
      AppendUtf8(e.get(), "reason", "specified number of properties was not satisfied");
      AppendInt32(e.get(), "numberOfProperties", static_cast<int32_t>(n));
      errors->push_back(std::move(e));
    }
  }

  if (!s.dependencies.empty()) {
    Entries failed;
    bson_value_t unused;
    for (const Subschema::Dependency& d : s.dependencies) {
      if (!FindField(obj, d.property, &unused)) continue;
      if (d.schema) {
        Entries sub;
        if (Eval(*d.schema, &obj, root, errors ? &sub : nullptr)) continue;
        ok = false;
        if (errors == nullptr) return false;
        BsonPtr f = NewBson();
        AppendUtf8(f.get(), "conditionalProperty", d.property);
        AppendDocumentArray(f.get(), "details", sub);
        failed.push_back(std::move(f));
      } else {
        std::vector<std::string> missing;
        for (const std::string& p : d.properties) {
          if (!FindField(obj, p, &unused)) missing.push_back(p);
        }
        if (missing.empty()) continue;
        ok = false;
        if (errors == nullptr) return false;
        BsonPtr f = NewBson();
        AppendUtf8(f.get(), "conditionalProperty", d.property);
        AppendStringArray(f.get(), "missingProperties", missing);
        failed.push_back(std::move(f));
      }
    }
    if (!failed.empty()) {
      BsonPtr e = NewEntry("dependencies");
      AppendDocumentArray(e.get(), "failingDependencies", failed);
      errors->push_back(std::move(e));
    }
  }
  return ok;
}

bool Evaluator::InEnum(const Subschema& s, const bson_value_t& v) const {
  const bool deep = v.value_type == BSON_TYPE_DOCUMENT || v.value_type == BSON_TYPE_ARRAY;
  std::optional<CanonicalValue> canon;
  if (deep) canon.emplace(v);
  const bson_value_t& key = deep ? canon->value() : v;
  for (const CanonicalValue& e : s.enum_values) {
    if (CompareValues(key, e.value()) == 0) return true;
  }
  return false;
}

bool Evaluator::EvalLogic(const Subschema& s, const bson_value_t* v, bool root,
                          Entries* errors) const {
  bool ok = true;
  // {index, [title,] [description,] details: [...]}.
  auto index_entry = [](size_t i, const Subschema& sub, const Entries& details) {
    BsonPtr f = NewBson();
    AppendInt32(f.get(), "index", static_cast<int32_t>(i));
    AppendAnnotations(f.get(), sub);
    AppendDocumentArray(f.get(), "details", details);
    return f;
  };

  if (!s.all_of.empty()) {
    Entries failed;
    for (size_t i = 0; i < s.all_of.size(); ++i) {
      Entries sub;
      if (Eval(*s.all_of[i], v, root, errors ? &sub : nullptr)) continue;
      ok = false;
      if (errors == nullptr) return false;
      failed.push_back(index_entry(i, *s.all_of[i], sub));
    }
    if (!failed.empty()) {
      BsonPtr e = NewEntry("allOf");
      AppendDocumentArray(e.get(), "schemasNotSatisfied", failed);
      errors->push_back(std::move(e));
    }
  }

  if (!s.any_of.empty()) {
    bool any = false;
    for (const SubschemaPtr& sub : s.any_of) {
      if (Eval(*sub, v, root, nullptr)) {
        any = true;
        break;
      }
    }
    if (!any) {
      ok = false;
      if (errors == nullptr) return false;
      Entries failed;
      for (size_t i = 0; i < s.any_of.size(); ++i) {
        Entries sub;
        Eval(*s.any_of[i], v, root, &sub);
        failed.push_back(index_entry(i, *s.any_of[i], sub));
      }
      BsonPtr e = NewEntry("anyOf");
      AppendDocumentArray(e.get(), "schemasNotSatisfied", failed);
      errors->push_back(std::move(e));
    }
  }

  if (!s.one_of.empty()) {
    std::vector<int32_t> matching;
    for (size_t i = 0; i < s.one_of.size(); ++i) {
      if (Eval(*s.one_of[i], v, root, nullptr)) matching.push_back(static_cast<int32_t>(i));
      if (errors == nullptr && matching.size() > 1) return false;
    }
    if (matching.size() != 1) {
      ok = false;
      if (errors == nullptr) return false;
      BsonPtr e = NewEntry("oneOf");
      if (matching.empty()) {
        Entries failed;
        for (size_t i = 0; i < s.one_of.size(); ++i) {
          Entries sub;
          Eval(*s.one_of[i], v, root, &sub);
          failed.push_back(index_entry(i, *s.one_of[i], sub));
        }
        AppendDocumentArray(e.get(), "schemasNotSatisfied", failed);
      } else {
        AppendUtf8(e.get(), "reason", "more than one subschema matched");
        bson_t arr;
        bson_append_array_begin(e.get(), "matchingSchemaIndexes", -1, &arr);
        char buf[16];
        for (size_t i = 0; i < matching.size(); ++i) {
          const char* k = nullptr;
          size_t klen = bson_uint32_to_string(static_cast<uint32_t>(i), &k, buf, sizeof(buf));
          bson_append_int32(&arr, k, static_cast<int>(klen), matching[i]);
        }
        bson_append_array_end(e.get(), &arr);
      }
      errors->push_back(std::move(e));
    }
  }

  if (s.not_schema && Eval(*s.not_schema, v, root, nullptr)) {
    ok = false;
    if (errors == nullptr) return false;
    BsonPtr e = NewEntry("not");
    AppendUtf8(e.get(), "reason", "child expression matched");
    errors->push_back(std::move(e));
  }

  if (s.enum_spec.present) {
    if (root) {
      // The document is compared with the enum's objects; other values can
      // never equal a document.
      if (!s.enum_has_object) {
        ok = false;
        if (errors == nullptr) return false;
        BsonPtr e = NewEntry("enum");
        AppendSpecifiedAs(e.get(), "enum", s.enum_spec);
        AppendUtf8(e.get(), "reason", "expression always evaluates to false");
        errors->push_back(std::move(e));
      } else if (v != nullptr && !InEnum(s, *v)) {
        ok = false;
        if (errors == nullptr) return false;
        errors->push_back(KeywordEntry("enum", s.enum_spec, "value was not found in enum", *v));
      }
    } else if (v == nullptr) {
      ok = false;  // a missing required property: reported by 'required'
    } else if (!InEnum(s, *v)) {
      ok = false;
      if (errors == nullptr) return false;
      errors->push_back(KeywordEntry("enum", s.enum_spec, "value was not found in enum", *v));
    }
  }
  return ok;
}

}  // namespace

// ---------------------------------------------------------------------------
// JsonSchema.

JsonSchema::JsonSchema(std::unique_ptr<Subschema> root, const bson_value_t& spec)
    : root_(std::move(root)), spec_(spec) {}

JsonSchema::~JsonSchema() = default;

StatusOr<std::unique_ptr<JsonSchema>> JsonSchema::Parse(const bson_value_t& schema) {
  if (schema.value_type != BSON_TYPE_DOCUMENT) {
    return TypeMismatch("$jsonSchema must be an object");
  }
  Parser parser;
  ASSIGN_OR_RETURN(SubschemaPtr root, parser.Parse(schema, 1));
  return std::unique_ptr<JsonSchema>(new JsonSchema(std::move(root), schema));
}

bool JsonSchema::Matches(const bson_t* doc) const {
  if (root_->RootAlwaysFalse()) return false;
  const bson_value_t value = DocumentValue(doc);
  return Evaluator().Eval(*root_, &value, true, nullptr);
}

void JsonSchema::AppendError(const bson_t* doc, bson_t* out) const {
  AppendUtf8(out, "operatorName", "$jsonSchema");
  if (root_->RootAlwaysFalse()) {
    bson_t spec;
    bson_append_document_begin(out, "specifiedAs", -1, &spec);
    AppendValue(&spec, "$jsonSchema", spec_);
    bson_append_document_end(out, &spec);
    AppendUtf8(out, "reason", "expression always evaluates to false");
    return;
  }
  AppendAnnotations(out, *root_);
  const bson_value_t value = DocumentValue(doc);
  Entries errors;
  Evaluator().Eval(*root_, &value, true, &errors);
  AppendDocumentArray(out, "schemaRulesNotSatisfied", errors);
}

}  // namespace schema
}  // namespace gatedb
