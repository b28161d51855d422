// File: engine/agg/stage.h
//
// One stage of a pipeline (pipeline.cc): pulls documents from its input
// stage and yields its own.  Internal to engine/agg.
#ifndef GATEDB_ENGINE_AGG_STAGE_H_
#define GATEDB_ENGINE_AGG_STAGE_H_

#include <bson/bson.h>

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

 protected:
  Stage* input_ = nullptr;

 private:
  const char* name_;
};

}  // namespace agg
}  // namespace gatedb

#endif  // GATEDB_ENGINE_AGG_STAGE_H_
