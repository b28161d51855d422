// The SQLite baseline: what an embedded-app developer would pick instead.
// WAL mode, synchronous=NORMAL (FULL for the durable variant), a table
// (id TEXT PRIMARY KEY, version INTEGER, body BLOB) holding the same BSON
// bodies, and per update one transaction: prepared SELECT, then
// UPDATE ... WHERE id=? AND version=?.  Each thread has its own connection
// (every thread count, 1 to 8); the page cache is 64 MiB per connection, as
// gatedb's block cache, and the busy timeout 10 s, so that writers wait for
// the lock instead of failing.  A CAS that still gets SQLITE_BUSY is rolled
// back and run again, counted in `busy_retries`.
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

bool IsBusy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

// One CAS: BEGIN IMMEDIATE; SELECT; parse, change one field, bump version;
// UPDATE ... WHERE id AND version; COMMIT.  Returns an error message or "".
// *busy is set when a step answered SQLITE_BUSY (another connection held
// the lock for longer than the busy timeout); the transaction is then rolled
// back and the caller may run the CAS again.  Not inlined (a profiler can
// collect exactly this).
__attribute__((noinline)) std::string SqliteCas(Conn& c, const std::string& id, double score, bool* busy) {
  *busy = false;
  int rc = sqlite3_step(c.begin);
  sqlite3_reset(c.begin);
  if (rc != SQLITE_DONE) {
    *busy = IsBusy(rc);
    return std::string("BEGIN: ") + sqlite3_errmsg(c.db);
  }
  std::string err;
  sqlite3_bind_text(c.select, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  rc = sqlite3_step(c.select);
  if (rc != SQLITE_ROW) {
    *busy = IsBusy(rc);
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
        *busy = IsBusy(rc);
        err = std::string("UPDATE: ") + sqlite3_errmsg(c.db);
      } else if (sqlite3_changes(c.db) != 1) {
        err = "UPDATE matched nothing";
      }
      sqlite3_reset(c.update);
    }
    bson_destroy(&next);
  }
  sqlite3_reset(c.select);
  if (err.empty()) {
    rc = sqlite3_step(c.commit);
    sqlite3_reset(c.commit);
    if (rc != SQLITE_DONE) {
      *busy = IsBusy(rc);
      err = std::string("COMMIT: ") + sqlite3_errmsg(c.db);
    }
  }
  // A failed step or COMMIT leaves the transaction open: roll it back.
  if (!err.empty() && sqlite3_get_autocommit(c.db) == 0) {
    sqlite3_step(c.rollback);
    sqlite3_reset(c.rollback);
  }
  return err;
}

// How often one CAS is run again after SQLITE_BUSY before the case fails
// (each attempt has already waited up to the busy timeout).
constexpr int kMaxBusyRetries = 3;

void RunSqliteCas(benchmark::State& state, const std::string& base, bool full_sync) {
  int threads = state.threads();
  auto fx = AcquireFixture<SqliteFixture>(InstanceKey(base, state), [threads, full_sync] {
    return std::make_unique<SqliteFixture>(threads, full_sync);
  });
  // This thread's own connection: a thread index is used by one thread at a
  // time, and each fixture has as many connections as its case has threads.
  Conn& conn = *fx->conns[static_cast<size_t>(state.thread_index())];
  KeyPicker pick(state, 60);
  int64_t busy_retries = 0;
  WallRate wall;
  for (auto _ : state) {
    wall.Mark();
    const std::string id = DocId(pick.Next());
    const double score = NextScore();
    std::string err;
    for (int attempt = 0;; ++attempt) {
      bool busy = false;
      err = SqliteCas(conn, id, score, &busy);
      if (!busy || attempt == kMaxBusyRetries) break;
      ++busy_retries;
    }
    if (!err.empty()) {
      Fail(state, err);
      break;
    }
  }
  // Summed over the threads by Google Benchmark: the case's total.
  state.counters["busy_retries"] = benchmark::Counter(static_cast<double>(busy_retries));
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
  wall.Report(state);
}

void BM_Baseline_SqliteCas(benchmark::State& state) { RunSqliteCas(state, "BM_Baseline_SqliteCas", false); }
BENCHMARK(BM_Baseline_SqliteCas)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Baseline_SqliteCas_Durable(benchmark::State& state) {
  RunSqliteCas(state, "BM_Baseline_SqliteCas_Durable", true);
}
// Writers 1, 2, 4 and 8, each with its own connection and its own slice of
// the documents; SQLite lets one writer in at a time (BEGIN IMMEDIATE), the
// others wait in the busy handler.
BENCHMARK(BM_Baseline_SqliteCas_Durable)->Apply(DurableWriters);

}  // namespace
}  // namespace gatedb_bench
