// $regex over 100,000 document values: gatedb's PCRE2 matcher
// (engine/regex) beside the std::regex matcher it replaced (kept in
// bench/micro/baseline only for this comparison), same patterns, same
// strings, same process.  Each iteration matches all 100,000 strings; the
// counter `matched` is the number of hits (equal in both when both answer
// the same).  docs/BENCHMARKS.md, "Regular expressions".
//
//   build/bench/regex_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//                        --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/micro/baseline/std_regex_matcher.h"
#include "engine/regex/regex_matcher.h"

namespace {

constexpr int kDocs = 100000;

const std::vector<std::string>& Subjects() {
  static const std::vector<std::string> subjects = [] {
    static const char* kCustomers[] = {"ACME Corp", "Globex", "Initech", "acme corporation", "Umbrella"};
    static const char* kStates[] = {"shipped", "shipping", "pending", "cancelled", "returned"};
    std::vector<std::string> out;
    out.reserve(kDocs);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < kDocs; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      out.push_back("order-" + std::to_string(x % 1000000) + " " + kStates[x % 5] + " to " + kCustomers[(x >> 8) % 5] +
                    ", contact agent" + std::to_string((x >> 16) % 100) + "@" +
                    ((x >> 24) % 2 ? "example.com" : "example.org") + " note: " + std::string((x >> 32) % 40, 'z'));
    }
    return out;
  }();
  return subjects;
}

struct Pattern {
  const char* pattern;
  const char* flags;
};

const Pattern kPatterns[] = {
    {"acme.*corp", "i"},                  // case-insensitive with a gap
    {"^order-\\d+ ship(ped|ping)", ""},   // anchored, class, alternation
    {"(\\w+)@(\\w+)\\.com", ""},          // groups
    {"\\b(?:returned|cancelled)\\b", ""},  // word boundaries
    {"Initech", ""},                      // literal: both take the fast path
};

bool Found(const gatedb::StatusOr<bool>& r) { return r.ok() && *r; }
bool Found(bool r) { return r; }

// Matches every subject with kPatterns[state.range(0)] compiled by Matcher.
template <typename Matcher>
void MatchAll(benchmark::State& state) {
  const Pattern& p = kPatterns[state.range(0)];
  auto m = Matcher::Compile(p.pattern, p.flags);
  if (!m.ok()) {
    state.SkipWithError(m.status().ToString().c_str());
    return;
  }
  const std::vector<std::string>& subjects = Subjects();
  int64_t matched = 0;
  for (auto _ : state) {
    matched = 0;
    for (const std::string& s : subjects) matched += Found((*m)->Search(s.data(), s.size()));
    benchmark::DoNotOptimize(matched);
  }
  state.counters["matched"] = static_cast<double>(matched);
  state.SetItemsProcessed(state.iterations() * kDocs);
  state.SetLabel(std::string("/") + p.pattern + "/" + p.flags);
}

void BM_Regex_Pcre2(benchmark::State& state) { MatchAll<gatedb::regex::RegexMatcher>(state); }
BENCHMARK(BM_Regex_Pcre2)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

void BM_Baseline_StdRegex(benchmark::State& state) { MatchAll<gatedb::regex_baseline::RegexMatcher>(state); }
BENCHMARK(BM_Baseline_StdRegex)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
