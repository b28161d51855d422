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

}  // namespace gatedb

#endif  // GATEDB_CURSOR_H_
