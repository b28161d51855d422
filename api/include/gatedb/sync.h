// File: gatedb/sync.h
//
// Upstream sync: an edge's data directory and an upstream that speaks
// MongoDB (Atlas, a replica set, or `gatedb serve` as a hub), kept in step
// for a list of collections, each local write reaching the upstream once.
//
//   gatedb::SyncOptions o;
//   o.upstream_uri = "mongodb://127.0.0.1:27017/?replicaSet=gatedb";
//   o.namespaces = {"shop.orders"};
//   auto sync = gatedb::Sync::Open(db.get(), o);
//   auto report = (*sync)->RunOnce();   // push what is pending, pull what is new
//
// How (docs/ARCHITECTURE.md, "Upstream sync"):
//   - Push: the local journal's writes since the push checkpoint, by
//     document, as conditional writes on the upstream: the filter names the
//     _id and the upstream version this side last saw, the update only the
//     paths that changed since then.  A batch is one upstream transaction
//     that also advances this origin's checkpoint document
//     (gatedb_sync.checkpoints), and the batch is recorded locally before it
//     is sent, so a push whose commit result is lost, or a process killed
//     at any point, is finished or dropped by the next run, never applied
//     twice.
//   - Pull: a change stream on each upstream collection; every change is
//     applied through the local write gate (writeContext agentId
//     "gatedb.sync", source "upstream") in the same local transaction that
//     stores the stream's resume token.  The first run takes the token, then
//     copies the collection.  This side's own writes coming back are
//     recognised by their upstream version and skipped.
//   - Both sides changed a document: a three-way decision against the last
//     synced state, by the local collection's conflict policy (fieldMerge:
//     disjoint paths merge, and with mergeIncrements numeric changes add;
//     otherwise the document is an unresolved conflict, listed by
//     syncStatus and kept out of the push until `syncResolve` picks a side).
//
// Thread safety: one RunOnce at a time per Sync; the Database stays usable
// by other threads meanwhile.
#ifndef GATEDB_SYNC_H_
#define GATEDB_SYNC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gatedb/db.h"
#include "gatedb/status.h"

namespace gatedb {

struct SyncOptions {
  // A MongoDB connection string (mongodb:// or mongodb+srv://; TLS and
  // credentials as the URI says).  Required.
  std::string upstream_uri;
  // "db.collection" names to sync.  Required, at least one.
  std::vector<std::string> namespaces;
  // This side's name on the upstream (its checkpoint documents).  Default:
  // one made at the first sync and kept in the data directory.
  std::string origin;
  // Documents per upstream transaction.  Default: 500
  int64_t batch_size = 500;
  // Who keeps the upstream's version field: "auto" (the upstream when it is
  // gatedb, else this side, with `$inc` in each push and 0 on insert),
  // "upstream", or "sync" (this side; what a plain MongoDB upstream needs).
  // Default: "auto"
  std::string upstream_versions = "auto";
  // How long a pull waits for more changes before it counts as caught up.
  // Default: 200 ms
  int64_t pull_wait_ms = 200;
  // Called with a line of progress for long runs.  Default: none
  std::function<void(const std::string&)> progress;
};

struct SyncReport {
  int64_t pushed = 0;     // documents written upstream
  int64_t pulled = 0;     // upstream changes applied here
  int64_t merged = 0;     // documents both sides changed, merged by the policy
  int64_t conflicts = 0;  // documents both sides changed that the policy left unresolved (new this run)
  int64_t skipped = 0;    // upstream changes this side already had (its own pushes)
  // {"pushed": n, "pulled": n, "merged": n, "conflicts": n, "skipped": n}
  std::string ToJson() const;
};

class Sync {
 public:
  // Connects (and checks that the upstream answers and can run change
  // streams).  Errors: InvalidOptions (no URI, a bad namespace),
  // FailedToParse (a bad URI), HostUnreachable, AuthenticationFailed, and
  // the upstream's own error (e.g. 40573 from a standalone mongod).
  static StatusOr<std::unique_ptr<Sync>> Open(Database* db, SyncOptions options);
  ~Sync();
  Sync(const Sync&) = delete;
  Sync& operator=(const Sync&) = delete;

  // One round: finishes or drops a batch a previous run left in flight,
  // pulls, pushes, and pulls again until nothing moves (at most a few
  // times).  Nothing pending is lost on an error: the next run goes on
  // from the checkpoints.
  StatusOr<SyncReport> RunOnce();

  struct Impl;

 private:
  explicit Sync(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gatedb

#endif  // GATEDB_SYNC_H_
