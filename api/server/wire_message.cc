#include "api/server/wire_message.h"

#include <isa-l/crc.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "engine/document/validate.h"

namespace gatedb {
namespace server {

int32_t LoadInt32LE(const uint8_t* p) {
  uint32_t v = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
               static_cast<uint32_t>(p[3]) << 24;
  return static_cast<int32_t>(v);
}

namespace {

int32_t LoadInt32(const uint8_t* p) { return LoadInt32LE(p); }

Status Protocol(std::string msg) { return Status(ErrorCode::kProtocolError, std::move(msg)); }

// A cursor over the message's bytes that never reads past `end`.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  bool ReadInt32(int32_t* v) {
    if (remaining() < 4) return false;
    *v = LoadInt32(p_);
    p_ += 4;
    return true;
  }
  bool ReadByte(uint8_t* v) {
    if (remaining() < 1) return false;
    *v = *p_++;
    return true;
  }
  // A NUL-terminated string inside the bounds.
  bool ReadCString(std::string_view* s) {
    const void* nul = std::memchr(p_, 0, remaining());
    if (nul == nullptr) return false;
    const uint8_t* z = static_cast<const uint8_t*>(nul);
    *s = std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(z - p_));
    p_ = z + 1;
    return true;
  }
  // One BSON document: its declared length must fit, then every byte of it
  // is checked.
  Status ReadDocument(std::string_view what, const uint8_t** data, size_t* len) {
    if (remaining() < 5) return Protocol(std::string(what) + " is truncated");
    int32_t n = LoadInt32(p_);
    if (n < 5 || static_cast<size_t>(n) > remaining()) {
      return Protocol(std::string(what) + " declares " + std::to_string(n) + " bytes where " +
                      std::to_string(remaining()) + " remain");
    }
    RETURN_IF_ERROR(ValidateIncoming(p_, static_cast<size_t>(n)));
    *data = p_;
    *len = static_cast<size_t>(n);
    p_ += n;
    return Status::OK();
  }
  void Skip(size_t n) { p_ += n; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

struct Sequence {
  std::string_view identifier;
  std::vector<std::pair<const uint8_t*, size_t>> docs;
};

StatusOr<Request> ParseMsg(const MessageHeader& h, const uint8_t* msg, size_t len) {
  Request req;
  req.header = h;
  Reader r(msg + kHeaderSize, msg + len);
  int32_t raw_flags = 0;
  if (!r.ReadInt32(&raw_flags)) return Protocol("OP_MSG is too short for its flag bits");
  uint32_t flags = static_cast<uint32_t>(raw_flags);
  // Bits 0-15 are required: a receiver that does not know one must refuse.
  uint32_t unknown_required = flags & 0xFFFFu & ~(kChecksumPresent | kMoreToCome);
  if (unknown_required != 0) {
    return Protocol("OP_MSG has unknown required flag bits: " + std::to_string(unknown_required));
  }
  req.more_to_come = (flags & kMoreToCome) != 0;
  req.exhaust_allowed = (flags & kExhaustAllowed) != 0;
  const uint8_t* end = msg + len;
  if (flags & kChecksumPresent) {
    if (r.remaining() < 4) return Protocol("OP_MSG has checksumPresent but no room for the checksum");
    end -= 4;
    uint32_t want = static_cast<uint32_t>(LoadInt32(end));
    uint32_t got = Crc32c(msg, len - 4);
    if (want != got) return Protocol("OP_MSG checksum mismatch");
  }
  Reader s(r.pos(), end);
  const uint8_t* body = nullptr;
  size_t body_len = 0;
  std::vector<Sequence> seqs;
  while (s.remaining() > 0) {
    uint8_t kind = 0;
    s.ReadByte(&kind);
    if (kind == 0) {
      if (body != nullptr) return Protocol("OP_MSG has more than one body section (kind 0)");
      RETURN_IF_ERROR(s.ReadDocument("the OP_MSG body", &body, &body_len));
    } else if (kind == 1) {
      int32_t size = 0;
      if (!s.ReadInt32(&size)) return Protocol("a document sequence (kind 1) is truncated");
      if (size < 5 || static_cast<size_t>(size) - 4 > s.remaining()) {
        return Protocol("a document sequence declares " + std::to_string(size) + " bytes where " +
                        std::to_string(s.remaining() + 4) + " remain");
      }
      Reader sec(s.pos(), s.pos() + (size - 4));
      s.Skip(static_cast<size_t>(size) - 4);
      Sequence seq;
      if (!sec.ReadCString(&seq.identifier)) return Protocol("a document sequence's identifier is not terminated");
      if (seq.identifier.empty()) return Protocol("a document sequence has an empty identifier");
      // The identifier becomes a field name of the command.
      if (!bson_utf8_validate(seq.identifier.data(), seq.identifier.size(), false)) {
        return Status(ErrorCode::kInvalidBSON, "a document sequence's identifier is not valid UTF-8");
      }
      while (sec.remaining() > 0) {
        const uint8_t* d = nullptr;
        size_t n = 0;
        RETURN_IF_ERROR(sec.ReadDocument("a document in sequence '" + std::string(seq.identifier) + "'", &d, &n));
        seq.docs.emplace_back(d, n);
      }
      for (const Sequence& other : seqs) {
        if (other.identifier == seq.identifier) {
          return Protocol("duplicate document sequence '" + std::string(seq.identifier) + "'");
        }
      }
      seqs.push_back(std::move(seq));
    } else {
      return Protocol("OP_MSG has an unknown section kind " + std::to_string(kind));
    }
  }
  if (body == nullptr) return Protocol("OP_MSG has no body section (kind 0)");
  bson_t b;
  bson_init_static(&b, body, body_len);  // validated by ReadDocument
  if (seqs.empty()) {
    req.command = Document::Copy(&b);
    return req;
  }
  for (const Sequence& seq : seqs) {
    bson_iter_t it;
    std::string key(seq.identifier);
    if (bson_iter_init_find(&it, &b, key.c_str())) {
      return Protocol("document sequence '" + key + "' duplicates a field of the body");
    }
  }
  bson_t* out = bson_sized_new(len);
  bson_concat(out, &b);
  for (const Sequence& seq : seqs) {
    bson_t arr;
    bson_append_array_begin(out, seq.identifier.data(), static_cast<int>(seq.identifier.size()), &arr);
    char keybuf[16];
    uint32_t i = 0;
    for (const auto& [d, n] : seq.docs) {
      const char* k;
      size_t klen = bson_uint32_to_string(i++, &k, keybuf, sizeof keybuf);
      bson_t doc;
      bson_init_static(&doc, d, n);
      bson_append_document(&arr, k, static_cast<int>(klen), &doc);
    }
    bson_append_array_end(out, &arr);
  }
  req.command = Document::Adopt(out);
  return req;
}

StatusOr<Request> ParseQuery(const MessageHeader& h, const uint8_t* msg, size_t len) {
  Request req;
  req.header = h;
  Reader r(msg + kHeaderSize, msg + len);
  int32_t flags = 0, skip = 0, to_return = 0;
  std::string_view ns;
  if (!r.ReadInt32(&flags)) return Protocol("OP_QUERY is too short for its flags");
  if (!r.ReadCString(&ns)) return Protocol("OP_QUERY's collection name is not terminated");
  if (!r.ReadInt32(&skip) || !r.ReadInt32(&to_return)) return Protocol("OP_QUERY is truncated");
  const uint8_t* q = nullptr;
  size_t qlen = 0;
  RETURN_IF_ERROR(r.ReadDocument("the OP_QUERY query", &q, &qlen));
  if (r.remaining() > 0) {
    const uint8_t* f = nullptr;
    size_t flen = 0;
    RETURN_IF_ERROR(r.ReadDocument("the OP_QUERY field selector", &f, &flen));
    if (r.remaining() > 0) return Protocol("OP_QUERY has bytes after its field selector");
  }
  constexpr std::string_view kCmd = ".$cmd";
  if (ns.size() <= kCmd.size() || ns.substr(ns.size() - kCmd.size()) != kCmd) {
    return Protocol("OP_QUERY is supported only for commands (<db>.$cmd), not '" + std::string(ns) + "'");
  }
  std::string db(ns.substr(0, ns.size() - kCmd.size()));
  // The database name becomes the command's $db string.
  if (!bson_utf8_validate(db.data(), db.size(), false)) {
    return Status(ErrorCode::kInvalidBSON, "OP_QUERY's collection name is not valid UTF-8");
  }
  bson_t query;
  bson_init_static(&query, q, qlen);
  // The legacy wrapped form {$query: {...}, $readPreference: ...}.
  bson_iter_t it;
  bson_t inner;
  const bson_t* cmd = &query;
  if (bson_iter_init(&it, &query) && bson_iter_next(&it) &&
      (std::strcmp(bson_iter_key(&it), "$query") == 0 || std::strcmp(bson_iter_key(&it), "query") == 0) &&
      BSON_ITER_HOLDS_DOCUMENT(&it)) {
    uint32_t n = 0;
    const uint8_t* d = nullptr;
    bson_iter_document(&it, &n, &d);
    bson_init_static(&inner, d, n);
    cmd = &inner;
  }
  bson_t* out = bson_sized_new(qlen + db.size() + 16);
  bson_iter_t f;
  bson_iter_init(&f, cmd);
  while (bson_iter_next(&f)) {
    if (std::strcmp(bson_iter_key(&f), "$db") == 0) continue;
    bson_append_iter(out, bson_iter_key(&f), static_cast<int>(bson_iter_key_len(&f)), &f);
  }
  bson_append_utf8(out, "$db", 3, db.data(), static_cast<int>(db.size()));
  req.command = Document::Adopt(out);
  return req;
}

}  // namespace

MessageHeader DecodeHeader(const uint8_t* p) {
  MessageHeader h;
  h.length = LoadInt32(p);
  h.request_id = LoadInt32(p + 4);
  h.response_to = LoadInt32(p + 8);
  h.op_code = LoadInt32(p + 12);
  return h;
}

Status CheckHeader(const MessageHeader& h, size_t max_size) {
  if (h.length < static_cast<int32_t>(kHeaderSize)) {
    return Protocol("message length " + std::to_string(h.length) + " is shorter than the 16-byte header");
  }
  if (static_cast<size_t>(h.length) > max_size) {
    return Protocol("message length " + std::to_string(h.length) + " exceeds the maximum of " +
                    std::to_string(max_size) + " bytes");
  }
  if (h.op_code != kOpMsg && h.op_code != kOpQuery && h.op_code != kOpCompressed) {
    return Protocol("unsupported opcode " + std::to_string(h.op_code));
  }
  return Status::OK();
}

bool LooksLikeTlsHandshake(const uint8_t* header) {
  // ContentType handshake (22), ProtocolVersion major 3, minor 0..4, then a
  // big-endian record length and HandshakeType client_hello (1).
  return header[0] == 0x16 && header[1] == 0x03 && header[2] <= 0x04 && header[5] == 0x01;
}

StatusOr<Request> ParseRequest(const uint8_t* msg, size_t len) {
  if (len < kHeaderSize) return Protocol("message is shorter than the 16-byte header");
  MessageHeader h = DecodeHeader(msg);
  if (h.length < 0 || static_cast<size_t>(h.length) != len) {
    return Protocol("message length " + std::to_string(h.length) + " does not match the " + std::to_string(len) +
                    " bytes received");
  }
  switch (h.op_code) {
    case kOpMsg:
      return ParseMsg(h, msg, len);
    case kOpQuery:
      return ParseQuery(h, msg, len);
    default:
      return Protocol("unsupported opcode " + std::to_string(h.op_code));
  }
}

uint32_t Crc32c(const uint8_t* data, size_t len) {
  uint32_t crc = 0xFFFFFFFFu;
  // crc32_iscsi takes an int length: feed it in chunks.
  while (len > 0) {
    size_t n = len > (1u << 30) ? (1u << 30) : len;
    crc = crc32_iscsi(const_cast<unsigned char*>(data), static_cast<int>(n), crc);
    data += n;
    len -= n;
  }
  return ~crc;
}

void AppendInt32(std::string* out, int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  char b[4] = {static_cast<char>(u & 0xFF), static_cast<char>((u >> 8) & 0xFF), static_cast<char>((u >> 16) & 0xFF),
               static_cast<char>((u >> 24) & 0xFF)};
  out->append(b, 4);
}

void AppendHeader(std::string* out, int32_t length, int32_t request_id, int32_t response_to, int32_t op_code) {
  AppendInt32(out, length);
  AppendInt32(out, request_id);
  AppendInt32(out, response_to);
  AppendInt32(out, op_code);
}

std::string BuildMsgReply(int32_t request_id, int32_t response_to, const bson_t* body) {
  std::string out;
  size_t len = kHeaderSize + 4 + 1 + body->len;
  out.reserve(len);
  AppendHeader(&out, static_cast<int32_t>(len), request_id, response_to, kOpMsg);
  AppendInt32(&out, 0);
  out.push_back('\0');
  out.append(reinterpret_cast<const char*>(bson_get_data(body)), body->len);
  return out;
}

std::string BuildOpReply(int32_t request_id, int32_t response_to, const bson_t* doc) {
  std::string out;
  size_t len = kHeaderSize + 4 + 8 + 4 + 4 + doc->len;
  out.reserve(len);
  AppendHeader(&out, static_cast<int32_t>(len), request_id, response_to, kOpReply);
  AppendInt32(&out, 0);  // responseFlags
  AppendInt32(&out, 0);  // cursorID (int64)
  AppendInt32(&out, 0);
  AppendInt32(&out, 0);  // startingFrom
  AppendInt32(&out, 1);  // numberReturned
  out.append(reinterpret_cast<const char*>(bson_get_data(doc)), doc->len);
  return out;
}

}  // namespace server
}  // namespace gatedb
