// File: api/src/database_rep.h (internal)
//
// What a Database holds: the engine (DBImpl), the live transactions and
// sessions (TxnManager), and the command dispatcher.  The public header
// names none of them.
#ifndef GATEDB_API_SRC_DATABASE_REP_H_
#define GATEDB_API_SRC_DATABASE_REP_H_

#include <memory>

#include "api/commands/command_dispatcher.h"
#include "api/src/txn_manager.h"
#include "engine/storage/db_impl.h"
#include "gatedb/db.h"

namespace gatedb {

struct Database::Rep {
  std::unique_ptr<DBImpl> db;
  std::unique_ptr<TxnManager> txns;
  std::unique_ptr<CommandDispatcher> dispatcher;
};

}  // namespace gatedb

#endif  // GATEDB_API_SRC_DATABASE_REP_H_
