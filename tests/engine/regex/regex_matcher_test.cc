// RegexMatcher: MongoDB's regular expressions on PCRE2.  Every case of the
// table is also run through PCRE2's own API, compiled the way MongoDB
// compiles (UTF, the option letters mapped to PCRE2's flags), so the table
// checks both that gatedb answers what MongoDB answers and that it answers
// what PCRE2 does.
#include "engine/regex/regex_matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace gatedb {
namespace regex {
namespace {

// PCRE2 itself, as the oracle: 1 match, 0 no match, -1 compile error.
int PcreAnswer(const std::string& pattern, const std::string& flags, const std::string& subject) {
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  for (char c : flags) {
    if (c == 'i') options |= PCRE2_CASELESS;
    if (c == 'm') options |= PCRE2_MULTILINE;
    if (c == 's') options |= PCRE2_DOTALL;
    if (c == 'x') options |= PCRE2_EXTENDED;
  }
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &off, nullptr);
  if (code == nullptr) return -1;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return rc >= 0 ? 1 : 0;
}

struct Case {
  const char* pattern;
  const char* flags;
  std::string subject;
  bool match;
};

std::string Repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<Case> Table() {
  const std::string filler(2000, 'x');
  return {
      // Back-references, also far into a long subject (the std::regex
      // matcher gave up after 1 KiB and said "no match").
      {"(hello) \\1", "", "hello hello", true},
      {"(hello) \\1", "", filler + "hello hello", true},
      {"(hello) \\1", "", filler + "hello help", false},
      {"(?<w>\\w+) \\k<w>", "", filler + " the the", true},
      {"(?P<y>\\d{4})-(?P=y)", "", "2024-2024", true},
      {"(?P<y>\\d{4})-(?P=y)", "", "2024-2025", false},
      // Lookahead and lookbehind.
      {"foo(?=bar)", "", "foobar", true},
      {"foo(?=bar)", "", "foobaz", false},
      {"foo(?!bar)", "", "foobaz", true},
      {"(?<=\\$)\\d+", "", "costs $42", true},
      {"(?<=\\$)\\d+", "", "costs 42", false},
      {"(?<!\\$)\\b\\d+", "", "$42", false},
      {"(?<!\\$)\\b\\d+", "", "costs 42", true},
      // Possessive quantifiers and atomic groups do not give back.
      {"a++b", "", "aaab", true},
      {"a++a", "", "aaaa", false},
      {"(?>a+)a", "", "aaaa", false},
      {"(?>a+)b", "", "aaab", true},
      {"\\d*+\\d", "", "12345", false},
      // Unicode: UTF mode, property classes, case folding beyond ASCII.
      {"élan", "i", "ÉLAN vital", true},
      {"ÉLAN", "i", "élan vital", true},
      {"straße", "i", "STRASSE", false},  // simple case folding, as PCRE2
      {"\\p{Lu}", "", "École", true},
      {"^\\p{Lu}", "", "école", false},
      {"\\p{Han}", "", "漢字", true},
      {"\\P{L}", "", "abc", false},
      {"^.$", "", "é", true},          // one character, two bytes
      {"^..$", "", "é", false},
      {"^\\w$", "", "é", false},       // \w stays ASCII, as in MongoDB
      {"^[à-ÿ]+$", "", "éèê", true},
      {"\\x{1F600}", "", "smile 😀", true},
      {"^\\X$", "", "e\xCC\x81", true},  // e + combining acute: one grapheme
      // Options.
      {"^b", "", "a\nb", false},
      {"^b", "m", "a\nb", true},
      {"a$", "", "a\nb", false},
      {"a$", "m", "a\nb", true},
      {"a$", "", "a\n", true},          // $ before a final newline
      {"a.b", "", "a\nb", false},
      {"a.b", "s", "a\nb", true},
      {"a b # a comment", "x", "ab", true},
      {"a b # a comment", "", "ab", false},
      {"ABC", "i", "xabcx", true},
      {"abc", "u", "abc", true},
      {"(?i)abc", "", "ABC", true},
      {"a(?i)bc", "", "aBC", true},
      {"a(?i)bc", "", "ABC", false},
      {"a(?s:.)b", "", "a\nb", true},
      // Literal fast paths agree with PCRE2.
      {"", "", "anything", true},
      {"abc", "", "xxabcxx", true},
      {"^abc", "", "abcx", true},
      {"^abc", "", "xabc", false},
      {"a\\.b", "", "a.b", true},
      {"a\\.b", "", "axb", false},
      {"^ab c", "x", "abc", true},
      // Invalid UTF-8 in a subject never matches a character, and is not an
      // error.
      {"a.c", "", "a\xFF" "c", false},
      {"ac", "", "a\xFF" "ac", true},
      // Escapes std::regex lacked.
      {"\\Qa.b\\E", "", "a.b", true},
      {"\\Qa.b\\E", "", "axb", false},
      {"\\Aabc\\z", "", "abc", true},
      {"\\Aabc\\z", "", "abc\n", false},
      {"\\Aabc\\Z", "", "abc\n", true},
      {"\\h+", "", "a \tb", true},
      {"(a)|b", "", "b", true},
      {"^\\C\\C$", "", "é", true},  // \C is one byte, as in MongoDB's PCRE2
      {"^(?:(a)|b)(?(1)c|d)$", "", "bd", true},
      {"^(?:(a)|b)(?(1)c|d)$", "", "ac", true},
      {"^(?:(a)|b)(?(1)c|d)$", "", "ad", false},
      {"^(\\((?:[^()]|(?1))*\\))$", "", "(a(b)c)", true},  // recursion
      {"^(\\((?:[^()]|(?1))*\\))$", "", "(a(b c)", false},
  };
}

TEST(RegexMatcherTest, TableAgreesWithMongoDBAndWithPcre2) {
  for (const Case& c : Table()) {
    SCOPED_TRACE(std::string("/") + c.pattern + "/" + c.flags + " on \"" + c.subject.substr(0, 40) + "\"");
    StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile(c.pattern, c.flags);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    StatusOr<bool> found = (*m)->Search(c.subject.data(), c.subject.size());
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, c.match);
    EXPECT_EQ(PcreAnswer(c.pattern, c.flags, c.subject), c.match ? 1 : 0);
    // Find() answers the same.
    RegexMatcher::Match match;
    StatusOr<bool> f = (*m)->Find(c.subject.data(), c.subject.size(), 0, &match);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(*f, c.match);
  }
}

struct BadCase {
  std::string pattern;
  const char* flags;
  ErrorCode code;
  const char* message_part;
};

TEST(RegexMatcherTest, InvalidPatternsAndOptionsHaveMongoDBCodes) {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "(";
  deep += "a";
  for (int i = 0; i < 300; ++i) deep += ")";
  const std::vector<BadCase> cases = {
      {"(", "", ErrorCode::kLocation51091, "Regular expression is invalid: missing closing parenthesis"},
      {"a)", "", ErrorCode::kLocation51091, "Regular expression is invalid"},
      {"[z-a]", "", ErrorCode::kLocation51091, "range out of order"},
      {"a{2,1}", "", ErrorCode::kLocation51091, "out of order"},
      {"*a", "", ErrorCode::kLocation51091, "quantifier does not follow a repeatable item"},
      {"\\", "", ErrorCode::kLocation51091, "\\ at end of pattern"},
      {"(?<n>a)(?<n>b)", "", ErrorCode::kLocation51091, "two named subpatterns have the same name"},
      {"\\k<nope>", "", ErrorCode::kLocation51091, "reference to non-existent subpattern"},
      {"(?<=a+)b", "", ErrorCode::kLocation51091, "lookbehind assertion is not fixed length"},
      {"\xFF", "", ErrorCode::kLocation51091, "UTF-8 error"},
      {deep, "", ErrorCode::kLocation51091, "parentheses are too deeply nested"},
      {"abc", "z", ErrorCode::kLocation51108, "invalid flag in regex options: z"},
      {"abc", "ig", ErrorCode::kLocation51108, "invalid flag in regex options: g"},
      {std::string("a\0b", 3), "", ErrorCode::kBadValue, "embedded null byte"},
      {std::string(32765, 'a'), "", ErrorCode::kBadValue, "Regular expression is too long"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.pattern.substr(0, 30) + " /" + c.flags);
    StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile(c.pattern, c.flags);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), c.code);
    EXPECT_NE(m.status().reason().find(c.message_part), std::string::npos) << m.status().reason();
    if (c.code == ErrorCode::kLocation51091) EXPECT_EQ(PcreAnswer(c.pattern, c.flags, "a"), -1);
  }
  // The longest pattern MongoDB allows compiles.
  EXPECT_TRUE(RegexMatcher::Compile(std::string(32764, 'a'), "").ok());
  EXPECT_TRUE(RegexMatcher::Compile("(?:" + std::string(32000, 'a') + ")+b", "i").ok());
}

TEST(RegexMatcherTest, FindReportsPcre2OffsetsAndCaptures) {
  StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile("(\\d+)-(x)?(\\d+)", "");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->group_count(), 3u);
  const std::string s = "ab 12-34 56-x78";
  RegexMatcher::Match match;
  StatusOr<bool> f = (*m)->Find(s.data(), s.size(), 0, &match);
  ASSERT_TRUE(f.ok() && *f);
  EXPECT_EQ(match.offset, 3u);
  EXPECT_EQ(match.length, 5u);
  ASSERT_EQ(match.groups.size(), 3u);
  EXPECT_EQ(match.groups[0], (std::pair<std::ptrdiff_t, size_t>(3, 2)));
  EXPECT_EQ(match.groups[1].first, -1);  // (x)? took no part
  EXPECT_EQ(match.groups[2], (std::pair<std::ptrdiff_t, size_t>(6, 2)));
  f = (*m)->Find(s.data(), s.size(), match.offset + match.length, &match);
  ASSERT_TRUE(f.ok() && *f);
  EXPECT_EQ(match.offset, 9u);
  EXPECT_EQ(match.groups[1], (std::pair<std::ptrdiff_t, size_t>(12, 1)));
  f = (*m)->Find(s.data(), s.size(), match.offset + match.length, &match);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(*f);

  // A search from an offset still sees what precedes it.
  StatusOr<std::unique_ptr<RegexMatcher>> behind = RegexMatcher::Compile("(?<=a)b|\\bc", "");
  ASSERT_TRUE(behind.ok());
  const std::string t = "abxc";
  f = (*behind)->Find(t.data(), t.size(), 1, &match);
  ASSERT_TRUE(f.ok() && *f);
  EXPECT_EQ(match.offset, 1u);
  f = (*behind)->Find(t.data(), t.size(), 2, &match);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(*f);  // "xc": no word boundary before c

  // Offsets are bytes; a match is whole characters.
  StatusOr<std::unique_ptr<RegexMatcher>> dot = RegexMatcher::Compile("é.", "");
  ASSERT_TRUE(dot.ok());
  const std::string u = "caféé!";
  f = (*dot)->Find(u.data(), u.size(), 0, &match);
  ASSERT_TRUE(f.ok() && *f);
  EXPECT_EQ(match.offset, 3u);
  EXPECT_EQ(match.length, 4u);
}

// Hostile patterns and subjects finish with the right answer or a limit
// error; none hangs or crashes.
TEST(RegexMatcherTest, CatastrophicBacktrackingOnAMegabyteEndsInALimitError) {
  const std::string subject = std::string(1 << 20, 'a') + "!";
  for (const char* pattern : {"(a+)+$", "(a|a)+$", "(a*)*b", "(?:a+a+)+b"}) {
    SCOPED_TRACE(pattern);
    StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile(pattern, "");
    ASSERT_TRUE(m.ok());
    StatusOr<bool> r = (*m)->Search(subject.data(), subject.size());
    if (r.ok()) {
      EXPECT_FALSE(*r);  // PCRE2's optimizations may prove it early
    } else {
      EXPECT_EQ(r.status().code(), ErrorCode::kLocation51156);
      EXPECT_NE(r.status().reason().find("limit"), std::string::npos) << r.status().reason();
    }
  }
}

TEST(RegexMatcherTest, DeepBacktrackingFallsBackFromTheJitAndAnswers) {
  // (a|aa)*c on a megabyte of a's needs more than the JIT stack: the
  // interpreter takes over and answers (no match), or reports its limit.
  const std::string subject(1 << 20, 'a');
  StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile("^(a|aa)*c", "");
  ASSERT_TRUE(m.ok());
  StatusOr<bool> r = (*m)->Search(subject.data(), subject.size());
  if (r.ok()) {
    EXPECT_FALSE(*r);
  } else {
    EXPECT_EQ(r.status().code(), ErrorCode::kLocation51156);
  }
  // The same shape on a subject that matches.
  const std::string yes = std::string(100000, 'a') + "c";
  r = (*m)->Search(yes.data(), yes.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
  // A back-reference on a megabyte matches.
  StatusOr<std::unique_ptr<RegexMatcher>> br = RegexMatcher::Compile("^(a+)\\1$", "");
  ASSERT_TRUE(br.ok());
  r = (*br)->Search(subject.data(), subject.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
}

TEST(RegexMatcherTest, LongPatternOnLongSubject) {
  // A 32 KB alternation against a 1 MB subject: linear work per position.
  std::string pattern;
  for (int i = 0; i < 3000; ++i) {
    if (i) pattern += '|';
    pattern += "w" + std::to_string(i * 7919 % 100000);
  }
  ASSERT_LE(pattern.size(), 32764u);
  StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile(pattern, "i");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::string subject = Repeat("zz ", 1 << 18);
  StatusOr<bool> r = (*m)->Search(subject.data(), subject.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  subject += "W7919";
  r = (*m)->Search(subject.data(), subject.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
}

TEST(RegexMatcherTest, OneMatcherSharedByThreads) {
  StatusOr<std::unique_ptr<RegexMatcher>> m = RegexMatcher::Compile("^(\\w+)@(\\w+)\\.(com|org)$|é+", "i");
  ASSERT_TRUE(m.ok());
  std::vector<std::string> subjects;
  std::vector<bool> expected;
  for (int i = 0; i < 2000; ++i) {
    std::string s = i % 3 == 0 ? "user" + std::to_string(i) + "@host.COM"
                               : (i % 3 == 1 ? "no match " + std::to_string(i) : std::string(i % 50, 'x') + "É");
    expected.push_back(PcreAnswer("^(\\w+)@(\\w+)\\.(com|org)$|é+", "i", s) == 1);
    subjects.push_back(std::move(s));
  }
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = t; i < subjects.size(); i += 1 + t) {
          RegexMatcher::Match match;
          StatusOr<bool> r = (round % 2) ? (*m)->Find(subjects[i].data(), subjects[i].size(), 0, &match)
                                         : (*m)->Search(subjects[i].data(), subjects[i].size());
          if (!r.ok()) {
            ++errors;
          } else if (*r != expected[i]) {
            ++wrong;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace regex
}  // namespace gatedb
