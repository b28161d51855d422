// File: engine/regex/regex_matcher.h
//
// RegexMatcher: a MongoDB regular expression (pattern + options "imsxu")
// compiled once by PCRE2, the library MongoDB itself uses, and then run
// against many strings.  As in MongoDB, patterns are always compiled in UTF
// mode (`u` is accepted and redundant): `.` matches one character, `i` folds
// case by Unicode (é matches É), `\p{Lu}` and the other property classes
// work; `\d`, `\w` and `\b` stay ASCII, as in MongoDB (no PCRE2_UCP).
// Options: i CASELESS, m MULTILINE, s DOTALL, x EXTENDED.  Invalid UTF-8 in
// a subject never matches a character (PCRE2_MATCH_INVALID_UTF) and is not an
// error.
//
// Bounded work: every match runs under PCRE2's match limit (10,000,000
// backtracking steps, PCRE2's default), a depth limit and a 64 MiB heap
// limit, on the JIT when it is available (a thread's JIT stack may grow to
// 1 MiB; a match that needs more runs again in the interpreter).  A match
// that reaches a limit is an error, never a silent "no match": Location51156
// "Error occurred while executing the regular expression... Result code: -47
// (match limit exceeded)".  Parentheses nest at most 250 deep (PCRE2's
// limit) and a pattern is at most 32764 bytes (MongoDB's).
//
// Case-sensitive literal patterns ("abc", "^abc") skip PCRE2 entirely.
//
// Thread safety: immutable after Compile(); Search() and Find() may run
// concurrently (match data and JIT stacks are per thread).
#ifndef GATEDB_ENGINE_REGEX_REGEX_MATCHER_H_
#define GATEDB_ENGINE_REGEX_REGEX_MATCHER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gatedb/status.h"

namespace gatedb {
namespace regex {

class RegexMatcher {
 public:
  // Compiles `pattern` with MongoDB `flags`.  Errors: Location51108 for a
  // flag other than i, m, s, x, u ("invalid flag in regex options: z");
  // BadValue for an embedded null byte or a pattern over 32764 bytes;
  // Location51091 for a pattern PCRE2 rejects ("Regular expression is
  // invalid: missing closing parenthesis").
  static StatusOr<std::unique_ptr<RegexMatcher>> Compile(std::string_view pattern, std::string_view flags);

  ~RegexMatcher();
  RegexMatcher(const RegexMatcher&) = delete;
  RegexMatcher& operator=(const RegexMatcher&) = delete;

  // Whether the pattern matches somewhere in s[0, n).  Errors: Location51156
  // when the match reaches a limit (see above).
  StatusOr<bool> Search(const char* s, size_t n) const;

  struct Match {
    size_t offset = 0;  // of the match in the subject, in bytes
    size_t length = 0;
    // Per capture group: {offset, length}, or {-1, 0} when the group did not
    // take part in the match.
    std::vector<std::pair<std::ptrdiff_t, size_t>> groups;
  };
  // The first match in s[start, n) (*m filled), or false.  Lookbehinds,
  // anchors and \b see the bytes before `start`.  REQUIRES: start <= n and
  // s + start is at a character boundary.  Errors: as Search().
  StatusOr<bool> Find(const char* s, size_t n, size_t start, Match* m) const;

  // The number of capture groups in the pattern.
  size_t group_count() const { return groups_; }

  // True when Search() and Find() run PCRE2 (and so may reach a limit);
  // false for the literal fast paths, which never fail.
  bool may_fail() const { return mode_ == Mode::kPcre; }

  // The pattern and flags exactly as given (a BSON regex value equals this
  // matcher when both are byte-equal, as in MongoDB).
  const std::string& pattern() const { return pattern_; }
  const std::string& flags() const { return flags_; }

 private:
  enum class Mode { kContains, kPrefix, kPcre };
  struct Compiled;  // PCRE2's code and match context

  RegexMatcher() = default;
  // Runs PCRE2 from `start`; returns its result code (>= 0 match, -1 no
  // match, else an error) with the offsets in the thread's match data.
  int Run(const char* s, size_t n, size_t start, bool want_groups, std::vector<size_t>* ovector) const;

  std::string pattern_;
  std::string flags_;
  Mode mode_ = Mode::kContains;
  std::string literal_;  // kContains / kPrefix
  std::unique_ptr<Compiled> pcre_;
  size_t groups_ = 0;
};

}  // namespace regex
}  // namespace gatedb

#endif  // GATEDB_ENGINE_REGEX_REGEX_MATCHER_H_
