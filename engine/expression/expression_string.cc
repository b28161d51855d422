// String operators: $concat $substr $substrBytes $substrCP $toLower $toUpper
// $split $trim $ltrim $rtrim $strLenBytes $strLenCP $strcasecmp $indexOfBytes
// $indexOfCP $replaceOne $replaceAll $regexMatch $regexFind $regexFindAll.
//
// Strings are UTF-8.  "CP" operators count code points; "Bytes" operators
// count bytes and refuse to cut a character in two.  Case mapping
// ($toLower, $toUpper, $strcasecmp) is ASCII-only, as in MongoDB.
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/document/bson_compare.h"
#include "engine/expression/expression_internal.h"
#include "engine/regex/regex_matcher.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

std::string T(const Value& v) { return TypeName(v); }

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Byte length of the UTF-8 sequence that starts with `lead` (1 for a stray
// byte, so that a malformed string still advances).
size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += IsContinuation(c) ? 0 : 1;
  return n;
}

// Byte offset of code point `cp` in s (s.size() when past the end).
size_t ByteOffsetOfCodePoint(std::string_view s, size_t cp) {
  size_t i = 0;
  while (cp > 0 && i < s.size()) {
    i += SequenceLength(static_cast<unsigned char>(s[i]));
    --cp;
  }
  return std::min(i, s.size());
}

Status TooLarge(const char* op) {
  return Status(ErrorCode::kBSONObjectTooLarge,
                std::string(op) + " would produce a string larger than " + std::to_string(kMaxValueBytes) + " bytes");
}

// ---------------------------------------------------------------------------
// $concat $toLower $toUpper $strLen* $strcasecmp

StatusOr<Value> Concat(const char* name, const Value* a, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (a[i].nullish()) return Value::Null();
    if (!a[i].is_string()) return Err(16702, "$concat only supports strings, not " + T(a[i]));
    total += a[i].str().size();
  }
  if (total > kMaxValueBytes) return TooLarge(name);
  std::string out;
  out.reserve(total);
  for (size_t i = 0; i < n; ++i) out.append(a[i].str());
  return Value::String(std::move(out));
}

StatusOr<Value> ToLower(const char* name, const Value* a, size_t) {
  ASSIGN_OR_RETURN(std::string s, CoerceToString(a[0], name));
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return Value::String(std::move(s));
}

StatusOr<Value> ToUpper(const char* name, const Value* a, size_t) {
  ASSIGN_OR_RETURN(std::string s, CoerceToString(a[0], name));
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return Value::String(std::move(s));
}

StatusOr<Value> StrLenBytes(const char*, const Value* a, size_t) {
  if (!a[0].is_string()) return Err(34473, "$strLenBytes requires a string argument, found: " + T(a[0]));
  return IntegerValue(static_cast<int64_t>(a[0].str().size()));
}

StatusOr<Value> StrLenCP(const char*, const Value* a, size_t) {
  if (!a[0].is_string()) return Err(34471, "$strLenCP requires a string argument, found: " + T(a[0]));
  return IntegerValue(static_cast<int64_t>(CountCodePoints(a[0].str())));
}

StatusOr<Value> StrCaseCmp(const char* name, const Value* a, size_t) {
  ASSIGN_OR_RETURN(std::string x, CoerceToString(a[0], name));
  ASSIGN_OR_RETURN(std::string y, CoerceToString(a[1], name));
  for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const int c = x.compare(y);
  return Value::Int32(c < 0 ? -1 : (c > 0 ? 1 : 0));
}

// ---------------------------------------------------------------------------
// $substrBytes ($substr) and $substrCP

// MongoDB's coerceToLong for $substrBytes' indexes: doubles truncate toward
// zero, decimals round half to even.  Errors: Location31109 out of range.
StatusOr<int64_t> CoerceIndex(const Value& v) {
  switch (v.type()) {
    case BSON_TYPE_INT32: return int64_t{v.int32()};
    case BSON_TYPE_INT64: return v.int64();
    default: {
      long double d = NumberAsLongDouble(v.bson());
      d = v.type() == BSON_TYPE_DOUBLE ? std::trunc(d) : std::nearbyint(d);
      if (!std::isfinite(d) || d < -9223372036854775808.0L || d >= 9223372036854775808.0L) {
        return Err(31109, "Can't coerce out of range value " + v.ToString() + " to long");
      }
      return static_cast<int64_t>(d);
    }
  }
}

StatusOr<Value> SubstrBytes(const char* name, const Value* a, size_t) {
  ASSIGN_OR_RETURN(std::string s, CoerceToString(a[0], name));
  const std::string op = name;
  if (!a[1].is_number()) {
    return Err(16034, op + ": starting index must be a numeric type (is BSON type " + T(a[1]) + ")");
  }
  if (!a[2].is_number()) {
    return Err(16035, op + ": length must be a numeric type (is BSON type " + T(a[2]) + ")");
  }
  ASSIGN_OR_RETURN(int64_t start, CoerceIndex(a[1]));
  ASSIGN_OR_RETURN(int64_t length, CoerceIndex(a[2]));
  if (start < 0) {
    return Err(50752, op + ": starting index must be non-negative (got: " + std::to_string(start) + ")");
  }
  const size_t lower = static_cast<size_t>(start);
  if (lower >= s.size()) return Value::String(std::string());
  size_t len = s.size() - lower;
  if (length >= 0 && static_cast<uint64_t>(length) < len) len = static_cast<size_t>(length);
  if (IsContinuation(static_cast<unsigned char>(s[lower]))) {
    return Err(28656, op + ":  Invalid range, starting index is a UTF-8 continuation byte.");
  }
  if (lower + len < s.size() && IsContinuation(static_cast<unsigned char>(s[lower + len]))) {
    return Err(28657, op + ":  Invalid range, ending index is in the middle of a UTF-8 character.");
  }
  return Value::String(s.substr(lower, len));
}

StatusOr<Value> SubstrCP(const char* name, const Value* a, size_t) {
  ASSIGN_OR_RETURN(std::string s, CoerceToString(a[0], name));
  if (!a[1].is_number()) {
    return Err(34450, "$substrCP: starting index must be a numeric type (is BSON type " + T(a[1]) + ")");
  }
  int32_t start = 0, length = 0;
  if (!ToInt32Exact(a[1], &start)) {
    return Err(34451, "$substrCP: starting index cannot be represented as a 32-bit integral value");
  }
  if (!a[2].is_number()) {
    return Err(34452, "$substrCP: length must be a numeric type (is BSON type " + T(a[2]) + ")");
  }
  if (!ToInt32Exact(a[2], &length)) {
    return Err(34453, "$substrCP: length cannot be represented as a 32-bit integral value");
  }
  if (length < 0) return Err(34454, "$substrCP: length must be a nonnegative integer.");
  if (start < 0) return Err(34455, "$substrCP: the starting index must be nonnegative integer.");
  const size_t begin = ByteOffsetOfCodePoint(s, static_cast<size_t>(start));
  const size_t end = begin + ByteOffsetOfCodePoint(std::string_view(s).substr(begin), static_cast<size_t>(length));
  return Value::String(s.substr(begin, end - begin));
}

// ---------------------------------------------------------------------------
// $split

StatusOr<Value> Split(const char*, const Value* a, size_t) {
  if (a[0].nullish() || a[1].nullish()) return Value::Null();
  if (!a[0].is_string()) {
    return Err(40085, "$split requires an expression that evaluates to a string as a first argument, found: " +
                          T(a[0]));
  }
  if (!a[1].is_string()) {
    return Err(40086, "$split requires an expression that evaluates to a string as a second argument, found: " +
                          T(a[1]));
  }
  const std::string_view s = a[0].str();
  const std::string_view sep = a[1].str();
  if (sep.empty()) return Err(40087, "$split requires a non-empty separator");
  ValueBuilder b(ValueBuilder::kArray);
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      b.Append(Value::String(s.substr(start)));
      break;
    }
    b.Append(Value::String(s.substr(start, at - start)));
    start = at + sep.size();
  }
  return b.Finish();
}

// ---------------------------------------------------------------------------
// $indexOfBytes / $indexOfCP

// MongoDB's check of their optional start and end: an int32-representable
// number, not negative.
Status CheckIndexArg(const char* op, const char* which, const Value& v, int32_t* out) {
  if (!ToInt32Exact(v, out)) {
    return Err(40096, std::string(op) + " requires an integral " + which + ", found a value of type: " + T(v) +
                          ", with value: " + v.ToString());
  }
  if (*out < 0) {
    return Err(40097, std::string(op) + " requires a nonnegative " + which + ", found: " + std::to_string(*out));
  }
  return Status::OK();
}

StatusOr<Value> IndexOf(const char* name, const Value* a, size_t n, bool code_points) {
  if (a[0].nullish()) return Value::Null();
  if (!a[0].is_string()) {
    return Err(code_points ? 40093 : 40091,
               std::string(name) + " requires a string as the first argument, found: " + T(a[0]));
  }
  if (!a[1].is_string()) {
    return Err(code_points ? 40094 : 40092,
               std::string(name) + " requires a string as the second argument, found: " + T(a[1]));
  }
  const std::string_view s = a[0].str();
  const std::string_view token = a[1].str();
  int32_t start = 0;
  if (n > 2) RETURN_IF_ERROR(CheckIndexArg(name, "starting index", a[2], &start));
  const size_t length = code_points ? CountCodePoints(s) : s.size();
  int64_t end = static_cast<int64_t>(length);
  if (n > 3) {
    int32_t e = 0;
    RETURN_IF_ERROR(CheckIndexArg(name, "ending index", a[3], &e));
    end = std::min<int64_t>(e, end);
  }
  if (static_cast<size_t>(start) > length || start > end) return Value::Int32(-1);
  if (!code_points) {
    const size_t at = s.substr(0, static_cast<size_t>(end)).find(token, static_cast<size_t>(start));
    return Value::Int32(at == std::string_view::npos ? -1 : static_cast<int32_t>(at));
  }
  // Code points: the byte offset of each, then the end.
  std::vector<size_t> offsets;
  for (size_t i = 0; i < s.size(); i += SequenceLength(static_cast<unsigned char>(s[i]))) offsets.push_back(i);
  offsets.push_back(s.size());
  end = std::min<int64_t>(end, static_cast<int64_t>(offsets.size()) - 1);
  if (start > end) return Value::Int32(-1);
  if (token.empty()) return Value::Int32(start);
  const int64_t token_cps = static_cast<int64_t>(CountCodePoints(token));
  for (int64_t cp = start; cp + token_cps <= end; ++cp) {
    if (s.compare(offsets[static_cast<size_t>(cp)], token.size(), token) == 0) {
      return Value::Int32(static_cast<int32_t>(cp));
    }
  }
  return Value::Int32(-1);
}

StatusOr<Value> IndexOfBytes(const char* name, const Value* a, size_t n) { return IndexOf(name, a, n, false); }
StatusOr<Value> IndexOfCP(const char* name, const Value* a, size_t n) { return IndexOf(name, a, n, true); }

// ---------------------------------------------------------------------------
// $trim $ltrim $rtrim

// The code points $trim removes by default: MongoDB's list of white space.
bool IsDefaultTrimCodePoint(uint32_t cp) {
  switch (cp) {
    case 0x0000: case 0x0020: case 0x0009: case 0x000A: case 0x000B: case 0x000C: case 0x000D:
    case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

// Splits s into its code points (as byte ranges).
std::vector<std::string_view> CodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const size_t len = std::min(SequenceLength(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

uint32_t DecodeCodePoint(std::string_view cp) {
  const unsigned char c0 = static_cast<unsigned char>(cp[0]);
  if (cp.size() == 1) return c0;
  uint32_t v = c0 & (0xFF >> (cp.size() + 1));
  for (size_t i = 1; i < cp.size(); ++i) v = (v << 6) | (static_cast<unsigned char>(cp[i]) & 0x3F);
  return v;
}

class TrimExpression final : public Expression {
 public:
  TrimExpression(const char* name, bool left, bool right, ExprPtr input, ExprPtr chars)
      : name_(name), left_(left), right_(right), input_(std::move(input)), chars_(std::move(chars)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    if (input.nullish()) return Value::Null();
    if (!input.is_string()) {
      return Err(50699, std::string(name_) + " requires its input to be a string, got " + input.ToString() +
                            " (of type " + T(input) + ") instead.");
    }
    std::vector<std::string_view> set;
    bool use_default = true;
    if (chars_ != nullptr) {
      ASSIGN_OR_RETURN(Value chars, chars_->Evaluate(ctx));
      if (chars.nullish()) return Value::Null();
      if (!chars.is_string()) {
        return Err(50700, std::string(name_) + " requires 'chars' to be a string, got " + chars.ToString() +
                              " (of type " + T(chars) + ") instead.");
      }
      set = CodePoints(chars.str());
      use_default = false;
    }
    auto trimmed = [&](std::string_view cp) {
      if (use_default) return IsDefaultTrimCodePoint(DecodeCodePoint(cp));
      for (std::string_view c : set) {
        if (c == cp) return true;
      }
      return false;
    };
    const std::vector<std::string_view> cps = CodePoints(input.str());
    size_t b = 0, e = cps.size();
    if (left_) {
      while (b < e && trimmed(cps[b])) ++b;
    }
    if (right_) {
      while (e > b && trimmed(cps[e - 1])) --e;
    }
    if (b == e) return Value::String(std::string());
    const char* begin = cps[b].data();
    const char* end = cps[e - 1].data() + cps[e - 1].size();
    return Value::String(std::string(begin, end));
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("input", input_.get());
    s.Add("chars", chars_.get());
  }

 private:
  const char* name_;
  bool left_, right_;
  ExprPtr input_, chars_;
};

StatusOr<ExprPtr> ParseTrim(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(50696, op + " only supports an object as an argument, found: " + BsonTypeNameOf(spec));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "chars"}, 50694, op + " found an unknown argument: "));
  if (!args.Has("input")) return Err(50695, op + " requires an 'input' field");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr chars, args.Parse("chars", pc));
  const bool left = op != "$rtrim", right = op != "$ltrim";
  return ExprPtr(new TrimExpression(name, left, right, std::move(input), std::move(chars)));
}

// ---------------------------------------------------------------------------
// $replaceOne / $replaceAll

class ReplaceExpression final : public Expression {
 public:
  ReplaceExpression(const char* name, bool all, ExprPtr input, ExprPtr find, ExprPtr replacement)
      : name_(name), all_(all), input_(std::move(input)), find_(std::move(find)), replacement_(std::move(replacement)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value find, find_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value repl, replacement_->Evaluate(ctx));
    const std::string op = name_;
    if (!input.is_string() && !input.nullish()) {
      return Err(51746, op + " requires that 'input' be a string, found: " + input.ToString());
    }
    if (!find.is_string() && !find.nullish()) {
      return Err(51745, op + " requires that 'find' be a string, found: " + find.ToString());
    }
    if (!repl.is_string() && !repl.nullish()) {
      return Err(51744, op + " requires that 'replacement' be a string, found: " + repl.ToString());
    }
    if (input.nullish() || find.nullish() || repl.nullish()) return Value::Null();
    const std::string_view s = input.str(), f = find.str(), r = repl.str();
    std::string out;
    if (!all_) {
      const size_t at = s.find(f);
      if (at == std::string_view::npos) return input;
      out.append(s.substr(0, at)).append(r).append(s.substr(at + f.size()));
      return Value::String(std::move(out));
    }
    if (f.empty()) {
      // An empty 'find' matches before every code point and at the end.
      for (std::string_view cp : CodePoints(s)) {
        out.append(r).append(cp);
        if (out.size() > kMaxValueBytes) return TooLarge(name_);
      }
      out.append(r);
      return Value::String(std::move(out));
    }
    size_t start = 0;
    while (true) {
      const size_t at = s.find(f, start);
      if (at == std::string_view::npos) break;
      out.append(s.substr(start, at - start)).append(r);
      if (out.size() > kMaxValueBytes) return TooLarge(name_);
      start = at + f.size();
    }
    out.append(s.substr(start));
    return Value::String(std::move(out));
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("input", input_.get());
    s.Add("find", find_.get());
    s.Add("replacement", replacement_.get());
  }

 private:
  const char* name_;
  bool all_;
  ExprPtr input_, find_, replacement_;
};

StatusOr<ExprPtr> ParseReplace(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(51751, op + " requires an object as an argument, found: " + BsonTypeNameOf(spec));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "find", "replacement"}, 51750,
                                                   op + " found an unknown argument: "));
  if (!args.Has("input")) return Err(51749, op + " requires 'input' to be specified");
  if (!args.Has("find")) return Err(51748, op + " requires 'find' to be specified");
  if (!args.Has("replacement")) return Err(51747, op + " requires 'replacement' to be specified");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr find, args.Parse("find", pc));
  ASSIGN_OR_RETURN(ExprPtr repl, args.Parse("replacement", pc));
  return ExprPtr(new ReplaceExpression(name, op == "$replaceAll", std::move(input), std::move(find), std::move(repl)));
}

// ---------------------------------------------------------------------------
// $regexMatch $regexFind $regexFindAll

enum class RegexOp { kMatch, kFind, kFindAll };

// Compiles the regex of a $regex* operator from its evaluated `regex` and
// `options`.  *null_result is set when either is null (the operator then
// answers false / null / []).
StatusOr<std::unique_ptr<regex::RegexMatcher>> CompileRegexArg(const std::string& op, const Value& re,
                                                               const Value& options, bool* null_result) {
  *null_result = false;
  if (re.nullish()) {
    *null_result = true;
    return std::unique_ptr<regex::RegexMatcher>();
  }
  std::string pattern, flags;
  if (re.is_string()) {
    pattern = std::string(re.str());
  } else if (re.type() == BSON_TYPE_REGEX) {
    pattern = re.bson().value.v_regex.regex;
    flags = re.bson().value.v_regex.options ? re.bson().value.v_regex.options : "";
  } else {
    return Err(51105, op + " needs 'regex' to be of type string or regex");
  }
  if (!options.nullish()) {
    if (!options.is_string()) return Err(51106, op + " needs 'options' to be of type string");
    if (!flags.empty() && !options.str().empty()) {
      return Err(51107, op + ": found regex option(s) specified in both 'regex' and 'option' fields");
    }
    if (options.str().find('\0') != std::string_view::npos) {
      return Err(51110, op + ": regular expression options cannot contain an embedded null byte");
    }
    if (flags.empty()) flags = std::string(options.str());
  }
  if (pattern.find('\0') != std::string::npos) {
    return Err(51109, op + ": regular expression cannot contain an embedded null byte");
  }
  StatusOr<std::unique_ptr<regex::RegexMatcher>> m = regex::RegexMatcher::Compile(pattern, flags);
  if (!m.ok()) {
    if (m.status().code() == ErrorCode::kLocation51108) {
      return Err(51108, op + " invalid flag in regex options: " + m.status().reason().substr(m.status().reason().size() - 1));
    }
    return Err(51111, "Invalid Regex in " + op + ": " + m.status().reason());
  }
  return m;
}

class RegexExpression final : public Expression {
 public:
  RegexExpression(const char* name, RegexOp kind, ExprPtr input, ExprPtr re, ExprPtr options,
                  std::unique_ptr<regex::RegexMatcher> precompiled, bool constant_null)
      : name_(name),
        kind_(kind),
        input_(std::move(input)),
        re_(std::move(re)),
        options_(std::move(options)),
        precompiled_(std::move(precompiled)),
        constant_null_(constant_null) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value input, input_->Evaluate(ctx));
    const regex::RegexMatcher* m = precompiled_.get();
    std::unique_ptr<regex::RegexMatcher> compiled;
    bool null_regex = constant_null_;
    if (m == nullptr && !null_regex) {
      ASSIGN_OR_RETURN(Value re, re_->Evaluate(ctx));
      Value options;
      if (options_ != nullptr) {
        ASSIGN_OR_RETURN(options, options_->Evaluate(ctx));
      }
      ASSIGN_OR_RETURN(compiled, CompileRegexArg(name_, re, options, &null_regex));
      m = compiled.get();
    }
    if (!input.nullish() && !input.is_string()) {
      return Err(51104, std::string(name_) + " needs 'input' to be of type string");
    }
    if (input.nullish() || null_regex) return NullAnswer();
    const std::string_view s = input.str();
    regex::RegexMatcher::Match match;
    if (kind_ == RegexOp::kMatch) {
      ASSIGN_OR_RETURN(bool found, FindAt(*m, s, 0, &match));
      return Value::Bool(found);
    }
    if (kind_ == RegexOp::kFind) {
      ASSIGN_OR_RETURN(bool found, FindAt(*m, s, 0, &match));
      if (!found) return Value::Null();
      return MatchDocument(s, match);
    }
    ValueBuilder all(ValueBuilder::kArray);
    size_t pos = 0;
    while (pos <= s.size()) {
      ASSIGN_OR_RETURN(bool found, FindAt(*m, s, pos, &match));
      if (!found) break;
      ASSIGN_OR_RETURN(Value doc, MatchDocument(s, match));
      all.Append(doc);
      if (match.length == 0) {
        // An empty match: step over one character.
        if (match.offset >= s.size()) break;
        pos = match.offset + SequenceLength(static_cast<unsigned char>(s[match.offset]));
      } else {
        pos = match.offset + match.length;
      }
    }
    return all.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("input", input_.get());
    s.Add("regex", re_.get());
    s.Add("options", options_.get());
  }

 private:
  Value NullAnswer() const {
    switch (kind_) {
      case RegexOp::kMatch: return Value::Bool(false);
      case RegexOp::kFind: return Value::Null();
      case RegexOp::kFindAll: break;
    }
    ValueBuilder empty(ValueBuilder::kArray);
    StatusOr<Value> v = empty.Finish();
    return v.ok() ? *v : Value::Null();
  }

  // PCRE2 runs in UTF mode, so matches and captures are whole characters,
  // except where a pattern uses \C (one byte); such a match or capture is
  // widened to whole characters, so that results are always valid strings.
  static void WidenToCharacters(std::string_view s, size_t* offset, size_t* length) {
    size_t begin = *offset, end = *offset + *length;
    while (begin > 0 && IsContinuation(static_cast<unsigned char>(s[begin]))) --begin;
    while (end < s.size() && IsContinuation(static_cast<unsigned char>(s[end]))) ++end;
    *offset = begin;
    *length = end - begin;
  }

  // A limit reached is MongoDB's 51156.
  StatusOr<bool> FindAt(const regex::RegexMatcher& m, std::string_view s, size_t pos,
                        regex::RegexMatcher::Match* match) const {
    StatusOr<bool> r = m.Find(s.data(), s.size(), pos, match);
    if (r.ok() && *r) {
      WidenToCharacters(s, &match->offset, &match->length);
      for (auto& [off, len] : match->groups) {
        if (off < 0) continue;
        size_t o = static_cast<size_t>(off);
        WidenToCharacters(s, &o, &len);
        off = static_cast<std::ptrdiff_t>(o);
      }
    }
    if (r.ok()) return r;
    return Err(51156, "Error occurred while executing the regular expression in " + std::string(name_) + ". " +
                          r.status().reason().substr(r.status().reason().find("Result code")));
  }

  // {match: "...", idx: <code point index>, captures: [...]}
  StatusOr<Value> MatchDocument(std::string_view s, const regex::RegexMatcher::Match& match) const {
    ValueBuilder b(ValueBuilder::kDocument);
    b.Append("match", Value::String(s.substr(match.offset, match.length)));
    b.Append("idx", IntegerValue(static_cast<int64_t>(CountCodePoints(s.substr(0, match.offset)))));
    ValueBuilder captures(ValueBuilder::kArray);
    for (const auto& [off, len] : match.groups) {
      captures.Append(off < 0 ? Value::Null() : Value::String(s.substr(static_cast<size_t>(off), len)));
    }
    ASSIGN_OR_RETURN(Value caps, captures.Finish());
    b.Append("captures", caps);
    return b.Finish();
  }

  const char* name_;
  RegexOp kind_;
  ExprPtr input_, re_, options_;
  std::unique_ptr<regex::RegexMatcher> precompiled_;  // when regex and options are constants
  bool constant_null_;                                 // constant null regex
};

StatusOr<ExprPtr> ParseRegex(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(51103, op + " expects an object of named arguments but found: " + BsonTypeNameOf(spec));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"input", "regex", "options"}, 31024,
                                                   op + " found an unknown argument: "));
  if (!args.Has("input")) return Err(31022, op + " requires 'input' parameter");
  if (!args.Has("regex")) return Err(31023, op + " requires 'regex' parameter");
  ASSIGN_OR_RETURN(ExprPtr input, args.Parse("input", pc));
  ASSIGN_OR_RETURN(ExprPtr re, args.Parse("regex", pc));
  ASSIGN_OR_RETURN(ExprPtr options, args.Parse("options", pc));
  const RegexOp kind = op == "$regexMatch" ? RegexOp::kMatch : (op == "$regexFind" ? RegexOp::kFind : RegexOp::kFindAll);
  // A constant regex is compiled (and validated) once, here.
  std::unique_ptr<regex::RegexMatcher> precompiled;
  bool constant_null = false;
  if (re->constant() != nullptr && (options == nullptr || options->constant() != nullptr)) {
    const Value opts = options == nullptr ? Value() : *options->constant();
    ASSIGN_OR_RETURN(precompiled, CompileRegexArg(op, *re->constant(), opts, &constant_null));
  }
  return ExprPtr(new RegexExpression(name, kind, std::move(input), std::move(re), std::move(options),
                                     std::move(precompiled), constant_null));
}

}  // namespace

void AddStringOperators(std::vector<OperatorDef>* ops) {
  ops->push_back(OperatorDef{"$concat", Concat, 0, -1, nullptr});
  ops->push_back(OperatorDef{"$substr", SubstrBytes, 3, 3, nullptr});
  ops->push_back(OperatorDef{"$substrBytes", SubstrBytes, 3, 3, nullptr});
  ops->push_back(OperatorDef{"$substrCP", SubstrCP, 3, 3, nullptr});
  ops->push_back(OperatorDef{"$toLower", ToLower, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$toUpper", ToUpper, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$strLenBytes", StrLenBytes, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$strLenCP", StrLenCP, 1, 1, nullptr});
  ops->push_back(OperatorDef{"$strcasecmp", StrCaseCmp, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$split", Split, 2, 2, nullptr});
  ops->push_back(OperatorDef{"$indexOfBytes", IndexOfBytes, 2, 4, nullptr});
  ops->push_back(OperatorDef{"$indexOfCP", IndexOfCP, 2, 4, nullptr});
  ops->push_back(OperatorDef{"$trim", nullptr, 0, 0, ParseTrim});
  ops->push_back(OperatorDef{"$ltrim", nullptr, 0, 0, ParseTrim});
  ops->push_back(OperatorDef{"$rtrim", nullptr, 0, 0, ParseTrim});
  ops->push_back(OperatorDef{"$replaceOne", nullptr, 0, 0, ParseReplace});
  ops->push_back(OperatorDef{"$replaceAll", nullptr, 0, 0, ParseReplace});
  ops->push_back(OperatorDef{"$regexMatch", nullptr, 0, 0, ParseRegex});
  ops->push_back(OperatorDef{"$regexFind", nullptr, 0, 0, ParseRegex});
  ops->push_back(OperatorDef{"$regexFindAll", nullptr, 0, 0, ParseRegex});
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
