// Upstream sync against a real hub: `gatedb serve`'s WireServer on its own
// data directory, in process, reached over loopback by libmongoc; edges are
// data directories of their own.  Every test checks the hub's and the
// edges' documents after syncing, not the sync's report alone.
#include "gatedb/sync.h"

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "api/server/wire_server.h"
#include "api/src/database_rep.h"
#include "api/src/sync_state.h"
#include "engine/storage/db_impl.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

Value IntId(int32_t i) {
  bson_value_t v;
  v.value_type = BSON_TYPE_INT32;
  v.value.v_int32 = i;
  return Value(v);
}

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hub = Database::Open(dir_.path() + "/hub");
    ASSERT_OK(hub);
    hub_ = std::move(*hub);
    server::ServerOptions o;
    o.port = 0;
    o.quiet = true;
    o.log = [](const std::string&) {};
    auto s = server::WireServer::Start(hub_.get(), o);
    ASSERT_OK(s);
    server_ = std::move(*s);
    uri_ = "mongodb://127.0.0.1:" + std::to_string(server_->port()) + "/?replicaSet=gatedb&serverSelectionTimeoutMS=5000";
  }
  void TearDown() override {
    edges_.clear();
    if (server_) server_->Stop();
    server_.reset();
    hub_.reset();
  }

  // An edge; `policy`: the orders collection's conflictPolicy (JSON).
  Database* Edge(const std::string& name, const std::string& policy = "") {
    auto db = Database::Open(dir_.path() + "/" + name);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    if (!policy.empty()) {
      Document r = (*db)->RunCommand(
          Json(R"({"create": "orders", "conflictPolicy": )" + policy + R"(, "$db": "shop"})").view());
      EXPECT_EQ(test::IntAt(r.bson(), "ok"), 1) << r.ToJson();
    }
    edges_[name] = std::move(*db);
    return edges_[name].get();
  }

  SyncReport SyncOnce(Database* edge, const std::string& origin) {
    SyncOptions o;
    o.upstream_versions = versions_;
    o.upstream_uri = uri_;
    o.namespaces = {"shop.orders"};
    o.origin = origin;
    o.batch_size = 3;  // several upstream transactions per run
    o.progress = progress_;
    auto s = Sync::Open(edge, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return SyncReport();
    auto r = (*s)->RunOnce();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : SyncReport();
  }

  // {_id json: document without the version field}
  static std::map<std::string, std::string> Docs(Database* db) {
    std::map<std::string, std::string> out;
    auto docs = db->GetCollection("shop", "orders").Find(Json("{}").view());
    EXPECT_TRUE(docs.ok());
    if (!docs.ok()) return out;
    for (const Document& d : *docs) {
      bson_t* c = bson_new();
      bson_copy_to_excluding_noinit(d.bson(), c, "version", nullptr);
      Document stripped = Document::Adopt(c);
      bson_iter_t it;
      bson_iter_init_find(&it, d.bson(), "_id");
      out[Value(*bson_iter_value(&it)).ToJson()] = stripped.ToJson();
    }
    return out;
  }

  int64_t Field(Database* db, const std::string& id_json, const char* field) {
    auto d = db->GetCollection("shop", "orders").FindOne(Json(R"({"_id": )" + id_json + "}").view());
    if (!d.ok() || !*d) return -999;
    return test::IntAt((*d)->bson(), field);
  }

  test::TempDir dir_;
  std::unique_ptr<Database> hub_;
  std::unique_ptr<server::WireServer> server_;
  std::string uri_;
  std::string versions_ = "auto";
  std::function<void(const std::string&)> progress_;
  std::map<std::string, std::unique_ptr<Database>> edges_;
};

// As against a plain MongoDB upstream: this side keeps the version field
// ($inc with each push, 0 on insert).
TEST_F(SyncTest, VersionsKeptBySyncConvergeToo) {
  versions_ = "sync";
  const std::string policy = R"({"mode": "fieldMerge", "mergeIncrements": true})";
  Database* a = Edge("a", policy);
  Database* b = Edge("b", policy);
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1, "n": 1})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  ASSERT_OK(a->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 2}})").view()));
  ASSERT_OK(b->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"n": 3}})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  SyncOnce(a, "a");
  EXPECT_EQ(Field(hub_.get(), "1", "n"), 6);
  EXPECT_EQ(Field(a, "1", "n"), 6);
  EXPECT_EQ(Field(b, "1", "n"), 6);
  EXPECT_EQ(Field(hub_.get(), "1", "version"), 2) << "one version per push";
  SyncOptions bad;
  bad.upstream_uri = uri_;
  bad.namespaces = {"shop.orders"};
  bad.upstream_versions = "maybe";
  EXPECT_THAT(Sync::Open(a, bad), test::StatusIs(ErrorCode::kInvalidOptions));
}

TEST_F(SyncTest, TwoEdgesAndAHubConverge) {
  Database* a = Edge("a");
  Database* b = Edge("b");
  Collection ca = a->GetCollection("shop", "orders");
  Collection cb = b->GetCollection("shop", "orders");
  for (int i = 0; i < 7; ++i) {
    ASSERT_OK(ca.InsertOne(Json(R"({"_id": "a)" + std::to_string(i) + R"(", "n": )" + std::to_string(i) + "}").view()));
  }
  ASSERT_OK(cb.InsertOne(Json(R"({"_id": "b0", "status": "open"})").view()));
  SyncReport ra = SyncOnce(a, "a");
  EXPECT_EQ(ra.pushed, 7);
  SyncReport rb = SyncOnce(b, "b");
  EXPECT_EQ(rb.pushed, 1);
  EXPECT_EQ(rb.pulled, 7);
  SyncReport ra2 = SyncOnce(a, "a");
  EXPECT_EQ(ra2.pulled, 1);
  EXPECT_EQ(ra2.pushed, 0);
  EXPECT_EQ(Docs(a), Docs(hub_.get()));
  EXPECT_EQ(Docs(b), Docs(hub_.get()));
  EXPECT_EQ(Docs(hub_.get()).size(), 8u);

  // Updates and deletes travel too; a second run has nothing to do.
  ASSERT_OK(ca.UpdateOne(Json(R"({"_id": "a1"})").view(), Json(R"({"$set": {"n": 100}, "$unset": {"x": 1}})").view()));
  ASSERT_OK(cb.DeleteOne(Json(R"({"_id": "a2"})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  SyncOnce(a, "a");
  EXPECT_EQ(Field(hub_.get(), R"("a1")", "n"), 100);
  EXPECT_EQ(Field(b, R"("a1")", "n"), 100);
  EXPECT_EQ(Field(a, R"("a2")", "n"), -999) << "deleted on b, so everywhere";
  EXPECT_EQ(Docs(a), Docs(hub_.get()));
  EXPECT_EQ(Docs(b), Docs(hub_.get()));
  SyncReport idle = SyncOnce(a, "a");
  EXPECT_EQ(idle.pushed + idle.pulled + idle.merged + idle.conflicts, 0) << idle.ToJson();
  // Each edge's writes were applied upstream once: the hub's versions.
  EXPECT_EQ(Field(hub_.get(), R"("a1")", "version"), 1);
  EXPECT_EQ(Field(hub_.get(), R"("a0")", "version"), 0);
}

TEST_F(SyncTest, FieldMergeMergesDisjointFieldsAndAddsIncrements) {
  const std::string policy = R"({"mode": "fieldMerge", "mergeIncrements": true})";
  Database* a = Edge("a", policy);
  Database* b = Edge("b", policy);
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1, "count": 10, "status": "new"})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  ASSERT_EQ(Field(b, "1", "count"), 10);
  // Offline, both change the document: disjoint fields, and the same counter.
  ASSERT_OK(a->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$inc": {"count": 5}, "$set": {"status": "paid"}})").view()));
  ASSERT_OK(b->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$inc": {"count": 3}, "$set": {"note": "fragile"}})").view()));
  SyncOnce(a, "a");
  SyncReport rb = SyncOnce(b, "b");
  EXPECT_EQ(rb.merged, 1) << rb.ToJson();
  SyncOnce(a, "a");
  for (Database* db : {a, b, hub_.get()}) {
    EXPECT_EQ(Field(db, "1", "count"), 18) << "both increments, exactly";
    auto d = db->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
    ASSERT_OK(d);
    ASSERT_TRUE(d->has_value());
    EXPECT_EQ(test::StrAt((*d)->bson(), "status"), "paid");
    EXPECT_EQ(test::StrAt((*d)->bson(), "note"), "fragile");
  }
}

// A write as `source` (writeContext.source) on an edge.
void SetAs(Database* db, int id, const std::string& status, const std::string& source) {
  UpdateOptions uo;
  uo.write.context.agent_id = source + "-1";
  uo.write.context.source = source;
  ASSERT_OK(db->GetCollection("shop", "orders")
                .UpdateOne(Json(R"({"_id": )" + std::to_string(id) + "}").view(),
                           Json(R"({"$set": {"status": ")" + status + R"("}})").view(), uo));
}

std::string StatusOf(Database* db, int id) {
  auto d = db->GetCollection("shop", "orders").FindOne(Json(R"({"_id": )" + std::to_string(id) + "}").view());
  if (!d.ok()) return "error";
  if (!d->has_value()) return "absent";
  return test::StrAt((*d)->bson(), "status");
}

// sourcePriority: the side whose last writer's source ranks higher wins
// the whole document (a delete too); an equal rank is a conflict.  The
// hub learns each pushed write's source from its writeContext, so the
// other edge ranks it.
TEST_F(SyncTest, SourcePriorityDecidesBySourceAcrossEdges) {
  const std::string policy = R"({"mode": "sourcePriority", "sourcePriority": ["human", "planner", "agent"]})";
  Database* a = Edge("a", policy);
  Database* b = Edge("b", policy);
  for (int i = 1; i <= 4; ++i) {
    ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "status": "new"})").view()));
  }
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  ASSERT_EQ(StatusOf(b, 4), "new");
  SetAs(a, 1, "cancelled", "human");  // outranks b's agent
  SetAs(b, 1, "done", "agent");
  SetAs(a, 2, "a-agent", "agent");    // outranked by b's planner
  SetAs(b, 2, "b-planner", "planner");
  SetAs(a, 3, "a-planner", "planner");  // the same rank: a conflict
  SetAs(b, 3, "b-planner", "planner");
  WriteOptions human;
  human.context.agent_id = "h1";
  human.context.source = "human";
  ASSERT_OK(a->GetCollection("shop", "orders").DeleteOne(Json(R"({"_id": 4})").view(), human));
  SetAs(b, 4, "b-agent", "agent");  // outranked by a's delete
  SyncOnce(a, "a");
  SyncReport rb = SyncOnce(b, "b");
  EXPECT_EQ(rb.merged, 3) << rb.ToJson();
  EXPECT_EQ(rb.conflicts, 1) << rb.ToJson();
  SyncOnce(a, "a");
  for (Database* db : {a, b, hub_.get()}) {
    EXPECT_EQ(StatusOf(db, 1), "cancelled");
    EXPECT_EQ(StatusOf(db, 2), "b-planner");
    EXPECT_EQ(StatusOf(db, 4), "absent");
  }
  EXPECT_EQ(StatusOf(hub_.get(), 3), "a-planner");
  EXPECT_EQ(StatusOf(b, 3), "b-planner") << "b keeps its value until resolved";
  auto listed = b->GetCollection("__gatedb_sync", "conflicts").Find(Json("{}").view());
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(test::IntAt((*listed)[0].bson(), "_id.id"), 3);
  EXPECT_EQ(test::StrAt((*listed)[0].bson(), "policy"), "sourcePriority");
  // The pulled write keeps its writer's source: a's gate ranks b's planner
  // write of doc 2, not "upstream".
  UpdateOptions stale;
  stale.write.basis_version = 0;
  stale.write.context.source = "agent";
  auto r = a->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 2})").view(),
                                                        Json(R"({"$set": {"status": "late"}})").view(), stale);
  EXPECT_EQ(r.status().code(), ErrorCode::kVersionConflict) << r.status().ToString();
  EXPECT_EQ(StatusOf(a, 2), "b-planner");
}

// appendOnly: the two sides' documents unite; the same _id inserted with
// different contents on both is a conflict, with the same contents it is
// one document.
TEST_F(SyncTest, AppendOnlyUnitesBothSidesDocuments) {
  const std::string policy = R"({"mode": "appendOnly"})";
  Database* a = Edge("a", policy);
  Database* b = Edge("b", policy);
  auto put = [](Database* db, const std::string& json) {
    ASSERT_OK(db->GetCollection("shop", "orders").InsertOne(Json(json).view()));
  };
  put(a, R"({"_id": 1, "status": "a1"})");
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  put(a, R"({"_id": 2, "status": "a2"})");
  put(b, R"({"_id": 3, "status": "b3"})");
  put(a, R"({"_id": 4, "status": "same"})");
  put(b, R"({"_id": 4, "status": "same"})");
  put(a, R"({"_id": 5, "status": "a5"})");
  put(b, R"({"_id": 5, "status": "b5"})");
  SyncOnce(a, "a");
  SyncReport rb = SyncOnce(b, "b");
  EXPECT_EQ(rb.conflicts, 1) << rb.ToJson();
  SyncOnce(a, "a");
  for (Database* db : {a, b, hub_.get()}) {
    EXPECT_EQ(StatusOf(db, 1), "a1");
    EXPECT_EQ(StatusOf(db, 2), "a2");
    EXPECT_EQ(StatusOf(db, 3), "b3");
    EXPECT_EQ(StatusOf(db, 4), "same");
  }
  EXPECT_EQ(StatusOf(hub_.get(), 5), "a5");
  EXPECT_EQ(StatusOf(b, 5), "b5");
  auto listed = b->GetCollection("__gatedb_sync", "conflicts").Find(Json("{}").view());
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(test::IntAt((*listed)[0].bson(), "_id.id"), 5);
  // An upstream change of a document is not written into an appendOnly
  // collection (its gate refuses updates): it is listed too.
  ASSERT_OK(hub_->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                           Json(R"({"$set": {"status": "edited"}})").view()));
  SyncReport ra = SyncOnce(a, "a");
  EXPECT_EQ(ra.conflicts, 1) << ra.ToJson();
  EXPECT_EQ(StatusOf(a, 1), "a1");
}

// The upstream moves between this side's pull and its push: the batch's
// conditional write on that document fails, the upstream refuses the whole
// batch, and the push sends the rest again without it; the next round's
// pull merges the moved document and pushes it.
TEST_F(SyncTest, ADocumentThatMovesUpstreamDuringThePushIsMergedNotOverwritten) {
  const std::string policy = R"({"mode": "fieldMerge", "mergeIncrements": true})";
  Database* a = Edge("a", policy);
  Collection orders = a->GetCollection("shop", "orders");
  for (int i = 1; i <= 3; ++i) {
    ASSERT_OK(orders.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "count": 10})").view()));
  }
  SyncOnce(a, "a");
  for (int i = 1; i <= 3; ++i) {
    ASSERT_OK(orders.UpdateOne(Json(R"({"_id": )" + std::to_string(i) + "}").view(), Json(R"({"$inc": {"count": 1}})").view()));
  }
  int hub_writes = 0;
  progress_ = [&](const std::string& line) {
    if (line.find("documents to push") == std::string::npos || hub_writes > 0) return;
    ++hub_writes;  // once: after the pull, before the first batch is sent
    Status s = hub_->GetCollection("shop", "orders")
                   .UpdateOne(Json(R"({"_id": 2})").view(), Json(R"({"$inc": {"count": 100}})").view())
                   .status();
    EXPECT_TRUE(s.ok()) << s.ToString();
  };
  SyncReport r = SyncOnce(a, "a");
  progress_ = nullptr;
  EXPECT_EQ(hub_writes, 1);
  EXPECT_EQ(r.merged, 1) << r.ToJson();
  EXPECT_EQ(r.pushed, 3) << r.ToJson();
  for (Database* db : {a, hub_.get()}) {
    EXPECT_EQ(Field(db, "1", "count"), 11);
    EXPECT_EQ(Field(db, "2", "count"), 111) << "the hub's +100 and the edge's +1";
    EXPECT_EQ(Field(db, "3", "count"), 11);
  }
  EXPECT_EQ(Docs(a), Docs(hub_.get()));
}

// Two +1s from the same base end at the same value on both sides; they are
// still two increments (the fault test found this).
TEST_F(SyncTest, EqualIncrementsOnBothSidesBothCount) {
  const std::string policy = R"({"mode": "fieldMerge", "mergeIncrements": true})";
  Database* a = Edge("a", policy);
  Database* b = Edge("b", policy);
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1, "n": 0})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  for (Database* db : {a, b}) {
    ASSERT_OK(db->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                           Json(R"({"$inc": {"n": 1}})").view()));
  }
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  SyncOnce(a, "a");
  for (Database* db : {a, b, hub_.get()}) EXPECT_EQ(Field(db, "1", "n"), 2);
}

TEST_F(SyncTest, RejectLeavesBothSidesAndListsTheConflict) {
  Database* a = Edge("a");
  Database* b = Edge("b");
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1, "status": "new"})").view()));
  SyncOnce(a, "a");
  SyncOnce(b, "b");
  ASSERT_OK(a->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$set": {"status": "paid"}})").view()));
  ASSERT_OK(b->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$set": {"status": "void"}})").view()));
  SyncOnce(a, "a");
  SyncReport rb = SyncOnce(b, "b");
  EXPECT_EQ(rb.conflicts, 1) << rb.ToJson();
  auto hub_doc = hub_->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(hub_doc);
  EXPECT_EQ(test::StrAt((*hub_doc)->bson(), "status"), "paid") << "b's write never overwrote a's";
  auto b_doc = b->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(b_doc);
  EXPECT_EQ(test::StrAt((*b_doc)->bson(), "status"), "void") << "b keeps its value until resolved";
  auto listed = b->GetCollection("__gatedb_sync", "conflicts").Find(Json("{}").view());
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(test::StrAt((*listed)[0].bson(), "local.status"), "void");
  EXPECT_EQ(test::StrAt((*listed)[0].bson(), "upstream.status"), "paid");
  EXPECT_EQ(test::StrAt((*listed)[0].bson(), "base.status"), "new");

  // syncStatus lists it; b's other writes still travel meanwhile.
  Document st = b->RunCommand(Json(R"({"syncStatus": 1})").view());
  ASSERT_EQ(test::IntAt(st.bson(), "ok"), 1) << st.ToJson();
  EXPECT_EQ(test::StrAt(st.bson(), "namespaces.0.ns"), "shop.orders");
  EXPECT_EQ(test::IntAt(st.bson(), "namespaces.0.conflicts"), 1);
  EXPECT_EQ(test::IntAt(st.bson(), "conflicts.0._id"), 1);
  EXPECT_EQ(test::StrAt(st.bson(), "conflicts.0.local.status"), "void");
  EXPECT_EQ(test::StrAt(st.bson(), "conflicts.0.upstream.status"), "paid");
  EXPECT_TRUE(test::StrAt(st.bson(), "origin").size() > 0) << st.ToJson();

  // b decides for its own value: the next sync pushes it over a's.
  Document bad = b->RunCommand(Json(R"({"syncResolve": "orders", "_id": 1, "keep": "both", "$db": "shop"})").view());
  EXPECT_EQ(test::StrAt(bad.bson(), "codeName"), "BadValue");
  Document none = b->RunCommand(Json(R"({"syncResolve": "orders", "_id": 99, "keep": "local", "$db": "shop"})").view());
  EXPECT_EQ(test::StrAt(none.bson(), "codeName"), "NoSuchKey");
  Document res = b->RunCommand(Json(R"({"syncResolve": "orders", "_id": 1, "keep": "local", "$db": "shop"})").view());
  ASSERT_EQ(test::IntAt(res.bson(), "ok"), 1) << res.ToJson();
  EXPECT_EQ(SyncOnce(b, "b").pushed, 1);
  SyncOnce(a, "a");
  for (Database* db : {a, b, hub_.get()}) {
    auto d = db->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
    ASSERT_OK(d);
    EXPECT_EQ(test::StrAt((*d)->bson(), "status"), "void");
  }
  Document after = b->RunCommand(Json(R"({"syncStatus": 1})").view());
  EXPECT_EQ(test::IntAt(after.bson(), "namespaces.0.conflicts"), 0) << after.ToJson();
  EXPECT_EQ(test::IntAt(after.bson(), "namespaces.0.push.pendingDocuments"), 0) << after.ToJson();

  // The other way: a conflict resolved for the upstream's value.
  ASSERT_OK(a->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$set": {"status": "shipped"}})").view()));
  ASSERT_OK(b->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                        Json(R"({"$set": {"status": "lost"}})").view()));
  SyncOnce(a, "a");
  EXPECT_EQ(SyncOnce(b, "b").conflicts, 1);
  Document res2 = b->RunCommand(Json(R"({"syncResolve": "orders", "_id": 1, "keep": "upstream", "$db": "shop"})").view());
  ASSERT_EQ(test::IntAt(res2.bson(), "ok"), 1) << res2.ToJson();
  auto bd = b->GetCollection("shop", "orders").FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(bd);
  EXPECT_EQ(test::StrAt((*bd)->bson(), "status"), "shipped");
  SyncReport quiet = SyncOnce(b, "b");
  EXPECT_EQ(quiet.pushed, 0) << quiet.ToJson();
  EXPECT_EQ(Docs(b), Docs(hub_.get()));
}

// A base whose upstream version fell behind while the upstream already
// holds this side's document (a lost record of a push): the refused push
// learns the version from the upstream instead of waiting for a pull that
// would bring nothing (the hub does not send a side its own pushes back).
TEST_F(SyncTest, ABaseVersionBehindADocumentTheHubAlreadyHasIsLearned) {
  Database* a = Edge("a", R"({"mode": "fieldMerge", "mergeIncrements": true})");
  Collection ca = a->GetCollection("shop", "orders");
  ASSERT_OK(ca.InsertOne(Json(R"({"_id": 1, "count": 0})").view()));
  SyncOnce(a, "a");
  DBImpl* a_impl = a->rep()->db.get();
  const Value id1 = IntId(1);
  auto before = sync_state::LoadBase(a_impl, nullptr, "shop.orders", id1);
  ASSERT_OK(before);
  ASSERT_EQ(before->up_version, 0);
  ASSERT_OK(ca.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"count": 4}})").view()));
  SyncOnce(a, "a");
  ASSERT_EQ(Field(hub_.get(), "1", "count"), 4);
  // The base goes back to version 0 and count 0, left pending.
  sync_state::Base stale = *before;
  stale.pending = true;
  ASSERT_OK(sync_state::SaveBase(a_impl, nullptr, "shop.orders", id1, stale, false));
  SyncReport r = SyncOnce(a, "a");
  EXPECT_EQ(r.pushed, 0) << r.ToJson();
  EXPECT_EQ(Field(hub_.get(), "1", "count"), 4) << "the +4 is not sent again";
  auto learned = sync_state::LoadBase(a_impl, nullptr, "shop.orders", id1);
  ASSERT_OK(learned);
  EXPECT_EQ(learned->up_version, 1);
  EXPECT_FALSE(learned->pending);
  // And the document travels on from there.
  ASSERT_OK(ca.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"count": 1}})").view()));
  EXPECT_EQ(SyncOnce(a, "a").pushed, 1);
  EXPECT_EQ(Field(hub_.get(), "1", "count"), 5);
  Document st = a->RunCommand(Json(R"({"syncStatus": 1})").view());
  EXPECT_EQ(test::IntAt(st.bson(), "namespaces.0.push.pendingDocuments"), 0) << st.ToJson();
}

// A run stopped after the upstream committed a batch and before this side
// recorded it: the next run finishes it from the upstream checkpoint and
// applies nothing twice.
TEST_F(SyncTest, ABatchWhoseOutcomeWasLostIsNotAppliedTwice) {
  Database* a = Edge("a", R"({"mode": "fieldMerge", "mergeIncrements": true})");
  Collection ca = a->GetCollection("shop", "orders");
  ASSERT_OK(ca.InsertOne(Json(R"({"_id": 1, "count": 0})").view()));
  SyncOnce(a, "a");
  ASSERT_OK(ca.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"count": 4}})").view()));
  // Keep what this side knew before pushing: the state a killed run leaves.
  DBImpl* a_impl = a->rep()->db.get();
  const Value id1 = IntId(1);
  Collection ck = a->GetCollection("__gatedb_sync", "checkpoints");
  auto saved_base = sync_state::LoadBase(a_impl, nullptr, "shop.orders", id1);
  auto saved_ck = ck.Find(Json(R"({"_id": "shop.orders"})").view());
  ASSERT_OK(saved_base);
  ASSERT_TRUE(saved_base->exists);
  ASSERT_OK(saved_ck);
  SyncOnce(a, "a");
  ASSERT_EQ(Field(hub_.get(), "1", "count"), 4);
  // Roll this side's record back to before that push, with the batch in
  // flight as the killed run would have left it.
  ASSERT_OK(sync_state::SaveBase(a_impl, nullptr, "shop.orders", id1, *saved_base, false));
  ASSERT_OK(ck.DeleteOne(Json(R"({"_id": "shop.orders"})").view()));
  for (const Document& d : *saved_ck) ASSERT_OK(ck.InsertOne(d.view()));
  bson_t* inflight = bson_new();
  BSON_APPEND_INT64(inflight, "batch", test::IntAt((*saved_ck)[0].bson(), "batch") + 1);
  bson_t arr, e, doc;
  BSON_APPEND_ARRAY_BEGIN(inflight, "docs", &arr);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &e);
  BSON_APPEND_INT32(&e, "id", 1);
  BSON_APPEND_DOCUMENT_BEGIN(&e, "doc", &doc);
  BSON_APPEND_INT32(&doc, "_id", 1);
  BSON_APPEND_INT32(&doc, "count", 4);
  bson_append_document_end(&e, &doc);
  BSON_APPEND_INT64(&e, "upVersion", 1);
  bson_append_document_end(&arr, &e);
  bson_append_array_end(inflight, &arr);
  Document rec = Document::Adopt(inflight);
  ASSERT_OK(sync_state::SaveInflight(a_impl, "shop.orders", rec));
  // Meanwhile someone else adds 3 on the hub: without the in-flight record
  // this side would take its own +4 for a concurrent one and add it again.
  ASSERT_OK(hub_->GetCollection("shop", "orders").UpdateOne(Json(R"({"_id": 1})").view(),
                                                           Json(R"({"$inc": {"count": 3}})").view()));
  SyncReport again = SyncOnce(a, "a");
  EXPECT_EQ(again.pushed, 0) << again.ToJson();
  EXPECT_EQ(Field(hub_.get(), "1", "count"), 7) << "the +4 reached the hub once";
  EXPECT_EQ(Field(a, "1", "count"), 7);
  auto left = sync_state::LoadInflight(a_impl, "shop.orders");
  ASSERT_OK(left);
  EXPECT_FALSE(left->has_value()) << "the batch in flight is settled";
}

// An edge offline for longer than its journal keeps events: the writes
// since the push checkpoint are found by comparing every document with its
// base, and pushed once.
TEST_F(SyncTest, AnEdgeOfflinePastTheJournalsRetentionStillPushesEverything) {
  Options small;
  small.journal_max_events = 5;
  auto db = Database::Open(dir_.path() + "/forgetful", small);
  ASSERT_OK(db);
  Database* a = db->get();
  Collection c = a->GetCollection("shop", "orders");
  for (int i = 0; i < 4; ++i) ASSERT_OK(c.InsertOne(Json(R"({"_id": )" + std::to_string(i) + R"(, "n": 0})").view()));
  SyncOnce(a, "f");
  ASSERT_EQ(Docs(hub_.get()).size(), 4u);
  // Offline: many writes, more than the journal keeps.
  for (int round = 0; round < 10; ++round) {
    ASSERT_OK(c.UpdateMany(Json("{}").view(), Json(R"({"$inc": {"n": 1}})").view()));
  }
  ASSERT_OK(c.DeleteOne(Json(R"({"_id": 3})").view()));
  ASSERT_OK(c.InsertOne(Json(R"({"_id": 9, "n": 7})").view()));
  // Wait for the background collector to drop the events after the checkpoint.
  JournalQuery q;
  q.after_seq = 1;
  q.limit = 1;
  StatusOr<JournalBatch> r = a->ReadJournal(q);
  for (int i = 0; i < 200 && r.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = a->ReadJournal(q);
  }
  ASSERT_THAT(r, test::StatusIs(ErrorCode::kChangeStreamHistoryLost));
  SyncReport rep = SyncOnce(a, "f");
  EXPECT_EQ(rep.pushed, 5) << rep.ToJson();  // three updated, one deleted, one inserted
  EXPECT_EQ(Docs(hub_.get()), Docs(a));
  EXPECT_EQ(Field(hub_.get(), "0", "n"), 10);
  EXPECT_EQ(Field(hub_.get(), "3", "n"), -999);
  EXPECT_EQ(Field(hub_.get(), "9", "n"), 7);
  EXPECT_EQ(SyncOnce(a, "f").pushed, 0);
  db->reset();
}

TEST_F(SyncTest, AnUnreachableUpstreamIsAClearErrorAndLosesNothing) {
  Database* a = Edge("a");
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1})").view()));
  SyncOptions o;
  o.upstream_uri = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300";
  o.namespaces = {"shop.orders"};
  auto s = Sync::Open(a, o);
  EXPECT_THAT(s, test::StatusIs(ErrorCode::kHostUnreachable));
  o.upstream_uri = "not a uri";
  EXPECT_THAT(Sync::Open(a, o), test::StatusIs(ErrorCode::kFailedToParse));
  // TLS asked of an upstream without it: refused, and said so.
  const std::string port = std::to_string(server_->port());
  o.upstream_uri = "mongodb://127.0.0.1:" + port + "/?directConnection=true&tls=true&serverSelectionTimeoutMS=3000";
  auto tls = Sync::Open(a, o);
  EXPECT_THAT(tls, test::StatusIs(ErrorCode::kHostUnreachable));
  EXPECT_NE(tls.status().reason().find("TLS"), std::string::npos) << tls.status().ToString();
  // Credentials the upstream does not accept (this hub has no users yet).
  o.upstream_uri = "mongodb://agent:secret@127.0.0.1:" + port + "/?directConnection=true&serverSelectionTimeoutMS=3000";
  EXPECT_THAT(Sync::Open(a, o), test::StatusIs(ErrorCode::kAuthenticationFailed));
  o.upstream_uri = uri_;
  o.namespaces = {"nodot"};
  EXPECT_THAT(Sync::Open(a, o), test::StatusIs(ErrorCode::kInvalidOptions));
  // The pending write is still pushed by a later run.
  EXPECT_EQ(SyncOnce(a, "a").pushed, 1);
  EXPECT_EQ(Docs(hub_.get()).size(), 1u);
}

// Agents keep writing on the edge and on the hub while sync runs: with
// mergeIncrements every increment from either side survives, so the
// counter ends at the sum of them all, everywhere (a lost update would
// show as a smaller number).
TEST_F(SyncTest, WritersOnBothSidesDuringSyncLoseNoIncrement) {
  const std::string policy = R"({"mode": "fieldMerge", "mergeIncrements": true})";
  Database* a = Edge("a", policy);
  Document r = hub_->RunCommand(
      Json(R"({"create": "orders", "conflictPolicy": )" + policy + R"(, "$db": "shop"})").view());
  ASSERT_EQ(test::IntAt(r.bson(), "ok"), 1) << r.ToJson();
  ASSERT_OK(a->GetCollection("shop", "orders").InsertOne(Json(R"({"_id": 1, "count": 0})").view()));
  SyncOnce(a, "a");
  constexpr int kEdgeThreads = 2, kEdgeIncs = 40, kHubIncs = 30;
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < kEdgeThreads; ++t) {
    threads.emplace_back([&] {
      Collection c = a->GetCollection("shop", "orders");
      for (int i = 0; i < kEdgeIncs; ++i) {
        // The agent's own retry of a write the gate refused (sync wrote the
        // document between its read and its write): a read-decide-write loop.
        for (;;) {
          auto got = c.FindOne(Json(R"({"_id": 1})").view());
          ASSERT_OK(got);
          UpdateOptions uo;
          uo.write.basis_version = test::IntAt((**got).bson(), "version");
          auto u = c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"count": 1}})").view(), uo);
          if (u.ok()) break;
          ASSERT_EQ(u.status().code(), ErrorCode::kVersionConflict) << u.status().ToString();
        }
      }
    });
  }
  threads.emplace_back([&] {
    Collection c = hub_->GetCollection("shop", "orders");
    for (int i = 0; i < kHubIncs; ++i) {
      ASSERT_OK(c.UpdateOne(Json(R"({"_id": 1})").view(), Json(R"({"$inc": {"count": 1}})").view()));
    }
  });
  std::thread syncer([&] {
    while (writing.load()) SyncOnce(a, "a");
  });
  for (auto& t : threads) t.join();
  writing = false;
  syncer.join();
  for (int i = 0; i < 3; ++i) SyncOnce(a, "a");
  const int64_t want = kEdgeThreads * kEdgeIncs + kHubIncs;
  EXPECT_EQ(Field(a, "1", "count"), want);
  EXPECT_EQ(Field(hub_.get(), "1", "count"), want);
}

}  // namespace
}  // namespace gatedb
