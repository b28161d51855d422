// The authorization model (privileges, built-in roles, principals) and
// SCRAM-SHA-256 through libgsasl, with a real libgsasl client on the other
// side of every conversation.
#include <gtest/gtest.h>

#include <map>

#include "engine/auth/principal.h"
#include "engine/auth/privilege.h"
#include "engine/auth/scram.h"
#include "tests/testutil/scram_client.h"

namespace gatedb {
namespace auth {
namespace {

Document Json(const char* json) {
  auto d = Document::FromJson(json);
  EXPECT_TRUE(d.ok()) << json;
  return d.ok() ? std::move(*d) : Document();
}

Privilege Priv(const char* json) {
  Privilege p;
  Status s = ParsePrivilege(Json(json).bson(), &p);
  EXPECT_TRUE(s.ok()) << json << ": " << s.ToString();
  return p;
}

std::shared_ptr<const Principal> Resolve(std::vector<RoleName> roles, std::map<std::string, RoleRecord> custom = {}) {
  UserRecord u;
  u.user = "agent";
  u.db = "admin";
  u.roles = std::move(roles);
  auto p = Principal::Resolve(u, [&](const RoleName& n) -> StatusOr<std::optional<RoleRecord>> {
    auto it = custom.find(n.full());
    if (it == custom.end()) return std::optional<RoleRecord>();
    return std::optional<RoleRecord>(it->second);
  });
  EXPECT_TRUE(p.ok());
  return *p;
}

TEST(PrivilegeTest, ParsesMongoShapesAndGatedbFields) {
  Privilege p = Priv(R"({"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
                         "fields": ["status", "notes.text"], "sources": ["email"]})");
  EXPECT_EQ(p.resource.db, "shop");
  EXPECT_TRUE(p.actions.test(static_cast<size_t>(Action::kFind)));
  EXPECT_TRUE(p.actions.test(static_cast<size_t>(Action::kUpdate)));
  EXPECT_FALSE(p.actions.test(static_cast<size_t>(Action::kInsert)));
  ASSERT_TRUE(p.fields);
  EXPECT_EQ(p.fields->size(), 2u);
  // Round trip through the stored form.
  bson_t out = BSON_INITIALIZER;
  AppendPrivilege(p, &out, "p");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, &out, "p"));
  uint32_t len;
  const uint8_t* data;
  bson_iter_document(&it, &len, &data);
  bson_t inner;
  ASSERT_TRUE(bson_init_static(&inner, data, len));
  Privilege again;
  ASSERT_TRUE(ParsePrivilege(&inner, &again).ok());
  EXPECT_TRUE(again.resource == p.resource);
  EXPECT_EQ(again.actions, p.actions);
  EXPECT_EQ(*again.fields, *p.fields);
  EXPECT_EQ(*again.sources, *p.sources);
  bson_destroy(&out);
}

TEST(PrivilegeTest, RefusesMalformedPrivileges) {
  struct Case {
    const char* json;
    ErrorCode code;
  } cases[] = {
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": ["fly"]})", ErrorCode::kBadValue},
      {R"({"resource": {"db": "a"}, "actions": ["find"]})", ErrorCode::kBadValue},
      {R"({"resource": {"cluster": true, "db": "a", "collection": ""}, "actions": ["find"]})", ErrorCode::kBadValue},
      {R"({"resource": {"cluster": false}, "actions": ["find"]})", ErrorCode::kBadValue},
      {R"({"resource": {"db": "a", "collection": "b"}})", ErrorCode::kLocation40414},
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": "find"})", ErrorCode::kTypeMismatch},
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": ["find"], "colour": 1})", ErrorCode::kLocation40415},
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": ["update"], "fields": ["a..b"]})", ErrorCode::kBadValue},
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": ["update"], "fields": [""]})", ErrorCode::kBadValue},
      {R"({"resource": {"db": "a", "collection": "b"}, "actions": ["update"], "fields": [1]})", ErrorCode::kTypeMismatch},
      {R"({"resource": {"cluster": true}, "actions": ["update"], "fields": ["a"]})", ErrorCode::kBadValue},
  };
  for (const Case& c : cases) {
    Privilege p;
    Status s = ParsePrivilege(Json(c.json).bson(), &p);
    EXPECT_EQ(s.code(), c.code) << c.json << ": " << s.ToString();
  }
}

TEST(PrivilegeTest, ResourcesCoverAsMongoDBMatchesThem) {
  auto r = [](const char* json) { return Priv(json).resource; };
  Resource one = r(R"({"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]})");
  Resource db = r(R"({"resource": {"db": "shop", "collection": ""}, "actions": ["find"]})");
  Resource coll_any_db = r(R"({"resource": {"db": "", "collection": "orders"}, "actions": ["find"]})");
  Resource any_normal = r(R"({"resource": {"db": "", "collection": ""}, "actions": ["find"]})");
  Resource cluster = r(R"({"resource": {"cluster": true}, "actions": ["find"]})");
  Resource any = r(R"({"resource": {"anyResource": true}, "actions": ["find"]})");
  Target orders = Target::Collection("shop", "orders");
  Target other = Target::Collection("shop", "users");
  Target elsewhere = Target::Collection("crm", "orders");
  Target system = Target::Collection("shop", "system.views");
  Target shop = Target::Database("shop");
  EXPECT_TRUE(Covers(one, orders));
  EXPECT_FALSE(Covers(one, other));
  EXPECT_FALSE(Covers(one, shop));
  EXPECT_TRUE(Covers(db, orders) && Covers(db, other) && Covers(db, shop));
  EXPECT_FALSE(Covers(db, elsewhere));
  EXPECT_FALSE(Covers(db, system));
  EXPECT_TRUE(Covers(coll_any_db, orders) && Covers(coll_any_db, elsewhere));
  EXPECT_FALSE(Covers(coll_any_db, other));
  EXPECT_TRUE(Covers(any_normal, elsewhere) && Covers(any_normal, shop));
  EXPECT_FALSE(Covers(any_normal, Target::Cluster()));
  EXPECT_TRUE(Covers(cluster, Target::Cluster()));
  EXPECT_FALSE(Covers(cluster, orders));
  EXPECT_TRUE(Covers(any, orders) && Covers(any, system) && Covers(any, Target::Cluster()));
}

TEST(PrivilegeTest, PathsInsideAListedPathAreAllowedParentsAreNot) {
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{"status", "notes.text"};
  EXPECT_TRUE(PathAllowed(allowed, "status"));
  EXPECT_TRUE(PathAllowed(allowed, "status.code"));
  EXPECT_TRUE(PathAllowed(allowed, "notes.text"));
  EXPECT_TRUE(PathAllowed(allowed, "notes.text.0"));
  EXPECT_FALSE(PathAllowed(allowed, "notes"));     // the parent: more than notes.text
  EXPECT_FALSE(PathAllowed(allowed, "statuses"));  // a prefix of the name is not the field
  EXPECT_FALSE(PathAllowed(allowed, "price"));
  EXPECT_FALSE(PathAllowed(allowed, ""));          // the whole document
  EXPECT_TRUE(PathAllowed(std::nullopt, "price"));
}

TEST(PrincipalTest, BuiltinRolesKeepTheirMeaning) {
  Target orders = Target::Collection("shop", "orders");
  auto read = Resolve({{"read", "shop"}});
  EXPECT_TRUE(read->Can(Action::kFind, orders));
  EXPECT_FALSE(read->Can(Action::kInsert, orders));
  EXPECT_FALSE(read->Can(Action::kFind, Target::Collection("crm", "x")));
  auto rw = Resolve({{"readWrite", "shop"}});
  EXPECT_TRUE(rw->Can(Action::kInsert, orders) && rw->Can(Action::kUpdate, orders) && rw->Can(Action::kRemove, orders));
  EXPECT_FALSE(rw->Can(Action::kCollMod, orders));
  EXPECT_FALSE(rw->Can(Action::kCreateUser, Target::Database("shop")));
  auto admin = Resolve({{"dbAdmin", "shop"}});
  EXPECT_TRUE(admin->Can(Action::kCollMod, orders));
  EXPECT_FALSE(admin->Can(Action::kFind, orders));
  EXPECT_FALSE(admin->Can(Action::kInsert, orders));
  auto root = Resolve({{"root", "admin"}});
  EXPECT_TRUE(root->Can(Action::kInsert, Target::Collection("any", "thing")));
  EXPECT_TRUE(root->Can(Action::kServerStatus, Target::Cluster()));
  EXPECT_FALSE(root->WritablePaths(Action::kUpdate, orders));  // unrestricted
  // root exists in admin only, as MongoDB's
  EXPECT_FALSE(BuiltinRole(RoleName{"root", "shop"}));
  auto fake_root = Resolve({{"root", "shop"}});
  EXPECT_FALSE(fake_root->Can(Action::kFind, orders));
}

TEST(PrincipalTest, CustomRolesInheritAndCombinePathsAndSources) {
  RoleRecord email;
  email.name = {"emailAgent", "admin"};
  email.privileges.push_back(Priv(R"({"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
                                      "fields": ["status"], "sources": ["email"]})"));
  email.roles.push_back({"notes", "admin"});
  RoleRecord notes;
  notes.name = {"notes", "admin"};
  notes.privileges.push_back(Priv(R"({"resource": {"db": "shop", "collection": ""}, "actions": ["update"],
                                      "fields": ["notes"]})"));
  auto p = Resolve({{"emailAgent", "admin"}}, {{"emailAgent@admin", email}, {"notes@admin", notes}});
  Target orders = Target::Collection("shop", "orders");
  EXPECT_TRUE(p->Can(Action::kUpdate, orders));
  EXPECT_FALSE(p->Can(Action::kInsert, orders));
  EXPECT_FALSE(p->Can(Action::kRemove, orders));
  auto paths = p->WritablePaths(Action::kUpdate, orders);
  ASSERT_TRUE(paths);
  EXPECT_TRUE(PathAllowed(paths, "status"));
  EXPECT_TRUE(PathAllowed(paths, "notes.0"));  // from the inherited role
  EXPECT_FALSE(PathAllowed(paths, "price"));
  // On another collection only the inherited role applies.
  auto elsewhere = p->WritablePaths(Action::kUpdate, Target::Collection("shop", "customers"));
  ASSERT_TRUE(elsewhere);
  EXPECT_FALSE(PathAllowed(elsewhere, "status"));
  // The inherited privilege names no sources: it speaks for any source.
  EXPECT_TRUE(p->MaySpeakFor(Action::kUpdate, orders, "email"));
  EXPECT_TRUE(p->MaySpeakFor(Action::kUpdate, orders, "human"));
  // With only the email privilege, only "email".
  RoleRecord solo = email;
  solo.roles.clear();
  auto q = Resolve({{"emailAgent", "admin"}}, {{"emailAgent@admin", solo}});
  EXPECT_TRUE(q->MaySpeakFor(Action::kUpdate, orders, "email"));
  EXPECT_FALSE(q->MaySpeakFor(Action::kUpdate, orders, "human"));
  EXPECT_TRUE(q->MaySpeakFor(Action::kUpdate, orders, ""));
  Status s = q->Check(Action::kInsert, orders, "insert into shop.orders");
  EXPECT_EQ(s.code(), ErrorCode::kUnauthorized);
  ASSERT_NE(s.err_info(), nullptr);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, s.err_info()->bson(), "action"));
  EXPECT_STREQ(bson_iter_utf8(&it, nullptr), "insert");
}

TEST(PrincipalTest, RoleCyclesAndDroppedRolesEndResolution) {
  RoleRecord a, b;
  a.name = {"a", "admin"};
  b.name = {"b", "admin"};
  a.roles.push_back(b.name);
  b.roles.push_back(a.name);  // a cycle: each role once
  b.privileges.push_back(Priv(R"({"resource": {"db": "x", "collection": "y"}, "actions": ["find"]})"));
  auto p = Resolve({{"a", "admin"}, {"gone", "admin"}}, {{"a@admin", a}, {"b@admin", b}});
  EXPECT_TRUE(p->Can(Action::kFind, Target::Collection("x", "y")));
  EXPECT_EQ(p->privileges().size(), 1u);
}

TEST(RecordTest, UsersAndRolesRoundTrip) {
  UserRecord u;
  u.user = "alice";
  u.db = "shop";
  auto creds = MakeScramCredentials("secret");
  ASSERT_TRUE(creds.ok());
  u.scram = *creds;
  u.roles = {{"readWrite", "shop"}, {"read", "crm"}};
  u.custom_data = Json(R"({"team": "billing"})");
  UserRecord back;
  ASSERT_TRUE(DecodeUser(EncodeUser(u).bson(), &back).ok());
  EXPECT_EQ(back.user, "alice");
  EXPECT_EQ(back.db, "shop");
  EXPECT_EQ(back.scram.iterations, kScramIterations);
  EXPECT_EQ(back.scram.salt, u.scram.salt);
  EXPECT_EQ(back.scram.stored_key, u.scram.stored_key);
  EXPECT_EQ(back.scram.server_key, u.scram.server_key);
  EXPECT_EQ(back.roles, u.roles);
  EXPECT_EQ(back.custom_data.ToJson(), u.custom_data.ToJson());
}

using Client = test::ScramClient;

ScramServer::Lookup Users(std::map<std::string, ScramCredentials>* users) {
  return [users](const std::string& name) -> std::optional<ScramCredentials> {
    auto it = users->find(name);
    if (it == users->end()) return std::nullopt;
    return it->second;
  };
}

TEST(ScramTest, RightPasswordAuthenticatesAndTheServerProvesItself) {
  std::map<std::string, ScramCredentials> users;
  users["alice"] = *MakeScramCredentials("pencil");
  ScramServer server(Users(&users));
  Client client("alice", "pencil");
  int rc = 0;
  std::string first = client.Step("", &rc);
  EXPECT_EQ(first.rfind("n,,n=alice,r=", 0), 0u) << first;
  auto server_first = server.Step(first);
  ASSERT_TRUE(server_first.ok());
  EXPECT_NE(server_first->find(",i=15000"), std::string::npos) << *server_first;
  std::string final_msg = client.Step(*server_first, &rc);
  auto server_final = server.Step(final_msg);
  ASSERT_TRUE(server_final.ok()) << server_final.status().ToString();
  EXPECT_TRUE(server.done() && server.succeeded());
  EXPECT_EQ(server.user(), "alice");
  client.Step(*server_final, &rc);
  EXPECT_EQ(rc, GSASL_OK);  // the client checked the server's signature
  EXPECT_EQ(server.Step("again").status().code(), ErrorCode::kAuthenticationFailed);  // over
}

TEST(ScramTest, WrongPasswordUnknownUserAndHostileMessagesFail) {
  std::map<std::string, ScramCredentials> users;
  users["alice"] = *MakeScramCredentials("pencil");
  auto run = [&](const std::string& user, const std::string& password) {
    ScramServer server(Users(&users));
    Client client(user, password);
    int rc = 0;
    auto sf = server.Step(client.Step("", &rc));
    if (!sf.ok()) return sf.status();
    auto fin = server.Step(client.Step(*sf, &rc));
    EXPECT_FALSE(server.succeeded());
    return fin.status();
  };
  EXPECT_EQ(run("alice", "Pencil").code(), ErrorCode::kAuthenticationFailed);
  EXPECT_EQ(run("bob", "pencil").code(), ErrorCode::kAuthenticationFailed);
  // Hostile first and final messages.
  for (const std::string& bad : {std::string(""), std::string("n,,"), std::string("garbage"),
                                 std::string("y,,n=alice"), std::string("n,,n=alice,r="),
                                 std::string("n,,n=al\0ice,r=abc", 16), std::string(100000, 'A')}) {
    ScramServer server(Users(&users));
    auto r = server.Step(bad);
    if (r.ok()) {
      EXPECT_EQ(server.Step("c=biws,r=x,p=AAAA").status().code(), ErrorCode::kAuthenticationFailed);
    } else {
      EXPECT_EQ(r.status().code(), ErrorCode::kAuthenticationFailed);
    }
    EXPECT_FALSE(server.succeeded());
  }
  // A replayed final message from an earlier, successful conversation:
  // the new conversation's nonce differs, so the proof does not fit.
  ScramServer first(Users(&users));
  Client client("alice", "pencil");
  int rc = 0;
  std::string cf = client.Step("", &rc);
  std::string fin = client.Step(*first.Step(cf), &rc);
  ASSERT_TRUE(first.Step(fin).ok());
  ScramServer second(Users(&users));
  ASSERT_TRUE(second.Step(cf).ok());
  EXPECT_EQ(second.Step(fin).status().code(), ErrorCode::kAuthenticationFailed);
  EXPECT_FALSE(second.succeeded());
  // A truncated final message.
  ScramServer third(Users(&users));
  Client c3("alice", "pencil");
  std::string f3 = c3.Step(*third.Step(c3.Step("", &rc)), &rc);
  EXPECT_EQ(third.Step(f3.substr(0, f3.size() - 5)).status().code(), ErrorCode::kAuthenticationFailed);
}

TEST(ScramTest, PasswordsAreSaslPreppedAndRefusedWhenInvalid) {
  std::map<std::string, ScramCredentials> users;
  users["u"] = *MakeScramCredentials("I\xC2\xADX");  // SASLprep maps the soft hyphen to nothing
  ScramServer server(Users(&users));
  Client client("u", "IX");
  int rc = 0;
  std::string fin = client.Step(*server.Step(client.Step("", &rc)), &rc);
  EXPECT_TRUE(server.Step(fin).ok());
  EXPECT_EQ(MakeScramCredentials("a\x07").status().code(), ErrorCode::kBadValue);  // a control character
  EXPECT_EQ(MakeScramCredentials("").status().code(), ErrorCode::kBadValue);
  // Two users with one password get different salts and keys.
  auto a = *MakeScramCredentials("same"), b = *MakeScramCredentials("same");
  EXPECT_NE(a.salt, b.salt);
  EXPECT_NE(a.stored_key, b.stored_key);
}

}  // namespace
}  // namespace auth
}  // namespace gatedb
