// File: engine/storage/rocks_status.h
//
// The one place where a rocksdb::Status becomes a gatedb::Status.
#ifndef GATEDB_ENGINE_STORAGE_ROCKS_STATUS_H_
#define GATEDB_ENGINE_STORAGE_ROCKS_STATUS_H_

#include <rocksdb/status.h>

#include "gatedb/status.h"

namespace gatedb {

// Busy, TryAgain and lock time-outs become WriteConflict (112, retriable);
// Corruption becomes DataCorruptionDetected (301); NoSpace OutOfDiskSpace
// (14031); anything else InternalError with RocksDB's message.
Status FromRocks(const rocksdb::Status& s);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_ROCKS_STATUS_H_
