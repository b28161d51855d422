// fuzz_bson_insert: the input is raw BSON.  When Document::FromBytes accepts
// it, insert it with {insert: "f", documents: [doc]} through RunCommand on
// one shared database.  The reply must have an `ok` field.  Also checks that
// what FromBytes accepts is well formed (fuzz_split.h's WellFormed), unless
// GATEDB_FUZZ_SKIP_WELLFORMED is set in the environment (to fuzz past the
// known ValidateIncoming gap, README.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_split.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = gatedb::Document::FromBytes(data, size);
  if (!doc.ok()) return 0;
  static const bool skip_wellformed = std::getenv("GATEDB_FUZZ_SKIP_WELLFORMED") != nullptr;
  if (!gatedb_fuzz::WellFormed(data, size)) {
    if (skip_wellformed) return 0;
    gatedb_fuzz::Fail("Document::FromBytes accepted malformed BSON (an element overruns its embedded document)",
                      std::to_string(size) + " bytes");
  }

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
