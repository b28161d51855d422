// $lookup and $facet: the stages that run pipelines of their own.
//
// $lookup reads the foreign collection through the Host (at the aggregate's
// snapshot) once per input document:
//   equality form   {from, localField, foreignField, as}: the foreign
//                   documents whose foreignField equals any value found
//                   along localField (arrays expanded; none found: null),
//                   run as a find so an index on foreignField serves it;
//   pipeline form   {from, let, pipeline, as}: `let` is evaluated against
//                   the input document and its variables are declared in
//                   the sub-pipeline, which is parsed again for each input;
//   both at once    the equality match first, then the pipeline.
// A pipeline that reads no `let` variable (uncorrelated) runs once and its
// result is reused for every input.
//
// $facet buffers its input (within the memory limit) and runs each named
// sub-pipeline over it, producing one document of arrays.
#include <cstring>

#include "engine/agg/stage.h"
#include "engine/document/bson_compare.h"

namespace gatedb {
namespace agg {

using expression::EvalContext;
using expression::Expression;
using expression::ParseContext;
using expression::Value;

namespace {

// MongoDB's limit on one document's size.
constexpr size_t kMaxDocBytes = 16u << 20;

// Collects the values along `parts[i..]` of `doc`, expanding arrays on the
// way and at the end (MongoDB's extractAllElementsAlongPath).
struct Found {
  bson_value_t value;
};

void CollectAlongPath(const bson_t* doc, const std::vector<std::string>& parts, size_t i, std::vector<Found>* out) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, parts[i].c_str())) return;
  const bson_value_t* v = bson_iter_value(&it);
  const bool last = i + 1 == parts.size();
  if (v->value_type == BSON_TYPE_ARRAY) {
    bson_t arr;
    bson_init_static(&arr, v->value.v_doc.data, v->value.v_doc.data_len);
    bson_iter_t e;
    bson_iter_init(&e, &arr);
    while (bson_iter_next(&e)) {
      const bson_value_t* ev = bson_iter_value(&e);
      if (last) {
        out->push_back(Found{*ev});
      } else if (ev->value_type == BSON_TYPE_DOCUMENT) {
        bson_t sub;
        bson_init_static(&sub, ev->value.v_doc.data, ev->value.v_doc.data_len);
        CollectAlongPath(&sub, parts, i + 1, out);
      }
    }
    return;
  }
  if (last) {
    out->push_back(Found{*v});
    return;
  }
  if (v->value_type == BSON_TYPE_DOCUMENT) {
    bson_t sub;
    bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
    CollectAlongPath(&sub, parts, i + 1, out);
  }
}

// Appends every document `next` yields to the array `arr` (inside `whole`,
// whose size is checked against kMaxDocBytes after each: BSONObjectTooLarge
// with `too_large`).
template <typename Next>
Status DrainInto(Next&& next, bson_t* arr, const bson_t* whole, const std::string& too_large) {
  uint32_t n = 0;
  Document d;
  for (;;) {
    ASSIGN_OR_RETURN(bool more, next(&d));
    if (!more) return Status::OK();
    const std::string index = std::to_string(n++);  // the macro reads its key twice
    BSON_APPEND_DOCUMENT(arr, index.c_str(), d.bson());
    if (whole->len > kMaxDocBytes) return Status(ErrorCode::kBSONObjectTooLarge, too_large);
  }
}

class LookupStage : public Stage {
 public:
  struct Spec {
    Document original;  // for explain
    std::string from, as, local_field, foreign_field;
    bool equality = false;
    bool has_pipeline = false;
    Document pipeline;  // the sub-pipeline, a BSON array
    std::vector<std::pair<std::string, std::unique_ptr<Expression>>> let;
    std::unique_ptr<ParseContext> let_pc;  // the let expressions' context
  };

  LookupStage(Spec spec, const PipelineOptions& opts, PipelineOptions sub_opts)
      : Stage("$lookup"),
        spec_(std::move(spec)),
        as_parts_(SplitPath(spec_.as)),
        local_parts_(spec_.equality ? SplitPath(spec_.local_field) : std::vector<std::string>()),
        opts_(opts),
        sub_opts_(std::move(sub_opts)) {
    // Uncorrelated: no equality and no let.  (The enclosing variables do not
    // change during this stage's life: inside another $lookup's pipeline,
    // the stage is made anew for each of that $lookup's inputs.)
    cacheable_ = !spec_.equality && spec_.let.empty();
  }

  StatusOr<bool> Next(Document* out) override {
    Document in;
    ASSIGN_OR_RETURN(bool more, input_->Next(&in));
    if (!more) return false;
    if (!cacheable_ || !have_cache_) {
      ASSIGN_OR_RETURN(Document joined, Join(in));
      if (!cacheable_) return Emit(in, joined, out);
      cache_ = std::move(joined);
      have_cache_ = true;
    }
    return Emit(in, cache_, out);
  }

  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, "$lookup", spec_.original.bson()); }

 private:
  // Sets `as` in `in` to the array `joined` ({"": [...]}).
  StatusOr<bool> Emit(const Document& in, const Document& joined, Document* out) {
    bson_iter_t it;
    bson_iter_init(&it, joined.bson());
    bson_iter_next(&it);
    bson_t* o = bson_new();
    SetPath(in.bson(), as_parts_, 0, bson_iter_value(&it), o);
    if (o->len > kMaxDocBytes) {
      bson_destroy(o);
      return Status(ErrorCode::kBSONObjectTooLarge, "Total size of documents in " + spec_.from +
                                                        " matching pipeline's $lookup stage exceeds " +
                                                        std::to_string(kMaxDocBytes) + " bytes");
    }
    *out = Document::Adopt(o);
    return true;
  }

  // The foreign documents for `in`, as {"": [...]}.
  StatusOr<Document> Join(const Document& in) {
    if (opts_.host == nullptr) return Status(ErrorCode::kInternalError, "$lookup has no collection to read");
    if (!spec_.let.empty() || (opts_.vars && !opts_.vars->names.empty())) RETURN_IF_ERROR(BindVariables(in));
    LeadingQuery q;
    std::unique_ptr<Pipeline> pipeline;
    if (spec_.has_pipeline) {
      ASSIGN_OR_RETURN(pipeline, Pipeline::Parse(spec_.pipeline.bson(), sub_opts_));
      q = pipeline->TakeLeadingQuery();
    }
    if (spec_.equality) {
      Document eq = EqualityFilter(in);
      if (bson_empty(q.filter.bson())) {
        q.filter = std::move(eq);
      } else {
        bson_t* both = bson_new();
        bson_t conj;
        BSON_APPEND_ARRAY_BEGIN(both, "$and", &conj);
        BSON_APPEND_DOCUMENT(&conj, "0", eq.bson());
        BSON_APPEND_DOCUMENT(&conj, "1", q.filter.bson());
        bson_append_array_end(both, &conj);
        q.filter = Document::Adopt(both);
      }
    }
    ASSIGN_OR_RETURN(std::unique_ptr<DocStream> read, opts_.host->Read(spec_.from, q));
    DocStream* source = read.get();
    if (pipeline) {
      pipeline->SetSource(std::move(read));
      source = nullptr;
    }
    bson_t* holder = bson_new();
    bson_t arr;
    BSON_APPEND_ARRAY_BEGIN(holder, "", &arr);
    Status failed = DrainInto(
        [&](Document* d) { return pipeline ? pipeline->Next(d) : source->Next(d); }, &arr, holder,
        "Total size of documents in " + spec_.from + " matching pipeline's $lookup stage exceeds " +
            std::to_string(kMaxDocBytes) + " bytes");
    bson_append_array_end(holder, &arr);
    Document joined = Document::Adopt(holder);
    RETURN_IF_ERROR(failed);
    return joined;
  }

  // Evaluates `let` against `in` into the sub-pipeline's variables, after
  // the enclosing pipeline's current values.
  Status BindVariables(const Document& in) {
    Variables* sub = sub_opts_.vars.get();
    const size_t outer = opts_.vars ? opts_.vars->values.size() : 0;
    for (size_t i = 0; i < outer; ++i) sub->values[i] = opts_.vars->values[i];
    EvalContext ctx;
    Bind(opts_, &ctx);
    ctx.SetRoot(in.bson());
    for (const auto& [name, expr] : spec_.let) {
      ASSIGN_OR_RETURN(Value v, expr->Evaluate(ctx));
      SetVariable(sub, name, v.missing() ? Value::Null() : v.Detached());
    }
    return Status::OK();
  }

  // {foreignField: {$in: [values]}}, or an $or of $eq when a value is a
  // regex ($in would match it as a pattern); {foreignField: null} when
  // localField holds nothing.
  Document EqualityFilter(const Document& in) const {
    std::vector<Found> values;
    CollectAlongPath(in.bson(), local_parts_, 0, &values);
    bson_t* f = bson_new();
    const char* field = spec_.foreign_field.c_str();
    if (values.empty()) {
      BSON_APPEND_NULL(f, field);
      return Document::Adopt(f);
    }
    bool regex = false;
    for (const Found& v : values) regex = regex || v.value.value_type == BSON_TYPE_REGEX;
    bson_t arr;
    if (!regex) {
      bson_t in_doc;
      BSON_APPEND_DOCUMENT_BEGIN(f, field, &in_doc);
      BSON_APPEND_ARRAY_BEGIN(&in_doc, "$in", &arr);
      for (size_t i = 0; i < values.size(); ++i) bson_append_value(&arr, std::to_string(i).c_str(), -1, &values[i].value);
      bson_append_array_end(&in_doc, &arr);
      bson_append_document_end(f, &in_doc);
      return Document::Adopt(f);
    }
    BSON_APPEND_ARRAY_BEGIN(f, "$or", &arr);
    for (size_t i = 0; i < values.size(); ++i) {
      bson_t clause, eq;
      BSON_APPEND_DOCUMENT_BEGIN(&arr, std::to_string(i).c_str(), &clause);
      BSON_APPEND_DOCUMENT_BEGIN(&clause, field, &eq);
      bson_append_value(&eq, "$eq", 3, &values[i].value);
      bson_append_document_end(&clause, &eq);
      bson_append_document_end(&arr, &clause);
    }
    bson_append_array_end(f, &arr);
    return Document::Adopt(f);
  }

  Spec spec_;
  std::vector<std::string> as_parts_;
  std::vector<std::string> local_parts_;
  PipelineOptions opts_;
  PipelineOptions sub_opts_;
  bool cacheable_ = false;
  bool have_cache_ = false;
  Document cache_;
};

Status LookupArgError(const std::string& field, bson_type_t got) {
  return Err(4570, "$lookup argument '" + field + "' must be a string, found type: " + BsonTypeName(got));
}

class FacetStage : public Stage {
 public:
  FacetStage(Document spec, std::vector<std::pair<std::string, std::unique_ptr<Pipeline>>> facets,
             const PipelineOptions& opts)
      : Stage("$facet"), spec_(std::move(spec)), facets_(std::move(facets)), opts_(opts) {}

  StatusOr<bool> Next(Document* out) override {
    if (done_) return false;
    done_ = true;
    std::vector<Document> input;
    size_t bytes = 0;
    Document d;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, input_->Next(&d));
      if (!more) break;
      bytes += d.size();
      if (bytes > opts_.max_memory_bytes) {
        return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                      "$facet's input exceeded the memory limit of " + std::to_string(opts_.max_memory_bytes) +
                          " bytes");
      }
      input.push_back(std::move(d));
    }
    bson_t* o = bson_new();
    Status failed;
    for (auto& facet : facets_) {
      const std::string& name = facet.first;
      std::unique_ptr<Pipeline>& pipeline = facet.second;
      pipeline->SetSource(std::make_unique<VectorStream>(&input));
      bson_t arr;
      bson_append_array_begin(o, name.c_str(), static_cast<int>(name.size()), &arr);
      failed = DrainInto([&](Document* doc) { return pipeline->Next(doc); }, &arr, o,
                         "document constructed by $facet is larger than " + std::to_string(kMaxDocBytes) + " bytes");
      bson_append_array_end(o, &arr);
      pipeline.reset();  // its sorters' memory and files go now
      if (!failed.ok()) break;
    }
    if (!failed.ok()) {
      bson_destroy(o);
      return failed;
    }
    *out = Document::Adopt(o);
    return true;
  }

  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, "$facet", spec_.bson()); }

 private:
  Document spec_;
  std::vector<std::pair<std::string, std::unique_ptr<Pipeline>>> facets_;
  PipelineOptions opts_;
  bool done_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Stage>> MakeLookup(const bson_value_t& v, const PipelineOptions& opts) {
  if (v.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40319, "the $lookup stage specification must be an object, but found " +
                          std::string(BsonTypeName(v.value_type)));
  }
  bson_t d;
  bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
  LookupStage::Spec spec;
  spec.original = Document::Copy(&d);
  bool have_from = false, have_as = false, have_local = false, have_foreign = false;
  Document let;
  bool have_let = false;
  bson_iter_t it;
  bson_iter_init(&it, &d);
  while (bson_iter_next(&it)) {
    std::string key = bson_iter_key(&it);
    const bson_value_t* f = bson_iter_value(&it);
    auto read_string = [&](std::string* out) -> Status {
      if (f->value_type != BSON_TYPE_UTF8) return LookupArgError(key, f->value_type);
      out->assign(f->value.v_utf8.str, f->value.v_utf8.len);
      return Status::OK();
    };
    if (key == "from") {
      if (f->value_type != BSON_TYPE_UTF8) {
        return Err(40321, "$lookup 'from' field must be a string, but found " + std::string(BsonTypeName(f->value_type)));
      }
      spec.from.assign(f->value.v_utf8.str, f->value.v_utf8.len);
      have_from = true;
    } else if (key == "as") {
      RETURN_IF_ERROR(read_string(&spec.as));
      have_as = true;
    } else if (key == "localField") {
      RETURN_IF_ERROR(read_string(&spec.local_field));
      have_local = true;
    } else if (key == "foreignField") {
      RETURN_IF_ERROR(read_string(&spec.foreign_field));
      have_foreign = true;
    } else if (key == "let") {
      if (f->value_type != BSON_TYPE_DOCUMENT) {
        return Status(ErrorCode::kFailedToParse, "$lookup argument 'let' must be an object, is type " +
                                                     std::string(BsonTypeName(f->value_type)));
      }
      bson_t ld;
      bson_init_static(&ld, f->value.v_doc.data, f->value.v_doc.data_len);
      let = Document::Copy(&ld);
      have_let = true;
    } else if (key == "pipeline") {
      if (f->value_type != BSON_TYPE_ARRAY) {
        return Status(ErrorCode::kFailedToParse, "$lookup argument 'pipeline' must be an array, is type " +
                                                     std::string(BsonTypeName(f->value_type)));
      }
      bson_t arr;
      bson_init_static(&arr, f->value.v_doc.data, f->value.v_doc.data_len);
      spec.pipeline = Document::Copy(&arr);
      spec.has_pipeline = true;
    } else {
      return Status(ErrorCode::kFailedToParse, "unknown argument to $lookup: " + key);
    }
  }
  if (!have_from) return Err(40320, "missing 'from' option to $lookup stage specification");
  if (!have_as) return Status(ErrorCode::kFailedToParse, "must specify 'as' field for a $lookup");
  RETURN_IF_ERROR(CheckFieldPath(spec.as));
  if (have_local != have_foreign) {
    return Status(ErrorCode::kFailedToParse,
                  "$lookup requires both or neither of 'localField' and 'foreignField' to be specified");
  }
  spec.equality = have_local;
  if (!spec.equality && !spec.has_pipeline) {
    return Status(ErrorCode::kFailedToParse,
                  "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified");
  }
  if (have_let && !spec.has_pipeline) {
    return Status(ErrorCode::kFailedToParse, "$lookup with a 'let' argument must also specify 'pipeline'");
  }
  if (spec.equality) {
    RETURN_IF_ERROR(CheckFieldPath(spec.local_field));
    RETURN_IF_ERROR(CheckFieldPath(spec.foreign_field));
  }
  if (spec.from.empty() || spec.from.find('$') != std::string::npos || spec.from[0] == '.') {
    return Status(ErrorCode::kInvalidNamespace, "invalid $lookup namespace: " + opts.db + "." + spec.from);
  }
  // `let`: parsed in the enclosing pipeline's context, evaluated per input.
  ASSIGN_OR_RETURN(spec.let_pc, NewParseContext(opts));
  PipelineOptions sub = opts;
  sub.nesting = PipelineOptions::Nesting::kLookup;
  sub.vars = std::make_shared<Variables>();
  if (opts.vars) *sub.vars = *opts.vars;
  if (have_let) {
    bson_iter_init(&it, let.bson());
    while (bson_iter_next(&it)) {
      std::string name = bson_iter_key(&it);
      RETURN_IF_ERROR(ParseContext().DeclareVariable(name).status());  // MongoDB's name rules
      ASSIGN_OR_RETURN(std::unique_ptr<Expression> e,
                       expression::ParseExpression(*bson_iter_value(&it), spec.let_pc.get()));
      SetVariable(sub.vars.get(), name, Value::Null());
      spec.let.emplace_back(name, std::move(e));
    }
  }
  // Parsed once now for its errors; again for each input when it runs.
  if (spec.has_pipeline) RETURN_IF_ERROR(Pipeline::Parse(spec.pipeline.bson(), sub).status());
  return std::unique_ptr<Stage>(std::make_unique<LookupStage>(std::move(spec), opts, std::move(sub)));
}

StatusOr<std::unique_ptr<Stage>> MakeFacet(const bson_value_t& v, const PipelineOptions& opts) {
  if (opts.nesting == PipelineOptions::Nesting::kFacet) {
    return Err(40600, "$facet is not allowed to be used within a $facet stage");
  }
  if (v.value_type != BSON_TYPE_DOCUMENT) {
    return Err(15947, "the $facet specification must be a non-empty object, but found: " +
                          std::string(BsonTypeName(v.value_type)));
  }
  bson_t d;
  bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
  if (bson_empty(&d)) return Err(40169, "the $facet specification must be a non-empty object");
  PipelineOptions sub = opts;
  sub.nesting = PipelineOptions::Nesting::kFacet;
  std::vector<std::pair<std::string, std::unique_ptr<Pipeline>>> facets;
  bson_iter_t it;
  bson_iter_init(&it, &d);
  while (bson_iter_next(&it)) {
    std::string name = bson_iter_key(&it);
    RETURN_IF_ERROR(CheckFieldPath(name));
    if (name.find('.') != std::string::npos) {
      return Err(40170, "$facet output field names cannot contain '.': " + name);
    }
    if (!BSON_ITER_HOLDS_ARRAY(&it)) {
      return Err(40170, "arguments to $facet must be arrays, " + name + " is type " +
                            BsonTypeName(bson_iter_type(&it)));
    }
    const bson_value_t* f = bson_iter_value(&it);
    bson_t arr;
    bson_init_static(&arr, f->value.v_doc.data, f->value.v_doc.data_len);
    if (bson_empty(&arr)) return Err(40171, "sub-pipeline in $facet stage cannot be empty: " + name);
    ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, Pipeline::Parse(&arr, sub));
    facets.emplace_back(name, std::move(p));
  }
  return std::unique_ptr<Stage>(std::make_unique<FacetStage>(Document::Copy(&d), std::move(facets), opts));
}

}  // namespace agg
}  // namespace gatedb
