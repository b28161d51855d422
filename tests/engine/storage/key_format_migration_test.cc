// Key format version 1 -> 2 (engine/keys/key_format.h, db_impl_format.cc).
//
// A version-1 directory is made from a current one by rewriting its bytes
// with RocksDB directly, as the previous gatedb wrote them: the format
// record removed, documents whose _id holds an inexact decimal moved to
// their version-1 key (with their lease), and every index entry of the
// collection replaced by its version-1 bytes (decimals as their nearest
// long double, descending components plainly inverted).  Opening it must
// migrate it to exactly the bytes a current store holds, and a migration
// stopped at any of its durable steps (TEST_StopMigrationAfter, standing in
// for a kill -9 there: each step is a finished RocksDB write) must leave a
// directory that migrates again at the next open.
#include <rocksdb/db.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/index/index_keys.h"
#include "engine/index/index_spec.h"
#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/doc_util.h"
#include "engine/storage/record.h"
#include "engine/util/coding.h"
#include "tests/engine/storage/index_test_util.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using index_test::NameHint;
using index_test::NaturalHint;

const Namespace kMig{"test", "mig"};
const Namespace kPlain{"test", "plain"};

const char* const kIds[] = {
    R"({"$numberDecimal": "0.1"})",
    R"({"$numberDecimal": "9999999999999999999999999999999999"})",
    R"({"k": {"$numberDecimal": "5.000000000000000000000000000000001"}})",
    R"({"a": [1, {"$numberDecimal": "1E+400"}]})",
    R"(0.1)",
    R"(5)",
    R"({"$numberDecimal": "2.5"})",
    R"("s")",
};
const char* const kValues[] = {
    R"(5)",
    R"({"$numberDecimal": "5.000000000000000000000000000000001"})",
    R"({"$numberDecimal": "4.999999999999999999999999999999999"})",
    R"(-5)",
    R"({"$numberDecimal": "-5.000000000000000000000000000000001"})",
    R"(0.1)",
    R"({"$numberDecimal": "0.1"})",
    R"({"$numberDecimal": "1E-400"})",
};

// Raw RocksDB access to a closed store's column families.
class Raw {
 public:
  explicit Raw(const std::string& path) {
    std::vector<std::string> names;
    EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles_, &db);
    EXPECT_TRUE(s.ok()) << s.ToString();
    db_.reset(db);
    for (size_t i = 0; i < names.size(); ++i) by_name_[names[i]] = handles_[i];
  }
  ~Raw() {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  }
  rocksdb::DB* db() { return db_.get(); }
  rocksdb::ColumnFamilyHandle* cf(const std::string& name) { return by_name_.at(name); }

  // Every key/value of `cf` starting with `prefix`.
  std::map<std::string, std::string> Scan(const std::string& name, const std::string& prefix) {
    std::map<std::string, std::string> out;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(name)));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      out[it->key().ToString()] = it->value().ToString();
    }
    return out;
  }

 private:
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::DB> db_;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> by_name_;
};

uint32_t CollectionId(Raw& raw, const Namespace& ns) {
  std::string v;
  EXPECT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("catalog"), "ns:" + ns.full(), &v).ok());
  bson_t b;
  EXPECT_TRUE(bson_init_static(&b, reinterpret_cast<const uint8_t*>(v.data()), v.size()));
  return static_cast<uint32_t>(test::IntAt(&b, "id"));
}

std::vector<index::IndexSpec> Specs(Raw& raw, uint32_t coll_id) {
  std::string prefix = "ix:";
  PutFixed32BE(&prefix, coll_id);
  std::vector<index::IndexSpec> out;
  for (const auto& [k, v] : raw.Scan("catalog", prefix)) {
    auto spec = index::DecodeIndexSpec(v);
    EXPECT_OK(spec);
    if (spec.ok()) out.push_back(std::move(*spec));
  }
  return out;
}

std::string Enc1(const bson_value_t& v) {
  std::string out;
  keys::TEST_EncodeValueFormat1(v, &out);
  return out;
}

// The value at a top-level field, or null.
bson_value_t FieldOrNull(const bson_t* doc, const std::string& field) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, field.c_str())) return *bson_iter_value(&it);
  bson_value_t null;
  null.value_type = BSON_TYPE_NULL;
  return null;
}

// The index entries of `specs` over the documents of `docs`, in version 1
// (format1) or as GenerateKeys makes them now.
std::map<std::string, std::string> Entries(uint32_t coll_id, const std::vector<index::IndexSpec>& specs,
                                           const std::map<std::string, std::string>& docs, bool format1) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : docs) {
    RecordView rec;
    EXPECT_OK(DecodeRecord(value, &rec));
    bson_value_t id;
    EXPECT_TRUE(GetId(&rec.doc, &id));
    const std::string idenc = format1 ? Enc1(id) : key.substr(4);
    for (const index::IndexSpec& spec : specs) {
      const std::string prefix = index::IndexPrefix(coll_id, spec.id);
      std::vector<std::string> bodies;
      if (format1) {
        // Top-level scalar fields only (the test's documents).
        std::string body;
        for (const index::IndexField& f : spec.fields) {
          std::string c = Enc1(FieldOrNull(&rec.doc, f.path));
          if (f.descending) {
            for (char& ch : c) ch = static_cast<char>(~static_cast<uint8_t>(ch));
          }
          body += c;
        }
        bodies.push_back(body);
      } else {
        std::vector<index::IndexKey> keys_out;
        bool multikey = false;
        EXPECT_OK(index::GenerateKeys(spec, &rec.doc, &keys_out, &multikey));
        for (const index::IndexKey& k : keys_out) bodies.push_back(k.body);
      }
      for (const std::string& body : bodies) out[prefix + body + (spec.unique ? "" : idenc)] = idenc;
    }
  }
  return out;
}

std::string Prefix(uint32_t coll_id) { return keys::CollectionPrefix(coll_id); }

class KeyFormatMigrationTest : public ::testing::Test {
 protected:
  void TearDown() override { DBImpl::TEST_StopMigrationAfter(-1); }

  StatusOr<std::unique_ptr<DBImpl>> Open() { return DBImpl::Open(dir_.path(), Options()); }

  // A current store with decimals in _ids and indexed fields, a lease on
  // the first document, and a collection without decimals.
  void Populate() {
    auto db = Open();
    ASSERT_OK(db);
    InsertRequest ins;
    ins.ns = kMig;
    int n = 0;
    for (const char* id : kIds) {
      const char* v = kValues[n % (sizeof(kValues) / sizeof(kValues[0]))];
      ins.documents.push_back(test::Json(std::string("{\"_id\": ") + id + ", \"v\": " + v +
                                         ", \"w\": " + std::to_string(n) + "}"));
      ++n;
    }
    for (; n < 40; ++n) {
      const char* v = kValues[n % (sizeof(kValues) / sizeof(kValues[0]))];
      ins.documents.push_back(test::Json("{\"_id\": " + std::to_string(100 + n) + ", \"v\": " + v +
                                         ", \"w\": " + std::to_string(n) + "}"));
    }
    auto r = (*db)->Insert(ins);
    ASSERT_OK(r);
    ASSERT_EQ(r->n, 40);
    ASSERT_OK((*db)->CreateIndexes(kMig, {test::Json(R"({"key": {"v": 1}, "name": "v_asc"})"),
                                          test::Json(R"({"key": {"v": -1}, "name": "v_desc"})"),
                                          test::Json(R"({"key": {"w": 1}, "name": "w_u", "unique": true})"),
                                          test::Json(R"({"key": {"v": -1, "w": 1}, "name": "vw_u", "unique": true})")}));
    InsertRequest plain;
    plain.ns = kPlain;
    for (int i = 0; i < 10; ++i) plain.documents.push_back(test::Json("{\"_id\": " + std::to_string(i) + ", \"x\": 1.5}"));
    ASSERT_OK((*db)->Insert(plain));
    ASSERT_OK((*db)->CreateIndexes(kPlain, {test::Json(R"({"key": {"x": -1}, "name": "x"})")}));
    ASSERT_OK((*db)->AcquireLease(kMig, IdValue(0).get(), 3600 * 1000, "holder"));
  }

  Value IdValue(int i) {
    Document d = test::Json(std::string("{\"v\": ") + kIds[i] + "}");
    return index_test::ValueOf(d);
  }

  // Rewrites the closed store into version 1.  Remembers the version-2
  // bytes (expected after the migration).
  void DowngradeToFormat1() {
    Raw raw(dir_.path());
    mig_id_ = CollectionId(raw, kMig);
    plain_id_ = CollectionId(raw, kPlain);
    std::string version;
    ASSERT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("catalog"), "meta:format_version", &version).ok());
    ASSERT_EQ(DecodeFixed32BE(version.data()), 2u);
    want_docs_ = raw.Scan("docs", Prefix(mig_id_));
    want_indexes_ = raw.Scan("indexes", Prefix(mig_id_));
    want_leases_ = raw.Scan("leases", Prefix(mig_id_));
    plain_indexes_ = raw.Scan("indexes", Prefix(plain_id_));
    const std::vector<index::IndexSpec> specs = Specs(raw, mig_id_);
    ASSERT_EQ(specs.size(), 4u);
    // What a current store holds is what GenerateKeys gives: the expected
    // state is well defined.
    ASSERT_EQ(Entries(mig_id_, specs, want_docs_, false), want_indexes_);

    rocksdb::WriteBatch batch;
    batch.Delete(raw.cf("catalog"), "meta:format_version");
    std::map<std::string, std::string> old_docs;
    int moved = 0;
    for (const auto& [key, value] : want_docs_) {
      RecordView rec;
      ASSERT_OK(DecodeRecord(value, &rec));
      bson_value_t id;
      ASSERT_TRUE(GetId(&rec.doc, &id));
      const std::string old_key = Prefix(mig_id_) + Enc1(id);
      old_docs[old_key] = value;
      if (old_key == key) continue;
      ++moved;
      batch.Delete(raw.cf("docs"), key);
      batch.Put(raw.cf("docs"), old_key, value);
      auto lease = want_leases_.find(key);
      if (lease != want_leases_.end()) {
        batch.Delete(raw.cf("leases"), key);
        batch.Put(raw.cf("leases"), old_key, lease->second);
      }
    }
    EXPECT_EQ(moved, 4);  // the four ids with an inexact decimal
    for (const auto& [key, value] : want_indexes_) batch.Delete(raw.cf("indexes"), key);
    const std::map<std::string, std::string> old_entries = Entries(mig_id_, specs, old_docs, true);
    for (const auto& [key, value] : old_entries) batch.Put(raw.cf("indexes"), key, value);
    ASSERT_TRUE(raw.db()->Write(rocksdb::WriteOptions(), &batch).ok());
    // The two formats differ: otherwise the test proves nothing.
    ASSERT_NE(old_entries, want_indexes_);
    ASSERT_NE(old_docs, want_docs_);
  }

  // The store is version 2 with exactly the bytes a current store holds.
  void ExpectMigrated() {
    {
      auto db = Open();
      ASSERT_OK(db);
      // Every _id is found, also by another cohort and type where equal.
      for (int i = 0; i < static_cast<int>(sizeof(kIds) / sizeof(kIds[0])); ++i) {
        FindRequest req;
        req.ns = kMig;
        bson_t* f = bson_new();
        BSON_APPEND_VALUE(f, "_id", &IdValue(i).get());
        req.filter = Document::Adopt(f);
        auto r = (*db)->Find(req);
        ASSERT_OK(r);
        EXPECT_EQ(r->docs.size(), 1u) << kIds[i];
      }
      // Indexes answer as the collection scan does.
      for (const char* filter : {R"({"v": 5})", R"({"v": {"$gt": 5}})", R"({"v": {"$lt": 0.1}})",
                                 R"({"v": {"$gte": {"$numberDecimal": "0.1"}}})", R"({"v": {"$lte": -5}})"}) {
        for (const char* hint : {"v_asc", "v_desc", "vw_u"}) {
          FindRequest a, b;
          a.ns = b.ns = kMig;
          a.filter = b.filter = test::Json(filter);
          a.sort = b.sort = test::Json(R"({"_id": 1})");
          a.hint = NameHint(hint);
          b.hint = NaturalHint();
          auto ra = (*db)->Find(a);
          auto rb = (*db)->Find(b);
          ASSERT_OK(ra);
          ASSERT_OK(rb);
          ASSERT_EQ(ra->docs.size(), rb->docs.size()) << filter << " " << hint;
        }
      }
      // The lease moved with its document.
      auto held = (*db)->AcquireLease(kMig, IdValue(0).get(), 1000, "other");
      EXPECT_THAT(held, test::StatusIs(ErrorCode::kLeaseHeld));
    }
    Raw raw(dir_.path());
    std::string version;
    ASSERT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("catalog"), "meta:format_version", &version).ok());
    EXPECT_EQ(DecodeFixed32BE(version.data()), 2u);
    EXPECT_EQ(raw.Scan("docs", Prefix(mig_id_)), want_docs_);
    EXPECT_EQ(raw.Scan("indexes", Prefix(mig_id_)), want_indexes_);
    EXPECT_EQ(raw.Scan("leases", Prefix(mig_id_)), want_leases_);
    EXPECT_EQ(raw.Scan("indexes", Prefix(plain_id_)), plain_indexes_);
  }

  test::TempDir dir_;
  uint32_t mig_id_ = 0, plain_id_ = 0;
  std::map<std::string, std::string> want_docs_, want_indexes_, want_leases_, plain_indexes_;
};

TEST_F(KeyFormatMigrationTest, NewStoreRecordsFormat2) {
  { ASSERT_OK(Open()); }
  Raw raw(dir_.path());
  std::string version;
  ASSERT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("catalog"), "meta:format_version", &version).ok());
  EXPECT_EQ(DecodeFixed32BE(version.data()), 2u);
}

TEST_F(KeyFormatMigrationTest, Format1StoreIsMigratedOnOpen) {
  Populate();
  DowngradeToFormat1();
  ExpectMigrated();
  // Opening again changes nothing.
  ExpectMigrated();
}

TEST_F(KeyFormatMigrationTest, MigrationStoppedAtAnyStepMigratesAgain) {
  Populate();
  DowngradeToFormat1();
  const std::string base = dir_.path() + "_format1";
  std::filesystem::remove_all(base);
  std::filesystem::copy(dir_.path(), base, std::filesystem::copy_options::recursive);
  int stops = 0;
  for (int stop = 1;; ++stop) {
    SCOPED_TRACE("stopped after step " + std::to_string(stop));
    std::filesystem::remove_all(dir_.path());
    std::filesystem::copy(base, dir_.path(), std::filesystem::copy_options::recursive);
    DBImpl::TEST_StopMigrationAfter(stop);
    auto db = Open();
    DBImpl::TEST_StopMigrationAfter(-1);
    if (db.ok()) break;  // fewer steps than `stop`: it finished
    EXPECT_THAT(db, test::StatusIs(ErrorCode::kInternalError));
    ++stops;
    {
      Raw raw(dir_.path());  // still version 1
      std::string version;
      EXPECT_TRUE(raw.db()->Get(rocksdb::ReadOptions(), raw.cf("catalog"), "meta:format_version", &version).IsNotFound());
    }
    ExpectMigrated();
    if (HasFatalFailure()) break;
  }
  // One write of moved documents, and a delete and a build per index.
  EXPECT_EQ(stops, 1 + 2 * 4);
  std::filesystem::remove_all(base);
}

TEST_F(KeyFormatMigrationTest, NewerFormatIsRefused) {
  { ASSERT_OK(Open()); }
  {
    Raw raw(dir_.path());
    std::string v;
    PutFixed32BE(&v, 3);
    ASSERT_TRUE(raw.db()->Put(rocksdb::WriteOptions(), raw.cf("catalog"), "meta:format_version", v).ok());
  }
  EXPECT_THAT(Open(), test::StatusIs(ErrorCode::kIllegalOperation));
}

}  // namespace
}  // namespace gatedb
