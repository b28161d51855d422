// The store on a disk that fails (tests/fault/fault_fs.h).  A failed WAL
// append is an error to the caller and the write did not happen; a failed
// fsync of a durable write is WriteConcernFailed: the write happened, whole,
// but may not survive a power loss.  Either way the store stays consistent,
// the journal never gets a gap or a reused seq, nothing crashes, and a power
// loss keeps every write acknowledged as durable and invents nothing.
//
// Every document in these tests lives in test.c, has a string _id, is
// inserted with n: 0 and changes only by {$inc: {n: 1}}, so that n, the
// version and the journal must always agree (CheckStore).
#include <rocksdb/env.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gatedb/db.h"
#include "tests/fault/fault_fs.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::FaultInjectionFS;
using test::FaultTarget;
using test::Json;
using test::StatusIs;
using ::testing::HasSubstr;

constexpr auto Int = test::IntAt;
constexpr auto Str = test::StrAt;

Document IdDoc(const std::string& id) {
  bson_t* f = bson_new();
  BSON_APPEND_UTF8(f, "_id", id.c_str());
  return Document::Adopt(f);
}

Document NewDoc(const std::string& id) {
  bson_t* d = bson_new();
  BSON_APPEND_UTF8(d, "_id", id.c_str());
  BSON_APPEND_INT64(d, "n", 0);
  return Document::Adopt(d);
}

const Document& IncN() {
  static const Document* inc = new Document(Json(R"({"$inc": {"n": 1}})"));
  return *inc;
}

// The seed of a randomized test, printed at once so that even a run that
// hangs or aborts can be reproduced with GATEDB_TEST_SEED.
uint64_t Seed() {
  const char* env = std::getenv("GATEDB_TEST_SEED");
  uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (GATEDB_TEST_SEED=%llu reruns it)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

// ---- The tool itself: the store tests mean nothing if it is wrong. ---------

class FaultInjectionFSTest : public ::testing::Test {
 protected:
  std::string Path(const char* name) const { return dir_.path() + "/" + name; }
  std::unique_ptr<rocksdb::FSWritableFile> Create(const char* name) {
    std::unique_ptr<rocksdb::FSWritableFile> f;
    EXPECT_TRUE(fs_->NewWritableFile(Path(name), rocksdb::FileOptions(), &f, nullptr).ok());
    return f;
  }
  static bool Append(rocksdb::FSWritableFile* f, const std::string& data) {
    return f->Append(data, rocksdb::IOOptions(), nullptr).ok();
  }
  static bool Sync(rocksdb::FSWritableFile* f) { return f->Sync(rocksdb::IOOptions(), nullptr).ok(); }
  static void Close(rocksdb::FSWritableFile* f) { EXPECT_TRUE(f->Close(rocksdb::IOOptions(), nullptr).ok()); }
  bool SyncDir() {
    std::unique_ptr<rocksdb::FSDirectory> d;
    if (!fs_->NewDirectory(dir_.path(), rocksdb::IOOptions(), &d, nullptr).ok()) return false;
    return d->Fsync(rocksdb::IOOptions(), nullptr).ok();
  }
  // The file's contents on the real disk, or "<missing>".
  std::string Contents(const char* name) {
    std::string out;
    rocksdb::IOStatus s = rocksdb::ReadFileToString(rocksdb::FileSystem::Default().get(), Path(name), &out);
    return s.ok() ? out : "<missing>";
  }

  test::TempDir dir_;
  std::shared_ptr<FaultInjectionFS> fs_ = std::make_shared<FaultInjectionFS>();
};

TEST_F(FaultInjectionFSTest, PowerLossKeepsSyncedBytesAndSyncedNames) {
  auto a = Create("a");  // synced, then more appended
  ASSERT_TRUE(Append(a.get(), "hello"));
  ASSERT_TRUE(Sync(a.get()));
  ASSERT_TRUE(Append(a.get(), " world"));
  Close(a.get());  // closing syncs nothing
  auto c = Create("c");  // never synced, but its name was
  ASSERT_TRUE(Append(c.get(), "lost too"));
  ASSERT_TRUE(SyncDir());
  Close(c.get());
  auto b = Create("b");  // never synced, created after the directory sync
  ASSERT_TRUE(Append(b.get(), "lost"));
  Close(b.get());
  EXPECT_EQ(fs_->UnsyncedBytes(), 6u + 4u + 8u);

  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Contents("a"), "hello");
  EXPECT_EQ(Contents("b"), "<missing>");
  EXPECT_EQ(Contents("c"), "");
  EXPECT_EQ(fs_->counters().dropped_bytes, 6u + 4u + 8u);
  EXPECT_EQ(fs_->counters().dropped_files, 1u);
  EXPECT_EQ(fs_->UnsyncedBytes(), 0u);
}

TEST_F(FaultInjectionFSTest, DropRefusesWhileAFileIsOpen) {
  auto a = Create("a");
  ASSERT_TRUE(Append(a.get(), "x"));
  EXPECT_FALSE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Contents("a"), "x");
  Close(a.get());
  EXPECT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Contents("a"), "<missing>");
}

TEST_F(FaultInjectionFSTest, RenameCarriesWhatIsUnsynced) {
  ASSERT_TRUE(SyncDir());
  auto t = Create("t.tmp");
  ASSERT_TRUE(Append(t.get(), "synced"));
  ASSERT_TRUE(Sync(t.get()));
  ASSERT_TRUE(Append(t.get(), "+not"));
  Close(t.get());
  ASSERT_TRUE(fs_->RenameFile(Path("t.tmp"), Path("t"), rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Contents("t"), "synced");
  EXPECT_EQ(Contents("t.tmp"), "<missing>");
}

TEST_F(FaultInjectionFSTest, InactiveFailsWritesSyncsAndNewFilesButNotReads) {
  auto a = Create("a");
  ASSERT_TRUE(Append(a.get(), "before"));
  ASSERT_TRUE(Sync(a.get()));
  fs_->SetFilesystemActive(false);
  EXPECT_FALSE(Append(a.get(), "after"));
  EXPECT_FALSE(Sync(a.get()));
  EXPECT_FALSE(SyncDir());
  std::unique_ptr<rocksdb::FSWritableFile> b;
  EXPECT_FALSE(fs_->NewWritableFile(Path("b"), rocksdb::FileOptions(), &b, nullptr).ok());
  EXPECT_FALSE(fs_->DeleteFile(Path("a"), rocksdb::IOOptions(), nullptr).ok());
  Close(a.get());  // still releases the descriptor
  EXPECT_EQ(Contents("a"), "before");
  EXPECT_EQ(fs_->counters().failed_appends, 1u);
  EXPECT_EQ(fs_->counters().failed_syncs, 1u);
  fs_->SetFilesystemActive(true);
  auto c = Create("c");
  EXPECT_TRUE(Append(c.get(), "up again"));
  Close(c.get());
}

TEST_F(FaultInjectionFSTest, InjectedFailuresHitOnlyTheirTargetAndCount) {
  auto wal = Create("000001.log");
  auto sst = Create("000002.sst");
  fs_->FailWrites(FaultTarget::kWal, /*after=*/2, /*count=*/1);
  EXPECT_TRUE(Append(wal.get(), "1"));
  EXPECT_TRUE(Append(sst.get(), "s"));  // not a WAL file: not counted
  EXPECT_TRUE(Append(wal.get(), "2"));
  EXPECT_FALSE(Append(wal.get(), "3"));  // the third WAL append fails
  EXPECT_TRUE(Append(wal.get(), "4"));   // and only that one
  fs_->FailSyncs(FaultTarget::kWal, true);
  EXPECT_FALSE(Sync(wal.get()));
  EXPECT_TRUE(Sync(sst.get()));
  fs_->FailSyncs(FaultTarget::kAll, true);
  EXPECT_FALSE(Sync(sst.get()));
  fs_->ClearFaults();
  EXPECT_TRUE(Sync(wal.get()));
  // A torn write leaves half of its bytes behind and still fails.
  fs_->SetTornWrites(true);
  fs_->FailWrites(FaultTarget::kAll, 0);
  EXPECT_FALSE(Append(sst.get(), "abcd"));
  EXPECT_FALSE(Append(wal.get(), "xy"));
  Close(wal.get());
  Close(sst.get());
  EXPECT_EQ(Contents("000001.log"), "124x");
  EXPECT_EQ(Contents("000002.sst"), "sab");
  FaultInjectionFS::Counters c = fs_->counters();
  EXPECT_EQ(c.wal_appends, 3u + 1u);  // the torn half counts as written
  EXPECT_EQ(c.appends, 4u + 2u);
  EXPECT_EQ(c.failed_appends, 3u);
  EXPECT_EQ(c.failed_syncs, 2u);
  EXPECT_EQ(c.wal_syncs, 1u);
}

// ---- The store on the faulty file system ------------------------------------

// What CheckStore found.
struct StoreView {
  std::map<std::string, int64_t> n;                       // _id -> n (== version)
  std::vector<Document> events;                           // the whole journal
  std::map<std::string, std::set<int64_t>> stored_keys;   // task -> writeSeqs in the idempotency log
  uint64_t last_seq = 0;
  int conflicts = 0;                                      // conflict events
};

// Reads everything and checks the invariants that no fault may break:
//   - the journal is seqs 1..last_seq, each once, no gap;
//   - every event is of test.c; conflict events are counted, not chained;
//   - each document's events form one chain: an insert at version 0, then
//     one update per version (versionBefore = the previous versionAfter),
//     ending at the document's version; no document without its chain and
//     no chain without its document;
//   - n == version (every change is one $inc, made in the same atomic write
//     as the version bump);
//   - the idempotency log of `tasks` and the journal agree: every event of a
//     keyed write has its record, every record has its events.
void CheckStore(Database* db, const std::vector<std::string>& tasks, StoreView* out) {
  *out = StoreView();
  JournalQuery q;
  q.limit = 0;
  auto journal = db->ReadJournal(q);
  ASSERT_OK(journal);
  out->events = journal->events;
  out->last_seq = journal->last_seq;
  ASSERT_EQ(journal->first_seq, 1u);
  ASSERT_EQ(journal->events.size(), journal->last_seq) << "journal length differs from its last seq";
  struct Chain {
    int64_t version = -1;
    int updates = 0;
  };
  std::map<std::string, Chain> chains;
  std::set<std::pair<std::string, int64_t>> event_keys;
  std::set<std::string> event_txns;
  for (size_t i = 0; i < journal->events.size(); ++i) {
    const bson_t* e = journal->events[i].bson();
    ASSERT_EQ(Int(e, "seq"), static_cast<int64_t>(i + 1)) << "a gap or a repeat in the journal at " << test::ToJson(e);
    std::string op = Str(e, "op");
    ASSERT_EQ(Str(e, "ns"), "test.c") << test::ToJson(e);
    if (op == "conflict") {
      ++out->conflicts;  // a refused gated write: changes no document
      continue;
    }
    std::string id = Str(e, "_id");
    Chain& c = chains[id];
    if (op == "insert") {
      ASSERT_EQ(c.version, -1) << "a second insert of " << id << ": " << test::ToJson(e);
      ASSERT_EQ(Int(e, "versionAfter"), 0) << test::ToJson(e);
      c.version = 0;
    } else {
      ASSERT_EQ(op, "update") << test::ToJson(e);
      ASSERT_GE(c.version, 0) << "an update before the insert: " << test::ToJson(e);
      ASSERT_EQ(Int(e, "versionBefore"), c.version) << test::ToJson(e);
      ASSERT_EQ(Int(e, "versionAfter"), c.version + 1) << test::ToJson(e);
      c.version += 1;
      ++c.updates;
    }
    if (!Str(e, "txn").empty()) event_txns.insert(Str(e, "txn"));
    if (test::HasPath(e, "writeContext.writeSeq")) {
      event_keys.emplace(Str(e, "writeContext.taskId"), Int(e, "writeContext.writeSeq"));
    }
  }
  auto docs = db->GetCollection("c").Find(Json("{}").view());
  ASSERT_OK(docs);
  for (const Document& d : *docs) {
    std::string id = Str(d.bson(), "_id");
    int64_t n = Int(d.bson(), "n"), version = Int(d.bson(), "version");
    ASSERT_EQ(n, version) << "the counter and the version disagree: " << d.ToJson();
    auto it = chains.find(id);
    ASSERT_TRUE(it != chains.end()) << "a document without journal events: " << d.ToJson();
    ASSERT_EQ(it->second.version, version) << "the journal and the document disagree: " << d.ToJson();
    out->n[id] = n;
  }
  ASSERT_EQ(out->n.size(), chains.size()) << "journal events of a document that is not there";
  for (const std::string& task : tasks) {
    auto writes = db->IdempotencyStatus(task);
    ASSERT_OK(writes);
    for (const Database::StoredWrite& w : *writes) {
      out->stored_keys[task].insert(w.write_seq);
      std::string txn = Str(w.reply.bson(), "txn");
      if (!txn.empty()) {
        EXPECT_TRUE(event_txns.count(txn)) << "a stored commit of " << task << "/" << w.write_seq
                                           << " without its events";
      } else {
        EXPECT_TRUE(event_keys.count({task, w.write_seq}))
            << "a stored reply of " << task << "/" << w.write_seq << " without its events";
      }
    }
  }
  for (const auto& [task, seq] : event_keys) {
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) continue;
    EXPECT_TRUE(out->stored_keys[task].count(seq)) << "a keyed write " << task << "/" << seq << " without its record";
  }
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Open()); }
  // A test that stopped early may leave a fault armed: clear it before the
  // close, so that the close itself is not what the test exercises.
  void TearDown() override {
    fs_->ClearFaults();
    db_.reset();
  }

  void Open() {
    db_.reset();
    Options o;
    o.env = env_.get();
    auto db = Database::Open(dir_.path(), o);
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }
  // The process restarts; the disk keeps everything it was given.
  void Reopen() {
    db_.reset();
    fs_->ClearFaults();
    ASSERT_NO_FATAL_FAILURE(Open());
  }
  // The machine loses power now: nothing more reaches the disk, the process
  // dies (closing writes nothing), the disk keeps what was synced, the
  // machine comes back and the store is opened again.
  void PowerLossAndReopen() {
    fs_->SetFilesystemActive(false);
    db_.reset();
    ASSERT_TRUE(fs_->DropUnsyncedData().ok());
    fs_->SetFilesystemActive(true);
    fs_->ClearFaults();
    ASSERT_NO_FATAL_FAILURE(Open());
  }
  Collection coll() { return db_->GetCollection("c"); }
  int64_t N(const std::string& id) {
    auto d = coll().FindOne(IdDoc(id).view());
    EXPECT_OK(d);
    return d.ok() && d->has_value() ? Int((**d).bson(), "n") : -1;
  }
  StatusOr<UpdateResult> Inc(const std::string& id, WriteOptions w = WriteOptions()) {
    UpdateOptions u;
    u.write = std::move(w);
    return coll().UpdateOne(IdDoc(id).view(), IncN().view(), u);
  }
  static WriteOptions Durable() {
    WriteOptions w;
    w.sync = true;
    return w;
  }
  static WriteOptions Keyed(const std::string& task, int64_t seq, bool sync) {
    WriteOptions w;
    w.sync = sync;
    w.context.agent_id = "agent-" + task;
    w.context.task_id = task;
    w.context.write_seq = seq;
    return w;
  }

  // Declared first, destroyed last: the Database, then the Env, then the
  // file system it uses, then the directory.
  test::TempDir dir_;
  std::shared_ptr<FaultInjectionFS> fs_ = std::make_shared<FaultInjectionFS>();
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
  std::unique_ptr<Database> db_;
};

// ---- A failed write ----------------------------------------------------------

enum class WriteKind { kInsert, kGatedUpdate, kKeyedUpdate, kTxnCommit };
enum class Fault { kWalWrite, kWalTornWrite, kWalSync };
enum class Recovery { kRestart, kPowerLoss };

const char* Name(WriteKind k) {
  switch (k) {
    case WriteKind::kInsert: return "Insert";
    case WriteKind::kGatedUpdate: return "GatedUpdate";
    case WriteKind::kKeyedUpdate: return "KeyedUpdate";
    case WriteKind::kTxnCommit: return "TxnCommit";
  }
  return "?";
}
const char* Name(Fault f) {
  switch (f) {
    case Fault::kWalWrite: return "WalWrite";
    case Fault::kWalTornWrite: return "WalTornWrite";
    case Fault::kWalSync: return "WalSync";
  }
  return "?";
}

void PrintTo(WriteKind k, std::ostream* os) { *os << Name(k); }
void PrintTo(Fault f, std::ostream* os) { *os << Name(f); }
void PrintTo(Recovery r, std::ostream* os) { *os << (r == Recovery::kRestart ? "Restart" : "PowerLoss"); }

class FailedWriteTest : public FaultTest,
                        public ::testing::WithParamInterface<std::tuple<WriteKind, Fault, Recovery>> {
 protected:
  struct Outcome {
    Status status;
    bool replayed = false;
  };
  // The write under test, durable (sync), as the caller would retry it:
  // the same document, basis, key or transaction.
  //   insert:       "new" {n: 0}
  //   gated update: $inc of "a" with basisVersion 1
  //   keyed update: $inc of "a" under (task "t", writeSeq 1)
  //   transaction:  $inc of "a" and of "b", committed under (task "t",
  //                 writeSeq 1)
  Outcome Write(WriteKind kind) {
    Outcome out;
    switch (kind) {
      case WriteKind::kInsert:
        out.status = coll().InsertOne(NewDoc("new").view(), Durable()).status();
        break;
      case WriteKind::kGatedUpdate: {
        WriteOptions w = Durable();
        w.basis_version = 1;
        auto r = Inc("a", w);
        out.status = r.status();
        if (r.ok() && r->modified_count != 1) out.status = Status(ErrorCode::kBadValue, "modified nothing");
        break;
      }
      case WriteKind::kKeyedUpdate: {
        auto r = Inc("a", Keyed("t", 1, true));
        out.status = r.status();
        if (r.ok()) out.replayed = r->replayed;
        if (r.ok() && r->modified_count != 1) out.status = Status(ErrorCode::kBadValue, "modified nothing");
        break;
      }
      case WriteKind::kTxnCommit: {
        TransactionOptions to;
        to.sync = true;
        auto txn = db_->StartTransaction(to);
        if (!txn.ok()) {
          out.status = txn.status();
          break;
        }
        WriteOptions w;
        w.txn = txn->get();
        w.context.agent_id = "agent-t";
        UpdateOptions u;
        u.write = w;
        for (const char* id : {"a", "b"}) {
          out.status = coll().UpdateOne(IdDoc(id).view(), IncN().view(), u).status();
          if (!out.status.ok()) return out;
        }
        WriteContext key;
        key.agent_id = "agent-t";
        key.task_id = "t";
        key.write_seq = 1;
        out.status = (*txn)->Commit(key);
        out.replayed = (*txn)->replayed();
        break;
      }
    }
    return out;
  }
  // Whether the write under test is in the store.
  bool Applied(WriteKind kind) {
    switch (kind) {
      case WriteKind::kInsert: return N("new") >= 0;
      case WriteKind::kGatedUpdate:
      case WriteKind::kKeyedUpdate: return N("a") == 2;
      case WriteKind::kTxnCommit: {
        bool a = N("a") == 2, b = N("b") == 1;
        EXPECT_EQ(a, b) << "half a transaction";
        return a && b;
      }
    }
    return false;
  }
  void Arm(Fault f) {
    switch (f) {
      case Fault::kWalWrite: fs_->FailWrites(FaultTarget::kWal, 0); break;
      case Fault::kWalTornWrite:
        fs_->SetTornWrites(true);
        fs_->FailWrites(FaultTarget::kWal, 0);
        break;
      case Fault::kWalSync: fs_->FailSyncs(FaultTarget::kWal, true); break;
    }
  }
};

TEST_P(FailedWriteTest, IsAnErrorAndHappensWhollyOrNotAtAll) {
  const auto [kind, fault, recovery] = GetParam();
  const std::vector<std::string> tasks = {"t"};
  const bool keyed = kind == WriteKind::kKeyedUpdate || kind == WriteKind::kTxnCommit;
  const uint64_t events = kind == WriteKind::kTxnCommit ? 2 : 1;  // of the write under test
  // A durable start: "a" at version 1, "b" at 0 (seqs 1-3).
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  ASSERT_OK(Inc("a", Durable()));
  ASSERT_OK(coll().InsertOne(NewDoc("b").view(), Durable()));

  Arm(fault);
  Outcome failed = Write(kind);
  // A clear error with the storage engine's words; not OK, not a crash.  A
  // failed append fails the commit: InternalError, nothing happened.  The
  // fsync of a durable write comes after its commit: WriteConcernFailed,
  // the write is applied but may not survive a power loss.
  const bool applied_now = fault == Fault::kWalSync;
  ASSERT_THAT(failed.status,
              StatusIs(applied_now ? ErrorCode::kWriteConcernFailed : ErrorCode::kInternalError));
  EXPECT_THAT(failed.status.reason(), HasSubstr("injected"));
  EXPECT_GE(applied_now ? fs_->counters().failed_syncs : fs_->counters().failed_appends, 1u);
  // What the process sees is whole either way: the data, its events, its
  // stored reply, all or none.
  StoreView v;
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
  EXPECT_EQ(Applied(kind), applied_now);
  EXPECT_EQ(v.last_seq, 3u + (applied_now ? events : 0));
  EXPECT_EQ(v.stored_keys["t"].size(), keyed && applied_now ? 1u : 0u);

  // RocksDB stays read-only after a WAL error until it is reopened: later
  // writes fail cleanly, even with the fault gone, and change nothing.
  fs_->ClearFaults();
  EXPECT_THAT(coll().InsertOne(NewDoc("later").view(), Durable()), StatusIs(ErrorCode::kInternalError));
  EXPECT_THAT(Inc("a", Durable()), StatusIs(ErrorCode::kInternalError));
  // A keyed retry now must not be acknowledged: its first run either did
  // not happen (and cannot run now) or is not durable (and cannot be made
  // so now).  An OK here would be a durable acknowledgement of a write a
  // power loss then takes away.
  if (keyed) {
    Outcome retry = Write(kind);
    EXPECT_FALSE(retry.status.ok()) << "a retry was acknowledged (replayed: " << retry.replayed
                                    << ") while its write is not durable";
  }
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
  EXPECT_EQ(v.last_seq, 3u + (applied_now ? events : 0));

  if (recovery == Recovery::kRestart) {
    ASSERT_NO_FATAL_FAILURE(Reopen());
  } else {
    ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  }
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
  EXPECT_EQ(N("later"), -1);
  // A failed append put nothing (or a torn half) in the WAL, and a failed
  // sync nothing durable: a power loss leaves nothing of either.  A failed
  // sync followed by a mere restart finds its bytes in the WAL: the write
  // is there, whole.
  const bool expect_applied = fault == Fault::kWalSync && recovery == Recovery::kRestart;
  EXPECT_EQ(Applied(kind), expect_applied);
  EXPECT_EQ(v.last_seq, 3u + (expect_applied ? events : 0));
  EXPECT_EQ(v.stored_keys["t"].size(), keyed && expect_applied ? 1u : 0u);

  // The caller retries.  The write takes effect exactly once: a retry of a
  // write that happened is refused by the gate or the key, or replayed.
  Outcome retry = Write(kind);
  if (!expect_applied) {
    EXPECT_OK(retry.status);
    EXPECT_FALSE(retry.replayed);
  } else if (kind == WriteKind::kInsert) {
    EXPECT_THAT(retry.status, StatusIs(ErrorCode::kDuplicateKey));
  } else if (kind == WriteKind::kGatedUpdate) {
    EXPECT_THAT(retry.status, StatusIs(ErrorCode::kVersionConflict));
  } else {
    EXPECT_OK(retry.status);
    EXPECT_TRUE(retry.replayed);
  }
  EXPECT_TRUE(Applied(kind));
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
  EXPECT_EQ(v.n["a"], kind == WriteKind::kInsert ? 1 : 2);
  // A refused gated retry is journaled as a conflict, and that is all.
  EXPECT_EQ(v.conflicts, expect_applied && kind == WriteKind::kGatedUpdate ? 1 : 0);
  EXPECT_EQ(v.stored_keys["t"].size(), keyed ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, FailedWriteTest,
    ::testing::Combine(::testing::Values(WriteKind::kInsert, WriteKind::kGatedUpdate, WriteKind::kKeyedUpdate,
                                         WriteKind::kTxnCommit),
                       ::testing::Values(Fault::kWalWrite, Fault::kWalTornWrite, Fault::kWalSync),
                       ::testing::Values(Recovery::kRestart, Recovery::kPowerLoss)),
    [](const auto& info) {
      return std::string(Name(std::get<0>(info.param))) + "_" + Name(std::get<1>(info.param)) + "_" +
             (std::get<2>(info.param) == Recovery::kRestart ? "Restart" : "PowerLoss");
    });


// ---- A retryable error: RocksDB resumes in this process ----------------------

// Errors RocksDB resumes from by itself: a full disk (once its
// SstFileManager sees space again) and an error the file system marks
// retryable.
enum class Resumable { kNoSpace, kRetryable };
void PrintTo(Resumable r, std::ostream* os) { *os << (r == Resumable::kNoSpace ? "NoSpace" : "Retryable"); }

class ResumedAfterFaultTest : public FaultTest,
                              public ::testing::WithParamInterface<std::tuple<Fault, Recovery, Resumable>> {};

// After a full disk or a retryable I/O error the store refuses writes until
// it is reopened (DBImpl turns RocksDB 7.8's in-process recovery off: it was
// unsafe, see FullDiskOnTheFirstWriteAfterOpenIsAnErrorNotACrash).  Every
// refused write gives its journal seq back, so after the reopen the next
// write takes it: right only if the failed append can never come back.  A
// failed fsync keeps its seq (the write is applied): it survives a restart
// and may be lost to a power loss, never while a later acknowledged write
// survives.  Either way the journal is gap-free.
TEST_P(ResumedAfterFaultTest, NoGapAndNoReusedSeqAfterReopening) {
  const auto [fault, recovery, resumable] = GetParam();
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  ASSERT_OK(coll().InsertOne(NewDoc("b").view(), Durable()));
  fs_->SetNoSpaceErrors(resumable == Resumable::kNoSpace);
  fs_->SetRetryableErrors(resumable == Resumable::kRetryable);
  if (fault == Fault::kWalSync) {
    fs_->FailSyncs(FaultTarget::kWal, true);
  } else {
    fs_->SetTornWrites(fault == Fault::kWalTornWrite);
    fs_->FailWrites(FaultTarget::kWal, 0);
  }
  const bool applied = fault == Fault::kWalSync;
  // A full disk is OutOfDiskSpace, MongoDB's code for it.
  const ErrorCode failed = resumable == Resumable::kNoSpace ? ErrorCode::kOutOfDiskSpace : ErrorCode::kInternalError;
  ASSERT_THAT(Inc("a", Durable()), StatusIs(applied ? ErrorCode::kWriteConcernFailed : failed));
  fs_->ClearFaults();
  // The disk is fine again, but nothing resumes in this process.
  for (int i = 0; i < 3; ++i) {
    StatusOr<UpdateResult> refused = Inc("b", Durable());
    EXPECT_FALSE(refused.ok()) << "a write was accepted after a write error without a reopen";
  }
  if (recovery == Recovery::kRestart) {
    ASSERT_NO_FATAL_FAILURE(Reopen());
  } else {
    ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  }
  // The failed fsync's write is in the WAL file: a restart keeps it, a power
  // loss drops it (it was never synced).
  const bool kept = applied && recovery == Recovery::kRestart;
  ASSERT_OK(Inc("b", Durable()));
  ASSERT_OK(Inc("a", Durable()));
  auto check = [&] {
    StoreView v;
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), {}, &v));
    ASSERT_EQ(v.last_seq, kept ? 5u : 4u);
    // seq 3: the failed write when it was kept, else b's update.
    EXPECT_EQ(Str(v.events[2].bson(), "_id"), kept ? "a" : "b");
    EXPECT_EQ(v.n["a"], kept ? 2 : 1);
    EXPECT_EQ(v.n["b"], 1);
  };
  ASSERT_NO_FATAL_FAILURE(check());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(check());
}

INSTANTIATE_TEST_SUITE_P(AllFaults, ResumedAfterFaultTest,
                         ::testing::Combine(::testing::Values(Fault::kWalWrite, Fault::kWalTornWrite,
                                                              Fault::kWalSync),
                                            ::testing::Values(Recovery::kRestart, Recovery::kPowerLoss),
                                            ::testing::Values(Resumable::kNoSpace, Resumable::kRetryable)),
                         [](const auto& info) {
                           return std::string(Name(std::get<0>(info.param))) + "_" +
                                  (std::get<1>(info.param) == Recovery::kRestart ? "Restart" : "PowerLoss") +
                                  (std::get<2>(info.param) == Resumable::kNoSpace ? "_NoSpace" : "_Retryable");
                         });

// ---- Many failures in a row ------------------------------------------------

// Rounds of: durable writes of every kind, a random fault (write, torn
// write or sync; I/O error or full disk; after 0-2 more appends), more
// writes that fail cleanly or succeed, then a restart or a power loss.  In
// the process the documents show exactly the acknowledged writes plus those
// answered WriteConcernFailed (applied, maybe not durable); after recovery every
// acknowledged write is there, no failed one, and the journal has no gap.
TEST_F(FaultTest, RepeatedFailuresNeverLeaveAGapOrAHalfWrite) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (GATEDB_TEST_SEED=" + std::to_string(seed) + " reruns it)");
  std::mt19937_64 rng(seed);
  const std::vector<std::string> ids = {"a", "b", "c"};
  const std::vector<std::string> tasks = {"r"};
  for (const std::string& id : ids) ASSERT_OK(coll().InsertOne(NewDoc(id).view(), Durable()));
  // Per document: writes acknowledged (durable), answered WriteConcernFailed
  // (applied, maybe not durable), and failed otherwise (not applied).
  std::map<std::string, int64_t> acked, unsure, failed;
  auto count = [&](const Status& s, const std::string& id) {
    if (s.ok()) {
      ++acked[id];
    } else if (s.code() == ErrorCode::kWriteConcernFailed) {
      ++unsure[id];
    } else {
      EXPECT_TRUE(s.code() == ErrorCode::kInternalError || s.code() == ErrorCode::kOutOfDiskSpace) << s.ToString();
      ++failed[id];
    }
  };
  int64_t write_seq = 0;
  // One durable write of a random kind; true when acknowledged.
  auto write = [&]() -> bool {
    const std::string& id = ids[rng() % ids.size()];
    switch (rng() % 3) {
      case 0: {
        Status s = Inc(id, Durable()).status();
        count(s, id);
        return s.ok();
      }
      case 1: {
        Status s = Inc(id, Keyed("r", ++write_seq, true)).status();
        count(s, id);
        return s.ok();
      }
      default: {
        const std::string& other = ids[(&id - &ids[0] + 1) % ids.size()];
        TransactionOptions to;
        to.sync = true;
        Status s = db_->WithTransaction(
            [&](Transaction& t) -> Status {
              UpdateOptions u;
              u.write.txn = &t;
              RETURN_IF_ERROR(coll().UpdateOne(IdDoc(id).view(), IncN().view(), u).status());
              return coll().UpdateOne(IdDoc(other).view(), IncN().view(), u).status();
            },
            WithTransactionOptions{to, 10 * 1000, std::nullopt});
        count(s, id);
        count(s, other);
        return s.ok();
      }
    }
  };
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = static_cast<int>(rng() % 6); i > 0; --i) ASSERT_TRUE(write());
    // A plain I/O error leaves RocksDB read-only until the restart; a full
    // disk lets it resume in this process.  (Errors marked retryable are
    // left to ResumedAfterFaultTest: RocksDB 7.8's recovery from them can
    // hang Close, rocksdb#11440, or write on to the failed WAL writer.)
    fs_->SetNoSpaceErrors(rng() % 2 == 0);
    uint64_t after = rng() % 3;
    switch (rng() % 3) {
      case 0: fs_->FailWrites(FaultTarget::kWal, after); break;
      case 1:
        fs_->SetTornWrites(true);
        fs_->FailWrites(FaultTarget::kWal, after);
        break;
      default: fs_->FailSyncs(FaultTarget::kWal, true); break;
    }
    bool saw_failure = false;
    for (int i = 0; i < 10 && !saw_failure; ++i) saw_failure = !write();
    ASSERT_TRUE(saw_failure) << "the fault never hit";
    fs_->ClearFaults();
    for (int i = 0; i < 3; ++i) write();  // fail cleanly or succeed
    // In the process a failed write is invisible and one answered
    // WriteConcernFailed is applied.
    StoreView v;
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
    for (const std::string& id : ids) EXPECT_EQ(v.n[id], acked[id] + unsure[id]) << id;

    if (rng() % 2 == 0) {
      ASSERT_NO_FATAL_FAILURE(Reopen());
    } else {
      ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
    }
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
    for (const std::string& id : ids) {
      EXPECT_GE(v.n[id], acked[id]) << id << ": an acknowledged durable write was lost";
      EXPECT_LE(v.n[id], acked[id] + unsure[id]) << id << ": a failed write took effect";
      acked[id] = v.n[id];  // what an unsure write did is known now
      unsure[id] = 0;
      failed[id] = 0;
    }
  }
}

// ---- Power loss ----------------------------------------------------------------

// One writer: inserts, updates, keyed updates and two-document transactions,
// about a third of them durable (the last three of a round never), then the
// power goes out.  What comes back
// is the journal of a prefix of the acknowledged writes, cut between two
// writes (never inside one), reaching at least the last durable one; the
// documents are that prefix's documents.  Three rounds on one store.
TEST_F(FaultTest, PowerLossKeepsADurablePrefixOfTheWrites) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (GATEDB_TEST_SEED=" + std::to_string(seed) + " reruns it)");
  std::mt19937_64 rng(seed);
  const std::vector<std::string> tasks = {"p"};
  std::map<std::string, int64_t> model;  // the documents after the recovered prefix
  int next_doc = 0;
  int64_t write_seq = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StoreView v;
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
    const uint64_t base_seq = v.last_seq;
    // The acknowledged writes in order: the (op, _id) of their events, and
    // the documents after each.
    std::vector<std::vector<std::pair<std::string, std::string>>> writes;
    std::vector<std::map<std::string, int64_t>> after;
    size_t durable_writes = 0;  // writes up to the last durable one
    std::map<std::string, int64_t> docs = model;
    constexpr int kWrites = 60;
    for (int i = 0; i < kWrites; ++i) {
      // The last writes are never durable, so that every power loss loses
      // something and the test cannot pass by losing nothing.
      const bool sync = i < kWrites - 3 && rng() % 3 == 0;
      WriteOptions w;
      w.sync = sync;
      std::vector<std::pair<std::string, std::string>> events;
      unsigned kind = docs.size() < 2 ? 0 : rng() % 4;
      auto pick = [&]() {
        auto it = docs.begin();
        std::advance(it, rng() % docs.size());
        return it->first;
      };
      if (kind == 0) {
        std::string id = "d" + std::to_string(next_doc++);
        ASSERT_OK(coll().InsertOne(NewDoc(id).view(), w));
        docs[id] = 0;
        events.emplace_back("insert", id);
      } else if (kind == 1 || kind == 2) {
        std::string id = pick();
        auto r = Inc(id, kind == 1 ? w : Keyed("p", ++write_seq, sync));
        ASSERT_OK(r);
        ASSERT_EQ(r->modified_count, 1);
        ++docs[id];
        events.emplace_back("update", id);
      } else {
        std::string x = pick(), y = pick();
        if (x == y) continue;
        auto txn = db_->StartTransaction(TransactionOptions{60 * 1000, 16u << 20, sync});
        ASSERT_OK(txn);
        UpdateOptions u;
        u.write.txn = txn->get();
        ASSERT_OK(coll().UpdateOne(IdDoc(x).view(), IncN().view(), u));
        ASSERT_OK(coll().UpdateOne(IdDoc(y).view(), IncN().view(), u));
        ASSERT_OK((*txn)->Commit());
        ++docs[x];
        ++docs[y];
        events.emplace_back("update", x);
        events.emplace_back("update", y);
      }
      writes.push_back(events);
      after.push_back(docs);
      if (sync) durable_writes = writes.size();
    }

    ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
    ASSERT_GE(v.last_seq, base_seq) << "a write from an earlier round was lost";
    // Match the recovered events, write by write.
    size_t e = base_seq, kept = 0;
    while (kept < writes.size() && e + writes[kept].size() <= v.events.size()) {
      for (const auto& [op, id] : writes[kept]) {
        ASSERT_EQ(Str(v.events[e].bson(), "op"), op) << "seq " << e + 1 << " is not write " << kept;
        ASSERT_EQ(Str(v.events[e].bson(), "_id"), id) << "seq " << e + 1 << " is not write " << kept;
        ++e;
      }
      ++kept;
    }
    ASSERT_EQ(e, v.events.size()) << "the journal ends inside a write, or holds an event nobody wrote";
    EXPECT_GE(kept, durable_writes) << "a write acknowledged as durable was lost";
    EXPECT_LT(kept, writes.size()) << "the power loss lost nothing: the test tested nothing";
    model = kept == 0 ? model : after[kept - 1];
    EXPECT_EQ(v.n, model) << "the documents are not those of the recovered writes";
  }
}

// Three writers at once, each bumping its own document under idempotency
// keys and a shared one, mostly durable; the power goes out while they
// write.  Every durable acknowledgement survives, per writer in order; no
// write survives that was not attempted.
TEST_F(FaultTest, PowerLossWithConcurrentWritersKeepsEveryDurableAck) {
  constexpr int kWriters = 3;
  const uint64_t seed = Seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (GATEDB_TEST_SEED=" + std::to_string(seed) + " reruns it)");
  std::vector<std::string> tasks;
  for (int t = 0; t < kWriters; ++t) {
    tasks.push_back("w" + std::to_string(t));
    ASSERT_OK(coll().InsertOne(NewDoc(tasks.back()).view(), Durable()));
  }
  ASSERT_OK(coll().InsertOne(NewDoc("shared").view(), Durable()));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StoreView before;
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &before));
    struct Writer {
      std::atomic<int> acked{0};
      int own_attempted = 0;      // own-document writes tried
      int own_durable = 0;        // own-document writes up to the last durable ack
      int shared_attempted = 0;
      int shared_durable = 0;     // durable acks on the shared document
    };
    std::vector<Writer> writers(kWriters);
    std::atomic<bool> down{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; ++t) {
      threads.emplace_back([&, t] {
        Writer& me = writers[t];
        std::mt19937_64 rng(seed + 1000 * round + t);
        const std::string own = tasks[t];
        int64_t seq = before.n[own];  // write_seq k is the k-th increment ever
        while (true) {
          const bool sync = rng() % 4 != 0;
          const bool shared = rng() % 4 == 0;
          Status s;
          if (shared) {
            ++me.shared_attempted;
            WriteOptions w;
            w.sync = sync;
            w.context.agent_id = own;
            s = Inc("shared", w).status();
            if (s.ok() && sync) ++me.shared_durable;
          } else {
            ++me.own_attempted;
            s = Inc(own, Keyed(own, ++seq, sync)).status();
            if (s.ok() && sync) me.own_durable = me.own_attempted;
          }
          if (!s.ok()) {
            // Only the power loss may fail a write here.
            EXPECT_TRUE(down.load()) << s.ToString();
            return;
          }
          me.acked.fetch_add(1);
        }
      });
    }
    // The power goes out once every writer has some acknowledged writes (a
    // condition, not a time).
    auto all_going = [&] {
      for (const Writer& w : writers) {
        if (w.acked.load() < 40) return false;
      }
      return true;
    };
    while (!all_going()) std::this_thread::yield();
    down = true;
    fs_->SetFilesystemActive(false);
    for (std::thread& t : threads) t.join();
    ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());

    StoreView v;
    ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), tasks, &v));
    EXPECT_EQ(v.n.size(), static_cast<size_t>(kWriters + 1)) << "a document nobody wrote";
    int shared_durable = 0, shared_attempted = 0;
    for (int t = 0; t < kWriters; ++t) {
      const std::string& own = tasks[t];
      const Writer& me = writers[t];
      SCOPED_TRACE(own);
      EXPECT_GE(v.n[own], before.n[own] + me.own_durable) << "a durable acknowledgement was lost";
      EXPECT_LE(v.n[own], before.n[own] + me.own_attempted) << "a write nobody attempted";
      // The writer's keys are exactly its first n increments: its WAL
      // records are in its order, and a later one never survives an
      // earlier one.
      std::set<int64_t> expect;
      for (int64_t k = 1; k <= v.n[own]; ++k) expect.insert(k);
      EXPECT_EQ(v.stored_keys[own], expect);
      shared_durable += me.shared_durable;
      shared_attempted += me.shared_attempted;
    }
    EXPECT_GE(v.n["shared"], before.n["shared"] + shared_durable) << "a durable acknowledgement was lost";
    EXPECT_LE(v.n["shared"], before.n["shared"] + shared_attempted) << "a write nobody attempted";
  }
}

// ---- Closing and opening with the machine down ------------------------------

// The machine goes down with a transaction open and a write not yet durable:
// writes and the commit fail, closing returns, opening fails with an error
// (RocksDB cannot create its new WAL), and when the machine is back the
// store holds exactly what reached the OS.
TEST_F(FaultTest, CloseAndOpenWithTheMachineDownFailCleanly) {
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  ASSERT_OK(coll().InsertOne(NewDoc("b").view(), Durable()));
  auto txn = db_->StartTransaction();
  ASSERT_OK(txn);
  UpdateOptions u;
  u.write.txn = txn->get();
  ASSERT_OK(coll().UpdateOne(IdDoc("a").view(), IncN().view(), u));
  ASSERT_OK(Inc("b"));  // not durable
  fs_->SetFilesystemActive(false);
  EXPECT_THAT(Inc("b", Durable()), StatusIs(ErrorCode::kInternalError));
  EXPECT_THAT((*txn)->Commit(), StatusIs(ErrorCode::kInternalError));
  txn->reset();
  // Closing writes nothing it needs: it returns, whatever RocksDB tried.
  db_.reset();
  Options o;
  o.env = env_.get();
  auto down = Database::Open(dir_.path(), o);
  EXPECT_THAT(down, StatusIs(ErrorCode::kInternalError));
  fs_->SetFilesystemActive(true);
  // Without a power loss the non-durable write is still in the OS's hands;
  // the transaction never committed.
  ASSERT_NO_FATAL_FAILURE(Open());
  StoreView v;
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), {}, &v));
  EXPECT_EQ(v.n["a"], 0);
  EXPECT_EQ(v.n["b"], 1);
  EXPECT_EQ(v.last_seq, 3u);
  ASSERT_OK(Inc("a", Durable()));
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), {}, &v));
  EXPECT_EQ(v.n["a"], 1);
  EXPECT_EQ(v.n["b"], 1);
}

// Creating a store on a disk that fails after 0, 1, 2, ... appends: Open
// fails cleanly or succeeds, and once the disk is good (after a restart or a
// power loss) the store opens, is consistent and takes writes.
TEST_F(FaultTest, OpenOnAFailingDiskFailsCleanlyAndRecovers) {
  db_.reset();
  for (uint64_t after = 0; after < 48; after += 3) {
    for (bool power_loss : {false, true}) {
      SCOPED_TRACE("after " + std::to_string(after) + (power_loss ? ", power loss" : ", restart"));
      test::TempDir dir;
      Options o;
      o.env = env_.get();
      fs_->FailWrites(FaultTarget::kAll, after);
      {
        auto db = Database::Open(dir.path(), o);
        if (db.ok()) {
          Status s = (*db)->GetCollection("c").InsertOne(NewDoc("a").view(), Durable()).status();
          if (!s.ok()) {
            EXPECT_THAT(s, StatusIs(ErrorCode::kInternalError));
          }
        } else {
          EXPECT_THAT(db, StatusIs(ErrorCode::kInternalError));
        }
        if (power_loss) fs_->SetFilesystemActive(false);
      }
      if (power_loss) {
        ASSERT_TRUE(fs_->DropUnsyncedData().ok());
        fs_->SetFilesystemActive(true);
      }
      fs_->ClearFaults();
      auto db = Database::Open(dir.path(), o);
      ASSERT_OK(db);
      StoreView v;
      ASSERT_NO_FATAL_FAILURE(CheckStore(db->get(), {}, &v));
      ASSERT_OK((*db)->GetCollection("c").InsertOne(NewDoc("b").view(), Durable()));
    }
  }
}

// Found here (report on issue 8): after a failed WAL append, a durable
// write's fsync (DBImpl::SyncCommitted -> rocksdb::DB::SyncWAL) reaches the
// WAL writer that saw the error, and librocksdb as Debian builds it (with
// assertions) aborts the process in WritableFileWriter::
// AssertFalseAndGetStatusForPrevError.  Concurrent durable writers hit it
// whenever one commits just before another's append fails
// (PowerLossWithConcurrentWritersKeepsEveryDurableAck, most runs); the
// durable replay of a keyed write hits it every time.
TEST_F(FaultTest, DurableReplayAfterAFailedWalAppendIsAnErrorNotACrash) {
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  ASSERT_OK(coll().InsertOne(NewDoc("b").view(), Durable()));
  ASSERT_OK(Inc("a", Keyed("t", 1, false)));  // applied, not durable
  fs_->FailWrites(FaultTarget::kWal, 0, 1);
  EXPECT_THAT(Inc("b"), StatusIs(ErrorCode::kInternalError));  // its WAL append fails
  fs_->ClearFaults();
  // The agent asks again, durably: the replay must first make its write
  // durable, which the failed WAL cannot.
  auto replay = Inc("a", Keyed("t", 1, true));
  EXPECT_THAT(replay, StatusIs(ErrorCode::kWriteConcernFailed));
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  StoreView v;
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), {"t"}, &v));
  EXPECT_EQ(v.n["a"], 0);  // it never became durable
  EXPECT_TRUE(v.stored_keys["t"].empty());
}

// Found here (report on issue 8): a full disk on the first write after an
// open.  RocksDB resumes by itself once space is back, but with its
// memtables empty (an open flushes what it recovered) it keeps writing to
// the WAL writer that failed, and librocksdb built with assertions aborts
// on the next write (a release build would fail every write instead).  The
// contract: while and after the disk is full, a write fails cleanly
// (OutOfDiskSpace) or succeeds; acknowledged writes survive.
TEST_F(FaultTest, FullDiskOnTheFirstWriteAfterOpenIsAnErrorNotACrash) {
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  ASSERT_OK(coll().InsertOne(NewDoc("b").view(), Durable()));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  fs_->SetNoSpaceErrors(true);
  fs_->FailWrites(FaultTarget::kWal, 0);
  EXPECT_THAT(Inc("a", Durable()), StatusIs(ErrorCode::kOutOfDiskSpace));
  fs_->ClearFaults();  // space again
  // Whether and when RocksDB resumes is its business (its own thread, within
  // milliseconds today); each write either fails cleanly or is acknowledged.
  int64_t acked = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = Inc("b", Durable());
    if (r.ok()) {
      ++acked;
    } else {
      EXPECT_THAT(r, StatusIs(ErrorCode::kOutOfDiskSpace));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_NO_FATAL_FAILURE(PowerLossAndReopen());
  StoreView v;
  ASSERT_NO_FATAL_FAILURE(CheckStore(db_.get(), {}, &v));
  EXPECT_EQ(v.n["a"], 0);
  EXPECT_EQ(v.n["b"], acked);
}

// Found here: while an fsync error that RocksDB deems retryable persisted,
// closing the store never returned: the failed SyncWAL started RocksDB's
// automatic recovery, which retried for ever, and Close waited for it.  The
// store now fsyncs with a synced empty write and turns that recovery off.
TEST_F(FaultTest, CloseReturnsWhileARetryableSyncErrorPersists) {
  ASSERT_OK(coll().InsertOne(NewDoc("a").view(), Durable()));
  fs_->SetRetryableErrors(true);
  fs_->FailSyncs(FaultTarget::kWal, true);
  EXPECT_THAT(Inc("a", Durable()), StatusIs(ErrorCode::kWriteConcernFailed));
  db_.reset();  // returned only after the fix (ctest's timeout catches a hang)
  fs_->ClearFaults();
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(N("a"), 1);  // the write whose fsync failed was applied, and kept by the restart
}

// Found here: the commit of a keyed transaction answered WriteConcernFailed
// (or whose reply was lost) did happen.  The agent re-runs the transaction,
// as transaction.h says it may; the re-run's insert met the document the
// first run committed and failed with DuplicateKey before the commit could
// find its key.  WithTransaction now checks the key before running.
TEST_F(FaultTest, ReRunOfAKeyedTransactionThatInsertedReplays) {
  WithTransactionOptions wo;
  wo.transaction.sync = true;
  WriteContext key;
  key.task_id = "x";
  key.write_seq = 1;
  wo.commit_context = key;
  auto body = [&](Transaction& t) {
    WriteOptions w;
    w.txn = &t;
    return coll().InsertOne(NewDoc("x").view(), w).status();
  };
  fs_->FailSyncs(FaultTarget::kWal, true);
  EXPECT_THAT(db_->WithTransaction(body, wo), StatusIs(ErrorCode::kWriteConcernFailed));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(N("x"), 0);  // it happened, and survived the restart
  EXPECT_OK(db_->WithTransaction(body, wo));  // a replay, not DuplicateKey
  EXPECT_EQ(N("x"), 0);
}

// A driver's commitTransaction whose fsync failed: the commit happened or
// may have, so the reply carries UnknownTransactionCommitResult (the driver
// retries the commit, never the transaction), not TransientTransactionError.
TEST_F(FaultTest, ACommitWhoseSyncFailedIsUnknownTransactionCommitResult) {
  db_.reset();
  Options o;
  o.env = env_.get();
  o.sync = true;  // every commit fsyncs (MongoDB's j: true)
  auto opened = Database::Open(dir_.path(), o);
  ASSERT_OK(opened);
  db_ = std::move(opened).value();
  const std::string lsid = R"("lsid": {"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}})";
  Document ins = db_->RunCommand(test::Json(R"({"insert": "c", "documents": [{"_id": "t", "n": 1}],
      "txnNumber": 1, "startTransaction": true, "autocommit": false, )" + lsid + "}").view());
  ASSERT_EQ(test::IntAt(ins.bson(), "ok"), 1) << test::ToJson(ins.bson());
  fs_->FailSyncs(FaultTarget::kWal, true);
  Document commit = db_->RunCommand(test::Json(R"({"commitTransaction": 1, "txnNumber": 1, "autocommit": false,
      "$db": "admin", )" + lsid + "}").view());
  fs_->ClearFaults();
  EXPECT_EQ(test::StrAt(commit.bson(), "codeName"), "WriteConcernFailed") << test::ToJson(commit.bson());
  EXPECT_EQ(test::StringsAt(commit.bson(), "errorLabels"), std::vector<std::string>{"UnknownTransactionCommitResult"});
  EXPECT_EQ(N("t"), 1);  // it was applied
}

}  // namespace
}  // namespace gatedb
