// $out and $merge: the stages that write their input into a collection,
// every document through the storage layer's write gate (Host).  Both must
// end the command's own pipeline, and output nothing.
//
// $out sorts its input by _id (within the memory limit, or spilled with
// allowDiskUse) and hands it to Host::ReplaceContents, which walks it
// beside the target's documents: replace, insert or delete, per document.
// $merge writes its input in batches of kMergeBatch with Host::Merge.
#include <cstring>

#include "engine/agg/stage.h"
#include "engine/document/bson_compare.h"
#include "engine/projection/sort.h"
#include "engine/projection/sorter.h"

namespace gatedb {
namespace agg {

namespace {

constexpr size_t kMergeBatch = 256;

// A document with an _id (a new ObjectId first when it has none), as $out
// and $merge write it.
Document WithId(Document doc) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc.bson(), "_id")) return doc;
  bson_oid_t oid;
  bson_oid_init(&oid, nullptr);
  bson_t* o = bson_new();
  BSON_APPEND_OID(o, "_id", &oid);
  bson_concat(o, doc.bson());
  return Document::Adopt(o);
}

Status CheckWritable(const char* stage, const PipelineOptions& opts) {
  if (opts.nesting == PipelineOptions::Nesting::kFacet) {
    return Err(40600, std::string(stage) + " is not allowed to be used within a $facet stage");
  }
  if (opts.nesting == PipelineOptions::Nesting::kLookup) {
    return Err(51047, std::string(stage) + " is not allowed within a $lookup's sub-pipeline");
  }
  if (opts.in_transaction) {
    return Status(ErrorCode::kOperationNotSupportedInTransaction,
                  std::string(stage) + " cannot be used in a transaction");
  }
  return Status::OK();
}

// {db, coll} or a collection name of the aggregate's database.
Status ReadTarget(const char* stage, const bson_value_t& v, const PipelineOptions& opts, int type_code,
                  std::string* db, std::string* coll) {
  *db = opts.db;
  if (v.value_type == BSON_TYPE_UTF8) {
    coll->assign(v.value.v_utf8.str, v.value.v_utf8.len);
  } else if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_t d;
    bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
    bool have_db = false, have_coll = false;
    bson_iter_t it;
    bson_iter_init(&it, &d);
    while (bson_iter_next(&it)) {
      std::string key = bson_iter_key(&it);
      if ((key == "db" || key == "coll") && !BSON_ITER_HOLDS_UTF8(&it)) {
        return Status(ErrorCode::kTypeMismatch, std::string(stage) + "." + key + " must be a string");
      }
      if (key == "db") {
        *db = bson_iter_utf8(&it, nullptr);
        have_db = true;
      } else if (key == "coll") {
        *coll = bson_iter_utf8(&it, nullptr);
        have_coll = true;
      } else if (key == "timeseries") {
        return Status(ErrorCode::kBadValue, std::string(stage) + " into a time series collection is not supported");
      } else {
        return Status(ErrorCode::kLocation40415, "BSON field '" + std::string(stage) + "." + key +
                                                     "' is an unknown field.");
      }
    }
    if (!have_db || !have_coll) {
      return Err(16994, std::string("If ") + stage +
                            "'s parameter is an object, it must have both db and coll fields");
    }
  } else {
    return Err(type_code, std::string(stage) + " only supports a string or object argument, not " +
                              BsonTypeName(v.value_type));
  }
  if (coll->rfind("system.", 0) == 0) return Err(17385, "Can't " + std::string(stage) + " to special collection: " + *coll);
  return Status::OK();
}

class OutStage : public Stage {
 public:
  OutStage(std::string db, std::string coll, const PipelineOptions& opts)
      : Stage("$out"), db_(std::move(db)), coll_(std::move(coll)), opts_(opts) {}

  bool writes() const override { return true; }

  StatusOr<bool> Next(Document*) override {
    if (done_) return false;
    done_ = true;
    if (opts_.host == nullptr) return Status(ErrorCode::kInternalError, "$out has no collection to write");
    bson_t* s = bson_new();
    BSON_APPEND_INT32(s, "_id", 1);
    Document sort_doc = Document::Adopt(s);
    ASSIGN_OR_RETURN(std::unique_ptr<projection::SortSpec> spec, projection::SortSpec::Parse(sort_doc.bson()));
    projection::SorterOptions so;
    so.max_memory_bytes = opts_.max_memory_bytes;
    so.allow_disk_use = opts_.allow_disk_use;
    so.temp_dir = opts_.temp_dir;
    projection::Sorter sorter(spec.get(), so);
    Document d;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, input_->Next(&d));
      if (!more) break;
      RETURN_IF_ERROR(sorter.Add(WithId(std::move(d)), std::string()));
    }
    RETURN_IF_ERROR(sorter.Finish());
    SorterStream sorted(&sorter);
    RETURN_IF_ERROR(opts_.host->ReplaceContents(db_, coll_, &sorted));
    return false;
  }

  void Serialize(bson_t* out) const override {
    bson_t s;
    BSON_APPEND_DOCUMENT_BEGIN(out, "$out", &s);
    BSON_APPEND_UTF8(&s, "db", db_.c_str());
    BSON_APPEND_UTF8(&s, "coll", coll_.c_str());
    bson_append_document_end(out, &s);
  }

 private:
  class SorterStream : public DocStream {
   public:
    explicit SorterStream(projection::Sorter* sorter) : sorter_(sorter) {}
    StatusOr<bool> Next(Document* out) override {
      std::string extra;
      return sorter_->Next(out, &extra);
    }

   private:
    projection::Sorter* sorter_;
  };

  std::string db_, coll_;
  PipelineOptions opts_;
  bool done_ = false;
};

class MergeStage : public Stage {
 public:
  MergeStage(Document original, MergeSpec spec, const PipelineOptions& opts)
      : Stage("$merge"), original_(std::move(original)), spec_(std::move(spec)), opts_(opts) {}

  bool writes() const override { return true; }

  StatusOr<bool> Next(Document*) override {
    if (done_) return false;
    done_ = true;
    if (opts_.host == nullptr) return Status(ErrorCode::kInternalError, "$merge has no collection to write");
    if (!(spec_.on.size() == 1 && spec_.on[0] == "_id")) {
      ASSIGN_OR_RETURN(bool unique, opts_.host->HasUniqueIndexOn(spec_.db, spec_.coll, spec_.on));
      if (!unique) return Err(51183, "Cannot find index to verify that join fields will be unique");
    }
    std::vector<Document> batch;
    Document d;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, input_->Next(&d));
      if (!more) break;
      d = WithId(std::move(d));
      RETURN_IF_ERROR(CheckOnFields(d));
      batch.push_back(std::move(d));
      if (batch.size() == kMergeBatch) {
        RETURN_IF_ERROR(opts_.host->Merge(spec_, &batch));
        batch.clear();
      }
    }
    if (!batch.empty()) RETURN_IF_ERROR(opts_.host->Merge(spec_, &batch));
    return false;
  }

  void Serialize(bson_t* out) const override { BSON_APPEND_DOCUMENT(out, "$merge", original_.bson()); }

 private:
  // Every `on` field is present, and neither null, undefined nor an array.
  Status CheckOnFields(const Document& d) const {
    for (const std::string& f : spec_.on) {
      bson_iter_t it, v;
      bool ok = bson_iter_init(&it, d.bson()) && bson_iter_find_descendant(&it, f.c_str(), &v);
      if (ok) {
        bson_type_t t = bson_iter_type(&v);
        ok = t != BSON_TYPE_NULL && t != BSON_TYPE_UNDEFINED && t != BSON_TYPE_ARRAY;
      }
      if (!ok) {
        return Err(51132, "$merge write error: 'on' field '" + f +
                              "' cannot be missing, null, undefined or an array");
      }
    }
    return Status::OK();
  }

  Document original_;
  MergeSpec spec_;
  PipelineOptions opts_;
  bool done_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Stage>> MakeOut(const bson_value_t& v, const PipelineOptions& opts) {
  RETURN_IF_ERROR(CheckWritable("$out", opts));
  std::string db, coll;
  RETURN_IF_ERROR(ReadTarget("$out", v, opts, 16990, &db, &coll));
  return std::unique_ptr<Stage>(std::make_unique<OutStage>(std::move(db), std::move(coll), opts));
}

StatusOr<std::unique_ptr<Stage>> MakeMerge(const bson_value_t& v, const PipelineOptions& opts) {
  RETURN_IF_ERROR(CheckWritable("$merge", opts));
  MergeSpec spec;
  spec.on = {"_id"};
  bson_t* original = bson_new();
  if (v.value_type == BSON_TYPE_UTF8) {
    spec.db = opts.db;
    spec.coll.assign(v.value.v_utf8.str, v.value.v_utf8.len);
    bson_append_value(original, "into", -1, &v);
  } else if (v.value_type == BSON_TYPE_DOCUMENT) {
    bson_t d;
    bson_init_static(&d, v.value.v_doc.data, v.value.v_doc.data_len);
    bson_concat(original, &d);
    bool have_into = false;
    bson_iter_t it;
    bson_iter_init(&it, &d);
    Status s;
    while (s.ok() && bson_iter_next(&it)) {
      std::string key = bson_iter_key(&it);
      const bson_value_t* f = bson_iter_value(&it);
      if (key == "into") {
        have_into = true;
        s = ReadTarget("$merge", *f, opts, 51178, &spec.db, &spec.coll);
      } else if (key == "on") {
        spec.on.clear();
        if (f->value_type == BSON_TYPE_UTF8) {
          spec.on.emplace_back(f->value.v_utf8.str, f->value.v_utf8.len);
        } else if (f->value_type == BSON_TYPE_ARRAY) {
          bson_t arr;
          bson_init_static(&arr, f->value.v_doc.data, f->value.v_doc.data_len);
          bson_iter_t e;
          bson_iter_init(&e, &arr);
          while (s.ok() && bson_iter_next(&e)) {
            if (!BSON_ITER_HOLDS_UTF8(&e)) {
              s = Err(51134, "$merge 'on' array elements must be strings, but found " +
                                 std::string(BsonTypeName(bson_iter_type(&e))));
            } else {
              std::string field = bson_iter_utf8(&e, nullptr);
              for (const std::string& seen : spec.on) {
                if (seen == field) s = Err(31465, "Found a duplicate field '" + field + "' in $merge 'on'");
              }
              spec.on.push_back(field);
            }
          }
          if (s.ok() && spec.on.empty()) s = Err(51187, "If explicitly specifying $merge 'on', it must contain at least one field");
        } else {
          s = Err(51186, "$merge 'on' field must be either a string or an array of strings, but found " +
                             std::string(BsonTypeName(f->value_type)));
        }
        for (const std::string& field : spec.on) {
          if (s.ok()) s = CheckFieldPath(field);
        }
      } else if (key == "whenMatched") {
        if (f->value_type == BSON_TYPE_ARRAY) {
          s = Status(ErrorCode::kBadValue, "$merge with a whenMatched pipeline is not supported by gatedb yet");
        } else if (f->value_type != BSON_TYPE_UTF8) {
          s = Err(51191, "$merge 'whenMatched' must be a string or an array, but found " +
                             std::string(BsonTypeName(f->value_type)));
        } else {
          std::string m(f->value.v_utf8.str, f->value.v_utf8.len);
          if (m == "replace") {
            spec.when_matched = MergeSpec::Matched::kReplace;
          } else if (m == "keepExisting") {
            spec.when_matched = MergeSpec::Matched::kKeepExisting;
          } else if (m == "merge") {
            spec.when_matched = MergeSpec::Matched::kMerge;
          } else if (m == "fail") {
            spec.when_matched = MergeSpec::Matched::kFail;
          } else {
            s = Status(ErrorCode::kBadValue, "Enumeration value '" + m +
                                                 "' for field '$merge.whenMatched' is not a valid value.");
          }
        }
      } else if (key == "whenNotMatched") {
        if (f->value_type != BSON_TYPE_UTF8) {
          s = Status(ErrorCode::kTypeMismatch, "BSON field '$merge.whenNotMatched' is the wrong type '" +
                                                   std::string(BsonTypeName(f->value_type)) +
                                                   "', expected type 'string'");
        } else {
          std::string m(f->value.v_utf8.str, f->value.v_utf8.len);
          if (m == "insert") {
            spec.when_not_matched = MergeSpec::NotMatched::kInsert;
          } else if (m == "discard") {
            spec.when_not_matched = MergeSpec::NotMatched::kDiscard;
          } else if (m == "fail") {
            spec.when_not_matched = MergeSpec::NotMatched::kFail;
          } else {
            s = Status(ErrorCode::kBadValue, "Enumeration value '" + m +
                                                 "' for field '$merge.whenNotMatched' is not a valid value.");
          }
        }
      } else if (key == "let") {
        s = Status(ErrorCode::kBadValue, "$merge's let is not supported by gatedb yet (it serves whenMatched "
                                         "pipelines, which are not supported either)");
      } else {
        s = Status(ErrorCode::kLocation40415, "BSON field '$merge." + key + "' is an unknown field.");
      }
    }
    if (s.ok() && !have_into) s = Status(ErrorCode::kLocation40414, "BSON field '$merge.into' is missing but a required field");
    if (!s.ok()) {
      bson_destroy(original);
      return s;
    }
  } else {
    bson_destroy(original);
    return Err(51182, "$merge only supports a string or object argument, not " + std::string(BsonTypeName(v.value_type)));
  }
  if (spec.coll.rfind("system.", 0) == 0) {
    bson_destroy(original);
    return Err(17385, "Can't $merge to special collection: " + spec.coll);
  }
  return std::unique_ptr<Stage>(std::make_unique<MergeStage>(Document::Adopt(original), std::move(spec), opts));
}

}  // namespace agg
}  // namespace gatedb
