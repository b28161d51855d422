// fuzz_wire_message: the input is a wire-protocol message as a client would
// send it (the first four bytes, its length, are set to the input's size so
// the parser gets past the framing check).  ParseRequest must refuse it or
// return a command that is valid BSON; a reply built around that command
// must parse back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/server/wire_message.h"
#include "engine/document/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  std::string msg(reinterpret_cast<const char*>(data), size);
  if (size >= 4) {
    std::string len;
    gatedb::server::AppendInt32(&len, static_cast<int32_t>(size));
    msg.replace(0, 4, len);
  }
  auto req = gatedb::server::ParseRequest(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  if (!req.ok()) return 0;
  const bson_t* cmd = req->command.bson();
  size_t off = 0;
  if (!bson_validate(cmd, BSON_VALIDATE_NONE, &off) ||
      !gatedb::ValidateIncoming(bson_get_data(cmd), cmd->len).ok()) {
    std::fprintf(stderr, "FUZZ INVARIANT FAILED: a parsed command is not valid BSON\n");
    std::abort();
  }
  std::string reply = gatedb::server::BuildMsgReply(1, req->header.request_id, cmd);
  auto back = gatedb::server::ParseRequest(reinterpret_cast<const uint8_t*>(reply.data()), reply.size());
  if (!back.ok() || back->command.bson()->len != cmd->len ||
      std::memcmp(bson_get_data(back->command.bson()), bson_get_data(cmd), cmd->len) != 0) {
    std::fprintf(stderr, "FUZZ INVARIANT FAILED: a reply does not parse back to its body\n");
    std::abort();
  }
  return 0;
}
