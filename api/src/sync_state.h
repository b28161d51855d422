// File: api/src/sync_state.h
//
// Where upstream sync (api/sync) keeps its state in a data directory, shared
// with the commands that report and resolve it (syncStatus, syncResolve in
// api/commands/sync_commands.cc).  A persistent layout: do not rename.
//
// Database "__gatedb_sync":
//   checkpoints  {_id: "<db.coll>", pushSeq, token, initialized, batch};
//                {_id: "$origin", name}
//   conflicts    {_id: {ns, id}, local, upstream, base, policy, at}
// Side records (DBImpl::PutSideRecord), key "<db.coll>\0<encoded _id>":
//   sync.base     {id, doc (the last synced state without the version
//                 field; null: absent), upVersion, pending, conflict}: one
//                 per document synced, written with the document's change
//   sync.pending  {id}: the bases with pending set (what a merge left for
//                 the push), so the push reads those and not every base
// and, key "<db.coll>":
//   sync.inflight {batch, docs: [{id, doc, upVersion}]}: the batch a push
//                 is sending, recorded before it is sent
// Upstream: "gatedb_sync.checkpoints" {_id: "<origin>|<db.coll>", batch, origin, ns, at}.
#ifndef GATEDB_API_SRC_SYNC_STATE_H_
#define GATEDB_API_SRC_SYNC_STATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "gatedb/document.h"
#include "gatedb/status.h"
#include "gatedb/value.h"

namespace gatedb {

class DBImpl;
struct WriteScope;

namespace sync_state {

constexpr char kDb[] = "__gatedb_sync";
constexpr char kCheckpoints[] = "checkpoints";
constexpr char kBaseSpace[] = "sync.base";
constexpr char kPendingSpace[] = "sync.pending";
constexpr char kInflightSpace[] = "sync.inflight";
constexpr char kConflicts[] = "conflicts";
constexpr char kOriginId[] = "$origin";
constexpr char kUpstreamDb[] = "gatedb_sync";
constexpr char kUpstreamCheckpoints[] = "checkpoints";
// The writeContext.agentId of every write sync makes here.
constexpr char kAgent[] = "gatedb.sync";

// A document's base: what this side and the upstream last agreed on.
struct Base {
  bool exists = false;
  std::optional<Document> doc;  // the last synced state (no version field); absent: deleted
  int64_t up_version = -1;      // the upstream's version of it (-1: none known)
  bool pending = false;         // a merge left a local change for the push
  bool conflict = false;        // an unresolved conflict (in "conflicts")
};

// With `scope`, in that transaction (the read locks the record).
StatusOr<Base> LoadBase(DBImpl* db, WriteScope* scope, const std::string& ns, const Value& id);
// `was_pending`: the record it replaces had pending set (its entry in
// sync.pending is removed only then).
Status SaveBase(DBImpl* db, WriteScope* scope, const std::string& ns, const Value& id, const Base& base,
                bool was_pending);
// Several bases in one write of their own, outside any transaction (after
// a push: only this process's sync writes these records meanwhile).
struct BaseWrite {
  Value id;
  Base base;
  bool was_pending = false;
};
Status SaveBases(DBImpl* db, const std::string& ns, const std::vector<BaseWrite>& writes);
// Every base of `ns`, and every one of them with pending set.
Status ForEachBase(DBImpl* db, const std::string& ns, const std::function<Status(const Value& id, const Base&)>& fn);
Status ForEachPendingBase(DBImpl* db, const std::string& ns, const std::function<Status(const Value& id)>& fn);

// The batch in flight for `ns`, if any.
StatusOr<std::optional<Document>> LoadInflight(DBImpl* db, const std::string& ns);
Status SaveInflight(DBImpl* db, const std::string& ns, const Document& rec);
Status DeleteInflight(DBImpl* db, const std::string& ns);

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
