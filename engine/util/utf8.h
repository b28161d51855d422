// File: engine/util/utf8.h
//
// Text that goes into a reply must be UTF-8: BSON strings are, a reply
// with an invalid one has no Extended JSON form (gatedb run, the C ABI's
// JSON variant) and drivers refuse to decode it.  Error messages may quote
// what a caller sent (a JSON parser's "got 'tr\xff'"), so they pass
// through here.
#ifndef GATEDB_ENGINE_UTIL_UTF8_H_
#define GATEDB_ENGINE_UTIL_UTF8_H_

#include <string>
#include <string_view>

namespace gatedb {

// True when `s` is valid UTF-8 and holds no NUL byte.
bool IsCleanUtf8(std::string_view s);

// `s` with every byte that does not start a valid UTF-8 sequence, and
// every NUL, replaced by '?'.  Valid text comes back unchanged.
std::string ToCleanUtf8(std::string_view s);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_UTIL_UTF8_H_
