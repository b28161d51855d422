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
//   $group $unwind $count $sortByCount $bucket $sample $facet
//   $lookup (equality, let/pipeline, and both at once)   (lookup.cc)
//   $out $merge                                           (write_stages.cc)
// $count, $sortByCount and $bucket are MongoDB's sugar: {$group} then
// {$project} or {$sort}.  Any other stage name is refused with MongoDB's
// error (40324 "Unrecognized pipeline stage name"); stages MongoDB has and
// gatedb does not yet are refused by name the same way.
//
// Variables: aggregate's `let` and a $lookup's `let` are declared in every
// stage's ParseContext (Variables below), so $$name reads them anywhere,
// $match's $expr included.
//
// Other collections: $lookup reads, and $out and $merge write, through a
// Host the storage layer gives (PipelineOptions::host): reads at the
// aggregate's snapshot, writes through the write gate.
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
#include <string_view>
#include <vector>

#include "engine/expression/value.h"
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

// A leading $match / $sort / $limit, run by the storage layer as a find.
struct LeadingQuery {
  Document filter;  // {} when the pipeline does not start with $match
  Document sort;    // {} when no $sort follows it
  int64_t limit = 0;
};

// What $merge does with each result (MongoDB's options).
struct MergeSpec {
  std::string db, coll;               // the target
  std::vector<std::string> on;        // default {"_id"}
  enum class Matched { kReplace, kKeepExisting, kMerge, kFail } when_matched = Matched::kMerge;
  enum class NotMatched { kInsert, kDiscard, kFail } when_not_matched = NotMatched::kInsert;
};

// The storage layer's side of $lookup, $out and $merge.
class Host {
 public:
  virtual ~Host() = default;
  // The documents of collection `coll` (in the aggregate's database) that
  // match q.filter, in q.sort order ({}: _id order), at most q.limit (0:
  // all); read at the aggregate's snapshot, or in its transaction.
  virtual StatusOr<std::unique_ptr<DocStream>> Read(const std::string& coll, const LeadingQuery& q) = 0;
  // $out: makes `db.coll` hold exactly the documents of `by_id` (in _id
  // order, each _id once), each written through the write gate: a document
  // that existed is replaced (its version moves on), one that did not is
  // inserted, and the collection's other documents are deleted.
  virtual Status ReplaceContents(const std::string& db, const std::string& coll, DocStream* by_id) = 0;
  // $merge: writes `docs` (a batch of results) into spec's target, each
  // through the write gate.
  virtual Status Merge(const MergeSpec& spec, std::vector<Document>* docs) = 0;
  // Whether `db.coll` has a unique index whose fields are exactly `fields`
  // ($merge's `on` needs one, unless it is _id).
  virtual StatusOr<bool> HasUniqueIndexOn(const std::string& db, const std::string& coll,
                                          const std::vector<std::string>& fields) = 0;
};

// The variables in scope for a pipeline's expressions, beyond $$ROOT,
// $$CURRENT and $$NOW: aggregate's `let`, and inside a $lookup's pipeline
// its `let` too.  Every stage declares `names` in this order in its
// ParseContext (so names[i] is variable id i) and binds `values` for each
// evaluation; a $lookup rewrites its values before each run of its pipeline.
struct Variables {
  std::vector<std::string> names;
  std::vector<expression::Value> values;  // parallel to names
};

struct PipelineOptions {
  bool allow_disk_use = false;
  std::string temp_dir;                   // where $sort and $group spill
  size_t max_memory_bytes = 100u << 20;   // per blocking stage
  int64_t now_ms = 0;                     // $$NOW
  std::shared_ptr<Variables> vars;        // null: none
  Host* host = nullptr;                   // null: $lookup, $out and $merge fail
  // Where the pipeline sits: $out and $merge only at the end of the
  // command's own pipeline, $facet not inside $facet.
  enum class Nesting { kTop, kFacet, kLookup } nesting = Nesting::kTop;
  bool in_transaction = false;            // $out and $merge are refused there
  std::string db;                         // the aggregate's database
};

// Evaluates aggregate's `let` ({name: <expression>, ...}, each evaluated
// once, with $$NOW) into opts->vars.  Errors: the variable name rules
// (Location16866-16868), the expressions' errors.
Status BindLet(const bson_t* let, PipelineOptions* opts);

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
  // A $match whose $expr may read declared variables stays in the
  // pipeline (a find knows no variables).
  LeadingQuery TakeLeadingQuery();

  // True when the last stage writes ($out, $merge): the cursor is empty.
  bool writes() const;

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

// Whether `name` ("$match", ...) is one of MongoDB's aggregation stages,
// whether or not gatedb runs it (an unknown name is error 40324).
bool IsStageName(std::string_view name);

}  // namespace agg
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AGG_PIPELINE_H_
