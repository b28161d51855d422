// File: engine/projection/sorter.h
//
// Sorter: the blocking sort of find and of the $sort stage, with MongoDB's
// memory limit and its two ways out.
//
//   * A limit (top-k): with `limit` > 0 only the best `limit` rows are ever
//     kept, so `sort + limit` runs in memory proportional to the limit.
//   * allowDiskUse: when the rows held pass `max_memory_bytes`, they are
//     sorted and written to a run file in `temp_dir`; Finish() merges the
//     runs (one row per run in memory).  Without it, passing the limit is
//     QueryExceededMemoryLimitNoDiskUseAllowed (292), as in MongoDB.
//
// A row is a BSON document (what the sort keys come from) plus an opaque
// byte string carried with it (a caller's extra data: a document key,
// field versions).  Ties keep the order rows were added in (a stable sort),
// also across runs.
//
// Run files are named "sort-<pid>-<n>.run" and deleted when the Sorter is
// destroyed; files a crashed process left behind are removed by whoever
// owns `temp_dir` (the store clears it when it opens).  A run file's format
// (native byte order, never read by another process):
//   repeated: u64 sequence, u32 document size, document bytes,
//             u32 extra size, extra bytes
//
// Thread safety: none; one Sorter is used by one thread at a time.
#ifndef GATEDB_ENGINE_PROJECTION_SORTER_H_
#define GATEDB_ENGINE_PROJECTION_SORTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/projection/sort.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace projection {

struct SorterOptions {
  // MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes.
  size_t max_memory_bytes = 100u << 20;
  bool allow_disk_use = false;
  // Where runs spill; required with allow_disk_use.  Created when missing.
  std::string temp_dir;
  // Keep only the first `limit` rows in sort order (0: all).
  int64_t limit = 0;
};

class Sorter {
 public:
  // `spec` must outlive the Sorter.
  Sorter(const SortSpec* spec, SorterOptions options);
  ~Sorter();
  Sorter(const Sorter&) = delete;
  Sorter& operator=(const Sorter&) = delete;

  // Adds a row.  Errors: QueryExceededMemoryLimitNoDiskUseAllowed, or an
  // I/O error (InternalError) writing a run.
  Status Add(Document doc, std::string extra);
  // Ends input; Next() then yields the rows in order.
  Status Finish();
  // The next row: true and *doc/*extra set, or false at the end.
  StatusOr<bool> Next(Document* doc, std::string* extra);

  // Runs written to disk so far (for explain and tests).
  int spilled_runs() const { return static_cast<int>(runs_.size()); }
  // Bytes of rows held in memory now.
  size_t memory_bytes() const { return memory_; }

 private:
  struct Row;
  class Run;
  Status Spill();
  bool RowLess(const Row& a, const Row& b) const;

  const SortSpec* spec_;
  const SorterOptions options_;
  std::vector<Row> rows_;  // in memory; a max-heap by RowLess while top-k
  size_t memory_ = 0;
  uint64_t next_seq_ = 0;
  bool finished_ = false;
  bool top_k_;  // keeping only `limit` rows in a heap
  size_t emitted_ = 0;  // rows returned from memory
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<size_t> heap_;  // merge: indexes into runs_, a min-heap by head row
};

}  // namespace projection
}  // namespace gatedb

#endif  // GATEDB_ENGINE_PROJECTION_SORTER_H_
