#include "gatedb/document.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "engine/document/document_arena.h"
#include "engine/document/validate.h"
#include "engine/util/utf8.h"

namespace gatedb {

const uint8_t* DocumentView::data() const { return bson_ ? bson_get_data(bson_) : nullptr; }
size_t DocumentView::size() const { return bson_ ? bson_->len : 0; }
// A document with no element is its 4-byte length and the terminator.
bool DocumentView::empty() const { return bson_ == nullptr || bson_empty(bson_); }

std::string DocumentView::ToJson(JsonMode mode) const {
  if (bson_ == nullptr) return "{}";
  size_t len = 0;
  char* s = mode == JsonMode::kCanonical ? bson_as_canonical_extended_json(bson_, &len)
                                         : bson_as_relaxed_extended_json(bson_, &len);
  if (s == nullptr) return "{}";
  std::string out(s, len);
  bson_free(s);
  return out;
}

namespace {

// The bytes of every default-constructed Document until it is written to:
// never written, never freed (bson_new's aligned allocation costs more than
// most of what a read does).
bson_t* SharedEmpty() {
  static bson_t empty = BSON_INITIALIZER;
  return &empty;
}

bool Owned(const bson_t* b) { return b != nullptr && b != SharedEmpty(); }

// Read-only copies ("blocks"): a bson_t over the bytes just after it, both
// in a chunk of memory that starts with a reference count (DocumentChunk).
// The bson_t is 128-byte aligned, as libbson declares it, at the first
// aligned address that leaves room for its chunk's address just before it.
// A lone copy (Document::Copy) is a chunk of its own: one malloc, where
// bson_copy costs two, one of them an aligned one, which glibc makes
// several times dearer than a malloc.  A DocumentArena puts many copies in
// one chunk.
constexpr size_t kShellAlign = alignof(bson_t);

// The most bytes a copy of `len` bytes takes, wherever it starts.
size_t SlotBytes(uint32_t len) { return sizeof(void*) + kShellAlign - 1 + sizeof(bson_t) + len; }

}  // namespace

namespace internal {

struct DocumentChunk {
  explicit DocumentChunk(uint32_t n) : refs(n) {}
  std::atomic<uint32_t> refs;  // the copies in it, plus an open arena's reserve
};

}  // namespace internal

namespace {

using internal::DocumentChunk;

DocumentChunk* NewChunk(size_t bytes, uint32_t refs) {
  void* raw = std::malloc(sizeof(DocumentChunk) + bytes);
  if (raw == nullptr) std::abort();  // as libbson's allocator does
  return new (raw) DocumentChunk(refs);
}

uintptr_t ChunkStart(DocumentChunk* c) { return reinterpret_cast<uintptr_t>(c + 1); }

// Drops `n` references to `c`, freeing it with the last.
void Unref(DocumentChunk* c, uint32_t n) {
  // Holding all of them, nobody else can add one (only an arena adds, and
  // it holds a reserve while it does): no atomic write needed.
  if (c->refs.load(std::memory_order_acquire) == n || c->refs.fetch_sub(n, std::memory_order_acq_rel) == n) {
    c->~DocumentChunk();
    std::free(c);
  }
}

// Copies `from` into `c` at the first place at or after `at`; *end: the
// first byte after it.  REQUIRES: SlotBytes(from->len) bytes from `at`.
bson_t* PlaceCopy(DocumentChunk* c, uintptr_t at, const bson_t* from, uintptr_t* end) {
  const uint32_t len = from->len;
  const uintptr_t shell = (at + sizeof(void*) + kShellAlign - 1) & ~(kShellAlign - 1);
  std::memcpy(reinterpret_cast<void*>(shell - sizeof(void*)), &c, sizeof c);
  bson_t* b = new (reinterpret_cast<void*>(shell)) bson_t;
  uint8_t* bytes = reinterpret_cast<uint8_t*>(b + 1);
  std::memcpy(bytes, bson_get_data(from), len);
  bson_init_static(b, bytes, len);
  *end = reinterpret_cast<uintptr_t>(bytes) + len;
  return b;
}

bson_t* NewBlock(const bson_t* from) {
  DocumentChunk* c = NewChunk(SlotBytes(from->len), 1);
  uintptr_t end = 0;
  return PlaceCopy(c, ChunkStart(c), from, &end);
}

void FreeBlock(bson_t* b) {
  DocumentChunk* c = nullptr;
  std::memcpy(&c, reinterpret_cast<const char*>(b) - sizeof(void*), sizeof c);
  Unref(c, 1);
}

void Free(bson_t* b, bool block) {
  if (block) {
    FreeBlock(b);
  } else if (Owned(b)) {
    bson_destroy(b);
  }
}

}  // namespace

Document::Document() : bson_(SharedEmpty()), block_(false) {}

Document Document::Adopt(bson_t* bson) { return Document(bson, false); }

Document Document::Copy(const bson_t* bson) { return Document(NewBlock(bson), true); }

Document::Document(const Document& other) : bson_(SharedEmpty()), block_(false) {
  if (other.bson_ == nullptr) {  // moved-from
    bson_ = bson_new();
  } else if (other.bson_ != SharedEmpty()) {
    bson_ = NewBlock(other.bson_);
    block_ = true;
  }
}

Document& Document::operator=(const Document& other) {
  if (this != &other) {
    Document copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void Document::FreeBytes() { Free(bson_, block_); }

void Document::Unblock() {
  if (!block_) return;
  bson_t* b = bson_copy(bson_);
  FreeBlock(bson_);
  bson_ = b;
  block_ = false;
}

bson_t* Document::mutable_bson() {
  if (bson_ == SharedEmpty()) bson_ = bson_new();
  Unblock();
  return bson_;
}

bson_t* Document::Release() {
  Unblock();
  bson_t* b = bson_ == SharedEmpty() ? bson_new() : bson_;
  bson_ = nullptr;
  return b;
}

namespace internal {

namespace {
// A chunk's reference count starts at this reserve, held by its arena,
// which hands one to each copy it places (no atomic write per copy) and
// returns the rest when it moves on.  More than the copies a chunk can hold.
constexpr uint32_t kChunkReserve = 1u << 30;
}  // namespace

DocumentArena::~DocumentArena() {
  if (chunk_ != nullptr) Unref(chunk_, reserve_);
}

Document DocumentArena::Copy(const bson_t* from) {
  const size_t need = SlotBytes(from->len);
  if (!copied_ || need > kChunkBytes / 4) {
    copied_ = true;
    return Document::Copy(from);
  }
  if (chunk_ == nullptr || end_ - next_ < need) {
    if (chunk_ != nullptr) Unref(chunk_, reserve_);
    chunk_ = NewChunk(kChunkBytes, kChunkReserve);
    reserve_ = kChunkReserve;
    next_ = ChunkStart(chunk_);
    end_ = next_ + kChunkBytes;
  }
  --reserve_;
  return Document(PlaceCopy(chunk_, next_, from, &next_), true);
}

}  // namespace internal

namespace {

// ---------------------------------------------------------------------------
// The query operator $type in JSON.
//
// libbson's JSON reader takes an object's "$type" key as the legacy Extended
// JSON binary form ({"$binary": "<base64>", "$type": "<hex>"}) and fails on
// the query operator: {"$type": "date"} ("Missing $binary"), {"$type": 9},
// {"$type": ["string", "date"]}.  (It lets some strings through, "string" or
// "number", and refuses others, by whether they start with a hex digit.)
// libbson has no option to turn this off, so FromJson renames every "$type"
// key whose object has no "$binary" key to a stand-in before libbson parses,
// and renames the stand-in back to "$type" in the parsed BSON.  The legacy
// binary form, an object with both keys, is left to libbson as before.
//
// The stand-in is "$" and four characters of [0-9A-Za-z], chosen so that no
// key of the input has that name (the first free one), and it is written
// into the text with exactly as many bytes as the key it replaces ("$type",
// or an escaped spelling such as "\u0024type"), so libbson's error positions
// are those of the input.
// ---------------------------------------------------------------------------

constexpr char kStandInAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr uint32_t kStandInRadix = 62;
constexpr uint32_t kStandInCount = kStandInRadix * kStandInRadix * kStandInRadix * kStandInRadix;
constexpr size_t kStandInLen = 5;  // == strlen("$type")

// The scanner gives up (and leaves the text to libbson, which refuses it)
// past this depth; libbson refuses more than about 100 levels.
constexpr size_t kMaxScanDepth = 128;

// Only text that can hold a "$type" key is scanned: the key is spelled
// "$type", or with JSON escapes, which start "\u0024" (the '$') or "$\u".
bool MayHaveTypeKey(std::string_view json) {
  return json.find("$type") != std::string_view::npos || json.find("\\u0024") != std::string_view::npos ||
         json.find("$\\u") != std::string_view::npos;
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the raw text of a JSON string (between the quotes) when it is at
// most `cap` ASCII characters long; false for anything longer, non-ASCII or
// badly escaped (none of which can be a name this file looks for).
bool DecodeShortAsciiKey(std::string_view raw, char* out, size_t cap, size_t* len) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (n == cap) return false;
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x80) return false;
    if (c != '\\') {
      out[n++] = static_cast<char>(c);
      continue;
    }
    if (++i == raw.size()) return false;
    switch (raw[i]) {
      case '"': case '\\': case '/': out[n++] = raw[i]; break;
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        if (raw.size() - i - 1 < 4) return false;
        int cp = 0;
        for (int k = 1; k <= 4; ++k) {
          int d = HexDigit(raw[i + k]);
          if (d < 0) return false;
          cp = cp * 16 + d;
        }
        if (cp >= 0x80) return false;
        out[n++] = static_cast<char>(cp);
        i += 4;
        break;
      }
      default:
        return false;
    }
  }
  *len = n;
  return true;
}

// The index of a name of the stand-in's shape ("$" + 4 of the alphabet), or -1.
int64_t StandInIndex(const char* name, size_t len) {
  if (len != kStandInLen || name[0] != '$') return -1;
  int64_t index = 0;
  for (size_t i = 1; i < kStandInLen; ++i) {
    const char* p = name[i] == '\0' ? nullptr : std::strchr(kStandInAlphabet, name[i]);
    if (p == nullptr) return -1;
    index = index * kStandInRadix + (p - kStandInAlphabet);
  }
  return index;
}

void StandInName(uint32_t index, char name[kStandInLen]) {
  name[0] = '$';
  for (size_t i = kStandInLen - 1; i >= 1; --i) {
    name[i] = kStandInAlphabet[index % kStandInRadix];
    index /= kStandInRadix;
  }
}

// The position of the quote that ends the string whose text starts at
// `start`, or json.size() if none does: the first '"' not escaped, that is
// not preceded by an odd run of backslashes.  (Each run is counted once, by
// the quote that follows it, so the whole text costs one pass.)
size_t ClosingQuote(std::string_view json, size_t start) {
  size_t j = start;
  while (j < json.size()) {
    const void* q = std::memchr(json.data() + j, '"', json.size() - j);
    if (q == nullptr) break;
    j = static_cast<size_t>(static_cast<const char*>(q) - json.data());
    size_t backslashes = 0;
    while (j - backslashes > start && json[j - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return j;
    ++j;
  }
  return json.size();
}

struct KeySpan {
  size_t start;  // of the raw text between the quotes
  size_t len;
};

struct TypeKeyScan {
  std::vector<KeySpan> type_keys;      // "$type" keys of objects without "$binary"
  std::vector<uint32_t> taken;         // stand-in names used as keys by the input
};

// One pass over the text, iterative: strings (with their escapes) are
// skipped as units, so a "$type" inside a string value is never touched; a
// string followed by ':' inside an object is a key.  Returns false when
// there is nothing to do or the text is too deep (libbson reports the
// error).  Malformed text is not diagnosed here but left to libbson; what is
// renamed in it keeps its length, so libbson's error positions still hold.
bool ScanTypeKeys(std::string_view json, TypeKeyScan* scan) {
  struct Frame {
    bool is_object;
    bool has_binary;
    size_t first_pending;  // this object's entries in `pending`
  };
  std::vector<Frame> stack;
  std::vector<KeySpan> pending;  // "$type" keys of the objects still open
  const size_t n = json.size();
  size_t i = 0;
  while (i < n) {
    char c = json[i];
    if (c == '"') {
      size_t start = i + 1;
      size_t j = ClosingQuote(json, start);
      if (j == n) break;  // unterminated string
      i = j + 1;
      if (stack.empty() || !stack.back().is_object) continue;
      size_t k = i;
      while (k < n && IsJsonSpace(json[k])) ++k;
      if (k == n || json[k] != ':') continue;
      char name[8];
      size_t len = 0;
      if (!DecodeShortAsciiKey(json.substr(start, j - start), name, sizeof(name), &len)) continue;
      std::string_view key(name, len);
      if (key == "$type") {
        pending.push_back(KeySpan{start, j - start});
      } else if (key == "$binary") {
        stack.back().has_binary = true;
      } else {
        int64_t index = StandInIndex(name, len);
        if (index >= 0) scan->taken.push_back(static_cast<uint32_t>(index));
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (stack.size() == kMaxScanDepth) return false;
      stack.push_back(Frame{c == '{', false, pending.size()});
    } else if (c == '}' || c == ']') {
      if (stack.empty()) break;  // unbalanced: libbson refuses it
      Frame frame = stack.back();
      stack.pop_back();
      if (frame.is_object && !frame.has_binary) {
        scan->type_keys.insert(scan->type_keys.end(), pending.begin() + frame.first_pending, pending.end());
      }
      pending.resize(frame.first_pending);
    }
    ++i;
  }
  return !scan->type_keys.empty();
}

// The first stand-in name no key of the input uses; false if all are used.
bool PickStandIn(std::vector<uint32_t>* taken, char name[kStandInLen]) {
  std::sort(taken->begin(), taken->end());
  uint32_t index = 0;
  for (uint32_t t : *taken) {
    if (t > index) break;
    if (t == index) ++index;
  }
  if (index >= kStandInCount) return false;
  StandInName(index, name);
  return true;
}

// Writes `name` over the raw key text at `span`, in exactly span.len bytes:
// a "$type" key is 5 + 5k bytes long (k characters written as \u00XX), and
// the stand-in is spelled with the same number of escapes.
bool WriteStandIn(const char name[kStandInLen], KeySpan span, std::string* text) {
  if (span.len < kStandInLen || (span.len - kStandInLen) % 5 != 0) return false;
  size_t escaped = (span.len - kStandInLen) / 5;
  if (escaped > kStandInLen) return false;
  static constexpr char kHex[] = "0123456789abcdef";
  size_t at = span.start;
  for (size_t i = 0; i < kStandInLen; ++i) {
    unsigned char ch = static_cast<unsigned char>(name[i]);
    if (i < escaped) {
      const char esc[6] = {'\\', 'u', '0', '0', kHex[ch >> 4], kHex[ch & 0xf]};
      text->replace(at, 6, esc, 6);
      at += 6;
    } else {
      (*text)[at++] = name[i];
    }
  }
  return true;
}

// Renames every key `name` of the document (nested documents, arrays and
// code-with-scope scopes included) back to "$type", in place: the names have
// the same length.  Iterative.
void RenameStandInsBack(uint8_t* data, uint32_t len, const char name[kStandInLen]) {
  bson_t root;
  if (!bson_init_static(&root, data, len)) return;
  // bson_iter_t is declared 128-byte aligned through its typedef, which a
  // template argument drops; a struct member keeps it, so the vector
  // allocates aligned storage.
  struct Level {
    bson_iter_t it;
  };
  static_assert(alignof(Level) == alignof(bson_iter_t), "bson_iter_t alignment");
  std::vector<Level> stack(1);
  if (!bson_iter_init(&stack.back().it, &root)) return;
  while (!stack.empty()) {
    bson_iter_t* it = &stack.back().it;
    if (!bson_iter_next(it)) {
      stack.pop_back();
      continue;
    }
    if (bson_iter_key_len(it) == kStandInLen && std::memcmp(bson_iter_key(it), name, kStandInLen) == 0) {
      // The key lies in `data`, which this function may write.
      size_t offset = static_cast<size_t>(reinterpret_cast<const uint8_t*>(bson_iter_key(it)) - data);
      std::memcpy(data + offset, "$type", kStandInLen);
    }
    Level child;
    if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
      if (bson_iter_recurse(it, &child.it)) stack.push_back(child);
    } else if (BSON_ITER_HOLDS_CODEWSCOPE(it)) {
      uint32_t code_len = 0, scope_len = 0;
      const uint8_t* scope_data = nullptr;
      bson_iter_codewscope(it, &code_len, &scope_len, &scope_data);
      bson_t scope;
      if (scope_data != nullptr && bson_init_static(&scope, scope_data, scope_len) &&
          bson_iter_init(&child.it, &scope)) {
        stack.push_back(child);
      }
    }
  }
}

}  // namespace

StatusOr<Document> Document::FromJson(std::string_view json) {
  size_t first = 0;
  while (first < json.size() && isspace(static_cast<unsigned char>(json[first]))) ++first;
  if (first == json.size() || json[first] != '{') {
    return Status(ErrorCode::kFailedToParse, "invalid JSON: expected a document ({...}) at position " +
                                                 std::to_string(first));
  }
  // $type keys (see above): only text that can hold one is scanned.
  std::string rewritten;
  char stand_in[kStandInLen];
  bool renamed = false;
  if (MayHaveTypeKey(json)) {
    TypeKeyScan scan;
    if (ScanTypeKeys(json, &scan) && PickStandIn(&scan.taken, stand_in)) {
      rewritten.assign(json.data(), json.size());
      for (const KeySpan& span : scan.type_keys) renamed |= WriteStandIn(stand_in, span, &rewritten);
    }
  }
  std::string_view text = renamed ? std::string_view(rewritten) : json;
  bson_error_t error;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(text.data()),
                                 static_cast<ssize_t>(text.size()), &error);
  if (b == nullptr) {
    // libbson's message may quote the input's bytes, valid UTF-8 or not.
    std::string msg = "invalid JSON: " + ToCleanUtf8(error.message);
    if (msg.find("position") == std::string::npos && msg.find("Incomplete") != std::string::npos) {
      msg += " (input ends at position " + std::to_string(json.size()) + ")";
    }
    return Status(ErrorCode::kFailedToParse, msg);
  }
  if (renamed) {
    uint32_t len = 0;
    uint8_t* data = bson_destroy_with_steal(b, true, &len);
    if (data == nullptr) return Status(ErrorCode::kFailedToParse, "invalid JSON: out of memory");
    RenameStandInsBack(data, len, stand_in);
    b = bson_new_from_data(data, len);
    bson_free(data);
    if (b == nullptr) return Status(ErrorCode::kFailedToParse, "invalid JSON: out of memory");
  }
  return Document(b, false);
}

StatusOr<Document> Document::FromBytes(const uint8_t* data, size_t len) {
  RETURN_IF_ERROR(ValidateIncoming(data, len));
  bson_t* b = bson_new_from_data(data, len);
  if (b == nullptr) return Status(ErrorCode::kInvalidBSON, "invalid BSON: bad length or terminator");
  return Document(b, false);
}

bool BinaryEqual(DocumentView a, DocumentView b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace gatedb
