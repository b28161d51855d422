#include "engine/util/rocks_status.h"

namespace gatedb {

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::OK();
  if (s.IsTimedOut()) {
    // Another writer (often an open transaction) held the document's lock
    // for the whole lock timeout.
    return Status(ErrorCode::kWriteConflict, std::string(kLockWaitTimedOut) + ": " + s.ToString());
  }
  if (s.IsBusy() || s.IsTryAgain() || s.IsDeadlock()) {
    return Status(ErrorCode::kWriteConflict, "write conflict: " + s.ToString());
  }
  if (s.IsMemoryLimit()) {
    return Status(ErrorCode::kTransactionTooLarge, "transaction too large: " + s.ToString());
  }
  if (s.IsExpired()) {
    return Status(ErrorCode::kTransactionExceededLifetimeLimitSeconds,
                  "the transaction exceeded its lifetime limit and was aborted");
  }
  if (s.IsCorruption()) return Status(ErrorCode::kDataCorruptionDetected, s.ToString());
  if (s.IsNoSpace()) return Status(ErrorCode::kOutOfDiskSpace, s.ToString());
  if (s.IsIOError() && s.ToString().find("No space left") != std::string::npos) {
    return Status(ErrorCode::kOutOfDiskSpace, s.ToString());
  }
  return Status(ErrorCode::kInternalError, "storage error: " + s.ToString());
}

}  // namespace gatedb
