#include "engine/util/utf8.h"

#include <bson/bson.h>

namespace gatedb {

bool IsCleanUtf8(std::string_view s) { return bson_utf8_validate(s.data(), s.size(), /*allow_null=*/false); }

std::string ToCleanUtf8(std::string_view s) {
  if (IsCleanUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    // The length the lead byte announces; bson_utf8_validate then checks
    // the continuation bytes, overlong forms and surrogates.
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len != 0 && i + len <= s.size() && bson_utf8_validate(s.data() + i, len, false)) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

}  // namespace gatedb
