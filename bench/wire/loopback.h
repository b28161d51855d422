// Plain blocking loopback sockets for wire_bench (bench/README.md): the raw
// client of BM_WireFindById_Raw and BM_Baseline_TcpEcho, the echo server of
// that baseline, and a recording proxy that measures, once at start-up, the
// messages libmongoc really sends.  POSIX sockets only (no Asio): the echo
// server is meant as the floor of one request/reply over loopback TCP.
//
// Every message is framed by MongoDB's 16-byte header (int32 length, the
// header included; requestID; responseTo; opCode; little-endian).
#ifndef GATEDB_BENCH_WIRE_LOOPBACK_H_
#define GATEDB_BENCH_WIRE_LOOPBACK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wire_bench {

// Little-endian int32 at `p`.
int32_t LoadLE32(const uint8_t* p);
void StoreLE32(uint8_t* p, int32_t v);

// Reads one whole framed message from `fd` into `buf` (which grows as
// needed and is reused between calls).  Returns its length, 0 on EOF before
// a byte, or -1 on an error or a bad length (below 16 or above 48 MB).
// Not `exact`: usually one recv() per message, for a peer that never sends
// a second message before the answer to the first (bytes past the message
// are an error); `exact`: never reads past the message (header, then body).
long ReadMessage(int fd, std::vector<uint8_t>* buf, bool exact = false);

// Writes all `n` bytes (MSG_NOSIGNAL); false on an error.
bool WriteAll(int fd, const void* data, size_t n);

// A connected TCP socket to 127.0.0.1:port with TCP_NODELAY, or -1 (errno
// text in *err).
int ConnectLoopback(int port, std::string* err);

// A listening TCP socket on 127.0.0.1 with a free port (*port), or -1.
int ListenLoopback(int* port, std::string* err);

// One blocking connection: send a whole request, read the whole reply.
class RawClient {
 public:
  RawClient() = default;
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool Connect(int port, std::string* err);
  // Sends `request` (one whole message, written with one send()) and reads
  // one reply; false with *err on an error or EOF.
  bool RoundTrip(const std::string& request, std::string* err);
  const uint8_t* reply() const { return buf_.data(); }
  size_t reply_size() const { return reply_size_; }

 private:
  int fd_ = -1;
  std::vector<uint8_t> buf_;
  size_t reply_size_ = 0;
};

// The TCP echo baseline: a blocking server on 127.0.0.1 (a free port), one
// thread accepting and one thread per accepted connection.  Each thread
// reads one framed message at a time and answers it with `reply`, with the
// reply's responseTo set to the request's requestID (so that a client can
// run the same checks on it as on a real reply), in one send().
class EchoServer {
 public:
  static std::unique_ptr<EchoServer> Start(std::string reply, std::string* err);
  ~EchoServer();  // closes every socket and joins every thread
  int port() const { return port_; }

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  EchoServer() = default;
  void AcceptLoop();
  void Serve(Conn* c);

  std::string reply_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> conns_;  // guarded by mu_
};

// One forwarded message, as seen by RecordingProxy.
struct SeenMessage {
  bool to_server = false;   // client -> server
  size_t size = 0;          // bytes on the wire, header included
  int32_t op_code = 0;
  std::string command;      // OP_MSG: the body's first key ("find", "hello", ...); OP_QUERY: "(OP_QUERY)"
  std::vector<uint8_t> bytes;  // the whole message
};

// A proxy for one connection: 127.0.0.1:port() -> 127.0.0.1:target_port,
// forwarding whole messages both ways and recording each one.  For
// start-up measurements only (not used in timed loops).
class RecordingProxy {
 public:
  static std::unique_ptr<RecordingProxy> Start(int target_port, std::string* err);
  ~RecordingProxy();
  int port() const { return port_; }
  // The messages so far, in the order forwarded.
  std::vector<SeenMessage> Seen();

 private:
  RecordingProxy() = default;
  void Pump(int from, int to, bool to_server);

  int listen_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  int client_fd_ = -1;
  int server_fd_ = -1;
  std::thread acceptor_;
  std::thread back_;
  std::mutex mu_;
  std::vector<SeenMessage> seen_;  // guarded by mu_
};

}  // namespace wire_bench

#endif  // GATEDB_BENCH_WIRE_LOOPBACK_H_
