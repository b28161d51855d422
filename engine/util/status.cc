#include "gatedb/status.h"

namespace gatedb {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
#define GATEDB_ERROR_CODE(name, num, retriable) \
  case ErrorCode::k##name:                      \
    return #name;
#include "gatedb/error_codes.def"
#undef GATEDB_ERROR_CODE
  }
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
