// fuzz_command_json: the input is Extended JSON text.  When it parses to a
// document, run it as a command on one shared database; the reply must always
// be valid BSON with an `ok` field, and nothing may crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  auto doc = gatedb::Document::FromJson(json);
  if (!doc.ok()) return 0;
  gatedb::Document reply = gatedb_fuzz::SharedDatabase()->RunCommand(doc->view());
  gatedb_fuzz::CheckReply(reply, std::string(json));
  return 0;
}
