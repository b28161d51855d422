// File: engine/query/regex_matcher.h
//
// RegexMatcher: a MongoDB $regex (pattern + flags "imsxu") compiled once and
// then run against many strings.  MongoDB uses PCRE; gatedb translates the
// common PCRE syntax to std::regex's ECMAScript grammar:
//   - `.` never matches "\n" unless the `s` flag is set (PCRE's default);
//   - `$` without `m` also matches before a final "\n" (PCRE's default);
//   - `x` strips unescaped white space and `#` comments outside classes;
//   - a leading `(?imsx)` sets flags; `(?<name>...)` becomes a plain group;
//   - `\A`, `\z`, `\Z`, `\h`, `\H`, `\e`, `\a` are rewritten;
//   - a `{` or `}` that does not form a quantifier is a literal, as in PCRE.
// Not supported (BadValue at compile time): lookbehind, atomic groups,
// possessive quantifiers, `\Q...\E`, `\p{..}`, inline flags after the start.
// Matching is bytewise (`.` matches one byte of a UTF-8 sequence) and `i`
// folds ASCII letters only.
//
// Literal patterns ("abc", "^abc") skip the regex engine entirely.  Other
// patterns run on libstdc++'s polynomial (NFA) executor in one left-to-right
// pass, so matching is linear in the subject and cannot overflow the stack.
// Patterns with back-references (\1) need libstdc++'s recursive backtracking
// executor, which uses ~400 bytes of stack per subject byte; to stay
// crash-free they only ever match subjects of at most 1 KiB.
//
// Thread safety: immutable after Compile(); Search() may run concurrently.
#ifndef GATEDB_ENGINE_QUERY_REGEX_MATCHER_H_
#define GATEDB_ENGINE_QUERY_REGEX_MATCHER_H_

#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "gatedb/status.h"

namespace gatedb {
namespace query {

class RegexMatcher {
 public:
  // Compiles `pattern` with MongoDB `flags`.  Errors: Location51108 for a
  // flag other than i, m, s, x, u ("invalid flag in regex options: z");
  // BadValue for an embedded null byte, a pattern longer than 32764 bytes,
  // an invalid or unsupported pattern ("Regular expression is invalid: ...").
  static StatusOr<std::unique_ptr<RegexMatcher>> Compile(std::string_view pattern,
                                                         std::string_view flags);

  // True when the pattern matches somewhere in s[0, n).
  bool Search(const char* s, size_t n) const;

  // The pattern and flags exactly as given (a BSON regex value equals this
  // matcher when both are byte-equal, as in MongoDB).
  const std::string& pattern() const { return pattern_; }
  const std::string& flags() const { return flags_; }

 private:
  enum class Mode { kContains, kPrefix, kLinear, kBacktracking };

  RegexMatcher() = default;

  std::string pattern_;
  std::string flags_;
  Mode mode_ = Mode::kContains;
  bool icase_ = false;
  std::string literal_;  // kContains / kPrefix
  std::regex re_;        // kLinear / kBacktracking
};

}  // namespace query
}  // namespace gatedb

#endif  // GATEDB_ENGINE_QUERY_REGEX_MATCHER_H_
