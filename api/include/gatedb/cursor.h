// File: gatedb/cursor.h
//
// Cursor: the results of Collection::FindCursor, fetched from the store a
// batch at a time, so a scan of a million documents holds one batch in
// memory.  It reads one snapshot: the one taken when it was opened (or its
// transaction's view, inside one); later writes are not seen.
//
//   auto cur = coll.FindCursor(filter, opts);
//   if (!cur.ok()) ...;
//   gatedb::Document doc;
//   for (;;) {
//     auto more = cur->Next(&doc);
//     if (!more.ok()) { /* an error ends the cursor */ break; }
//     if (!*more) break;
//     use(doc);
//   }
//
// A cursor opened in a transaction belongs to it: it may only be read while
// the transaction is open (afterwards Next() fails with CursorNotFound).  A
// cursor left unread for Options::cursor_timeout_ms is closed by the store
// (Next() then fails with CursorNotFound).  Destroying a cursor closes it.
//
// Thread safety: one thread at a time per Cursor.
#ifndef GATEDB_CURSOR_H_
#define GATEDB_CURSOR_H_

#include <cstdint>
#include <memory>

#include "gatedb/document.h"
#include "gatedb/status.h"

namespace gatedb {

// How a change stream starts and reads (MongoDB's $changeStream options).
struct ChangeStreamOptions {
  // Update events carry the document as it is when the event is read
  // (fullDocument: "updateLookup"; null when it is gone).  Inserts and
  // replacements always carry theirs.  Default: false
  bool update_lookup = false;
  // Start after this event (its _id, a resume token) or after a
  // postBatchResumeToken; resume_after refuses an invalidate's token,
  // start_after starts after it.  Default: none (events committed from now on)
  Document resume_after;
  Document start_after;
  // Events fetched per batch.  Default: 101
  int64_t batch_size = 101;
  // How long Next waits for an event before it returns false.  Default: 1000
  int64_t max_await_ms = 1000;
};

class Cursor {
 public:
  Cursor(Cursor&& other) noexcept;
  Cursor& operator=(Cursor&& other) noexcept;
  ~Cursor();

  // The next document: true with *doc set, false when there are no more.
  // Errors: CursorNotFound (expired, or its transaction ended),
  // MaxTimeMSExpired, and the query's own errors.
  StatusOr<bool> Next(Document* doc);

  // The store's id of the cursor while more batches remain; 0 once the last
  // batch has been fetched.
  int64_t id() const;

 private:
  friend class Collection;
  struct Rep;
  explicit Cursor(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

// A change stream (Collection::Watch, Database::Watch): the journal's
// committed writes as MongoDB change events ({_id: <resume token>,
// operationType, ns, documentKey, fullDocument, updateDescription,
// clusterTime, wallTime} plus versionBefore, versionAfter, writeContext),
// in commit order, each once.  It never ends on its own but at an
// invalidate event (its collection or database was dropped).
//
//   auto cs = coll.Watch();
//   gatedb::Document ev;
//   for (;;) {
//     auto got = cs->Next(&ev);      // waits up to options.max_await_ms
//     if (!got.ok()) break;          // e.g. ChangeStreamHistoryLost
//     if (*got) handle(ev);          // save cs->resume_token() to resume later
//     if (cs->done()) break;
//   }
//
// Thread safety: one thread at a time per ChangeStream.
class ChangeStream {
 public:
  ChangeStream(ChangeStream&& other) noexcept;
  ChangeStream& operator=(ChangeStream&& other) noexcept;
  ~ChangeStream();

  // The next event: true with *event set; false when none came within
  // max_await_ms (the stream stays open) or once it is done().  Errors:
  // ChangeStreamHistoryLost (the journal collected events it had not read
  // yet), CursorNotFound (it idled past Options::cursor_timeout_ms), the
  // pipeline's errors.
  StatusOr<bool> Next(Document* event);
  // Where to resume from to miss nothing after what Next returned: the last
  // event's _id, or the stream's position when it advanced past events of
  // other collections.
  const Document& resume_token() const;
  // True after the invalidate event.
  bool done() const;

  struct Rep;  // internal
  explicit ChangeStream(std::unique_ptr<Rep> rep);

 private:
  std::unique_ptr<Rep> rep_;
};

}  // namespace gatedb

#endif  // GATEDB_CURSOR_H_
