// DBImpl: change streams.  An aggregate whose first stage is $changeStream
// opens a tailable cursor over the journal: each committed write's event
// becomes a MongoDB change event (insert, update, replace, delete, drop,
// dropDatabase, invalidate) plus gatedb's versionBefore, versionAfter and
// writeContext, then passes through the pipeline's other stages (only the
// ones that transform one event at a time, as MongoDB allows).
//
// Position and resume tokens.  The stream's position is a journal seq:
// every event up to it has been consumed.  An event's _id (its resume
// token) is {_data: hex(format, seq, kind)}; postBatchResumeToken is the
// token of the position after each batch, so it advances while nothing in
// scope happens.  Tokens stay valid across restarts for as long as the
// journal retains the events after them; resuming from one whose events
// were collected is ChangeStreamHistoryLost.
//
// Waiting.  The first batch never waits; a getMore that finds nothing waits
// up to its maxTimeMS (MongoDB's default: 1 s) for the journal to publish
// more.  (The wire server asks with CursorRequest::no_wait and does the
// waiting itself, so that a waiting stream holds no worker thread.)
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>

#include "engine/agg/pipeline.h"
#include "engine/agg/stage.h"
#include "engine/query/matcher.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/doc_util.h"
#include "wal/journal.h"

namespace gatedb {

namespace {

constexpr char kTokenFormat[] = "01";      // the first two hex digits of every gatedb token
constexpr size_t kTokenHexSize = 2 + 16 + 2;
constexpr int64_t kDefaultAwaitMs = 1000;  // MongoDB's awaitData default
constexpr size_t kReadChunk = 256;         // journal events per read
constexpr size_t kMaxEventBytes = 16u << 20;

enum class TokenKind : uint8_t { kEvent = 0, kInvalidate = 1 };

Document Token(uint64_t seq, TokenKind kind) {
  char hex[kTokenHexSize + 1];
  std::snprintf(hex, sizeof hex, "%s%016" PRIx64 "%02x", kTokenFormat, seq, static_cast<unsigned>(kind));
  bson_t* b = bson_new();
  BSON_APPEND_UTF8(b, "_data", hex);
  return Document::Adopt(b);
}

Status BadToken(const std::string& why) {
  return Status(ErrorCode::kInvalidResumeToken, "invalid resume token: " + why);
}

Status DecodeToken(const bson_iter_t* it, const char* option, uint64_t* seq, TokenKind* kind) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) {
    return Status(ErrorCode::kTypeMismatch,
                  std::string("BSON field '$changeStream.") + option + "' is the wrong type, expected type 'object'");
  }
  bson_iter_t f;
  bson_iter_recurse(it, &f);
  std::string data;
  while (bson_iter_next(&f)) {
    if (std::strcmp(bson_iter_key(&f), "_data") != 0 || !BSON_ITER_HOLDS_UTF8(&f) || !data.empty()) {
      return BadToken("expected a document {_data: <string>} from a gatedb change event");
    }
    data = bson_iter_utf8(&f, nullptr);
  }
  if (data.size() != kTokenHexSize || data.compare(0, 2, kTokenFormat) != 0) {
    return BadToken("'" + data + "' was not made by gatedb (or by this version of it)");
  }
  uint64_t s = 0;
  unsigned k = 0;
  for (size_t i = 2; i < kTokenHexSize; ++i) {
    char c = data[i];
    unsigned d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 16;
    if (d == 16) return BadToken("'" + data + "' is not lower-case hex");
    if (i < 18) {
      s = (s << 4) | d;
    } else {
      k = (k << 4) | d;
    }
  }
  if (k > 1) return BadToken("'" + data + "' has an unknown kind");
  *seq = s;
  *kind = static_cast<TokenKind>(k);
  return Status::OK();
}

bool IsInternalDb(std::string_view db) { return db == "admin" || db == "config" || db == "local"; }

// The stages MongoDB lets follow $changeStream: they take one event and give
// at most one.
bool AllowedAfterChangeStream(std::string_view stage) {
  return stage == "$match" || stage == "$project" || stage == "$addFields" || stage == "$set" ||
         stage == "$unset" || stage == "$replaceRoot" || stage == "$replaceWith";
}

// The change events, fed to the pipeline's other stages one at a time.
class EventQueue : public agg::DocStream {
 public:
  StatusOr<bool> Next(Document* out) override {
    if (queue_.empty()) return false;
    *out = std::move(queue_.front());
    queue_.pop_front();
    last_id_ = std::move(ids_.front());
    ids_.pop_front();
    return true;
  }
  void Push(Document event, Document id) {
    queue_.push_back(std::move(event));
    ids_.push_back(std::move(id));
  }
  // The _id (resume token) of the event pulled last.
  const Document& last_id() const { return last_id_; }

 private:
  std::deque<Document> queue_;
  std::deque<Document> ids_;
  Document last_id_;
};

void AppendTimes(uint64_t seq, int64_t at_ms, bson_t* out) {
  // clusterTime: (seconds of the commit, the seq's low 32 bits), so that it
  // orders as the journal does.
  bson_append_timestamp(out, "clusterTime", -1, static_cast<uint32_t>(at_ms / 1000),
                        static_cast<uint32_t>(seq & 0xffffffffu));
  BSON_APPEND_DATE_TIME(out, "wallTime", at_ms);
}

// {db, coll} (coll only for a collection's ns) under `key`.
void AppendNs(const char* key, std::string_view ns, bool collection, bson_t* out) {
  bson_t d;
  BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
  size_t dot = ns.find('.');
  std::string db(collection ? ns.substr(0, dot) : ns);
  BSON_APPEND_UTF8(&d, "db", db.c_str());
  if (collection && dot != std::string_view::npos) {
    std::string coll(ns.substr(dot + 1));
    BSON_APPEND_UTF8(&d, "coll", coll.c_str());
  }
  bson_append_document_end(out, &d);
}

}  // namespace

class DBImpl::ChangeStreamSource : public CursorSource {
 public:
  explicit ChangeStreamSource(DBImpl* db) : db_(db) {}

  Status Open(const AggregateRequest& req) {
    if (req.scope != nullptr) {
      return Status(ErrorCode::kOperationNotSupportedInTransaction,
                    "Operation not permitted in transaction :: caused by :: $changeStream");
    }
    bson_iter_t it;
    bson_iter_init(&it, req.pipeline.bson());
    bson_iter_next(&it);  // the $changeStream stage (the caller checked)
    bson_iter_t stage;
    bson_iter_recurse(&it, &stage);
    bson_iter_next(&stage);
    RETURN_IF_ERROR(ParseSpec(req, &stage));
    RETURN_IF_ERROR(ParseRest(req, &it));
    return Status::OK();
  }

  // The cursor's namespace, as MongoDB's.
  std::string CursorNs(const AggregateRequest& req) const {
    return req.collectionless ? req.ns.db + "." + kCollectionlessCursorColl : req.ns.full();
  }

  Status NextBatch(int64_t max_docs, size_t max_bytes, CursorBatch* out) override {
    const int64_t wait = first_batch_ ? 0 : (await_ms_ >= 0 ? await_ms_ : kDefaultAwaitMs);
    first_batch_ = false;
    await_ms_ = -1;
    const int64_t deadline = SteadyNowMs() + wait;
    auto room = [&](const Document& d) {
      if (max_docs > 0 && static_cast<int64_t>(out->docs.size()) >= max_docs) return false;
      return out->docs.empty() || out->bytes + d.size() <= max_bytes;
    };
    auto drain = [&] {
      while (!pending_.empty() && room(pending_.front())) {
        out->bytes += pending_.front().size();
        last_returned_ = Document::Copy(pending_ids_.front().bson());
        out->docs.push_back(std::move(pending_.front()));
        pending_.pop_front();
        pending_ids_.pop_front();
      }
    };
    for (;;) {
      drain();
      if (!pending_.empty() || invalidated_) break;
      bool stopped = false;
      RETURN_IF_ERROR(ReadMore(&stopped, drain));
      if (!out->docs.empty() || !pending_.empty() || invalidated_) break;
      if (stopped) continue;
      int64_t left = deadline - SteadyNowMs();
      if (left <= 0) break;
      db_->journal_->WaitForEvents(pos_, std::chrono::milliseconds(left));
    }
    out->post_batch_resume_token = Position();
    return Status::OK();
  }

  bool exhausted() const override { return invalidated_ && pending_.empty(); }
  bool tailable() const override { return true; }
  void SetAwaitTime(int64_t ms) override { await_ms_ = ms; }

  // The resume token of where the stream is: the last event returned when
  // later ones wait in pending_, else the position in the journal (after an
  // invalidate: the invalidate's, which only startAfter takes).
  Document Position() const {
    if (!pending_.empty() && !last_returned_.empty()) return Document::Copy(last_returned_.bson());
    return Token(pos_, invalidated_ ? TokenKind::kInvalidate : TokenKind::kEvent);
  }

 private:
  enum class Scope { kCollection, kDatabase, kCluster };

  Status ParseSpec(const AggregateRequest& req, bson_iter_t* stage) {
    if (!BSON_ITER_HOLDS_DOCUMENT(stage)) {
      return Status(static_cast<ErrorCode>(50808), "$changeStream stage expects a document as argument");
    }
    bool all_for_cluster = false;
    int resume_options = 0;
    std::optional<uint64_t> start;
    bool have_time = false;
    uint32_t ts_t = 0, ts_i = 0;
    bson_iter_t f;
    bson_iter_recurse(stage, &f);
    while (bson_iter_next(&f)) {
      std::string_view k = bson_iter_key(&f);
      std::string field = "$changeStream." + std::string(k);
      if (k == "fullDocument") {
        if (!BSON_ITER_HOLDS_UTF8(&f)) {
          return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type, expected type 'string'");
        }
        std::string_view v = bson_iter_utf8(&f, nullptr);
        if (v == "default") {
          update_lookup_ = false;
        } else if (v == "updateLookup") {
          update_lookup_ = true;
        } else if (v == "whenAvailable" || v == "required") {
          return Status(ErrorCode::kBadValue, "fullDocument: '" + std::string(v) +
                                                  "' is not supported by gatedb: it keeps no post-images of updates "
                                                  "(changeStreamPreAndPostImages); use 'updateLookup'");
        } else {
          return Status(ErrorCode::kBadValue, "'" + std::string(v) + "' is not a valid value for fullDocument");
        }
      } else if (k == "fullDocumentBeforeChange") {
        if (!BSON_ITER_HOLDS_UTF8(&f)) {
          return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type, expected type 'string'");
        }
        std::string_view v = bson_iter_utf8(&f, nullptr);
        if (v != "off") {
          return Status(ErrorCode::kBadValue, "fullDocumentBeforeChange: '" + std::string(v) +
                                                  "' is not supported by gatedb: it keeps no pre-images; "
                                                  "versionBefore names the version each change replaced");
        }
      } else if (k == "resumeAfter" || k == "startAfter") {
        ++resume_options;
        uint64_t seq = 0;
        TokenKind kind = TokenKind::kEvent;
        RETURN_IF_ERROR(DecodeToken(&f, k == "resumeAfter" ? "resumeAfter" : "startAfter", &seq, &kind));
        if (kind == TokenKind::kInvalidate && k == "resumeAfter") {
          return Status(ErrorCode::kInvalidResumeToken,
                        "cannot resume a stream after an invalidate event with resumeAfter; use startAfter to start "
                        "a new stream after it");
        }
        start = seq;
      } else if (k == "startAtOperationTime") {
        ++resume_options;
        if (!BSON_ITER_HOLDS_TIMESTAMP(&f)) {
          return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type, expected type 'timestamp'");
        }
        bson_iter_timestamp(&f, &ts_t, &ts_i);
        have_time = true;
      } else if (k == "allChangesForCluster") {
        if (!BSON_ITER_HOLDS_BOOL(&f)) {
          return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type, expected type 'bool'");
        }
        all_for_cluster = bson_iter_bool(&f);
      } else if (k == "showExpandedEvents") {
        if (!BSON_ITER_HOLDS_BOOL(&f)) {
          return Status(ErrorCode::kTypeMismatch, "BSON field '" + field + "' is the wrong type, expected type 'bool'");
        }
        if (bson_iter_bool(&f)) {
          return Status(ErrorCode::kBadValue,
                        "showExpandedEvents: true is not supported by gatedb: its journal records drops but not "
                        "create, createIndexes, dropIndexes or collMod");
        }
      } else if (k == "allowToRunOnConfigDB" || k == "allowToRunOnSystemNS" ||
                 k == "showMigrationEvents" || k == "showSystemEvents" || k == "showRawUpdateDescription") {
        return Status(ErrorCode::kBadValue, "$changeStream option '" + std::string(k) + "' is not supported by gatedb");
      } else {
        return Status(ErrorCode::kLocation40415, "BSON field '" + field + "' is an unknown field.");
      }
    }
    if (resume_options > 1) {
      return Status(static_cast<ErrorCode>(40674), "Only one type of resume option is allowed, but multiple were found.");
    }
    // Which changes.
    if (all_for_cluster) {
      if (!req.collectionless || req.ns.db != "admin") {
        return Status(ErrorCode::kInvalidOptions,
                      "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, "
                      "and with no collection name");
      }
      scope_ = Scope::kCluster;
    } else if (req.collectionless) {
      if (IsInternalDb(req.ns.db)) {
        return Status(ErrorCode::kInvalidNamespace,
                      "$changeStream may not be opened on the internal " + req.ns.db + " database");
      }
      scope_ = Scope::kDatabase;
      scope_ns_ = req.ns.db;
    } else {
      if (IsInternalDb(req.ns.db) || req.ns.coll.rfind("system.", 0) == 0) {
        return Status(ErrorCode::kInvalidNamespace, "$changeStream may not be opened on the internal " +
                                                        req.ns.full() + " collection");
      }
      scope_ = Scope::kCollection;
      scope_ns_ = req.ns.full();
    }
    // Where it starts: after the token's event, at the operation time, or
    // after everything committed now.
    if (start) {
      pos_ = *start;
    } else if (have_time) {
      ASSIGN_OR_RETURN(pos_, SeqBefore(ts_t, ts_i));
    } else {
      pos_ = db_->journal_->last_seq();
    }
    return Status::OK();
  }

  // The seq after which every event's clusterTime is >= (t, i): a binary
  // search over the retained events (their commit times only grow, but for
  // clock steps back).
  StatusOr<uint64_t> SeqBefore(uint32_t t, uint32_t i) {
    const wal::Journal& j = *db_->journal_;
    uint64_t lo = j.first_seq(), hi = j.last_seq() + 1;  // the answer's event is in [lo, hi]
    auto at_or_after = [&](uint64_t seq, bool* yes) -> Status {
      wal::Journal::ReadOptions ro;
      ro.after_seq = seq - 1;
      ro.limit = 1;
      ASSIGN_OR_RETURN(wal::Journal::ReadResult r, j.Read(ro));
      if (r.events.empty()) {
        *yes = true;
        return Status::OK();
      }
      bson_iter_t it;
      int64_t at = 0;
      if (bson_iter_init_find(&it, r.events[0].bson(), "at") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
        at = bson_iter_date_time(&it);
      }
      uint32_t et = static_cast<uint32_t>(at / 1000), ei = static_cast<uint32_t>(seq & 0xffffffffu);
      *yes = et > t || (et == t && ei >= i);
      return Status::OK();
    };
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      bool yes = false;
      RETURN_IF_ERROR(at_or_after(mid, &yes));
      if (yes) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (lo > j.last_seq()) return j.last_seq();  // the time is after every event: from now on
    if (lo == j.first_seq() && lo > 1) {
      // Everything retained is at or after the time: were the events before
      // it, which may be younger than the time too, collected?
      return Status(ErrorCode::kChangeStreamHistoryLost,
                    "startAtOperationTime is older than the journal's oldest retained event (seq " +
                        std::to_string(lo) + "): the changes since then were collected");
    }
    return lo - 1;
  }

  // The stages after $changeStream.
  Status ParseRest(const AggregateRequest& req, bson_iter_t* it) {
    bson_t* rest = bson_new();
    uint32_t n = 0;
    while (bson_iter_next(it)) {
      if (BSON_ITER_HOLDS_DOCUMENT(it)) {
        bson_iter_t s;
        bson_iter_recurse(it, &s);
        if (bson_iter_next(&s)) {
          std::string_view name = bson_iter_key(&s);
          if (name == "$changeStream") {
            bson_destroy(rest);
            return Status(static_cast<ErrorCode>(40602), "$changeStream is only valid as the first stage in a pipeline");
          }
          if (!AllowedAfterChangeStream(name)) {
            bson_destroy(rest);
            if (!agg::IsStageName(name)) {
              return Status(static_cast<ErrorCode>(40324), "Unrecognized pipeline stage name: '" + std::string(name) + "'");
            }
            return Status(ErrorCode::kIllegalOperation,
                          std::string(name) + " is not permitted in a $changeStream pipeline");
          }
        }
      }
      std::string key = std::to_string(n++);
      bson_append_value(rest, key.c_str(), -1, bson_iter_value(it));
    }
    Document stages = Document::Adopt(rest);
    if (n == 0) return Status::OK();
    PushDownWriterMatch(stages.bson());
    agg::PipelineOptions po;
    po.now_ms = db_->NowMs();
    po.db = req.ns.db;
    if (!req.let.empty()) RETURN_IF_ERROR(agg::BindLet(req.let.bson(), &po));
    ASSIGN_OR_RETURN(pipeline_, agg::Pipeline::Parse(stages.bson(), po));
    auto queue = std::make_unique<EventQueue>();
    queue_ = queue.get();
    pipeline_->SetSource(std::move(queue));
    return Status::OK();
  }

  // A first stage {$match: {...}} that names only writeContext paths (say,
  // "everything but my own writes", as sync asks) is also checked against
  // the journal event's writeContext before a change event is built: an
  // event it refuses costs no conversion.  The $match stage still runs;
  // this only saves work.  Events that end the stream are never skipped.
  void PushDownWriterMatch(const bson_t* stages) {
    bson_iter_t it, st, m;
    if (!bson_iter_init_find(&it, stages, "0") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) ||
        !bson_iter_next(&st) || std::string_view(bson_iter_key(&st)) != "$match" || !BSON_ITER_HOLDS_DOCUMENT(&st)) {
      return;
    }
    bson_t filter;
    const bson_value_t* v = bson_iter_value(&st);
    if (!bson_init_static(&filter, v->value.v_doc.data, v->value.v_doc.data_len) || bson_empty(&filter)) {
      return;
    }
    if (!bson_iter_init(&m, &filter)) return;
    while (bson_iter_next(&m)) {
      std::string_view key = bson_iter_key(&m);
      if (key != "writeContext" && key.rfind("writeContext.", 0) != 0) return;
    }
    StatusOr<std::unique_ptr<query::Matcher>> matcher = query::Matcher::Parse(&filter);
    if (matcher.ok()) writer_match_ = std::move(*matcher);  // else the $match stage reports it
  }

  // Reads the journal after pos_, converts what is in scope, and passes it
  // through the stages into pending_.  `drain` moves pending_ into the
  // batch; *stopped is set when the batch filled before the events read
  // were all consumed.
  template <typename Drain>
  Status ReadMore(bool* stopped, const Drain& drain) {
    wal::Journal::ReadOptions ro;
    ro.after_seq = pos_;
    ro.limit = kReadChunk;
    if (scope_ == Scope::kCollection) ro.ns = scope_ns_;
    if (scope_ == Scope::kDatabase) ro.ns_prefix = scope_ns_;  // then "db" or "db.*" only (InScope)
    ASSIGN_OR_RETURN(wal::Journal::ReadResult r, db_->journal_->Read(ro));
    for (const Document& ev : r.events) {
      bson_iter_t it;
      uint64_t seq = 0;
      if (bson_iter_init_find(&it, ev.bson(), "seq") && BSON_ITER_HOLDS_INT64(&it)) {
        seq = static_cast<uint64_t>(bson_iter_int64(&it));
      }
      RETURN_IF_ERROR(Consume(ev, seq));
      pos_ = seq;
      drain();
      if (invalidated_) return Status::OK();
      if (!pending_.empty()) {
        *stopped = true;  // the batch is full; the rest is read again next time
        return Status::OK();
      }
    }
    pos_ = std::max(pos_, r.next_after_seq);
    return Status::OK();
  }

  bool InScope(std::string_view ns) const {
    switch (scope_) {
      case Scope::kCollection:
        return ns == scope_ns_;
      case Scope::kDatabase:
        return ns == scope_ns_ || (ns.size() > scope_ns_.size() && ns.compare(0, scope_ns_.size(), scope_ns_) == 0 &&
                                   ns[scope_ns_.size()] == '.');
      case Scope::kCluster: {
        std::string_view db = ns.substr(0, ns.find('.'));
        return !IsInternalDb(db);
      }
    }
    return false;
  }

  // One journal event: its change events (none when out of scope or a
  // refused write's), through the stages, into pending_.
  Status Consume(const Document& ev, uint64_t seq) {
    bson_iter_t it;
    std::string op, ns;
    if (bson_iter_init_find(&it, ev.bson(), "op") && BSON_ITER_HOLDS_UTF8(&it)) op = bson_iter_utf8(&it, nullptr);
    if (bson_iter_init_find(&it, ev.bson(), "ns") && BSON_ITER_HOLDS_UTF8(&it)) ns = bson_iter_utf8(&it, nullptr);
    if (op.empty() || op == "conflict" || !InScope(ns)) return Status::OK();
    const bool db_event = op == "dropDatabase";
    if (!db_event && ns.find('.') == std::string::npos) return Status::OK();
    if (!db_event && ns.compare(ns.find('.') + 1, 7, "system.") == 0) return Status::OK();
    if (writer_match_ != nullptr && (op == "insert" || op == "update" || op == "replace" || op == "delete")) {
      bson_t writer = BSON_INITIALIZER;
      if (bson_iter_init_find(&it, ev.bson(), "writeContext")) {
        bson_append_value(&writer, "writeContext", -1, bson_iter_value(&it));
      }
      const bool keep = writer_match_->Matches(&writer);
      bson_destroy(&writer);
      if (!keep) return Status::OK();
    }
    int64_t at = 0;
    if (bson_iter_init_find(&it, ev.bson(), "at") && BSON_ITER_HOLDS_DATE_TIME(&it)) at = bson_iter_date_time(&it);

    Document id = Token(seq, TokenKind::kEvent);
    bson_t* c = bson_new();
    BSON_APPEND_DOCUMENT(c, "_id", id.bson());
    BSON_APPEND_UTF8(c, "operationType", op.c_str());
    AppendTimes(seq, at, c);
    AppendNs("ns", ns, !db_event, c);
    if (op == "rename" && bson_iter_init_find(&it, ev.bson(), "to") && BSON_ITER_HOLDS_UTF8(&it)) {
      AppendNs("to", bson_iter_utf8(&it, nullptr), true, c);
    }
    Status s = AppendWriteFields(op, ns, ev, c);
    if (!s.ok()) {
      bson_destroy(c);
      return s;
    }
    Document change = Document::Adopt(c);
    RETURN_IF_ERROR(Emit(std::move(change), std::move(id)));
    const bool ends = (scope_ == Scope::kCollection && (op == "drop" || op == "rename")) ||
                      (scope_ == Scope::kDatabase && op == "dropDatabase");
    if (ends) {
      Document inv_id = Token(seq, TokenKind::kInvalidate);
      bson_t* inv = bson_new();
      BSON_APPEND_DOCUMENT(inv, "_id", inv_id.bson());
      BSON_APPEND_UTF8(inv, "operationType", "invalidate");
      AppendTimes(seq, at, inv);
      RETURN_IF_ERROR(Emit(Document::Adopt(inv), std::move(inv_id)));
      invalidated_ = true;  // the cursor ends after it, whatever the stages kept
    }
    return Status::OK();
  }

  // documentKey, fullDocument, updateDescription and gatedb's fields.
  Status AppendWriteFields(const std::string& op, const std::string& ns, const Document& ev, bson_t* c) {
    if (op != "insert" && op != "update" && op != "replace" && op != "delete") return Status::OK();
    bson_iter_t it;
    bson_t key;
    BSON_APPEND_DOCUMENT_BEGIN(c, "documentKey", &key);
    const bool has_id = bson_iter_init_find(&it, ev.bson(), "_id");
    bson_value_t id{};
    if (has_id) {
      id = *bson_iter_value(&it);
      bson_append_value(&key, "_id", 3, &id);
    }
    bson_append_document_end(c, &key);
    if (op == "insert" || op == "replace") {
      if (bson_iter_init_find(&it, ev.bson(), "fullDocument") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        bson_append_value(c, "fullDocument", -1, bson_iter_value(&it));
      } else if (has_id) {
        RETURN_IF_ERROR(AppendLookup(ns, id, c));  // an event journaled before events kept documents
      }
    }
    if (op == "update") {
      if (update_lookup_ && has_id) RETURN_IF_ERROR(AppendLookup(ns, id, c));
      bson_t desc;
      BSON_APPEND_DOCUMENT_BEGIN(c, "updateDescription", &desc);
      bson_t empty = BSON_INITIALIZER;
      if (bson_iter_init_find(&it, ev.bson(), "updatedFields") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        bson_append_value(&desc, "updatedFields", -1, bson_iter_value(&it));
      } else {
        BSON_APPEND_DOCUMENT(&desc, "updatedFields", &empty);
      }
      if (bson_iter_init_find(&it, ev.bson(), "removedFields") && BSON_ITER_HOLDS_ARRAY(&it)) {
        bson_append_value(&desc, "removedFields", -1, bson_iter_value(&it));
      } else {
        BSON_APPEND_ARRAY(&desc, "removedFields", &empty);
      }
      BSON_APPEND_ARRAY(&desc, "truncatedArrays", &empty);
      bson_append_document_end(c, &desc);
    }
    // gatedb's: the version gate's view of the change, and who made it.
    static const char* const kOurs[] = {"versionBefore", "versionAfter", "writeContext", "txn"};
    for (const char* f : kOurs) {
      if (bson_iter_init_find(&it, ev.bson(), f)) bson_append_value(c, f, -1, bson_iter_value(&it));
    }
    return Status::OK();
  }

  // fullDocument: the document as it is now (null when it is gone).
  Status AppendLookup(const std::string& ns, const bson_value_t& id, bson_t* c) {
    size_t dot = ns.find('.');
    Namespace n{ns.substr(0, dot), ns.substr(dot + 1)};
    ASSIGN_OR_RETURN(std::optional<Document> doc, db_->FindById(n, id, nullptr));
    if (doc) {
      BSON_APPEND_DOCUMENT(c, "fullDocument", doc->bson());
    } else {
      BSON_APPEND_NULL(c, "fullDocument");
    }
    return Status::OK();
  }

  // Through the stages; what comes out joins pending_.
  Status Emit(Document change, Document id) {
    if (change.size() > kMaxEventBytes) {
      return Status(ErrorCode::kBSONObjectTooLarge, "a change event is larger than 16 MB (" +
                                                        std::to_string(change.size()) + " bytes)");
    }
    if (pipeline_ == nullptr) {
      pending_.push_back(std::move(change));
      pending_ids_.push_back(std::move(id));
      return Status::OK();
    }
    queue_->Push(std::move(change), std::move(id));
    for (;;) {
      Document out;
      ASSIGN_OR_RETURN(bool more, pipeline_->Next(&out));
      if (!more) break;
      bson_iter_t it;
      const Document& want = queue_->last_id();
      const bool kept = bson_iter_init_find(&it, out.bson(), "_id") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
                        bson_iter_value(&it)->value.v_doc.data_len == want.size() &&
                        std::memcmp(bson_iter_value(&it)->value.v_doc.data, want.data(), want.size()) == 0;
      if (!kept) {
        return Status(ErrorCode::kChangeStreamFatalError,
                      "Encountered an event whose _id field, which contains the resume token, was modified by the "
                      "pipeline. Modifying the _id field of an event makes it impossible to resume the stream from "
                      "that point. Only transformations that retain the unmodified _id field are allowed.");
      }
      if (out.size() > kMaxEventBytes) {
        return Status(ErrorCode::kBSONObjectTooLarge, "a change event is larger than 16 MB");
      }
      pending_ids_.push_back(Document::Copy(want.bson()));
      pending_.push_back(std::move(out));
    }
    return Status::OK();
  }

  DBImpl* const db_;
  Scope scope_ = Scope::kCollection;
  std::string scope_ns_;  // "db.coll", or "db"
  bool update_lookup_ = false;
  uint64_t pos_ = 0;  // every journal event up to this seq is consumed
  std::unique_ptr<agg::Pipeline> pipeline_;  // null: nothing after $changeStream
  std::unique_ptr<query::Matcher> writer_match_;  // PushDownWriterMatch's; null: none
  EventQueue* queue_ = nullptr;              // the pipeline's source (it owns it)
  std::deque<Document> pending_;             // results not yet returned (the batch was full)
  std::deque<Document> pending_ids_;         // their resume tokens
  Document last_returned_;                   // the token of the last result returned
  bool invalidated_ = false;
  bool first_batch_ = true;
  int64_t await_ms_ = -1;
};

bool IsChangeStreamPipeline(const Document& pipeline) {
  bson_iter_t it, stage;
  if (!bson_iter_init(&it, pipeline.bson()) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  bson_iter_recurse(&it, &stage);
  return bson_iter_next(&stage) && std::strcmp(bson_iter_key(&stage), "$changeStream") == 0;
}

StatusOr<CursorPage> DBImpl::ChangeStreamPage(const AggregateRequest& req, const CursorRequest& page) {
  auto source = std::make_unique<ChangeStreamSource>(this);
  RETURN_IF_ERROR(source->Open(req));
  std::string ns = source->CursorNs(req);
  CursorPage out;
  out.ns = ns;
  if (page.empty_first_batch) {
    out.batch.post_batch_resume_token = source->Position();
  } else {
    RETURN_IF_ERROR(source->NextBatch(page.batch_size, kMaxBatchBytes, &out.batch));
  }
  if (source->exhausted() || page.single_batch) return out;
  CursorRegistry::Owner owner{page.session, nullptr};
  CursorRegistry::Lease lease = cursors_->Register(std::move(source), std::move(ns), owner, SteadyNowMs());
  out.cursor_id = lease.Return();
  return out;
}

}  // namespace gatedb
