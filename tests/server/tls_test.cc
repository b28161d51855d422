// The wire server over TLS (--tlsCertificateKeyFile, --tlsCAFile), in
// process, over real loopback sockets and a real RocksDB directory.
// Certificates are made at test time with OpenSSL's C API (a CA, a server
// certificate it signed for localhost and 127.0.0.1, a client certificate it
// signed, and a stranger's self-signed one).  The clients are libmongoc (a
// real driver: ping, insert, find, SCRAM over TLS), a small OpenSSL client
// that holds one TLS connection and sends raw frames, and plain sockets
// sending what a TLS listener must refuse.
#include <mongoc/mongoc.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "api/server/wire_server.h"
#include "tests/server/wire_test_client.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::WireClient;

// ---- certificates ----------------------------------------------------------

struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertDeleter {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;
using Cert = std::unique_ptr<X509, CertDeleter>;

Key NewKey() { return Key(EVP_EC_gen("P-256")); }

void AddExt(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named CN=`cn`, signed by the issuer (or by itself
// when issuer is null).  A CA may sign; a leaf is for localhost/127.0.0.1.
Cert NewCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
  static long serial = 1;
  Cert x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 24 * 3600);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  AddExt(x.get(), &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  AddExt(x.get(), &v3, NID_subject_key_identifier, "hash");
  if (ca) {
    AddExt(x.get(), &v3, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExt(x.get(), &v3, NID_key_usage, "critical,digitalSignature");
    AddExt(x.get(), &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  }
  EXPECT_GT(X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256()), 0);
  return x;
}

// Writes the certificates, then the key (if any; encrypted with `pass` if given).
void WritePem(const std::string& path, const std::vector<X509*>& certs, EVP_PKEY* key,
              const char* pass = nullptr) {
  BIO* bio = BIO_new_file(path.c_str(), "w");
  ASSERT_NE(bio, nullptr) << path;
  for (X509* c : certs) EXPECT_EQ(PEM_write_bio_X509(bio, c), 1);
  if (key != nullptr) {
    if (pass != nullptr) {
      EXPECT_EQ(PEM_write_bio_PrivateKey(bio, key, EVP_aes_256_cbc(),
                                         reinterpret_cast<const unsigned char*>(pass),
                                         static_cast<int>(std::strlen(pass)), nullptr, nullptr),
                1);
    } else {
      EXPECT_EQ(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
    }
  }
  BIO_free(bio);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---- a raw TLS client --------------------------------------------------------

// One TLS connection made with OpenSSL's client, sending raw frames: it
// trusts `ca_file` and checks the certificate is for 127.0.0.1.
class TlsClient {
 public:
  struct Config {
    std::string ca_file;
    std::string cert_key_file;  // a client certificate to present
    int max_version = 0;        // e.g. TLS1_2_VERSION; 0: any
    SSL_SESSION* resume = nullptr;  // a session to resume
  };

  ~TlsClient() {
    // A close_notify first: a session freed without one is not resumable.
    if (ssl_) SSL_shutdown(ssl_);
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
  }

  // Connects and handshakes; false (with error()) on failure.
  bool Connect(int port, const Config& cfg) {
    if (!tcp_.ConnectTcp(port)) return Fail("connect failed");
    timeval tv{10, 0};
    setsockopt(tcp_.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(tcp_.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (cfg.max_version != 0 && cfg.max_version < TLS1_2_VERSION) {
      // An old protocol is offered for real: OpenSSL 3 refuses it below
      // security level 0 on its own side.
      SSL_CTX_set_security_level(ctx_, 0);
      SSL_CTX_set_cipher_list(ctx_, "DEFAULT:@SECLEVEL=0");
      SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
    }
    if (cfg.max_version != 0) SSL_CTX_set_max_proto_version(ctx_, cfg.max_version);
    if (SSL_CTX_load_verify_locations(ctx_, cfg.ca_file.c_str(), nullptr) != 1) return Fail("bad CA file");
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (!cfg.cert_key_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(ctx_, cfg.cert_key_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx_, cfg.cert_key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
      return Fail("bad client certificate file");
    }
    ssl_ = SSL_new(ctx_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    SSL_set_fd(ssl_, tcp_.fd());
    if (cfg.resume != nullptr) SSL_set_session(ssl_, cfg.resume);
    if (SSL_connect(ssl_) != 1) return Fail("handshake failed: " + Errors());
    return true;
  }

  bool Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      int n = SSL_write(ssl_, bytes.data() + off, static_cast<int>(bytes.size() - off));
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  bool RecvExactly(size_t n, std::string* out) {
    out->clear();
    while (out->size() < n) {
      char buf[16384];
      int got = SSL_read(ssl_, buf, static_cast<int>(std::min(sizeof buf, n - out->size())));
      if (got <= 0) return false;
      out->append(buf, static_cast<size_t>(got));
    }
    return true;
  }

  std::optional<std::string> RecvMessage() {
    std::string header, body;
    if (!RecvExactly(server::kHeaderSize, &header)) return std::nullopt;
    int32_t len = server::LoadInt32LE(reinterpret_cast<const uint8_t*>(header.data()));
    if (len < 16 || len > 64 * 1024 * 1024) return std::nullopt;
    if (!RecvExactly(static_cast<size_t>(len) - server::kHeaderSize, &body)) return std::nullopt;
    return header + body;
  }

  // One OP_MSG command; its reply's body, or an empty document.
  Document Run(const std::string& json) {
    Document cmd = Json(json);
    if (!Send(test::OpMsg(++request_id_, cmd.bson()))) return Document();
    auto reply = RecvMessage();
    return reply ? test::MsgBody(*reply) : Document();
  }

  // True when the server ends the connection (close_notify, EOF or reset)
  // within the socket's 10 s timeout, without sending any data.
  bool ClosedByPeer() {
    char c;
    int n = SSL_read(ssl_, &c, 1);
    if (n > 0) return false;
    int e = SSL_get_error(ssl_, n);
    return e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL || e == SSL_ERROR_SSL;
  }

  const std::string& error() const { return error_; }
  SSL* ssl() const { return ssl_; }

 private:
  bool Fail(const std::string& why) {
    error_ = why;
    return false;
  }
  static std::string Errors() {
    std::string out;
    while (unsigned long e = ERR_get_error()) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out += std::string(out.empty() ? "" : "; ") + buf;
    }
    return out;
  }

  WireClient tcp_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string error_;
  int32_t request_id_ = 0;
};

// Reads a plain socket until the server closes it (within timeout_ms);
// *got holds what came first.  False when it stayed open.
bool ReadUntilClosed(WireClient& c, int timeout_ms, std::string* got) {
  got->clear();
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count());
    if (left <= 0) return false;
    pollfd p{c.fd(), POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
    if (n <= 0) return true;
    got->append(buf, static_cast<size_t>(n));
  }
}

// ---- libmongoc ---------------------------------------------------------------

void InitMongoc() {
  static std::once_flag once;
  std::call_once(once, [] { mongoc_init(); });  // never cleaned up: later tests use it
}

// A libmongoc client on `uri`: ping; with `round_trip`, an insert and a find
// of what was inserted.  "" when all worked, else libmongoc's error.
std::string MongocRoundTrip(const std::string& uri, bool round_trip, int id = 1) {
  InitMongoc();
  bson_error_t err;
  mongoc_uri_t* u = mongoc_uri_new_with_error(uri.c_str(), &err);
  if (u == nullptr) return std::string("bad uri: ") + err.message;
  mongoc_client_t* client = mongoc_client_new_from_uri_with_error(u, &err);
  mongoc_uri_destroy(u);
  if (client == nullptr) return std::string("no client: ") + err.message;
  std::string failure;
  bson_t* ping = BCON_NEW("ping", BCON_INT32(1));
  bson_t reply;
  if (!mongoc_client_command_simple(client, "admin", ping, nullptr, &reply, &err)) failure = err.message;
  bson_destroy(&reply);
  bson_destroy(ping);
  if (failure.empty() && round_trip) {
    mongoc_collection_t* coll = mongoc_client_get_collection(client, "test", "tls");
    bson_t* doc = BCON_NEW("_id", BCON_INT32(id), "via", BCON_UTF8("tls"));
    if (!mongoc_collection_insert_one(coll, doc, nullptr, nullptr, &err)) {
      failure = std::string("insert: ") + err.message;
    }
    bson_destroy(doc);
    if (failure.empty()) {
      bson_t* filter = BCON_NEW("_id", BCON_INT32(id));
      mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, filter, nullptr, nullptr);
      const bson_t* found = nullptr;
      if (!mongoc_cursor_next(cur, &found)) {
        failure = mongoc_cursor_error(cur, &err) ? std::string("find: ") + err.message : "find: nothing found";
      } else if (test::StrAt(found, "via") != "tls" || test::IntAt(found, "_id") != id) {
        failure = "find: wrong document " + test::ToJson(found);
      }
      mongoc_cursor_destroy(cur);
      bson_destroy(filter);
    }
    mongoc_collection_destroy(coll);
  }
  mongoc_client_destroy(client);
  return failure;
}

// ---- the fixture -------------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // OpenSSL writes to the socket with write(2): a server that closed the
    // connection would end this process with SIGPIPE instead of an error.
    ::signal(SIGPIPE, SIG_IGN);
    auto db = Database::Open(dir_.path() + "/db");
    ASSERT_OK(db);
    db_ = std::move(*db);
    ca_key_ = NewKey();
    ca_ = NewCert(ca_key_.get(), "gatedb test CA", nullptr, nullptr, true);
    server_key_ = NewKey();
    server_cert_ = NewCert(server_key_.get(), "localhost", ca_.get(), ca_key_.get(), false);
    client_key_ = NewKey();
    client_cert_ = NewCert(client_key_.get(), "agent-7", ca_.get(), ca_key_.get(), false);
    stranger_key_ = NewKey();
    stranger_ = NewCert(stranger_key_.get(), "stranger", nullptr, nullptr, true);
    ca_file_ = dir_.path() + "/ca.pem";
    server_pem_ = dir_.path() + "/server.pem";
    client_pem_ = dir_.path() + "/client.pem";
    stranger_pem_ = dir_.path() + "/stranger.pem";
    WritePem(ca_file_, {ca_.get()}, nullptr);
    // The chain after the certificate, as MongoDB's PEM files may hold it.
    WritePem(server_pem_, {server_cert_.get(), ca_.get()}, server_key_.get());
    WritePem(client_pem_, {client_cert_.get()}, client_key_.get());
    WritePem(stranger_pem_, {stranger_.get()}, stranger_key_.get());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    server_.reset();
    db_.reset();
  }

  server::ServerOptions TlsOptions() {
    server::ServerOptions o;
    o.tls_certificate_key_file = server_pem_;
    return o;
  }

  void StartServer(server::ServerOptions opts) {
    opts.port = 0;
    opts.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> l(log_mu_);
      log_.push_back(line);
    };
    auto s = server::WireServer::Start(db_.get(), opts);
    ASSERT_OK(s);
    server_ = std::move(*s);
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }

  StatusOr<std::unique_ptr<server::WireServer>> TryStart(server::ServerOptions opts) {
    opts.port = 0;
    opts.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> l(log_mu_);
      log_.push_back(line);
    };
    return server::WireServer::Start(db_.get(), opts);
  }

  std::string Uri(const std::string& extra) const {
    return "mongodb://127.0.0.1:" + std::to_string(port_) +
           "/?directConnection=true&serverSelectionTimeoutMS=3000&connectTimeoutMS=3000" +
           (extra.empty() ? "" : "&" + extra);
  }
  std::string TlsUri() const { return Uri("tls=true&tlsCAFile=" + ca_file_); }

  TlsClient::Config Trusting() const { return TlsClient::Config{ca_file_, "", 0, nullptr}; }

  bool LogHas(const std::string& needle) {
    std::lock_guard<std::mutex> l(log_mu_);
    for (const std::string& line : log_) {
      if (line.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  std::string LogText() {
    std::lock_guard<std::mutex> l(log_mu_);
    std::string out;
    for (const std::string& line : log_) out += line + "\n";
    return out;
  }
  // The log gets the close line just before the client sees the close, but
  // a line after a handshake's end may come a moment later.
  bool EventuallyLogHas(const std::string& needle) {
    for (int i = 0; i < 200; ++i) {
      if (LogHas(needle)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  bool EventuallyOpen(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (server_->open_connections() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void ExpectTlsPing() {
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
    Document r = c.Run(R"({"ping": 1, "$db": "admin"})");
    EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1) << test::ToJson(r.bson());
  }

  test::TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::WireServer> server_;
  int port_ = 0;
  Key ca_key_, server_key_, client_key_, stranger_key_;
  Cert ca_, server_cert_, client_cert_, stranger_;
  std::string ca_file_, server_pem_, client_pem_, stranger_pem_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(TlsTest, LibmongocPingsInsertsAndFindsOverTls) {
  StartServer(TlsOptions());
  EXPECT_EQ(MongocRoundTrip(TlsUri(), true, 1), "");
  // The handshake's line: a TLS 1.3 connection (both sides allow it).
  EXPECT_TRUE(EventuallyLogHas("TLSv1.3")) << LogText();
  // The document is in the store.
  TlsClient c;
  ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
  Document f = c.Run(R"({"find": "tls", "filter": {"_id": 1}, "$db": "test"})");
  EXPECT_EQ(test::StrAt(f.bson(), "cursor.firstBatch.0.via"), "tls") << test::ToJson(f.bson());
  // The loopback peer is still described as such over TLS.
  Document w = c.Run(R"({"whatsmyuri": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(w.bson(), "you").rfind("127.0.0.1:", 0), 0u) << test::ToJson(w.bson());
}

TEST_F(TlsTest, AClientMustTrustTheServersCertificate) {
  StartServer(TlsOptions());
  // Without our CA the certificate does not verify (the system's CAs did
  // not sign it); with a stranger's CA neither.
  EXPECT_NE(MongocRoundTrip(Uri("tls=true"), false), "");
  EXPECT_NE(MongocRoundTrip(Uri("tls=true&tlsCAFile=" + stranger_pem_), false), "");
  // The server presents the certificate of its PEM file: the one our CA signed.
  TlsClient c;
  ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
  X509* presented = SSL_get1_peer_certificate(c.ssl());
  ASSERT_NE(presented, nullptr);
  EXPECT_EQ(X509_cmp(presented, server_cert_.get()), 0);
  X509_free(presented);
  // A client told not to check still connects.
  EXPECT_EQ(MongocRoundTrip(Uri("tls=true&tlsAllowInvalidCertificates=true"), true, 2), "");
}

TEST_F(TlsTest, APlaintextClientIsRefusedAndTlsClientsGoOn) {
  StartServer(TlsOptions());
  WireClient plain;
  ASSERT_TRUE(plain.ConnectTcp(port_));
  Document hello = Json(R"({"hello": 1, "$db": "admin"})");
  ASSERT_TRUE(plain.Send(test::OpMsg(1, hello.bson())));
  std::string got;
  ASSERT_TRUE(ReadUntilClosed(plain, 10000, &got)) << "the plaintext connection stayed open";
  // No MongoDB reply: at most a TLS alert record (content type 21).
  EXPECT_TRUE(got.empty() || got[0] == 0x15) << got.size() << " bytes";
  EXPECT_TRUE(EventuallyLogHas("not a TLS client")) << LogText();
  // libmongoc without tls=true fails too, and nothing crashed.
  EXPECT_NE(MongocRoundTrip(Uri(""), false), "");
  EXPECT_EQ(MongocRoundTrip(TlsUri(), true, 3), "");
  EXPECT_TRUE(EventuallyOpen(0));
}

TEST_F(TlsTest, GarbageInsteadOfAClientHelloClosesOnlyThatConnection) {
  StartServer(TlsOptions());
  TlsClient held;
  ASSERT_TRUE(held.Connect(port_, Trusting())) << held.error();
  EXPECT_EQ(test::IntAt(held.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  const std::string garbages[] = {
      std::string(200, '\xff'),
      // A whole handshake record: a ClientHello of zeros.
      std::string("\x16\x03\x01\x00\x10\x01\x00\x00\x0c", 9) + std::string(12, '\0'),
      // A handshake record announcing 16 MB.
      std::string("\x16\x03\x03\xff\xff", 5) + std::string(64, 'x'),
  };
  for (const std::string& g : garbages) {
    WireClient bad;
    ASSERT_TRUE(bad.ConnectTcp(port_));
    ASSERT_TRUE(bad.Send(g));
    std::string got;
    EXPECT_TRUE(ReadUntilClosed(bad, 10000, &got)) << "garbage of " << g.size() << " bytes kept its connection";
  }
  EXPECT_TRUE(EventuallyLogHas("TLS handshake failed")) << LogText();
  // The connection made before goes on.
  EXPECT_EQ(test::IntAt(held.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  EXPECT_TRUE(EventuallyOpen(1));
}

TEST_F(TlsTest, AClientThatNeverHandshakesIsDroppedAfterTheReadTimeout) {
  server::ServerOptions o = TlsOptions();
  o.read_timeout_ms = 300;
  StartServer(o);
  auto start = std::chrono::steady_clock::now();
  WireClient silent, partial;
  ASSERT_TRUE(silent.ConnectTcp(port_));
  ASSERT_TRUE(partial.ConnectTcp(port_));
  // The start of a ClientHello record, and nothing more.
  ASSERT_TRUE(partial.Send(std::string("\x16\x03\x01\x00\xf0\x01", 6)));
  std::string got;
  EXPECT_TRUE(ReadUntilClosed(silent, 10000, &got));
  EXPECT_TRUE(ReadUntilClosed(partial, 10000, &got));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(ms, 280);
  EXPECT_LT(ms, 5000);
  EXPECT_TRUE(EventuallyLogHas("TLS handshake timeout after 300 ms")) << LogText();
  EXPECT_TRUE(EventuallyOpen(0));
  ExpectTlsPing();
}

TEST_F(TlsTest, TheMessageDefencesHoldInsideTls) {
  server::ServerOptions o = TlsOptions();
  o.read_timeout_ms = 300;
  o.max_message_bytes = 1 << 20;
  StartServer(o);
  {
    // A slow sender inside TLS: part of a header, then nothing.
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
    ASSERT_TRUE(c.Send(std::string("\x40\x00\x00\x00\x01", 5)));
    EXPECT_TRUE(c.ClosedByPeer());
    EXPECT_TRUE(EventuallyLogHas("read timeout after 300 ms")) << LogText();
  }
  {
    // A declared length past max_message_bytes: closed before the body.
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
    std::string h;
    server::AppendHeader(&h, 100 * 1000 * 1000, 1, 0, server::kOpMsg);
    ASSERT_TRUE(c.Send(h));
    EXPECT_TRUE(c.ClosedByPeer());
    EXPECT_TRUE(EventuallyLogHas("exceeds the maximum of 1048576 bytes")) << LogText();
  }
  {
    // A malformed frame closes its connection only.
    TlsClient good, bad;
    ASSERT_TRUE(good.Connect(port_, Trusting())) << good.error();
    ASSERT_TRUE(bad.Connect(port_, Trusting())) << bad.error();
    std::string m;
    server::AppendHeader(&m, 20, 2, 0, 9999);
    m += std::string(4, '\0');
    ASSERT_TRUE(bad.Send(m));
    EXPECT_TRUE(bad.ClosedByPeer());
    EXPECT_TRUE(EventuallyLogHas("unsupported opcode 9999")) << LogText();
    EXPECT_EQ(test::IntAt(good.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  }
}

TEST_F(TlsTest, TheConnectionLimitCountsTlsConnections) {
  server::ServerOptions o = TlsOptions();
  o.max_connections = 2;
  StartServer(o);
  TlsClient a, b;
  ASSERT_TRUE(a.Connect(port_, Trusting())) << a.error();
  ASSERT_TRUE(b.Connect(port_, Trusting())) << b.error();
  ASSERT_TRUE(EventuallyOpen(2));
  TlsClient third;
  bool served = third.Connect(port_, Trusting()) &&
                test::IntAt(third.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok") == 1;
  EXPECT_FALSE(served);
  EXPECT_TRUE(EventuallyLogHas("connections are open (the limit)")) << LogText();
  EXPECT_EQ(test::IntAt(a.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
}

TEST_F(TlsTest, TheUnixSocketStaysPlaintext) {
  server::ServerOptions o = TlsOptions();
  o.socket_path = dir_.path() + "/gatedb.sock";
  StartServer(o);
  WireClient c;
  ASSERT_TRUE(c.ConnectUnix(o.socket_path));
  Document ping = Json(R"({"ping": 1, "$db": "admin"})");
  ASSERT_TRUE(c.Send(test::OpMsg(1, ping.bson())));
  auto reply = c.RecvMessage();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(test::IntAt(test::MsgBody(*reply).bson(), "ok"), 1);
  ExpectTlsPing();
}

TEST_F(TlsTest, TlsOlderThan12IsRefused) {
  StartServer(TlsOptions());
  TlsClient old;
  bool served = old.Connect(port_, TlsClient::Config{ca_file_, "", TLS1_1_VERSION, nullptr}) &&
                test::IntAt(old.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok") == 1;
  EXPECT_FALSE(served);
  EXPECT_TRUE(EventuallyLogHas("TLS handshake failed")) << LogText();
  // 1.2 is served.
  TlsClient v12;
  ASSERT_TRUE(v12.Connect(port_, TlsClient::Config{ca_file_, "", TLS1_2_VERSION, nullptr})) << v12.error();
  EXPECT_EQ(test::IntAt(v12.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  EXPECT_STREQ(SSL_get_version(v12.ssl()), "TLSv1.2");
}

TEST_F(TlsTest, WithACaFileClientCertificatesAreVerifiedWhenPresented) {
  server::ServerOptions o = TlsOptions();
  o.tls_ca_file = ca_file_;
  StartServer(o);
  {
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, TlsClient::Config{ca_file_, client_pem_, 0, nullptr})) << c.error();
    EXPECT_EQ(test::IntAt(c.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
    EXPECT_TRUE(EventuallyLogHas("client certificate /CN=agent-7")) << LogText();
  }
  {
    // No certificate: served (and authenticates as usual).
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
    EXPECT_EQ(test::IntAt(c.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  }
  {
    // A certificate our CA did not sign: refused (in TLS 1.3 the client
    // learns it at its first read).
    TlsClient c;
    bool served = c.Connect(port_, TlsClient::Config{ca_file_, stranger_pem_, 0, nullptr}) &&
                  test::IntAt(c.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok") == 1;
    EXPECT_FALSE(served);
    EXPECT_TRUE(EventuallyLogHas("certificate verify failed")) << LogText();
  }
  // libmongoc presenting the client certificate.
  EXPECT_EQ(MongocRoundTrip(TlsUri() + "&tlsCertificateKeyFile=" + client_pem_, true, 4), "");
  EXPECT_NE(MongocRoundTrip(TlsUri() + "&tlsCertificateKeyFile=" + stranger_pem_, false), "");
}

// A client resuming its session (as drivers' pools do) is served, also when
// client certificates are verified: OpenSSL refuses that resumption unless
// the server set a session id context.
TEST_F(TlsTest, AResumedSessionIsServedWithACaFile) {
  server::ServerOptions o = TlsOptions();
  o.tls_ca_file = ca_file_;
  StartServer(o);
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SSL_SESSION* session = nullptr;
    {
      TlsClient first;
      ASSERT_TRUE(first.Connect(port_, TlsClient::Config{ca_file_, client_pem_, version, nullptr})) << first.error();
      // TLS 1.3's ticket comes after the handshake: a reply read brings it.
      EXPECT_EQ(test::IntAt(first.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
      session = SSL_get1_session(first.ssl());
      ASSERT_NE(session, nullptr);
    }
    TlsClient again;
    bool connected = again.Connect(port_, TlsClient::Config{ca_file_, client_pem_, version, session});
    SSL_SESSION_free(session);
    ASSERT_TRUE(connected) << again.error() << "\n" << LogText();
    EXPECT_EQ(SSL_session_reused(again.ssl()), 1) << version;
    EXPECT_EQ(test::IntAt(again.Run(R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1) << LogText();
  }
  EXPECT_FALSE(LogHas("handshake failed")) << LogText();
}

TEST_F(TlsTest, AuthenticationWorksOverTls) {
  server::ServerOptions o = TlsOptions();
  o.auth = true;
  StartServer(o);
  {
    // The localhost exception needs the peer seen as loopback through TLS.
    TlsClient c;
    ASSERT_TRUE(c.Connect(port_, Trusting())) << c.error();
    Document denied = c.Run(R"({"find": "tls", "$db": "test"})");
    EXPECT_EQ(test::IntAt(denied.bson(), "code"), 13) << test::ToJson(denied.bson());
    Document made = c.Run(R"({"createUser": "ana", "pwd": "s3cret", "roles": ["root"], "$db": "admin"})");
    EXPECT_EQ(test::IntAt(made.bson(), "ok"), 1) << test::ToJson(made.bson());
  }
  const std::string base = "mongodb://ana:%s@127.0.0.1:" + std::to_string(port_) +
                           "/?directConnection=true&serverSelectionTimeoutMS=3000&authSource=admin"
                           "&authMechanism=SCRAM-SHA-256&tls=true&tlsCAFile=" + ca_file_;
  char uri[1024];
  std::snprintf(uri, sizeof uri, base.c_str(), "s3cret");
  EXPECT_EQ(MongocRoundTrip(uri, true, 5), "");
  std::snprintf(uri, sizeof uri, base.c_str(), "wrong");
  EXPECT_NE(MongocRoundTrip(uri, false), "");
}

TEST_F(TlsTest, StopClosesAConnectionStillInItsHandshake) {
  StartServer(TlsOptions());  // read_timeout_ms 30 s
  WireClient silent;
  ASSERT_TRUE(silent.ConnectTcp(port_));
  ASSERT_TRUE(EventuallyOpen(1));
  auto start = std::chrono::steady_clock::now();
  server_->Stop();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 3000) << "Stop waited for a handshake that never comes";
  std::string got;
  EXPECT_TRUE(ReadUntilClosed(silent, 1000, &got));
}

TEST_F(TlsTest, ARemoteBindWithAuthButWithoutTlsIsWarnedAbout) {
  server::ServerOptions o;
  o.bind = {"0.0.0.0"};
  o.auth = true;
  auto plain = TryStart(o);
  ASSERT_OK(plain);
  (*plain)->Stop();
  EXPECT_TRUE(LogHas("without TLS: passwords are protected by SCRAM-SHA-256")) << LogText();
  {
    std::lock_guard<std::mutex> l(log_mu_);
    log_.clear();
  }
  o.tls_certificate_key_file = server_pem_;
  auto tls = TryStart(o);
  ASSERT_OK(tls);
  (*tls)->Stop();
  EXPECT_FALSE(LogHas("without TLS")) << LogText();
  // Loopback only, with auth and no TLS: nothing crosses a network.
  o.bind = {"127.0.0.1"};
  o.tls_certificate_key_file.clear();
  auto local = TryStart(o);
  ASSERT_OK(local);
  (*local)->Stop();
  EXPECT_FALSE(LogHas("without TLS")) << LogText();
}

TEST_F(TlsTest, StartRefusesAMissingOrUnusablePemFile) {
  const std::string d = dir_.path();
  WriteFile(d + "/empty.pem", "");
  WriteFile(d + "/garbage.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n");
  WritePem(d + "/cert_only.pem", {server_cert_.get()}, nullptr);
  WriteFile(d + "/key_only.pem", ReadFile(server_pem_).substr(ReadFile(server_pem_).find("-----BEGIN PRIVATE")));
  WritePem(d + "/mismatch.pem", {server_cert_.get()}, client_key_.get());
  WritePem(d + "/encrypted.pem", {server_cert_.get()}, server_key_.get(), "passphrase");
  struct Case {
    std::string pem, ca, says, names;  // the reason says `says` and names `names`
  };
  const Case cases[] = {
      {d + "/missing.pem", "", "No such file or directory", d + "/missing.pem"},
      {d + "/empty.pem", "", "no PEM certificate", d + "/empty.pem"},
      {d + "/garbage.pem", "", "no PEM certificate", d + "/garbage.pem"},
      {d + "/key_only.pem", "", "no PEM certificate", d + "/key_only.pem"},
      {d + "/cert_only.pem", "", "no unencrypted PEM private key", d + "/cert_only.pem"},
      {d + "/encrypted.pem", "", "no unencrypted PEM private key", d + "/encrypted.pem"},
      {d + "/mismatch.pem", "", "does not match its certificate", d + "/mismatch.pem"},
      {server_pem_, d + "/missing_ca.pem", "No such file or directory", "--tlsCAFile"},
      {server_pem_, d + "/garbage.pem", "no PEM certificate", "--tlsCAFile"},
      {"", ca_file_, "--tlsCAFile needs --tlsCertificateKeyFile", "--tlsCAFile"},
  };
  for (const Case& c : cases) {
    server::ServerOptions o;
    o.tls_certificate_key_file = c.pem;
    o.tls_ca_file = c.ca;
    auto s = TryStart(o);
    ASSERT_THAT(s, test::StatusIs(ErrorCode::kInvalidOptions)) << c.pem << " " << c.ca;
    EXPECT_NE(s.status().reason().find(c.says), std::string::npos) << s.status().ToString();
    EXPECT_NE(s.status().reason().find(c.names), std::string::npos) << s.status().ToString();
  }
  // The good file still starts.
  auto ok = TryStart(TlsOptions());
  EXPECT_OK(ok);
}

}  // namespace
}  // namespace gatedb
