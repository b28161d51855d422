// File: engine/agg/stage.h
//
// One stage of a pipeline (pipeline.cc): pulls documents from its input
// stage and yields its own.  Internal to engine/agg.
#ifndef GATEDB_ENGINE_AGG_STAGE_H_
#define GATEDB_ENGINE_AGG_STAGE_H_

#include <bson/bson.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/agg/pipeline.h"
#include "engine/expression/expression.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {
namespace agg {

class Stage {
 public:
  explicit Stage(const char* name) : name_(name) {}
  virtual ~Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  // The next output: true with *out set, false at the end.
  virtual StatusOr<bool> Next(Document* out) = 0;
  // Appends the stage's explain form ({$stage: spec}'s field) to `out`.
  virtual void Serialize(bson_t* out) const = 0;

  void SetInput(Stage* input) { input_ = input; }
  const char* name() const { return name_; }
  // True for $out and $merge, which write their input and output nothing.
  virtual bool writes() const { return false; }

 protected:
  Stage* input_ = nullptr;

 private:
  const char* name_;
};

// ---- shared by the stage files -----------------------------------------------

// A MongoDB error by number (most aggregation codes are Location codes).
Status Err(int code, std::string msg);

// A ParseContext with opts.vars declared (names[i] is variable i).
StatusOr<std::unique_ptr<expression::ParseContext>> NewParseContext(const PipelineOptions& opts);
// Sets `name` in `vars` (a name already there is overwritten in place, so
// names stay unique and index i stays variable id i); returns its index.
size_t SetVariable(Variables* vars, const std::string& name, expression::Value value);
// Sets $$NOW and binds opts.vars' values.
void Bind(const PipelineOptions& opts, expression::EvalContext* ctx);

std::vector<std::string> SplitPath(const std::string& path);
// MongoDB's field path rules (no empty parts, no leading '$').
Status CheckFieldPath(const std::string& path);
// Copies `doc` to `out` with the value at path[i..] set to `v` (null:
// removed); documents on the way are created or replaced.
void SetPath(const bson_t* doc, const std::vector<std::string>& path, size_t i, const bson_value_t* v, bson_t* out);

StatusOr<std::unique_ptr<Stage>> MakeGroup(const bson_t* spec, const PipelineOptions& opts);
// $bucket: a $group and a $sort, appended to `out`.
Status MakeBucket(const bson_value_t& spec, const PipelineOptions& opts, std::vector<std::unique_ptr<Stage>>* out);
StatusOr<std::unique_ptr<Stage>> MakeSample(const bson_value_t& spec, const PipelineOptions& opts);
StatusOr<std::unique_ptr<Stage>> MakeLookup(const bson_value_t& spec, const PipelineOptions& opts);  // lookup.cc
StatusOr<std::unique_ptr<Stage>> MakeFacet(const bson_value_t& spec, const PipelineOptions& opts);   // lookup.cc
StatusOr<std::unique_ptr<Stage>> MakeOut(const bson_value_t& spec, const PipelineOptions& opts);     // write_stages.cc
StatusOr<std::unique_ptr<Stage>> MakeMerge(const bson_value_t& spec, const PipelineOptions& opts);   // write_stages.cc

// A stream over documents held in memory ($facet's input, tests).
class VectorStream : public DocStream {
 public:
  explicit VectorStream(const std::vector<Document>* docs) : docs_(docs) {}
  StatusOr<bool> Next(Document* out) override {
    if (pos_ == docs_->size()) return false;
    *out = (*docs_)[pos_++];
    return true;
  }

 private:
  const std::vector<Document>* docs_;
  size_t pos_ = 0;
};

}  // namespace agg
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AGG_STAGE_H_
