// File: api/src/sync_state.h
//
// Where upstream sync (api/sync) keeps its state in a data directory, shared
// with the commands that report and resolve it (syncStatus, syncResolve in
// api/commands/sync_commands.cc).  A persistent layout: do not rename.
//
// Database "__gatedb_sync":
//   checkpoints  {_id: "<db.coll>", pushSeq, token, initialized, batch};
//                {_id: "$origin", name}
//   base         {_id: {ns, id}, doc (the last synced state without the
//                version field; null: absent), upVersion, pending, conflict}
//   inflight     {_id: "<db.coll>", batch, docs: [{id, doc, upVersion}]}
//   conflicts    {_id: {ns, id}, local, upstream, base, policy, at}
// Upstream: "gatedb_sync.checkpoints" {_id: "<origin>|<db.coll>", batch, origin, ns, at}.
#ifndef GATEDB_API_SRC_SYNC_STATE_H_
#define GATEDB_API_SRC_SYNC_STATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "gatedb/status.h"
#include "gatedb/value.h"

namespace gatedb {

class DBImpl;

namespace sync_state {

constexpr char kDb[] = "__gatedb_sync";
constexpr char kCheckpoints[] = "checkpoints";
constexpr char kBase[] = "base";
constexpr char kInflight[] = "inflight";
constexpr char kConflicts[] = "conflicts";
constexpr char kOriginId[] = "$origin";
constexpr char kUpstreamDb[] = "gatedb_sync";
constexpr char kUpstreamCheckpoints[] = "checkpoints";
// The writeContext.agentId of every write sync makes here.
constexpr char kAgent[] = "gatedb.sync";

// What the next push of `ns` ("db.coll") has to look at: each document the
// journal shows changed after seq `after` by anyone but sync, then each
// whose base a merge left pending; `add` may see an _id more than once,
// with the writeContext.source of that write ("" when it had none, and for
// a pending base).
// *upto: the journal seq read up to.  Errors: ChangeStreamHistoryLost when
// the journal no longer reaches `after` (the caller compares every
// document instead), and the reads' errors.
Status PendingPush(DBImpl* db, const std::string& ns, uint64_t after,
                   const std::function<void(const Value&, std::string_view source)>& add, uint64_t* upto);

}  // namespace sync_state
}  // namespace gatedb

#endif  // GATEDB_API_SRC_SYNC_STATE_H_
