#include "bench/micro/baseline/std_regex_matcher.h"

#include <cstring>
#include <exception>

namespace gatedb {
namespace regex_baseline {

namespace {

constexpr size_t kMaxPatternLength = 32764;         // MongoDB's limit
constexpr int kMaxParenDepth = 250;                 // PCRE2's default nesting limit
constexpr size_t kMaxBacktrackingSubject = 1024;  // ~400 bytes of stack per byte

struct RegexFlags {
  bool i = false;
  bool m = false;
  bool s = false;
  bool x = false;
};

Status InvalidRegex(const std::string& why) {
  return Status(ErrorCode::kLocation51091, "Regular expression is invalid: " + why);
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(const char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

// Sets the flags of a leading "(?imsx)" and returns the rest of the pattern.
std::string_view StripLeadingInlineFlags(std::string_view p, RegexFlags* f) {
  if (p.size() < 4 || p[0] != '(' || p[1] != '?') return p;
  size_t j = 2;
  RegexFlags g = *f;
  for (; j < p.size() && p[j] != ')'; ++j) {
    switch (p[j]) {
      case 'i': g.i = true; break;
      case 'm': g.m = true; break;
      case 's': g.s = true; break;
      case 'x': g.x = true; break;
      default: return p;
    }
  }
  if (j == 2 || j >= p.size()) return p;
  *f = g;
  return p.substr(j + 1);
}

// True when `p` (after `x` stripping) is a plain string, optionally anchored
// by a leading '^'; *lit receives the string.
bool AnalyzeLiteral(std::string_view p, bool extended, std::string* lit, bool* anchored) {
  lit->clear();
  *anchored = false;
  size_t i = 0;
  if (!p.empty() && p[0] == '^') {
    *anchored = true;
    i = 1;
  }
  for (; i < p.size(); ++i) {
    char c = p[i];
    if (extended && IsSpace(c)) continue;
    if (extended && c == '#') return false;
    if (c == '\\') {
      if (i + 1 >= p.size() || IsAlnum(p[i + 1])) return false;
      lit->push_back(p[++i]);
      continue;
    }
    if (c == '\0' || std::strchr("^$.|?*+()[]{}", c) != nullptr) return false;
    lit->push_back(c);
  }
  return true;
}

// True when p[i] == '{' starts a quantifier {n}, {n,} or {n,m}; *end is the
// index of its '}'.
bool QuantifierAt(std::string_view p, size_t i, size_t* end) {
  size_t j = i + 1;
  size_t digits = 0;
  while (j < p.size() && IsDigit(p[j])) {
    ++j;
    ++digits;
  }
  if (digits == 0 || j >= p.size()) return false;
  if (p[j] == '}') {
    *end = j;
    return true;
  }
  if (p[j] != ',') return false;
  ++j;
  while (j < p.size() && IsDigit(p[j])) ++j;
  if (j < p.size() && p[j] == '}') {
    *end = j;
    return true;
  }
  return false;
}

// Handles PCRE's \x{hh}; copies \xhh.  `i` is at the 'x'.
Status TranslateHexEscape(std::string_view p, size_t* i, std::string* out) {
  if (*i + 1 < p.size() && p[*i + 1] == '{') {
    size_t close = p.find('}', *i + 2);
    if (close == std::string_view::npos || close == *i + 2 || close - (*i + 2) > 2) {
      return InvalidRegex("unsupported \\x{...} escape");
    }
    std::string hex(p.substr(*i + 2, close - (*i + 2)));
    for (char h : hex) {
      if (!IsHex(h)) return InvalidRegex("bad \\x{...} escape");
    }
    if (hex.size() == 1) hex.insert(hex.begin(), '0');
    out->append("\\x").append(hex);
    *i = close;
    return Status::OK();
  }
  out->append("\\x");
  return Status::OK();
}

Status UnsupportedEscape(char e) {
  return InvalidRegex(std::string("unsupported escape sequence \\") + e);
}

// Translates PCRE syntax to ECMAScript; see regex_matcher.h.  With
// `exact_extent` the translation never consumes more than PCRE would (a
// final "$" does not eat the "\n" before the end), so that match positions
// are PCRE's.
Status Translate(std::string_view p, const RegexFlags& f, bool exact_extent, std::string* out) {
  out->clear();
  out->reserve(p.size() + 16);
  int depth = 0;
  bool in_class = false;
  size_t class_start = 0;  // index of the first character inside the class
  bool last_quantifier = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (in_class) {
      if (c == '\\') {
        if (i + 1 >= p.size()) return InvalidRegex("\\ at end of pattern");
        const char e = p[++i];
        switch (e) {
          case 'h': out->append(" \\t"); break;
          case 'v': out->append("\\n\\x0B\\f\\r"); break;
          case 'e': out->append("\\x1B"); break;
          case 'a': out->append("\\x07"); break;
          case 'x': RETURN_IF_ERROR(TranslateHexEscape(p, &i, out)); break;
          case 'H': case 'V': case 'A': case 'z': case 'Z': case 'G': case 'Q': case 'E':
          case 'p': case 'P': case 'R': case 'K': case 'X': case 'N': case 'C': case 'g':
          case 'k': case 'o': case 'L': case 'l': case 'U':
            return UnsupportedEscape(e);
          default:
            out->push_back('\\');
            out->push_back(e);
        }
        continue;
      }
      if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
        size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out->append(p.substr(i, close + 2 - i));
          i = close + 1;
          continue;
        }
      }
      if (c == '[') {
        out->append("\\[");
      } else if (c == ']' && i != class_start) {
        in_class = false;
        out->push_back(']');
      } else if (c == ']') {
        out->append("\\]");  // PCRE: a leading ']' is literal
      } else {
        out->push_back(c);
      }
      continue;
    }
    if (f.x && IsSpace(c)) continue;
    if (f.x && c == '#') {
      while (i + 1 < p.size() && p[i + 1] != '\n') ++i;
      continue;
    }
    bool quantifier = false;
    switch (c) {
      case '\\': {
        if (i + 1 >= p.size()) return InvalidRegex("\\ at end of pattern");
        const char e = p[++i];
        switch (e) {
          case 'A':
            if (f.m) return InvalidRegex("\\A is not supported with the m flag");
            out->push_back('^');
            break;
          case 'z':
            if (f.m) return InvalidRegex("\\z is not supported with the m flag");
            out->push_back('$');
            break;
          case 'Z':
            if (f.m) return InvalidRegex("\\Z is not supported with the m flag");
            out->append("(?=\\n?$)");
            break;
          case 'h': out->append("[ \\t]"); break;
          case 'H': out->append("[^ \\t]"); break;
          case 'v': out->append("[\\n\\x0B\\f\\r]"); break;
          case 'V': out->append("[^\\n\\x0B\\f\\r]"); break;
          case 'e': out->append("\\x1B"); break;
          case 'a': out->append("\\x07"); break;
          case 'x': RETURN_IF_ERROR(TranslateHexEscape(p, &i, out)); break;
          case 'G': case 'Q': case 'E': case 'p': case 'P': case 'R': case 'K': case 'X':
          case 'N': case 'C': case 'g': case 'k': case 'o': case 'L': case 'l': case 'U':
            return UnsupportedEscape(e);
          default:
            out->push_back('\\');
            out->push_back(e);
        }
        break;
      }
      case '[':
        out->push_back('[');
        in_class = true;
        if (i + 1 < p.size() && p[i + 1] == '^') {
          out->push_back('^');
          ++i;
        }
        class_start = i + 1;
        break;
      case '.':
        out->append(f.s ? "[\\s\\S]" : "[^\\n]");
        break;
      case '$':
        if (f.m) {
          out->push_back('$');
        } else if (!exact_extent && p.find_first_not_of(')', i + 1) == std::string_view::npos) {
          // Nothing can follow: consuming the final "\n" is equivalent and
          // avoids a lookahead sub-search.
          out->append("\\n?$");
        } else {
          out->append("(?=\\n?$)");
        }
        break;
      case '(': {
        if (++depth > kMaxParenDepth) return InvalidRegex("parentheses are too deeply nested");
        if (i + 1 >= p.size() || p[i + 1] != '?') {
          out->push_back('(');
          break;
        }
        if (i + 2 >= p.size()) return InvalidRegex("unterminated group");
        const char g = p[i + 2];
        if (g == ':' || g == '=' || g == '!') {
          out->append("(?");
          out->push_back(g);
          i += 2;
        } else if (g == '<' && i + 3 < p.size() && (p[i + 3] == '=' || p[i + 3] == '!')) {
          return InvalidRegex("lookbehind assertions are not supported");
        } else if (g == '<' || g == '\'' || (g == 'P' && i + 3 < p.size() && p[i + 3] == '<')) {
          size_t open = g == 'P' ? i + 3 : i + 2;
          char close_char = p[open] == '\'' ? '\'' : '>';
          size_t close = p.find(close_char, open + 1);
          if (close == std::string_view::npos) return InvalidRegex("unterminated group name");
          out->push_back('(');
          i = close;
        } else if (g == '#') {
          size_t close = p.find(')', i);
          if (close == std::string_view::npos) return InvalidRegex("unterminated comment");
          --depth;
          i = close;
        } else {
          return InvalidRegex(std::string("unsupported group syntax (?") + g);
        }
        break;
      }
      case ')':
        if (--depth < 0) return InvalidRegex("unmatched closing parenthesis");
        out->push_back(')');
        break;
      case '{': {
        size_t end = 0;
        if (QuantifierAt(p, i, &end)) {
          out->append(p.substr(i, end - i + 1));
          i = end;
          quantifier = true;
        } else {
          out->append("\\{");
        }
        break;
      }
      case '}':
        out->append("\\}");
        break;
      case ']':
        out->append("\\]");
        break;
      case '+':
        if (last_quantifier) return InvalidRegex("possessive quantifiers are not supported");
        out->push_back('+');
        quantifier = true;
        break;
      case '*':
        out->push_back('*');
        quantifier = true;
        break;
      case '?':
        out->push_back('?');
        // "a??" is lazy; "(?" was handled above.
        quantifier = !last_quantifier;
        break;
      default:
        out->push_back(c);
    }
    last_quantifier = quantifier;
  }
  if (in_class) return InvalidRegex("missing terminating ] for character class");
  if (depth != 0) return InvalidRegex("missing closing parenthesis");
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::Compile(std::string_view pattern,
                                                              std::string_view flags) {
  return CompileImpl(pattern, flags, false);
}

StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::CompileForFind(std::string_view pattern,
                                                                     std::string_view flags) {
  return CompileImpl(pattern, flags, true);
}

StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::CompileImpl(std::string_view pattern,
                                                                  std::string_view flags, bool for_find) {
  RegexFlags f;
  for (char c : flags) {
    switch (c) {
      case 'i': f.i = true; break;
      case 'm': f.m = true; break;
      case 's': f.s = true; break;
      case 'x': f.x = true; break;
      case 'u': break;  // UTF-8 mode: matching is bytewise either way
      default:
        return Status(ErrorCode::kLocation51108,
                      std::string("invalid flag in regex options: ") + c);
    }
  }
  if (pattern.find('\0') != std::string_view::npos) {
    return Status(ErrorCode::kBadValue, "Regular expression cannot contain an embedded null byte");
  }
  if (pattern.size() > kMaxPatternLength) {
    return Status(ErrorCode::kBadValue, "Regular expression is too long");
  }

  std::unique_ptr<RegexMatcher> m(new RegexMatcher());
  m->pattern_ = std::string(pattern);
  m->flags_ = std::string(flags);
  std::string_view body = StripLeadingInlineFlags(pattern, &f);
  m->icase_ = f.i;

  bool anchored = false;
  if (AnalyzeLiteral(body, f.x, &m->literal_, &anchored) && !(anchored && f.m)) {
    m->mode_ = anchored ? Mode::kPrefix : Mode::kContains;
    return m;
  }
  m->literal_.clear();

  std::string translated;
  RETURN_IF_ERROR(Translate(body, f, for_find, &translated));
  std::regex::flag_type syntax = std::regex::ECMAScript;
  if (f.i) syntax |= std::regex::icase;
  if (f.m) syntax |= std::regex::multiline;
  try {
    // A lazy any-prefix lets one anchored pass of the NFA executor find a
    // match at any position: linear time, bounded stack.
    m->re_.assign("[\\s\\S]*?(" + std::string(for_find ? "" : "?:") + translated + ")",
                  syntax | std::regex_constants::__polynomial);
    m->mode_ = Mode::kLinear;
    m->whole_group_ = for_find;
    m->groups_ = m->re_.mark_count() - (for_find ? 1 : 0);
  } catch (const std::regex_error& e) {
    if (e.code() != std::regex_constants::error_complexity) return InvalidRegex(e.what());
    // Back-references need the backtracking executor.
    try {
      m->re_.assign(translated, syntax);
      m->mode_ = Mode::kBacktracking;
      m->groups_ = m->re_.mark_count();
    } catch (const std::exception& e2) {
      return InvalidRegex(e2.what());
    }
  } catch (const std::exception& e) {
    return InvalidRegex(e.what());
  }
  return m;
}

bool RegexMatcher::Search(const char* s, size_t n) const {
  switch (mode_) {
    case Mode::kContains: {
      const size_t k = literal_.size();
      if (k == 0) return true;
      if (n < k) return false;
      if (!icase_) return std::string_view(s, n).find(literal_) != std::string_view::npos;
      for (size_t i = 0; i + k <= n; ++i) {
        if (EqualsIgnoreCase(s + i, literal_.data(), k)) return true;
      }
      return false;
    }
    case Mode::kPrefix: {
      const size_t k = literal_.size();
      if (n < k) return false;
      return icase_ ? EqualsIgnoreCase(s, literal_.data(), k)
                    : std::memcmp(s, literal_.data(), k) == 0;
    }
    case Mode::kLinear:
      try {
        return std::regex_search(s, s + n, re_, std::regex_constants::match_continuous);
      } catch (...) {
        return false;
      }
    case Mode::kBacktracking:
      if (n > kMaxBacktrackingSubject) return false;
      try {
        return std::regex_search(s, s + n, re_);
      } catch (...) {
        return false;
      }
  }
  return false;
}

namespace {

// Index of the first case-insensitive occurrence of lit in s[start, n).
size_t FindLiteral(const char* s, size_t n, size_t start, const std::string& lit, bool icase) {
  const size_t k = lit.size();
  if (n < k || start > n - k) return std::string_view::npos;
  if (!icase) return std::string_view(s, n).find(lit, start);
  for (size_t i = start; i + k <= n; ++i) {
    if (EqualsIgnoreCase(s + i, lit.data(), k)) return i;
  }
  return std::string_view::npos;
}

}  // namespace

RegexMatcher::FindResult RegexMatcher::Find(const char* s, size_t n, size_t start, Match* m) const {
  m->groups.clear();
  if (start > n) return FindResult::kNoMatch;
  switch (mode_) {
    case Mode::kContains: {
      const size_t at = FindLiteral(s, n, start, literal_, icase_);
      if (at == std::string_view::npos) return FindResult::kNoMatch;
      m->offset = at;
      m->length = literal_.size();
      return FindResult::kMatch;
    }
    case Mode::kPrefix: {
      // '^' without the m flag: only the very start of the subject.
      if (start != 0 || FindLiteral(s, n, 0, literal_, icase_) != 0) return FindResult::kNoMatch;
      m->offset = 0;
      m->length = literal_.size();
      return FindResult::kMatch;
    }
    case Mode::kLinear:
    case Mode::kBacktracking: {
      if (mode_ == Mode::kBacktracking && n - start > kMaxBacktrackingSubject) {
        return FindResult::kSubjectTooLong;
      }
      auto flags = std::regex_constants::match_default;
      if (start > 0) flags |= std::regex_constants::match_prev_avail;
      std::cmatch cm;
      bool found = false;
      try {
        if (mode_ == Mode::kLinear) {
          found = std::regex_search(s + start, s + n, cm, re_, flags | std::regex_constants::match_continuous);
        } else {
          found = std::regex_search(s + start, s + n, cm, re_, flags);
        }
      } catch (...) {
        found = false;
      }
      if (!found) return FindResult::kNoMatch;
      // In kLinear mode group 1 is the pattern (after the lazy prefix) when
      // whole_group_; without it (plain Compile) the match start is unknown.
      const size_t first_group = whole_group_ ? 2 : 1;
      const std::csub_match& whole = whole_group_ ? cm[1] : cm[0];
      m->offset = static_cast<size_t>(whole.first - s);
      m->length = static_cast<size_t>(whole.length());
      for (size_t g = first_group; g < cm.size(); ++g) {
        if (cm[g].matched) {
          m->groups.emplace_back(cm[g].first - s, static_cast<size_t>(cm[g].length()));
        } else {
          m->groups.emplace_back(-1, 0);
        }
      }
      return FindResult::kMatch;
    }
  }
  return FindResult::kNoMatch;
}

}  // namespace regex_baseline
}  // namespace gatedb
