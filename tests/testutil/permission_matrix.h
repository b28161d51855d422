// The roles x actions x paths matrix of issue 18, shared by the in-process
// test (tests/api/permissions_test.cc, through Database::As) and the wire
// test (tests/server/wire_auth_test.cc, through SCRAM-authenticated
// connections): the same users, the same commands, the same answers.
#ifndef GATEDB_TESTS_TESTUTIL_PERMISSION_MATRIX_H_
#define GATEDB_TESTS_TESTUTIL_PERMISSION_MATRIX_H_

#include <string>
#include <vector>

#include "gatedb/db.h"
#include "gatedb/document.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace test {

// Run by the owner first.  The email agent may set an order's status and
// notes (speaking for "email"), but not its price; the planner reads
// everything and writes nothing; the clerk inserts orders with item and
// qty only; the shop writer has MongoDB's readWrite.
inline const std::vector<std::string>& MatrixSetup() {
  static const std::vector<std::string> kSetup = {
      R"({"createRole": "orderStatus", "$db": "admin", "roles": [],
            "privileges": [{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"],
                            "fields": ["status", "notes"], "sources": ["email"]}]})",
      R"({"createRole": "clerk", "$db": "admin", "roles": [],
            "privileges": [{"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert"],
                            "fields": ["item", "qty"]}]})",
      R"({"createUser": "email", "pwd": "e-pass", "roles": [{"role": "orderStatus", "db": "admin"}], "$db": "admin"})",
      R"({"createUser": "planner", "pwd": "p-pass", "roles": [{"role": "read", "db": "shop"}], "$db": "admin"})",
      R"({"createUser": "clerk", "pwd": "c-pass", "roles": [{"role": "clerk", "db": "admin"}], "$db": "admin"})",
      R"({"createUser": "writer", "pwd": "w-pass", "roles": ["readWrite"], "$db": "shop"})",
      R"({"insert": "orders", "$db": "shop", "documents": [{"_id": 1, "status": "new", "price": 10, "notes": ""}]})",
  };
  return kSetup;
}

struct MatrixCase {
  const char* user;
  const char* user_db;
  const char* password;
  const char* command;
  int code;               // 0: allowed
  const char* path = "";  // the refused path, for a path refusal
};

// In order: later cases see what earlier allowed ones wrote.
inline const std::vector<MatrixCase>& MatrixCases() {
  static const std::vector<MatrixCase> kCases = {
      // reads
      {"planner", "admin", "p-pass", R"({"find": "orders", "filter": {}, "$db": "shop"})", 0},
      {"planner", "admin", "p-pass", R"({"count": "orders", "$db": "shop"})", 0},
      {"email", "admin", "e-pass", R"({"find": "orders", "filter": {}, "$db": "shop"})", 0},
      {"email", "admin", "e-pass", R"({"find": "customers", "filter": {}, "$db": "shop"})", 13},
      {"clerk", "admin", "c-pass", R"({"find": "orders", "filter": {}, "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"find": "orders", "filter": {}, "$db": "shop"})", 0},
      {"writer", "shop", "w-pass", R"({"find": "orders", "filter": {}, "$db": "crm"})", 13},
      {"email", "admin", "e-pass", R"({"aggregate": "orders", "pipeline": [{"$lookup": {"from": "customers", "localField": "c",
         "foreignField": "_id", "as": "c"}}], "cursor": {}, "$db": "shop"})", 13},
      // inserts
      {"planner", "admin", "p-pass", R"({"insert": "orders", "documents": [{"_id": 2}], "$db": "shop"})", 13},
      {"email", "admin", "e-pass", R"({"insert": "orders", "documents": [{"_id": 2, "status": "x"}], "$db": "shop"})", 13},
      {"clerk", "admin", "c-pass", R"({"insert": "orders", "documents": [{"_id": 3, "item": "pen", "qty": 2}], "$db": "shop"})", 0},
      {"clerk", "admin", "c-pass", R"({"insert": "orders", "documents": [{"_id": 4, "item": "pen", "price": 1}], "$db": "shop"})",
       13, "price"},
      {"writer", "shop", "w-pass", R"({"insert": "orders", "documents": [{"_id": 5, "anything": 1}], "$db": "shop"})", 0},
      // updates
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "paid"}}}],
         "$db": "shop"})", 0},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"price": 0}}}],
         "$db": "shop"})", 13, "price"},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"notes": "n", "price": 1}}}],
         "$db": "shop"})", 13, "price"},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "x"}},
         "upsert": true}], "$db": "shop"})", 13},  // an upsert needs insert too
      {"planner", "admin", "p-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "x"}}}],
         "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"price": 11}}}],
         "$db": "shop"})", 0},
      {"email", "admin", "e-pass", R"({"findAndModify": "orders", "query": {"_id": 1}, "update": {"$set": {"price": 2}},
         "$db": "shop"})", 13},
      {"email", "admin", "e-pass", R"({"findAndModify": "orders", "query": {"_id": 1}, "update": {"$set": {"status": "shipped"}},
         "$db": "shop"})", 0},
      // sources and the agent's name
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "s"}}}],
         "writeContext": {"source": "email"}, "$db": "shop"})", 0},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "s"}}}],
         "writeContext": {"source": "human"}, "$db": "shop"})", 13},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "s"}}}],
         "writeContext": {"agentId": "planner"}, "$db": "shop"})", 13},
      {"email", "admin", "e-pass", R"({"update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$set": {"status": "s"}}}],
         "writeContext": {"agentId": "email"}, "$db": "shop"})", 0},
      // deletes
      {"email", "admin", "e-pass", R"({"delete": "orders", "deletes": [{"q": {"_id": 1}, "limit": 1}], "$db": "shop"})", 13},
      {"planner", "admin", "p-pass", R"({"delete": "orders", "deletes": [{"q": {"_id": 1}, "limit": 1}], "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"delete": "orders", "deletes": [{"q": {"_id": 5}, "limit": 1}], "$db": "shop"})", 0},
      // catalog and administration
      {"writer", "shop", "w-pass", R"({"createIndexes": "orders", "indexes": [{"key": {"status": 1}, "name": "s"}], "$db": "shop"})", 0},
      {"planner", "admin", "p-pass", R"({"createIndexes": "orders", "indexes": [{"key": {"qty": 1}, "name": "q"}], "$db": "shop"})", 13},
      {"planner", "admin", "p-pass", R"({"listIndexes": "orders", "$db": "shop"})", 0},
      {"planner", "admin", "p-pass", R"({"drop": "orders", "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"collMod": "orders", "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"createUser": "x", "pwd": "x", "roles": [], "$db": "shop"})", 13},
      {"writer", "shop", "w-pass", R"({"usersInfo": "writer", "$db": "shop"})", 0},   // one's own
      {"writer", "shop", "w-pass", R"({"usersInfo": "email", "$db": "admin"})", 13},
      {"planner", "admin", "p-pass", R"({"journal": 1, "afterSeq": 0})", 13},
      {"planner", "admin", "p-pass", R"({"serverStatus": 1})", 13},
      {"planner", "admin", "p-pass", R"({"ping": 1})", 0},
      {"planner", "admin", "p-pass", R"({"connectionStatus": 1})", 0},
  };
  return kCases;
}

// The command's code (0: ok), and for a write the first write error's
// code and refused path.
inline int MatrixReplyCode(const Document& reply, std::string* path) {
  if (IntAt(reply.bson(), "ok") != 1) return static_cast<int>(IntAt(reply.bson(), "code"));
  if (HasPath(reply.bson(), "writeErrors.0.code")) {
    *path = StrAt(reply.bson(), "writeErrors.0.errInfo.path");
    return static_cast<int>(IntAt(reply.bson(), "writeErrors.0.code"));
  }
  return 0;
}

// What the matrix's allowed writes did, and only that, read by the owner.
inline void ExpectMatrixOutcome(Database* owner) {
  Collection orders = owner->GetCollection("shop", "orders");
  auto order = orders.FindOne(Json(R"({"_id": 1})").view());
  ASSERT_OK(order);
  ASSERT_TRUE(order->has_value());
  EXPECT_EQ(StrAt((*order)->bson(), "status"), "s");
  EXPECT_EQ(IntAt((*order)->bson(), "price"), 11);
  auto clerked = orders.FindOne(Json(R"({"_id": 3})").view());
  ASSERT_OK(clerked);
  EXPECT_TRUE(clerked->has_value());
  auto refused = orders.FindOne(Json(R"({"_id": 4})").view());
  ASSERT_OK(refused);
  EXPECT_FALSE(refused->has_value());
}

}  // namespace test
}  // namespace gatedb

#endif  // GATEDB_TESTS_TESTUTIL_PERMISSION_MATRIX_H_
