// Secondary indexes across kill -9: a child process builds indexes over a
// large collection, or runs a stream of indexed writes, and is killed with
// SIGKILL at a varying moment; the parent then reopens the directory and
// checks that every index is complete or absent, and that index results
// agree with a collection scan (hint {$natural: 1}).  It also counts the raw
// entries of the "indexes" column family (opened read-only with RocksDB
// once the store is closed), so that an entry left behind by a cut-short
// build, or a stale entry of a multikey index, is seen.
//
// The child is this same test binary, started with posix_spawn (no fork of
// a process that RocksDB's background threads already run in) and running
// only IndexCrashChild.DISABLED_Run, which does the work named by the
// GATEDB_IXCRASH environment variable and reports its progress as int64
// numbers through a pipe.
#include <bson/bson.h>
#include <fcntl.h>
#include <poll.h>
#include <rocksdb/db.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/storage/db_impl.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

extern char** environ;

namespace gatedb {
namespace {

using index_test::IdOf;
using index_test::NameHint;
using index_test::NaturalHint;

using test::Json;

const Namespace kNs{"test", "ixcrash"};
constexpr char kEnvVar[] = "GATEDB_IXCRASH";

// Markers the child reports (progress numbers are >= 0).
constexpr int64_t kOpened = -1;
constexpr int64_t kBuilt = -2;
// Build progress of the second index is reported as kSecond + documents done.
constexpr int64_t kSecond = 1000000000;

// The build scenario's collection.
constexpr int kBuildDocs = 15000;
constexpr int kBuildKValues = 150;

// The write-stream scenario's initial collection.
constexpr int kStreamDocs = 2000;
constexpr int kStreamK = 50;
constexpr int kStreamT = 20;

std::unique_ptr<DBImpl> OpenDb(const std::string& path) {
  auto db = DBImpl::Open(path, Options());
  EXPECT_OK(db);
  if (!db.ok()) return nullptr;
  return std::move(db).value();
}


std::vector<Document> FindDocs(DBImpl* db, const Document& filter, const std::optional<Value>& hint) {
  FindRequest req;
  req.ns = kNs;
  req.filter = filter;
  req.hint = hint;
  auto r = db->Find(req);
  EXPECT_OK(r) << filter.ToJson();
  if (!r.ok()) return {};
  return std::move(r->docs);
}

// _ids, sorted, duplicates kept.
std::vector<int64_t> FindIds(DBImpl* db, const Document& filter, const std::optional<Value>& hint = std::nullopt) {
  std::vector<int64_t> out;
  for (const Document& d : FindDocs(db, filter, hint)) out.push_back(IdOf(d.bson()));
  std::sort(out.begin(), out.end());
  return out;
}

Document Eq(const char* field, int64_t v) {
  bson_t* d = bson_new();
  BSON_APPEND_INT64(d, field, v);
  return Document::Adopt(d);
}

std::set<std::string> IndexNames(DBImpl* db) {
  std::set<std::string> out;
  auto list = db->ListIndexes(kNs);
  EXPECT_OK(list);
  if (!list.ok()) return out;
  for (const Document& d : *list) out.insert(test::StrAt(d.bson(), "name"));
  return out;
}

// The number of keys in the "indexes" column family; the store must be closed.
int64_t RawIndexEntries(const std::string& path) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return -1;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path, cfs, &handles, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return -1;
  int64_t n = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != "indexes") continue;
    n = 0;
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), handles[i]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    EXPECT_TRUE(it->status().ok());
  }
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
  return n;
}

// ---- The child ---------------------------------------------------------------

struct ChildArgs {
  std::string mode;
  std::string dir;
  int fd = -1;
  uint32_t seed = 0;
};

void Report(int fd, int64_t v) {
  if (write(fd, &v, sizeof v) != sizeof v) _exit(6);
}

[[noreturn]] void WaitToBeKilled(pid_t parent) {
  for (;;) {
    if (getppid() != parent) _exit(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Builds two indexes over the collection, reporting the documents done.
[[noreturn]] void ChildBuild(const ChildArgs& a) {
  const pid_t parent = getppid();
  auto db = DBImpl::Open(a.dir, Options());
  if (!db.ok()) _exit(3);
  Report(a.fd, kOpened);
  int64_t index_no = 0;
  uint64_t prev = 0;
  auto r = (*db)->CreateIndexes(kNs,
                                {Json(R"({"key": {"k": 1}, "name": "k_1"})"),
                                 Json(R"({"key": {"u": 1}, "name": "u_1", "unique": true})")},
                                [&](uint64_t done) {
                                  if (done < prev) ++index_no;
                                  prev = done;
                                  Report(a.fd, index_no * kSecond + static_cast<int64_t>(done));
                                });
  if (!r.ok()) _exit(4);
  Report(a.fd, kBuilt);
  WaitToBeKilled(parent);
}

// One random write; *inserted when it inserted a document under `new_id`.
// Only documents of the initial collection are updated or deleted.
Status ChildWrite(DBImpl* db, std::mt19937& rng, int64_t new_id, bool* inserted) {
  *inserted = false;
  const int64_t doc = rng() % kStreamDocs;
  auto append_t = [&](bson_t* to) {
    const int64_t t = rng() % kStreamT;
    if (rng() % 3 == 0) {
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(to, "t", &arr);
      BSON_APPEND_INT64(&arr, "0", t);
      BSON_APPEND_INT64(&arr, "1", (t + 1) % kStreamT);
      bson_append_array_end(to, &arr);
    } else {
      BSON_APPEND_INT64(to, "t", t);
    }
  };
  switch (rng() % 6) {
    case 0: {
      InsertRequest req;
      req.ns = kNs;
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", new_id);
      BSON_APPEND_INT64(d, "k", rng() % kStreamK);
      BSON_APPEND_INT64(d, "u", new_id);
      append_t(d);
      req.documents.push_back(Document::Adopt(d));
      auto r = db->Insert(req);
      if (!r.ok()) return r.status();
      if (!r->write_errors.empty()) return r->write_errors[0].status;
      if (r->n != 1) return Status(ErrorCode::kInternalError, "not inserted");
      *inserted = true;
      return Status::OK();
    }
    case 5: {
      DeleteRequest req;
      req.ns = kNs;
      DeleteStatement st;
      st.q = Eq("_id", doc);
      st.limit = 1;
      req.deletes.push_back(std::move(st));
      auto r = db->Delete(req);
      if (!r.ok()) return r.status();
      return r->write_errors.empty() ? Status::OK() : r->write_errors[0].status;
    }
    default: {
      UpdateRequest req;
      req.ns = kNs;
      UpdateStatement st;
      st.q = Eq("_id", doc);
      bson_t* u = bson_new();
      bson_t set;
      BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
      int what = rng() % 3;
      if (what == 0) BSON_APPEND_INT64(&set, "k", rng() % kStreamK);
      if (what == 1) BSON_APPEND_INT64(&set, "u", rng() % (2 * kStreamDocs));  // may be taken
      if (what == 2) append_t(&set);
      bson_append_document_end(u, &set);
      st.u = Document::Adopt(u);
      req.updates.push_back(std::move(st));
      auto r = db->Update(req);
      if (!r.ok()) return r.status();
      if (!r->write_errors.empty() && r->write_errors[0].status.code() != ErrorCode::kDuplicateKey) {
        return r->write_errors[0].status;
      }
      return Status::OK();
    }
  }
}

// Indexed inserts, updates and deletes until killed; reports the _id of
// each acknowledged insert.
[[noreturn]] void ChildWrites(const ChildArgs& a) {
  auto db = DBImpl::Open(a.dir, Options());
  if (!db.ok()) _exit(3);
  Report(a.fd, kOpened);
  std::mt19937 rng(a.seed);
  int64_t next_id = 1000000 * static_cast<int64_t>(a.seed + 1);
  for (;;) {
    bool inserted = false;
    if (!ChildWrite(db->get(), rng, next_id, &inserted).ok()) _exit(8);
    if (inserted) Report(a.fd, next_id++);
  }
}

// ---- The parent ----------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::vector<int64_t> reported;
  bool killed = false;
  int exit_code = 0;
};

bool StartChild(const std::string& mode, const std::string& dir, uint32_t seed, Child* c) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return false;
  std::vector<std::string> args = {exe, "--gtest_filter=IndexCrashChild.DISABLED_Run",
                                   "--gtest_also_run_disabled_tests"};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v(*e);
    if (v.rfind("GTEST_", 0) == 0 || v.rfind(kEnvVar, 0) == 0) continue;  // no sharding, no output files
    env.push_back(v);
  }
  env.push_back(std::string(kEnvVar) + "=" + mode + "|" + std::to_string(fds[1]) + "|" + std::to_string(seed) + "|" +
                dir);
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(&c->pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return false;
  }
  c->fd = fds[0];
  return true;
}

// Reads reports until `until` holds for one of them (or the child ends, or
// 30 s pass); false when it never held.
template <typename Pred>
bool ReadUntil(Child* c, Pred until) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) return false;
    pollfd p{c->fd, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) return false;
    int64_t v;
    if (read(c->fd, &v, sizeof v) != sizeof v) return false;  // the child ended
    c->reported.push_back(v);
    if (until(v)) return true;
  }
}

void KillChild(Child* c, int delay_ms) {
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  kill(c->pid, SIGKILL);
  int status = 0;
  waitpid(c->pid, &status, 0);
  c->killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) c->exit_code = WEXITSTATUS(status);
  int64_t v;
  while (read(c->fd, &v, sizeof v) == sizeof v) c->reported.push_back(v);
  close(c->fd);
  c->fd = -1;
}

bool Saw(const Child& c, int64_t v) { return std::find(c.reported.begin(), c.reported.end(), v) != c.reported.end(); }
int64_t MaxProgress(const Child& c) {
  int64_t m = -1;
  for (int64_t v : c.reported) m = std::max(m, v);
  return m;
}

// ---- Kill -9 during an index build ----------------------------------------

TEST(IndexCrash, BuildKilledAtAnyMomentLeavesTheIndexesCompleteOrAbsent) {
  test::TempDir dir;
  {
    std::unique_ptr<DBImpl> db = OpenDb(dir.path());
    ASSERT_NE(db, nullptr);
    const std::string pad(40, 'p');
    for (int base = 0; base < kBuildDocs; base += 1000) {
      InsertRequest req;
      req.ns = kNs;
      for (int i = base; i < base + 1000; ++i) {
        bson_t* d = bson_new();
        BSON_APPEND_INT64(d, "_id", i);
        BSON_APPEND_INT64(d, "k", i % kBuildKValues);
        BSON_APPEND_INT64(d, "u", i);
        BSON_APPEND_UTF8(d, "pad", pad.c_str());
        req.documents.push_back(Document::Adopt(d));
      }
      auto r = db->Insert(req);
      ASSERT_OK(r);
      ASSERT_EQ(r->n, 1000);
    }
  }

  // When to kill: after which report, then how long after it.
  struct When {
    const char* what;
    int64_t after;  // the first report >= this (kOpened: the open)
    int delay_ms;
  };
  std::mt19937 rng(20240601);
  const std::vector<When> plan = {
      {"right after the open", kOpened, 0},
      {"early in the first index", 3000, 0},
      {"in the second index", kSecond + kBuildDocs / 2, 0},
      {"after the last chunk", kSecond + kBuildDocs, 0},
      {"at a random moment", kOpened, static_cast<int>(rng() % 300)},
      {"after createIndexes returned", kBuilt, 0},
  };
  int present_rounds = 0, absent_rounds = 0;
  for (size_t round = 0; round < plan.size(); ++round) {
    const When& w = plan[round];
    SCOPED_TRACE("round " + std::to_string(round) + ": kill " + w.what + " (+" + std::to_string(w.delay_ms) + " ms)");
    Child c;
    ASSERT_TRUE(StartChild("build", dir.path(), 0, &c));
    const bool reached = ReadUntil(&c, [&](int64_t v) {
      if (w.after == kBuilt || w.after == kOpened) return v == w.after;
      return v >= w.after;
    });
    KillChild(&c, w.delay_ms);
    ASSERT_TRUE(reached) << "the child never reported " << w.after << "; exit code " << c.exit_code;
    ASSERT_TRUE(c.killed) << "the child exited with " << c.exit_code;
    const bool returned = Saw(c, kBuilt);
    // The flip to ready follows the last chunk's report: before it, the
    // build cannot have finished.
    const bool unfinished = MaxProgress(c) < kSecond + kBuildDocs && !returned;

    bool present = false;
    {
      std::unique_ptr<DBImpl> db = OpenDb(dir.path());
      ASSERT_NE(db, nullptr);
      std::set<std::string> names = IndexNames(db.get());
      const bool has_k = names.count("k_1") > 0, has_u = names.count("u_1") > 0;
      EXPECT_EQ(has_k, has_u) << "one createIndexes call's indexes became ready apart";
      present = has_k && has_u;
      if (returned) {
        EXPECT_TRUE(present) << "createIndexes returned, but its indexes are gone after the crash";
      }
      if (unfinished) {
        EXPECT_FALSE(has_k || has_u) << "a build cut short left an index behind";
      }
      // The documents are untouched.
      std::vector<int64_t> all = FindIds(db.get(), Json("{}"), NaturalHint());
      ASSERT_EQ(all.size(), static_cast<size_t>(kBuildDocs));
      if (present) {
        ++present_rounds;
        // Complete: one entry per document, and equality queries through it
        // agree with a collection scan.
        EXPECT_EQ(FindIds(db.get(), Json("{}"), NameHint("k_1")), all);
        EXPECT_EQ(FindIds(db.get(), Json("{}"), NameHint("u_1")), all);
        for (int64_t k = static_cast<int64_t>(round); k < kBuildKValues; k += 17) {
          EXPECT_EQ(FindIds(db.get(), Eq("k", k)), FindIds(db.get(), Eq("k", k), NaturalHint())) << "k=" << k;
        }
        for (int64_t u = static_cast<int64_t>(round); u < kBuildDocs; u += 97) {
          EXPECT_EQ(FindIds(db.get(), Eq("u", u)), std::vector<int64_t>{u}) << "u=" << u;
        }
        const Document range = Json(R"({"k": {"$gte": 100, "$lt": 150}})");
        EXPECT_EQ(FindIds(db.get(), range), FindIds(db.get(), range, NaturalHint()));
      } else {
        ++absent_rounds;
        // Absent means not usable either.
        FindRequest req;
        req.ns = kNs;
        req.filter = Eq("k", 1);
        req.hint = NameHint("k_1");
        EXPECT_FALSE(db->Find(req).ok()) << "a hint names an index that ListIndexes does not list";
      }
    }
    // What the indexes column family holds: every entry of a complete
    // build, or nothing at all (a cut-short build's entries are removed).
    EXPECT_EQ(RawIndexEntries(dir.path()), present ? 2 * kBuildDocs : 0);
    if (present) {
      std::unique_ptr<DBImpl> db = OpenDb(dir.path());
      ASSERT_NE(db, nullptr);
      ASSERT_OK(db->DropIndexes(kNs, {"*"}, nullptr));
      db.reset();
      EXPECT_EQ(RawIndexEntries(dir.path()), 0) << "dropIndexes left entries behind";
    }
  }
  // The plan's fixed points: the early kills cannot have let the build
  // finish, the last one must have.
  EXPECT_GT(present_rounds, 0);
  EXPECT_GT(absent_rounds, 0);
}

// ---- Kill -9 during a stream of indexed writes ------------------------------

// Checks every index against a collection scan, for every value, and sets
// *expected_raw to the number of entries the documents give the indexes.
void CheckStreamIndexes(DBImpl* db, int64_t* expected_raw) {
  std::set<std::string> names = IndexNames(db);
  ASSERT_EQ(names, (std::set<std::string>{"_id_", "k_1", "u_1", "t_1"}));
  std::vector<Document> docs = FindDocs(db, Json("{}"), NaturalHint());
  std::vector<int64_t> all;
  int64_t raw = 0;
  std::map<int64_t, int64_t> u_of;
  for (const Document& d : docs) {
    const int64_t id = IdOf(d.bson());
    all.push_back(id);
    u_of[id] = test::IntAt(d.bson(), "u");
    bson_iter_t it, arr;
    ASSERT_TRUE(bson_iter_init_find(&it, d.bson(), "t"));
    std::set<int64_t> ts;
    if (BSON_ITER_HOLDS_ARRAY(&it)) {
      bson_iter_recurse(&it, &arr);
      while (bson_iter_next(&arr)) ts.insert(bson_iter_as_int64(&arr));
    } else {
      ts.insert(bson_iter_as_int64(&it));
    }
    raw += 2 + static_cast<int64_t>(ts.size());  // k, u, and t's distinct keys
  }
  std::sort(all.begin(), all.end());
  *expected_raw = raw;
  for (int64_t k = 0; k < kStreamK; ++k) {
    EXPECT_EQ(FindIds(db, Eq("k", k)), FindIds(db, Eq("k", k), NaturalHint())) << "k=" << k;
  }
  for (int64_t t = 0; t < kStreamT; ++t) {
    EXPECT_EQ(FindIds(db, Eq("t", t)), FindIds(db, Eq("t", t), NaturalHint())) << "t=" << t;
  }
  // A range over the multikey index: each document once.
  const Document trange = Json(R"({"t": {"$gte": 3, "$lte": 8}})");
  EXPECT_EQ(FindIds(db, trange), FindIds(db, trange, NaturalHint()));
  EXPECT_EQ(FindIds(db, Json(R"({"t": {"$gt": 4, "$lt": 5}})")),
            FindIds(db, Json(R"({"t": {"$gt": 4, "$lt": 5}})"), NaturalHint()));
  // The unique index: one entry per document, each found by its value.
  EXPECT_EQ(FindIds(db, Json("{}"), NameHint("u_1")), all);
  EXPECT_EQ(FindIds(db, Json("{}"), NameHint("k_1")), all);
  std::set<int64_t> seen_u;
  for (const auto& [id, u] : u_of) {
    EXPECT_TRUE(seen_u.insert(u).second) << "two documents hold u=" << u;
    std::vector<int64_t> got = FindIds(db, Eq("u", u));
    if (got != std::vector<int64_t>{id}) {
      ADD_FAILURE() << "u=" << u << " of " << id << " found " << got.size() << " documents";
      break;
    }
  }
}

TEST(IndexCrash, WritesKilledMidStreamLeaveIndexesAgreeingWithTheDocuments) {
  test::TempDir dir;
  {
    std::unique_ptr<DBImpl> db = OpenDb(dir.path());
    ASSERT_NE(db, nullptr);
    InsertRequest req;
    req.ns = kNs;
    for (int i = 0; i < kStreamDocs; ++i) {
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", i);
      BSON_APPEND_INT64(d, "k", i % kStreamK);
      BSON_APPEND_INT64(d, "u", i);
      BSON_APPEND_INT64(d, "t", i % kStreamT);
      req.documents.push_back(Document::Adopt(d));
    }
    ASSERT_OK(db->Insert(req));
    ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"k": 1}, "name": "k_1"})"),
                                      Json(R"({"key": {"u": 1}, "name": "u_1", "unique": true})"),
                                      Json(R"({"key": {"t": 1}, "name": "t_1"})")}));
  }
  std::vector<int64_t> acked_inserts;
  for (uint32_t round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Child c;
    ASSERT_TRUE(StartChild("writes", dir.path(), round, &c));
    int inserts = 0;
    const int want = 20 + 40 * static_cast<int>(round);
    const bool reached = ReadUntil(&c, [&](int64_t v) { return v >= 0 && ++inserts >= want; });
    KillChild(&c, static_cast<int>(round % 2) * 7);
    ASSERT_TRUE(reached) << "the child stopped early; exit code " << c.exit_code;
    ASSERT_TRUE(c.killed) << "the child exited with " << c.exit_code;
    for (int64_t v : c.reported) {
      if (v >= 0) acked_inserts.push_back(v);
    }
    int64_t expected_raw = 0;
    {
      std::unique_ptr<DBImpl> db = OpenDb(dir.path());
      ASSERT_NE(db, nullptr);
      CheckStreamIndexes(db.get(), &expected_raw);
      // Every acknowledged insert is there (the stream never deletes them).
      std::vector<int64_t> all = FindIds(db.get(), Json("{}"), NaturalHint());
      for (int64_t id : acked_inserts) {
        EXPECT_TRUE(std::binary_search(all.begin(), all.end(), id)) << "acknowledged insert " << id << " lost";
      }
    }
    // No stale entry anywhere (a multikey index's duplicates are hidden
    // from queries, not from this count).
    EXPECT_EQ(RawIndexEntries(dir.path()), expected_raw);
  }
}

// ---- An index dropped under an open transaction --------------------------

// A snapshot transaction stages its index entries in its own write batch;
// dropping the index deletes the entries it can see (committed ones), so
// entries the transaction commits after the drop must not land in the
// dropped index's key range, where nothing would ever read or reclaim them
// (index ids are not reused).
TEST(IndexDropTxn, TransactionCommittedAfterADropLeavesNoEntriesBehind) {
  test::TempDir dir;
  {
    std::unique_ptr<DBImpl> db = OpenDb(dir.path());
    ASSERT_NE(db, nullptr);
    ASSERT_OK(db->CreateIndexes(kNs, {Json(R"({"key": {"k": 1}, "name": "k_1"})"),
                                      Json(R"({"key": {"u": 1}, "name": "u_1", "unique": true})")}));
    InsertRequest base;
    base.ns = kNs;
    base.documents.push_back(Json(R"({"_id": 1, "k": 1, "u": 1})"));
    ASSERT_OK(db->Insert(base));
    ScopePtr s = db->BeginTransaction("drop", TransactionLimits(), false);
    InsertRequest in_txn;
    in_txn.ns = kNs;
    in_txn.documents.push_back(Json(R"({"_id": 2, "k": 5, "u": 5})"));
    in_txn.write.scope = s.get();
    auto r = db->Insert(in_txn);
    ASSERT_OK(r);
    ASSERT_EQ(r->n, 1);
    ASSERT_OK(db->DropIndexes(kNs, {"*"}, nullptr));
    bool replayed = false;
    Status commit = db->CommitTransaction(s.get(), nullptr, nullptr, &replayed);
    s.reset();
    if (commit.ok()) {
      EXPECT_EQ(FindIds(db.get(), Eq("k", 5)), std::vector<int64_t>{2});
    }
    EXPECT_EQ(IndexNames(db.get()), std::set<std::string>{"_id_"});
  }
  EXPECT_EQ(RawIndexEntries(dir.path()), 0) << "entries of a dropped index were left in the indexes column family";
}

// The child's entry point: run only by StartChild.
TEST(IndexCrashChild, DISABLED_Run) {
  const char* spec = std::getenv(kEnvVar);
  if (spec == nullptr) GTEST_SKIP() << "only run as the crash tests' child";
  std::string s(spec);
  ChildArgs a;
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    size_t bar = s.find('|');
    parts.push_back(s.substr(0, bar));
    s = s.substr(bar + 1);
  }
  a.mode = parts[0];
  a.fd = std::stoi(parts[1]);
  a.seed = static_cast<uint32_t>(std::stoul(parts[2]));
  a.dir = s;
  if (a.mode == "build") ChildBuild(a);
  if (a.mode == "writes") ChildWrites(a);
  _exit(2);
}

}  // namespace
}  // namespace gatedb
