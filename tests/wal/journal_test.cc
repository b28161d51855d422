// Journal tests on a real TransactionDB in a temporary directory.
#include "wal/journal.h"

#include <rocksdb/utilities/transaction_db.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/test_util.h"
#include "wal/journal_format.h"

namespace gatedb {
namespace wal {
namespace {

using test::StatusIs;

constexpr int64_t kStartMs = 1'700'000'000'000;  // 2023-11-14

int64_t SeqOf(const Document& d) {
  bson_iter_t it;
  EXPECT_TRUE(bson_iter_init(&it, d.bson()) && bson_iter_next(&it));
  EXPECT_STREQ(bson_iter_key(&it), "seq") << "seq must be the first field";
  return bson_iter_as_int64(&it);
}

std::string StrField(const Document& d, const char* field) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, d.bson(), field) || !BSON_ITER_HOLDS_UTF8(&it)) return "";
  return bson_iter_utf8(&it, nullptr);
}

int64_t IntField(const Document& d, const char* field) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, d.bson(), field)) return -999;
  return bson_iter_as_int64(&it);
}

Document MakeEvent(const std::string& op, const std::string& ns, const std::string& id,
                   int64_t version_after) {
  bson_t* b = bson_new();
  BSON_APPEND_UTF8(b, "op", op.c_str());
  BSON_APPEND_UTF8(b, "ns", ns.c_str());
  BSON_APPEND_UTF8(b, "_id", id.c_str());
  BSON_APPEND_INT64(b, "versionAfter", version_after);
  return Document::Adopt(b);
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenAll(); }
  void TearDown() override { CloseAll(); }

  void OpenAll(JournalOptions opts = JournalOptions()) {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    cfs.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions());
    for (const std::string& name : Journal::ColumnFamilyNames()) {
      cfs.emplace_back(name, rocksdb::ColumnFamilyOptions());
    }
    rocksdb::TransactionDB* db = nullptr;
    rocksdb::Status s = rocksdb::TransactionDB::Open(options, rocksdb::TransactionDBOptions(), dir_.path(),
                                                     cfs, &handles_, &db);
    ASSERT_TRUE(s.ok()) << s.ToString();
    db_.reset(db);
    auto j = Journal::Open(db_.get(), handles_[1], handles_[2], handles_[3], opts,
                           [this] { return now_.load(); });
    ASSERT_OK(j);
    journal_ = std::move(j).value();
  }

  void CloseAll() {
    journal_.reset();
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    handles_.clear();
    db_.reset();
  }

  void Reopen(JournalOptions opts = JournalOptions()) {
    CloseAll();
    OpenAll(opts);
  }

  rocksdb::ColumnFamilyHandle* data_cf() { return handles_[0]; }
  rocksdb::ColumnFamilyHandle* doc_cf() { return handles_[2]; }

  // The engine's commit path: allocate, add, commit, publish (or release).
  // Returns the seq, or 0 when rolled back.
  uint64_t Write(const Document& event, const std::string& doc_key, int64_t version,
                 bool index = true, bool rollback = false) {
    std::lock_guard<std::mutex> l(commit_mu_);
    uint64_t seq = journal_->AllocateSeq();
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    Status s = journal_->AddToTransaction(txn.get(), seq, event.bson(), doc_key, version, index);
    EXPECT_OK(s);
    if (!doc_key.empty()) {
      EXPECT_TRUE(txn->Put(data_cf(), doc_key, "doc v" + std::to_string(version)).ok());
    }
    if (!s.ok() || rollback) {
      EXPECT_TRUE(txn->Rollback().ok());
      journal_->ReleaseSeq(seq);
      return 0;
    }
    rocksdb::Status rs = txn->Commit();
    EXPECT_TRUE(rs.ok()) << rs.ToString();
    if (!rs.ok()) {
      journal_->ReleaseSeq(seq);
      return 0;
    }
    journal_->Published(seq);
    return seq;
  }

  std::vector<int64_t> Seqs(const Journal::ReadOptions& ro) {
    auto r = journal_->Read(ro);
    EXPECT_OK(r);
    std::vector<int64_t> out;
    if (!r.ok()) return out;
    for (const Document& d : r->events) out.push_back(SeqOf(d));
    return out;
  }

  std::vector<int64_t> DocVersions(const std::string& key, int64_t after) {
    std::vector<Document> events;
    Status s = journal_->EventsForDocument(key, after, &events);
    EXPECT_OK(s);
    std::vector<int64_t> out;
    for (const Document& d : events) out.push_back(IntField(d, "versionAfter"));
    return out;
  }

  size_t CountEntries(rocksdb::ColumnFamilyHandle* cf) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf));
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    return n;
  }

  test::TempDir dir_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::TransactionDB> db_;
  std::unique_ptr<Journal> journal_;
  std::mutex commit_mu_;
  std::atomic<int64_t> now_{kStartMs};
};

// ---- Format ---------------------------------------------------------------------

TEST(JournalFormatTest, Layouts) {
  EXPECT_EQ(EncodeSeqKey(0x0102030405060708ULL), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  uint64_t seq = 0;
  EXPECT_TRUE(DecodeSeqKey(EncodeSeqKey(42), &seq));
  EXPECT_EQ(seq, 42u);
  EXPECT_FALSE(DecodeSeqKey("1234567", &seq));

  Document ev = test::Json(R"({"a": 1})");
  std::string value;
  EncodeEventValue(std::string_view("k\x00y", 3), ev.data(), ev.size(), &value);
  ASSERT_EQ(value.size(), 1 + 4 + 3 + ev.size());
  EXPECT_EQ(value.substr(0, 8), std::string("\x01\x00\x00\x00\x03k\x00y", 8));
  std::string_view key, bson;
  ASSERT_TRUE(DecodeEventValue(value, &key, &bson));
  EXPECT_EQ(key, std::string_view("k\x00y", 3));
  EXPECT_EQ(bson, std::string_view(reinterpret_cast<const char*>(ev.data()), ev.size()));
  value[0] = 0x02;
  EXPECT_FALSE(DecodeEventValue(value, &key, &bson));
  EXPECT_FALSE(DecodeEventValue(std::string("\x01\x00\x00\x00\x09xy", 7), &key, &bson));

  // journal_doc: doc key + seq BE; the value is the version, sign-flipped.
  EXPECT_EQ(EncodeDocIndexKey("ab", 1), std::string("ab\x00\x00\x00\x00\x00\x00\x00\x01", 10));
  EXPECT_TRUE(DecodeDocIndexKey(EncodeDocIndexKey("ab", 7), "ab", &seq));
  EXPECT_EQ(seq, 7u);
  EXPECT_FALSE(DecodeDocIndexKey(EncodeDocIndexKey("abc", 7), "ab", &seq));
  EXPECT_EQ(EncodeDocIndexValue(0), std::string("\x80\x00\x00\x00\x00\x00\x00\x00", 8));
  EXPECT_LT(EncodeDocIndexValue(-1), EncodeDocIndexValue(0));
  EXPECT_LT(EncodeDocIndexValue(5), EncodeDocIndexValue(300));
  int64_t v = 0;
  EXPECT_TRUE(DecodeDocIndexValue(EncodeDocIndexValue(-12345), &v));
  EXPECT_EQ(v, -12345);

  EXPECT_EQ(Journal::ColumnFamilyNames(), (std::vector<std::string>{"journal", "journal_doc", "journal_meta"}));
}

// ---- Writing and reading -------------------------------------------------------

TEST_F(JournalTest, EmptyJournal) {
  EXPECT_EQ(journal_->last_seq(), 0u);
  EXPECT_EQ(journal_->first_seq(), 1u);
  auto r = journal_->Read({});
  ASSERT_OK(r);
  EXPECT_TRUE(r->events.empty());
  EXPECT_EQ(r->last_seq, 0u);
  EXPECT_EQ(r->next_after_seq, 0u);
}

TEST_F(JournalTest, ContiguousSeqsAndReadWithLimitAfterSeqAndNs) {
  for (int i = 0; i < 10; ++i) {
    std::string ns = i % 3 == 0 ? "db.a" : "db.b";
    EXPECT_EQ(Write(MakeEvent("insert", ns, "d" + std::to_string(i), 0), "k" + std::to_string(i), 0),
              static_cast<uint64_t>(i + 1));
  }
  EXPECT_EQ(journal_->last_seq(), 10u);
  EXPECT_EQ(Seqs({}), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));

  Journal::ReadOptions ro;
  ro.limit = 3;
  auto r = journal_->Read(ro);
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->last_seq, 10u);
  EXPECT_EQ(r->next_after_seq, 3u);

  ro.after_seq = 5;
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{6, 7, 8}));
  ro.limit = 0;  // no limit
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{6, 7, 8, 9, 10}));
  ro.after_seq = 10;
  EXPECT_TRUE(Seqs(ro).empty());
  ro.after_seq = 50;
  EXPECT_TRUE(Seqs(ro).empty());

  Journal::ReadOptions by_ns;
  by_ns.ns = "db.a";
  auto a = journal_->Read(by_ns);
  ASSERT_OK(a);
  std::vector<int64_t> seqs;
  for (const Document& d : a->events) {
    seqs.push_back(SeqOf(d));
    EXPECT_EQ(StrField(d, "ns"), "db.a");
  }
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 4, 7, 10}));
  EXPECT_EQ(a->next_after_seq, 10u);  // scanned to the end
  by_ns.limit = 2;
  a = journal_->Read(by_ns);
  ASSERT_OK(a);
  ASSERT_EQ(a->events.size(), 2u);
  EXPECT_EQ(a->next_after_seq, 4u);  // resume after the last event returned
  by_ns.after_seq = a->next_after_seq;
  EXPECT_EQ(Seqs(by_ns), (std::vector<int64_t>{7, 10}));
  by_ns.ns = "db.none";
  by_ns.after_seq = 0;
  EXPECT_TRUE(Seqs(by_ns).empty());
}

TEST_F(JournalTest, SeqIsTheFirstFieldAndAtIsStamped) {
  Document ev = test::Json(R"({"op": "update", "seq": 999, "ns": "db.c", "at": {"$date": 5}})");
  ASSERT_EQ(Write(ev, "k", 1), 1u);
  now_ = kStartMs + 77;
  ASSERT_EQ(Write(MakeEvent("update", "db.c", "x", 2), "k", 2), 2u);
  auto r = journal_->Read({});
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(test::ToJson(r->events[0].bson()),
            R"({ "seq" : 1, "op" : "update", "ns" : "db.c", "at" : { "$date" : "1970-01-01T00:00:00.005Z" } })");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, r->events[1].bson(), "at"));
  ASSERT_TRUE(BSON_ITER_HOLDS_DATE_TIME(&it));
  EXPECT_EQ(bson_iter_date_time(&it), kStartMs + 77);
  EXPECT_EQ(SeqOf(r->events[1]), 2);
}

TEST_F(JournalTest, SeqPlaceholderIsFilledInPlace) {
  // The engine's events start with {seq: <int64 0>} and carry "at": stored
  // as they are, with the seq written into the placeholder.
  Document ev = test::Json(R"({"seq": {"$numberLong": "0"}, "op": "update", "ns": "db.c",
                               "at": {"$date": 5}, "gated": true})");
  ASSERT_EQ(Write(ev, "k", 1), 1u);
  ASSERT_EQ(Write(ev, "k", 2), 2u);
  // A placeholder without "at" takes the general path, which stamps it.
  Document no_at = test::Json(R"({"seq": {"$numberLong": "0"}, "op": "update", "ns": "db.c"})");
  now_ = kStartMs + 9;
  ASSERT_EQ(Write(no_at, "k", 3), 3u);
  // A conflict event with a placeholder is still not indexed per document.
  Document conflict = test::Json(R"({"seq": {"$numberLong": "0"}, "op": "conflict", "at": {"$date": 5}})");
  {
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    std::lock_guard<std::mutex> l(commit_mu_);
    uint64_t seq = journal_->AllocateSeq();
    EXPECT_THAT(journal_->AddToTransaction(txn.get(), seq, conflict.bson(), "k", 1, true),
                StatusIs(ErrorCode::kBadValue));
    ASSERT_TRUE(txn->Rollback().ok());
    journal_->ReleaseSeq(seq);
  }
  auto r = journal_->Read({});
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(test::ToJson(r->events[0].bson()),
            R"({ "seq" : 1, "op" : "update", "ns" : "db.c", "at" : { "$date" : "1970-01-01T00:00:00.005Z" }, )"
            R"("gated" : true })");
  EXPECT_EQ(SeqOf(r->events[1]), 2);
  EXPECT_EQ(SeqOf(r->events[2]), 3);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, r->events[2].bson(), "at"));
  EXPECT_EQ(bson_iter_date_time(&it), kStartMs + 9);
  // The caller's document is not changed.
  ASSERT_TRUE(bson_iter_init_find(&it, ev.bson(), "seq"));
  EXPECT_EQ(bson_iter_int64(&it), 0);
}

TEST_F(JournalTest, PreparedWriterEventsAreStoredAsAddToTransactionStoresThem) {
  // The engine's path: encoded before the commit mutex, the seq written in
  // under it.  The stored bytes are those AddToTransaction stores.
  Document ev = test::Json(R"({"seq": {"$numberLong": "0"}, "op": "update", "ns": "db.c",
                               "at": {"$date": 5}, "changedPaths": ["a", "b.c"]})");
  ASSERT_EQ(Write(ev, "doc-key", 1, /*index=*/false), 1u);
  std::vector<std::string> values(3);
  for (int i = 0; i < 2; ++i) Journal::PrepareWriterEvent(ev.bson(), "doc-key", &values[i]);
  {
    std::lock_guard<std::mutex> l(commit_mu_);
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    uint64_t s2 = journal_->AllocateSeq();
    ASSERT_OK(journal_->AddPreparedToTransaction(txn.get(), s2, "doc-key", &values[0]));
    uint64_t s3 = journal_->AllocateSeq();
    ASSERT_OK(journal_->AddPreparedToTransaction(txn.get(), s3, "doc-key", &values[1]));
    ASSERT_TRUE(txn->Commit().ok());
    journal_->Published(s3);
  }
  // A seq the journal cannot store is refused before anything is put.
  {
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    Journal::PrepareWriterEvent(ev.bson(), "doc-key", &values[2]);
    EXPECT_THAT(journal_->AddPreparedToTransaction(txn.get(), 0, "doc-key", &values[2]),
                StatusIs(ErrorCode::kBadValue));
    EXPECT_EQ(txn->GetNumPuts(), 0u);
  }
  std::vector<std::string> stored;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[1]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) stored.push_back(it->value().ToString());
  ASSERT_EQ(stored.size(), 3u);
  // Only the 8 bytes of the seq differ between the three values.
  const size_t seq_at = kEventHeaderSize + std::string("doc-key").size() + 4 + 1 + sizeof(kFieldSeq);
  for (size_t i = 1; i < 3; ++i) {
    ASSERT_EQ(stored[i].size(), stored[0].size());
    EXPECT_EQ(stored[i].substr(0, seq_at), stored[0].substr(0, seq_at));
    EXPECT_EQ(stored[i].substr(seq_at + 8), stored[0].substr(seq_at + 8));
  }
  EXPECT_EQ(Seqs({}), (std::vector<int64_t>{1, 2, 3}));
  auto r = journal_->Read({});
  ASSERT_OK(r);
  EXPECT_EQ(StrField(r->events[2], "op"), "update");
  // The caller's event is not changed.
  EXPECT_EQ(IntField(ev, "seq"), 0);
}

TEST_F(JournalTest, BadEventsAreRefused) {
  std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
  std::lock_guard<std::mutex> l(commit_mu_);
  uint64_t seq = journal_->AllocateSeq();
  Document bad_at = test::Json(R"({"op": "update", "at": 5})");
  EXPECT_THAT(journal_->AddToTransaction(txn.get(), seq, bad_at.bson(), "k", 1, true), StatusIs(ErrorCode::kBadValue));
  Document ev = MakeEvent("update", "db.c", "x", 1);
  EXPECT_THAT(journal_->AddToTransaction(txn.get(), seq, ev.bson(), "", 1, true), StatusIs(ErrorCode::kBadValue));
  EXPECT_THAT(journal_->AddToTransaction(txn.get(), seq, nullptr, "k", 1, false), StatusIs(ErrorCode::kBadValue));
  Document conflict = MakeEvent("conflict", "db.c", "x", 1);
  EXPECT_THAT(journal_->AddToTransaction(txn.get(), seq, conflict.bson(), "k", 1, true),
              StatusIs(ErrorCode::kBadValue));
  ASSERT_TRUE(txn->Rollback().ok());
  journal_->ReleaseSeq(seq);
  EXPECT_EQ(journal_->AllocateSeq(), 1u);
  journal_->ReleaseSeq(1);
}

TEST_F(JournalTest, ReleaseAfterRollbackLeavesNoGap) {
  ASSERT_EQ(Write(MakeEvent("insert", "db.c", "a", 0), "ka", 0), 1u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 1), "ka", 1, true, /*rollback=*/true), 0u);
  EXPECT_EQ(journal_->last_seq(), 1u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 1), "ka", 1), 2u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 2), "ka", 2, true, /*rollback=*/true), 0u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 2), "ka", 2, true, /*rollback=*/true), 0u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 2), "ka", 2), 3u);
  EXPECT_EQ(Seqs({}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(DocVersions("ka", -1), (std::vector<int64_t>{0, 1, 2}));
}

TEST_F(JournalTest, SeveralEventsInOneTransaction) {
  auto commit_three = [&](bool rollback) {
    std::lock_guard<std::mutex> l(commit_mu_);
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    std::vector<uint64_t> seqs;
    for (int i = 0; i < 3; ++i) {
      seqs.push_back(journal_->AllocateSeq());
      std::string id = "m" + std::to_string(i);
      Document ev = MakeEvent("insert", "db.c", id, 0);
      ASSERT_OK(journal_->AddToTransaction(txn.get(), seqs.back(), ev.bson(), "k" + id, 0, true));
    }
    if (rollback) {
      ASSERT_TRUE(txn->Rollback().ok());
      for (auto it = seqs.rbegin(); it != seqs.rend(); ++it) journal_->ReleaseSeq(*it);
      return;
    }
    ASSERT_TRUE(txn->Commit().ok());
    journal_->Published(seqs.back());
  };
  commit_three(/*rollback=*/true);
  EXPECT_EQ(journal_->last_seq(), 0u);
  commit_three(/*rollback=*/false);
  EXPECT_EQ(journal_->last_seq(), 3u);
  EXPECT_EQ(Seqs({}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "m0", 1), "km0", 1), 4u);
  EXPECT_EQ(DocVersions("km0", -1), (std::vector<int64_t>{0, 1}));
}

TEST_F(JournalTest, EventIsAtomicWithTheDataInItsTransaction) {
  Document ev = MakeEvent("insert", "db.c", "a", 0);
  {
    std::lock_guard<std::mutex> l(commit_mu_);
    uint64_t seq = journal_->AllocateSeq();
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    ASSERT_TRUE(txn->Put(data_cf(), "doc", "v0").ok());
    ASSERT_OK(journal_->AddToTransaction(txn.get(), seq, ev.bson(), "ka", 0, true));
    ASSERT_TRUE(txn->Rollback().ok());
    journal_->ReleaseSeq(seq);
  }
  EXPECT_EQ(CountEntries(data_cf()), 0u);
  EXPECT_EQ(CountEntries(handles_[1]), 0u);
  EXPECT_EQ(CountEntries(doc_cf()), 0u);
  {
    std::lock_guard<std::mutex> l(commit_mu_);
    uint64_t seq = journal_->AllocateSeq();
    EXPECT_EQ(seq, 1u);
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(rocksdb::WriteOptions()));
    ASSERT_TRUE(txn->Put(data_cf(), "doc", "v0").ok());
    ASSERT_OK(journal_->AddToTransaction(txn.get(), seq, ev.bson(), "ka", 0, true));
    // Not visible to readers before it is published.
    EXPECT_TRUE(Seqs({}).empty());
    ASSERT_TRUE(txn->Commit().ok());
    EXPECT_TRUE(Seqs({}).empty());
    journal_->Published(seq);
  }
  EXPECT_EQ(CountEntries(data_cf()), 1u);
  EXPECT_EQ(CountEntries(handles_[1]), 1u);
  EXPECT_EQ(CountEntries(doc_cf()), 1u);
  EXPECT_EQ(Seqs({}), (std::vector<int64_t>{1}));
}

TEST_F(JournalTest, ConflictEventsThroughAWriteBatch) {
  ASSERT_EQ(Write(MakeEvent("insert", "db.c", "a", 0), "ka", 0), 1u);
  {
    std::lock_guard<std::mutex> l(commit_mu_);
    uint64_t seq = journal_->AllocateSeq();
    rocksdb::WriteBatch batch;
    Document conflict = MakeEvent("conflict", "db.c", "a", 0);
    ASSERT_OK(journal_->AddToBatch(&batch, seq, conflict.bson(), "ka", 0, false));
    ASSERT_TRUE(db_->Write(rocksdb::WriteOptions(), &batch).ok());
    journal_->Published(seq);
  }
  ASSERT_EQ(Write(MakeEvent("update", "db.c", "a", 1), "ka", 1), 3u);
  auto r = journal_->Read({});
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(StrField(r->events[1], "op"), "conflict");
  EXPECT_EQ(SeqOf(r->events[1]), 2);
  std::vector<Document> events;
  ASSERT_OK(journal_->EventsForDocument("ka", -1, &events));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(SeqOf(events[0]), 1);
  EXPECT_EQ(SeqOf(events[1]), 3);
}

TEST_F(JournalTest, ReopenRecoversLastAndFirstSeq) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Write(MakeEvent("update", "db.c", "a", i), "ka", i), uint64_t(i + 1));
  JournalOptions opts;
  opts.max_events = 4;
  Reopen(opts);
  EXPECT_EQ(journal_->last_seq(), 10u);
  EXPECT_EQ(journal_->first_seq(), 1u);
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 7u);
  Reopen();
  EXPECT_EQ(journal_->last_seq(), 10u);
  EXPECT_EQ(journal_->first_seq(), 7u);
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 10), "ka", 10), 11u);
  Journal::ReadOptions ro;
  ro.after_seq = 6;
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{7, 8, 9, 10, 11}));

  // Everything collected: seqs still do not restart.
  now_ = kStartMs + 8LL * 24 * 3600 * 1000;
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 12u);
  EXPECT_EQ(CountEntries(handles_[1]), 0u);
  EXPECT_EQ(CountEntries(doc_cf()), 0u);
  Reopen();
  EXPECT_EQ(journal_->last_seq(), 11u);
  EXPECT_EQ(journal_->first_seq(), 12u);
  ro.after_seq = 11;
  EXPECT_TRUE(Seqs(ro).empty());
  EXPECT_EQ(Write(MakeEvent("update", "db.c", "a", 11), "ka", 11), 12u);
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{12}));
}

TEST_F(JournalTest, ReopenFinishesAnInterruptedCollection) {
  for (int i = 0; i < 6; ++i) ASSERT_EQ(Write(MakeEvent("update", "db.c", "a", i), "ka", i), uint64_t(i + 1));
  // A crash after the first_seq record and before the deletes.
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), handles_[3], kMetaFirstSeqKey, EncodeFirstSeq(4)).ok());
  Reopen();
  EXPECT_EQ(journal_->first_seq(), 4u);
  EXPECT_EQ(journal_->last_seq(), 6u);
  EXPECT_THAT(journal_->Read({}), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  EXPECT_EQ(CountEntries(handles_[1]), 6u);
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(CountEntries(handles_[1]), 3u);
  EXPECT_EQ(CountEntries(doc_cf()), 3u);
  EXPECT_EQ(DocVersions("ka", 2), (std::vector<int64_t>{3, 4, 5}));
}

// ---- Per-document history -------------------------------------------------------

TEST_F(JournalTest, EventsForDocument) {
  // Interleaved writes to three documents; "ka" is a prefix of "kab".
  for (int v = 0; v < 5; ++v) {
    ASSERT_NE(Write(MakeEvent(v == 0 ? "insert" : "update", "db.c", "a", v), "ka", v), 0u);
    ASSERT_NE(Write(MakeEvent(v == 0 ? "insert" : "update", "db.c", "ab", v), "kab", v), 0u);
    if (v < 2) {
      ASSERT_NE(Write(MakeEvent(v == 0 ? "insert" : "update", "db.c", "b", v), "kb", v), 0u);
    }
  }
  // An unindexed event of "ka" (a no-op write, say).
  ASSERT_NE(Write(MakeEvent("update", "db.c", "a", 4), "ka", 4, /*index=*/false), 0u);

  EXPECT_EQ(DocVersions("ka", -1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(DocVersions("ka", 1), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(DocVersions("ka", 4), (std::vector<int64_t>{}));
  EXPECT_EQ(DocVersions("kab", 2), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(DocVersions("kb", -1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(DocVersions("kc", -1), (std::vector<int64_t>{}));
  std::vector<Document> events;
  ASSERT_OK(journal_->EventsForDocument("ka", 2, &events));
  for (const Document& d : events) EXPECT_EQ(StrField(d, "_id"), "a");
  int64_t prev = 0;
  for (const Document& d : events) {
    EXPECT_GT(SeqOf(d), prev);
    prev = SeqOf(d);
  }
  EXPECT_THAT(journal_->EventsForDocument("", -1, &events), StatusIs(ErrorCode::kBadValue));

  // Deleted (the delete indexed as a new version) and inserted again: only
  // the new life is returned.
  ASSERT_NE(Write(MakeEvent("delete", "db.c", "a", 5), "ka", 5), 0u);
  EXPECT_EQ(DocVersions("ka", 3), (std::vector<int64_t>{4, 5}));
  ASSERT_NE(Write(MakeEvent("insert", "db.c", "a", 0), "ka", 0), 0u);
  ASSERT_NE(Write(MakeEvent("update", "db.c", "a", 1), "ka", 1), 0u);
  EXPECT_EQ(DocVersions("ka", -1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(DocVersions("ka", 0), (std::vector<int64_t>{1}));
  EXPECT_EQ(DocVersions("ka", 3), (std::vector<int64_t>{}));
  // "kb": deleted without an indexed delete event, inserted again.
  ASSERT_NE(Write(MakeEvent("insert", "db.c", "b", 0), "kb", 0), 0u);
  EXPECT_EQ(DocVersions("kb", -1), (std::vector<int64_t>{0}));
}

// ---- Retention -------------------------------------------------------------------

TEST_F(JournalTest, CollectByAge) {
  JournalOptions opts;
  opts.retention_ms = 1000;
  Reopen(opts);
  // Document "ka": versions 0..5, one write every 300 ms; "kb" written at 0 only.
  ASSERT_EQ(Write(MakeEvent("insert", "db.c", "b", 0), "kb", 0), 1u);
  for (int v = 0; v < 6; ++v) {
    now_ = kStartMs + 300 * v;
    ASSERT_EQ(Write(MakeEvent(v == 0 ? "insert" : "update", "db.c", "a", v), "ka", v), uint64_t(v + 2));
  }
  // Seqs 1..7 at t = 0, 0, 300, 600, 900, 1200, 1500.
  now_ = kStartMs + 1000;  // cutoff t = 0: nothing is strictly older
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 1u);
  now_ = kStartMs + 1650;  // collects t < 650: seqs 1..4
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 5u);
  EXPECT_EQ(journal_->last_seq(), 7u);
  EXPECT_EQ(CountEntries(handles_[1]), 3u);
  EXPECT_EQ(CountEntries(doc_cf()), 3u);

  Journal::ReadOptions ro;
  auto err = journal_->Read(ro);
  EXPECT_THAT(err, StatusIs(ErrorCode::kChangeStreamHistoryLost));
  EXPECT_EQ(err.status().reason(), "journal events after seq 0 were collected; the oldest retained is 5");
  ro.after_seq = 3;
  EXPECT_THAT(journal_->Read(ro), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  ro.after_seq = 4;
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{5, 6, 7}));

  // "ka" keeps versions 3, 4, 5: complete after 2 or later, not before.
  std::vector<Document> events;
  EXPECT_THAT(journal_->EventsForDocument("ka", -1, &events), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  EXPECT_TRUE(events.empty());
  EXPECT_THAT(journal_->EventsForDocument("ka", 1, &events), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  EXPECT_EQ(DocVersions("ka", 2), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(DocVersions("ka", 4), (std::vector<int64_t>{5}));
  EXPECT_EQ(DocVersions("ka", 5), (std::vector<int64_t>{}));
  // "kb" lost its only event: its history cannot be proven complete.
  EXPECT_THAT(journal_->EventsForDocument("kb", -1, &events), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  EXPECT_THAT(journal_->EventsForDocument("kb", 0, &events), StatusIs(ErrorCode::kChangeStreamHistoryLost));
}

TEST_F(JournalTest, CollectByMaxEvents) {
  JournalOptions opts;
  opts.max_events = 5;
  opts.retention_ms = 0;  // no age limit
  Reopen(opts);
  for (int i = 0; i < 3; ++i) ASSERT_NE(Write(MakeEvent("update", "db.c", "a", i), "ka", i), 0u);
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 1u);
  for (int i = 3; i < 2500; ++i) ASSERT_NE(Write(MakeEvent("update", "db.c", "a", i), "ka", i), 0u);
  now_ = kStartMs + 100LL * 24 * 3600 * 1000;  // ignored: no age limit
  ASSERT_OK(journal_->Collect());
  EXPECT_EQ(journal_->first_seq(), 2496u);
  EXPECT_EQ(CountEntries(handles_[1]), 5u);
  EXPECT_EQ(CountEntries(doc_cf()), 5u);
  Journal::ReadOptions ro;
  ro.after_seq = 2494;
  EXPECT_THAT(journal_->Read(ro), StatusIs(ErrorCode::kChangeStreamHistoryLost));
  ro.after_seq = 2495;
  EXPECT_EQ(Seqs(ro), (std::vector<int64_t>{2496, 2497, 2498, 2499, 2500}));
  EXPECT_EQ(DocVersions("ka", 2494), (std::vector<int64_t>{2495, 2496, 2497, 2498, 2499}));
  std::vector<Document> events;
  EXPECT_THAT(journal_->EventsForDocument("ka", 2493, &events), StatusIs(ErrorCode::kChangeStreamHistoryLost));
}

// ---- Waiting --------------------------------------------------------------------

TEST_F(JournalTest, WaitForEventsWakesOnPublished) {
  EXPECT_FALSE(journal_->WaitForEvents(0, std::chrono::milliseconds(20)));
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = journal_->WaitForEvents(0, std::chrono::seconds(30)); });
  ASSERT_EQ(Write(MakeEvent("insert", "db.c", "a", 0), "ka", 0), 1u);
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_TRUE(journal_->WaitForEvents(0, std::chrono::milliseconds(0)));
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(journal_->WaitForEvents(1, std::chrono::milliseconds(50)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
}

// ---- Concurrency ----------------------------------------------------------------

// Reads everything after *after, checking order and contiguity; returns false
// on a gap.  A NoSuchKey (collected) moves *after to first_seq - 1.
void ReadAndCheck(Journal* j, uint64_t* after, bool allow_collected, int* collected_errors) {
  Journal::ReadOptions ro;
  ro.after_seq = *after;
  ro.limit = 50;
  auto r = j->Read(ro);
  if (!r.ok()) {
    ASSERT_TRUE(allow_collected) << r.status().ToString();
    ASSERT_THAT(r, StatusIs(ErrorCode::kChangeStreamHistoryLost));
    ++*collected_errors;
    uint64_t first = j->first_seq();
    ASSERT_GT(first, *after + 1);
    *after = first - 1;
    return;
  }
  for (const Document& d : r->events) {
    ASSERT_EQ(static_cast<uint64_t>(SeqOf(d)), *after + 1) << "gap or reordering";
    *after += 1;
  }
  ASSERT_LE(*after, r->last_seq);
  if (r->events.size() < 50) {
    ASSERT_EQ(*after, r->last_seq);
  }
}

TEST_F(JournalTest, ConcurrentWritersAndReaderSeeNoGap) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  std::atomic<bool> done{false};
  std::atomic<int> committed{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "t" + std::to_string(t);
        bool rollback = rng() % 5 == 0;  // failed commits give their seq back
        if (Write(MakeEvent("update", "db.c", id, i), "k" + id, i, true, rollback) != 0) ++committed;
        if (rollback) --i;
      }
    });
  }
  uint64_t after = 0;
  int collected = 0;
  std::thread reader([&] {
    while (!done) {
      ReadAndCheck(journal_.get(), &after, false, &collected);
      if (::testing::Test::HasFatalFailure()) return;
      journal_->WaitForEvents(after, std::chrono::milliseconds(5));
    }
    ReadAndCheck(journal_.get(), &after, false, &collected);
  });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(committed.load(), kThreads * kPerThread);
  EXPECT_EQ(journal_->last_seq(), uint64_t(kThreads * kPerThread));
  Journal::ReadOptions all;
  all.limit = 0;
  auto r = journal_->Read(all);
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), size_t(kThreads * kPerThread));
  for (size_t i = 0; i < r->events.size(); ++i) EXPECT_EQ(SeqOf(r->events[i]), int64_t(i + 1));
  for (int t = 0; t < kThreads; ++t) {
    std::vector<int64_t> versions = DocVersions("kt" + std::to_string(t), -1);
    ASSERT_EQ(versions.size(), size_t(kPerThread));
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(versions[i], i);
  }
}

TEST_F(JournalTest, BackgroundCollectorRunsWithWriters) {
  JournalOptions opts;
  opts.max_events = 100;
  opts.collect_interval_ms = 2;
  Reopen(opts);
  journal_->StartBackgroundCollector();
  journal_->StartBackgroundCollector();  // no-op
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "t" + std::to_string(t);
        ASSERT_NE(Write(MakeEvent("update", "db.c", id, i), "k" + id, i), 0u);
      }
    });
  }
  uint64_t after = 0;
  int collected = 0;
  std::thread reader([&] {
    while (!done) {
      ReadAndCheck(journal_.get(), &after, true, &collected);
      if (::testing::Test::HasFatalFailure()) return;
      // Per-document history is either complete or an error, never partial.
      std::vector<Document> events;
      Status s = journal_->EventsForDocument("kt0", 10, &events);
      if (s.ok()) {
        for (size_t i = 0; i < events.size(); ++i) ASSERT_EQ(IntField(events[i], "versionAfter"), int64_t(11 + i));
      } else {
        ASSERT_THAT(s, StatusIs(ErrorCode::kChangeStreamHistoryLost));
      }
      std::this_thread::yield();
    }
  });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  journal_->Stop();
  ASSERT_OK(journal_->last_collect_status());
  ASSERT_OK(journal_->Collect());
  const uint64_t total = kThreads * kPerThread;
  EXPECT_EQ(journal_->last_seq(), total);
  EXPECT_EQ(journal_->first_seq(), total - 100 + 1);
  EXPECT_EQ(CountEntries(handles_[1]), 100u);
  EXPECT_EQ(CountEntries(doc_cf()), 100u);
  Journal::ReadOptions ro;
  ro.after_seq = total - 100;
  ro.limit = 0;
  auto r = journal_->Read(ro);
  ASSERT_OK(r);
  ASSERT_EQ(r->events.size(), 100u);
  EXPECT_EQ(SeqOf(r->events.front()), int64_t(total - 99));
}

}  // namespace
}  // namespace wal
}  // namespace gatedb
