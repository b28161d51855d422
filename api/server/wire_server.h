// File: api/server/wire_server.h
//
// `gatedb serve`: MongoDB's wire protocol over the one command dispatcher,
// so mongosh and every MongoDB driver can use a gatedb data directory.  The
// server owns no CRUD logic: it frames messages (wire_message.h), keeps a
// ClientInfo per connection, and hands each command to the Database's
// dispatcher, exactly as `gatedb run` does.
//
// Networking is standalone Asio (Debian's libasio-dev): a pool of I/O
// threads runs the sockets, and a separate bounded pool of worker threads
// runs the commands, so a command that waits (a lock, a long scan) holds a
// worker, never the I/O of other connections.  Each connection has one
// request in flight at a time, as MongoDB's own connections do.
//
// Defences (every byte from a socket is hostile):
//  - a declared length below 16 or above max_message_bytes closes the
//    connection before anything is allocated for the body;
//  - a message, once its first byte arrived, must arrive whole within
//    read_timeout_ms (a slow sender is dropped); an idle connection is
//    dropped after idle_timeout_ms (0: never);
//  - a malformed frame (ParseRequest's errors) closes that connection only,
//    with a log line; the server and every other connection go on;
//  - past max_connections, new connections are closed at once, logged.
//
// TLS (OpenSSL through asio::ssl): with tls_certificate_key_file set, every
// TCP listener speaks only TLS (MongoDB's requireTLS), 1.2 or later; the
// Unix socket stays plaintext.  A connection's handshake must finish within
// read_timeout_ms; one that fails or is late closes that connection only.
// The defences above apply to the decrypted messages.
//
// Thread safety: Start/Stop from one thread; everything else is internal.
#ifndef GATEDB_API_SERVER_WIRE_SERVER_H_
#define GATEDB_API_SERVER_WIRE_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gatedb/db.h"
#include "gatedb/status.h"

namespace gatedb {
namespace server {

struct ServerOptions {
  // Addresses to listen on (IPv4 or IPv6 literals, or "localhost").
  std::vector<std::string> bind = {"127.0.0.1"};
  // TCP port; 0 takes a free one.
  int port = 27017;
  // A Unix domain socket to listen on too (mode 0600); empty: none.
  std::string socket_path;
  // `--auth`: every connection authenticates (SCRAM-SHA-256) before it
  // runs anything but the handshake and ping, even while no user exists
  // (then a loopback client may create the first user: MongoDB's localhost
  // exception).  Once users exist, connections authenticate whether or not
  // this is set.
  bool auth = false;
  // Binding to an address that is not loopback is refused unless
  // authentication is enforced (`auth`) or this is set
  // (`--allowRemoteNoAuth`).
  bool allow_remote_without_auth = false;
  // `--tlsCertificateKeyFile`: a PEM file holding the server's certificate
  // (its chain after it) and its unencrypted private key.  Set: every TCP
  // listener requires TLS.  Empty: no TLS.
  std::string tls_certificate_key_file;
  // `--tlsCAFile` (needs a certificate key file): PEM certificates of the
  // authorities client certificates must be signed by.  Set: the server
  // asks for a client certificate and refuses the handshake of a client
  // presenting one that does not verify; a client presenting none is still
  // served (MongoDB's --tlsAllowConnectionsWithoutCertificates) and
  // authenticates as usual.  Empty: client certificates are not asked for.
  std::string tls_ca_file;
  // The replica set the server presents itself as the primary of.
  std::string set_name = "gatedb";
  size_t max_connections = 1000;
  size_t max_message_bytes = 48000000;
  int io_threads = 2;
  int worker_threads = 8;
  int64_t read_timeout_ms = 30000;
  int64_t idle_timeout_ms = 0;
  // How long Stop() waits for in-flight commands and their replies.
  int64_t shutdown_grace_ms = 30000;
  // No per-connection open/close lines (errors are still logged).
  bool quiet = false;
  // For getCmdLineOpts.
  std::vector<std::string> argv;
  std::string db_path;
  // Where log lines go (one call per line, without the newline).
  // Default: standard error.
  std::function<void(const std::string&)> log;
};

class WireServer {
 public:
  // Binds every address (and the socket) and starts serving `db`, which
  // must outlive the server.  Errors: InvalidOptions (an address that does
  // not parse, a remote bind without auth or allow_remote_without_auth, a
  // TLS certificate, key or CA file that is missing or unusable),
  // InternalError (the address is in use, the socket cannot be made).
  static StatusOr<std::unique_ptr<WireServer>> Start(Database* db, ServerOptions options);
  ~WireServer();  // Stop()

  WireServer(const WireServer&) = delete;
  WireServer& operator=(const WireServer&) = delete;

  // What it listens on, in the order bound: "127.0.0.1:27017", "[::1]:27017",
  // then the socket's path.
  const std::vector<std::string>& listening() const;
  // The TCP port bound (useful with port 0); 0 without TCP listeners.
  int port() const;

  // Stops accepting, lets the commands in flight finish and their replies
  // go out (for at most shutdown_grace_ms), closes every connection and
  // joins the threads.  Idempotent.  The Database stays open.
  void Stop();

  // Connections open now, and accepted in all (refused ones excluded).
  size_t open_connections() const;
  uint64_t total_connections() const;

  struct Impl;

 private:
  explicit WireServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace server
}  // namespace gatedb

#endif  // GATEDB_API_SERVER_WIRE_SERVER_H_
