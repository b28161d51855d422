// File: bench/micro/baseline/std_regex_matcher.h
//
// The std::regex matcher gatedb used before PCRE2 (issue 19), kept only as
// the baseline of bench/micro/regex_bench.cc.  Not built into the library.
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
// Find() (for $regexFind and $regexFindAll) also reports where the match is
// and what each group captured; a matcher made by CompileForFind() supports
// it, at the cost of one more capture group in the linear executor.
//
// Thread safety: immutable after Compile(); Search() and Find() may run
// concurrently.
#ifndef GATEDB_BENCH_MICRO_BASELINE_STD_REGEX_MATCHER_H_
#define GATEDB_BENCH_MICRO_BASELINE_STD_REGEX_MATCHER_H_

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace regex_baseline {

class RegexMatcher {
 public:
  // Compiles `pattern` with MongoDB `flags`.  Errors: Location51108 for a
  // flag other than i, m, s, x, u ("invalid flag in regex options: z");
  // BadValue for an embedded null byte, a pattern longer than 32764 bytes,
  // an invalid or unsupported pattern ("Regular expression is invalid: ...").
  static StatusOr<std::unique_ptr<RegexMatcher>> Compile(std::string_view pattern,
                                                         std::string_view flags);

  // As Compile(), for a matcher whose Find() is used: matches have PCRE's
  // extent (a final `$` does not take the "\n" before the end into the
  // match, as Search()'s translation may).
  static StatusOr<std::unique_ptr<RegexMatcher>> CompileForFind(std::string_view pattern,
                                                                std::string_view flags);

  // True when the pattern matches somewhere in s[0, n).
  bool Search(const char* s, size_t n) const;

  struct Match {
    size_t offset = 0;  // of the match in the subject, in bytes
    size_t length = 0;
    // Per capture group: {offset, length}, or {-1, 0} when the group did not
    // take part in the match.
    std::vector<std::pair<std::ptrdiff_t, size_t>> groups;
  };
  enum class FindResult {
    kMatch,
    kNoMatch,
    // A back-reference pattern on a subject longer than the backtracking
    // executor is allowed (see above): the answer is unknown.
    kSubjectTooLong,
  };
  // The first match in s[start, n).  Anchors and \b see s[start - 1] as the
  // preceding character.  REQUIRES: made by CompileForFind(); start <= n.
  FindResult Find(const char* s, size_t n, size_t start, Match* m) const;

  // The number of capture groups in the pattern.
  size_t group_count() const { return groups_; }

  // The pattern and flags exactly as given (a BSON regex value equals this
  // matcher when both are byte-equal, as in MongoDB).
  const std::string& pattern() const { return pattern_; }
  const std::string& flags() const { return flags_; }

 private:
  enum class Mode { kContains, kPrefix, kLinear, kBacktracking };

  RegexMatcher() = default;
  static StatusOr<std::unique_ptr<RegexMatcher>> CompileImpl(std::string_view pattern, std::string_view flags,
                                                             bool for_find);

  std::string pattern_;
  std::string flags_;
  Mode mode_ = Mode::kContains;
  bool icase_ = false;
  std::string literal_;  // kContains / kPrefix
  std::regex re_;        // kLinear / kBacktracking
  // CompileForFind() in kLinear mode wraps the whole pattern in a group
  // (re_ is "[\s\S]*?(pattern)"), so the user's groups start at 2.
  bool whole_group_ = false;
  size_t groups_ = 0;
};

}  // namespace regex_baseline
}  // namespace gatedb

#endif  // GATEDB_BENCH_MICRO_BASELINE_STD_REGEX_MATCHER_H_
