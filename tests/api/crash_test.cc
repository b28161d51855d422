// Kill -9 in the middle of writes: after reopening, every write the child
// acknowledged is there, whole, and nothing is half-applied.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "gatedb/db.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::Json;

// The child: inserts documents and then bumps counters, reporting each
// acknowledged write (its sequence number) through the pipe.  Never returns.
[[noreturn]] void ChildWriter(const std::string& path, int fd) {
  auto db = Database::Open(path);
  if (!db.ok()) _exit(3);
  Collection c = (*db)->GetCollection("crash");
  for (int64_t i = 0;; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT64(d, "_id", i);
    BSON_APPEND_INT64(d, "n", 0);
    BSON_APPEND_UTF8(d, "pad", std::string(200, 'x').c_str());
    Document doc = Document::Adopt(d);
    if (!c.InsertOne(doc.view()).ok()) _exit(4);
    // Each document then gets i % 5 increments, so that versions and
    // counters must agree.
    for (int64_t k = 0; k < i % 5; ++k) {
      bson_t* f = bson_new();
      BSON_APPEND_INT64(f, "_id", i);
      Document fd = Document::Adopt(f);
      auto r = c.UpdateOne(fd.view(), Json(R"({"$inc": {"n": 1}})").view());
      if (!r.ok() || r->modified_count != 1) _exit(5);
    }
    if (write(fd, &i, sizeof i) != sizeof i) _exit(6);
  }
}

TEST(CrashTest, AcknowledgedWritesSurviveKill9) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::TempDir dir;
    // Let the child get going (opening takes a while), then kill it at a
    // moment that varies by round.
    test::KilledChild k = test::RunAndKill([&](int fd) { ChildWriter(dir.path(), fd); }, 20, 20 + 60 * round);
    ASSERT_TRUE(k.started);
    ASSERT_TRUE(k.killed) << "child exited early with " << k.exit_code;
    const int64_t last_acked = k.last;
    ASSERT_GE(last_acked, 0) << "the child acknowledged nothing";

    auto db = Database::Open(dir.path());
    ASSERT_OK(db);
    Collection c = (*db)->GetCollection("crash");
    auto docs = c.Find(Json("{}").view());
    ASSERT_OK(docs);
    // Every acknowledged document is there; at most one more (in flight).
    ASSERT_GE(static_cast<int64_t>(docs->size()), last_acked + 1);
    ASSERT_LE(static_cast<int64_t>(docs->size()), last_acked + 2);
    for (const Document& d : *docs) {
      bson_iter_t it;
      ASSERT_TRUE(bson_iter_init_find(&it, d.bson(), "_id"));
      int64_t id = bson_iter_as_int64(&it);
      ASSERT_TRUE(bson_iter_init_find(&it, d.bson(), "n"));
      int64_t n = bson_iter_as_int64(&it);
      ASSERT_TRUE(bson_iter_init_find(&it, d.bson(), "version"));
      int64_t version = bson_iter_as_int64(&it);
      // Each increment raised the version in the same atomic write.
      EXPECT_EQ(n, version) << d.ToJson();
      if (id <= last_acked) {
        EXPECT_EQ(n, id % 5) << d.ToJson();
      }
    }
    // The journal agrees with the data: no document change without its
    // event, and no event without its change.
    JournalQuery q;
    q.collection = "crash";
    q.limit = 0;
    auto journal = (*db)->ReadJournal(q);
    ASSERT_OK(journal);
    std::map<int64_t, int64_t> events_per_doc, max_version;
    int64_t expect_seq = 1;
    for (const Document& e : journal->events) {
      bson_iter_t it;
      ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "seq"));
      EXPECT_EQ(bson_iter_as_int64(&it), expect_seq++) << "the journal has a gap";
      ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "_id"));
      int64_t id = bson_iter_as_int64(&it);
      ASSERT_TRUE(bson_iter_init_find(&it, e.bson(), "versionAfter"));
      ++events_per_doc[id];
      max_version[id] = std::max(max_version[id], bson_iter_as_int64(&it));
    }
    EXPECT_EQ(events_per_doc.size(), docs->size());
    for (const Document& d : *docs) {
      bson_iter_t it;
      bson_iter_init_find(&it, d.bson(), "_id");
      int64_t id = bson_iter_as_int64(&it);
      bson_iter_init_find(&it, d.bson(), "version");
      int64_t version = bson_iter_as_int64(&it);
      EXPECT_EQ(events_per_doc[id], version + 1) << "insert + one event per version, for " << d.ToJson();
      EXPECT_EQ(max_version[id], version) << d.ToJson();
    }
    // And the store still takes writes.
    ASSERT_OK(c.InsertOne(Json(R"({"_id": "after"})").view()));
  }
}

}  // namespace
}  // namespace gatedb
