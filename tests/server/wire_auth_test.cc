// Authentication on the wire server, over real loopback sockets: SCRAM-SHA-256
// conversations computed by libgsasl (as a driver computes them), with wrong
// passwords, replayed, truncated and corrupted messages; an unauthenticated
// client trying every command; the localhost exception; speculative
// authentication in hello; the authenticated user as the agent; and
// connections authenticating and writing at once.
#include <atomic>
#include <map>
#include <thread>

#include "api/server/wire_server.h"
#include "tests/server/wire_test_client.h"
#include "tests/testutil/permission_matrix.h"
#include "tests/testutil/scram_client.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::IntAt;
using test::Json;
using test::StrAt;
using test::WireClient;

// Every command the dispatcher answers (command_dispatcher.cc's table).
const char* const kEveryCommand[] = {
    "insert", "find", "getMore", "aggregate", "killCursors", "update", "delete", "findAndModify", "count",
    "distinct", "buildInfo", "create", "createIndexes", "listIndexes", "dropIndexes", "explain", "drop",
    "dropDatabase", "renameCollection", "listCollections", "listDatabases", "dbStats", "collStats", "collMod",
    "journal", "conflictStats", "syncStatus", "syncResolve", "idempotencyStatus", "acquireLease", "renewLease",
    "releaseLease", "getParameter", "getLog", "hostInfo", "serverStatus", "connectionStatus", "replSetGetStatus",
    "whatsmyuri", "getCmdLineOpts", "endSessions", "killSessions", "killAllSessions", "createUser", "updateUser",
    "dropUser", "usersInfo", "grantRolesToUser", "revokeRolesFromUser", "createRole", "updateRole", "dropRole",
    "rolesInfo", "grantPrivilegesToRole", "revokePrivilegesFromRole", "commitTransaction", "abortTransaction"};

std::string Bin(const std::string& bytes) {
  // Extended JSON binary: base64 of the bytes.
  static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out.push_back(kB64[(v >> k) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return R"({"$binary": {"base64": ")" + out + R"(", "subType": "00"}})";
}

std::string Payload(const Document& reply) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, reply.bson(), "payload") || !BSON_ITER_HOLDS_BINARY(&it)) return std::string();
  bson_subtype_t sub;
  uint32_t n = 0;
  const uint8_t* data = nullptr;
  bson_iter_binary(&it, &sub, &n, &data);
  return std::string(reinterpret_cast<const char*>(data), n);
}

class WireAuthTest : public ::testing::Test {
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
  void StartServer(bool auth) {
    server::ServerOptions opts;
    opts.port = 0;
    opts.quiet = true;
    opts.auth = auth;
    opts.log = [](const std::string&) {};
    auto s = server::WireServer::Start(db_.get(), opts);
    ASSERT_OK(s);
    server_ = std::move(*s);
  }
  void Owner(const std::string& json) {
    Document r = db_->RunCommand(Json(json).view());
    ASSERT_EQ(IntAt(r.bson(), "ok"), 1) << r.ToJson();
  }
  void MakeUsers() {
    Owner(R"({"createRole": "orderStatus", "$db": "admin", "roles": [], "privileges": [
              {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"], "fields": ["status", "n"]}]})");
    Owner(R"({"createUser": "email", "pwd": "e-pass", "roles": [{"role": "orderStatus", "db": "admin"}], "$db": "admin"})");
    Owner(R"({"createUser": "admin", "pwd": "a-pass", "roles": ["root"], "$db": "admin"})");
    Owner(R"({"insert": "orders", "documents": [{"_id": 1, "status": "new", "price": 10, "n": 0}], "$db": "shop"})");
  }
  WireClient Connect() {
    WireClient c;
    EXPECT_TRUE(c.ConnectTcp(server_->port()));
    return c;
  }
  Document Run(WireClient& c, const std::string& json) {
    Document cmd = Json(json);
    if (!c.Send(test::OpMsg(++request_id_, cmd.bson()))) return Document();
    auto reply = c.RecvMessage();
    if (!reply) return Document();
    return test::MsgBody(*reply);
  }
  // A whole conversation; returns the last reply (ok or the failure).
  Document Authenticate(WireClient& c, const std::string& user, const std::string& pwd, bool skip_empty = true,
                        const std::string& db = "admin") {
    test::ScramClient scram(user, pwd);
    int rc = 0;
    std::string first = scram.Step("", &rc);
    Document start = Run(c, R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(first) +
                                R"(, "autoAuthorize": 1, "options": {"skipEmptyExchange": )" +
                                (skip_empty ? "true" : "false") + R"(}, "$db": ")" + db + R"("})");
    if (IntAt(start.bson(), "ok") != 1) return start;
    EXPECT_FALSE(test::IntAt(start.bson(), "done"));
    std::string fin = scram.Step(Payload(start), &rc);
    Document cont = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                               R"(, "payload": )" + Bin(fin) + R"(, "$db": ")" + db + R"("})");
    if (IntAt(cont.bson(), "ok") != 1) return cont;
    scram.Step(Payload(cont), &rc);
    EXPECT_EQ(rc, GSASL_OK) << "the server's signature did not verify";
    if (!skip_empty) {
      EXPECT_FALSE(test::IntAt(cont.bson(), "done"));
      cont = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                        R"(, "payload": )" + Bin("") + R"(, "$db": ")" + db + R"("})");
    }
    EXPECT_TRUE(test::IntAt(cont.bson(), "done")) << cont.ToJson();
    return cont;
  }

  test::TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::WireServer> server_;
  int32_t request_id_ = 0;
};

TEST_F(WireAuthTest, AnUnauthenticatedClientMayOnlyHandshakeAndPing) {
  MakeUsers();
  StartServer(false);  // users exist: authentication is required anyway
  WireClient c = Connect();
  EXPECT_EQ(IntAt(Run(c, R"({"hello": 1, "$db": "admin"})").bson(), "ok"), 1);
  EXPECT_EQ(IntAt(Run(c, R"({"isMaster": 1, "$db": "admin"})").bson(), "ok"), 1);
  EXPECT_EQ(IntAt(Run(c, R"({"ping": 1, "$db": "admin"})").bson(), "ok"), 1);
  for (const char* name : kEveryCommand) {
    Document r = Run(c, std::string(R"({")") + name + R"(": "orders", "$db": "shop"})");
    EXPECT_EQ(IntAt(r.bson(), "code"), 13) << name << " -> " << r.ToJson();
  }
  // Nothing was written or created by any of them.
  auto all = db_->GetCollection("shop", "orders").Find(Json("{}").view());
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 1u);
  auto users = db_->RunCommand(Json(R"({"usersInfo": 1, "$db": "admin"})").view());
  EXPECT_FALSE(test::HasPath(users.bson(), "users.2"));
}

TEST_F(WireAuthTest, ScramAuthenticatesAndTheUserIsTheAgent) {
  MakeUsers();
  StartServer(true);
  for (bool skip_empty : {true, false}) {
    WireClient c = Connect();
    Document done = Authenticate(c, "email", "e-pass", skip_empty);
    ASSERT_EQ(IntAt(done.bson(), "ok"), 1) << done.ToJson();
    Document status = Run(c, R"({"connectionStatus": 1, "$db": "admin"})");
    EXPECT_EQ(StrAt(status.bson(), "authInfo.authenticatedUsers.0.user"), "email");
    Document ok = Run(c, R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "paid"}}}], "$db": "shop"})");
    EXPECT_EQ(IntAt(ok.bson(), "nModified"), skip_empty ? 1 : 0) << ok.ToJson();  // the second run sets the same value
    Document price = Run(c, R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"price": 0}}}], "$db": "shop"})");
    EXPECT_EQ(IntAt(price.bson(), "writeErrors.0.code"), 13);
    EXPECT_EQ(StrAt(price.bson(), "writeErrors.0.errInfo.path"), "price");
    Document other = Run(c, R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "x"}}}],
                                "writeContext": {"agentId": "admin"}, "$db": "shop"})");
    EXPECT_EQ(IntAt(other.bson(), "code"), 13) << other.ToJson();
    EXPECT_EQ(IntAt(Run(c, R"({"find": "customers", "$db": "shop"})").bson(), "code"), 13);
    EXPECT_EQ(IntAt(Run(c, R"({"logout": 1, "$db": "admin"})").bson(), "ok"), 1);
    EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);  // logged out
  }
  auto j = db_->ReadJournal(JournalQuery{"shop", "orders", 0, 0});
  ASSERT_OK(j);
  int updates_by_email = 0;
  for (const Document& e : j->events) {
    if (StrAt(e.bson(), "op") == "update" && StrAt(e.bson(), "writeContext.agentId") == "email") ++updates_by_email;
  }
  EXPECT_EQ(updates_by_email, 1);
  EXPECT_EQ(StrAt(db_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view())->value().bson(), "status"),
            "paid");
}

TEST_F(WireAuthTest, SpeculativeAuthenticationInHello) {
  MakeUsers();
  StartServer(true);
  WireClient c = Connect();
  test::ScramClient scram("email", "e-pass");
  int rc = 0;
  std::string first = scram.Step("", &rc);
  Document hello = Run(c, R"({"hello": 1, "saslSupportedMechs": "admin.email", "speculativeAuthenticate":
      {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(first) +
                              R"(, "options": {"skipEmptyExchange": true}, "db": "admin"}, "$db": "admin"})");
  ASSERT_EQ(IntAt(hello.bson(), "ok"), 1) << hello.ToJson();
  EXPECT_EQ(StrAt(hello.bson(), "saslSupportedMechs.0"), "SCRAM-SHA-256");
  ASSERT_TRUE(test::HasPath(hello.bson(), "speculativeAuthenticate.payload"));
  bson_iter_t it, sub;
  ASSERT_TRUE(bson_iter_init_find(&it, hello.bson(), "speculativeAuthenticate") && BSON_ITER_HOLDS_DOCUMENT(&it));
  uint32_t len;
  const uint8_t* data;
  bson_iter_document(&it, &len, &data);
  bson_t spec;
  ASSERT_TRUE(bson_init_static(&spec, data, len));
  (void)sub;
  std::string fin = scram.Step(Payload(Document::Copy(&spec)), &rc);
  Document cont = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(&spec, "conversationId")) +
                             R"(, "payload": )" + Bin(fin) + R"(, "$db": "admin"})");
  ASSERT_EQ(IntAt(cont.bson(), "ok"), 1) << cont.ToJson();
  EXPECT_TRUE(test::IntAt(cont.bson(), "done"));
  EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "ok"), 1);
  // getParameter is the server's (root's); the agent is refused it.
  EXPECT_EQ(IntAt(Run(c, R"({"getParameter": 1, "authenticationMechanisms": 1, "$db": "admin"})").bson(), "code"), 13);
  Document mechs = db_->RunCommand(Json(R"({"getParameter": 1, "authenticationMechanisms": 1, "$db": "admin"})").view());
  EXPECT_EQ(StrAt(mechs.bson(), "authenticationMechanisms.0"), "SCRAM-SHA-256") << mechs.ToJson();
  // No mechanisms are named for a user that does not exist.
  Document none = Run(c, R"({"hello": 1, "saslSupportedMechs": "admin.nobody", "$db": "admin"})");
  EXPECT_FALSE(test::HasPath(none.bson(), "saslSupportedMechs"));
}

TEST_F(WireAuthTest, WrongPasswordsReplaysAndHostileSaslMessagesFail) {
  MakeUsers();
  StartServer(true);
  {
    WireClient c = Connect();
    Document r = Authenticate(c, "email", "wrong");
    EXPECT_EQ(IntAt(r.bson(), "code"), 18) << r.ToJson();
    EXPECT_EQ(StrAt(r.bson(), "errmsg"), "Authentication failed.");
    EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);
    Document u = Authenticate(c, "nobody", "e-pass");
    EXPECT_EQ(IntAt(u.bson(), "code"), 18);  // an unknown user looks the same
    Document other_db = Authenticate(c, "email", "e-pass", true, "shop");  // email is a user of admin
    EXPECT_EQ(IntAt(other_db.bson(), "code"), 18);
  }
  // Record a good conversation, then replay its final message in a new one.
  std::string first, fin;
  {
    WireClient c = Connect();
    test::ScramClient scram("email", "e-pass");
    int rc = 0;
    first = scram.Step("", &rc);
    Document start = Run(c, R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(first) + R"(, "$db": "admin"})");
    fin = scram.Step(Payload(start), &rc);
    Document ok = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                             R"(, "payload": )" + Bin(fin) + R"(, "$db": "admin"})");
    ASSERT_EQ(IntAt(ok.bson(), "ok"), 1);
  }
  {
    WireClient c = Connect();
    Document start = Run(c, R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(first) + R"(, "$db": "admin"})");
    ASSERT_EQ(IntAt(start.bson(), "ok"), 1);
    Document replay = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                                 R"(, "payload": )" + Bin(fin) + R"(, "$db": "admin"})");
    EXPECT_EQ(IntAt(replay.bson(), "code"), 18) << replay.ToJson();
    EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);
  }
  // Truncated, corrupted and out-of-order messages: errors, never a crash.
  const std::string hostile[] = {
      R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(first.substr(0, 5)) + R"(, "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(std::string(200000, 'n')) + R"(, "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": "SCRAM-SHA-1", "payload": )" + Bin(first) + R"(, "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": "PLAIN", "payload": )" + Bin(std::string("\0email\0e-pass", 13)) + R"(, "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": 5, "payload": )" + Bin(first) + R"(, "$db": "admin"})",
      R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": 7, "$db": "admin"})",
      R"({"saslContinue": 1, "conversationId": 99, "payload": )" + Bin(fin) + R"(, "$db": "admin"})",
      R"({"saslContinue": 1, "payload": )" + Bin(fin) + R"(, "$db": "admin"})",
  };
  for (const std::string& h : hostile) {
    WireClient c = Connect();
    Document r = Run(c, h);
    EXPECT_EQ(IntAt(r.bson(), "ok"), 0) << h << " -> " << r.ToJson();
    if (IntAt(r.bson(), "ok") != 1) {
      EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);
    }
  }
  // A conversation whose final message was truncated or corrupted.
  for (int cut : {1, 10, -1}) {
    WireClient c = Connect();
    test::ScramClient scram("email", "e-pass");
    int rc = 0;
    Document start = Run(c, R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(scram.Step("", &rc)) +
                                R"(, "$db": "admin"})");
    std::string f = scram.Step(Payload(start), &rc);
    if (cut > 0) {
      f = f.substr(0, f.size() - static_cast<size_t>(cut));
    } else {
      f[f.size() - 3] ^= 1;  // one bit of the proof
    }
    Document r = Run(c, R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                            R"(, "payload": )" + Bin(f) + R"(, "$db": "admin"})");
    EXPECT_EQ(IntAt(r.bson(), "ok"), 0) << r.ToJson();
    EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);
  }
  WireClient alive = Connect();
  EXPECT_EQ(IntAt(Authenticate(alive, "admin", "a-pass").bson(), "ok"), 1);
}

// The in-process matrix of roles x actions x paths (permission_matrix.h),
// each user on a connection of its own that authenticated with SCRAM.
TEST_F(WireAuthTest, MatrixOfRolesActionsAndPathsOverTheWire) {
  for (const std::string& cmd : test::MatrixSetup()) Owner(cmd);
  StartServer(true);
  std::map<std::string, WireClient> conns;
  for (const test::MatrixCase& c : test::MatrixCases()) {
    auto it = conns.find(c.user);
    if (it == conns.end()) {
      it = conns.emplace(c.user, Connect()).first;
      Document done = Authenticate(it->second, c.user, c.password, true, c.user_db);
      ASSERT_EQ(IntAt(done.bson(), "ok"), 1) << c.user << ": " << done.ToJson();
    }
    auto before = db_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
    ASSERT_OK(before);
    Document reply = Run(it->second, c.command);
    std::string path;
    EXPECT_EQ(test::MatrixReplyCode(reply, &path), c.code) << c.user << ": " << c.command << " -> " << reply.ToJson();
    if (c.code == 13) {
      EXPECT_EQ(path, c.path) << c.command;
      auto after = db_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
      ASSERT_OK(after);
      EXPECT_EQ((*after)->ToJson(), (*before)->ToJson()) << c.command;
    }
  }
  test::ExpectMatrixOutcome(db_.get());
}

TEST_F(WireAuthTest, TheFirstUserComesFromLoopbackOnly) {
  StartServer(true);  // --auth and no user yet
  WireClient c = Connect();
  EXPECT_EQ(IntAt(Run(c, R"({"find": "orders", "$db": "shop"})").bson(), "code"), 13);
  EXPECT_EQ(IntAt(Run(c, R"({"createUser": "root", "pwd": "r", "roles": ["root"], "$db": "admin"})").bson(), "ok"), 1);
  // The exception ends with the first user.
  Document second = Run(c, R"({"createUser": "second", "pwd": "s", "roles": ["root"], "$db": "admin"})");
  EXPECT_EQ(IntAt(second.bson(), "code"), 13);
  EXPECT_EQ(IntAt(Authenticate(c, "root", "r").bson(), "ok"), 1);
  EXPECT_EQ(IntAt(Run(c, R"({"createUser": "second", "pwd": "s", "roles": [], "$db": "admin"})").bson(), "ok"), 1);
}

// Loopback clients racing the localhost exception: in every round exactly
// one creates a user, the others are refused (the engine decides "no user
// yet" under the lock it creates the user with, not the dispatcher alone).
TEST_F(WireAuthTest, RacingLoopbackClientsGetExactlyOneFirstUser) {
  StartServer(true);
  constexpr int kClients = 6, kRounds = 25;
  std::vector<WireClient> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Connect());
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> ready{0}, created{0}, refused{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back([&, i] {
        const std::string name = "r" + std::to_string(round) + "c" + std::to_string(i);
        Document cmd = Json(R"({"createUser": ")" + name + R"(", "pwd": "p", "roles": ["root"], "$db": "admin"})");
        ready.fetch_add(1);
        while (ready.load() < kClients) std::this_thread::yield();
        if (!clients[i].Send(test::OpMsg(100000 * (i + 1) + round, cmd.bson()))) return;
        auto reply = clients[i].RecvMessage();
        if (!reply) return;
        Document body = test::MsgBody(*reply);
        if (IntAt(body.bson(), "ok") == 1) ++created;
        if (IntAt(body.bson(), "code") == 13) ++refused;
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(created.load(), 1) << "round " << round;
    ASSERT_EQ(refused.load(), kClients - 1) << "round " << round;
    Document users = db_->RunCommand(Json(R"({"usersInfo": 1, "$db": "admin"})").view());
    ASSERT_TRUE(test::HasPath(users.bson(), "users.0.user"));
    ASSERT_FALSE(test::HasPath(users.bson(), "users.1")) << users.ToJson();
    // The owner drops it: the next round starts with no user again.
    Owner(R"({"dropUser": ")" + test::StrAt(users.bson(), "users.0.user") + R"(", "$db": "admin"})");
  }
}

TEST_F(WireAuthTest, WithoutUsersOrAuthTheServerIsOpenAsBefore) {
  StartServer(false);
  WireClient c = Connect();
  EXPECT_EQ(IntAt(Run(c, R"({"insert": "orders", "documents": [{"_id": 5}], "$db": "shop"})").bson(), "n"), 1);
}

// Connections authenticating as two agents at once, each incrementing one
// field through the gate: every increment lands, none is lost.
TEST_F(WireAuthTest, ConcurrentAuthenticatedConnectionsLoseNoUpdate) {
  MakeUsers();
  Owner(R"({"createUser": "email2", "pwd": "e2", "roles": [{"role": "orderStatus", "db": "admin"}], "$db": "admin"})");
  StartServer(true);
  constexpr int kThreads = 4, kIncrements = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      WireClient c;
      if (!c.ConnectTcp(server_->port())) {
        ++failures;
        return;
      }
      test::ScramClient scram(t % 2 ? "email" : "email2", t % 2 ? "e-pass" : "e2");
      int rc = 0;
      int32_t id = 1000 * (t + 1);
      auto run = [&](const std::string& json) {
        Document cmd = Json(json);
        c.Send(test::OpMsg(++id, cmd.bson()));
        auto reply = c.RecvMessage();
        return reply ? test::MsgBody(*reply) : Document();
      };
      Document start = run(R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": )" + Bin(scram.Step("", &rc)) +
                           R"(, "options": {"skipEmptyExchange": true}, "$db": "admin"})");
      Document done = run(R"({"saslContinue": 1, "conversationId": )" + std::to_string(IntAt(start.bson(), "conversationId")) +
                          R"(, "payload": )" + Bin(scram.Step(Payload(start), &rc)) + R"(, "$db": "admin"})");
      if (IntAt(done.bson(), "ok") != 1) {
        ++failures;
        return;
      }
      for (int i = 0; i < kIncrements; ++i) {
        Document r = run(R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})");
        if (IntAt(r.bson(), "nModified") != 1) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto doc = db_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(doc);
  EXPECT_EQ(IntAt((*doc)->bson(), "n"), kThreads * kIncrements);
}

}  // namespace
}  // namespace gatedb
