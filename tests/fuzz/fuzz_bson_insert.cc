// fuzz_bson_insert: the input is raw BSON.  When Document::FromBytes accepts
// it, insert it with {insert: "f", documents: [doc]} through RunCommand on
// one shared database.  The reply must have an `ok` field.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = gatedb::Document::FromBytes(data, size);
  if (!doc.ok()) return 0;

  bson_t cmd = BSON_INITIALIZER;
  bson_t docs;
  BSON_APPEND_UTF8(&cmd, "insert", "f");
  BSON_APPEND_ARRAY_BEGIN(&cmd, "documents", &docs);
  BSON_APPEND_DOCUMENT(&docs, "0", doc->bson());
  bson_append_array_end(&cmd, &docs);

  gatedb::Document reply = gatedb_fuzz::SharedDatabase()->RunCommand(gatedb::DocumentView(&cmd));
  gatedb_fuzz::CheckReply(reply, doc->ToJson(gatedb::JsonMode::kCanonical));
  bson_destroy(&cmd);
  return 0;
}
