#include "engine/agg/pipeline.h"

#include <cstring>
#include <limits>
#include <random>
#include <unordered_map>

#include "engine/agg/stage.h"
#include "engine/document/bson_compare.h"
#include "engine/expression/accumulator.h"
#include "engine/expression/expression.h"
#include "engine/keys/key_codec.h"
#include "engine/projection/sort.h"
#include "engine/projection/sorter.h"
#include "engine/query/matcher.h"

namespace gatedb {
namespace agg {

using expression::EvalContext;
using expression::Expression;
using expression::ParseContext;
using expression::Value;

Status Err(int code, std::string msg) { return Status(static_cast<ErrorCode>(code), std::move(msg)); }

StatusOr<std::unique_ptr<ParseContext>> NewParseContext(const PipelineOptions& opts) {
  auto pc = std::make_unique<ParseContext>();
  if (opts.vars) {
    for (const std::string& name : opts.vars->names) RETURN_IF_ERROR(pc->DeclareVariable(name).status());
  }
  return pc;
}

size_t SetVariable(Variables* vars, const std::string& name, Value value) {
  for (size_t i = 0; i < vars->names.size(); ++i) {
    if (vars->names[i] == name) {
      vars->values[i] = std::move(value);
      return i;
    }
  }
  vars->names.push_back(name);
  vars->values.push_back(std::move(value));
  return vars->names.size() - 1;
}

void Bind(const PipelineOptions& opts, EvalContext* ctx) {
  ctx->SetNow(opts.now_ms);
  if (opts.vars) {
    for (size_t i = 0; i < opts.vars->values.size(); ++i) {
      ctx->SetVariable(static_cast<expression::VariableId>(i), opts.vars->values[i]);
    }
  }
}

namespace {

Document IdZero() {
  bson_t* p = bson_new();
  BSON_APPEND_INT32(p, "_id", 0);
  return Document::Adopt(p);
}

std::string Json(const bson_value_t& v) {
  bson_t* holder = bson_new();
  bson_append_value(holder, "v", 1, &v);
  char* json = bson_as_relaxed_extended_json(holder, nullptr);
  std::string text(json);
  bson_free(json);
  bson_destroy(holder);
  size_t colon = text.find(':');
  return text.substr(colon + 2, text.rfind('}') - colon - 3);
}

// ---- the source ------------------------------------------------------------

class SourceStage : public Stage {
 public:
  explicit SourceStage(DocStream* source) : Stage("$cursor"), source_(source) {}
  StatusOr<bool> Next(Document* out) override { return source_->Next(out); }
  void Serialize(bson_t*) const override {}

 private:
  DocStream* source_;
};

// ---- $match ------------------------------------------------------------------

class MatchStage : public Stage {
 public:
  MatchStage(Document spec, std::unique_ptr<ParseContext> pc, std::unique_ptr<query::Matcher> m,
             const PipelineOptions& opts)
      : Stage("$match"), spec_(std::move(spec)), pc_(std::move(pc)), matcher_(std::move(m)), opts_(opts) {}
  StatusOr<bool> Next(Document* out) override {
    for (;;) {
      ASSIGN_OR_RETURN(bool more, input_->Next(out));
      if (!more) return false;
      if (!matcher_->CanFail()) {
        if (matcher_->Matches(out->bson())) return true;
        continue;
      }
      // $expr's evaluation errors and regex limits fail the aggregate, as
      // in MongoDB.
      EvalContext ctx;
      Bind(opts_, &ctx);
      ASSIGN_OR_RETURN(bool match, matcher_->MatchesOrError(out->bson(), &ctx));
      if (match) return true;
    }
  }
  // A find can run it (it reads no declared variable).
  bool FindCanRun() const { return !matcher_->HasExpr() || !opts_.vars || opts_.vars->names.empty(); }
  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, "$match", spec_.bson()); }
  const Document& spec() const { return spec_; }

 private:
  Document spec_;
  std::unique_ptr<ParseContext> pc_;
  std::unique_ptr<query::Matcher> matcher_;
  PipelineOptions opts_;
};

// ---- $limit / $skip ------------------------------------------------------------

class LimitStage : public Stage {
 public:
  explicit LimitStage(int64_t n) : Stage("$limit"), n_(n) {}
  StatusOr<bool> Next(Document* out) override {
    if (seen_ >= n_) return false;
    ASSIGN_OR_RETURN(bool more, input_->Next(out));
    if (more) ++seen_;
    return more;
  }
  void Serialize(bson_t* out) const override { BSON_APPEND_INT64(out, "$limit", n_); }
  int64_t n() const { return n_; }

 private:
  int64_t n_;
  int64_t seen_ = 0;
};

class SkipStage : public Stage {
 public:
  explicit SkipStage(int64_t n) : Stage("$skip"), n_(n) {}
  StatusOr<bool> Next(Document* out) override {
    while (skipped_ < n_) {
      ASSIGN_OR_RETURN(bool more, input_->Next(out));
      if (!more) return false;
      ++skipped_;
    }
    return input_->Next(out);
  }
  void Serialize(bson_t* out) const override { BSON_APPEND_INT64(out, "$skip", n_); }

 private:
  int64_t n_;
  int64_t skipped_ = 0;
};

// ---- $sort ---------------------------------------------------------------------

class SortStage : public Stage {
 public:
  SortStage(Document spec, std::unique_ptr<projection::SortSpec> sort, const PipelineOptions& opts)
      : Stage("$sort"), spec_(std::move(spec)), sort_(std::move(sort)), opts_(opts) {}
  void SetLimit(int64_t limit) { limit_ = limit; }
  StatusOr<bool> Next(Document* out) override {
    if (!sorter_) {
      projection::SorterOptions so;
      so.max_memory_bytes = opts_.max_memory_bytes;
      so.allow_disk_use = opts_.allow_disk_use;
      so.temp_dir = opts_.temp_dir;
      so.limit = limit_;
      sorter_ = std::make_unique<projection::Sorter>(sort_.get(), so);
      Document d;
      for (;;) {
        ASSIGN_OR_RETURN(bool more, input_->Next(&d));
        if (!more) break;
        RETURN_IF_ERROR(sorter_->Add(std::move(d), std::string()));
      }
      RETURN_IF_ERROR(sorter_->Finish());
    }
    if (limit_ > 0 && returned_ >= limit_) return false;
    std::string extra;
    ASSIGN_OR_RETURN(bool more, sorter_->Next(out, &extra));
    if (more) ++returned_;
    return more;
  }
  void Serialize(bson_t* out) const override {
    bson_t s;
    BSON_APPEND_DOCUMENT_BEGIN(out, "$sort", &s);
    BSON_APPEND_DOCUMENT(&s, "sortKey", spec_.bson());
    if (limit_ > 0) BSON_APPEND_INT64(&s, "limit", limit_);
    bson_append_document_end(out, &s);
  }
  const Document& spec() const { return spec_; }
  int64_t limit() const { return limit_; }

 private:
  Document spec_;
  std::unique_ptr<projection::SortSpec> sort_;
  PipelineOptions opts_;
  std::unique_ptr<projection::Sorter> sorter_;
  int64_t limit_ = 0;
  int64_t returned_ = 0;
};

// ---- $project / $addFields / $unset / $replaceRoot ------------------------------

// One level of a projection: for each field, in spec order, what happens.
struct FieldNode {
  enum Kind { kInclude, kExclude, kExpr, kNested } kind = kNested;
  std::unique_ptr<Expression> expr;
  std::vector<std::pair<std::string, std::unique_ptr<FieldNode>>> children;

  FieldNode* Child(const std::string& name) {
    for (auto& c : children) {
      if (c.first == name) return c.second.get();
    }
    return nullptr;
  }
};

}  // namespace

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

Status CheckFieldPath(const std::string& path) {
  if (path.empty()) return Err(40352, "FieldPath cannot be constructed with empty string");
  if (path[0] == '$') return Err(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.");
  for (const std::string& p : SplitPath(path)) {
    if (p.empty()) return Err(15998, "FieldPath field names may not be empty strings.");
  }
  return Status::OK();
}

namespace {

// The node for `path` under `root`, created as nested levels.  Error
// 31249/31250 when a path and its prefix both appear.
StatusOr<FieldNode*> NodeFor(FieldNode* root, const std::string& path) {
  RETURN_IF_ERROR(CheckFieldPath(path));
  std::vector<std::string> parts = SplitPath(path);
  FieldNode* node = root;
  for (size_t i = 0; i < parts.size(); ++i) {
    FieldNode* child = node->Child(parts[i]);
    if (child == nullptr) {
      node->children.emplace_back(parts[i], std::make_unique<FieldNode>());
      child = node->children.back().second.get();
      child->kind = FieldNode::kNested;
      if (i + 1 == parts.size()) return child;
    } else if (i + 1 == parts.size() || child->kind != FieldNode::kNested) {
      return Status(ErrorCode::kLocation31250, "Invalid $project :: caused by :: Path collision at " + path);
    }
    node = child;
  }
  return node;
}

bool IsOperatorDoc(const bson_value_t& v) {
  if (v.value_type != BSON_TYPE_DOCUMENT) return false;
  bson_t d;
  if (!bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len)) return false;
  bson_iter_t it;
  return bson_iter_init(&it, &d) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$';
}

// Which projection a spec is: inclusion (with computed fields) or exclusion.
enum class ProjectMode { kInclusion, kExclusion, kAddFields };

// Parses a $project / $addFields spec level into `node`.
Status ParseProjectLevel(const bson_t* spec, FieldNode* node, ProjectMode mode, ParseContext* pc, bool top,
                         int* includes, int* excludes, bool* id_excluded, int depth) {
  if (depth > 100) return Status(ErrorCode::kOverflow, "projection nested too deeply");
  bson_iter_t it;
  bson_iter_init(&it, spec);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    const bson_value_t* v = bson_iter_value(&it);
    ASSIGN_OR_RETURN(FieldNode * child, NodeFor(node, key));
    const bool is_id = top && key == "_id";
    if (mode != ProjectMode::kAddFields &&
        (v->value_type == BSON_TYPE_BOOL || v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64 ||
         v->value_type == BSON_TYPE_DOUBLE || v->value_type == BSON_TYPE_DECIMAL128)) {
      bool truthy = v->value_type == BSON_TYPE_BOOL ? v->value.v_bool
                    : v->value_type == BSON_TYPE_INT32 ? v->value.v_int32 != 0
                    : v->value_type == BSON_TYPE_INT64 ? v->value.v_int64 != 0
                    : v->value_type == BSON_TYPE_DOUBLE ? v->value.v_double != 0
                                                        : true;
      child->kind = truthy ? FieldNode::kInclude : FieldNode::kExclude;
      if (is_id) {
        if (!truthy) *id_excluded = true;
      } else if (truthy) {
        ++*includes;
      } else {
        ++*excludes;
      }
      continue;
    }
    if (v->value_type == BSON_TYPE_DOCUMENT && !IsOperatorDoc(*v)) {
      bson_t sub;
      bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
      if (bson_empty(&sub)) {
        return Err(mode == ProjectMode::kAddFields ? 40180 : 51270,
                   "An empty sub-projection is not a valid value. Found empty object at path");
      }
      child->kind = FieldNode::kNested;
      RETURN_IF_ERROR(ParseProjectLevel(&sub, child, mode, pc, false, includes, excludes, id_excluded, depth + 1));
      continue;
    }
    child->kind = FieldNode::kExpr;
    ASSIGN_OR_RETURN(child->expr, expression::ParseExpression(*v, pc));
    if (!is_id) ++*includes;  // a computed field makes it an inclusion projection
  }
  return Status::OK();
}

// Appends to `out` the value `v` under `key` (missing: nothing).
void AppendValue(bson_t* out, const std::string& key, const Value& v) {
  if (!v.missing()) v.AppendTo(out, key);
}

Status ApplyLevel(const FieldNode& node, const bson_t* in, bson_t* out, ProjectMode mode, const EvalContext& ctx,
                  bool top, bool id_excluded);

bool HasComputed(const FieldNode& node) {
  for (const auto& c : node.children) {
    if (c.second->kind == FieldNode::kExpr) return true;
    if (c.second->kind == FieldNode::kNested && HasComputed(*c.second)) return true;
  }
  return false;
}


// Applies `node` to one input value (a nested level): documents recurse,
// arrays apply to each element.  Returns false when nothing is output.
Status ApplyToValue(const FieldNode& node, const bson_value_t& v, const std::string& key, bson_t* out, ProjectMode mode,
                    const EvalContext& ctx) {
  if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_t in, sub;
    bson_init_static(&in, v.value.v_doc.data, v.value.v_doc.data_len);
    bson_append_document_begin(out, key.c_str(), static_cast<int>(key.size()), &sub);
    RETURN_IF_ERROR(ApplyLevel(node, &in, &sub, mode, ctx, false, false));
    bson_append_document_end(out, &sub);
    return Status::OK();
  }
  if (v.value_type == BSON_TYPE_ARRAY) {
    bson_t in, arr;
    bson_init_static(&in, v.value.v_doc.data, v.value.v_doc.data_len);
    bson_append_array_begin(out, key.c_str(), static_cast<int>(key.size()), &arr);
    bson_iter_t it;
    bson_iter_init(&it, &in);
    uint32_t i = 0;
    while (bson_iter_next(&it)) {
      const bson_value_t* e = bson_iter_value(&it);
      std::string idx = std::to_string(i);
      if (e->value_type == BSON_TYPE_DOCUMENT || e->value_type == BSON_TYPE_ARRAY) {
        RETURN_IF_ERROR(ApplyToValue(node, *e, idx, &arr, mode, ctx));
        ++i;
      } else if (mode == ProjectMode::kExclusion) {
        bson_append_value(&arr, idx.c_str(), -1, e);  // exclusion keeps scalars
        ++i;
      } else if (mode == ProjectMode::kAddFields || HasComputed(node)) {
        // A scalar becomes the document of the computed fields.
        bson_t sub;
        bson_append_document_begin(&arr, idx.c_str(), -1, &sub);
        RETURN_IF_ERROR(ApplyLevel(node, nullptr, &sub, mode, ctx, false, false));
        bson_append_document_end(&arr, &sub);
        ++i;
      }
    }
    bson_append_array_end(out, &arr);
    return Status::OK();
  }
  // A scalar under a nested spec: exclusion keeps it; $addFields, and an
  // inclusion with computed fields under it, replace it with the nested
  // fields' document; a plain inclusion drops it.
  if (mode == ProjectMode::kExclusion) bson_append_value(out, key.c_str(), static_cast<int>(key.size()), &v);
  if (mode == ProjectMode::kAddFields || (mode == ProjectMode::kInclusion && HasComputed(node))) {
    bson_t sub;
    bson_append_document_begin(out, key.c_str(), static_cast<int>(key.size()), &sub);
    RETURN_IF_ERROR(ApplyLevel(node, nullptr, &sub, mode, ctx, false, false));
    bson_append_document_end(out, &sub);
  }
  return Status::OK();
}

Status ApplyLevel(const FieldNode& node, const bson_t* in, bson_t* out, ProjectMode mode, const EvalContext& ctx,
                  bool top, bool id_excluded) {
  std::vector<const std::string*> done;  // children already written in document order
  if (in != nullptr) {
    bson_iter_t it;
    bson_iter_init(&it, in);
    while (bson_iter_next(&it)) {
      std::string key = bson_iter_key(&it);
      const bson_value_t* v = bson_iter_value(&it);
      const FieldNode* child = nullptr;
      for (const auto& c : node.children) {
        if (c.first == key) {
          child = c.second.get();
          done.push_back(&c.first);
          break;
        }
      }
      const bool is_id = top && key == "_id";
      if (child == nullptr) {
        // Unmentioned: kept by exclusion and $addFields; _id kept by inclusion unless excluded.
        if (mode != ProjectMode::kInclusion || (is_id && !id_excluded)) bson_append_value(out, key.c_str(), -1, v);
        continue;
      }
      switch (child->kind) {
        case FieldNode::kInclude:
          bson_append_value(out, key.c_str(), -1, v);
          break;
        case FieldNode::kExclude:
          break;
        case FieldNode::kNested:
          RETURN_IF_ERROR(ApplyToValue(*child, *v, key, out, mode, ctx));
          break;
        case FieldNode::kExpr:
          if (mode == ProjectMode::kAddFields) {  // replaced in place
            ASSIGN_OR_RETURN(Value r, child->expr->Evaluate(ctx));
            AppendValue(out, key, r);
          } else {
            done.pop_back();  // computed fields of $project come after the kept ones
          }
          break;
      }
    }
  }
  // Computed fields (and nested levels that hold some) not yet written.
  for (const auto& c : node.children) {
    bool written = false;
    for (const std::string* d : done) {
      if (d == &c.first) written = true;
    }
    if (written) continue;
    if (c.second->kind == FieldNode::kExpr) {
      ASSIGN_OR_RETURN(Value r, c.second->expr->Evaluate(ctx));
      AppendValue(out, c.first, r);
    } else if (c.second->kind == FieldNode::kNested && HasComputed(*c.second) && mode != ProjectMode::kExclusion) {
      bson_t sub;
      bson_append_document_begin(out, c.first.c_str(), static_cast<int>(c.first.size()), &sub);
      RETURN_IF_ERROR(ApplyLevel(*c.second, nullptr, &sub, mode, ctx, false, false));
      bson_append_document_end(out, &sub);
    }
  }
  return Status::OK();
}

class ProjectStage : public Stage {
 public:
  ProjectStage(const char* name, Document spec, ProjectMode mode, std::unique_ptr<FieldNode> root, bool id_excluded,
               std::unique_ptr<ParseContext> pc, const PipelineOptions& opts)
      : Stage(name),
        spec_(std::move(spec)),
        mode_(mode),
        root_(std::move(root)),
        id_excluded_(id_excluded),
        pc_(std::move(pc)),
        opts_(opts) {}
  StatusOr<bool> Next(Document* out) override {
    Document in;
    ASSIGN_OR_RETURN(bool more, input_->Next(&in));
    if (!more) return false;
    EvalContext ctx;
    Bind(opts_, &ctx);
    ctx.SetRoot(in.bson());
    bson_t* o = bson_new();
    Status s = ApplyLevel(*root_, in.bson(), o, mode_, ctx, true, id_excluded_);
    if (!s.ok()) {
      bson_destroy(o);
      return s;
    }
    *out = Document::Adopt(o);
    return true;
  }
  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, name(), spec_.bson()); }

 private:
  Document spec_;
  ProjectMode mode_;
  std::unique_ptr<FieldNode> root_;
  bool id_excluded_;
  std::unique_ptr<ParseContext> pc_;
  PipelineOptions opts_;
};

StatusOr<std::unique_ptr<Stage>> MakeProject(const char* name, const bson_t* spec, bool add_fields,
                                             const PipelineOptions& opts) {
  ASSIGN_OR_RETURN(std::unique_ptr<ParseContext> pc, NewParseContext(opts));
  auto root = std::make_unique<FieldNode>();
  int includes = 0, excludes = 0;
  bool id_excluded = false;
  ProjectMode mode = add_fields ? ProjectMode::kAddFields : ProjectMode::kInclusion;
  if (!add_fields && bson_empty(spec)) {
    return Err(51272, "Invalid $project :: caused by :: projection specification must have at least one field");
  }
  RETURN_IF_ERROR(ParseProjectLevel(spec, root.get(), mode, pc.get(), true, &includes, &excludes, &id_excluded, 0));
  if (!add_fields) {
    if (includes > 0 && excludes > 0) {
      return Status(ErrorCode::kLocation31254,
                    "Invalid $project :: caused by :: Cannot do exclusion on field in inclusion projection");
    }
    mode = includes == 0 && (excludes > 0 || id_excluded) ? ProjectMode::kExclusion : ProjectMode::kInclusion;
  }
  return std::unique_ptr<Stage>(std::make_unique<ProjectStage>(name, Document::Copy(spec), mode, std::move(root),
                                                               id_excluded, std::move(pc), opts));
}

class ReplaceRootStage : public Stage {
 public:
  ReplaceRootStage(const char* name, Document spec, std::unique_ptr<Expression> e, std::unique_ptr<ParseContext> pc,
                   const PipelineOptions& opts)
      : Stage(name), spec_(std::move(spec)), expr_(std::move(e)), pc_(std::move(pc)), opts_(opts) {}
  StatusOr<bool> Next(Document* out) override {
    Document in;
    ASSIGN_OR_RETURN(bool more, input_->Next(&in));
    if (!more) return false;
    EvalContext ctx;
    Bind(opts_, &ctx);
    ctx.SetRoot(in.bson());
    ASSIGN_OR_RETURN(Value v, expr_->Evaluate(ctx));
    if (!v.is_document()) {
      return Err(40228, "'newRoot' expression must evaluate to an object, but resulting value was: " +
                            (v.missing() ? std::string("MISSING") : Json(v.bson())) + ". Type of resulting value: '" +
                            BsonTypeName(v.type()) + "'.");
    }
    StatusOr<Document> d = Document::FromBytes(v.doc_data(), v.doc_len());
    if (!d.ok()) return d.status();
    *out = std::move(*d);
    return true;
  }
  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, name(), spec_.bson()); }

 private:
  Document spec_;
  std::unique_ptr<Expression> expr_;
  std::unique_ptr<ParseContext> pc_;
  PipelineOptions opts_;
};

// ---- $unwind ---------------------------------------------------------------------

}  // namespace

// Copies `doc` with the value at path[i..] replaced by `v` (missing: removed).
void SetPath(const bson_t* doc, const std::vector<std::string>& path, size_t i, const bson_value_t* v, bson_t* out) {
  bson_iter_t it;
  bson_iter_init(&it, doc);
  bool found = false;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (path[i] != key) {
      bson_append_value(out, key, -1, bson_iter_value(&it));
      continue;
    }
    found = true;
    if (i + 1 == path.size()) {
      if (v != nullptr) bson_append_value(out, key, -1, v);
      continue;
    }
    if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
      const bson_value_t* sv = bson_iter_value(&it);
      bson_t in, sub;
      bson_init_static(&in, sv->value.v_doc.data, sv->value.v_doc.data_len);
      bson_append_document_begin(out, key, -1, &sub);
      SetPath(&in, path, i + 1, v, &sub);
      bson_append_document_end(out, &sub);
    } else {
      bson_append_value(out, key, -1, bson_iter_value(&it));
    }
  }
  if (!found && v != nullptr) {
    if (i + 1 == path.size()) {
      bson_append_value(out, path[i].c_str(), -1, v);
    } else {
      bson_t empty = BSON_INITIALIZER, sub;
      bson_append_document_begin(out, path[i].c_str(), -1, &sub);
      SetPath(&empty, path, i + 1, v, &sub);
      bson_append_document_end(out, &sub);
    }
  }
}

namespace {

// The value at a dotted path through documents only (no array traversal).
bool GetPath(const bson_t* doc, const std::string& dotted, bson_value_t* out) {
  bson_iter_t it, f;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, dotted.c_str(), &f)) return false;
  *out = *bson_iter_value(&f);
  return true;
}

class UnwindStage : public Stage {
 public:
  UnwindStage(std::string path, std::string index_field, bool preserve)
      : Stage("$unwind"), path_(std::move(path)), parts_(SplitPath(path_)), index_field_(std::move(index_field)),
        index_parts_(index_field_.empty() ? std::vector<std::string>() : SplitPath(index_field_)),
        preserve_(preserve) {}
  StatusOr<bool> Next(Document* out) override {
    for (;;) {
      if (have_) {
        if (bson_iter_next(&elems_)) {
          Emit(bson_iter_value(&elems_), next_index_++, out);
          return true;
        }
        have_ = false;
      }
      ASSIGN_OR_RETURN(bool more, input_->Next(&current_));
      if (!more) return false;
      bson_value_t v;
      bool present = GetPath(current_.bson(), path_, &v);
      if (present && v.value_type == BSON_TYPE_ARRAY) {
        bson_init_static(&array_, v.value.v_doc.data, v.value.v_doc.data_len);
        bson_iter_init(&elems_, &array_);
        next_index_ = 0;
        if (!bson_empty(&array_)) {
          have_ = true;
          continue;
        }
        if (preserve_) {
          EmitNull(out, /*remove=*/true);
          return true;
        }
        continue;
      }
      if (!present || v.value_type == BSON_TYPE_NULL || v.value_type == BSON_TYPE_UNDEFINED) {
        if (preserve_) {
          EmitNull(out, /*remove=*/false);
          return true;
        }
        continue;
      }
      // A non-array value is treated as a one-element array.
      Emit(&v, -1, out);
      return true;
    }
  }
  void Serialize(bson_t* out) const override {
    bson_t s;
    BSON_APPEND_DOCUMENT_BEGIN(out, "$unwind", &s);
    std::string p = "$" + path_;
    BSON_APPEND_UTF8(&s, "path", p.c_str());
    if (!index_field_.empty()) BSON_APPEND_UTF8(&s, "includeArrayIndex", index_field_.c_str());
    if (preserve_) BSON_APPEND_BOOL(&s, "preserveNullAndEmptyArrays", true);
    bson_append_document_end(out, &s);
  }

 private:
  // `index` < 0: the value was not an array (includeArrayIndex is null).
  void Emit(const bson_value_t* v, int64_t index, Document* out) {
    bson_t* o = bson_new();
    SetPath(current_.bson(), parts_, 0, v, o);
    *out = WithIndex(o, index);
  }
  // An empty array, null or missing under preserveNullAndEmptyArrays: the
  // document as it is (an empty array's field removed), index null.
  void EmitNull(Document* out, bool remove) {
    bson_t* o = bson_new();
    if (remove) {
      SetPath(current_.bson(), parts_, 0, nullptr, o);
    } else {
      bson_concat(o, current_.bson());
    }
    *out = WithIndex(o, -1);
  }
  Document WithIndex(bson_t* o, int64_t index) {
    if (index_field_.empty()) return Document::Adopt(o);
    bson_value_t iv;
    std::memset(&iv, 0, sizeof iv);
    if (index >= 0) {
      iv.value_type = BSON_TYPE_INT64;
      iv.value.v_int64 = index;
    } else {
      iv.value_type = BSON_TYPE_NULL;
    }
    bson_t* with = bson_new();
    SetPath(o, index_parts_, 0, &iv, with);
    bson_destroy(o);
    return Document::Adopt(with);
  }

  std::string path_;
  std::vector<std::string> parts_;
  std::string index_field_;
  std::vector<std::string> index_parts_;
  bool preserve_;
  Document current_;
  bson_t array_;
  bson_iter_t elems_;
  bool have_ = false;
  int64_t next_index_ = 0;
};

StatusOr<std::unique_ptr<Stage>> MakeUnwind(const bson_value_t& v) {
  std::string path, index_field;
  bool preserve = false;
  auto read_path = [&](const bson_value_t& p) -> Status {
    if (p.value_type != BSON_TYPE_UTF8) {
      return Err(28808, "expected a string as the path for $unwind stage, got " + std::string(BsonTypeName(p.value_type)));
    }
    std::string s(p.value.v_utf8.str, p.value.v_utf8.len);
    if (s.empty() || s[0] != '$') {
      return Err(28818, "path option to $unwind stage should be prefixed with a '$': " + s);
    }
    path = s.substr(1);
    return CheckFieldPath(path);
  };
  if (v.value_type == BSON_TYPE_UTF8) {
    RETURN_IF_ERROR(read_path(v));
  } else if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_t d;
    bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
    bson_iter_t it;
    bson_iter_init(&it, &d);
    bool have_path = false;
    while (bson_iter_next(&it)) {
      std::string key = bson_iter_key(&it);
      if (key == "path") {
        have_path = true;
        RETURN_IF_ERROR(read_path(*bson_iter_value(&it)));
      } else if (key == "includeArrayIndex") {
        if (!BSON_ITER_HOLDS_UTF8(&it)) {
          return Err(28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage");
        }
        index_field = bson_iter_utf8(&it, nullptr);
        if (index_field.empty()) return Err(28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage");
        if (index_field[0] == '$') return Err(28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': " + index_field);
        RETURN_IF_ERROR(CheckFieldPath(index_field));
      } else if (key == "preserveNullAndEmptyArrays") {
        if (!BSON_ITER_HOLDS_BOOL(&it)) {
          return Err(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage");
        }
        preserve = bson_iter_bool(&it);
      } else {
        return Err(28811, "unrecognized option to $unwind stage: " + key);
      }
    }
    if (!have_path) return Err(28812, "no path specified to $unwind stage");
  } else {
    return Err(15981, "expected either a string or an object as specification for $unwind stage, got " +
                          std::string(BsonTypeName(v.value_type)));
  }
  return std::unique_ptr<Stage>(std::make_unique<UnwindStage>(path, index_field, preserve));
}

// ---- $group --------------------------------------------------------------------

class GroupStage : public Stage {
 public:
  GroupStage(Document spec, std::unique_ptr<ParseContext> pc, std::unique_ptr<Expression> id,
             std::vector<expression::AccumulationStatement> accs, const PipelineOptions& opts)
      : Stage("$group"), spec_(std::move(spec)), pc_(std::move(pc)), id_(std::move(id)), accs_(std::move(accs)),
        opts_(opts) {}

  StatusOr<bool> Next(Document* out) override {
    if (!consumed_) RETURN_IF_ERROR(Consume());
    if (sorter_ != nullptr) return NextMerged(out);
    if (pos_ == order_.size()) return false;
    Group& g = groups_[order_[pos_++]];
    return Output(g.key, g.accs, out);
  }
  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, "$group", spec_.bson()); }

 private:
  struct Group {
    Value key;
    std::vector<std::unique_ptr<expression::Accumulator>> accs;
  };

  // Groups compare by value (1 and 1.0 are one group): the order-preserving
  // index encoding of the key is its identity.
  static std::string KeyBytes(const Value& key) {
    std::string out;
    if (key.missing()) {
      bson_value_t null;
      std::memset(&null, 0, sizeof null);
      null.value_type = BSON_TYPE_NULL;
      keys::EncodeValue(null, &out);
    } else {
      keys::EncodeValue(key.bson(), &out);
    }
    return out;
  }

  Status Consume() {
    consumed_ = true;
    Document d;
    EvalContext ctx;
    Bind(opts_, &ctx);
    for (;;) {
      ASSIGN_OR_RETURN(bool more, input_->Next(&d));
      if (!more) break;
      ctx.SetRoot(d.bson());
      ASSIGN_OR_RETURN(Value key, id_->Evaluate(ctx));
      std::string kb = KeyBytes(key);
      auto it = groups_.find(kb);
      if (it == groups_.end()) {
        Group g;
        g.key = key.missing() ? Value::Null() : key.Detached();
        for (const auto& a : accs_) g.accs.push_back(a.NewAccumulator());
        memory_ += kb.size() * 2 + g.key.ApproximateSize() + 64;
        it = groups_.emplace(kb, std::move(g)).first;
        order_.push_back(kb);
      }
      for (size_t i = 0; i < accs_.size(); ++i) {
        size_t before = it->second.accs[i]->MemoryUsage();
        ASSIGN_OR_RETURN(Value v, accs_[i].argument().Evaluate(ctx));
        RETURN_IF_ERROR(it->second.accs[i]->Process(v));
        memory_ += it->second.accs[i]->MemoryUsage() - before;
      }
      if (memory_ > opts_.max_memory_bytes) {
        if (!opts_.allow_disk_use) {
          return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                        "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to "
                        "opt in.");
        }
        RETURN_IF_ERROR(Spill());
      }
    }
    if (sorter_ != nullptr) {
      RETURN_IF_ERROR(Spill());
      RETURN_IF_ERROR(sorter_->Finish());
    }
    return Status::OK();
  }

  // Writes every group's partial state as {k: <key bytes>, i: <key>, p: [partials]}
  // into the sorter, which orders equal keys together (runs stay in order).
  Status Spill() {
    if (sorter_ == nullptr) {
      auto spec = projection::SortSpec::Parse(SpillSortSpec().bson());
      if (!spec.ok()) return spec.status();
      spill_sort_ = std::move(*spec);
      projection::SorterOptions so;
      so.allow_disk_use = true;
      so.temp_dir = opts_.temp_dir;
      so.max_memory_bytes = opts_.max_memory_bytes;
      sorter_ = std::make_unique<projection::Sorter>(spill_sort_.get(), so);
    }
    for (const std::string& kb : order_) {
      Group& g = groups_[kb];
      bson_t* d = bson_new();
      bson_append_binary(d, "k", 1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(kb.data()),
                         static_cast<uint32_t>(kb.size()));
      g.key.AppendTo(d, "i");
      bson_t arr;
      bson_append_array_begin(d, "p", 1, &arr);
      for (size_t i = 0; i < g.accs.size(); ++i) {
        auto partial = g.accs[i]->SerializePartial();
        if (!partial.ok()) {
          bson_destroy(d);
          return partial.status();
        }
        partial->AppendTo(&arr, std::to_string(i));
      }
      bson_append_array_end(d, &arr);
      RETURN_IF_ERROR(sorter_->Add(Document::Adopt(d), std::string()));
    }
    groups_.clear();
    order_.clear();
    memory_ = 0;
    return Status::OK();
  }

  static Document SpillSortSpec() {
    bson_t* s = bson_new();
    BSON_APPEND_INT32(s, "k", 1);
    return Document::Adopt(s);
  }

  // Merges consecutive spilled partials of one key.
  StatusOr<bool> NextMerged(Document* out) {
    if (merged_all_) return false;
    if (!have_head_) {
      std::string extra;
      ASSIGN_OR_RETURN(bool more, sorter_->Next(&head_, &extra));
      if (!more) return false;
      have_head_ = true;
    }
    bson_value_t k, key;
    GetPath(head_.bson(), "k", &k);
    GetPath(head_.bson(), "i", &key);
    std::string kb(reinterpret_cast<const char*>(k.value.v_binary.data), k.value.v_binary.data_len);
    Value group_key = Value::Copy(key);
    std::vector<std::unique_ptr<expression::Accumulator>> accs;
    for (const auto& a : accs_) accs.push_back(a.NewAccumulator());
    for (;;) {
      RETURN_IF_ERROR(MergeInto(head_, &accs));
      std::string extra;
      ASSIGN_OR_RETURN(bool more, sorter_->Next(&head_, &extra));
      if (!more) {
        have_head_ = false;
        merged_all_ = true;
        break;
      }
      bson_value_t nk;
      GetPath(head_.bson(), "k", &nk);
      if (std::string(reinterpret_cast<const char*>(nk.value.v_binary.data), nk.value.v_binary.data_len) != kb) break;
    }
    return Output(group_key, accs, out);
  }

  Status MergeInto(const Document& d, std::vector<std::unique_ptr<expression::Accumulator>>* accs) {
    bson_iter_t it, p;
    if (!bson_iter_init_find(&it, d.bson(), "p") || !bson_iter_recurse(&it, &p)) {
      return Status(ErrorCode::kInternalError, "corrupt $group spill");
    }
    for (size_t i = 0; i < accs->size() && bson_iter_next(&p); ++i) {
      RETURN_IF_ERROR((*accs)[i]->MergePartial(Value::Copy(*bson_iter_value(&p))));
    }
    return Status::OK();
  }

  StatusOr<bool> Output(const Value& key, const std::vector<std::unique_ptr<expression::Accumulator>>& accs,
                        Document* out) {
    bson_t* o = bson_new();
    key.AppendTo(o, "_id");
    for (size_t i = 0; i < accs_.size(); ++i) {
      auto r = accs[i]->Finalize();
      if (!r.ok()) {
        bson_destroy(o);
        return r.status();
      }
      AppendValue(o, accs_[i].field(), *r);
    }
    *out = Document::Adopt(o);
    return true;
  }

  Document spec_;
  std::unique_ptr<ParseContext> pc_;
  std::unique_ptr<Expression> id_;
  std::vector<expression::AccumulationStatement> accs_;
  PipelineOptions opts_;
  bool consumed_ = false;
  std::unordered_map<std::string, Group> groups_;
  std::vector<std::string> order_;  // first-seen order
  size_t pos_ = 0;
  size_t memory_ = 0;
  std::unique_ptr<projection::SortSpec> spill_sort_;
  std::unique_ptr<projection::Sorter> sorter_;
  Document head_;
  bool have_head_ = false;
  bool merged_all_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Stage>> MakeGroup(const bson_t* spec, const PipelineOptions& opts) {
  ASSIGN_OR_RETURN(std::unique_ptr<ParseContext> pc, NewParseContext(opts));
  std::unique_ptr<Expression> id;
  std::vector<expression::AccumulationStatement> accs;
  bson_iter_t it;
  bson_iter_init(&it, spec);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (key == "_id") {
      ASSIGN_OR_RETURN(id, expression::ParseExpression(*bson_iter_value(&it), pc.get()));
      continue;
    }
    if (key.find('.') != std::string::npos) {
      return Err(40235, "The field name '" + key + "' cannot contain '.'");
    }
    if (!key.empty() && key[0] == '$') {
      return Err(40236, "The field name '" + key + "' cannot be an operator name");
    }
    ASSIGN_OR_RETURN(expression::AccumulationStatement a,
                     expression::AccumulationStatement::Parse(key, *bson_iter_value(&it), pc.get()));
    accs.push_back(std::move(a));
  }
  if (id == nullptr) return Err(15955, "a group specification must include an _id");
  return std::unique_ptr<Stage>(
      std::make_unique<GroupStage>(Document::Copy(spec), std::move(pc), std::move(id), std::move(accs), opts));
}

namespace {

}  // namespace

// ---- $bucket -------------------------------------------------------------------

// {$bucket: {groupBy, boundaries, default, output}} is MongoDB's sugar for
//   {$group: {_id: {$let: {vars: {g: <groupBy>}, in: {$switch: {branches:
//       [{case: {$and: [{$gte: ["$$g", b0]}, {$lt: ["$$g", b1]}]}, then: b0}, ...],
//       default: <default>}}}}, <output or count: {$sum: 1}>}}
//   {$sort: {_id: 1}}
// so a value outside every bucket with no default fails as $switch does
// (40066).
Status MakeBucket(const bson_value_t& v, const PipelineOptions& opts, std::vector<std::unique_ptr<Stage>>* out) {
  if (v.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40201, "Argument to $bucket stage must be an object, but found type: " +
                          std::string(BsonTypeName(v.value_type)) + ".");
  }
  bson_t spec;
  bson_init_static(&spec, v.value.v_doc.data, v.value.v_doc.data_len);
  // Iterators stay valid while `spec` does (a bson_iter_value pointer does
  // not: the iterator reuses it).
  bson_iter_t group_by_it, default_it;
  const bson_value_t* group_by = nullptr;
  const bson_value_t* default_value = nullptr;
  bson_t boundaries, output;
  bool have_boundaries = false, have_output = false;
  bson_iter_t it;
  bson_iter_init(&it, &spec);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    const bson_value_t* f = bson_iter_value(&it);
    if (key == "groupBy") {
      const bool path = f->value_type == BSON_TYPE_UTF8 && f->value.v_utf8.len > 0 && f->value.v_utf8.str[0] == '$';
      if (!path && !IsOperatorDoc(*f)) {
        return Err(40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression");
      }
      group_by_it = it;
      group_by = bson_iter_value(&group_by_it);
    } else if (key == "boundaries") {
      if (f->value_type != BSON_TYPE_ARRAY) {
        return Err(40200, "The $bucket 'boundaries' field must be an array, but found type: " +
                              std::string(BsonTypeName(f->value_type)) + ".");
      }
      bson_init_static(&boundaries, f->value.v_doc.data, f->value.v_doc.data_len);
      have_boundaries = true;
    } else if (key == "default") {
      default_it = it;
      default_value = bson_iter_value(&default_it);
    } else if (key == "output") {
      if (f->value_type != BSON_TYPE_DOCUMENT) {
        return Err(40196, "The $bucket 'output' field must be an object, but found type: " +
                              std::string(BsonTypeName(f->value_type)) + ".");
      }
      bson_init_static(&output, f->value.v_doc.data, f->value.v_doc.data_len);
      have_output = true;
    } else {
      return Err(40197, "Unrecognized option to $bucket: " + key + ".");
    }
  }
  if (group_by == nullptr || !have_boundaries) {
    return Err(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.");
  }
  // Boundaries: constants of one canonical type, strictly ascending.
  std::vector<Value> bounds;
  bson_iter_init(&it, &boundaries);
  while (bson_iter_next(&it)) {
    ParseContext pc;
    ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, expression::ParseExpression(*bson_iter_value(&it), &pc));
    if (e->constant() == nullptr) {
      return Err(40191, "The $bucket 'boundaries' field must be an array of constant values, but found value: " +
                            Json(*bson_iter_value(&it)) + ".");
    }
    bounds.push_back(e->constant()->Detached());
  }
  if (bounds.size() < 2) {
    return Err(40192, "The $bucket 'boundaries' field must have at least 2 values, but found " +
                          std::to_string(bounds.size()) + " value(s).");
  }
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (CanonicalTypeRank(bounds[i].type()) != CanonicalTypeRank(bounds[i - 1].type())) {
      return Err(40193, std::string("All values in the the 'boundaries' option to $bucket must have the same type. "
                                    "Found conflicting types ") +
                            expression::TypeName(bounds[i - 1]) + " and " + expression::TypeName(bounds[i]) + ".");
    }
    if (expression::CompareForExpression(bounds[i - 1], bounds[i]) >= 0) {
      return Err(40194, "The 'boundaries' option to $bucket must be sorted, but elements " + std::to_string(i - 1) +
                            " and " + std::to_string(i) + " are not in ascending order (" + Json(bounds[i - 1].bson()) +
                            " is not less than " + Json(bounds[i].bson()) + ").");
    }
  }
  if (default_value != nullptr) {
    ParseContext pc;
    ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, expression::ParseExpression(*default_value, &pc));
    if (e->constant() == nullptr) {
      return Err(40195, "The $bucket 'default' field must be a constant expression, but found: " +
                            Json(*default_value) + ".");
    }
    const Value& d = *e->constant();
    if (CanonicalTypeRank(d.type()) == CanonicalTypeRank(bounds.front().type()) &&
        expression::CompareForExpression(d, bounds.front()) >= 0 &&
        expression::CompareForExpression(d, bounds.back()) < 0) {
      return Err(40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal "
                        "to the highest boundary.");
    }
  }
  // The $group spec.
  bson_t* g = bson_new();
  bson_t id, let, vars, sw, sw_args, branches;
  BSON_APPEND_DOCUMENT_BEGIN(g, "_id", &id);
  BSON_APPEND_DOCUMENT_BEGIN(&id, "$let", &let);
  BSON_APPEND_DOCUMENT_BEGIN(&let, "vars", &vars);
  bson_append_value(&vars, "g", 1, group_by);
  bson_append_document_end(&let, &vars);
  BSON_APPEND_DOCUMENT_BEGIN(&let, "in", &sw);
  BSON_APPEND_DOCUMENT_BEGIN(&sw, "$switch", &sw_args);
  BSON_APPEND_ARRAY_BEGIN(&sw_args, "branches", &branches);
  auto literal = [](bson_t* parent, const char* key, const Value& value) {
    bson_t l;
    BSON_APPEND_DOCUMENT_BEGIN(parent, key, &l);
    value.AppendTo(&l, "$literal");
    bson_append_document_end(parent, &l);
  };
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    bson_t branch, cond, conj, gte, gte_args, lt, lt_args;
    BSON_APPEND_DOCUMENT_BEGIN(&branches, std::to_string(i).c_str(), &branch);
    BSON_APPEND_DOCUMENT_BEGIN(&branch, "case", &cond);
    BSON_APPEND_ARRAY_BEGIN(&cond, "$and", &conj);
    BSON_APPEND_DOCUMENT_BEGIN(&conj, "0", &gte);
    BSON_APPEND_ARRAY_BEGIN(&gte, "$gte", &gte_args);
    BSON_APPEND_UTF8(&gte_args, "0", "$$g");
    literal(&gte_args, "1", bounds[i]);
    bson_append_array_end(&gte, &gte_args);
    bson_append_document_end(&conj, &gte);
    BSON_APPEND_DOCUMENT_BEGIN(&conj, "1", &lt);
    BSON_APPEND_ARRAY_BEGIN(&lt, "$lt", &lt_args);
    BSON_APPEND_UTF8(&lt_args, "0", "$$g");
    literal(&lt_args, "1", bounds[i + 1]);
    bson_append_array_end(&lt, &lt_args);
    bson_append_document_end(&conj, &lt);
    bson_append_array_end(&cond, &conj);
    bson_append_document_end(&branch, &cond);
    literal(&branch, "then", bounds[i]);
    bson_append_document_end(&branches, &branch);
  }
  bson_append_array_end(&sw_args, &branches);
  if (default_value != nullptr) {
    bson_t l;
    BSON_APPEND_DOCUMENT_BEGIN(&sw_args, "default", &l);
    bson_append_value(&l, "$literal", -1, default_value);
    bson_append_document_end(&sw_args, &l);
  }
  bson_append_document_end(&sw, &sw_args);
  bson_append_document_end(&let, &sw);
  bson_append_document_end(&id, &let);
  bson_append_document_end(g, &id);
  if (have_output) {
    bson_iter_init(&it, &output);
    while (bson_iter_next(&it)) bson_append_value(g, bson_iter_key(&it), -1, bson_iter_value(&it));
  } else {
    bson_t sum;
    BSON_APPEND_DOCUMENT_BEGIN(g, "count", &sum);
    BSON_APPEND_INT32(&sum, "$sum", 1);
    bson_append_document_end(g, &sum);
  }
  Document gd = Document::Adopt(g);
  ASSIGN_OR_RETURN(std::unique_ptr<Stage> gs, MakeGroup(gd.bson(), opts));
  out->push_back(std::move(gs));
  bson_t* sd = bson_new();
  BSON_APPEND_INT32(sd, "_id", 1);
  Document sort = Document::Adopt(sd);
  ASSIGN_OR_RETURN(std::unique_ptr<projection::SortSpec> ss, projection::SortSpec::Parse(sort.bson()));
  out->push_back(std::make_unique<SortStage>(std::move(sort), std::move(ss), opts));
  return Status::OK();
}

namespace {

// ---- $sample --------------------------------------------------------------------

// A uniform sample of `size` documents in random order: each input gets a
// random key and a top-k Sorter keeps the `size` smallest (within the
// memory limit, or spilled with allowDiskUse).
class SampleStage : public Stage {
 public:
  SampleStage(int64_t size, const PipelineOptions& opts)
      : Stage("$sample"), size_(size), opts_(opts), rng_(std::random_device{}()) {
    bson_t* s = bson_new();
    BSON_APPEND_INT32(s, "r", 1);
    sort_doc_ = Document::Adopt(s);
  }
  StatusOr<bool> Next(Document* out) override {
    if (size_ == 0) return false;
    if (!sorter_) {
      ASSIGN_OR_RETURN(spec_, projection::SortSpec::Parse(sort_doc_.bson()));
      projection::SorterOptions so;
      so.max_memory_bytes = opts_.max_memory_bytes;
      so.allow_disk_use = opts_.allow_disk_use;
      so.temp_dir = opts_.temp_dir;
      so.limit = size_;
      sorter_ = std::make_unique<projection::Sorter>(spec_.get(), so);
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      Document d;
      for (;;) {
        ASSIGN_OR_RETURN(bool more, input_->Next(&d));
        if (!more) break;
        bson_t* key = bson_new();
        BSON_APPEND_DOUBLE(key, "r", uniform(rng_));
        RETURN_IF_ERROR(sorter_->Add(Document::Adopt(key), std::string(reinterpret_cast<const char*>(d.data()),
                                                                        d.size())));
      }
      RETURN_IF_ERROR(sorter_->Finish());
    }
    // The sorter's limit bounds what it holds in memory; merged spill runs
    // yield everything, so the count is kept here.
    if (returned_ >= size_) return false;
    Document key;
    std::string bytes;
    ASSIGN_OR_RETURN(bool more, sorter_->Next(&key, &bytes));
    if (!more) return false;
    ++returned_;
    ASSIGN_OR_RETURN(*out, Document::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    return true;
  }
  void Serialize(bson_t* out) const override {
    bson_t s;
    BSON_APPEND_DOCUMENT_BEGIN(out, "$sample", &s);
    BSON_APPEND_INT64(&s, "size", size_);
    bson_append_document_end(out, &s);
  }

 private:
  int64_t size_;
  PipelineOptions opts_;
  std::mt19937_64 rng_;
  Document sort_doc_;
  std::unique_ptr<projection::SortSpec> spec_;
  std::unique_ptr<projection::Sorter> sorter_;
  int64_t returned_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Stage>> MakeSample(const bson_value_t& v, const PipelineOptions& opts) {
  if (v.value_type != BSON_TYPE_DOCUMENT) return Err(28745, "the $sample stage specification must be an object");
  bson_t spec;
  bson_init_static(&spec, v.value.v_doc.data, v.value.v_doc.data_len);
  bool have_size = false;
  int64_t size = 0;
  bson_iter_t it;
  bson_iter_init(&it, &spec);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    if (key != "size") return Err(28748, "unrecognized option to $sample: " + key);
    const bson_value_t* f = bson_iter_value(&it);
    if (!IsNumberType(f->value_type)) return Err(28746, "size argument to $sample must be a number");
    long double n = NumberAsLongDouble(*f);
    if (n < 0) return Err(28747, "size argument to $sample must not be negative");
    size = n > static_cast<long double>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                             : static_cast<int64_t>(n);
    have_size = true;
  }
  if (!have_size) return Err(28749, "$sample stage must specify a size");
  return std::unique_ptr<Stage>(std::make_unique<SampleStage>(size, opts));
}

namespace {

// ---- parsing --------------------------------------------------------------------

StatusOr<int64_t> ReadCount(const bson_value_t& v, const char* stage, int type_code, int positive_code) {
  int64_t n = 0;
  if (v.value_type == BSON_TYPE_INT32) {
    n = v.value.v_int32;
  } else if (v.value_type == BSON_TYPE_INT64) {
    n = v.value.v_int64;
  } else if (v.value_type == BSON_TYPE_DOUBLE && v.value.v_double == static_cast<double>(static_cast<int64_t>(v.value.v_double))) {
    n = static_cast<int64_t>(v.value.v_double);
  } else {
    return Err(type_code, std::string("invalid argument to ") + stage + " stage: Expected a number");
  }
  if (n < 0 || (positive_code == 15958 && n == 0)) {
    return Err(positive_code, std::string("invalid argument to ") + stage + " stage: the " +
                                  (positive_code == 15958 ? "limit must be positive" : "skip must be non-negative"));
  }
  return n;
}

}  // namespace

bool IsStageName(std::string_view name) {
  static const char* const kStages[] = {
      "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$changeStreamSplitLargeEvent", "$collStats",
      "$count", "$currentOp", "$densify", "$documents", "$facet", "$fill", "$geoNear", "$graphLookup", "$group",
      "$indexStats", "$limit", "$listLocalSessions", "$listSampledQueries", "$listSearchIndexes", "$listSessions",
      "$lookup", "$match", "$merge", "$out", "$planCacheStats", "$project", "$redact", "$replaceRoot",
      "$replaceWith", "$sample", "$search", "$searchMeta", "$set", "$setWindowFields", "$shardedDataDistribution",
      "$skip", "$sort", "$sortByCount", "$unionWith", "$unset", "$unwind", "$vectorSearch"};
  for (const char* s : kStages) {
    if (name == s) return true;
  }
  return false;
}

namespace {

Status ParseStage(const char* name, const bson_value_t& v, const PipelineOptions& opts,
                  std::vector<std::unique_ptr<Stage>>* out) {
  std::string n(name);
  auto doc_arg = [&](bson_t* d) -> Status {
    if (v.value_type != BSON_TYPE_DOCUMENT) {
      return Err(n == "$match" ? 15959 : n == "$sort" ? 15973 : n == "$group" ? 15947 : 40272,
                 "the " + n + " stage specification must be an object, but found " + BsonTypeName(v.value_type));
    }
    bson_init_static(d, v.value.v_doc.data, v.value.v_doc.data_len);
    return Status::OK();
  };
  if (n == "$match") {
    bson_t d;
    RETURN_IF_ERROR(doc_arg(&d));
    ASSIGN_OR_RETURN(std::unique_ptr<ParseContext> pc, NewParseContext(opts));
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> m, query::Matcher::Parse(&d, pc.get()));
    out->push_back(std::make_unique<MatchStage>(Document::Copy(&d), std::move(pc), std::move(m), opts));
    return Status::OK();
  }
  if (n == "$project" || n == "$addFields" || n == "$set") {
    bson_t d;
    RETURN_IF_ERROR(doc_arg(&d));
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> s, MakeProject(name, &d, n != "$project", opts));
    out->push_back(std::move(s));
    return Status::OK();
  }
  if (n == "$unset") {
    bson_t* spec = bson_new();
    auto add = [&](const bson_value_t& f) -> Status {
      if (f.value_type != BSON_TYPE_UTF8) {
        return Err(31120, "$unset specification must be a string or an array containing only string values");
      }
      BSON_APPEND_INT32(spec, f.value.v_utf8.str, 0);
      return Status::OK();
    };
    Status s;
    if (v.value_type == BSON_TYPE_UTF8) {
      s = add(v);
    } else if (v.value_type == BSON_TYPE_ARRAY) {
      bson_t arr;
      bson_init_static(&arr, v.value.v_doc.data, v.value.v_doc.data_len);
      bson_iter_t it;
      bson_iter_init(&it, &arr);
      while (s.ok() && bson_iter_next(&it)) s = add(*bson_iter_value(&it));
      if (s.ok() && bson_empty(&arr)) s = Err(31119, "$unset specification must be a string or an array with at least one field");
    } else {
      s = Err(31002, "$unset specification must be a string or an array");
    }
    Document d = Document::Adopt(spec);
    RETURN_IF_ERROR(s);
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> st, MakeProject("$unset", d.bson(), false, opts));
    out->push_back(std::move(st));
    return Status::OK();
  }
  if (n == "$replaceRoot" || n == "$replaceWith") {
    bson_value_t expr_spec = v;
    if (n == "$replaceRoot") {
      bson_t d;
      if (v.value_type != BSON_TYPE_DOCUMENT) {
        return Err(40228, "$replaceRoot expects an object, got " + std::string(BsonTypeName(v.value_type)));
      }
      bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
      bson_iter_t it;
      if (!bson_iter_init_find(&it, &d, "newRoot")) return Err(40231, "no newRoot specified for the $replaceRoot stage");
      bson_iter_t all;
      bson_iter_init(&all, &d);
      while (bson_iter_next(&all)) {
        if (std::strcmp(bson_iter_key(&all), "newRoot") != 0) {
          return Err(40230, std::string("unrecognized option to $replaceRoot stage: ") + bson_iter_key(&all));
        }
      }
      expr_spec = *bson_iter_value(&it);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<ParseContext> pc, NewParseContext(opts));
    ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, expression::ParseExpression(expr_spec, pc.get()));
    bson_t* spec = bson_new();
    bson_append_value(spec, "newRoot", -1, &expr_spec);
    out->push_back(std::make_unique<ReplaceRootStage>(name, Document::Adopt(spec), std::move(e), std::move(pc),
                                                      opts));
    return Status::OK();
  }
  if (n == "$sort") {
    bson_t d;
    RETURN_IF_ERROR(doc_arg(&d));
    if (bson_empty(&d)) return Err(15976, "$sort stage must have at least one sort key");
    ASSIGN_OR_RETURN(std::unique_ptr<projection::SortSpec> spec, projection::SortSpec::Parse(&d));
    out->push_back(std::make_unique<SortStage>(Document::Copy(&d), std::move(spec), opts));
    return Status::OK();
  }
  if (n == "$limit") {
    ASSIGN_OR_RETURN(int64_t k, ReadCount(v, "$limit", 15957, 15958));
    // A $limit right after a $sort makes it a top-k sort.
    if (!out->empty()) {
      if (auto* sort = dynamic_cast<SortStage*>(out->back().get())) {
        if (sort->limit() == 0 || k < sort->limit()) sort->SetLimit(k);
        return Status::OK();
      }
    }
    out->push_back(std::make_unique<LimitStage>(k));
    return Status::OK();
  }
  if (n == "$skip") {
    ASSIGN_OR_RETURN(int64_t k, ReadCount(v, "$skip", 15972, 15956));
    out->push_back(std::make_unique<SkipStage>(k));
    return Status::OK();
  }
  if (n == "$group") {
    bson_t d;
    RETURN_IF_ERROR(doc_arg(&d));
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> s, MakeGroup(&d, opts));
    out->push_back(std::move(s));
    return Status::OK();
  }
  if (n == "$unwind") {
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> s, MakeUnwind(v));
    out->push_back(std::move(s));
    return Status::OK();
  }
  if (n == "$count") {
    if (v.value_type != BSON_TYPE_UTF8) return Err(40156, "the count field must be a non-empty string");
    std::string field(v.value.v_utf8.str, v.value.v_utf8.len);
    if (field.empty()) return Err(40157, "the count field must be a non-empty string");
    if (field[0] == '$') return Err(40158, "the count field cannot be a $-prefixed path");
    if (field.find('.') != std::string::npos) return Err(40160, "the count field cannot contain '.'");
    bson_t* g = bson_new();
    BSON_APPEND_NULL(g, "_id");
    bson_t sum;
    BSON_APPEND_DOCUMENT_BEGIN(g, field.c_str(), &sum);
    BSON_APPEND_INT32(&sum, "$sum", 1);
    bson_append_document_end(g, &sum);
    Document gd = Document::Adopt(g);
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> gs, MakeGroup(gd.bson(), opts));
    out->push_back(std::move(gs));
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> ps, MakeProject("$project", IdZero().bson(), false, opts));
    out->push_back(std::move(ps));
    return Status::OK();
  }
  if (n == "$sortByCount") {
    bool ok = (v.value_type == BSON_TYPE_UTF8 && v.value.v_utf8.len > 0 && v.value.v_utf8.str[0] == '$') ||
              IsOperatorDoc(v);
    if (!ok) {
      return Err(40148, "the sortByCount field must be defined as a $-prefixed path or an expression");
    }
    bson_t* g = bson_new();
    bson_append_value(g, "_id", 3, &v);
    bson_t sum;
    BSON_APPEND_DOCUMENT_BEGIN(g, "count", &sum);
    BSON_APPEND_INT32(&sum, "$sum", 1);
    bson_append_document_end(g, &sum);
    Document gd = Document::Adopt(g);
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> gs, MakeGroup(gd.bson(), opts));
    out->push_back(std::move(gs));
    bson_t* s = bson_new();
    BSON_APPEND_INT32(s, "count", -1);
    Document sd = Document::Adopt(s);
    ASSIGN_OR_RETURN(std::unique_ptr<projection::SortSpec> spec, projection::SortSpec::Parse(sd.bson()));
    out->push_back(std::make_unique<SortStage>(std::move(sd), std::move(spec), opts));
    return Status::OK();
  }
  if (n == "$bucket") return MakeBucket(v, opts, out);
  if (n == "$sample" || n == "$lookup" || n == "$facet" || n == "$out" || n == "$merge") {
    StatusOr<std::unique_ptr<Stage>> st = n == "$sample"   ? MakeSample(v, opts)
                                          : n == "$lookup" ? MakeLookup(v, opts)
                                          : n == "$facet"  ? MakeFacet(v, opts)
                                          : n == "$out"    ? MakeOut(v, opts)
                                                           : MakeMerge(v, opts);
    if (!st.ok()) return st.status();
    out->push_back(std::move(*st));
    return Status::OK();
  }
  if (n == "$changeStream") return Err(40602, "$changeStream is only valid as the first stage in a pipeline");
  if (IsStageName(n)) return Err(40324, "Unrecognized pipeline stage name: '" + n + "' (gatedb does not support it yet)");
  return Err(40324, "Unrecognized pipeline stage name: '" + n + "'");
}

}  // namespace

StatusOr<std::unique_ptr<Pipeline>> Pipeline::Parse(const bson_t* pipeline, const PipelineOptions& options) {
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->options_ = options;
  bson_iter_t it;
  bson_iter_init(&it, pipeline);
  while (bson_iter_next(&it)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return Status(ErrorCode::kTypeMismatch, "Each element of the 'pipeline' array must be an object");
    }
    bson_t stage;
    const bson_value_t* v = bson_iter_value(&it);
    bson_init_static(&stage, v->value.v_doc.data, v->value.v_doc.data_len);
    if (bson_count_keys(&stage) != 1) {
      return Err(40323, "A pipeline stage specification object must contain exactly one field.");
    }
    bson_iter_t s;
    bson_iter_init(&s, &stage);
    bson_iter_next(&s);
    if (!p->stages_.empty() && p->stages_.back()->writes()) {
      return Err(40601, std::string(p->stages_.back()->name()) + " can only be the final stage in the pipeline");
    }
    RETURN_IF_ERROR(ParseStage(bson_iter_key(&s), *bson_iter_value(&s), options, &p->stages_));
  }
  return p;
}

bool Pipeline::writes() const { return !stages_.empty() && stages_.back()->writes(); }

Status BindLet(const bson_t* let, PipelineOptions* opts) {
  auto vars = std::make_shared<Variables>();
  if (opts->vars) *vars = *opts->vars;
  bson_iter_t it;
  bson_iter_init(&it, let);
  // Each value is evaluated in a context that knows the variables before it.
  while (bson_iter_next(&it)) {
    std::string name = bson_iter_key(&it);
    PipelineOptions so = *opts;
    so.vars = vars;
    ASSIGN_OR_RETURN(std::unique_ptr<ParseContext> pc, NewParseContext(so));
    RETURN_IF_ERROR(ParseContext().DeclareVariable(name).status());  // MongoDB's name rules
    ASSIGN_OR_RETURN(std::unique_ptr<Expression> e, expression::ParseExpression(*bson_iter_value(&it), pc.get()));
    EvalContext ctx;
    Bind(so, &ctx);
    ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
    SetVariable(vars.get(), name, v.missing() ? Value::Null() : v.Detached());
  }
  opts->vars = std::move(vars);
  return Status::OK();
}

Pipeline::~Pipeline() = default;

LeadingQuery Pipeline::TakeLeadingQuery() {
  LeadingQuery q;
  size_t taken = 0;
  if (taken < stages_.size()) {
    auto* m = dynamic_cast<MatchStage*>(stages_[taken].get());
    if (m != nullptr && m->FindCanRun()) {
      q.filter = m->spec();
      ++taken;
    }
  }
  if (taken < stages_.size() && (taken > 0 || dynamic_cast<MatchStage*>(stages_[0].get()) == nullptr)) {
    if (auto* s = dynamic_cast<SortStage*>(stages_[taken].get())) {
      q.sort = s->spec();
      q.limit = s->limit();
      ++taken;
    }
  }
  stages_.erase(stages_.begin(), stages_.begin() + static_cast<std::ptrdiff_t>(taken));
  return q;
}

void Pipeline::SetSource(std::unique_ptr<DocStream> source) {
  source_ = std::move(source);
  source_stage_ = std::make_unique<SourceStage>(source_.get());
  Stage* prev = source_stage_.get();
  for (auto& s : stages_) {
    s->SetInput(prev);
    prev = s.get();
  }
  connected_ = true;
}

StatusOr<bool> Pipeline::Next(Document* out) {
  if (!connected_) return Status(ErrorCode::kInternalError, "pipeline without a source");
  if (stages_.empty()) return source_stage_->Next(out);
  return stages_.back()->Next(out);
}

void Pipeline::Serialize(bson_t* out) const {
  for (size_t i = 0; i < stages_.size(); ++i) {
    bson_t d;
    BSON_APPEND_DOCUMENT_BEGIN(out, std::to_string(i).c_str(), &d);
    stages_[i]->Serialize(&d);
    bson_append_document_end(out, &d);
  }
}

}  // namespace agg
}  // namespace gatedb
