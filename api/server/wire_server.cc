#include "api/server/wire_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <thread>
#include <type_traits>

#include "api/commands/command_dispatcher.h"
#include "api/commands/command_util.h"
#include "api/server/wire_message.h"
#include "api/src/database_rep.h"
#include "engine/util/mutex.h"

namespace gatedb {
namespace server {

namespace {

using asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;
using TlsStream = asio::ssl::stream<tcp::socket>;

// Whether a connection's stream is TLS (then it handshakes first).
template <typename Stream>
struct IsTls : std::false_type {};
template <typename Next>
struct IsTls<asio::ssl::stream<Next>> : std::true_type {};

std::string NowIso() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string EndpointString(const tcp::endpoint& e) {
  asio::ip::address a = e.address();
  if (a.is_v6()) return "[" + a.to_string() + "]:" + std::to_string(e.port());
  return a.to_string() + ":" + std::to_string(e.port());
}

// The commands an OP_QUERY may carry: only the handshake, as MongoDB 5.1+.
bool IsHandshake(const bson_t* cmd) {
  bson_iter_t it;
  if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it)) return false;
  const char* k = bson_iter_key(&it);
  return std::strcmp(k, "hello") == 0 || std::strcmp(k, "isMaster") == 0 || std::strcmp(k, "ismaster") == 0;
}

std::string FirstKey(const bson_t* cmd) {
  bson_iter_t it;
  if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it)) return "";
  return bson_iter_key(&it);
}

Document ErrorDoc(const Status& s) {
  bson_t* b = bson_new();
  commands::AppendError(s, b);
  return Document::Adopt(b);
}

class Connection;

}  // namespace

struct WireServer::Impl final : public ServerInfo {
  Database* db = nullptr;
  CommandDispatcher* dispatcher = nullptr;
  ServerOptions opts;

  // One io_context per I/O thread: a connection lives on one of them, so
  // its handlers never hop between I/O threads.  ios[0] also runs the
  // listeners and the deadline sweep.
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> works;
  std::atomic<size_t> next_io{0};
  std::unique_ptr<asio::steady_timer> sweep_timer;
  std::unique_ptr<asio::thread_pool> workers;
  std::vector<std::thread> io_threads;
  std::vector<std::unique_ptr<tcp::acceptor>> tcp_acceptors;
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_acceptor;
  // Set when the TCP listeners require TLS: one context for every
  // connection, configured once in Start (ConfigureTls).
  std::unique_ptr<asio::ssl::context> tls;
  std::vector<std::string> listening;
  int port = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  std::atomic<bool> stopping{false};
  bool stopped = false;
  std::atomic<int64_t> next_conn_id{1};
  std::atomic<int32_t> next_reply_id{1};
  std::atomic<uint64_t> total_created{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> requests{0};

  mutable Mutex conns_mu;
  CondVar conns_cv;
  std::map<int64_t, std::weak_ptr<Connection>> conns GATEDB_GUARDED_BY(conns_mu);

  mutable Mutex log_mu;
  std::deque<std::string> recent GATEDB_GUARDED_BY(log_mu);

  // Change streams' getMores that found nothing yet.  A waiting stream holds
  // no worker: its connection is parked here, with its deadline and the
  // journal's last seq before it looked, and the waiter thread sends it back
  // to a worker when the journal grows past that, or answers it with its
  // empty batch at the deadline (or at shutdown).
  struct Parked {
    std::shared_ptr<Connection> conn;
    int64_t deadline_ms = 0;
    uint64_t seen_seq = 0;
  };
  Mutex park_mu;
  CondVar park_cv;
  std::vector<Parked> parked GATEDB_GUARDED_BY(park_mu);
  bool waiter_stop GATEDB_GUARDED_BY(park_mu) = false;
  std::thread waiter;
  void Park(Parked p) GATEDB_EXCLUDES(park_mu) {
    MutexLock l(&park_mu);
    parked.push_back(std::move(p));
    park_cv.SignalAll();
  }
  void WaiterLoop() GATEDB_EXCLUDES(park_mu);
  uint64_t LastSeq() const { return db->rep()->db->LastJournalSeq(); }

  void Log(const std::string& msg) {
    std::string line = NowIso() + " " + msg;
    MutexLock l(&log_mu);
    recent.push_back(line);
    if (recent.size() > 1024) recent.pop_front();
    if (opts.log) {
      opts.log(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  size_t OpenCount() const {
    MutexLock l(&conns_mu);
    return conns.size();
  }

  void Register(int64_t id, const std::shared_ptr<Connection>& c) {
    MutexLock l(&conns_mu);
    conns[id] = c;
  }
  size_t Unregister(int64_t id) {
    MutexLock l(&conns_mu);
    conns.erase(id);
    conns_cv.SignalAll();
    return conns.size();
  }

  // The connections open now (for the sweep and Stop).
  std::vector<std::shared_ptr<Connection>> Live() const {
    std::vector<std::shared_ptr<Connection>> live;
    MutexLock l(&conns_mu);
    live.reserve(conns.size());
    for (const auto& entry : conns) {
      if (auto c = entry.second.lock()) live.push_back(std::move(c));
    }
    return live;
  }

  template <typename Acceptor>
  void Accept(Acceptor* acceptor);

  // Every few milliseconds: close the connections whose current wait
  // (idle, a message's read, a reply's write) is past its deadline.
  void ScheduleSweep();

  // ServerInfo.
  void AppendServerStatus(bson_t* reply) const override {
    double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    BSON_APPEND_DOUBLE(reply, "uptime", up);
    BSON_APPEND_INT64(reply, "uptimeMillis", static_cast<int64_t>(up * 1000));
    BSON_APPEND_INT64(reply, "uptimeEstimate", static_cast<int64_t>(up));
    size_t open = OpenCount();
    bson_t c, n;
    BSON_APPEND_DOCUMENT_BEGIN(reply, "connections", &c);
    BSON_APPEND_INT32(&c, "current", static_cast<int32_t>(open));
    BSON_APPEND_INT32(&c, "available",
                      static_cast<int32_t>(opts.max_connections > open ? opts.max_connections - open : 0));
    BSON_APPEND_INT64(&c, "totalCreated", static_cast<int64_t>(total_created.load()));
    BSON_APPEND_INT64(&c, "rejected", static_cast<int64_t>(refused.load()));
    bson_append_document_end(reply, &c);
    BSON_APPEND_DOCUMENT_BEGIN(reply, "network", &n);
    BSON_APPEND_INT64(&n, "bytesIn", static_cast<int64_t>(bytes_in.load()));
    BSON_APPEND_INT64(&n, "bytesOut", static_cast<int64_t>(bytes_out.load()));
    BSON_APPEND_INT64(&n, "numRequests", static_cast<int64_t>(requests.load()));
    bson_append_document_end(reply, &n);
  }

  void AppendCmdLineOpts(bson_t* reply) const override {
    bson_t parsed, net, storage, repl;
    commands::AppendStringArray(reply, "argv", opts.argv);
    BSON_APPEND_DOCUMENT_BEGIN(reply, "parsed", &parsed);
    BSON_APPEND_DOCUMENT_BEGIN(&parsed, "net", &net);
    std::string bind;
    for (const std::string& b : opts.bind) bind += (bind.empty() ? "" : ",") + b;
    BSON_APPEND_UTF8(&net, "bindIp", bind.c_str());
    BSON_APPEND_INT32(&net, "port", port);
    if (!opts.socket_path.empty()) BSON_APPEND_UTF8(&net, "socketPath", opts.socket_path.c_str());
    bson_append_document_end(&parsed, &net);
    BSON_APPEND_DOCUMENT_BEGIN(&parsed, "storage", &storage);
    BSON_APPEND_UTF8(&storage, "dbPath", opts.db_path.c_str());
    bson_append_document_end(&parsed, &storage);
    BSON_APPEND_DOCUMENT_BEGIN(&parsed, "replication", &repl);
    BSON_APPEND_UTF8(&repl, "replSetName", opts.set_name.c_str());
    bson_append_document_end(&parsed, &repl);
    bson_append_document_end(reply, &parsed);
  }

  std::vector<std::string> RecentLog() const override {
    MutexLock l(&log_mu);
    return std::vector<std::string>(recent.begin(), recent.end());
  }
};

namespace {

// One client connection.  Every handler runs on the connection's strand;
// the command itself runs on a worker, which touches only msg_, reply_ and
// close_after_ while state_ is kRunning (nothing on the strand touches them
// then).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;
  virtual void Start() = 0;
  // From any thread: finish what is in flight, then close.
  virtual void RequestStop() = 0;
  // From any thread: close now.
  virtual void ForceClose() = 0;
  // From the deadline sweep: close if the current wait is overdue.
  virtual void Sweep(int64_t now_ms) = 0;
  // A parked getMore (WireServer::Impl::Parked): on a worker, ask again;
  // from the waiter, answer with the empty batch it got last.
  virtual void RunParked() = 0;
  virtual void ReleaseParked() = 0;
};

// Over a Stream: a TCP or Unix socket, or TLS over a TCP socket (TlsStream:
// it handshakes before the first read; closing it closes the socket under
// it).
template <typename Stream>
class StreamConnection final : public Connection {
 public:
  using Socket = Stream;
  static constexpr bool kTls = IsTls<Stream>::value;

  StreamConnection(WireServer::Impl* server, Strand strand, Socket socket, ClientInfo client, bool loopback)
      : server_(server), strand_(strand), socket_(std::move(socket)), client_(std::move(client)) {
    auth_.enforce = server_->opts.auth;
    auth_.loopback = loopback;
    client_.auth = &auth_;
  }

  void Start() override {
    if (!server_->opts.quiet) {
      server_->Log("conn " + std::to_string(client_.connection_id) + " open from " + client_.peer + " (" +
                   std::to_string(server_->OpenCount()) + " open)");
    }
    // The first operation starts on the strand too, like every later one
    // (a RequestStop posted meanwhile may have closed it already).
    auto self = Self();
    asio::post(strand_, [this, self] {
      if (state_ == State::kClosed) return;
      if constexpr (kTls) {
        Handshake();
      } else {
        ReadStart();
      }
    });
  }

  void RequestStop() override {
    auto self = shared_from_this();
    asio::post(strand_, [this, self] {
      stop_requested_ = true;
      // A message being read is finished and answered InterruptedAtShutdown.
      if (state_ == State::kIdle) Close("");
    });
  }

  void ForceClose() override {
    auto self = shared_from_this();
    asio::post(strand_, [this, self] { Close("the server is shutting down"); });
  }

  // From the deadline sweep (another thread): when the current wait has
  // passed its deadline, close on the strand (where it is checked again:
  // the wait may have ended meanwhile).
  void Sweep(int64_t now_ms) override {
    int64_t d = deadline_ms_.load(std::memory_order_relaxed);
    if (d == 0 || now_ms < d) return;
    auto self = Self();
    asio::post(strand_, [this, self] {
      int64_t due = deadline_ms_.load(std::memory_order_relaxed);
      if (state_ == State::kClosed || due == 0 || SteadyMs() < due) return;
      Close(std::string(deadline_what_) + " after " + std::to_string(deadline_limit_) + " ms");
    });
  }

 private:
  enum class State { kIdle, kReading, kRunning, kWriting, kClosed };

  std::shared_ptr<StreamConnection> Self() { return std::static_pointer_cast<StreamConnection>(shared_from_this()); }

  std::string Prefix() const { return "conn " + std::to_string(client_.connection_id) + " from " + client_.peer; }

  // The current wait's deadline (0: none), checked by the server's sweep
  // every few milliseconds rather than by a timer armed per message: that
  // would cost two timerfd calls a request.
  void SetDeadline(int64_t ms, const char* what) {
    deadline_what_ = what;
    deadline_limit_ = ms;
    deadline_ms_.store(ms > 0 ? SteadyMs() + ms : 0, std::memory_order_relaxed);
  }

  // TLS: the handshake, within read_timeout_ms (the sweep closes a late
  // one).  Idle meanwhile: a stop closes it at once.
  void Handshake() {
    state_ = State::kIdle;
    SetDeadline(server_->opts.read_timeout_ms, "TLS handshake timeout");
    auto self = Self();
    socket_.async_handshake(asio::ssl::stream_base::server, [this, self](const asio::error_code& ec) {
      if (state_ == State::kClosed) return;
      if (ec) {
        Close("TLS handshake failed: " + TlsError(ec));
        return;
      }
      if (!server_->opts.quiet) {
        SSL* ssl = socket_.native_handle();
        std::string line = Prefix() + ": " + SSL_get_version(ssl) + " " + SSL_get_cipher_name(ssl);
        if (X509* peer = SSL_get1_peer_certificate(ssl)) {
          char name[256];
          X509_NAME_oneline(X509_get_subject_name(peer), name, sizeof name);
          line += std::string(", client certificate ") + name;
          X509_free(peer);
        }
        server_->Log(line);
      }
      ReadStart();
    });
  }

  // An OpenSSL error, with a hint for the usual cause: a client that does
  // not speak TLS.
  static std::string TlsError(const asio::error_code& ec) {
    std::string m = ec.message();
    if (ec.category() == asio::error::get_ssl_category() &&
        (ERR_GET_REASON(static_cast<unsigned int>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER ||
         ERR_GET_REASON(static_cast<unsigned int>(ec.value())) == SSL_R_HTTP_REQUEST)) {
      m += " (not a TLS client: this server requires TLS, connect with tls=true)";
    }
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) m = "the client closed the connection";
    return m;
  }

  void ReadStart() {
    if (stop_requested_) {
      Close("");
      return;
    }
    state_ = State::kIdle;
    have_ = 0;
    SetDeadline(server_->opts.idle_timeout_ms, "idle timeout");
    ReadHeader();
  }

  void ReadHeader() {
    auto self = Self();
    socket_.async_read_some(asio::buffer(header_ + have_, kHeaderSize - have_),
                            [this, self](const asio::error_code& ec, size_t n) { OnHeaderBytes(ec, n); });
  }

  void OnHeaderBytes(const asio::error_code& ec, size_t n) {
    if (state_ == State::kClosed) return;
    if (ec) {
      Close(ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated
                ? ""
                : "read failed: " + ec.message());
      return;
    }
    server_->bytes_in += n;
    if (have_ == 0 && n > 0) {
      state_ = State::kReading;
      SetDeadline(server_->opts.read_timeout_ms, "read timeout");
    }
    have_ += n;
    if (have_ < kHeaderSize) {
      ReadHeader();
      return;
    }
    MessageHeader h = DecodeHeader(header_);
    Status s = CheckHeader(h, server_->opts.max_message_bytes);
    if (!s.ok()) {
      Close(!kTls && LooksLikeTlsHandshake(header_) ? "a TLS handshake, but this server does not speak TLS "
                                             "(connect without tls=true)"
                                           : s.reason());
      return;
    }
    msg_.resize(static_cast<size_t>(h.length));
    std::memcpy(msg_.data(), header_, kHeaderSize);
    if (msg_.size() == kHeaderSize) {
      OnMessage();
      return;
    }
    auto self = Self();
    asio::async_read(socket_, asio::buffer(msg_.data() + kHeaderSize, msg_.size() - kHeaderSize),
                     [this, self](const asio::error_code& ec, size_t n) {
                       if (state_ == State::kClosed) return;
                       if (ec) {
                         Close(ec == asio::error::eof || ec == asio::ssl::error::stream_truncated
                                   ? "the client closed the connection inside a message"
                                                      : "read failed: " + ec.message());
                         return;
                       }
                       server_->bytes_in += n;
                       OnMessage();
                     });
  }

  void OnMessage() {
    SetDeadline(0, "");
    state_ = State::kRunning;
    ++server_->requests;
    auto self = Self();
    asio::post(*server_->workers, [this, self] {
      if (Execute()) asio::post(strand_, [this, self] { OnExecuted(); });
    });
  }

  // On a worker, while parked: the getMore again.
  void RunParked() override {
    const uint64_t seen = server_->LastSeq();
    Document reply = server_->dispatcher->Run(parked_cmd_.bson(), &client_);
    int64_t ignored = 0;
    if (AwaitsData(parked_cmd_.bson(), reply.bson(), &ignored) && !server_->stopping &&
        SteadyMs() < await_deadline_ms_) {
      parked_reply_ = std::move(reply);
      server_->Park({Self(), await_deadline_ms_, seen});
      return;
    }
    parked_reply_ = std::move(reply);
    ReleaseParked();
  }

  // From the waiter or a worker, while parked: send the last reply.
  void ReleaseParked() override {
    int32_t reply_id = server_->next_reply_id.fetch_add(1, std::memory_order_relaxed);
    reply_ = BuildMsgReply(reply_id, parked_request_id_, parked_reply_.bson());
    parked_cmd_ = Document();
    parked_reply_ = Document();
    auto self = Self();
    asio::post(strand_, [this, self] { OnExecuted(); });
  }

  // A change stream's getMore that answered an empty batch and may wait
  // longer (its maxTimeMS, MongoDB's default 1 s): *wait_ms is how long.
  static bool AwaitsData(const bson_t* cmd, const bson_t* reply, int64_t* wait_ms) {
    bson_iter_t it, c;
    if (FirstKey(cmd) != "getMore") return false;
    if (!bson_iter_init_find(&it, reply, "ok") || !BSON_ITER_HOLDS_NUMBER(&it) || bson_iter_as_double(&it) != 1.0) {
      return false;
    }
    if (!bson_iter_init_find(&it, reply, "cursor") || !BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
    bson_iter_recurse(&it, &c);
    bool token = false, empty = false, open = false;
    while (bson_iter_next(&c)) {
      std::string_view k = bson_iter_key(&c);
      if (k == "postBatchResumeToken") token = true;
      if (k == "nextBatch" && BSON_ITER_HOLDS_ARRAY(&c)) {
        bson_iter_t b;
        empty = bson_iter_recurse(&c, &b) && !bson_iter_next(&b);
      }
      if (k == "id" && BSON_ITER_HOLDS_INT64(&c)) open = bson_iter_int64(&c) != 0;
    }
    if (!token || !empty || !open) return false;
    *wait_ms = 1000;
    if (bson_iter_init_find(&it, cmd, "maxTimeMS") && BSON_ITER_HOLDS_NUMBER(&it)) {
      *wait_ms = bson_iter_as_int64(&it);
    }
    return *wait_ms > 0;
  }

  // On a worker.  False when the command was parked (its reply comes later).
  bool Execute() {
    reply_.clear();
    close_after_.clear();
    MessageHeader h = DecodeHeader(msg_.data());
    int32_t reply_id = server_->next_reply_id.fetch_add(1, std::memory_order_relaxed);
    if (h.op_code == kOpCompressed) {
      // Compression is never offered in the handshake; the inner opcode
      // says which reply the client waits for.
      Document err = ErrorDoc(Status(ErrorCode::kProtocolError,
                                     "OP_COMPRESSED is not supported: the server offers no compression"));
      // OP_COMPRESSED's originalOpcode follows the header.
      int32_t inner = msg_.size() >= kHeaderSize + 4 ? LoadInt32LE(msg_.data() + kHeaderSize) : 0;
      reply_ = inner == kOpQuery ? BuildOpReply(reply_id, h.request_id, err.bson())
                                 : BuildMsgReply(reply_id, h.request_id, err.bson());
      return true;
    }
    StatusOr<Request> req = ParseRequest(msg_.data(), msg_.size());
    std::vector<uint8_t>().swap(msg_);  // a large message's memory goes now
    if (!req.ok()) {
      close_after_ = req.status().reason();
      return true;
    }
    if (server_->stopping) {
      // Arrived after the stop began: not run.  MongoDB's answer, with the
      // label that tells a driver to retry a retryable write elsewhere.
      Document err = ErrorDoc(Status(ErrorCode::kInterruptedAtShutdown, "interrupted at shutdown"));
      if (CommandDispatcher::IsRetryableWrite(req->command.bson())) {
        err = commands::WithErrorLabel(err, "RetryableWriteError");
      }
      reply_ = h.op_code == kOpQuery ? BuildOpReply(reply_id, h.request_id, err.bson())
                                     : BuildMsgReply(reply_id, h.request_id, err.bson());
      return true;
    }
    if (h.op_code == kOpQuery) {
      Document reply = IsHandshake(req->command.bson())
                           ? server_->dispatcher->Run(req->command.bson(), &client_)
                           : ErrorDoc(Status(ErrorCode::kUnsupportedOpQueryCommand,
                                             "Unsupported OP_QUERY command: " + FirstKey(req->command.bson()) +
                                                 ". The client driver may require an upgrade."));
      reply_ = BuildOpReply(reply_id, h.request_id, reply.bson());
      return true;
    }
    const uint64_t seen = server_->LastSeq();
    Document reply = server_->dispatcher->Run(req->command.bson(), &client_);
    if (req->more_to_come) return true;  // the client asked for no reply
    int64_t wait_ms = 0;
    if (AwaitsData(req->command.bson(), reply.bson(), &wait_ms)) {
      parked_cmd_ = std::move(req->command);
      parked_request_id_ = h.request_id;
      parked_reply_ = std::move(reply);
      await_deadline_ms_ = SteadyMs() + wait_ms;
      server_->Park({Self(), await_deadline_ms_, seen});
      return false;
    }
    reply_ = BuildMsgReply(reply_id, h.request_id, reply.bson());
    return true;
  }

  void OnExecuted() {
    if (state_ == State::kClosed) return;
    if (!close_after_.empty()) {
      Close(close_after_);
      return;
    }
    if (reply_.empty()) {
      ReadStart();
      return;
    }
    state_ = State::kWriting;
    SetDeadline(server_->opts.read_timeout_ms, "write timeout");
    auto self = Self();
    asio::async_write(socket_, asio::buffer(reply_), [this, self](const asio::error_code& ec, size_t n) {
      if (state_ == State::kClosed) return;
      if (ec) {
        Close("write failed: " + ec.message());
        return;
      }
      server_->bytes_out += n;
      std::string().swap(reply_);
      ReadStart();
    });
  }

  void Close(const std::string& why) {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    // The reason is logged before the client can see the close.
    if (!why.empty()) server_->Log(Prefix() + ": closing: " + why);
    deadline_ms_.store(0, std::memory_order_relaxed);
    // TLS: no close_notify, the socket under it just closes.
    asio::error_code ignored;
    socket_.lowest_layer().shutdown(asio::socket_base::shutdown_both, ignored);
    socket_.lowest_layer().close(ignored);
    size_t left = server_->Unregister(client_.connection_id);
    if (!server_->opts.quiet) {
      server_->Log("conn " + std::to_string(client_.connection_id) + " closed (" + std::to_string(left) + " open)");
    }
  }

  WireServer::Impl* const server_;
  Strand strand_;
  Socket socket_;
  ClientInfo client_;
  Auth auth_;  // the connection's authentication (client_.auth points here)
  State state_ = State::kIdle;
  std::atomic<int64_t> deadline_ms_{0};  // steady ms; read by the sweep
  const char* deadline_what_ = "";       // on the strand
  int64_t deadline_limit_ = 0;
  bool stop_requested_ = false;
  uint8_t header_[kHeaderSize] = {};
  size_t have_ = 0;
  std::vector<uint8_t> msg_;
  std::string reply_;
  std::string close_after_;
  // While parked (a change stream's getMore waiting for the journal).
  Document parked_cmd_;
  Document parked_reply_;
  int32_t parked_request_id_ = 0;
  int64_t await_deadline_ms_ = 0;
};

// Fills the addresses; returns whether the peer is on this machine (a
// loopback address or the Unix socket, whose mode 0600 admits only the
// server's user).
template <typename Socket>
bool Describe(const Socket& s, ClientInfo* c, const std::string&) {
  asio::error_code ec;
  tcp::endpoint peer = s.remote_endpoint(ec);
  c->peer = ec ? "unknown" : EndpointString(peer);
  tcp::endpoint local = s.local_endpoint(ec);
  c->me = ec ? "127.0.0.1:0" : EndpointString(local);
  return !ec && peer.address().is_loopback();
}

bool Describe(const asio::local::stream_protocol::socket&, ClientInfo* c, const std::string& path) {
  c->peer = "unix:" + path;
  c->me = path;
  return true;
}

// A TCP connection is TLS when the server has a TLS context; a Unix socket's
// is always plaintext.
std::shared_ptr<Connection> NewConnection(WireServer::Impl* s, Strand strand, tcp::socket socket, ClientInfo client,
                                          bool loopback) {
  if (s->tls) {
    return std::make_shared<StreamConnection<TlsStream>>(s, strand, TlsStream(std::move(socket), *s->tls),
                                                         std::move(client), loopback);
  }
  return std::make_shared<StreamConnection<tcp::socket>>(s, strand, std::move(socket), std::move(client), loopback);
}

std::shared_ptr<Connection> NewConnection(WireServer::Impl* s, Strand strand,
                                          asio::local::stream_protocol::socket socket, ClientInfo client,
                                          bool loopback) {
  return std::make_shared<StreamConnection<asio::local::stream_protocol::socket>>(s, strand, std::move(socket),
                                                                                  std::move(client), loopback);
}

}  // namespace

void WireServer::Impl::WaiterLoop() {
  for (;;) {
    std::vector<Parked> rerun, release;
    int64_t wait = 0;
    uint64_t min_seen = 0;
    {
      MutexLock l(&park_mu);
      while (parked.empty() && !waiter_stop) park_cv.Wait(&park_mu);
      if (parked.empty()) return;  // waiter_stop
      const int64_t now = SteadyMs();
      const uint64_t last = LastSeq();
      int64_t nearest = INT64_MAX;
      min_seen = UINT64_MAX;
      std::vector<Parked> keep;
      for (Parked& p : parked) {
        if (stopping || waiter_stop || now >= p.deadline_ms) {
          release.push_back(std::move(p));
        } else if (last > p.seen_seq) {
          rerun.push_back(std::move(p));
        } else {
          nearest = std::min(nearest, p.deadline_ms);
          min_seen = std::min(min_seen, p.seen_seq);
          keep.push_back(std::move(p));
        }
      }
      parked.swap(keep);
      // A getMore parked meanwhile is looked at within this slice.
      if (release.empty() && rerun.empty()) wait = std::min<int64_t>(nearest - now, 50);
    }
    for (Parked& p : release) p.conn->ReleaseParked();
    for (Parked& p : rerun) {
      std::shared_ptr<Connection> c = std::move(p.conn);
      asio::post(*workers, [c] { c->RunParked(); });
    }
    if (wait > 0) db->rep()->db->WaitForJournal(min_seen, wait);
  }
}

void WireServer::Impl::ScheduleSweep() {
  int64_t shortest = opts.read_timeout_ms;
  if (opts.idle_timeout_ms > 0 && opts.idle_timeout_ms < shortest) shortest = opts.idle_timeout_ms;
  int64_t every = std::min<int64_t>(250, std::max<int64_t>(5, shortest / 4));
  sweep_timer->expires_after(std::chrono::milliseconds(every));
  sweep_timer->async_wait([this](const asio::error_code& ec) {
    // Goes on while stopping too: a message still being read keeps its
    // deadline.  Ends when the io_context stops.
    if (ec) return;
    const int64_t now = SteadyMs();
    for (auto& c : Live()) c->Sweep(now);
    ScheduleSweep();
  });
}

template <typename Acceptor>
void WireServer::Impl::Accept(Acceptor* acceptor) {
  using Protocol = typename Acceptor::protocol_type;
  Strand strand = asio::make_strand(*ios[next_io.fetch_add(1) % ios.size()]);
  acceptor->async_accept(strand, [this, acceptor, strand](const asio::error_code& ec,
                                                          typename Protocol::socket socket) {
    if (stopping) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      Log("accept failed: " + ec.message());
      // Out of descriptors, say: try again shortly rather than spin.
      auto t = std::make_shared<asio::steady_timer>(acceptor->get_executor(), std::chrono::milliseconds(100));
      t->async_wait([this, acceptor, t](const asio::error_code&) {
        if (!stopping) Accept(acceptor);
      });
      return;
    }
    ClientInfo client;
    client.connection_id = next_conn_id.fetch_add(1);
    client.set_name = opts.set_name;
    client.server = this;
    client.defer_waits = true;
    const bool loopback = Describe(socket, &client, opts.socket_path);
    if (OpenCount() >= opts.max_connections) {
      ++refused;
      Log("refusing connection from " + client.peer + ": " + std::to_string(opts.max_connections) +
          " connections are open (the limit)");
      asio::error_code ignored;
      socket.close(ignored);
    } else {
      ++total_created;
      const int64_t id = client.connection_id;
      std::shared_ptr<Connection> c = NewConnection(this, strand, std::move(socket), std::move(client), loopback);
      Register(id, c);
      c->Start();
    }
    Accept(acceptor);
  });
}

WireServer::WireServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WireServer::~WireServer() { Stop(); }

const std::vector<std::string>& WireServer::listening() const { return impl_->listening; }
int WireServer::port() const { return impl_->port; }
size_t WireServer::open_connections() const { return impl_->OpenCount(); }
uint64_t WireServer::total_connections() const { return impl_->total_created.load(); }

namespace {

// The addresses `name` stands for: a literal, or "localhost" (both loopbacks).
Status ResolveBind(const std::string& name, std::vector<asio::ip::address>* out) {
  if (name == "localhost") {
    out->push_back(asio::ip::make_address("127.0.0.1"));
    return Status::OK();
  }
  asio::error_code ec;
  asio::ip::address a = asio::ip::make_address(name, ec);
  if (ec) return Status(ErrorCode::kInvalidOptions, "cannot parse the bind address '" + name + "': " + ec.message());
  out->push_back(a);
  return Status::OK();
}

// What went wrong in OpenSSL: `ec` (asio took the first queued error) and
// what is still queued, oldest first, as one line; the queue is left empty.
std::string OpenSslErrors(const asio::error_code& ec = asio::error_code()) {
  std::string out = ec ? ec.message() : "";
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

Status TlsFileError(const std::string& what, const std::string& path, const std::string& why) {
  return Status(ErrorCode::kInvalidOptions, "cannot use " + path + " as " + what + ": " + why);
}

// The server's TLS context: TLS 1.2 or later, the certificate chain and key
// from one PEM file (they must match), and, with a CA file, client
// certificates asked for and verified when presented.
StatusOr<std::unique_ptr<asio::ssl::context>> ConfigureTls(const ServerOptions& o) {
  const std::string& pem = o.tls_certificate_key_file;
  const char* kPem = "the TLS certificate key file (--tlsCertificateKeyFile)";
  const char* kCa = "the TLS CA file (--tlsCAFile)";
  // A missing file is named as such, before OpenSSL's less direct words.
  for (const auto& [what, path] : {std::pair<const char*, const std::string*>{kPem, &pem}, {kCa, &o.tls_ca_file}}) {
    if (path->empty()) continue;
    if (::access(path->c_str(), R_OK) != 0) return TlsFileError(what, *path, std::strerror(errno));
  }
  ERR_clear_error();
  std::unique_ptr<asio::ssl::context> ctx;
  try {
    ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternalError, std::string("cannot make a TLS context: ") + e.what());
  }
  SSL_CTX* native = ctx->native_handle();
  asio::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  if (ec || SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return Status(ErrorCode::kInternalError, "cannot set the TLS protocol versions: " + OpenSslErrors());
  }
  // A session resumed by a client is this server's: without a session id
  // context, OpenSSL fails the handshake of any resumption once client
  // certificates are verified.
  static const unsigned char kSessionContext[] = "gatedb serve";
  if (SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1) != 1) {
    return Status(ErrorCode::kInternalError, "cannot set the TLS session id context: " + OpenSslErrors());
  }
  // An encrypted key is refused rather than asked for on the terminal.
  ctx->set_password_callback([](size_t, asio::ssl::context::password_purpose) { return std::string(); }, ec);
  ctx->use_certificate_chain_file(pem, ec);
  if (ec) return TlsFileError(kPem, pem, "no PEM certificate could be read from it (" + OpenSslErrors(ec) + ")");
  ctx->use_private_key_file(pem, asio::ssl::context::pem, ec);
  if (ec && ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned int>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return TlsFileError(kPem, pem, "its private key does not match its certificate (" + OpenSslErrors(ec) + ")");
  }
  if (ec) {
    return TlsFileError(kPem, pem,
                        "no unencrypted PEM private key could be read from it (" + OpenSslErrors(ec) + ")");
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    return TlsFileError(kPem, pem, "its private key does not match its certificate (" + OpenSslErrors() + ")");
  }
  if (!o.tls_ca_file.empty()) {
    ctx->load_verify_file(o.tls_ca_file, ec);
    if (ec) {
      return TlsFileError(kCa, o.tls_ca_file, "no PEM certificate could be read from it (" + OpenSslErrors(ec) + ")");
    }
    // The authorities are named in the CertificateRequest, so that a client
    // holding several certificates picks one they signed.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.tls_ca_file.c_str());
    if (names == nullptr) {
      return TlsFileError(kCa, o.tls_ca_file, "no PEM certificate could be read from it (" + OpenSslErrors() + ")");
    }
    SSL_CTX_set_client_CA_list(native, names);
    // Verified when presented; a client without one is served
    // (no verify_fail_if_no_peer_cert).
    ctx->set_verify_mode(asio::ssl::verify_peer, ec);
  } else {
    ctx->set_verify_mode(asio::ssl::verify_none, ec);
  }
  if (ec) return Status(ErrorCode::kInternalError, "cannot set the TLS verify mode: " + ec.message());
  ERR_clear_error();
  return ctx;
}

}  // namespace

StatusOr<std::unique_ptr<WireServer>> WireServer::Start(Database* db, ServerOptions options) {
  if (db == nullptr) return Status(ErrorCode::kInvalidOptions, "WireServer needs a database");
  if (options.bind.empty() && options.socket_path.empty()) {
    return Status(ErrorCode::kInvalidOptions, "nothing to listen on: no bind address and no socket");
  }
  if (options.port < 0 || options.port > 65535) {
    return Status(ErrorCode::kInvalidOptions, "port " + std::to_string(options.port) + " is out of range");
  }
  if (options.max_connections == 0 || options.io_threads < 1 || options.worker_threads < 1) {
    return Status(ErrorCode::kInvalidOptions, "max connections and thread counts must be positive");
  }
  std::vector<asio::ip::address> addrs;
  for (const std::string& b : options.bind) RETURN_IF_ERROR(ResolveBind(b, &addrs));
  for (const asio::ip::address& a : addrs) {
    if (!a.is_loopback() && !options.auth && !options.allow_remote_without_auth) {
      return Status(ErrorCode::kInvalidOptions,
                    "refusing to listen on " + a.to_string() +
                        ": without --auth anyone who can reach the address may read and write every database, so "
                        "gatedb serve binds only to loopback addresses and a Unix socket unless --auth (clients "
                        "authenticate with SCRAM-SHA-256) or --allowRemoteNoAuth says otherwise");
    }
  }
  if (!options.tls_ca_file.empty() && options.tls_certificate_key_file.empty()) {
    return Status(ErrorCode::kInvalidOptions,
                  "--tlsCAFile needs --tlsCertificateKeyFile: without a certificate the server does not speak TLS");
  }
  std::unique_ptr<asio::ssl::context> tls;
  if (!options.tls_certificate_key_file.empty()) {
    auto ctx = ConfigureTls(options);
    if (!ctx.ok()) return ctx.status();
    tls = std::move(*ctx);
  }
  const bool remote =
      std::any_of(addrs.begin(), addrs.end(), [](const asio::ip::address& a) { return !a.is_loopback(); });
  auto impl = std::make_unique<Impl>();
  impl->db = db;
  impl->dispatcher = db->rep()->dispatcher.get();
  impl->opts = std::move(options);
  impl->tls = std::move(tls);
  Impl* s = impl.get();
  if (remote && s->opts.auth && !s->tls) {
    s->Log("warning: listening beyond loopback with --auth but without TLS: passwords are protected by "
           "SCRAM-SHA-256, but commands and documents cross the network unencrypted (see --tlsCertificateKeyFile)");
  }
  for (int i = 0; i < s->opts.io_threads; ++i) {
    s->ios.push_back(std::make_unique<asio::io_context>(1));
    s->works.push_back(asio::make_work_guard(*s->ios.back()));
  }
  try {
    int port = s->opts.port;
    for (const asio::ip::address& a : addrs) {
      auto acc = std::make_unique<tcp::acceptor>(asio::make_strand(*s->ios[0]));
      tcp::endpoint ep(a, static_cast<unsigned short>(port));
      asio::error_code ec;
      acc->open(ep.protocol(), ec);
      if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec && a.is_v6()) acc->set_option(asio::ip::v6_only(true), ec);
      if (!ec) acc->bind(ep, ec);
      if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        return Status(ErrorCode::kInternalError, "cannot listen on " + EndpointString(ep) + ": " + ec.message());
      }
      tcp::endpoint bound = acc->local_endpoint(ec);
      port = bound.port();  // port 0 took a free port: the other addresses share it
      s->port = port;
      s->listening.push_back(EndpointString(bound));
      s->tcp_acceptors.push_back(std::move(acc));
    }
    if (!s->opts.socket_path.empty()) {
      const std::string& path = s->opts.socket_path;
      struct stat st;
      if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
          return Status(ErrorCode::kInvalidOptions, "cannot listen on " + path + ": it exists and is not a socket");
        }
        // A socket left by a server that died: remove it, unless one answers.
        asio::local::stream_protocol::socket probe(*s->ios[0]);
        asio::error_code ec;
        probe.connect(asio::local::stream_protocol::endpoint(path), ec);
        if (!ec) return Status(ErrorCode::kInternalError, "cannot listen on " + path + ": another server uses it");
        ::unlink(path.c_str());
      }
      auto acc = std::make_unique<asio::local::stream_protocol::acceptor>(asio::make_strand(*s->ios[0]));
      asio::local::stream_protocol::endpoint ep(path);
      asio::error_code ec;
      acc->open(ep.protocol(), ec);
      // The socket is made 0600 from the start: no moment when others may connect.
      mode_t old = ::umask(0177);
      if (!ec) acc->bind(ep, ec);
      ::umask(old);
      if (!ec && ::chmod(path.c_str(), 0600) != 0) ec = asio::error_code(errno, asio::system_category());
      if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) return Status(ErrorCode::kInternalError, "cannot listen on " + path + ": " + ec.message());
      s->listening.push_back(path);
      s->unix_acceptor = std::move(acc);
    }
    s->workers = std::make_unique<asio::thread_pool>(static_cast<size_t>(s->opts.worker_threads));
    for (auto& acc : s->tcp_acceptors) s->Accept(acc.get());
    if (s->unix_acceptor) s->Accept(s->unix_acceptor.get());
    s->waiter = std::thread([s] { s->WaiterLoop(); });
    s->sweep_timer = std::make_unique<asio::steady_timer>(*s->ios[0]);
    s->ScheduleSweep();
    for (int i = 0; i < s->opts.io_threads; ++i) {
      asio::io_context* io = s->ios[static_cast<size_t>(i)].get();
      s->io_threads.emplace_back([s, io] {
        for (;;) {
          try {
            io->run();
            return;
          } catch (const std::exception& e) {
            // Handlers report errors through error codes; this is a bug.
            s->Log(std::string("internal error in the I/O loop: ") + e.what());
          }
        }
      });
    }
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternalError, std::string("cannot start the server: ") + e.what());
  }
  return std::unique_ptr<WireServer>(new WireServer(std::move(impl)));
}

void WireServer::Stop() {
  Impl* s = impl_.get();
  if (s == nullptr || s->stopped) return;
  s->stopped = true;
  s->stopping = true;
  // No new connections.
  for (auto& acc : s->tcp_acceptors) {
    tcp::acceptor* a = acc.get();
    asio::post(a->get_executor(), [a] {
      asio::error_code ignored;
      a->close(ignored);
    });
  }
  if (s->unix_acceptor) {
    auto* a = s->unix_acceptor.get();
    asio::post(a->get_executor(), [a] {
      asio::error_code ignored;
      a->close(ignored);
    });
  }
  // Idle connections close now; busy ones after their reply is written.
  for (auto& c : s->Live()) c->RequestStop();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(s->opts.shutdown_grace_ms);
  {
    MutexLock l(&s->conns_mu);
    s->conns_cv.WaitUntil(&s->conns_mu, deadline, [s]() GATEDB_REQUIRES(s->conns_mu) { return s->conns.empty(); });
  }
  if (s->OpenCount() > 0) {
    s->Log(std::to_string(s->OpenCount()) + " connections still busy after the shutdown grace period: closing them");
    for (auto& c : s->Live()) c->ForceClose();
    MutexLock l(&s->conns_mu);
    s->conns_cv.WaitFor(&s->conns_mu, std::chrono::seconds(5),
                        [s]() GATEDB_REQUIRES(s->conns_mu) { return s->conns.empty(); });
  }
  // Parked getMores were answered when the stop began (the waiter sees
  // `stopping`); the waiter ends before the workers it posts to.
  if (s->waiter.joinable()) {
    {
      MutexLock l(&s->park_mu);
      s->waiter_stop = true;
      s->park_cv.SignalAll();
    }
    s->waiter.join();
  }
  // Commands still running finish before the Database may close.
  if (s->workers) s->workers->join();
  for (auto& w : s->works) w.reset();
  for (auto& io : s->ios) io->stop();
  for (auto& t : s->io_threads) t.join();
  s->io_threads.clear();
  if (!s->opts.socket_path.empty() && s->unix_acceptor) ::unlink(s->opts.socket_path.c_str());
}

}  // namespace server
}  // namespace gatedb
