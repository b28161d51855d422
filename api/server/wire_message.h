// File: api/server/wire_message.h
//
// MongoDB's wire protocol, as bytes: the 16-byte header, OP_MSG (2013) with
// its flag bits, body section and document sequences, the legacy OP_QUERY
// (2004) handshake and its OP_REPLY (1).  Pure functions over buffers, so
// the socket layer (wire_server.cc) never touches a byte the parser has not
// checked, and the parser is fuzzed on its own (tests/fuzz/fuzz_wire_message).
//
// The reference is mongodb/specifications, source/message/OP_MSG.md, and
// the server's legacy opcode notes.  All integers are little-endian.
//
//   header       int32 messageLength (including the header)
//                int32 requestID, int32 responseTo, int32 opCode
//   OP_MSG       uint32 flagBits; sections; [uint32 CRC-32C checksum]
//     flagBits   bit 0 checksumPresent, bit 1 moreToCome, bit 16
//                exhaustAllowed; other bits 0-15 are required bits a
//                receiver must refuse when it does not know them
//     section    kind 0: one BSON document (the body; exactly one)
//                kind 1: int32 size (counting itself), cstring identifier,
//                        BSON documents filling the rest of the size
//   OP_QUERY     int32 flags, cstring fullCollectionName, int32 skip,
//                int32 numberToReturn, document query, [document fields]
//   OP_REPLY     int32 responseFlags, int64 cursorID, int32 startingFrom,
//                int32 numberReturned, documents
//
// Thread safety: pure functions.
#ifndef GATEDB_API_SERVER_WIRE_MESSAGE_H_
#define GATEDB_API_SERVER_WIRE_MESSAGE_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace server {

constexpr int32_t kOpReply = 1;
constexpr int32_t kOpQuery = 2004;
constexpr int32_t kOpCompressed = 2012;
constexpr int32_t kOpMsg = 2013;

constexpr size_t kHeaderSize = 16;
// MongoDB's maxMessageSizeBytes.
constexpr size_t kMaxMessageSize = 48000000;

constexpr uint32_t kChecksumPresent = 1u << 0;
constexpr uint32_t kMoreToCome = 1u << 1;
constexpr uint32_t kExhaustAllowed = 1u << 16;

struct MessageHeader {
  int32_t length = 0;
  int32_t request_id = 0;
  int32_t response_to = 0;
  int32_t op_code = 0;
};

// Reads the header from the first kHeaderSize bytes of `p`.
MessageHeader DecodeHeader(const uint8_t* p);

// Checks a header before its body is read: the length covers at least the
// header and at most `max_size` bytes, and the opcode is one a client sends
// (OP_MSG, OP_QUERY, OP_COMPRESSED), so that garbage is refused before a
// body it declares is waited for.
// Errors: ProtocolError (17) naming the length and the limit, or the opcode.
Status CheckHeader(const MessageHeader& h, size_t max_size = kMaxMessageSize);

// The first bytes of a TLS handshake (a record of type handshake, version
// 3.x): a client that connected with TLS to a server that has none.
bool LooksLikeTlsHandshake(const uint8_t* header);

// A request, parsed and checked.
struct Request {
  MessageHeader header;
  // OP_MSG: the sender asks for no reply.
  bool more_to_come = false;
  // OP_MSG: the sender could take an exhaust stream (gatedb never sends one).
  bool exhaust_allowed = false;
  // The command: OP_MSG's body with each document sequence appended as an
  // array field named by its identifier; OP_QUERY's query (unwrapped from
  // $query) with `$db` taken from the collection name.
  Document command;
};

// Parses a whole OP_MSG or OP_QUERY message of `len` bytes (the header's
// length; the header included).  Every length, the checksum when present,
// and every document (ValidateIncoming: bounds, UTF-8, nesting) is checked
// before anything is used.
// Errors: ProtocolError (17) for a framing fault (short message, unknown
// required flag bit, a missing or second body, an unknown section kind, a
// section overrunning the message, a duplicate identifier, a bad checksum,
// an OP_QUERY not addressed to <db>.$cmd, an opcode other than the two);
// InvalidBSON (22) or Overflow (15) for a document.
StatusOr<Request> ParseRequest(const uint8_t* msg, size_t len);

// CRC-32C (Castagnoli) of `len` bytes, as OP_MSG's checksum (Intel ISA-L's
// crc32_iscsi, which picks the SSE4.2 instruction when the CPU has it).
uint32_t Crc32c(const uint8_t* data, size_t len);

// An OP_MSG reply: flags 0, one kind-0 section holding `body`.
std::string BuildMsgReply(int32_t request_id, int32_t response_to, const bson_t* body);
// An OP_REPLY holding the one document `doc` (for OP_QUERY's handshake).
std::string BuildOpReply(int32_t request_id, int32_t response_to, const bson_t* doc);

// Little-endian helpers, exposed for the tests and the fuzz target.
int32_t LoadInt32LE(const uint8_t* p);
void AppendInt32(std::string* out, int32_t v);
void AppendHeader(std::string* out, int32_t length, int32_t request_id, int32_t response_to, int32_t op_code);

}  // namespace server
}  // namespace gatedb

#endif  // GATEDB_API_SERVER_WIRE_MESSAGE_H_
