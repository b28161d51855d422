// File: gatedb/db.h
//
// Database: one open gatedb data directory, shared by every thread of the
// process (RocksDB's lock keeps a second process out).  Commands and the
// typed Collection API share one implementation.
//
//   auto db = gatedb::Database::Open("./gatedb-data");
//   if (!db.ok()) { std::cerr << db.status().ToString(); return 1; }
//   gatedb::Document reply = (*db)->RunCommand(
//       gatedb::Document::FromJson(R"({"insert": "orders", "documents": [{"_id": 1}]})")->view());
//
// Thread safety: all methods may be called concurrently.
#ifndef GATEDB_DB_H_
#define GATEDB_DB_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gatedb/collection.h"
#include "gatedb/document.h"
#include "gatedb/options.h"
#include "gatedb/status.h"

namespace gatedb {

class DBImpl;
class CommandDispatcher;

struct CreateCollectionOptions {
  // The store-owned version field of every document.  Default: "version"
  std::string version_field = "version";
};

class Database {
 public:
  // Opens (creating, by default) the data directory at `path`.
  // Errors: InternalError when the directory cannot be opened or is locked
  // by another process; DataCorruptionDetected.
  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path, const Options& options = Options());
  ~Database();

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one MongoDB command ({insert: "orders", documents: [...], $db:
  // "shop"}).  Always returns a reply: {ok: 1, ...} on success, or {ok: 0,
  // code, codeName, errmsg} (see PROTOCOL.md).  Never throws.
  Document RunCommand(DocumentView command);

  // A handle to collection `name` of database `db` (default "test").
  Collection GetCollection(std::string_view name) { return GetCollection("test", name); }
  Collection GetCollection(std::string_view db, std::string_view name);

  // Errors: NamespaceExists, InvalidNamespace, InvalidOptions.
  Status CreateCollection(std::string_view db, std::string_view name,
                          const CreateCollectionOptions& options = CreateCollectionOptions());
  // Errors: NamespaceNotFound.
  Status DropCollection(std::string_view db, std::string_view name);
  std::vector<std::string> ListCollectionNames(std::string_view db = "test");

  // For the engine-facing parts of the API; not for applications.
  DBImpl* impl() { return impl_.get(); }

 private:
  Database() = default;
  std::unique_ptr<DBImpl> impl_;
  std::unique_ptr<CommandDispatcher> dispatcher_;
};

}  // namespace gatedb

#endif  // GATEDB_DB_H_
