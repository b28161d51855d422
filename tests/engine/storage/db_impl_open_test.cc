// ValidateNamespace (declared in engine/storage/requests.h, defined in
// db_impl_open.cc): database and collection names as MongoDB validates them
// (NamespaceString::validDBName / validCollectionName, the 255-byte
// namespace limit, and the refusal of user "system." collections).
#include <string>

#include "engine/storage/requests.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

using test::StatusIs;

Status Check(const std::string& db, const std::string& coll) { return ValidateNamespace(Namespace{db, coll}); }

TEST(ValidateNamespaceTest, OrdinaryNamesAreValid) {
  EXPECT_OK(Check("test", "orders"));
  EXPECT_OK(Check("my_db-1", "_private"));
  EXPECT_OK(Check("Shop", "Orders2024"));
  EXPECT_OK(Check("d", "x"));
  EXPECT_OK(Check("bücher", "ärger"));  // UTF-8 is fine
}

TEST(ValidateNamespaceTest, CollectionNamesMayContainDots) {
  // "db.a.b" is database "db", collection "a.b".
  EXPECT_OK(Check("test", "a.b"));
  EXPECT_OK(Check("test", "a.b.c"));
  EXPECT_OK(Check("test", "fs.chunks"));
}

TEST(ValidateNamespaceTest, EmptyNamesAreInvalid) {
  EXPECT_THAT(Check("", "c"), StatusIs(ErrorCode::kInvalidNamespace));
  EXPECT_THAT(Check("test", ""), StatusIs(ErrorCode::kInvalidNamespace));
  EXPECT_THAT(Check("", ""), StatusIs(ErrorCode::kInvalidNamespace));
}

TEST(ValidateNamespaceTest, DatabaseNameCharactersRefusedOnEveryPlatform) {
  // MongoDB refuses these in a database name everywhere: / \ . space " $ NUL.
  for (char c : std::string("/\\. \"$", 6)) {
    std::string name = std::string("ab") + c + "cd";
    EXPECT_THAT(Check(name, "c"), StatusIs(ErrorCode::kInvalidNamespace)) << "'" << c << "'";
    EXPECT_THAT(Check(std::string(1, c) + "db", "c"), StatusIs(ErrorCode::kInvalidNamespace)) << "'" << c << "'";
  }
  EXPECT_THAT(Check(std::string("ab\0cd", 5), "c"), StatusIs(ErrorCode::kInvalidNamespace));
}

TEST(ValidateNamespaceTest, DatabaseNamesAreShorterThan64Bytes) {
  // MongoDB: "Database names cannot be empty and must have fewer than 64
  // characters" (validDBName refuses size >= 64).
  EXPECT_OK(Check(std::string(63, 'd'), "c"));
  EXPECT_THAT(Check(std::string(64, 'd'), "c"), StatusIs(ErrorCode::kInvalidNamespace));
  EXPECT_THAT(Check(std::string(65, 'd'), "c"), StatusIs(ErrorCode::kInvalidNamespace));
}

TEST(ValidateNamespaceTest, CollectionNamesWithDollarOrNulAreInvalid) {
  for (const std::string& coll : {std::string("$cmd"), std::string("a$b"), std::string("ab$"),
                                  std::string("oplog.$main"), std::string("a\0b", 3), std::string("\0", 1)}) {
    EXPECT_THAT(Check("test", coll), StatusIs(ErrorCode::kInvalidNamespace)) << coll;
  }
}

TEST(ValidateNamespaceTest, CollectionNamesMayNotStartWithADot) {
  EXPECT_THAT(Check("test", ".a"), StatusIs(ErrorCode::kInvalidNamespace));
  EXPECT_THAT(Check("test", "."), StatusIs(ErrorCode::kInvalidNamespace));
}

TEST(ValidateNamespaceTest, SystemCollectionsAreReserved) {
  EXPECT_THAT(Check("test", "system.foo"), StatusIs(ErrorCode::kInvalidNamespace));
  EXPECT_THAT(Check("test", "system.users"), StatusIs(ErrorCode::kInvalidNamespace));
  // Only the "system." prefix is reserved.
  EXPECT_OK(Check("test", "system"));
  EXPECT_OK(Check("test", "systems.foo"));
  EXPECT_OK(Check("test", "my.system.foo"));
}

TEST(ValidateNamespaceTest, FullNamespaceIsAtMost255Bytes) {
  // "d" + "." + 253 bytes = 255.
  EXPECT_OK(Check("d", std::string(253, 'c')));
  EXPECT_THAT(Check("d", std::string(254, 'c')), StatusIs(ErrorCode::kInvalidNamespace));
  // The database name counts too.
  const std::string db(60, 'd');
  EXPECT_OK(Check(db, std::string(255 - 61, 'c')));
  EXPECT_THAT(Check(db, std::string(255 - 60, 'c')), StatusIs(ErrorCode::kInvalidNamespace));
}

TEST(ValidateNamespaceTest, TheMessageNamesTheOffendingName) {
  Status s = Check("bad/db", "c");
  EXPECT_THAT(s.reason(), ::testing::HasSubstr("bad/db"));
  s = Check("test", "bad$coll");
  EXPECT_THAT(s.reason(), ::testing::HasSubstr("bad$coll"));
}

}  // namespace
}  // namespace gatedb
