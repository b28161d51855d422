// A raw-socket client for the wire server's tests: it sends whatever bytes
// a test builds (good frames and hostile ones) and reads replies with a
// time limit, so a server that hangs fails the test instead of the run.
#ifndef GATEDB_TESTS_SERVER_WIRE_TEST_CLIENT_H_
#define GATEDB_TESTS_SERVER_WIRE_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/server/wire_message.h"
#include "gatedb/document.h"

namespace gatedb {
namespace test {

class WireClient {
 public:
  WireClient() = default;
  ~WireClient() { Close(); }
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;
  WireClient(WireClient&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  bool ConnectTcp(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  bool ConnectUnix(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads exactly n bytes within timeout_ms; false on EOF, error or timeout.
  bool RecvExactly(size_t n, std::string* out, int timeout_ms) {
    out->clear();
    while (out->size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char buf[65536];
      ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out->size()), 0);
      if (got <= 0) return false;
      out->append(buf, static_cast<size_t>(got));
    }
    return true;
  }
  // One whole reply message (header included), or nullopt.
  std::optional<std::string> RecvMessage(int timeout_ms = 10000) {
    std::string header, body;
    if (!RecvExactly(server::kHeaderSize, &header, timeout_ms)) return std::nullopt;
    int32_t len = server::LoadInt32LE(reinterpret_cast<const uint8_t*>(header.data()));
    if (len < 16 || len > 64 * 1024 * 1024) return std::nullopt;
    if (!RecvExactly(static_cast<size_t>(len) - server::kHeaderSize, &body, timeout_ms)) return std::nullopt;
    return header + body;
  }
  // True when the server closed the connection (EOF or reset) within timeout_ms.
  bool ClosedByPeer(int timeout_ms = 10000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// An OP_MSG carrying `body` (flags as given) and optional document sequence.
inline std::string OpMsg(int32_t request_id, const bson_t* body, uint32_t flags = 0,
                         const std::string& seq_id = "", const std::vector<Document>& seq = {}) {
  std::string payload;
  server::AppendInt32(&payload, static_cast<int32_t>(flags));
  payload.push_back('\0');
  payload.append(reinterpret_cast<const char*>(bson_get_data(body)), body->len);
  if (!seq_id.empty()) {
    std::string sec;
    sec.append(seq_id);
    sec.push_back('\0');
    for (const Document& d : seq) sec.append(reinterpret_cast<const char*>(bson_get_data(d.bson())), d.bson()->len);
    payload.push_back('\1');
    server::AppendInt32(&payload, static_cast<int32_t>(sec.size() + 4));
    payload.append(sec);
  }
  bool checksum = (flags & server::kChecksumPresent) != 0;
  std::string out;
  int32_t len = static_cast<int32_t>(server::kHeaderSize + payload.size() + (checksum ? 4 : 0));
  server::AppendHeader(&out, len, request_id, 0, server::kOpMsg);
  out.append(payload);
  if (checksum) {
    uint32_t crc = server::Crc32c(reinterpret_cast<const uint8_t*>(out.data()), out.size());
    server::AppendInt32(&out, static_cast<int32_t>(crc));
  }
  return out;
}

// An OP_QUERY of `q` (and an optional field selector) on `ns`.
inline std::string OpQuery(const std::string& ns, const bson_t* q, const bson_t* fields = nullptr,
                           int32_t request_id = 3) {
  std::string payload;
  server::AppendInt32(&payload, 0);
  payload.append(ns);
  payload.push_back('\0');
  server::AppendInt32(&payload, 0);
  server::AppendInt32(&payload, -1);
  payload.append(reinterpret_cast<const char*>(bson_get_data(q)), q->len);
  if (fields) payload.append(reinterpret_cast<const char*>(bson_get_data(fields)), fields->len);
  std::string out;
  server::AppendHeader(&out, static_cast<int32_t>(server::kHeaderSize + payload.size()), request_id, 0,
                       server::kOpQuery);
  return out + payload;
}

// The body of an OP_MSG reply (flags 0, one kind-0 section); empty when the
// bytes are not such a reply.
inline Document MsgBody(const std::string& msg) {
  if (msg.size() < server::kHeaderSize + 5 + 5) return Document();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(msg.data());
  if (server::LoadInt32LE(p + 12) != server::kOpMsg || p[20] != 0) return Document();
  auto d = Document::FromBytes(p + 21, msg.size() - 21);
  return d.ok() ? std::move(*d) : Document();
}

// The first document of an OP_REPLY; empty when the bytes are not one.
inline Document OpReplyDoc(const std::string& msg) {
  if (msg.size() < server::kHeaderSize + 20 + 5) return Document();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(msg.data());
  if (server::LoadInt32LE(p + 12) != server::kOpReply) return Document();
  auto d = Document::FromBytes(p + 36, msg.size() - 36);
  return d.ok() ? std::move(*d) : Document();
}

}  // namespace test
}  // namespace gatedb

#endif  // GATEDB_TESTS_SERVER_WIRE_TEST_CLIENT_H_
