#include "gatedb/status.h"

#include <mutex>
#include <string>
#include <unordered_map>

namespace gatedb {

namespace {

// MongoDB names a code that error_codes.yml does not ("Location16554"):
// interned, so that the name outlives the call.
const char* LocationName(int code) {
  static std::mutex mu;
  static auto* names = new std::unordered_map<int, std::string>();
  std::lock_guard<std::mutex> l(mu);
  auto it = names->find(code);
  if (it == names->end()) it = names->emplace(code, "Location" + std::to_string(code)).first;
  return it->second.c_str();
}

}  // namespace

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
#define GATEDB_ERROR_CODE(name, num, retriable) \
  case ErrorCode::k##name:                      \
    return #name;
#include "gatedb/error_codes.def"
#undef GATEDB_ERROR_CODE
  }
  const int n = static_cast<int>(code);
  if (n >= 10000) return LocationName(n);
  return "UnknownError";
}

bool IsRetriable(ErrorCode code) {
  switch (code) {
#define GATEDB_ERROR_CODE(name, num, retriable) \
  case ErrorCode::k##name:                      \
    return retriable != 0;
#include "gatedb/error_codes.def"
#undef GATEDB_ERROR_CODE
  }
  return false;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = code_name();
  s += " (" + std::to_string(code_number()) + "): " + reason_;
  return s;
}

}  // namespace gatedb
