// The C ABI (gatedb/gatedb_c.h), linked as users link it: against the
// shared libgatedb, through gatedb_c.h and libbson only.  Every function
// with bad arguments, truncated and hostile BSON, Extended JSON, and
// concurrent gated writes from threads that must lose nothing.
#include "gatedb/gatedb_c.h"

#include <bson/bson.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/test_util.h"

namespace {

using gatedb::test::TempDir;

// A reply (BSON), owned; frees the library's buffer.
class Reply {
 public:
  Reply() = default;
  ~Reply() { gatedb_free(data_); }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  uint8_t** data() { return &data_; }
  size_t* len() { return &len_; }
  bool present() const { return data_ != nullptr; }
  // The reply as a bson_t view.  REQUIRES: present().
  const bson_t* bson() {
    EXPECT_TRUE(bson_init_static(&view_, data_, len_));
    return &view_;
  }
  int64_t Int(const char* dotted) {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, bson()) || !bson_iter_find_descendant(&it, dotted, &found)) return -999999;
    return bson_iter_as_int64(&found);
  }
  std::string Str(const char* dotted) {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, bson()) || !bson_iter_find_descendant(&it, dotted, &found) ||
        !BSON_ITER_HOLDS_UTF8(&found)) {
      return "<none>";
    }
    return bson_iter_utf8(&found, nullptr);
  }
  std::string Json() {
    char* s = bson_as_relaxed_extended_json(bson(), nullptr);
    std::string out = s;
    bson_free(s);
    return out;
  }

 private:
  uint8_t* data_ = nullptr;
  size_t len_ = 0;
  bson_t view_;
};

// An error message from the library, freed at scope exit.
struct ErrMsg {
  char* p = nullptr;
  ~ErrMsg() { gatedb_free(p); }
  std::string str() const { return p ? p : "<null>"; }
};

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ErrMsg err;
    ASSERT_EQ(gatedb_open(dir_.path().c_str(), nullptr, &db_, &err.p), GATEDB_OK) << err.str();
    ASSERT_NE(db_, nullptr);
    EXPECT_EQ(err.p, nullptr);
  }
  void TearDown() override { gatedb_close(db_); }

  // Runs the command given as BCON-built BSON and fills `reply`.
  int32_t Run(bson_t* cmd, Reply* reply, ErrMsg* err = nullptr) {
    ErrMsg local;
    ErrMsg* e = err ? err : &local;
    int32_t rc = gatedb_command(db_, bson_get_data(cmd), cmd->len, reply->data(), reply->len(), &e->p);
    bson_destroy(cmd);
    return rc;
  }
  int32_t RunJson(const char* json, std::string* out, gatedb_json_mode_t mode = GATEDB_JSON_RELAXED) {
    char* reply = nullptr;
    ErrMsg err;
    int32_t rc = gatedb_command_json(db_, json, mode, &reply, &err.p);
    if (reply != nullptr) *out = reply;
    gatedb_free(reply);
    return rc;
  }
  int64_t Count() {
    Reply r;
    EXPECT_EQ(Run(BCON_NEW("count", BCON_UTF8("c"), "$db", BCON_UTF8("t")), &r), GATEDB_OK);
    return r.Int("n");
  }

  TempDir dir_;
  gatedb_t* db_ = nullptr;
};

TEST(CApiVersion, IsTheProjectVersion) { EXPECT_STREQ(gatedb_version(), GATEDB_TEST_VERSION); }

TEST(CApiOpen, BadArgumentsAreBadValueWithAMessage) {
  ErrMsg err;
  gatedb_t* db = reinterpret_cast<gatedb_t*>(0x1);
  EXPECT_EQ(gatedb_open(nullptr, nullptr, &db, &err.p), 2);
  EXPECT_EQ(db, nullptr);
  EXPECT_NE(err.str().find("path is NULL"), std::string::npos) << err.str();
  ErrMsg err2;
  EXPECT_EQ(gatedb_open("/tmp/x", nullptr, nullptr, &err2.p), 2);
  EXPECT_NE(err2.p, nullptr);
  // errmsg may be NULL.
  EXPECT_EQ(gatedb_open(nullptr, nullptr, &db, nullptr), 2);
  gatedb_close(nullptr);  // a no-op
}

TEST(CApiOpen, OptionsAreApplied) {
  TempDir dir;
  const std::string missing = dir.path() + "/not-there";
  gatedb_options_t* o = gatedb_options_create();
  ASSERT_NE(o, nullptr);
  gatedb_options_set_create_if_missing(o, 0);
  gatedb_t* db = nullptr;
  ErrMsg err;
  EXPECT_NE(gatedb_open(missing.c_str(), o, &db, &err.p), GATEDB_OK);
  EXPECT_EQ(db, nullptr);
  EXPECT_NE(err.p, nullptr);

  gatedb_options_set_create_if_missing(o, 1);
  ErrMsg err2;
  ASSERT_EQ(gatedb_open(missing.c_str(), o, &db, &err2.p), GATEDB_OK) << err2.str();
  gatedb_close(db);

  gatedb_options_set_error_if_exists(o, 1);
  ErrMsg err3;
  db = nullptr;
  EXPECT_NE(gatedb_open(missing.c_str(), o, &db, &err3.p), GATEDB_OK);
  EXPECT_EQ(db, nullptr);
  gatedb_options_destroy(o);

  // Setters on a NULL handle do nothing; destroy(NULL) is a no-op.
  gatedb_options_set_sync(nullptr, 1);
  gatedb_options_set_lock_timeout_ms(nullptr, 5);
  gatedb_options_destroy(nullptr);
}

TEST(CApiOpen, ASecondHandleOnAnOpenDirectoryIsRefused) {
  TempDir dir;
  gatedb_t* first = nullptr;
  gatedb_t* second = nullptr;
  ErrMsg err;
  ASSERT_EQ(gatedb_open(dir.path().c_str(), nullptr, &first, nullptr), GATEDB_OK);
  EXPECT_NE(gatedb_open(dir.path().c_str(), nullptr, &second, &err.p), GATEDB_OK);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(err.p, nullptr);
  gatedb_close(first);
}

TEST(CApiOpen, OptionsReachTheDatabase) {
  TempDir dir;
  gatedb_options_t* o = gatedb_options_create();
  gatedb_options_set_cursor_timeout_ms(o, 1234);
  gatedb_options_set_transaction_lifetime_ms(o, 7000);
  gatedb_t* db = nullptr;
  ASSERT_EQ(gatedb_open(dir.path().c_str(), o, &db, nullptr), GATEDB_OK);
  gatedb_options_destroy(o);  // only read during gatedb_open
  char* reply = nullptr;
  ASSERT_EQ(gatedb_command_json(db,
                                R"({"getParameter": 1, "cursorTimeoutMillis": 1,
                                    "transactionLifetimeLimitSeconds": 1, "$db": "admin"})",
                                GATEDB_JSON_RELAXED, &reply, nullptr),
            GATEDB_OK);
  const std::string out = reply;
  gatedb_free(reply);
  EXPECT_NE(out.find(R"("cursorTimeoutMillis" : 1234)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("transactionLifetimeLimitSeconds" : 7)"), std::string::npos) << out;
  gatedb_close(db);
}

TEST_F(CApiTest, CommandRoundTripsBson) {
  Reply ins;
  ASSERT_EQ(Run(BCON_NEW("insert", BCON_UTF8("c"), "documents", "[", "{", "_id", BCON_INT32(1), "x",
                         BCON_UTF8("é"), "}", "]", "$db", BCON_UTF8("t")),
                &ins),
            GATEDB_OK);
  EXPECT_EQ(ins.Int("n"), 1);
  Reply found;
  ASSERT_EQ(Run(BCON_NEW("find", BCON_UTF8("c"), "filter", "{", "_id", BCON_INT32(1), "}", "$db", BCON_UTF8("t")),
                &found),
            GATEDB_OK);
  EXPECT_EQ(found.Str("cursor.firstBatch.0.x"), "é");
  EXPECT_EQ(found.Int("cursor.firstBatch.0.version"), 0);
  EXPECT_EQ(found.Int("cursor.id"), 0);
}

TEST_F(CApiTest, AFailedCommandReturnsItsCodeAndStillReplies) {
  Reply r;
  ErrMsg err;
  EXPECT_EQ(Run(BCON_NEW("noSuchCommand", BCON_INT32(1), "$db", BCON_UTF8("t")), &r, &err), 59);
  ASSERT_TRUE(r.present());
  EXPECT_EQ(r.Int("ok"), 0);
  EXPECT_EQ(r.Str("codeName"), "CommandNotFound");
  EXPECT_EQ(err.str(), r.Str("errmsg"));
}

TEST_F(CApiTest, WriteErrorsDoNotFailTheCommand) {
  Reply a, b;
  ASSERT_EQ(Run(BCON_NEW("insert", BCON_UTF8("c"), "documents", "[", "{", "_id", BCON_INT32(1), "}", "]", "$db",
                         BCON_UTF8("t")),
                &a),
            GATEDB_OK);
  ErrMsg err;
  EXPECT_EQ(Run(BCON_NEW("insert", BCON_UTF8("c"), "documents", "[", "{", "_id", BCON_INT32(1), "}", "]", "$db",
                         BCON_UTF8("t")),
                &b, &err),
            GATEDB_OK);
  EXPECT_EQ(err.p, nullptr);
  EXPECT_EQ(b.Int("writeErrors.0.code"), 11000);
  EXPECT_EQ(b.Int("n"), 0);
}

TEST_F(CApiTest, BadArgumentsToCommand) {
  uint8_t* reply = reinterpret_cast<uint8_t*>(0x1);
  size_t len = 7;
  ErrMsg e1, e2, e3;
  bson_t* cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
  EXPECT_EQ(gatedb_command(nullptr, bson_get_data(cmd), cmd->len, &reply, &len, &e1.p), 2);
  EXPECT_EQ(reply, nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_NE(e1.p, nullptr);
  EXPECT_EQ(gatedb_command(db_, bson_get_data(cmd), cmd->len, nullptr, &len, &e2.p), 2);
  EXPECT_EQ(gatedb_command(db_, bson_get_data(cmd), cmd->len, &reply, nullptr, &e3.p), 2);
  bson_destroy(cmd);

  // A NULL command is an InvalidBSON reply.
  Reply r;
  EXPECT_EQ(gatedb_command(db_, nullptr, 10, r.data(), r.len(), nullptr), 22);
  ASSERT_TRUE(r.present());
  EXPECT_EQ(r.Str("codeName"), "InvalidBSON");

  // JSON: NULL db, NULL out, unknown mode.
  char* out = nullptr;
  EXPECT_EQ(gatedb_command_json(nullptr, "{}", GATEDB_JSON_RELAXED, &out, nullptr), 2);
  EXPECT_EQ(gatedb_command_json(db_, "{}", GATEDB_JSON_RELAXED, nullptr, nullptr), 2);
  EXPECT_EQ(gatedb_command_json(db_, "{\"ping\": 1}", static_cast<gatedb_json_mode_t>(7), &out, nullptr), 2);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(gatedb_command_json(db_, nullptr, GATEDB_JSON_RELAXED, &out, nullptr), 9);
  ASSERT_NE(out, nullptr);
  gatedb_free(out);
  gatedb_free(nullptr);  // a no-op
}

TEST_F(CApiTest, TruncatedAndMislabelledBsonIsInvalidBson) {
  bson_t* cmd = BCON_NEW("insert", BCON_UTF8("c"), "documents", "[", "{", "_id", BCON_INT32(1), "}", "]", "$db",
                         BCON_UTF8("t"));
  std::vector<uint8_t> bytes(bson_get_data(cmd), bson_get_data(cmd) + cmd->len);
  bson_destroy(cmd);
  // Every truncation, and the bytes with trailing garbage.
  for (size_t n = 0; n < bytes.size(); ++n) {
    Reply r;
    int32_t rc = gatedb_command(db_, bytes.data(), n, r.data(), r.len(), nullptr);
    EXPECT_EQ(rc, 22) << "length " << n;
    ASSERT_TRUE(r.present());
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  Reply r;
  EXPECT_EQ(gatedb_command(db_, longer.data(), longer.size(), r.data(), r.len(), nullptr), 22);
  // A length far beyond the buffer is refused before anything is read.
  Reply big;
  EXPECT_EQ(gatedb_command(db_, bytes.data(), size_t{1} << 40, big.data(), big.len(), nullptr), 10334);
  EXPECT_EQ(Count(), 0) << "a refused command wrote";
}

TEST_F(CApiTest, DeepNestingAndBadUtf8AreRefused) {
  // 300 levels of {"a": ...}: over MongoDB's incoming limit of 200.
  bson_t docs[301];
  bson_init(&docs[300]);
  for (int i = 299; i >= 0; --i) {
    bson_init(&docs[i]);
    bson_append_document(&docs[i], "a", 1, &docs[i + 1]);
  }
  bson_t* cmd = bson_new();
  BSON_APPEND_UTF8(cmd, "insert", "c");
  bson_t arr;
  bson_append_array_begin(cmd, "documents", 9, &arr);
  bson_append_document(&arr, "0", 1, &docs[0]);
  bson_append_array_end(cmd, &arr);
  BSON_APPEND_UTF8(cmd, "$db", "t");
  for (auto& d : docs) bson_destroy(&d);
  Reply r;
  EXPECT_EQ(Run(cmd, &r), 15);
  EXPECT_EQ(r.Str("codeName"), "Overflow");

  bson_t* bad = bson_new();
  BSON_APPEND_UTF8(bad, "insert", "c");
  bson_append_array_begin(bad, "documents", 9, &arr);
  bson_t doc;
  bson_append_document_begin(&arr, "0", 1, &doc);
  bson_append_utf8(&doc, "s", 1, "\xff\xfe", 2);  // libbson appends it unchecked
  bson_append_document_end(&arr, &doc);
  bson_append_array_end(bad, &arr);
  BSON_APPEND_UTF8(bad, "$db", "t");
  Reply r2;
  EXPECT_EQ(Run(bad, &r2), 22);
  EXPECT_EQ(Count(), 0);
}

// Random corruption of valid commands: every call returns a reply with a
// code, ASan sees no bad read, and the store holds exactly the effects the
// replies acknowledged: the journal (of every database a mutated $db may
// have named) has one write event per upserted or modified document.
TEST_F(CApiTest, HostileBytesNeverCrash) {
  bson_t* cmd = BCON_NEW("update", BCON_UTF8("c"), "updates", "[", "{", "q", "{", "_id", BCON_INT32(1), "}", "u",
                         "{", "$inc", "{", "n", BCON_INT32(1), "}", "}", "upsert", BCON_BOOL(true), "}", "]",
                         "writeContext", "{", "agentId", BCON_UTF8("a"), "}", "$db", BCON_UTF8("t"));
  const std::vector<uint8_t> good(bson_get_data(cmd), bson_get_data(cmd) + cmd->len);
  bson_destroy(cmd);
  std::mt19937 rng(20261202);
  int failed = 0;
  int64_t acknowledged = 0;
  for (int i = 0; i < 5000; ++i) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    Reply r;
    ErrMsg err;
    int32_t rc = gatedb_command(db_, b.data(), b.size(), r.data(), r.len(), &err.p);
    ASSERT_TRUE(r.present());
    bson_t view;
    ASSERT_TRUE(bson_init_static(&view, *r.data(), *r.len()));
    if (rc != GATEDB_OK) {
      ++failed;
      EXPECT_NE(err.p, nullptr);
      EXPECT_EQ(r.Int("ok"), 0);
      continue;
    }
    EXPECT_EQ(err.p, nullptr);
    bson_iter_t it, up;
    if (bson_iter_init_find(&it, r.bson(), "nModified")) acknowledged += bson_iter_as_int64(&it);
    if (bson_iter_init_find(&it, r.bson(), "upserted") && bson_iter_recurse(&it, &up)) {
      while (bson_iter_next(&up)) ++acknowledged;
    }
  }
  EXPECT_GT(failed, 0) << "corruption was never noticed";

  Reply dbs;
  ASSERT_EQ(Run(BCON_NEW("listDatabases", BCON_INT32(1), "$db", BCON_UTF8("admin")), &dbs), GATEDB_OK);
  int64_t events = 0;
  bson_iter_t it, list, entry;
  ASSERT_TRUE(bson_iter_init_find(&it, dbs.bson(), "databases") && bson_iter_recurse(&it, &list));
  while (bson_iter_next(&list)) {
    ASSERT_TRUE(bson_iter_recurse(&list, &entry) && bson_iter_find(&entry, "name"));
    const std::string name = bson_iter_utf8(&entry, nullptr);
    Reply j;
    ASSERT_EQ(Run(BCON_NEW("journal", BCON_INT32(1), "limit", BCON_INT32(100000), "$db", BCON_UTF8(name.c_str())), &j),
              GATEDB_OK)
        << name;
    bson_iter_t ev, evs, f;
    ASSERT_TRUE(bson_iter_init_find(&ev, j.bson(), "events") && bson_iter_recurse(&ev, &evs));
    while (bson_iter_next(&evs)) {
      ASSERT_TRUE(bson_iter_recurse(&evs, &f) && bson_iter_find(&f, "op"));
      const std::string op = bson_iter_utf8(&f, nullptr);
      if (op == "insert" || op == "update" || op == "replace" || op == "delete") ++events;
    }
  }
  EXPECT_EQ(events, acknowledged);
  EXPECT_GT(acknowledged, 0) << "no mutated command went through: the check above proved nothing";
}

TEST_F(CApiTest, ExtendedJsonInAndOut) {
  std::string out;
  ASSERT_EQ(RunJson(R"({"insert": "c", "documents": [{"_id": 1, "n": {"$numberLong": "5"},
                        "d": {"$date": "2024-01-02T03:04:05.678Z"}}], "$db": "t"})",
                    &out),
            GATEDB_OK)
      << out;
  ASSERT_EQ(RunJson(R"({"find": "c", "filter": {}, "$db": "t"})", &out, GATEDB_JSON_CANONICAL), GATEDB_OK);
  EXPECT_NE(out.find(R"("n" : { "$numberLong" : "5" })"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("$date" : { "$numberLong" : "1704164645678" })"), std::string::npos) << out;
  ASSERT_EQ(RunJson(R"({"find": "c", "filter": {}, "$db": "t"})", &out, GATEDB_JSON_RELAXED), GATEDB_OK);
  EXPECT_NE(out.find(R"("n" : 5)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("$date" : "2024-01-02T03:04:05.678Z")"), std::string::npos) << out;

  EXPECT_EQ(RunJson(R"({"find": "c", "filter": {)", &out), 9);
  EXPECT_NE(out.find("FailedToParse"), std::string::npos) << out;
  EXPECT_EQ(RunJson("[1, 2]", &out), 9);
  // A parse error quoting bytes that are not UTF-8 still has a JSON reply
  // (found by fuzz_c_api: the reply was "{}").
  EXPECT_EQ(RunJson("{\"update\": \"c\", \"u\": {\"$inc\"\xfa: 1}}", &out), 9);
  EXPECT_NE(out.find("FailedToParse"), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\""), std::string::npos) << out;
  std::string deep;
  for (int i = 0; i < 400; ++i) deep += R"({"a": )";
  deep += "1";
  for (int i = 0; i < 400; ++i) deep += "}";
  const int32_t rc = RunJson((R"({"insert": "c", "documents": [)" + deep + R"(], "$db": "t"})").c_str(), &out);
  EXPECT_TRUE(rc == 9 || rc == 15) << rc << " " << out;
  EXPECT_EQ(Count(), 1);
}

// Agents through the C ABI: a handle acting as a user (gatedb_open_as) and
// one opened with an identity are checked against the user's roles.
TEST_F(CApiTest, HandlesActAsUsers) {
  std::string out;
  ASSERT_EQ(RunJson(R"({"createUser": "reader", "pwd": "r", "roles": [{"role": "read", "db": "t"}], "$db": "admin"})",
                    &out), GATEDB_OK) << out;
  ASSERT_EQ(RunJson(R"({"insert": "c", "documents": [{"_id": 1}], "$db": "t"})", &out), GATEDB_OK);
  gatedb_t* reader = nullptr;
  {
    ErrMsg err;
    ASSERT_EQ(gatedb_open_as(db_, "reader", nullptr, &reader, &err.p), GATEDB_OK) << err.str();
  }
  auto run = [&](gatedb_t* h, const char* json) {
    char* reply = nullptr;
    ErrMsg err;
    int32_t rc = gatedb_command_json(h, json, GATEDB_JSON_RELAXED, &reply, &err.p);
    out = reply != nullptr ? reply : "";
    gatedb_free(reply);
    return rc;
  };
  EXPECT_EQ(run(reader, R"({"find": "c", "filter": {}, "$db": "t"})"), GATEDB_OK) << out;
  EXPECT_EQ(run(reader, R"({"insert": "c", "documents": [{"_id": 2}], "$db": "t"})"), 13) << out;
  EXPECT_NE(out.find("\"agentId\" : \"reader\""), std::string::npos) << out;
  gatedb_close(reader);  // the store stays open for db_
  EXPECT_EQ(Count(), 1);
  {
    ErrMsg err;
    gatedb_t* none = nullptr;
    EXPECT_EQ(gatedb_open_as(db_, "nobody", "admin", &none, &err.p), 11);
    EXPECT_EQ(none, nullptr);
    EXPECT_NE(err.str().find("nobody"), std::string::npos);
    EXPECT_EQ(gatedb_open_as(db_, nullptr, nullptr, &none, nullptr), 2);
    EXPECT_EQ(gatedb_open_as(nullptr, "reader", nullptr, &none, nullptr), 2);
    EXPECT_EQ(gatedb_open_as(db_, "reader", nullptr, nullptr, nullptr), 2);
  }
  // Reopened with an identity, and with strangers refused.
  gatedb_close(db_);
  db_ = nullptr;
  gatedb_options_t* o = gatedb_options_create();
  gatedb_options_set_identity(o, "reader", "admin");
  gatedb_t* as_reader = nullptr;
  {
    ErrMsg err;
    ASSERT_EQ(gatedb_open(dir_.path().c_str(), o, &as_reader, &err.p), GATEDB_OK) << err.str();
  }
  EXPECT_EQ(run(as_reader, R"({"delete": "c", "deletes": [{"q": {}, "limit": 0}], "$db": "t"})"), 13) << out;
  gatedb_close(as_reader);
  gatedb_options_set_identity(o, "ghost", nullptr);
  gatedb_t* ghost = nullptr;
  EXPECT_EQ(gatedb_open(dir_.path().c_str(), o, &ghost, nullptr), 11);
  gatedb_options_set_identity(o, nullptr, nullptr);
  gatedb_options_set_unauthenticated_root(o, 0);
  gatedb_t* stranger = nullptr;
  ASSERT_EQ(gatedb_open(dir_.path().c_str(), o, &stranger, nullptr), GATEDB_OK);
  EXPECT_EQ(run(stranger, R"({"ping": 1})"), GATEDB_OK);
  EXPECT_EQ(run(stranger, R"({"find": "c", "$db": "t"})"), 13) << out;
  gatedb_close(stranger);
  gatedb_options_destroy(o);
  ASSERT_EQ(gatedb_open(dir_.path().c_str(), nullptr, &db_, nullptr), GATEDB_OK);
  EXPECT_EQ(Count(), 1);
}

// Threads increment one counter through the version gate (basisVersion,
// retried on VersionConflict): every acknowledged increment is there once.
TEST_F(CApiTest, ConcurrentGatedWritesLoseNothing) {
  std::string out;
  ASSERT_EQ(RunJson(R"({"insert": "c", "documents": [{"_id": "k", "n": 0}], "$db": "t"})", &out), GATEDB_OK);
  constexpr int kThreads = 6, kEach = 60;
  std::atomic<int> conflicts{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        for (;;) {
          Reply found;
          if (Run(BCON_NEW("find", BCON_UTF8("c"), "filter", "{", "_id", BCON_UTF8("k"), "}", "$db", BCON_UTF8("t")),
                  &found) != GATEDB_OK) {
            ++failures;
            return;
          }
          const int64_t version = found.Int("cursor.firstBatch.0.version");
          Reply upd;
          if (Run(BCON_NEW("update", BCON_UTF8("c"), "updates", "[", "{", "q", "{", "_id", BCON_UTF8("k"), "}", "u",
                           "{", "$inc", "{", "n", BCON_INT32(1), "}", "}", "basisVersion", BCON_INT64(version), "}",
                           "]", "$db", BCON_UTF8("t")),
                  &upd) != GATEDB_OK) {
            ++failures;
            return;
          }
          if (upd.Int("nModified") == 1) break;
          if (upd.Str("writeErrors.0.codeName") != "VersionConflict") {
            ++failures;
            return;
          }
          ++conflicts;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  Reply found;
  ASSERT_EQ(Run(BCON_NEW("find", BCON_UTF8("c"), "filter", "{", "_id", BCON_UTF8("k"), "}", "$db", BCON_UTF8("t")),
                &found),
            GATEDB_OK);
  EXPECT_EQ(found.Int("cursor.firstBatch.0.n"), kThreads * kEach);
  EXPECT_EQ(found.Int("cursor.firstBatch.0.version"), kThreads * kEach);
  // Not asserted (it depends on scheduling), but reported: how often the
  // gate refused a stale basis.
  RecordProperty("conflicts", conflicts.load());
}

}  // namespace
