// File: engine/agg/pipeline.h
//
// The aggregation pipeline: stages parsed once from the command's array,
// then pulled one document at a time (each stage asks its input for the
// next document), so a pipeline that streams ($match, $project, $unwind,
// $limit, ...) holds one document per stage, and only the blocking stages
// ($sort, $group) hold more, within Options::sort_memory_bytes or spilled
// to disk with allowDiskUse.
//
// Stages:
//   $match $project $addFields/$set $unset $replaceRoot/$replaceWith
//   $sort (a $limit right after it makes it a top-k sort) $limit $skip
//   $group $unwind $count $sortByCount
// $count and $sortByCount are MongoDB's sugar: {$group} then {$project} or
// {$sort}.  Any other stage name is refused with MongoDB's error (40324
// "Unrecognized pipeline stage name"); stages MongoDB has and gatedb does
// not yet are refused by name the same way.
//
// The source: the storage layer runs the pipeline's leading $match (and a
// $sort and $limit right behind it) as a find, with the query planner and
// its indexes (Pipeline::TakeLeadingQuery), and feeds the rest from it.
//
// Thread safety: a Pipeline is used by one thread at a time.
#ifndef GATEDB_ENGINE_AGG_PIPELINE_H_
#define GATEDB_ENGINE_AGG_PIPELINE_H_

#include <bson/bson.h>

#include <memory>
#include <string>
#include <vector>

#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace agg {

// Where a pipeline's documents come from.
class DocStream {
 public:
  virtual ~DocStream() = default;
  // The next document: true with *out set, false at the end.
  virtual StatusOr<bool> Next(Document* out) = 0;
};

struct PipelineOptions {
  bool allow_disk_use = false;
  std::string temp_dir;                   // where $sort and $group spill
  size_t max_memory_bytes = 100u << 20;   // per blocking stage
  int64_t now_ms = 0;                     // $$NOW
};

// A leading $match / $sort / $limit, run by the storage layer as a find.
struct LeadingQuery {
  Document filter;  // {} when the pipeline does not start with $match
  Document sort;    // {} when no $sort follows it
  int64_t limit = 0;
};

class Stage;

class Pipeline {
 public:
  // Parses the stages of `pipeline` (an array of one-field documents).
  // Errors: MongoDB's: 40323 (a stage that is not a one-field document),
  // 40324 (an unknown stage), each stage's own errors; TypeMismatch when
  // `pipeline` holds a non-document.
  static StatusOr<std::unique_ptr<Pipeline>> Parse(const bson_t* pipeline, const PipelineOptions& options);
  ~Pipeline();

  // Removes the leading $match, the $sort after it and a $limit after that
  // from the pipeline and returns them, for the caller to run as a find.
  LeadingQuery TakeLeadingQuery();

  // Feeds the pipeline from `source` (which the pipeline then owns).
  void SetSource(std::unique_ptr<DocStream> source);
  // The next result.
  StatusOr<bool> Next(Document* out);

  // The stages as explain shows them ([{$stage: spec}, ...]), appended to
  // the array `out`.
  void Serialize(bson_t* out) const;

 private:
  Pipeline() = default;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::unique_ptr<DocStream> source_;
  std::unique_ptr<Stage> source_stage_;
  PipelineOptions options_;
  bool connected_ = false;
};

}  // namespace agg
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AGG_PIPELINE_H_
