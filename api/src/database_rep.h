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

// Shared by every handle of one store (Database::As): the store closes when
// the last handle goes.  Members are destroyed in reverse order, so live
// transactions abort before the store closes.
struct Database::Rep {
  std::unique_ptr<DBImpl> db;
  std::unique_ptr<TxnManager> txns;
  std::unique_ptr<CommandDispatcher> dispatcher;
  bool unauthenticated_is_root = true;

  // Who a call through a handle with `identity` runs as: null for the
  // owner (no identity, when unauthenticated callers are root), a principal
  // without privileges for an unauthenticated caller, else the user's with
  // its roles as they are now.  Errors: UserNotFound.
  StatusOr<std::shared_ptr<const auth::Principal>> Caller(const Identity& identity) const;
};

// Callers check a principal with Principal::CheckNamespace and skip it for
// the owner (a null principal), so that the owner's calls build nothing.
// A lease is a write to its document, held in the caller's own name.
Status CheckLeaseCall(const auth::Principal& caller, const std::string& db, const std::string& coll,
                      const std::string& holder);

}  // namespace gatedb

#endif  // GATEDB_API_SRC_DATABASE_REP_H_
