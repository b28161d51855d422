// File: gatedb/options.h
//
// Options for opening a database and for individual calls.  Every option
// states its default.
#ifndef GATEDB_OPTIONS_H_
#define GATEDB_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace gatedb {

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
};

struct WriteOptions {
  // fsync before acknowledging (MongoDB's `j: true`); ORed with Options::sync.
  // Default: false
  bool sync = false;
  // For multi-statement calls: stop at the first failing statement.
  // Default: true
  bool ordered = true;
};

}  // namespace gatedb

#endif  // GATEDB_OPTIONS_H_
