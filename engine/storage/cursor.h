// File: engine/storage/cursor.h
//
// Cursors: a result paged out in batches (find, and the aggregation
// pipeline), and the registry of open ones that getMore and killCursors
// name by id.
//
// A CursorSource produces its results lazily: a find over a million
// documents read 100 at a time holds one batch and the plan's position (a
// RocksDB snapshot and iterators), not the result.  What a reader sees: the
// snapshot taken when the cursor opened (outside a transaction) or the
// transaction's own view (inside one); writes committed after the cursor
// opened are not seen, whichever batch it is on.
//
// CursorRegistry owns the open cursors.  An id is a random non-zero
// 63-bit number, never reused while the registry lives.  A cursor is
// checked out for one batch at a time (a second getMore meanwhile is
// CursorInUse), expires after `timeout_ms` without use (Sweep), and may
// belong to an owner: a session (getMore must come from it) and, inside a
// transaction, the transaction's scope (KillOwnedBy when it ends: the
// cursor reads through the transaction and cannot outlive it).
//
// Thread safety: CursorRegistry is thread-safe; a CursorSource is used by
// one thread at a time (the registry's checkout guarantees it).
#ifndef GATEDB_ENGINE_STORAGE_CURSOR_H_
#define GATEDB_ENGINE_STORAGE_CURSOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/util/mutex.h"
#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {

struct WriteScope;

// MongoDB's cap on one batch (BSONObjMaxUserSize).
constexpr size_t kMaxBatchBytes = 16u << 20;

struct CursorBatch {
  std::vector<Document> docs;
  std::vector<Document> field_versions;  // parallel to docs, when the find asked for them
  size_t bytes = 0;                      // BSON bytes of docs
  // A change stream's position after this batch (its resume token); empty
  // for other cursors.
  Document post_batch_resume_token;
};

// What a find or aggregate asks of its cursor, and a getMore of it.
struct CursorRequest {
  int64_t batch_size = 101;  // documents in the batch (0: no count limit); 101 is MongoDB's first batch
  bool single_batch = false; // close the cursor after the first batch
  bool empty_first_batch = false;  // find's batchSize 0: open the cursor, return nothing yet
  std::string session;       // lsid bytes; empty: none
  WriteScope* scope = nullptr;  // the transaction it runs in
  // A getMore's maxTimeMS: how long a tailable cursor (a change stream) may
  // wait for new results when it has none.  -1: not given.
  int64_t max_await_ms = -1;
  // Never wait (the wire server parks a change stream's empty getMore
  // instead of holding a worker thread, and asks again when the journal
  // grows).
  bool no_wait = false;
};

// One batch and the cursor id a reply shows (0: nothing more).
struct CursorPage {
  CursorBatch batch;
  int64_t cursor_id = 0;
  std::string ns;
};

struct KillCursorsResult {
  std::vector<int64_t> killed;
  std::vector<int64_t> not_found;
};

class CursorSource {
 public:
  virtual ~CursorSource() = default;
  // Appends the next results to *out: at most `max_docs` (0: no count
  // limit), and none that would take out->bytes past `max_bytes` (except a
  // batch's first).  Errors end the cursor (MaxTimeMSExpired when the
  // cursor's time limit passes, or the plan's error).
  virtual Status NextBatch(int64_t max_docs, size_t max_bytes, CursorBatch* out) = 0;
  // True once every result has been returned.
  virtual bool exhausted() const = 0;
  // A tailable cursor (a change stream) stays open at the end of what is
  // there now and waits for more; only its getMore takes maxTimeMS, which
  // SetAwaitTime passes before the NextBatch of that getMore.
  virtual bool tailable() const { return false; }
  virtual void SetAwaitTime(int64_t /*ms*/) {}
};

// Milliseconds of a monotonic clock (for cursor time limits and expiry).
int64_t SteadyNowMs();

class CursorRegistry {
 public:
  struct Owner {
    std::string session;         // lsid bytes; empty: none
    WriteScope* scope = nullptr; // a transaction's scope; null: none
  };
  // A checked-out cursor: Return() puts it back (or drops it when it is
  // exhausted); destroying it without Return() kills the cursor.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&&) noexcept;
    Lease& operator=(Lease&&) noexcept;
    ~Lease();
    CursorSource* source() const { return source_.get(); }
    int64_t id() const { return id_; }
    const std::string& ns() const { return ns_; }
    // Puts the cursor back for the next getMore, unless it is exhausted.
    // Returns the id a reply shows: 0 when the cursor is gone.
    int64_t Return();

   private:
    friend class CursorRegistry;
    CursorRegistry* registry_ = nullptr;
    int64_t id_ = 0;
    std::string ns_;
    std::unique_ptr<CursorSource> source_;
  };

  explicit CursorRegistry(int64_t timeout_ms);
  ~CursorRegistry();

  // Registers a source that has more to give; returns a checked-out lease
  // (Return() it after the first batch).
  Lease Register(std::unique_ptr<CursorSource> source, std::string ns, Owner owner, int64_t now_ms);
  // Checks out cursor `id` for a getMore on `ns`.  Errors: CursorNotFound
  // (unknown, killed, expired), CursorInUse, Unauthorized (another
  // namespace, MongoDB's message), and owner mismatches (a cursor of a
  // session asked for from another, or of a transaction from outside it).
  StatusOr<Lease> Checkout(int64_t id, const std::string& ns, const Owner& owner, int64_t now_ms);
  // Kills cursor `id` of namespace `ns`: true when it was open (a checked
  // out one dies when its lease ends).
  bool Kill(int64_t id, const std::string& ns);
  // Kills every cursor of `scope` (its transaction is ending).
  void KillOwnedBy(const WriteScope* scope);
  // Kills every cursor of session `lsid` (endSessions, killSessions); an
  // empty `lsid` kills the cursors of every session.  Returns how many.
  size_t KillSession(const std::string& lsid);
  // Kills cursors idle for longer than the timeout.  Returns how many.
  size_t Sweep(int64_t now_ms);
  // Open cursors (idle or checked out).
  size_t size() const;

 private:
  struct Entry {
    std::string ns;
    Owner owner;
    int64_t last_used_ms = 0;
    std::unique_ptr<CursorSource> source;  // null while checked out
    bool killed = false;                   // killed while checked out
  };
  void Put(Lease* lease);
  // Kills every live cursor `match` selects (one checked out dies when its
  // lease ends); returns how many.
  size_t KillWhere(const std::function<bool(const Entry&)>& match) GATEDB_EXCLUDES(mu_);

  const int64_t timeout_ms_;
  mutable Mutex mu_;
  std::map<int64_t, Entry> cursors_ GATEDB_GUARDED_BY(mu_);
  std::mt19937_64 rng_ GATEDB_GUARDED_BY(mu_);
};

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_CURSOR_H_
