// Agents and roles in process: a matrix of roles x actions x paths, each
// allowed or refused as declared, through commands (RunCommand) and the
// typed C++ API of handles made with Database::As; refusals are
// Unauthorized 13 naming agent, action and path, journaled, counted in
// conflictStats, and leave nothing written.
#include <atomic>
#include <thread>

#include "gatedb/db.h"
#include "tests/testutil/permission_matrix.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::IntAt;
using test::Json;
using test::StrAt;
using test::HasPath;
using test::StatusIs;

class PermissionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.path());
    ASSERT_OK(db);
    owner_ = std::move(*db);
    for (const std::string& cmd : test::MatrixSetup()) Run(cmd);
  }

  void Run(const std::string& json) {
    Document reply = owner_->RunCommand(Json(json).view());
    ASSERT_EQ(IntAt(reply.bson(), "ok"), 1) << json << " -> " << reply.ToJson();
  }

  std::unique_ptr<Database> As(const std::string& user, const std::string& db = "admin") {
    auto h = owner_->As(Identity{user, db});
    EXPECT_OK(h);
    return h.ok() ? std::move(*h) : nullptr;
  }

  // The order as it is now, read by the owner.
  Document Order() {
    auto d = owner_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
    EXPECT_OK(d);
    return d.ok() && *d ? std::move(**d) : Document();
  }

  test::TempDir dir_;
  std::unique_ptr<Database> owner_;
};

TEST_F(PermissionsTest, MatrixOfRolesActionsAndPathsThroughCommands) {
  for (const test::MatrixCase& c : test::MatrixCases()) {
    std::unique_ptr<Database> h = As(c.user, c.user_db);
    ASSERT_NE(h, nullptr);
    const Document before = Order();
    std::string path;
    Document reply = h->RunCommand(Json(c.command).view());
    EXPECT_EQ(test::MatrixReplyCode(reply, &path), c.code) << c.user << ": " << c.command << " -> " << reply.ToJson();
    if (c.code == 13) {
      EXPECT_EQ(path, c.path) << c.command << " -> " << reply.ToJson();
      // Nothing of a refused write is stored.
      EXPECT_EQ(Order().ToJson(), before.ToJson()) << c.command;
    }
  }
  test::ExpectMatrixOutcome(owner_.get());
}

TEST_F(PermissionsTest, RefusalsNameTheAgentActionAndPathAreJournaledAndCounted) {
  auto email = As("email");
  Document reply = email->RunCommand(Json(R"({"update": "orders", "updates": [{"q": {"_id": 1},
      "u": {"$set": {"price": 0}}, "basisVersion": 0}], "$db": "shop"})").view());
  ASSERT_EQ(IntAt(reply.bson(), "writeErrors.0.code"), 13) << reply.ToJson();
  EXPECT_EQ(StrAt(reply.bson(), "writeErrors.0.codeName"), "Unauthorized");
  EXPECT_EQ(StrAt(reply.bson(), "writeErrors.0.errInfo.agentId"), "email");
  EXPECT_EQ(StrAt(reply.bson(), "writeErrors.0.errInfo.action"), "update");
  EXPECT_EQ(StrAt(reply.bson(), "writeErrors.0.errInfo.path"), "price");
  EXPECT_EQ(StrAt(reply.bson(), "writeErrors.0.errInfo.ns"), "shop.orders");
  EXPECT_EQ(IntAt(reply.bson(), "writeErrors.0.errInfo._id"), 1);
  // A command-level refusal (no insert privilege at all).
  Document ins = email->RunCommand(Json(R"({"insert": "orders", "documents": [{"_id": 9}], "$db": "shop"})").view());
  EXPECT_EQ(IntAt(ins.bson(), "code"), 13);
  EXPECT_EQ(StrAt(ins.bson(), "errInfo.action"), "insert");
  // Both are in the journal as refused writes, by the agent's name.
  Document j = owner_->RunCommand(Json(R"({"journal": "orders", "afterSeq": 0, "limit": 100, "$db": "shop"})").view());
  int refused = 0;
  bson_iter_t it, ev;
  ASSERT_TRUE(bson_iter_init_find(&it, j.bson(), "events") && bson_iter_recurse(&it, &ev));
  while (bson_iter_next(&ev)) {
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(&ev, &len, &data);
    bson_t e;
    bson_init_static(&e, data, len);
    if (StrAt(&e, "op") != "conflict") continue;
    ++refused;
    EXPECT_EQ(StrAt(&e, "code"), "Unauthorized");
    EXPECT_EQ(StrAt(&e, "writeContext.agentId"), "email");
  }
  EXPECT_EQ(refused, 2);
  Document stats = owner_->RunCommand(Json(R"({"conflictStats": "orders", "$db": "shop"})").view());
  EXPECT_EQ(IntAt(stats.bson(), "unauthorized"), 2) << stats.ToJson();
  EXPECT_EQ(StrAt(stats.bson(), "agents.0.agentId"), "email");
  EXPECT_EQ(IntAt(stats.bson(), "agents.0.unauthorized"), 2);
  EXPECT_EQ(IntAt(stats.bson(), "conflicts"), 0);  // not version conflicts
  auto typed = owner_->GetConflictStats("shop", "orders");
  ASSERT_OK(typed);
  EXPECT_EQ(typed->unauthorized, 2);
  ASSERT_EQ(typed->unauthorized_agents.size(), 1u);
  EXPECT_EQ(typed->unauthorized_agents[0].first, "email");
  // The allowed write's event names the authenticated user as its agent.
  Document ok = email->RunCommand(Json(R"({"update": "orders", "updates": [{"q": {"_id": 1},
      "u": {"$set": {"status": "paid"}}}], "$db": "shop"})").view());
  ASSERT_EQ(IntAt(ok.bson(), "nModified"), 1) << ok.ToJson();
  auto batch = owner_->ReadJournal(JournalQuery{"shop", "orders", 0, 0});
  ASSERT_OK(batch);
  EXPECT_EQ(StrAt(batch->events.back().bson(), "op"), "update");
  EXPECT_EQ(StrAt(batch->events.back().bson(), "writeContext.agentId"), "email");
}

TEST_F(PermissionsTest, TheTypedApiIsCheckedTheSameWay) {
  auto email = As("email");
  Collection orders = email->GetCollection("shop", "orders");
  auto found = orders.FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
  UpdateOptions gated;
  gated.write.basis_version = 0;
  EXPECT_OK(orders.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"status": "paid"}})").view(), gated));
  UpdateOptions stale;
  stale.write.basis_version = 1;
  auto price = orders.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"price": 0}})").view(), stale);
  EXPECT_THAT(price, StatusIs(ErrorCode::kUnauthorized));  // permissions before the version gate
  ASSERT_NE(price.status().err_info(), nullptr);
  EXPECT_EQ(StrAt(price.status().err_info()->bson(), "path"), "price");
  EXPECT_THAT(orders.InsertOne(Json(R"({"_id": 7})").view()), StatusIs(ErrorCode::kUnauthorized));
  EXPECT_THAT(orders.DeleteOne(Json(R"({"_id": 1})").view()), StatusIs(ErrorCode::kUnauthorized));
  EXPECT_THAT(email->GetCollection("shop", "customers").Find(Json("{}").view()), StatusIs(ErrorCode::kUnauthorized));
  IndexModel by_qty;
  by_qty.keys = Json(R"({"qty": 1})");
  EXPECT_THAT(orders.CreateIndex(by_qty), StatusIs(ErrorCode::kUnauthorized));
  EXPECT_THAT(email->ReadJournal(JournalQuery{}), StatusIs(ErrorCode::kUnauthorized));
  bson_value_t one;
  one.value_type = BSON_TYPE_INT32;
  one.value.v_int32 = 1;
  EXPECT_THAT(orders.AcquireLease(Value(one), 1000, "planner"), StatusIs(ErrorCode::kUnauthorized));
  EXPECT_OK(orders.AcquireLease(Value(one), 1000, "email"));
  EXPECT_OK(orders.ReleaseLease(Value(one), "email"));
  // Inside a transaction too.
  auto txn = email->StartTransaction();
  ASSERT_OK(txn);
  UpdateOptions in_txn;
  in_txn.write.txn = txn->get();
  EXPECT_THAT(orders.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"price": 5}})").view(), in_txn),
              StatusIs(ErrorCode::kUnauthorized));
  (*txn)->Abort().PermitUnchecked();
  Document order = Order();
  EXPECT_EQ(StrAt(order.bson(), "status"), "paid");
  EXPECT_EQ(IntAt(order.bson(), "price"), 10);
  // A user that does not exist has no handle.
  EXPECT_THAT(owner_->As(Identity{"nobody", "admin"}), StatusIs(ErrorCode::kUserNotFound));
}

TEST_F(PermissionsTest, RoleChangesTakeEffectAtTheNextCall) {
  auto planner = As("planner");
  Collection orders = planner->GetCollection("shop", "orders");
  EXPECT_THAT(orders.InsertOne(Json(R"({"_id": 20})").view()), StatusIs(ErrorCode::kUnauthorized));
  Run(R"({"grantRolesToUser": "planner", "roles": [{"role": "readWrite", "db": "shop"}], "$db": "admin"})");
  EXPECT_OK(orders.InsertOne(Json(R"({"_id": 21})").view()));
  Run(R"({"revokeRolesFromUser": "planner", "roles": [{"role": "readWrite", "db": "shop"}], "$db": "admin"})");
  EXPECT_THAT(orders.InsertOne(Json(R"({"_id": 22})").view()), StatusIs(ErrorCode::kUnauthorized));
  // A role's privileges changed: its holders see it at once.
  auto email = As("email");
  Collection eo = email->GetCollection("shop", "orders");
  EXPECT_THAT(eo.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"price": 3}})").view()),
              StatusIs(ErrorCode::kUnauthorized));
  Run(R"({"grantPrivilegesToRole": "orderStatus", "$db": "admin", "privileges": [
          {"resource": {"db": "shop", "collection": "orders"}, "actions": ["update"], "fields": ["price"]}]})");
  EXPECT_OK(eo.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"price": 3}})").view()));
  // A dropped user's handle can do nothing.
  Run(R"({"dropUser": "planner", "$db": "admin"})");
  EXPECT_THAT(orders.Find(Json("{}").view()), StatusIs(ErrorCode::kUserNotFound));
}

TEST_F(PermissionsTest, UserAndRoleCommandsHaveMongoDBsShapesAndErrors) {
  auto code = [&](const char* json) { return IntAt(owner_->RunCommand(Json(json).view()).bson(), "code"); };
  EXPECT_EQ(code(R"({"createUser": "email", "pwd": "x", "roles": [], "$db": "admin"})"), 51003);
  EXPECT_EQ(code(R"({"createUser": "u1", "roles": [], "$db": "admin"})"), 2);  // no pwd
  EXPECT_EQ(code(R"({"createUser": "u1", "pwd": "x", "$db": "admin"})"), 40414);  // no roles
  EXPECT_EQ(code(R"({"createUser": "u1", "pwd": "x", "roles": ["nope"], "$db": "admin"})"), 31);
  EXPECT_EQ(code(R"({"createUser": "u1", "pwd": "x", "roles": [], "mechanisms": ["SCRAM-SHA-1"], "$db": "admin"})"), 2);
  EXPECT_EQ(code(R"({"createUser": "u1", "pwd": "x", "roles": [], "colour": 1, "$db": "admin"})"), 40415);
  EXPECT_EQ(code(R"({"createUser": "u1", "pwd": 5, "roles": [], "$db": "admin"})"), 14);
  EXPECT_EQ(code(R"({"dropUser": "nobody", "$db": "admin"})"), 11);
  EXPECT_EQ(code(R"({"createRole": "orderStatus", "privileges": [], "roles": [], "$db": "admin"})"), 51002);
  EXPECT_EQ(code(R"({"createRole": "read", "privileges": [], "roles": [], "$db": "admin"})"), 2);
  EXPECT_EQ(code(R"({"createRole": "r2", "privileges": [{"resource": {"db": "a", "collection": "b"},
      "actions": ["fly"]}], "roles": [], "$db": "admin"})"), 2);
  EXPECT_EQ(code(R"({"dropRole": "nope", "$db": "admin"})"), 31);
  EXPECT_EQ(code(R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": "", "$db": "admin"})"), 115);
  Document info = owner_->RunCommand(Json(R"({"usersInfo": "email", "showPrivileges": true, "$db": "admin"})").view());
  EXPECT_EQ(StrAt(info.bson(), "users.0._id"), "admin.email") << info.ToJson();
  EXPECT_EQ(StrAt(info.bson(), "users.0.roles.0.role"), "orderStatus");
  EXPECT_EQ(StrAt(info.bson(), "users.0.mechanisms.0"), "SCRAM-SHA-256");
  EXPECT_EQ(StrAt(info.bson(), "users.0.inheritedPrivileges.0.fields.0"), "status");
  EXPECT_FALSE(HasPath(info.bson(), "users.0.credentials"));  // only with showCredentials
  Document creds = owner_->RunCommand(Json(R"({"usersInfo": "email", "showCredentials": true, "$db": "admin"})").view());
  EXPECT_EQ(IntAt(creds.bson(), "users.0.credentials.SCRAM-SHA-256.iterationCount"), 15000);
  Document all = owner_->RunCommand(Json(R"({"usersInfo": 1, "$db": "admin"})").view());
  EXPECT_EQ(test::StringsAt(all.bson(), "users").size(), 0u);  // documents, not strings
  EXPECT_TRUE(HasPath(all.bson(), "users.2.user"));  // email, planner, clerk
  Document roles = owner_->RunCommand(Json(R"({"rolesInfo": "orderStatus", "showPrivileges": true, "$db": "admin"})").view());
  EXPECT_EQ(StrAt(roles.bson(), "roles.0.privileges.0.sources.0"), "email") << roles.ToJson();
  EXPECT_FALSE(test::IntAt(roles.bson(), "roles.0.isBuiltin"));
  Document builtin = owner_->RunCommand(Json(R"({"rolesInfo": "readWrite", "showPrivileges": true, "$db": "shop"})").view());
  EXPECT_EQ(StrAt(builtin.bson(), "roles.0.role"), "readWrite");
  // Users survive a reopen.
  owner_.reset();
  auto db = Database::Open(dir_.path());
  ASSERT_OK(db);
  owner_ = std::move(*db);
  EXPECT_OK(owner_->As(Identity{"email", "admin"}));
}

TEST_F(PermissionsTest, OpenWithAnIdentityAndWithoutRootForStrangers) {
  owner_.reset();
  Options as_email;
  as_email.identity = Identity{"email", "admin"};
  {
    auto db = Database::Open(dir_.path(), as_email);
    ASSERT_OK(db);
    Collection orders = (*db)->GetCollection("shop", "orders");
    EXPECT_OK(orders.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$set": {"status": "x"}})").view()));
    EXPECT_THAT(orders.InsertOne(Json(R"({"_id": 2})").view()), StatusIs(ErrorCode::kUnauthorized));
  }
  Options nobody;
  nobody.identity = Identity{"nobody", "admin"};
  EXPECT_THAT(Database::Open(dir_.path(), nobody), StatusIs(ErrorCode::kUserNotFound));
  Options strangers;
  strangers.unauthenticated_is_root = false;
  auto db = Database::Open(dir_.path(), strangers);
  ASSERT_OK(db);
  EXPECT_EQ(IntAt((*db)->RunCommand(Json(R"({"ping": 1})").view()).bson(), "ok"), 1);
  EXPECT_EQ(IntAt((*db)->RunCommand(Json(R"({"find": "orders", "$db": "shop"})").view()).bson(), "code"), 13);
  EXPECT_THAT((*db)->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 3})").view()),
              StatusIs(ErrorCode::kUnauthorized));
  auto email = (*db)->As(Identity{"email", "admin"});  // the opener may still hand out identities
  ASSERT_OK(email);
  EXPECT_OK((*email)->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view()));
}

// An idempotency key is its agent's: another user presenting the same
// (taskId, writeSeq) is refused and learns nothing of the stored reply (the
// ids it inserted), through commands and the typed API; the agent that
// wrote it, and the owner, still get the reply.
TEST_F(PermissionsTest, AUserReplaysOnlyItsOwnAgentsIdempotencyRecords) {
  Run(R"({"createUser": "writer2", "pwd": "w2", "roles": ["readWrite"], "$db": "shop"})");
  auto writer = As("writer", "shop");
  auto writer2 = As("writer2", "shop");
  const std::string insert = R"({"insert": "tasks", "documents": [{"_id": "secret-1", "v": 1}],
      "writeContext": {"taskId": "t-42", "writeSeq": 1}, "$db": "shop"})";
  Document first = writer->RunCommand(Json(insert).view());
  ASSERT_EQ(IntAt(first.bson(), "n"), 1) << first.ToJson();

  Document other = writer2->RunCommand(Json(insert).view());
  EXPECT_EQ(IntAt(other.bson(), "ok"), 0) << other.ToJson();
  EXPECT_EQ(StrAt(other.bson(), "codeName"), "IdempotencyKeyReuse") << other.ToJson();
  EXPECT_EQ(StrAt(other.bson(), "errInfo.agentId"), "writer2");
  EXPECT_FALSE(HasPath(other.bson(), "n")) << other.ToJson();
  EXPECT_EQ(other.ToJson().find("secret-1"), std::string::npos) << other.ToJson();

  // The typed API goes through the same check.
  WriteOptions o;
  o.context.task_id = "t-42";
  o.context.write_seq = 1;
  EXPECT_THAT(writer2->GetCollection("shop", "tasks").InsertOne(Json(R"({"_id": "secret-1", "v": 1})").view(), o),
              StatusIs(ErrorCode::kIdempotencyKeyReuse));

  // The writer's own retry, and the owner's, replay the first reply.
  Document again = writer->RunCommand(Json(insert).view());
  EXPECT_EQ(IntAt(again.bson(), "n"), 1) << again.ToJson();
  EXPECT_TRUE(HasPath(again.bson(), "replayed")) << again.ToJson();
  Document owner = owner_->RunCommand(Json(insert).view());
  EXPECT_EQ(IntAt(owner.bson(), "n"), 1) << owner.ToJson();
  EXPECT_TRUE(HasPath(owner.bson(), "replayed")) << owner.ToJson();
  auto count = owner_->GetCollection("shop", "tasks").CountDocuments(Json("{}").view());
  ASSERT_OK(count);
  EXPECT_EQ(*count, 1);
}

// A keyed transaction commit is its agent's too: another user committing
// under the same (taskId, writeSeq) is refused, not answered as a replay
// that would drop its transaction's writes; a commit naming another agent
// is Unauthorized; the agent's own retry, through WithTransaction too,
// replays.
TEST_F(PermissionsTest, AKeyedTransactionCommitIsItsAgentsOnly) {
  Run(R"({"createUser": "writer2", "pwd": "w2", "roles": ["readWrite"], "$db": "shop"})");
  auto writer = As("writer", "shop");
  auto writer2 = As("writer2", "shop");
  WriteContext key;
  key.task_id = "tx-7";
  key.write_seq = 1;
  auto insert_in = [](Database& db, Transaction* txn, const char* id) {
    WriteOptions o;
    o.txn = txn;
    return db.GetCollection("shop", "ledger").InsertOne(Json(std::string(R"({"_id": ")") + id + "\"}").view(), o)
        .status();
  };
  {
    auto txn = writer->StartTransaction();
    ASSERT_OK(txn);
    ASSERT_OK(insert_in(*writer, txn->get(), "a"));
    ASSERT_OK((*txn)->Commit(key));
  }
  {
    auto txn = writer2->StartTransaction();
    ASSERT_OK(txn);
    ASSERT_OK(insert_in(*writer2, txn->get(), "b"));
    EXPECT_THAT((*txn)->Commit(key), StatusIs(ErrorCode::kIdempotencyKeyReuse));
  }
  {
    auto txn = writer2->StartTransaction();
    ASSERT_OK(txn);
    ASSERT_OK(insert_in(*writer2, txn->get(), "c"));
    WriteContext spoof = key;
    spoof.agent_id = "writer";
    spoof.write_seq = 2;
    EXPECT_THAT((*txn)->Commit(spoof), StatusIs(ErrorCode::kUnauthorized));
  }
  WithTransactionOptions again;
  again.commit_context = key;
  bool ran = false;
  auto body = [&](Transaction& txn) {
    ran = true;
    return insert_in(*writer2, &txn, "d");
  };
  EXPECT_THAT(writer2->WithTransaction(body, again), StatusIs(ErrorCode::kIdempotencyKeyReuse));
  EXPECT_FALSE(ran);
  // The writer's own re-run is answered from the log, without running.
  EXPECT_OK(writer->WithTransaction(body, again));
  EXPECT_FALSE(ran);
  auto n = owner_->GetCollection("shop", "ledger").CountDocuments(Json("{}").view());
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1);  // "a" only: every refused commit left nothing
}

// Two permitted agents hammer one document's status through the version
// gate while a third, not permitted to change it, tries the same: no
// permitted update is lost, and none of the refused ones lands.
TEST_F(PermissionsTest, ThreadsThroughTheGateLoseNothingAndRefusedWritesNeverLand) {
  Run(R"({"createRole": "counter", "$db": "admin", "roles": [],
          "privileges": [{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
                          "fields": ["n"]}]})");
  Run(R"({"createUser": "a1", "pwd": "x", "roles": [{"role": "counter", "db": "admin"}], "$db": "admin"})");
  Run(R"({"createUser": "a2", "pwd": "x", "roles": [{"role": "counter", "db": "admin"}], "$db": "admin"})");
  Run(R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"n": 0}}}], "$db": "shop"})");
  constexpr int kPerAgent = 150;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (const char* user : {"a1", "a2"}) {
    threads.emplace_back([&, user] {
      auto h = As(user);
      Collection orders = h->GetCollection("shop", "orders");
      for (int i = 0; i < kPerAgent; ++i) {
        GatedWriteOptions o;
        o.max_attempts = 100000;  // two writers of one document: many rounds under a sanitizer's slowness
        auto r = orders.WriteWithVersionGate(Json(R"({"_id": 1})").view(), [](const Document& cur) -> StatusOr<Document> {
          return Json("{\"$set\": {\"n\": " + std::to_string(IntAt(cur.bson(), "n") + 1) + "}}");
        }, o);
        ASSERT_OK(r);
      }
    });
  }
  threads.emplace_back([&] {
    auto h = As("email");
    Collection orders = h->GetCollection("shop", "orders");
    for (int i = 0; i < kPerAgent; ++i) {
      auto r = orders.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 1000}})").view());
      if (!r.ok() && r.status().code() == ErrorCode::kUnauthorized) ++refused;
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(IntAt(Order().bson(), "n"), 2 * kPerAgent);
  EXPECT_EQ(refused.load(), kPerAgent);
}

}  // namespace
}  // namespace gatedb
