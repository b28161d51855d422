// fuzz_bson_insert: the input is raw BSON.  When Document::FromBytes accepts
// it, insert it with {insert: "f", documents: [doc]} through RunCommand on
// one shared database.  The reply must have an `ok` field.  Also checks that
// what FromBytes accepts libbson's bson_validate accepts too, and that it is
// well formed (fuzz_split.h's WellFormed), unless
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

  // ValidateIncoming's one walk replaced libbson's bson_validate: it must
  // refuse at least what bson_validate refuses.
  bson_error_t error;
  if (!bson_validate_with_error(doc->bson(),
                                static_cast<bson_validate_flags_t>(BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL),
                                &error)) {
    gatedb_fuzz::Fail("Document::FromBytes accepted what bson_validate refuses",
                      std::string(error.message) + " (" + std::to_string(size) + " bytes)");
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
