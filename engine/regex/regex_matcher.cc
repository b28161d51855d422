#include "engine/regex/regex_matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>

namespace gatedb {
namespace regex {

namespace {

constexpr size_t kMaxPatternLength = 32764;   // MongoDB's limit
constexpr uint32_t kMatchLimit = 10000000;    // PCRE2's default
constexpr uint32_t kDepthLimit = 10000000;    // interpreter: PCRE2's default
constexpr uint32_t kHeapLimitKiB = 64 * 1024;  // interpreter backtracking memory
constexpr size_t kJitStackStart = 32 * 1024;
constexpr size_t kJitStackMax = 1024 * 1024;

std::string PcreMessage(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return "error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buf));
}

// Per thread: the match data (grown to the largest pattern seen) and the
// JIT stack.  Freed when the thread ends.
struct ThreadState {
  pcre2_match_data* match_data = nullptr;
  uint32_t pairs = 0;
  pcre2_jit_stack* jit_stack = nullptr;
  bool jit_stack_tried = false;

  ~ThreadState() {
    pcre2_match_data_free(match_data);
    pcre2_jit_stack_free(jit_stack);
  }

  pcre2_match_data* MatchData(uint32_t want) {
    if (match_data == nullptr || pairs < want) {
      pcre2_match_data_free(match_data);
      match_data = pcre2_match_data_create(want, nullptr);
      pairs = match_data != nullptr ? want : 0;
    }
    return match_data;
  }
};

thread_local ThreadState tls;

// PCRE2 asks for a JIT stack per match; null means its 32 KiB default.
pcre2_jit_stack* JitStackOfThisThread(void*) {
  if (!tls.jit_stack_tried) {
    tls.jit_stack_tried = true;
    tls.jit_stack = pcre2_jit_stack_create(kJitStackStart, kJitStackMax, nullptr);
  }
  return tls.jit_stack;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// True when `p` is a plain string, optionally anchored by a leading '^'
// (with `x`, white space is dropped); *lit receives the string.
bool AnalyzeLiteral(std::string_view p, bool extended, std::string* lit, bool* anchored) {
  lit->clear();
  *anchored = false;
  size_t i = 0;
  if (!p.empty() && p[0] == '^') {
    *anchored = true;
    i = 1;
  }
  for (; i < p.size(); ++i) {
    const char c = p[i];
    if (extended && IsSpace(c)) continue;
    if (extended && c == '#') return false;
    if (c == '\\') {
      // \ before a non-alphanumeric ASCII character is that character.
      if (i + 1 >= p.size() || IsAlnum(p[i + 1]) || static_cast<unsigned char>(p[i + 1]) >= 0x80) return false;
      lit->push_back(p[++i]);
      continue;
    }
    if (std::strchr("^$.|?*+()[]{}", c) != nullptr) return false;
    lit->push_back(c);
  }
  return true;
}

}  // namespace

struct RegexMatcher::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  bool jit = false;

  ~Compiled() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

RegexMatcher::~RegexMatcher() = default;

StatusOr<std::unique_ptr<RegexMatcher>> RegexMatcher::Compile(std::string_view pattern, std::string_view flags) {
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  bool icase = false, multiline = false, extended = false;
  for (char c : flags) {
    switch (c) {
      case 'i': options |= PCRE2_CASELESS; icase = true; break;
      case 'm': options |= PCRE2_MULTILINE; multiline = true; break;
      case 's': options |= PCRE2_DOTALL; break;
      case 'x': options |= PCRE2_EXTENDED; extended = true; break;
      case 'u': break;  // UTF mode is always on, as in MongoDB
      default:
        return Status(ErrorCode::kLocation51108, std::string("invalid flag in regex options: ") + c);
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

  bool anchored = false;
  if (!icase && AnalyzeLiteral(pattern, extended, &m->literal_, &anchored) && !(anchored && multiline)) {
    // Still compiled, so that an invalid UTF-8 pattern is refused as PCRE2
    // refuses it; matching skips PCRE2.
    m->mode_ = anchored ? Mode::kPrefix : Mode::kContains;
  } else {
    m->literal_.clear();
    m->mode_ = Mode::kPcre;
  }

  auto compiled = std::make_unique<Compiled>();
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                 &error_offset, nullptr);
  if (compiled->code == nullptr) {
    return Status(ErrorCode::kLocation51091, "Regular expression is invalid: " + PcreMessage(error));
  }
  if (m->mode_ != Mode::kPcre) return m;

  uint32_t captures = 0;
  pcre2_pattern_info(compiled->code, PCRE2_INFO_CAPTURECOUNT, &captures);
  m->groups_ = captures;
  // No JIT (an unsupported platform, a pattern JIT cannot take) leaves the
  // interpreter, which gives the same answers.
  compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
  compiled->context = pcre2_match_context_create(nullptr);
  if (compiled->context == nullptr) return Status(ErrorCode::kInternalError, "out of memory compiling a regex");
  pcre2_set_match_limit(compiled->context, kMatchLimit);
  pcre2_set_depth_limit(compiled->context, kDepthLimit);
  pcre2_set_heap_limit(compiled->context, kHeapLimitKiB);
  if (compiled->jit) pcre2_jit_stack_assign(compiled->context, JitStackOfThisThread, nullptr);
  m->pcre_ = std::move(compiled);
  return m;
}

int RegexMatcher::Run(const char* s, size_t n, size_t start, bool want_groups, std::vector<size_t>* ovector) const {
  pcre2_match_data* md = tls.MatchData(want_groups ? static_cast<uint32_t>(groups_ + 1) : 1);
  if (md == nullptr) return PCRE2_ERROR_NOMEMORY;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s != nullptr ? s : "");
  int rc = pcre2_match(pcre_->code, subject, n, start, 0, md, pcre_->context);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    // Deeper than the JIT stack allows: the interpreter keeps its
    // backtracking on the heap, under the heap limit.
    rc = pcre2_match(pcre_->code, subject, n, start, PCRE2_NO_JIT, md, pcre_->context);
  }
  if (rc >= 0 && ovector != nullptr) {
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const uint32_t pairs = pcre2_get_ovector_count(md);
    ovector->assign(ov, ov + 2 * static_cast<size_t>(pairs));
  }
  return rc;
}

namespace {

Status MatchError(int rc) {
  return Status(ErrorCode::kLocation51156, "Error occurred while executing the regular expression. Result code: " +
                                               std::to_string(rc) + " (" + PcreMessage(rc) + ")");
}

}  // namespace

StatusOr<bool> RegexMatcher::Search(const char* s, size_t n) const {
  switch (mode_) {
    case Mode::kContains:
      return literal_.empty() || std::string_view(s, n).find(literal_) != std::string_view::npos;
    case Mode::kPrefix:
      return n >= literal_.size() && std::memcmp(s, literal_.data(), literal_.size()) == 0;
    case Mode::kPcre:
      break;
  }
  const int rc = Run(s, n, 0, /*want_groups=*/false, nullptr);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  return MatchError(rc);
}

StatusOr<bool> RegexMatcher::Find(const char* s, size_t n, size_t start, Match* m) const {
  m->groups.clear();
  if (start > n) return false;
  switch (mode_) {
    case Mode::kContains: {
      const size_t at = std::string_view(s, n).find(literal_, start);
      if (at == std::string_view::npos) return false;
      m->offset = at;
      m->length = literal_.size();
      return true;
    }
    case Mode::kPrefix:
      // '^' without the m flag: only the very start of the subject.
      if (start != 0 || n < literal_.size() || std::memcmp(s, literal_.data(), literal_.size()) != 0) return false;
      m->offset = 0;
      m->length = literal_.size();
      return true;
    case Mode::kPcre:
      break;
  }
  std::vector<size_t> ov;
  const int rc = Run(s, n, start, /*want_groups=*/true, &ov);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) return MatchError(rc);
  // \K may set a start after the end; report an empty match there.
  m->offset = ov[0];
  m->length = ov[1] >= ov[0] ? ov[1] - ov[0] : 0;
  for (size_t g = 1; g <= groups_; ++g) {
    if (2 * g + 1 < ov.size() && ov[2 * g] != PCRE2_UNSET) {
      m->groups.emplace_back(static_cast<std::ptrdiff_t>(ov[2 * g]), ov[2 * g + 1] - ov[2 * g]);
    } else {
      m->groups.emplace_back(-1, 0);
    }
  }
  return true;
}

}  // namespace regex
}  // namespace gatedb
