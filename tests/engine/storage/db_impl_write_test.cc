// DBImpl's write path under concurrency, on a real RocksDB store in a
// temporary directory: group commit of durable inserts (every acknowledged
// document present, one journal event per insert, gap-free seqs) and the
// no-lost-update property of single-document updates.
#include "engine/storage/db_impl.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

const Namespace kNs{"test", "items"};

std::unique_ptr<DBImpl> OpenDb(const std::string& path, const Options& opts) {
  auto db = DBImpl::Open(path, opts);
  EXPECT_OK(db);
  if (!db.ok()) return nullptr;
  return std::move(db).value();
}

std::string IdString(const bson_t* doc) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it)) return "";
  return bson_iter_utf8(&it, nullptr);
}

bool TypeIs(const bson_t* doc, const char* key, bson_type_t type) {
  bson_iter_t it;
  return bson_iter_init_find(&it, doc, key) && bson_iter_type(&it) == type;
}

// Every event of the journal, in seq order.
std::vector<Document> WholeJournal(DBImpl* db) {
  JournalReadRequest req;
  req.limit = 0;  // no limit
  auto r = db->ReadJournal(req);
  EXPECT_OK(r);
  if (!r.ok()) return {};
  return std::move(r->events);
}

// Every document of kNs.
std::vector<Document> AllDocuments(DBImpl* db) {
  FindRequest find;
  find.ns = kNs;
  auto found = db->Find(find);
  EXPECT_OK(found);
  if (!found.ok()) return {};
  return std::move(found->docs);
}

// An update of kNs with one statement.
UpdateRequest OneUpdate(const std::string& q, const std::string& u, const WriteOptionsInternal& w = {}) {
  UpdateRequest req;
  req.ns = kNs;
  req.write = w;
  UpdateStatement st;
  st.q = Json(q);
  st.u = Json(u);
  req.updates.push_back(std::move(st));
  return req;
}

// ---- Group commit ----------------------------------------------------------

class GroupCommitTest : public ::testing::Test {
 protected:
  static constexpr int kThreads = 4;
  static constexpr int kPerThread = 25;

  std::string Id(int t, int i) { return "t" + std::to_string(t) + "-" + std::to_string(i); }

  // Checks the store holds exactly the acknowledged inserts, and the
  // journal one event per insert with gap-free seqs.
  void CheckStore(DBImpl* db, const std::set<std::string>& acked) {
    std::set<std::string> present;
    for (const Document& d : AllDocuments(db)) {
      std::string id = IdString(d.bson());
      EXPECT_TRUE(present.insert(id).second) << "duplicate document " << id;
      // The payload is the one that was inserted under this _id.
      EXPECT_EQ("t" + std::to_string(test::IntAt(d.bson(), "thread")) + "-" + std::to_string(test::IntAt(d.bson(), "i")),
                id);
      // A new document is at version 0, stored as int64.
      EXPECT_TRUE(TypeIs(d.bson(), "version", BSON_TYPE_INT64)) << d.ToJson();
      EXPECT_EQ(test::IntAt(d.bson(), "version"), 0);
    }
    EXPECT_EQ(present, acked);

    std::vector<Document> events = WholeJournal(db);
    ASSERT_EQ(events.size(), acked.size());
    std::set<std::string> journaled;
    std::map<int, int64_t> last_seq_of_thread;
    for (size_t k = 0; k < events.size(); ++k) {
      const bson_t* e = events[k].bson();
      // Gap-free from the first seq: 1, 2, 3, ...
      EXPECT_EQ(test::IntAt(e, "seq"), static_cast<int64_t>(k + 1)) << test::ToJson(e);
      EXPECT_EQ(test::StrAt(e, "op"), "insert");
      EXPECT_EQ(test::StrAt(e, "ns"), kNs.full());
      EXPECT_EQ(test::IntAt(e, "versionAfter"), 0);
      std::string id = IdString(e);
      EXPECT_TRUE(journaled.insert(id).second) << "two events for " << id;
      // One thread's inserts are sequential, so their seqs follow their order.
      int t = std::stoi(id.substr(1, id.find('-') - 1));
      int64_t seq = test::IntAt(e, "seq");
      auto prev = last_seq_of_thread.find(t);
      if (prev != last_seq_of_thread.end()) {
        EXPECT_GT(seq, prev->second) << id;
      }
      last_seq_of_thread[t] = seq;
    }
    EXPECT_EQ(journaled, acked);
  }

  test::TempDir dir_;
};

TEST_F(GroupCommitTest, ConcurrentDurableInsertsAreAllThereWithOneEventEach) {
  Options opts;
  opts.sync = true;
  std::unique_ptr<DBImpl> db = OpenDb(dir_.path(), opts);
  ASSERT_NE(db, nullptr);

  std::atomic<bool> go{false};
  std::vector<std::vector<std::string>> acked(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        InsertRequest req;
        req.ns = kNs;
        req.write.sync = true;
        req.write.context.agent_id = "writer-" + std::to_string(t);
        bson_t* b = bson_new();
        BSON_APPEND_UTF8(b, "_id", Id(t, i).c_str());
        BSON_APPEND_INT32(b, "thread", t);
        BSON_APPEND_INT32(b, "i", i);
        req.documents.push_back(Document::Adopt(b));
        auto r = db->Insert(req);
        if (!r.ok()) {
          failures[t] += r.status().ToString() + "; ";
        } else if (r->n != 1 || !r->write_errors.empty()) {
          failures[t] += "insert " + Id(t, i) + " n=" + std::to_string(r->n) + "; ";
        } else {
          acked[t].push_back(Id(t, i));
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();

  std::set<std::string> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
    all.insert(acked[t].begin(), acked[t].end());
  }
  // Distinct _ids on a healthy disk: every durable insert is acknowledged.
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  // Each acknowledgement came after an fsync that covered it; writers
  // running at once shared fsyncs; no write is left counted in flight.
  DBImpl::GroupCommitCounts gc = db->GroupCommitStats();
  EXPECT_EQ(gc.durable_acks, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_GE(gc.wal_syncs, 1u);
  EXPECT_LT(gc.wal_syncs, gc.durable_acks);
  EXPECT_EQ(gc.in_flight, 0);

  CheckStore(db.get(), all);
  // A durable acknowledgement means the data outlives the process's
  // handle on it: reopen and look again.
  db.reset();
  db = OpenDb(dir_.path(), opts);
  ASSERT_NE(db, nullptr);
  CheckStore(db.get(), all);
}

// Durable writes of every kind from many threads, with the paths that end
// a write early: a keyed retry answered from the idempotency log (it waits
// for an fsync itself), a duplicate key, an update that matches nothing, a
// findAndModify and a delete.  A group-commit leader waits for the durable
// writes in flight; each of them must stop being counted however it ends.
TEST_F(GroupCommitTest, EveryKindOfDurableWriteEndsItsCountAndIsAcknowledgedOnce) {
  constexpr int kWriters = 8;
  constexpr int kRounds = 10;
  std::unique_ptr<DBImpl> db = OpenDb(dir_.path(), Options());
  ASSERT_NE(db, nullptr);

  std::atomic<bool> go{false};
  std::vector<std::string> failures(kWriters);
  std::vector<int> expected_acks(kWriters, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](const std::string& what) { failures[t] += what + "; "; };
      WriteOptionsInternal durable;
      durable.sync = true;
      durable.context.agent_id = "writer-" + std::to_string(t);
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kRounds; ++i) {
        const std::string id = Id(t, i);
        // A keyed insert, then its retry: one document, the same answer.
        InsertRequest ins;
        ins.ns = kNs;
        ins.write = durable;
        ins.write.context.task_id = "task-" + std::to_string(t);
        ins.write.context.write_seq = i;
        ins.documents.push_back(Json(R"({"_id": ")" + id + R"(", "thread": )" + std::to_string(t) +
                                     R"(, "i": )" + std::to_string(i) + "}"));
        for (int attempt = 0; attempt < 2; ++attempt) {
          auto r = db->Insert(ins);
          if (!r.ok() || r->n != 1 || r->replayed != (attempt == 1)) {
            fail("keyed insert " + id + " attempt " + std::to_string(attempt) + ": " +
                 (r.ok() ? "n=" + std::to_string(r->n) : r.status().ToString()));
          }
          ++expected_acks[t];
        }
        // Every writer inserts the same _id: one of them wins, the others
        // get DuplicateKey and write nothing.  An insert request is answered
        // after an fsync either way (as MongoDB waits for the journal with
        // j: true when a write failed).
        InsertRequest dup;
        dup.ns = kNs;
        dup.write = durable;
        dup.documents.push_back(Json(R"({"_id": "shared-)" + std::to_string(i) + R"("})"));
        auto d = db->Insert(dup);
        if (!d.ok()) {
          fail("shared insert: " + d.status().ToString());
        } else if (d->n != 1 &&
                   (d->write_errors.empty() || d->write_errors[0].status.code() != ErrorCode::kDuplicateKey)) {
          fail("shared insert without DuplicateKey");
        }
        ++expected_acks[t];
        // An update that matches nothing commits nothing.
        auto u = db->Update(OneUpdate(R"({"_id": "absent"})", R"({"$set": {"x": 1}})", durable));
        if (!u.ok() || u->n != 0) fail("update of nothing");
        // findAndModify on the writer's own document, then its delete.
        FindAndModifyRequest fam;
        fam.ns = kNs;
        fam.write = durable;
        fam.query = Json(R"({"_id": ")" + id + R"("})");
        fam.update = Json(R"({"$set": {"seen": true}})");
        auto f = db->FindAndModify(fam);
        if (!f.ok() || f->n != 1) fail("findAndModify " + id);
        ++expected_acks[t];
        if (i % 2 == 1) {
          DeleteRequest del;
          del.ns = kNs;
          del.write = durable;
          DeleteStatement ds;
          ds.q = Json(R"({"_id": ")" + id + R"("})");
          ds.limit = 1;
          del.deletes.push_back(std::move(ds));
          auto r = db->Delete(del);
          if (!r.ok() || r->n != 1) fail("delete " + id);
          ++expected_acks[t];
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  for (int t = 0; t < kWriters; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;

  DBImpl::GroupCommitCounts gc = db->GroupCommitStats();
  EXPECT_EQ(gc.in_flight, 0);
  int acks = 0;
  for (int n : expected_acks) acks += n;
  EXPECT_EQ(gc.durable_acks, static_cast<uint64_t>(acks));
  EXPECT_LT(gc.wal_syncs, gc.durable_acks);

  // What is left: the even rounds' documents, each updated once, and one
  // document per shared _id.
  std::set<std::string> ids;
  for (const Document& doc : AllDocuments(db.get())) {
    std::string id = IdString(doc.bson());
    ids.insert(id);
    if (id.rfind("shared-", 0) != 0) {
      EXPECT_TRUE(TypeIs(doc.bson(), "seen", BSON_TYPE_BOOL)) << doc.ToJson();
      EXPECT_EQ(test::IntAt(doc.bson(), "version"), 1) << doc.ToJson();
    }
  }
  std::set<std::string> want;
  for (int t = 0; t < kWriters; ++t) {
    for (int i = 0; i < kRounds; i += 2) want.insert(Id(t, i));
  }
  for (int i = 0; i < kRounds; ++i) want.insert("shared-" + std::to_string(i));
  EXPECT_EQ(ids, want);
}

// ---- No lost update --------------------------------------------------------

TEST(DBImplUpdateTest, ConcurrentIncrementsOfOneDocumentAreNeverLost) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  constexpr int64_t kTotal = kThreads * kPerThread;
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path(), Options());
  ASSERT_NE(db, nullptr);

  InsertRequest ins;
  ins.ns = kNs;
  ins.documents.push_back(Json(R"({"_id": "counter", "n": 0})"));
  auto ir = db->Insert(ins);
  ASSERT_OK(ir);
  ASSERT_EQ(ir->n, 1);

  std::atomic<bool> go{false};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        auto r = db->Update(OneUpdate(R"({"_id": "counter"})", R"({"$inc": {"n": 1}})"));
        if (!r.ok()) {
          failures[t] += r.status().ToString() + "; ";
        } else if (r->n != 1 || r->n_modified != 1 || !r->write_errors.empty()) {
          failures[t] += "n=" + std::to_string(r->n) + " nModified=" + std::to_string(r->n_modified) +
                         (r->write_errors.empty() ? "" : " " + r->write_errors[0].status.ToString()) + "; ";
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;

  FindRequest find;
  find.ns = kNs;
  find.filter = Json(R"({"_id": "counter"})");
  auto found = db->Find(find);
  ASSERT_OK(found);
  ASSERT_EQ(found->docs.size(), 1u);
  const bson_t* doc = found->docs[0].bson();
  // Every increment applied once, each one version step.
  EXPECT_EQ(test::IntAt(doc, "n"), kTotal);
  EXPECT_EQ(test::IntAt(doc, "version"), kTotal);

  // The journal: the insert, then one update per increment whose versions
  // follow each other without a gap or a repeat, in seq order.
  std::vector<Document> events = WholeJournal(db.get());
  ASSERT_EQ(events.size(), static_cast<size_t>(kTotal + 1));
  EXPECT_EQ(test::StrAt(events[0].bson(), "op"), "insert");
  for (int64_t v = 1; v <= kTotal; ++v) {
    const bson_t* e = events[v].bson();
    EXPECT_EQ(test::StrAt(e, "op"), "update") << test::ToJson(e);
    EXPECT_EQ(test::IntAt(e, "seq"), v + 1);
    EXPECT_EQ(test::IntAt(e, "versionBefore"), v - 1);
    EXPECT_EQ(test::IntAt(e, "versionAfter"), v);
    EXPECT_THAT(test::StringsAt(e, "changedPaths"), ::testing::ElementsAre("n"));
  }
}

// ---- Inserts: the stamped document and its event ----------------------------

// A document's _id as JSON.
std::string IdJson(const bson_t* doc) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "_id")) return "";
  return Value(*bson_iter_value(&it)).ToJson();
}

TEST(DBImplInsertTest, EventListsTheStoredDocumentsFieldsButTheVersion) {
  // Whatever order the caller gives _id and the version field in, the stored
  // document has _id first and an int64 version 0, and its insert event's
  // changedPaths are its names in stored order, the version left out.
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path(), Options());
  ASSERT_NE(db, nullptr);
  const std::vector<std::string> inputs = {
      R"({"_id": "first", "a": 1, "b": {"c": 2}})",
      R"({"a": 1, "_id": "middle", "b": 2})",
      R"({"a": 1, "b": [1, 2]})",  // no _id: one is made
      R"({"_id": "v-int64", "version": {"$numberLong": "7"}, "a": 1})",
      R"({"a": "x", "version": "old", "_id": "v-string", "z": null})",
      R"({"_id": "v-dup", "version": 1.5, "a": 1, "version": 2})",
  };
  InsertRequest req;
  req.ns = kNs;
  for (const std::string& json : inputs) req.documents.push_back(Json(json));
  auto r = db->Insert(req);
  ASSERT_OK(r);
  ASSERT_TRUE(r->write_errors.empty()) << r->write_errors[0].status.ToString();
  ASSERT_EQ(r->n, static_cast<int64_t>(inputs.size()));

  std::vector<Document> events = WholeJournal(db.get());
  ASSERT_EQ(events.size(), inputs.size());
  std::map<std::string, std::vector<std::string>> stored_names;
  for (const Document& d : AllDocuments(db.get())) {
    std::vector<std::string> names = test::Keys(d.bson());
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names[0], "_id") << d.ToJson();
    EXPECT_TRUE(TypeIs(d.bson(), "version", BSON_TYPE_INT64)) << d.ToJson();
    EXPECT_EQ(test::IntAt(d.bson(), "version"), 0);
    names.erase(std::remove(names.begin(), names.end(), "version"), names.end());
    stored_names[IdJson(d.bson())] = names;
  }
  ASSERT_EQ(stored_names.size(), inputs.size());
  for (const Document& e : events) {
    const std::string id = IdJson(e.bson());
    ASSERT_EQ(stored_names.count(id), 1u) << id;
    EXPECT_EQ(test::StringsAt(e.bson(), "changedPaths"), stored_names[id]) << test::ToJson(e.bson());
  }
  EXPECT_EQ(stored_names[R"("middle")"], (std::vector<std::string>{"_id", "a", "b"}));
  EXPECT_EQ(stored_names[R"("v-string")"], (std::vector<std::string>{"_id", "a", "z"}));
  EXPECT_EQ(stored_names[R"("v-dup")"], (std::vector<std::string>{"_id", "a"}));
}

// A single-document insert buffers its writes without RocksDB's index of
// them (it never reads them back), and its transaction then goes back to
// the pool.  A batch reads its own inserts back: a repeated _id in it is a
// duplicate, on a reused transaction too.
TEST(DBImplInsertTest, ABatchSeesItsOwnInsertsAfterSingleInsertsOnTheSameTransactions) {
  test::TempDir dir;
  std::unique_ptr<DBImpl> db = OpenDb(dir.path(), Options());
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < 3; ++i) {
    InsertRequest one;
    one.ns = kNs;
    one.documents.push_back(Json(R"({"_id": "solo)" + std::to_string(i) + R"(", "a": 0})"));
    auto r = db->Insert(one);
    ASSERT_OK(r);
    ASSERT_EQ(1, r->n);
  }
  for (bool ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "ordered" : "unordered");
    const std::string x = ordered ? "x-ordered" : "x-unordered";
    InsertRequest batch;
    batch.ns = kNs;
    batch.ordered = ordered;
    batch.documents.push_back(Json(R"({"_id": ")" + x + R"(", "a": 1})"));
    batch.documents.push_back(Json(R"({"_id": ")" + x + R"(", "a": 2})"));
    batch.documents.push_back(Json(R"({"_id": ")" + x + R"(-other", "a": 3})"));
    auto r = db->Insert(batch);
    ASSERT_OK(r);
    ASSERT_EQ(1u, r->write_errors.size());
    EXPECT_EQ(1u, r->write_errors[0].index);
    EXPECT_THAT(r->write_errors[0].status, test::StatusIs(ErrorCode::kDuplicateKey));
    EXPECT_EQ(ordered ? 1 : 2, r->n);
  }
  int64_t a_of_x = -1;
  size_t count = 0;
  for (const Document& d : AllDocuments(db.get())) {
    ++count;
    if (IdJson(d.bson()) == R"("x-unordered")") a_of_x = test::IntAt(d.bson(), "a");
  }
  EXPECT_EQ(3u + 2u + 1u, count);  // three single inserts, then 2 and 1
  EXPECT_EQ(1, a_of_x);  // the first of the two, not overwritten
}

}  // namespace
}  // namespace gatedb
