#include "tests/sim/sim_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "gatedb/document.h"
#include "gatedb/value.h"

namespace gatedb {
namespace sim {

uint64_t MixSeed(uint64_t a, uint64_t b, uint64_t c) {
  auto splitmix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  return splitmix(splitmix(splitmix(a) ^ b) ^ c);
}

std::optional<ThinkDist> ThinkDist::Parse(const std::string& spec, std::string* error) {
  ThinkDist d;
  d.spec_ = spec;
  if (spec == "0" || spec.empty()) return d;
  double mean = 0, prob = 0, scale = 0;
  int used = 0;
  if (std::sscanf(spec.c_str(), "exp:%lf,tail:%lf:%lf%n", &mean, &prob, &scale, &used) == 3 &&
      used == static_cast<int>(spec.size())) {
    d.mean_ms_ = mean;
    d.tail_prob_ = prob;
    d.tail_scale_ms_ = scale;
  } else if (std::sscanf(spec.c_str(), "exp:%lf%n", &mean, &used) == 1 && used == static_cast<int>(spec.size())) {
    d.mean_ms_ = mean;
  } else {
    *error = "bad --think '" + spec + "': expected 0, exp:MEAN or exp:MEAN,tail:PROB:SCALE (milliseconds)";
    return std::nullopt;
  }
  if (mean < 0 || prob < 0 || prob > 1 || scale < 0) {
    *error = "bad --think '" + spec + "': negative time or probability outside [0, 1]";
    return std::nullopt;
  }
  return d;
}

int64_t ThinkDist::SampleMicros(Rng* rng) const {
  double ms = 0;
  if (mean_ms_ > 0) ms += -std::log(1.0 - rng->Unit()) * mean_ms_;
  if (tail_prob_ > 0 && rng->Chance(tail_prob_)) {
    // Pareto with alpha 1.5: most tail delays are near SCALE, a few are
    // many times longer (the agent that went to lunch).
    double u = 1.0 - rng->Unit();
    ms += std::min(tail_scale_ms_ / std::pow(u, 1.0 / 1.5), 20 * tail_scale_ms_);
  }
  return static_cast<int64_t>(ms * 1000);
}

void SleepMicros(int64_t us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Violations::Add(const std::string& what) {
  std::lock_guard<std::mutex> l(mu_);
  std::string msg = context_.empty() ? what : "[" + context_ + "] " + what;
  if (messages_.size() < 20) std::fprintf(stderr, "VIOLATION: %s\n", msg.c_str());
  if (messages_.size() < 1000) messages_.push_back(std::move(msg));
  count_.fetch_add(1);
}

std::vector<std::string> Violations::First(size_t n) const {
  std::lock_guard<std::mutex> l(mu_);
  return std::vector<std::string>(messages_.begin(), messages_.begin() + std::min(n, messages_.size()));
}

bool Violations::WriteAll(const std::string& path) const {
  std::lock_guard<std::mutex> l(mu_);
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  for (const std::string& m : messages_) std::fprintf(f, "%s\n", m.c_str());
  return std::fclose(f) == 0;
}

void Violations::set_context(const std::string& ctx) {
  std::lock_guard<std::mutex> l(mu_);
  context_ = ctx;
}

std::optional<int64_t> IntField(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (doc == nullptr || !bson_iter_init_find(&it, doc, key)) return std::nullopt;
  if (!BSON_ITER_HOLDS_NUMBER(&it)) return std::nullopt;
  return bson_iter_as_int64(&it);
}

std::optional<std::string> StrField(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (doc == nullptr || !bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_UTF8(&it)) return std::nullopt;
  return std::string(bson_iter_utf8(&it, nullptr));
}

std::vector<std::string> StrArray(const bson_t* doc, const char* key) {
  std::vector<std::string> out;
  bson_iter_t it, arr;
  if (doc == nullptr || !bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &arr)) {
    return out;
  }
  while (bson_iter_next(&arr)) {
    if (BSON_ITER_HOLDS_UTF8(&arr)) out.emplace_back(bson_iter_utf8(&arr, nullptr));
  }
  return out;
}

std::string ValueJson(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (doc == nullptr || !bson_iter_init_find(&it, doc, key)) return "";
  return Value(*bson_iter_value(&it)).ToJson();
}

std::string BsonJson(const bson_t* doc) { return DocumentView(doc).ToJson(); }

}  // namespace sim
}  // namespace gatedb
