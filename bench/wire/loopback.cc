#include "loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace wire_bench {

namespace {

constexpr size_t kHeader = 16;
constexpr int32_t kMaxMessage = 48000000;
constexpr int32_t kOpMsgCode = 2013;
constexpr int32_t kOpQueryCode = 2004;

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The first key of an OP_MSG's body (the command name), when the body is
// the first section (libmongoc puts it first).
std::string CommandName(const uint8_t* m, size_t n) {
  int32_t op = LoadLE32(m + 12);
  if (op == kOpQueryCode) return "(OP_QUERY)";
  if (op != kOpMsgCode || n < kHeader + 4 + 1 + 5 + 2 || m[kHeader + 4] != 0) return "";
  const uint8_t* body = m + kHeader + 5;
  size_t key_start = 5;  // int32 length, type byte
  std::string key;
  for (size_t i = key_start; kHeader + 5 + i < n && body[i] != 0; ++i) key.push_back(static_cast<char>(body[i]));
  return key;
}

}  // namespace

int32_t LoadLE32(const uint8_t* p) {
  return static_cast<int32_t>(static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                              static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
}

void StoreLE32(uint8_t* p, int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  p[0] = static_cast<uint8_t>(u);
  p[1] = static_cast<uint8_t>(u >> 8);
  p[2] = static_cast<uint8_t>(u >> 16);
  p[3] = static_cast<uint8_t>(u >> 24);
}

long ReadMessage(int fd, std::vector<uint8_t>* buf, bool exact) {
  if (buf->size() < 64 * 1024) buf->resize(64 * 1024);
  size_t have = 0;
  size_t want = kHeader;
  while (have < want) {
    size_t room = exact ? want - have : buf->size() - have;
    ssize_t n = ::recv(fd, buf->data() + have, room, 0);
    if (n == 0) return have == 0 ? 0 : -1;
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    have += static_cast<size_t>(n);
    if (want == kHeader && have >= kHeader) {
      int32_t len = LoadLE32(buf->data());
      if (len < static_cast<int32_t>(kHeader) || len > kMaxMessage) return -1;
      want = static_cast<size_t>(len);
      if (buf->size() < want) buf->resize(want);
    }
  }
  // One request in flight per connection: nothing past the message.
  return have == want ? static_cast<long>(want) : -1;
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int ConnectLoopback(int port, std::string* err) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = Errno("socket");
    return -1;
  }
  sockaddr_in a = Loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    *err = Errno("connect");
    ::close(fd);
    return -1;
  }
  NoDelay(fd);
  return fd;
}

int ListenLoopback(int* port, std::string* err) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = Errno("socket");
    return -1;
  }
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    *err = Errno("bind/listen");
    ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// RawClient.

RawClient::~RawClient() { CloseFd(&fd_); }

bool RawClient::Connect(int port, std::string* err) {
  CloseFd(&fd_);
  fd_ = ConnectLoopback(port, err);
  return fd_ >= 0;
}

bool RawClient::RoundTrip(const std::string& request, std::string* err) {
  if (!WriteAll(fd_, request.data(), request.size())) {
    *err = Errno("send");
    return false;
  }
  long n = ReadMessage(fd_, &buf_);
  if (n <= 0) {
    *err = n == 0 ? "the server closed the connection" : "bad reply frame or recv error";
    return false;
  }
  reply_size_ = static_cast<size_t>(n);
  return true;
}

// EchoServer.

std::unique_ptr<EchoServer> EchoServer::Start(std::string reply, std::string* err) {
  if (reply.size() < kHeader) {
    *err = "the canned reply is shorter than a header";
    return nullptr;
  }
  std::unique_ptr<EchoServer> s(new EchoServer());
  s->reply_ = std::move(reply);
  s->listen_fd_ = ListenLoopback(&s->port_, err);
  if (s->listen_fd_ < 0) return nullptr;
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

void EchoServer::AcceptLoop() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    NoDelay(fd);
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    // Connections whose client has gone: join their threads now.
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        CloseFd(&(*it)->fd);
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    Conn* raw = c.get();
    c->thread = std::thread([this, raw] { Serve(raw); });
    conns_.push_back(std::move(c));
  }
}

void EchoServer::Serve(Conn* c) {
  std::vector<uint8_t> buf;
  std::string out = reply_;
  for (;;) {
    long n = ReadMessage(c->fd, &buf);
    if (n <= 0) break;
    StoreLE32(reinterpret_cast<uint8_t*>(&out[8]), LoadLE32(buf.data() + 4));  // responseTo = requestID
    if (!WriteAll(c->fd, out.data(), out.size())) break;
  }
  c->done = true;
}

EchoServer::~EchoServer() {
  stopping_ = true;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  if (acceptor_.joinable()) acceptor_.join();
  CloseFd(&listen_fd_);
  std::lock_guard<std::mutex> l(mu_);
  for (auto& c : conns_) {
    if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
  }
  for (auto& c : conns_) {
    c->thread.join();
    CloseFd(&c->fd);
  }
  conns_.clear();
}

// RecordingProxy.

std::unique_ptr<RecordingProxy> RecordingProxy::Start(int target_port, std::string* err) {
  std::unique_ptr<RecordingProxy> p(new RecordingProxy());
  p->target_port_ = target_port;
  p->listen_fd_ = ListenLoopback(&p->port_, err);
  if (p->listen_fd_ < 0) return nullptr;
  p->acceptor_ = std::thread([self = p.get()] {
    int c = ::accept4(self->listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    NoDelay(c);
    std::string ignored;
    int s = ConnectLoopback(self->target_port_, &ignored);
    if (s < 0) {
      ::close(c);
      return;
    }
    {
      std::lock_guard<std::mutex> l(self->mu_);
      self->client_fd_ = c;
      self->server_fd_ = s;
    }
    self->back_ = std::thread([self, c, s] { self->Pump(s, c, false); });
    self->Pump(c, s, true);
  });
  return p;
}

void RecordingProxy::Pump(int from, int to, bool to_server) {
  std::vector<uint8_t> buf;
  for (;;) {
    long n = ReadMessage(from, &buf, /*exact=*/true);
    if (n <= 0) break;
    SeenMessage m;
    m.to_server = to_server;
    m.size = static_cast<size_t>(n);
    m.op_code = LoadLE32(buf.data() + 12);
    m.command = CommandName(buf.data(), m.size);
    m.bytes.assign(buf.data(), buf.data() + n);
    {
      // Recorded before it is forwarded, so a reply is never seen before its request.
      std::lock_guard<std::mutex> l(mu_);
      seen_.push_back(std::move(m));
    }
    if (!WriteAll(to, buf.data(), static_cast<size_t>(n))) break;
  }
  ::shutdown(to, SHUT_WR);  // the other side sees the close
}

std::vector<SeenMessage> RecordingProxy::Seen() {
  std::lock_guard<std::mutex> l(mu_);
  return seen_;
}

RecordingProxy::~RecordingProxy() {
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (client_fd_ >= 0) ::shutdown(client_fd_, SHUT_RDWR);
    if (server_fd_ >= 0) ::shutdown(server_fd_, SHUT_RDWR);
  }
  if (acceptor_.joinable()) acceptor_.join();
  if (back_.joinable()) back_.join();
  CloseFd(&listen_fd_);
  CloseFd(&client_fd_);
  CloseFd(&server_fd_);
}

}  // namespace wire_bench
