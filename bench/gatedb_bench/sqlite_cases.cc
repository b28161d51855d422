// The SQLite baseline: what an embedded-app developer would pick instead.
// WAL mode, synchronous=NORMAL (FULL for the durable variant), a table
// (id TEXT PRIMARY KEY, version INTEGER, body BLOB) holding the same BSON
// bodies, and per update one transaction: prepared SELECT, then
// UPDATE ... WHERE id=? AND version=?.  Each thread has its own connection;
// the page cache is 64 MiB per connection, as gatedb's block cache.
#include <sqlite3.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"

namespace gatedb_bench {
namespace {

void Check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    throw std::runtime_error(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
}

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = std::string(sql) + ": " + (err ? err : "?");
    sqlite3_free(err);
    throw std::runtime_error(msg);
  }
}

sqlite3_stmt* Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  Check(db, sqlite3_prepare_v2(db, sql, -1, &st, nullptr), sql);
  return st;
}

// One connection with its prepared statements.
struct Conn {
  sqlite3* db = nullptr;
  sqlite3_stmt* begin = nullptr;
  sqlite3_stmt* select = nullptr;
  sqlite3_stmt* update = nullptr;
  sqlite3_stmt* commit = nullptr;
  sqlite3_stmt* rollback = nullptr;

  Conn(const std::string& path, bool full_sync) {
    Check(nullptr, sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), "open");
    sqlite3_busy_timeout(db, 10000);
    Exec(db, "PRAGMA journal_mode=WAL");
    Exec(db, full_sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    Exec(db, "PRAGMA cache_size=-65536");
  }
  void PrepareCas() {
    begin = Prepare(db, "BEGIN IMMEDIATE");
    select = Prepare(db, "SELECT version, body FROM docs WHERE id = ?1");
    update = Prepare(db, "UPDATE docs SET version = ?1, body = ?2 WHERE id = ?3 AND version = ?4");
    commit = Prepare(db, "COMMIT");
    rollback = Prepare(db, "ROLLBACK");
  }
  ~Conn() {
    for (sqlite3_stmt* st : {begin, select, update, commit, rollback}) sqlite3_finalize(st);
    sqlite3_close(db);
  }
};

struct SqliteFixture : Fixture {
  TempDir dir{"sqlite"};
  std::vector<std::unique_ptr<Conn>> conns;  // one per benchmark thread

  SqliteFixture(int threads, bool full_sync) {
    std::string path = dir.path() + "/bench.db";
    {
      Conn load(path, full_sync);
      Exec(load.db, "CREATE TABLE docs (id TEXT PRIMARY KEY, version INTEGER, body BLOB)");
      Exec(load.db, "BEGIN");
      sqlite3_stmt* ins = Prepare(load.db, "INSERT INTO docs (id, version, body) VALUES (?1, 0, ?2)");
      const int n = NumDocs();
      for (int i = 0; i < n; ++i) {
        bson_t d = BSON_INITIALIZER;
        BuildDoc(i, &d);
        std::string id = DocId(i);
        sqlite3_bind_text(ins, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
        sqlite3_bind_blob(ins, 2, bson_get_data(&d), static_cast<int>(d.len), SQLITE_TRANSIENT);
        int rc = sqlite3_step(ins);
        bson_destroy(&d);
        Check(load.db, rc, "insert");
        sqlite3_reset(ins);
      }
      sqlite3_finalize(ins);
      Exec(load.db, "COMMIT");
    }
    for (int t = 0; t < threads; ++t) {
      conns.push_back(std::make_unique<Conn>(path, full_sync));
      conns.back()->PrepareCas();
    }
  }
};

// One CAS: BEGIN IMMEDIATE; SELECT; parse, change one field, bump version;
// UPDATE ... WHERE id AND version; COMMIT.  Returns an error message or "".
// Not inlined (a profiler can collect exactly this).
__attribute__((noinline)) std::string SqliteCas(Conn& c, const std::string& id, double score) {
  int rc = sqlite3_step(c.begin);
  sqlite3_reset(c.begin);
  if (rc != SQLITE_DONE) return std::string("BEGIN: ") + sqlite3_errmsg(c.db);
  std::string err;
  sqlite3_bind_text(c.select, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  rc = sqlite3_step(c.select);
  if (rc != SQLITE_ROW) {
    err = std::string("SELECT: ") + sqlite3_errmsg(c.db);
  } else {
    int64_t version = sqlite3_column_int64(c.select, 0);
    const void* body = sqlite3_column_blob(c.select, 1);
    int len = sqlite3_column_bytes(c.select, 1);
    bson_t next = BSON_INITIALIZER;
    int64_t body_version = 0;
    if (!RewriteDoc(static_cast<const uint8_t*>(body), static_cast<size_t>(len), score, &body_version, &next)) {
      err = "bad BSON body";
    }
    sqlite3_reset(c.select);
    if (err.empty()) {
      sqlite3_bind_int64(c.update, 1, version + 1);
      sqlite3_bind_blob(c.update, 2, bson_get_data(&next), static_cast<int>(next.len), SQLITE_STATIC);
      sqlite3_bind_text(c.update, 3, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
      sqlite3_bind_int64(c.update, 4, version);
      rc = sqlite3_step(c.update);
      if (rc != SQLITE_DONE) {
        err = std::string("UPDATE: ") + sqlite3_errmsg(c.db);
      } else if (sqlite3_changes(c.db) != 1) {
        err = "UPDATE matched nothing";
      }
      sqlite3_reset(c.update);
    }
    bson_destroy(&next);
  }
  sqlite3_reset(c.select);
  sqlite3_stmt* end = err.empty() ? c.commit : c.rollback;
  rc = sqlite3_step(end);
  sqlite3_reset(end);
  if (err.empty() && rc != SQLITE_DONE) err = std::string("COMMIT: ") + sqlite3_errmsg(c.db);
  return err;
}

void RunSqliteCas(benchmark::State& state, const std::string& base, bool full_sync) {
  int threads = state.threads();
  auto fx = AcquireFixture<SqliteFixture>(InstanceKey(base, state), [threads, full_sync] {
    return std::make_unique<SqliteFixture>(threads, full_sync);
  });
  Conn& conn = *fx->conns[static_cast<size_t>(state.thread_index())];
  KeyPicker pick(state, 60);
  for (auto _ : state) {
    std::string err = SqliteCas(conn, DocId(pick.Next()), NextScore());
    if (!err.empty()) {
      Fail(state, err);
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}

void BM_Baseline_SqliteCas(benchmark::State& state) { RunSqliteCas(state, "BM_Baseline_SqliteCas", false); }
BENCHMARK(BM_Baseline_SqliteCas)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Baseline_SqliteCas_Durable(benchmark::State& state) {
  RunSqliteCas(state, "BM_Baseline_SqliteCas_Durable", true);
}
BENCHMARK(BM_Baseline_SqliteCas_Durable)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gatedb_bench
