// File: engine/util/rocks_status.h
//
// The one place where a rocksdb::Status becomes a gatedb::Status.
#ifndef GATEDB_ENGINE_UTIL_ROCKS_STATUS_H_
#define GATEDB_ENGINE_UTIL_ROCKS_STATUS_H_

#include <rocksdb/status.h>

#include "gatedb/status.h"

namespace gatedb {

// Busy, TryAgain and lock time-outs become WriteConflict (112, retriable);
// Corruption becomes DataCorruptionDetected (301); NoSpace OutOfDiskSpace
// (14031); anything else InternalError with RocksDB's message.
Status FromRocks(const rocksdb::Status& s);

// The reason prefix of a WriteConflict that is a lock wait that timed out:
// the wait already lasted Options::lock_timeout_ms, so it is not retried.
constexpr char kLockWaitTimedOut[] = "write conflict: lock wait timed out";

}  // namespace gatedb

#endif  // GATEDB_ENGINE_UTIL_ROCKS_STATUS_H_
