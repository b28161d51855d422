// The wire server in process, over real loopback sockets and a real
// RocksDB directory: the handshake, commands, retryable writes, and every
// hostile frame the issue names (each closes its own connection only), the
// limits, timeouts, concurrency and a clean stop with a command in flight.
#include "api/server/wire_server.h"

#include <sys/stat.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "tests/server/wire_test_client.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;
using test::WireClient;

class WireServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.path() + "/db");
    ASSERT_OK(db);
    db_ = std::move(*db);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    server_.reset();
    db_.reset();
  }

  void StartServer(server::ServerOptions opts = server::ServerOptions()) {
    opts.port = 0;
    opts.quiet = quiet_;
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

  WireClient Connect() {
    WireClient c;
    EXPECT_TRUE(c.ConnectTcp(port_));
    return c;
  }

  // Sends one OP_MSG command and returns the reply's body (empty on none).
  Document Run(WireClient& c, const std::string& json) {
    Document cmd = Json(json);
    if (!c.Send(test::OpMsg(++request_id_, cmd.bson()))) return Document();
    auto reply = c.RecvMessage();
    if (!reply) return Document();
    return test::MsgBody(*reply);
  }

  bool LogHas(const std::string& needle) {
    std::lock_guard<std::mutex> l(log_mu_);
    for (const std::string& line : log_) {
      if (line.find(needle) != std::string::npos) return true;
    }
    return false;
  }

  // A fresh connection still gets answers: the server survived.
  void ExpectServerAlive() {
    WireClient c = Connect();
    Document r = Run(c, R"({"ping": 1, "$db": "admin"})");
    EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1) << test::ToJson(r.bson());
  }

  test::TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::WireServer> server_;
  int port_ = 0;
  int32_t request_id_ = 0;
  bool quiet_ = false;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(WireServerTest, HelloPresentsTheSingleNodeReplicaSetPrimary) {
  StartServer();
  WireClient c = Connect();
  Document r = Run(c, R"({"hello": 1, "helloOk": true, "$db": "admin"})");
  EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1);
  std::string me = "127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(test::StrAt(r.bson(), "setName"), "gatedb");
  EXPECT_EQ(test::StrAt(r.bson(), "me"), me);
  EXPECT_EQ(test::StrAt(r.bson(), "primary"), me);
  EXPECT_EQ(test::StringsAt(r.bson(), "hosts"), std::vector<std::string>{me});
  EXPECT_TRUE(test::HasPath(r.bson(), "isWritablePrimary"));
  EXPECT_FALSE(test::HasPath(r.bson(), "topologyVersion"));
  EXPECT_EQ(test::IntAt(r.bson(), "maxWireVersion"), 21);
  EXPECT_EQ(test::IntAt(r.bson(), "logicalSessionTimeoutMinutes"), 30);
  EXPECT_EQ(test::IntAt(r.bson(), "maxMessageSizeBytes"), 48000000);
  EXPECT_EQ(test::IntAt(r.bson(), "maxBsonObjectSize"), 16 * 1024 * 1024);
  EXPECT_EQ(test::IntAt(r.bson(), "maxWriteBatchSize"), 100000);
  EXPECT_TRUE(test::HasPath(r.bson(), "helloOk"));
  int64_t id1 = test::IntAt(r.bson(), "connectionId");
  WireClient c2 = Connect();
  Document r2 = Run(c2, R"({"isMaster": 1, "$db": "admin"})");
  EXPECT_TRUE(test::HasPath(r2.bson(), "ismaster"));
  EXPECT_GT(test::IntAt(r2.bson(), "connectionId"), id1);
  Document w = Run(c2, R"({"whatsmyuri": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(w.bson(), "you").rfind("127.0.0.1:", 0), 0u);
}

TEST_F(WireServerTest, OpQueryServesOnlyTheHandshake) {
  StartServer();
  WireClient c = Connect();
  auto op_query = [&](const char* ns, const std::string& json) {
    Document q = Json(json);
    EXPECT_TRUE(c.Send(test::OpQuery(ns, q.bson(), nullptr, 42)));
    auto reply = c.RecvMessage();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return Document();
    EXPECT_EQ(server::LoadInt32LE(reinterpret_cast<const uint8_t*>(reply->data()) + 8), 42);  // responseTo
    return test::OpReplyDoc(*reply);
  };
  Document r = op_query("admin.$cmd", R"({"ismaster": 1, "client": {"driver": {"name": "nodejs"}}})");
  EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1) << test::ToJson(r.bson());
  EXPECT_TRUE(test::HasPath(r.bson(), "ismaster"));
  EXPECT_EQ(test::StrAt(r.bson(), "setName"), "gatedb");
  Document f = op_query("test.$cmd", R"({"find": "c"})");
  EXPECT_EQ(test::IntAt(f.bson(), "ok"), 0);
  EXPECT_EQ(test::IntAt(f.bson(), "code"), 352);
  EXPECT_EQ(test::StrAt(f.bson(), "codeName"), "UnsupportedOpQueryCommand");
  // The connection goes on, now over OP_MSG.
  Document p = Run(c, R"({"ping": 1})");
  EXPECT_EQ(test::IntAt(p.bson(), "ok"), 1);
}

TEST_F(WireServerTest, CrudAndCursorsThroughTheDispatcher) {
  StartServer();
  WireClient c = Connect();
  Document body = Json(R"({"insert": "c", "$db": "test"})");
  std::vector<Document> docs;
  for (int i = 0; i < 250; ++i) docs.push_back(Json("{\"_id\": " + std::to_string(i) + "}"));
  ASSERT_TRUE(c.Send(test::OpMsg(1, body.bson(), 0, "documents", docs)));
  auto reply = c.RecvMessage();
  ASSERT_TRUE(reply);
  Document r = test::MsgBody(*reply);
  EXPECT_EQ(test::IntAt(r.bson(), "n"), 250) << test::ToJson(r.bson());
  Document f = Run(c, R"({"find": "c", "batchSize": 100, "$db": "test"})");
  int64_t id = test::IntAt(f.bson(), "cursor.id");
  EXPECT_NE(id, 0);
  int64_t seen = 100;
  while (id != 0) {
    Document g = Run(c, "{\"getMore\": {\"$numberLong\": \"" + std::to_string(id) +
                            "\"}, \"collection\": \"c\", \"batchSize\": 100, \"$db\": \"test\"}");
    ASSERT_EQ(test::IntAt(g.bson(), "ok"), 1) << test::ToJson(g.bson());
    bson_iter_t it, arr;
    ASSERT_TRUE(bson_iter_init_find(&it, g.bson(), "cursor") && bson_iter_recurse(&it, &arr) &&
                bson_iter_find(&arr, "nextBatch"));
    bson_t batch;
    uint32_t len;
    const uint8_t* data;
    bson_iter_array(&arr, &len, &data);
    ASSERT_TRUE(bson_init_static(&batch, data, len));
    seen += bson_count_keys(&batch);
    id = test::IntAt(g.bson(), "cursor.id");
  }
  EXPECT_EQ(seen, 250);
  // gatedb's own fields and commands work as in `gatedb run`.
  Document u = Run(c, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}, "basisVersion": 0}],
                         "writeContext": {"agentId": "wire-agent"}, "$db": "test"})");
  EXPECT_EQ(test::IntAt(u.bson(), "nModified"), 1) << test::ToJson(u.bson());
  Document stale = Run(c, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 2}}, "basisVersion": 0}],
                             "$db": "test"})");
  EXPECT_EQ(test::StrAt(stale.bson(), "writeErrors.0.codeName"), "VersionConflict") << test::ToJson(stale.bson());
  Document j = Run(c, R"({"journal": "c", "afterSeq": 250, "$db": "test"})");
  EXPECT_EQ(test::StrAt(j.bson(), "events.0.writeContext.agentId"), "wire-agent") << test::ToJson(j.bson());
  Document unknown = Run(c, R"({"atlasVersion": 1, "$db": "admin"})");
  EXPECT_EQ(test::IntAt(unknown.bson(), "code"), 59);
}

TEST_F(WireServerTest, MoreToComeGetsNoReply) {
  StartServer();
  WireClient c = Connect();
  Document ins = Json(R"({"insert": "c", "documents": [{"_id": "quiet"}], "$db": "test"})");
  ASSERT_TRUE(c.Send(test::OpMsg(5, ins.bson(), server::kMoreToCome)));
  // The next reply on this connection is the find's, and it sees the insert.
  Document f = Run(c, R"({"find": "c", "filter": {"_id": "quiet"}, "$db": "test"})");
  EXPECT_EQ(test::StrAt(f.bson(), "cursor.firstBatch.0._id"), "quiet") << test::ToJson(f.bson());
}

TEST_F(WireServerTest, ChecksummedRequestsAreAnswered) {
  StartServer();
  WireClient c = Connect();
  Document ping = Json(R"({"ping": 1})");
  ASSERT_TRUE(c.Send(test::OpMsg(3, ping.bson(), server::kChecksumPresent)));
  auto reply = c.RecvMessage();
  ASSERT_TRUE(reply);
  EXPECT_EQ(test::IntAt(test::MsgBody(*reply).bson(), "ok"), 1);
  // A wrong checksum closes the connection.
  std::string bad = test::OpMsg(4, ping.bson(), server::kChecksumPresent);
  bad.back() ^= 1;
  ASSERT_TRUE(c.Send(bad));
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_TRUE(LogHas("checksum mismatch"));
}

TEST_F(WireServerTest, CompressedMessagesGetAnErrorNotAHang) {
  StartServer();
  WireClient c = Connect();
  std::string m;
  std::string payload;
  server::AppendInt32(&payload, server::kOpMsg);  // originalOpcode
  server::AppendInt32(&payload, 10);              // uncompressedSize
  payload.push_back('\2');                        // zlib
  payload.append("0123456789");
  server::AppendHeader(&m, static_cast<int32_t>(16 + payload.size()), 8, 0, server::kOpCompressed);
  ASSERT_TRUE(c.Send(m + payload));
  auto reply = c.RecvMessage();
  ASSERT_TRUE(reply);
  Document r = test::MsgBody(*reply);
  EXPECT_EQ(test::IntAt(r.bson(), "ok"), 0);
  EXPECT_NE(test::StrAt(r.bson(), "errmsg").find("OP_COMPRESSED"), std::string::npos);
  EXPECT_EQ(test::IntAt(Run(c, R"({"ping": 1})").bson(), "ok"), 1);
}

// Each hostile frame closes its own connection, logs it, and leaves the
// server and a bystander connection working.
TEST_F(WireServerTest, MalformedFramesCloseOnlyTheirConnection) {
  StartServer();
  WireClient bystander = Connect();
  EXPECT_EQ(test::IntAt(Run(bystander, R"({"ping": 1})").bson(), "ok"), 1);
  Document ping = Json(R"({"ping": 1})");
  std::string good = test::OpMsg(1, ping.bson());
  struct Case {
    const char* name;
    std::string bytes;
    const char* log;
  };
  std::vector<Case> cases;
  {
    std::string m;
    server::AppendHeader(&m, 8, 1, 0, server::kOpMsg);
    cases.push_back({"length below the header", m, "shorter than the 16-byte header"});
  }
  {
    std::string m;
    server::AppendHeader(&m, 2000000000, 1, 0, server::kOpMsg);
    cases.push_back({"a 2 GB declared length", m, "exceeds the maximum"});
  }
  {
    std::string m = good;
    std::string code;
    server::AppendInt32(&code, 9999);
    m.replace(12, 4, code);
    cases.push_back({"an unknown opcode", m, "unsupported opcode 9999"});
  }
  {
    // A reply where a request belongs: an OP_REPLY sent by the client.
    Document doc = Json(R"({"ok": 1})");
    cases.push_back({"an OP_REPLY from the client", server::BuildOpReply(1, 0, doc.bson()), "unsupported opcode 1"});
  }
  {
    // A client that connected with TLS: its ClientHello declares a 33 MB
    // "message"; it is closed at once, not waited for.
    std::string m("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
    m.append(300, 'r');
    cases.push_back({"a TLS ClientHello", m, "does not speak TLS"});
  }
  {
    std::string m = good;
    m.push_back('\1');
    server::AppendInt32(&m, 1000);
    std::string len;
    server::AppendInt32(&len, static_cast<int32_t>(m.size()));
    m.replace(0, 4, len);
    cases.push_back({"a truncated section", m, "document sequence"});
  }
  {
    std::string m = good;
    m[21] = 100;  // the body's declared length
    cases.push_back({"invalid BSON", m, "body declares"});
  }
  {
    Document body = Json(R"({"ping": "x"})");
    std::string m = test::OpMsg(1, body.bson());
    m[35] = static_cast<char>(0xFF);  // the string's first byte: not UTF-8
    cases.push_back({"invalid UTF-8", m, "UTF-8"});
  }
  for (const Case& k : cases) {
    WireClient c = Connect();
    ASSERT_TRUE(c.Send(k.bytes)) << k.name;
    EXPECT_TRUE(c.ClosedByPeer()) << k.name;
    EXPECT_TRUE(LogHas(k.log)) << k.name << ": no log line with '" << k.log << "'";
  }
  EXPECT_EQ(test::IntAt(Run(bystander, R"({"ping": 1})").bson(), "ok"), 1);
  ExpectServerAlive();
}

TEST_F(WireServerTest, SlowSenderIsDropped) {
  server::ServerOptions o;
  o.read_timeout_ms = 200;
  StartServer(o);
  WireClient slow = Connect();
  ASSERT_TRUE(slow.Send(std::string("\x40\x00\x00", 3)));  // half a header, then nothing
  EXPECT_TRUE(slow.ClosedByPeer(10000));
  EXPECT_TRUE(LogHas("read timeout after 200 ms"));
  // A header whose body never comes.
  WireClient slow2 = Connect();
  Document ping = Json(R"({"ping": 1})");
  ASSERT_TRUE(slow2.Send(test::OpMsg(1, ping.bson()).substr(0, 20)));
  EXPECT_TRUE(slow2.ClosedByPeer(10000));
  ExpectServerAlive();
}

TEST_F(WireServerTest, IdleConnectionsExpireWhenAsked) {
  server::ServerOptions o;
  o.idle_timeout_ms = 200;
  StartServer(o);
  WireClient c = Connect();
  EXPECT_EQ(test::IntAt(Run(c, R"({"ping": 1})").bson(), "ok"), 1);
  EXPECT_TRUE(c.ClosedByPeer(10000));
  EXPECT_TRUE(LogHas("idle timeout after 200 ms"));
}

TEST_F(WireServerTest, ConnectionsPastTheLimitAreRefused) {
  server::ServerOptions o;
  o.max_connections = 4;
  StartServer(o);
  std::vector<WireClient> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(Connect());
    EXPECT_EQ(test::IntAt(Run(held.back(), R"({"ping": 1})").bson(), "ok"), 1);
  }
  WireClient extra = Connect();
  EXPECT_TRUE(extra.ClosedByPeer());
  EXPECT_TRUE(LogHas("4 connections are open (the limit)"));
  held.pop_back();  // closes one
  // The server notices the close; then a new connection is served.
  for (int i = 0; i < 200 && server_->open_connections() > 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ExpectServerAlive();
}

TEST_F(WireServerTest, AThousandConnectionsOpenedAndDropped) {
  quiet_ = true;
  StartServer();
  for (int round = 0; round < 10; ++round) {
    std::vector<WireClient> batch(100);
    for (auto& c : batch) ASSERT_TRUE(c.ConnectTcp(port_));
    // Half of them send half a message before vanishing.
    for (size_t i = 0; i < batch.size(); i += 2) batch[i].Send(std::string("\x20\x00", 2));
  }
  ExpectServerAlive();
  for (int i = 0; i < 500 && server_->open_connections() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->open_connections(), 0u);
  EXPECT_GE(server_->total_connections(), 1000u);
}

// A driver's retry after a lost reply resends the same (lsid, txnNumber):
// it gets the first reply and the write is not applied twice.
TEST_F(WireServerTest, RetryableWritesApplyOnce) {
  StartServer();
  const std::string lsid = R"("lsid": {"id": {"$binary": {"base64": "q83vEjRWeJCrze8SNFZ4kA==", "subType": "04"}}})";
  std::string inc = R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}, "upsert": true}],
                        "txnNumber": {"$numberLong": "7"}, "$db": "test", )" + lsid + "}";
  WireClient a = Connect();
  Document first = Run(a, inc);
  EXPECT_EQ(test::IntAt(first.bson(), "ok"), 1) << test::ToJson(first.bson());
  a.Close();
  WireClient b = Connect();  // the retry comes on a new connection
  Document again = Run(b, inc);
  EXPECT_EQ(test::IntAt(again.bson(), "ok"), 1);
  EXPECT_EQ(test::IntAt(again.bson(), "n"), test::IntAt(first.bson(), "n"));
  EXPECT_EQ(test::StrAt(again.bson(), "upserted.0._id"), test::StrAt(first.bson(), "upserted.0._id"));
  Document f = Run(b, R"({"find": "c", "filter": {"_id": 1}, "$db": "test"})");
  EXPECT_EQ(test::IntAt(f.bson(), "cursor.firstBatch.0.n"), 1) << test::ToJson(f.bson());
  // The next txnNumber is a new write.
  std::string inc8 = inc;
  inc8.replace(inc8.find("\"7\""), 3, "\"8\"");
  Document next = Run(b, inc8);
  EXPECT_EQ(test::IntAt(next.bson(), "nModified"), 1);
  f = Run(b, R"({"find": "c", "filter": {"_id": 1}, "$db": "test"})");
  EXPECT_EQ(test::IntAt(f.bson(), "cursor.firstBatch.0.n"), 2);
  EXPECT_EQ(test::IntAt(f.bson(), "cursor.firstBatch.0.version"), 1);
}

// Many connections incrementing one document lose no update.
TEST_F(WireServerTest, ConcurrentConnectionsLoseNoUpdate) {
  quiet_ = true;
  StartServer();
  WireClient c0 = Connect();
  ASSERT_EQ(test::IntAt(Run(c0, R"({"insert": "c", "documents": [{"_id": "hot", "n": 0}]})").bson(), "n"), 1);
  constexpr int kThreads = 8, kIncs = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      WireClient c;
      if (!c.ConnectTcp(port_)) {
        ++failures;
        return;
      }
      Document upd = Json(R"({"update": "c", "updates": [{"q": {"_id": "hot"}, "u": {"$inc": {"n": 1}}}]})");
      for (int i = 0; i < kIncs; ++i) {
        if (!c.Send(test::OpMsg(t * 1000 + i, upd.bson()))) {
          ++failures;
          return;
        }
        auto r = c.RecvMessage();
        if (!r || test::IntAt(test::MsgBody(*r).bson(), "nModified") != 1) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  Document f = Run(c0, R"({"find": "c", "filter": {"_id": "hot"}})");
  EXPECT_EQ(test::IntAt(f.bson(), "cursor.firstBatch.0.n"), kThreads * kIncs);
  EXPECT_EQ(test::IntAt(f.bson(), "cursor.firstBatch.0.version"), kThreads * kIncs);
}

// A command waiting on a lock holds a worker, not the other clients.
TEST_F(WireServerTest, ABlockedCommandDoesNotStallOthers) {
  StartServer();
  WireClient txn = Connect(), blocked = Connect(), other = Connect();
  ASSERT_EQ(test::IntAt(Run(txn, R"({"insert": "c", "documents": [{"_id": 1}]})").bson(), "n"), 1);
  const std::string lsid = R"("lsid": {"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}})";
  Document u = Run(txn, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"t": 1}}}],
                           "txnNumber": 1, "startTransaction": true, "autocommit": false, )" + lsid + "}");
  ASSERT_EQ(test::IntAt(u.bson(), "ok"), 1) << test::ToJson(u.bson());
  // This write waits for the transaction's lock (up to lock_timeout_ms).
  Document w = Json(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"o": 1}}}]})");
  ASSERT_TRUE(blocked.Send(test::OpMsg(77, w.bson())));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(test::IntAt(Run(other, R"({"ping": 1})").bson(), "ok"), 1);
  }
  // The blocked write has not been answered while the pings were.
  pollfd p{blocked.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "the blocked write answered before the pings";
  auto r = blocked.RecvMessage(30000);
  ASSERT_TRUE(r);
  Run(txn, R"({"abortTransaction": 1, "txnNumber": 1, "autocommit": false, "$db": "admin", )" + lsid + "}");
}

// Stop() lets a command in flight finish and its reply go out.
TEST_F(WireServerTest, StopFinishesTheCommandInFlight) {
  StartServer();
  WireClient txn = Connect(), blocked = Connect(), idle = Connect();
  ASSERT_EQ(test::IntAt(Run(txn, R"({"insert": "c", "documents": [{"_id": 1}]})").bson(), "n"), 1);
  const std::string lsid = R"("lsid": {"id": {"$binary": {"base64": "EBESExQVFhcYGRobHB0eHw==", "subType": "04"}}})";
  Document u = Run(txn, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"t": 1}}}],
                           "txnNumber": 1, "startTransaction": true, "autocommit": false, )" + lsid + "}");
  ASSERT_EQ(test::IntAt(u.bson(), "ok"), 1);
  Document w = Json(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"o": 1}}}]})");
  ASSERT_TRUE(blocked.Send(test::OpMsg(77, w.bson())));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it reach the lock wait
  std::thread stopper([&] { server_->Stop(); });
  auto r = blocked.RecvMessage(30000);
  ASSERT_TRUE(r) << "the command in flight got no reply";
  EXPECT_EQ(server::LoadInt32LE(reinterpret_cast<const uint8_t*>(r->data()) + 8), 77);
  EXPECT_TRUE(blocked.ClosedByPeer());
  EXPECT_TRUE(idle.ClosedByPeer());
  stopper.join();
  // Nothing listens any more.
  WireClient late;
  EXPECT_FALSE(late.ConnectTcp(port_));
}

// A message that arrives whole after the stop began is not run: it gets
// InterruptedAtShutdown, labelled RetryableWriteError for a retryable write.
TEST_F(WireServerTest, AMessageFinishedDuringStopIsInterrupted) {
  StartServer();
  WireClient txn = Connect(), blocked = Connect(), late = Connect();
  ASSERT_EQ(test::IntAt(Run(txn, R"({"insert": "c", "documents": [{"_id": 1}]})").bson(), "n"), 1);
  const std::string lsid = R"("lsid": {"id": {"$binary": {"base64": "MDEyMzQ1Njc4OTo7PD0+Pw==", "subType": "04"}}})";
  Document u = Run(txn, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"t": 1}}}],
                           "txnNumber": 1, "startTransaction": true, "autocommit": false, )" + lsid + "}");
  ASSERT_EQ(test::IntAt(u.bson(), "ok"), 1);
  // One command in flight keeps the stop waiting.
  Document w = Json(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"o": 1}}}]})");
  ASSERT_TRUE(blocked.Send(test::OpMsg(77, w.bson())));
  // Half of a retryable insert, then the stop, then the rest.
  Document ins = Json(R"({"insert": "c", "documents": [{"_id": 2}], "txnNumber": 1, )" + lsid + "}");
  std::string m = test::OpMsg(78, ins.bson());
  ASSERT_TRUE(late.Send(m.substr(0, 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread stopper([&] { server_->Stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(late.Send(m.substr(10)));
  auto r = late.RecvMessage(30000);
  ASSERT_TRUE(r);
  Document body = test::MsgBody(*r);
  EXPECT_EQ(test::IntAt(body.bson(), "code"), 11600) << test::ToJson(body.bson());
  EXPECT_EQ(test::StringsAt(body.bson(), "errorLabels"), std::vector<std::string>{"RetryableWriteError"});
  EXPECT_TRUE(blocked.RecvMessage(30000).has_value());
  stopper.join();
  // The interrupted insert did not run.
  auto db_find = db_->RunCommand(Json(R"({"find": "c", "filter": {"_id": 2}})").view());
  EXPECT_FALSE(test::HasPath(db_find.bson(), "cursor.firstBatch.0"));
}

TEST_F(WireServerTest, UnixSocketIsPrivate) {
  server::ServerOptions o;
  o.socket_path = dir_.path() + "/gatedb.sock";
  StartServer(o);
  ASSERT_EQ(server_->listening().size(), 2u);
  EXPECT_EQ(server_->listening()[1], o.socket_path);
  struct stat st;
  ASSERT_EQ(::stat(o.socket_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  WireClient c;
  ASSERT_TRUE(c.ConnectUnix(o.socket_path));
  Document r = Run(c, R"({"hello": 1})");
  EXPECT_EQ(test::StrAt(r.bson(), "me"), o.socket_path);
  server_->Stop();
  EXPECT_NE(::stat(o.socket_path.c_str(), &st), 0) << "the socket file is left behind";
}

TEST_F(WireServerTest, RemoteBindNeedsTheNoAuthFlag) {
  server::ServerOptions o;
  o.bind = {"0.0.0.0"};
  o.port = 0;
  auto s = server::WireServer::Start(db_.get(), o);
  EXPECT_THAT(s, test::StatusIs(ErrorCode::kInvalidOptions));
  o.bind = {"not-an-address"};
  EXPECT_THAT(server::WireServer::Start(db_.get(), o), test::StatusIs(ErrorCode::kInvalidOptions));
  o.bind = {"::1"};
  auto v6 = server::WireServer::Start(db_.get(), o);
  if (v6.ok()) {  // hosts without IPv6 cannot bind ::1
    EXPECT_EQ((*v6)->listening()[0].rfind("[::1]:", 0), 0u);
  }
}

TEST_F(WireServerTest, ServerCommandsDescribeTheServer) {
  StartServer();
  WireClient c = Connect();
  Document s = Run(c, R"({"serverStatus": 1, "$db": "admin"})");
  EXPECT_EQ(test::IntAt(s.bson(), "ok"), 1);
  EXPECT_EQ(test::IntAt(s.bson(), "connections.current"), 1);
  EXPECT_GE(test::IntAt(s.bson(), "network.numRequests"), 1);
  Document b = Run(c, R"({"buildInfo": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(b.bson(), "version"), "7.0.0");
  Document p = Run(c, R"({"getParameter": 1, "featureCompatibilityVersion": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(p.bson(), "featureCompatibilityVersion.version"), "7.0");
  Document bad = Run(c, R"({"getParameter": 1, "noSuchParameter": 1, "$db": "admin"})");
  EXPECT_EQ(test::IntAt(bad.bson(), "ok"), 0);
  Document log = Run(c, R"({"getLog": "global", "$db": "admin"})");
  EXPECT_GE(test::IntAt(log.bson(), "totalLinesWritten"), 1);  // this connection's open line at least
  Document warn = Run(c, R"({"getLog": "startupWarnings", "$db": "admin"})");
  EXPECT_EQ(test::IntAt(warn.bson(), "totalLinesWritten"), 0);
  Document opts = Run(c, R"({"getCmdLineOpts": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(opts.bson(), "parsed.replication.replSetName"), "gatedb");
  Document h = Run(c, R"({"hostInfo": 1, "$db": "admin"})");
  EXPECT_GT(test::IntAt(h.bson(), "system.numCores"), 0);
  Document rs = Run(c, R"({"replSetGetStatus": 1, "$db": "admin"})");
  EXPECT_EQ(test::StrAt(rs.bson(), "set"), "gatedb");
  EXPECT_EQ(test::StrAt(rs.bson(), "members.0.stateStr"), "PRIMARY");
  EXPECT_EQ(test::StrAt(rs.bson(), "members.0.name"), "127.0.0.1:" + std::to_string(port_));
  Document cs = Run(c, R"({"connectionStatus": 1, "$db": "admin"})");
  EXPECT_TRUE(test::HasPath(cs.bson(), "authInfo.authenticatedUsers"));
}

// endSessions aborts the session's transaction and kills its cursors.
TEST_F(WireServerTest, EndSessionsEndsTransactionsAndCursors) {
  StartServer();
  WireClient c = Connect();
  Run(c, R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]})");
  const std::string id = R"({"id": {"$binary": {"base64": "ICEiIyQlJicoKSorLC0uLw==", "subType": "04"}}})";
  Document f = Run(c, R"({"find": "c", "batchSize": 1, "lsid": )" + id + "}");
  int64_t cursor = test::IntAt(f.bson(), "cursor.id");
  ASSERT_NE(cursor, 0);
  Document u = Run(c, R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"t": 1}}}],
                         "txnNumber": 1, "startTransaction": true, "autocommit": false, "lsid": )" + id + "}");
  ASSERT_EQ(test::IntAt(u.bson(), "ok"), 1);
  Document e = Run(c, R"({"endSessions": [)" + id + R"(], "$db": "admin"})");
  EXPECT_EQ(test::IntAt(e.bson(), "ok"), 1) << test::ToJson(e.bson());
  Document g = Run(c, "{\"getMore\": {\"$numberLong\": \"" + std::to_string(cursor) +
                          "\"}, \"collection\": \"c\", \"lsid\": " + id + "}");
  EXPECT_EQ(test::IntAt(g.bson(), "code"), 43) << test::ToJson(g.bson());
  Document commit = Run(c, R"({"commitTransaction": 1, "txnNumber": 1, "autocommit": false, "$db": "admin", "lsid": )" +
                               id + "}");
  EXPECT_EQ(test::StrAt(commit.bson(), "codeName"), "NoSuchTransaction") << test::ToJson(commit.bson());
  Document after = Run(c, R"({"find": "c", "filter": {"_id": 1}})");
  EXPECT_FALSE(test::HasPath(after.bson(), "cursor.firstBatch.0.t"));
}

// A change stream's getMore that finds nothing is parked: it holds no
// worker (with one worker, other commands still run while it waits), it is
// answered as soon as a write lands, or with an empty batch at its
// maxTimeMS, and a stop answers it at once.
TEST_F(WireServerTest, AWaitingChangeStreamHoldsNoWorker) {
  server::ServerOptions o;
  o.worker_threads = 1;
  StartServer(o);
  WireClient watcher = Connect();
  WireClient other = Connect();
  ASSERT_EQ(test::IntAt(Run(other, R"({"create": "feed", "$db": "app"})").bson(), "ok"), 1);
  Document opened = Run(watcher, R"({"aggregate": "feed", "pipeline": [{"$changeStream": {}}], "cursor": {}, "$db": "app"})");
  ASSERT_EQ(test::IntAt(opened.bson(), "ok"), 1) << test::ToJson(opened.bson());
  const int64_t id = test::IntAt(opened.bson(), "cursor.id");
  ASSERT_NE(id, 0);
  const std::string get_more = R"({"getMore": {"$numberLong": ")" + std::to_string(id) +
                               R"("}, "collection": "feed", "maxTimeMS": 60000, "$db": "app"})";
  ASSERT_TRUE(watcher.Send(test::OpMsg(++request_id_, Json(get_more).bson())));
  // While it waits (up to a minute), the only worker runs other commands.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Document pong = Run(other, R"({"ping": 1, "$db": "admin"})");
  EXPECT_EQ(test::IntAt(pong.bson(), "ok"), 1);
  EXPECT_FALSE(watcher.RecvMessage(100).has_value()) << "answered before anything changed";
  // A write wakes it.
  Document ins = Run(other, R"({"insert": "feed", "documents": [{"_id": 7}], "$db": "app"})");
  ASSERT_EQ(test::IntAt(ins.bson(), "n"), 1);
  auto woke = watcher.RecvMessage(10000);
  ASSERT_TRUE(woke.has_value());
  Document batch = test::MsgBody(*woke);
  EXPECT_EQ(test::StrAt(batch.bson(), "cursor.nextBatch.0.operationType"), "insert") << test::ToJson(batch.bson());
  EXPECT_EQ(test::IntAt(batch.bson(), "cursor.nextBatch.0.documentKey._id"), 7);
  // Nothing more: an empty batch after its maxTimeMS, the cursor still open.
  const std::string short_wait = R"({"getMore": {"$numberLong": ")" + std::to_string(id) +
                                 R"("}, "collection": "feed", "maxTimeMS": 150, "$db": "app"})";
  Document empty = Run(watcher, short_wait);
  EXPECT_EQ(test::IntAt(empty.bson(), "ok"), 1) << test::ToJson(empty.bson());
  EXPECT_EQ(test::IntAt(empty.bson(), "cursor.id"), id);
  EXPECT_EQ(test::StrAt(empty.bson(), "cursor.nextBatch.0.operationType"), "");
  EXPECT_FALSE(test::StrAt(empty.bson(), "cursor.postBatchResumeToken._data").empty());
  // Stopping answers a parked getMore at once, with its empty batch.
  ASSERT_TRUE(watcher.Send(test::OpMsg(++request_id_, Json(get_more).bson())));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread stopper([&] { server_->Stop(); });
  auto at_stop = watcher.RecvMessage(10000);
  stopper.join();
  ASSERT_TRUE(at_stop.has_value());
  Document last = test::MsgBody(*at_stop);
  EXPECT_EQ(test::IntAt(last.bson(), "ok"), 1) << test::ToJson(last.bson());
  EXPECT_EQ(test::StrAt(last.bson(), "cursor.nextBatch.0.operationType"), "");
}

}  // namespace
}  // namespace gatedb
