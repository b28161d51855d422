// The SQLite baseline: what an embedded-app developer would pick instead.
// WAL mode, synchronous=NORMAL (FULL for the durable variant), a table
// (id TEXT PRIMARY KEY, version INTEGER, body BLOB) holding the same BSON
// bodies, and per update one transaction: prepared SELECT, then
// UPDATE ... WHERE id=? AND version=?.  Each thread has its own connection
// (every thread count, 1 to 8); the page cache is 64 MiB per connection, as
// gatedb's block cache, and the busy timeout 10 s, so that writers wait for
// the lock instead of failing.  A CAS that still gets SQLITE_BUSY is rolled
// back and run again, counted in `busy_retries`.
//
// The index cases (issue 13) use the same settings on the table
// (id TEXT PRIMARY KEY, version INTEGER, email TEXT, orderNo INTEGER,
// category TEXT, body BLOB): the indexed fields also as columns, with
// kIndexedFields' indexes on them (email UNIQUE); one prepared statement
// per query, each in its own (autocommit) transaction.
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <optional>
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
  sqlite3_stmt* by_email = nullptr;  // the index cases'
  sqlite3_stmt* by_range = nullptr;
  sqlite3_stmt* insert = nullptr;

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
  void PrepareIndexed() {
    by_email = Prepare(db, "SELECT version, body FROM docs WHERE email = ?1");
    by_range = Prepare(db, "SELECT version, body FROM docs WHERE orderNo >= ?1 AND orderNo < ?2");
    insert = Prepare(db,
                     "INSERT INTO docs (id, version, email, orderNo, category, body) VALUES (?1, 0, ?2, ?3, ?4, ?5)");
  }
  ~Conn() {
    for (sqlite3_stmt* st : {begin, select, update, commit, rollback, by_email, by_range, insert}) sqlite3_finalize(st);
    sqlite3_close(db);
  }
};

// Binds document i's row to `ins` (the index cases' INSERT: ?1 id, ?2
// email, ?3 orderNo, ?4 category, ?5 body; the CAS table's: ?1 id, ?2
// body) and runs it.  `d` holds BuildDoc(i).  The bound values live until
// the step has run, so they are not copied (SQLITE_STATIC).
int InsertRow(sqlite3_stmt* ins, bool field_columns, int i, const bson_t& d) {
  std::string id = DocId(i);
  sqlite3_bind_text(ins, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  std::string email, category;
  if (field_columns) {
    email = Email(i);
    category = Category(i);
    sqlite3_bind_text(ins, 2, email.data(), static_cast<int>(email.size()), SQLITE_STATIC);
    sqlite3_bind_int(ins, 3, i);
    sqlite3_bind_text(ins, 4, category.data(), static_cast<int>(category.size()), SQLITE_STATIC);
  }
  sqlite3_bind_blob(ins, field_columns ? 5 : 2, bson_get_data(&d), static_cast<int>(d.len), SQLITE_STATIC);
  int rc = sqlite3_step(ins);
  sqlite3_reset(ins);
  return rc;
}

// A table with NumDocs() documents, loaded in one transaction.  `indexes`
// unset: the CAS table (id, version, body) and PrepareCas; set: the index
// cases' table with the first *indexes of kIndexedFields indexed, and
// PrepareIndexed.
struct SqliteFixture : Fixture {
  TempDir dir{"sqlite"};
  std::vector<std::unique_ptr<Conn>> conns;  // one per benchmark thread
  std::atomic<int64_t> seq{0};               // the insert cases' documents

  SqliteFixture(int threads, bool full_sync, std::optional<int> indexes = std::nullopt) {
    std::string path = dir.path() + "/bench.db";
    const bool fields = indexes.has_value();
    {
      Conn load(path, full_sync);
      Exec(load.db, fields ? "CREATE TABLE docs (id TEXT PRIMARY KEY, version INTEGER, email TEXT, orderNo INTEGER, "
                             "category TEXT, body BLOB)"
                           : "CREATE TABLE docs (id TEXT PRIMARY KEY, version INTEGER, body BLOB)");
      // The indexes first, as gatedb's index cases create theirs (the
      // entries are written with the rows).
      for (int k = 0; fields && k < *indexes; ++k) {
        const IndexedField& f = kIndexedFields[k];
        std::string sql = std::string(f.unique ? "CREATE UNIQUE INDEX" : "CREATE INDEX") + " ix_" + f.name +
                          " ON docs (" + f.name + ")";
        Exec(load.db, sql.c_str());
      }
      Exec(load.db, "BEGIN");
      sqlite3_stmt* ins = Prepare(load.db, fields ? "INSERT INTO docs (id, version, email, orderNo, category, body) "
                                                    "VALUES (?1, 0, ?2, ?3, ?4, ?5)"
                                                  : "INSERT INTO docs (id, version, body) VALUES (?1, 0, ?2)");
      const int n = NumDocs();
      for (int i = 0; i < n; ++i) {
        bson_t d = BSON_INITIALIZER;
        BuildDoc(i, &d);
        int rc = InsertRow(ins, fields, i, d);
        bson_destroy(&d);
        Check(load.db, rc, "insert");
      }
      sqlite3_finalize(ins);
      Exec(load.db, "COMMIT");
    }
    for (int t = 0; t < threads; ++t) {
      conns.push_back(std::make_unique<Conn>(path, full_sync));
      if (fields) {
        conns.back()->PrepareIndexed();
      } else {
        conns.back()->PrepareCas();
      }
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

// ---- Secondary indexes (issue 13) ------------------------------------------

// Throws unless SQLite's plan for `st` searches the index `index`.
void ExpectIndexPlan(sqlite3* db, sqlite3_stmt* st, const std::string& index) {
  std::string sql = std::string("EXPLAIN QUERY PLAN ") + sqlite3_sql(st);
  sqlite3_stmt* plan = Prepare(db, sql.c_str());
  std::string details;
  while (sqlite3_step(plan) == SQLITE_ROW) {
    details += reinterpret_cast<const char*>(sqlite3_column_text(plan, 3));
    details += "; ";
  }
  sqlite3_finalize(plan);
  if (details.find("USING INDEX " + index) == std::string::npos) {
    throw std::runtime_error(std::string(sqlite3_sql(st)) + " does not use " + index + ": " + details);
  }
}

// The read cases' shared fixture (they only read; the gatedb read cases'
// data and indexes): one connection, both plans checked once.
std::shared_ptr<SqliteFixture> IndexedReadFixture(const benchmark::State& state) {
  return AcquireFixture<SqliteFixture>(InstanceKey("sqlite_indexed_reads", state), [] {
    auto f = std::make_unique<SqliteFixture>(1, false, kNumIndexedFields);
    ExpectIndexPlan(f->conns[0]->db, f->conns[0]->by_email, "ix_email");
    ExpectIndexPlan(f->conns[0]->db, f->conns[0]->by_range, "ix_orderNo");
    return f;
  });
}

// Steps `st` (bound) to its end, reading every row as gatedb's Find
// returns it: the version and a copy of the body, one per document.
// Returns the rows read, -1 on an error.  Not inlined
// (valgrind --toggle-collect='*SqliteFindOnce*').
__attribute__((noinline)) int64_t SqliteFindOnce(sqlite3_stmt* st, std::vector<std::string>* rows) {
  rows->clear();
  int rc;
  int64_t version_sum = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    version_sum += sqlite3_column_int64(st, 0);
    const void* body = sqlite3_column_blob(st, 1);
    rows->emplace_back(static_cast<const char*>(body), static_cast<size_t>(sqlite3_column_bytes(st, 1)));
  }
  sqlite3_reset(st);
  benchmark::DoNotOptimize(version_sum);
  return rc == SQLITE_DONE ? static_cast<int64_t>(rows->size()) : -1;
}

// SELECT version, body FROM docs WHERE email = ?: the unique index ix_email,
// one row (BM_IndexedFindEq's work).
void BM_Baseline_SqliteIndexedEq(benchmark::State& state) {
  auto fx = IndexedReadFixture(state);
  Conn& conn = *fx->conns[0];
  KeyPicker pick(state, 72);
  for (auto _ : state) {
    // Each iteration's own vector, as gatedb's Find returns a new one.
    std::vector<std::string> rows;
    std::string email = Email(pick.Next());
    sqlite3_bind_text(conn.by_email, 1, email.data(), static_cast<int>(email.size()), SQLITE_STATIC);
    if (SqliteFindOnce(conn.by_email, &rows) != 1) {
      Fail(state, "expected exactly 1 row for " + email + ": " + sqlite3_errmsg(conn.db));
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_SqliteIndexedEq)->UseRealTime()->Unit(benchmark::kMicrosecond);

// SELECT version, body FROM docs WHERE orderNo >= ?1 AND orderNo < ?2 on
// ix_orderNo: exactly 100 rows per query (BM_IndexedRange100's work).
void BM_Baseline_SqliteIndexedRange100(benchmark::State& state) {
  auto fx = IndexedReadFixture(state);
  Conn& conn = *fx->conns[0];
  KeyPicker pick(state, 73, RangeDocs());
  int64_t docs = 0;
  for (auto _ : state) {
    std::vector<std::string> rows;
    int x = pick.Next();
    sqlite3_bind_int(conn.by_range, 1, x);
    sqlite3_bind_int(conn.by_range, 2, x + RangeDocs());
    int64_t n = SqliteFindOnce(conn.by_range, &rows);
    if (n != RangeDocs()) {
      Fail(state, "expected " + std::to_string(RangeDocs()) + " rows from orderNo " + std::to_string(x) + ", got " +
                      std::to_string(n));
      break;
    }
    docs += n;
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_SqliteIndexedRange100)->UseRealTime()->Unit(benchmark::kMicrosecond);

// One INSERT (its own transaction) of a new document NumDocs() + 1, + 2, ...
// (BM_InsertIndexed's documents) with the first `indexes` of
// kIndexedFields indexed; the columns are bound from the values the
// application has, the body is the BSON document.  Registered with the 3
// indexes only (the target's comparison; indexes:0 would add a load and
// about 15 s to a full run).
void BM_Baseline_SqliteInsertIndexed(benchmark::State& state) {
  const int indexes = static_cast<int>(state.range(0));
  auto fx = AcquireFixture<SqliteFixture>(
      InstanceKey("BM_Baseline_SqliteInsertIndexed/indexes:" + std::to_string(indexes), state),
      [indexes] { return std::make_unique<SqliteFixture>(1, false, indexes); });
  Conn& conn = *fx->conns[0];
  for (auto _ : state) {
    int i = NumDocs() + static_cast<int>(++fx->seq);
    bson_t d = BSON_INITIALIZER;
    BuildDoc(i, &d);
    int rc = InsertRow(conn.insert, true, i, d);
    bson_destroy(&d);
    if (rc != SQLITE_DONE) {
      Fail(state, std::string("INSERT: ") + sqlite3_errmsg(conn.db));
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_SqliteInsertIndexed)
    ->ArgName("indexes")
    ->Arg(kNumIndexedFields)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---- Aggregation baseline (issue 14) -------------------------------------------

// The same documents stored as JSON text (libbson's relaxed Extended JSON of
// BuildDoc(i)), for json_extract.
struct SqliteJsonFixture : Fixture {
  TempDir dir{"sqlite_json"};
  std::unique_ptr<Conn> conn;
  sqlite3_stmt* group = nullptr;

  SqliteJsonFixture() {
    conn = std::make_unique<Conn>(dir.path() + "/bench.db", false);
    Exec(conn->db, "CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT)");
    Exec(conn->db, "BEGIN");
    sqlite3_stmt* ins = Prepare(conn->db, "INSERT INTO docs (id, body) VALUES (?1, ?2)");
    for (int i = 0; i < NumDocs(); ++i) {
      bson_t d = BSON_INITIALIZER;
      BuildDoc(i, &d);
      char* json = bson_as_relaxed_extended_json(&d, nullptr);
      std::string id = DocId(i);
      sqlite3_bind_text(ins, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
      sqlite3_bind_text(ins, 2, json, -1, SQLITE_STATIC);
      int rc = sqlite3_step(ins);
      sqlite3_reset(ins);
      bson_free(json);
      bson_destroy(&d);
      Check(conn->db, rc == SQLITE_DONE ? SQLITE_OK : rc, "insert json");
    }
    sqlite3_finalize(ins);
    Exec(conn->db, "COMMIT");
    group = Prepare(conn->db,
                    "SELECT json_extract(body, '$.category') AS c, SUM(json_extract(body, '$.orderNo')) "
                    "FROM docs GROUP BY c");
  }
  ~SqliteJsonFixture() override { sqlite3_finalize(group); }
};

// SELECT category, SUM(orderNo) ... GROUP BY category over JSON text:
// BM_AggGroupSum's work (every row read, 100 groups).
void BM_Baseline_SqliteJsonGroupSum(benchmark::State& state) {
  auto fx = AcquireFixture<SqliteJsonFixture>(InstanceKey("BM_Baseline_SqliteJsonGroupSum", state),
                                              [] { return std::make_unique<SqliteJsonFixture>(); });
  int64_t docs = 0;
  for (auto _ : state) {
    int groups = 0;
    int64_t total = 0;
    int rc;
    while ((rc = sqlite3_step(fx->group)) == SQLITE_ROW) {
      ++groups;
      total += sqlite3_column_int64(fx->group, 1);
    }
    sqlite3_reset(fx->group);
    benchmark::DoNotOptimize(total);
    if (rc != SQLITE_DONE || groups != 100) {
      Fail(state, "expected 100 groups, got " + std::to_string(groups));
      break;
    }
    docs += NumDocs();
  }
  state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  ReportRss(state, *fx);
}
BENCHMARK(BM_Baseline_SqliteJsonGroupSum)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gatedb_bench
