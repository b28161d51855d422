// File: gatedb/options.h
//
// Options for opening a database and for individual calls.  Every option
// states its default.
#ifndef GATEDB_OPTIONS_H_
#define GATEDB_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace gatedb {

class Transaction;

// Who a caller is: a user made with createUser, named by its name and the
// database it was created in (MongoDB's authentication database).  The
// user's roles decide what its calls may read and write (the write gate
// checks them first), and it is the agent of every write it makes
// (writeContext.agentId).
struct Identity {
  std::string user;         // Default: "" (none)
  std::string db = "admin"; // Default: "admin"
  bool empty() const { return user.empty(); }
};

struct Options {
  // Create the data directory when it does not exist.
  // Default: true
  bool create_if_missing = true;

  // Fail to open when the data directory already holds a database.
  // Default: false
  bool error_if_exists = false;

  // Make every acknowledged write durable across power loss (fsync of
  // RocksDB's WAL before the call returns), as MongoDB's `j: true`.  A single
  // write can ask for it with WriteOptions::sync.
  // Default: false (written to the OS before the call returns; survives a
  // process crash, not a power loss)
  bool sync = false;

  // How long a write waits for another writer's lock on the same document
  // before failing with WriteConflict (after internal retries).
  // Default: 1000
  int64_t lock_timeout_ms = 1000;

  // Size of RocksDB's block cache.
  // Default: 64 MiB
  size_t block_cache_bytes = 64u << 20;

  // The journal keeps events this long (then a background thread collects
  // them; readers asking for collected events get an error, never a gap).
  // Default: 7 days
  int64_t journal_retention_ms = 7LL * 24 * 3600 * 1000;
  // And at most this many events (0: no count limit).
  // Default: 0
  uint64_t journal_max_events = 0;

  // How long the idempotency log keeps a (taskId, writeSeq) key and its
  // reply; a retry after that runs again (the version gate and unique keys
  // still apply).  Default: 7 days
  int64_t idempotency_retention_sec = 7LL * 24 * 3600;

  // How often the TTL monitor deletes the documents that TTL indexes
  // (expireAfterSeconds) say have expired; each deletion goes through the
  // write gate and is journaled with writeContext {agentId: "gatedb.ttl",
  // source: "ttl"}.  0 turns the monitor off.  Default: 60 s (MongoDB's)
  int64_t ttl_interval_ms = 60 * 1000;

  // A transaction started by a command (a session's startTransaction: the
  // wire server, `gatedb run`) that is still open this long is aborted, and
  // the locks it holds are released.  Database::StartTransaction takes its
  // own TransactionOptions::lifetime_ms.  Default: 60 s (MongoDB's
  // transactionLifetimeLimitSeconds)
  int64_t transaction_lifetime_ms = 60 * 1000;

  // A cursor (find, aggregate) left without a getMore this long is closed
  // and its id answers CursorNotFound.  Default: 10 minutes (MongoDB's)
  int64_t cursor_timeout_ms = 10 * 60 * 1000;

  // Memory one blocking sort (find's sort without an index that gives the
  // order, $sort, $group) may hold before it fails with
  // QueryExceededMemoryLimitNoDiskUseAllowed, or spills to files in
  // "<data directory>/_tmp" when the command allows disk use.
  // Default: 100 MiB (MongoDB's)
  size_t sort_memory_bytes = 100u << 20;

  // Called as an index build advances (every 1,000 documents and at the
  // end) with the namespace, the index name, the documents indexed so far
  // and the collection's document count when the build began; `gatedb run`
  // prints it for large collections.  Runs on the building thread.
  // Default: null
  std::function<void(const std::string& ns, const std::string& index, uint64_t done, uint64_t total)>
      index_build_progress;

  // The clock (ms since the epoch) for retention and event times; tests
  // inject one.  Default: null (the system clock)
  std::function<int64_t()> clock_ms;

  // The RocksDB Env the store runs on, for fault-injection tests
  // (tests/fault/) or an in-memory store; the caller keeps it alive until
  // the Database is closed.
  // Default: null (the default Env)
  rocksdb::Env* env = nullptr;

  // Who calls through the Database that Open returns: every call (commands,
  // the typed API, transactions) runs as this user, which must exist
  // (Open fails with UserNotFound otherwise).  Database::As gives handles
  // that act as other users.
  // Default: none
  Identity identity;

  // Whether a caller without an identity (no Options::identity) may do
  // anything, as the data directory's owner.  False: such a caller may only
  // run ping and hello until it has an identity.
  // Default: true (round-1 programs keep working)
  bool unauthenticated_is_root = true;
};

// Who writes, and why: recorded in the journal with every write, used by
// conflict policies, and (task_id + write_seq) the idempotency key.
// PROTOCOL.md's `writeContext: {agentId, taskId, writeSeq, source, readAt}`.
struct WriteContext {
  std::string agent_id;               // Default: "" (unknown)
  std::string task_id;                // Default: ""
  std::optional<int64_t> write_seq;   // Default: none
  std::string source;                 // Default: ""
  // When the writer read its basis, in ms since the epoch.  Checked against
  // a collection's maxBasisAgeMs.  Default: none
  std::optional<int64_t> read_at_ms;

  bool empty() const {
    return agent_id.empty() && task_id.empty() && !write_seq && source.empty() && !read_at_ms;
  }
};

struct WriteOptions {
  // fsync before acknowledging (MongoDB's `j: true`); ORed with Options::sync.
  // Default: false
  bool sync = false;
  // For multi-statement calls: stop at the first failing statement.
  // Default: true
  bool ordered = true;
  // Who writes and why.  Default: empty
  WriteContext context;
  // The version the writer read (PROTOCOL.md's basisVersion): the write
  // goes through only while the document is still at it, else the call
  // fails with VersionConflict (errInfo: basisVersion, currentVersion,
  // current, conflictingFields, lastWriter, reason, suggestedAction).  Only
  // for calls that name one document.  Default: none (not gated)
  std::optional<int64_t> basis_version;
  // Run inside this transaction (gatedb/transaction.h).  Default: none
  Transaction* txn = nullptr;
  // Skip the collection's validator (MongoDB's bypassDocumentValidation).
  // Default: false
  bool bypass_document_validation = false;
};

}  // namespace gatedb

#endif  // GATEDB_OPTIONS_H_
