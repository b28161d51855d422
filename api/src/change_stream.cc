// The typed API's change streams: Collection::Watch and Database::Watch open
// the same engine cursor the aggregate command does (DBImpl::ChangeStreamPage)
// and read it with GetMore, as a driver would.
#include <bson/bson.h>

#include "api/src/database_rep.h"
#include "engine/storage/db_impl.h"
#include "gatedb/collection.h"
#include "gatedb/cursor.h"
#include "gatedb/db.h"

namespace gatedb {

struct ChangeStream::Rep {
  DBImpl* db = nullptr;
  std::string ns;  // the cursor's
  int64_t id = 0;
  int64_t batch_size = 101;
  int64_t max_await_ms = 1000;
  std::vector<Document> batch;
  size_t pos = 0;
  Document batch_token;  // the batch's postBatchResumeToken
  Document token;
  bool done = false;
};

namespace {

// [{$changeStream: {...options}}, ...pipeline]
StatusOr<Document> FullPipeline(DocumentView pipeline, const ChangeStreamOptions& options, bool all_for_cluster) {
  bson_t* p = bson_new();
  bson_t stage, spec;
  BSON_APPEND_DOCUMENT_BEGIN(p, "0", &stage);
  BSON_APPEND_DOCUMENT_BEGIN(&stage, "$changeStream", &spec);
  if (options.update_lookup) BSON_APPEND_UTF8(&spec, "fullDocument", "updateLookup");
  if (!options.resume_after.empty()) BSON_APPEND_DOCUMENT(&spec, "resumeAfter", options.resume_after.bson());
  if (!options.start_after.empty()) BSON_APPEND_DOCUMENT(&spec, "startAfter", options.start_after.bson());
  if (all_for_cluster) BSON_APPEND_BOOL(&spec, "allChangesForCluster", true);
  bson_append_document_end(&stage, &spec);
  bson_append_document_end(p, &stage);
  if (pipeline.bson() != nullptr) {
    bson_iter_t it;
    bson_iter_init(&it, pipeline.bson());
    uint32_t i = 1;
    while (bson_iter_next(&it)) {
      std::string key = std::to_string(i++);
      bson_append_value(p, key.c_str(), -1, bson_iter_value(&it));
    }
  }
  return Document::Adopt(p);
}

StatusOr<std::unique_ptr<ChangeStream::Rep>> OpenStream(DBImpl* db, const Namespace& ns, bool collectionless, bool all,
                                                  DocumentView pipeline, const ChangeStreamOptions& options) {
  if (options.batch_size <= 0) return Status(ErrorCode::kBadValue, "batch_size must be positive");
  if (options.max_await_ms < 0) return Status(ErrorCode::kBadValue, "max_await_ms must be >= 0");
  AggregateRequest req;
  req.ns = ns;
  req.collectionless = collectionless;
  ASSIGN_OR_RETURN(req.pipeline, FullPipeline(pipeline, options, all));
  CursorRequest page;
  page.batch_size = options.batch_size;
  ASSIGN_OR_RETURN(CursorPage first, db->ChangeStreamPage(req, page));
  auto rep = std::make_unique<ChangeStream::Rep>();
  rep->db = db;
  rep->ns = first.ns;
  rep->id = first.cursor_id;
  rep->batch_size = options.batch_size;
  rep->max_await_ms = options.max_await_ms;
  rep->batch = std::move(first.batch.docs);
  rep->batch_token = std::move(first.batch.post_batch_resume_token);
  rep->token = Document::Copy(rep->batch_token.bson());
  if (!rep->batch.empty()) rep->token = Document();  // set as the events are read
  return rep;
}

}  // namespace

ChangeStream::ChangeStream(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
ChangeStream::ChangeStream(ChangeStream&& other) noexcept = default;
ChangeStream& ChangeStream::operator=(ChangeStream&& other) noexcept {
  if (this != &other) {
    ChangeStream dying(std::move(*this));  // closes the stream this one held
    rep_ = std::move(other.rep_);
  }
  return *this;
}
ChangeStream::~ChangeStream() {
  if (rep_ != nullptr && rep_->id != 0) rep_->db->KillCursors(rep_->ns, {rep_->id});
}

StatusOr<bool> ChangeStream::Next(Document* event) {
  if (rep_ == nullptr) return false;
  Rep& r = *rep_;
  if (r.pos == r.batch.size()) {
    if (r.id == 0) {
      r.done = true;
      return false;
    }
    CursorRequest req;
    req.batch_size = r.batch_size;
    req.max_await_ms = r.max_await_ms;
    StatusOr<CursorPage> page = r.db->GetMore(r.id, r.ns, req);
    if (!page.ok()) {
      r.id = 0;  // the store dropped it
      return page.status();
    }
    r.batch = std::move(page->batch.docs);
    r.pos = 0;
    r.id = page->cursor_id;
    r.batch_token = std::move(page->batch.post_batch_resume_token);
    if (r.batch.empty()) {
      r.token = Document::Copy(r.batch_token.bson());
      r.done = r.id == 0;
      return false;
    }
  }
  *event = std::move(r.batch[r.pos++]);
  // The driver's rule: the batch's token after its last event, else the
  // event's own _id.
  bson_iter_t it;
  if (r.pos == r.batch.size() && !r.batch_token.empty()) {
    r.token = Document::Copy(r.batch_token.bson());
  } else if (bson_iter_init_find(&it, event->bson(), "_id") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    const bson_value_t* v = bson_iter_value(&it);
    bson_t id;
    bson_init_static(&id, v->value.v_doc.data, v->value.v_doc.data_len);
    r.token = Document::Copy(&id);
  }
  if (r.pos == r.batch.size() && r.id == 0) r.done = true;
  return true;
}

const Document& ChangeStream::resume_token() const {
  static const Document kNone;
  return rep_ != nullptr ? rep_->token : kNone;
}

bool ChangeStream::done() const { return rep_ == nullptr || rep_->done; }

StatusOr<ChangeStream> Collection::Watch(DocumentView pipeline, const ChangeStreamOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, db_->rep_->Caller(db_->identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, db_name_, name_));
  ASSIGN_OR_RETURN(std::unique_ptr<ChangeStream::Rep> rep,
                   OpenStream(db_->rep_->db.get(), Namespace{db_name_, name_}, false, false, pipeline, options));
  return ChangeStream(std::move(rep));
}

StatusOr<ChangeStream> Database::Watch(std::string_view db, DocumentView pipeline, const ChangeStreamOptions& options) {
  Namespace ns{db.empty() ? std::string("admin") : std::string(db), ""};
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) {
    RETURN_IF_ERROR(db.empty() ? caller->Check(auth::Action::kFind, auth::Target::Cluster(), "watch every database")
                               : caller->CheckNamespace(auth::Action::kFind, ns.db, ""));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ChangeStream::Rep> rep, OpenStream(rep_->db.get(), ns, true, db.empty(), pipeline, options));
  return ChangeStream(std::move(rep));
}

}  // namespace gatedb
