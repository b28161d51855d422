#include "engine/storage/fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <deque>
#include <cstring>
#include <string_view>
#include <vector>

#include "engine/document/element_at.h"
#include "engine/util/coding.h"

namespace gatedb {

namespace {

bool LeftOut(std::string_view key) {
  static const char* const kSkip[] = {
      "writeContext", "lsid", "txnNumber", "autocommit", "startTransaction", "writeConcern", "comment",
      "maxTimeMS", "$clusterTime", "$readPreference", "readPreference", "apiVersion", "apiStrict",
      "apiDeprecationErrors", "$client", "$audit", "mayBypassWriteBlocking"};
  for (const char* s : kSkip) {
    if (key == s) return true;
  }
  return false;
}

enum class Shape {
  kExact,        // copy as is
  kTopSorted,    // sort this document's own fields only
  kUpdate,       // operators sorted, and the paths under each
  kStatement,    // an update/delete statement
  kStatements,   // an array of statements
};

Shape ShapeOfTopLevel(std::string_view key) {
  if (key == "updates" || key == "deletes") return Shape::kStatements;
  if (key == "query" || key == "fields" || key == "filter" || key == "projection") return Shape::kTopSorted;
  if (key == "update") return Shape::kUpdate;
  return Shape::kExact;
}

Shape ShapeInStatement(std::string_view key) {
  if (key == "q") return Shape::kTopSorted;
  if (key == "u") return Shape::kUpdate;
  return Shape::kExact;
}

// A field of a document: its key, and where its element starts.  (Not the
// iterator itself: bson_iter_t is 128-byte aligned, and a vector of them
// takes aligned allocations, several times dearer than plain ones.)
struct Field {
  std::string_view key;
  uint32_t offset;

  bson_iter_t Iter(const bson_t* doc) const {
    bson_iter_t it;
    ElementAt(doc, offset, key, &it);
    return it;
  }
};

std::vector<Field> Fields(const bson_t* doc) {
  std::vector<Field> out;
  out.reserve(8);  // most requests' documents: one allocation
  bson_iter_t it;
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) {
      out.push_back(Field{std::string_view(bson_iter_key(&it), bson_iter_key_len(&it)), bson_iter_offset(&it)});
    }
  }
  return out;
}

void SortFields(std::vector<Field>* fields) {
  // Insertion sort: stable, with no temporary buffer (std::stable_sort's
  // would under-align the bson_iter_t inside Field); commands have few fields.
  for (size_t i = 1; i < fields->size(); ++i) {
    for (size_t j = i; j > 0 && (*fields)[j].key < (*fields)[j - 1].key; --j) std::swap((*fields)[j], (*fields)[j - 1]);
  }
}

bool SubDocument(const bson_iter_t* it, bson_t* out) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (BSON_ITER_HOLDS_DOCUMENT(it)) {
    bson_iter_document(it, &len, &data);
  } else if (BSON_ITER_HOLDS_ARRAY(it)) {
    bson_iter_array(it, &len, &data);
  } else {
    return false;
  }
  return bson_init_static(out, data, len);
}

// The canonical form goes to a sink: a BSON builder (CanonicalCommand) or
// a hash stream (CommandFingerprint), so the fingerprint needs no copy of
// the command.
//
// BsonSink builds the canonical form as BSON.
class BsonSink {
 public:
  BsonSink() {
    stack_.emplace_back();
    bson_init(&stack_.front().b);
  }
  ~BsonSink() { bson_destroy(&stack_.front().b); }
  BsonSink(const BsonSink&) = delete;
  BsonSink& operator=(const BsonSink&) = delete;
  void Exact(std::string_view key, const bson_iter_t* it) {
    bson_append_iter(top(), key.data(), static_cast<int>(key.size()), it);
  }
  void Begin(std::string_view key, bool is_array) {
    bson_t* parent = top();
    stack_.emplace_back();
    stack_.back().is_array = is_array;
    if (is_array) {
      bson_append_array_begin(parent, key.data(), static_cast<int>(key.size()), &stack_.back().b);
    } else {
      bson_append_document_begin(parent, key.data(), static_cast<int>(key.size()), &stack_.back().b);
    }
  }
  void End() {
    Level& child = stack_.back();
    bson_t* parent = &stack_[stack_.size() - 2].b;
    if (child.is_array) {
      bson_append_array_end(parent, &child.b);
    } else {
      bson_append_document_end(parent, &child.b);
    }
    stack_.pop_back();
  }
  std::string Bytes() const {
    const bson_t* root = &stack_.front().b;
    return std::string(reinterpret_cast<const char*>(bson_get_data(root)), root->len);
  }

 private:
  // A bson_t must not move once used (a grown one points into itself, a
  // child at its parent): std::deque keeps every level where it was built.
  struct Level {
    bson_t b;
    bool is_array = false;
  };
  bson_t* top() { return &stack_.back().b; }
  std::deque<Level> stack_;
};

// HashSink streams the canonical form into XXH3-128 as a self-delimiting
// byte sequence: each element is its type byte, its name and 0x00, then its
// value's BSON bytes (which carry their own length), or, for a container
// whose fields were reordered, its fields and a closing 0x00 (no element
// type is 0x00).  Two commands hash alike exactly when their canonical forms
// are equal.
//
// The bytes are gathered in a buffer and hashed in one call: XXH3's
// streaming state costs an allocation and each small update a call, and a
// request's canonical form is mostly a few hundred bytes.  A larger one is
// fed to the streaming state a buffer at a time; both give the hash of the
// whole sequence.
class HashSink {
 public:
  HashSink() = default;
  ~HashSink() {
    if (state_ != nullptr) XXH3_freeState(state_);
  }
  HashSink(const HashSink&) = delete;
  HashSink& operator=(const HashSink&) = delete;
  void Exact(std::string_view key, const bson_iter_t* it) {
    Header(bson_iter_type(it), key);
    Append(it->raw + it->d1, it->next_off - it->d1);
  }
  void Begin(std::string_view key, bool is_array) { Header(is_array ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT, key); }
  void End() { Byte('\0'); }
  XXH128_hash_t Digest() {
    if (state_ == nullptr) return XXH3_128bits(buffer_, len_);
    Flush();
    return XXH3_128bits_digest(state_);
  }

  // Request fields (format 2): the same self-delimiting elements, built
  // from typed values instead of a command's BSON.
  void Bool(std::string_view key, bool v) {
    Header(BSON_TYPE_BOOL, key);
    Byte(v ? '\1' : '\0');
  }
  void Int64(std::string_view key, int64_t v) {
    Header(BSON_TYPE_INT64, key);
    char be[8];
    EncodeFixed64BE(be, static_cast<uint64_t>(v));
    Append(be, sizeof be);
  }
  void Utf8(std::string_view key, std::string_view v) {
    Header(BSON_TYPE_UTF8, key);
    Int64("", static_cast<int64_t>(v.size()));
    Append(v.data(), v.size());
  }
  // A document kept exactly: its bytes carry their own length.
  void RawDocument(std::string_view key, const bson_t* doc) {
    Header(BSON_TYPE_DOCUMENT, key);
    if (doc != nullptr) Append(bson_get_data(doc), doc->len);
  }
  std::string Fingerprint() {
    XXH128_hash_t h = Digest();
    std::string out;
    PutFixed64BE(&out, h.high64);
    PutFixed64BE(&out, h.low64);
    return out;
  }

 private:
  static constexpr size_t kBufferBytes = 4096;

  void Header(bson_type_t type, std::string_view key) {
    Byte(static_cast<char>(type));
    Append(key.data(), key.size());
    End();
  }
  void Byte(char c) {
    if (len_ == kBufferBytes) Flush();
    buffer_[len_++] = c;
  }
  void Append(const void* data, size_t n) {
    if (len_ + n > kBufferBytes) {
      Flush();
      if (n > kBufferBytes) {
        XXH3_128bits_update(state_, data, n);
        return;
      }
    }
    std::memcpy(buffer_ + len_, data, n);
    len_ += n;
  }
  // Hands the buffer to the streaming state (made on first use).
  void Flush() {
    if (state_ == nullptr) {
      state_ = XXH3_createState();  // opaque in the shared library's API: allocated by it
      XXH3_128bits_reset(state_);
    }
    XXH3_128bits_update(state_, buffer_, len_);
    len_ = 0;
  }

  // The stream's bytes not yet hashed: most requests fit whole, and are
  // hashed with one call.
  char buffer_[kBufferBytes];
  size_t len_ = 0;
  XXH3_state_t* state_ = nullptr;
};

template <typename Sink>
void EmitShaped(Sink* out, const bson_t* doc, const Field& f, Shape shape);

template <typename Sink>
void EmitDocShaped(Sink* out, std::string_view key, const bson_t* doc, Shape shape, bool is_array) {
  out->Begin(key, is_array);
  std::vector<Field> fields = Fields(doc);
  bool operators = shape == Shape::kUpdate && !fields.empty() && fields[0].key[0] == '$';
  if (shape == Shape::kTopSorted || shape == Shape::kStatement || operators) SortFields(&fields);
  for (const Field& f : fields) {
    Shape inner = Shape::kExact;
    if (shape == Shape::kStatements) inner = Shape::kStatement;
    if (shape == Shape::kStatement) inner = ShapeInStatement(f.key);
    if (operators) inner = Shape::kTopSorted;
    EmitShaped(out, doc, f, inner);
  }
  out->End();
}

template <typename Sink>
void EmitShaped(Sink* out, const bson_t* doc, const Field& f, Shape shape) {
  const bson_iter_t it = f.Iter(doc);
  bson_t sub;
  if (shape != Shape::kExact && SubDocument(&it, &sub)) {
    EmitDocShaped(out, f.key, &sub, shape, BSON_ITER_HOLDS_ARRAY(&it));
    return;
  }
  out->Exact(f.key, &it);
}

template <typename Sink>
void EmitCommand(Sink* out, const bson_t* cmd) {
  std::vector<Field> fields = Fields(cmd);
  if (fields.empty()) return;
  const bson_iter_t first = fields[0].Iter(cmd);
  out->Exact(fields[0].key, &first);
  std::vector<Field> rest(fields.begin() + 1, fields.end());
  rest.erase(std::remove_if(rest.begin(), rest.end(), [](const Field& f) { return LeftOut(f.key); }), rest.end());
  SortFields(&rest);
  for (const Field& f : rest) EmitShaped(out, cmd, f, ShapeOfTopLevel(f.key));
}

}  // namespace

std::string CanonicalCommand(const bson_t* cmd) {
  BsonSink sink;
  EmitCommand(&sink, cmd);
  return sink.Bytes();
}

std::string CommandFingerprint(const bson_t* cmd) {
  HashSink sink;
  EmitCommand(&sink, cmd);
  return sink.Fingerprint();
}

namespace {

const bson_t kEmpty = BSON_INITIALIZER;

const bson_t* OrEmpty(const Document& d) { return d.bson() != nullptr ? d.bson() : &kEmpty; }

void BeginRequest(HashSink* h, const char* op, const Namespace& ns) {
  h->Utf8("fp", "gatedb.request.v2");
  h->Utf8("op", op);
  h->Utf8("db", ns.db);
  h->Utf8("coll", ns.coll);
}

void Basis(HashSink* h, const std::optional<int64_t>& basis) {
  h->Bool("hasBasis", basis.has_value());
  if (basis) h->Int64("basisVersion", *basis);
}

}  // namespace

std::string RequestFingerprint(const InsertRequest& req) {
  HashSink h;
  BeginRequest(&h, "insert", req.ns);
  h.Bool("ordered", req.ordered);
  h.Begin("documents", true);
  for (const Document& d : req.documents) h.RawDocument("", OrEmpty(d));
  h.End();
  return h.Fingerprint();
}

std::string RequestFingerprint(const UpdateRequest& req) {
  HashSink h;
  BeginRequest(&h, "update", req.ns);
  h.Bool("ordered", req.ordered);
  h.Begin("updates", true);
  for (const UpdateStatement& u : req.updates) {
    h.Begin("", false);
    EmitDocShaped(&h, "q", OrEmpty(u.q), Shape::kTopSorted, false);
    EmitDocShaped(&h, "u", OrEmpty(u.u), Shape::kUpdate, false);
    h.Bool("upsert", u.upsert);
    h.Bool("multi", u.multi);
    Basis(&h, u.basis_version);
    h.End();
  }
  h.End();
  return h.Fingerprint();
}

std::string RequestFingerprint(const DeleteRequest& req) {
  HashSink h;
  BeginRequest(&h, "delete", req.ns);
  h.Bool("ordered", req.ordered);
  h.Begin("deletes", true);
  for (const DeleteStatement& d : req.deletes) {
    h.Begin("", false);
    EmitDocShaped(&h, "q", OrEmpty(d.q), Shape::kTopSorted, false);
    h.Int64("limit", d.limit);
    Basis(&h, d.basis_version);
    h.End();
  }
  h.End();
  return h.Fingerprint();
}

std::string RequestFingerprint(const FindAndModifyRequest& req) {
  HashSink h;
  BeginRequest(&h, "findAndModify", req.ns);
  EmitDocShaped(&h, "query", OrEmpty(req.query), Shape::kTopSorted, false);
  h.RawDocument("sort", OrEmpty(req.sort));
  EmitDocShaped(&h, "fields", OrEmpty(req.fields), Shape::kTopSorted, false);
  h.Bool("remove", req.remove);
  if (req.update) EmitDocShaped(&h, "update", OrEmpty(*req.update), Shape::kUpdate, false);
  h.Bool("new", req.return_new);
  h.Bool("upsert", req.upsert);
  Basis(&h, req.basis_version);
  return h.Fingerprint();
}

std::string CommitFingerprint() {
  HashSink h;
  h.Utf8("fp", "gatedb.request.v2");
  h.Utf8("op", "commitTransaction");
  return h.Fingerprint();
}

// Format 1: the command the typed API sent for a request before format 2
// (Collection built it and ran it through the dispatcher), so that its
// records still replay.
namespace {

bson_t* LegacyCommand(const char* name, const Namespace& ns) {
  bson_t* cmd = bson_new();
  bson_append_utf8(cmd, name, -1, ns.coll.c_str(), -1);
  return cmd;
}

std::string FinishLegacy(bson_t* cmd, const Namespace& ns, bool ordered) {
  BSON_APPEND_BOOL(cmd, "ordered", ordered);
  BSON_APPEND_UTF8(cmd, "$db", ns.db.c_str());
  std::string fp = CommandFingerprint(cmd);
  bson_destroy(cmd);
  return fp;
}

}  // namespace

std::string LegacyFingerprint(const InsertRequest& req) {
  if (req.write.command != nullptr) return CommandFingerprint(req.write.command);
  bson_t* cmd = LegacyCommand("insert", req.ns);
  bson_t arr;
  BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
  char keybuf[16];
  for (size_t i = 0; i < req.documents.size(); ++i) {
    const char* key;
    bson_uint32_to_string(static_cast<uint32_t>(i), &key, keybuf, sizeof keybuf);
    BSON_APPEND_DOCUMENT(&arr, key, OrEmpty(req.documents[i]));
  }
  bson_append_array_end(cmd, &arr);
  return FinishLegacy(cmd, req.ns, req.ordered);
}

std::string LegacyFingerprint(const UpdateRequest& req) {
  if (req.write.command != nullptr) return CommandFingerprint(req.write.command);
  if (req.updates.size() != 1) return std::string();  // the typed API sent one statement
  const UpdateStatement& u = req.updates[0];
  bson_t* cmd = LegacyCommand("update", req.ns);
  bson_t arr, stmt;
  BSON_APPEND_ARRAY_BEGIN(cmd, "updates", &arr);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &stmt);
  BSON_APPEND_DOCUMENT(&stmt, "q", OrEmpty(u.q));
  BSON_APPEND_DOCUMENT(&stmt, "u", OrEmpty(u.u));
  BSON_APPEND_BOOL(&stmt, "upsert", u.upsert);
  BSON_APPEND_BOOL(&stmt, "multi", u.multi);
  if (u.basis_version) BSON_APPEND_INT64(&stmt, "basisVersion", *u.basis_version);
  bson_append_document_end(&arr, &stmt);
  bson_append_array_end(cmd, &arr);
  return FinishLegacy(cmd, req.ns, req.ordered);
}

std::string LegacyFingerprint(const DeleteRequest& req) {
  if (req.write.command != nullptr) return CommandFingerprint(req.write.command);
  if (req.deletes.size() != 1) return std::string();
  const DeleteStatement& d = req.deletes[0];
  bson_t* cmd = LegacyCommand("delete", req.ns);
  bson_t arr, stmt;
  BSON_APPEND_ARRAY_BEGIN(cmd, "deletes", &arr);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &stmt);
  BSON_APPEND_DOCUMENT(&stmt, "q", OrEmpty(d.q));
  BSON_APPEND_INT64(&stmt, "limit", d.limit);
  if (d.basis_version) BSON_APPEND_INT64(&stmt, "basisVersion", *d.basis_version);
  bson_append_document_end(&arr, &stmt);
  bson_append_array_end(cmd, &arr);
  return FinishLegacy(cmd, req.ns, req.ordered);
}

std::string LegacyFingerprint(const FindAndModifyRequest& req) {
  if (req.write.command != nullptr) return CommandFingerprint(req.write.command);
  bson_t* cmd = LegacyCommand("findAndModify", req.ns);
  BSON_APPEND_DOCUMENT(cmd, "query", OrEmpty(req.query));
  if (!req.sort.empty()) BSON_APPEND_DOCUMENT(cmd, "sort", req.sort.bson());
  if (!req.fields.empty()) BSON_APPEND_DOCUMENT(cmd, "fields", req.fields.bson());
  if (req.update) {
    BSON_APPEND_DOCUMENT(cmd, "update", OrEmpty(*req.update));
  } else {
    BSON_APPEND_BOOL(cmd, "remove", true);
  }
  if (req.return_new) BSON_APPEND_BOOL(cmd, "new", true);
  if (req.upsert) BSON_APPEND_BOOL(cmd, "upsert", true);
  if (req.basis_version) BSON_APPEND_INT64(cmd, "basisVersion", *req.basis_version);
  return FinishLegacy(cmd, req.ns, true);
}

std::string LegacyCommitFingerprint() {
  bson_t fpdoc = BSON_INITIALIZER;
  BSON_APPEND_INT32(&fpdoc, "commitTransaction", 1);
  std::string fp = CommandFingerprint(&fpdoc);
  bson_destroy(&fpdoc);
  return fp;
}

}  // namespace gatedb
