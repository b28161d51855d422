// DocumentArena: copies of many documents (a query's results) carved out
// of shared allocations.
//
// Every Document a read returns is a copy of bytes that live in RocksDB
// (a block, a memtable entry) only until the next step of its iterator.
// Alone, such a copy is one malloc of the document's size plus a bson_t:
// past glibc's per-thread cache (1 KiB), a malloc and its free cost several
// hundred instructions, as much as stepping the iterator.  An arena copies
// a query's second and later documents one after another into chunks of
// kChunkBytes, each chunk freed when the last Document in it is (a
// reference count in the chunk).
//
// The cost: a Document kept alive keeps its whole chunk (at most
// kChunkBytes) alive.  Documents larger than a quarter of a chunk, and the
// first document (most finds return one), are allocated alone.
//
// Thread safety: one thread at a time uses an arena; the Documents it made
// may be moved to and destroyed on any thread.
#ifndef GATEDB_ENGINE_DOCUMENT_DOCUMENT_ARENA_H_
#define GATEDB_ENGINE_DOCUMENT_DOCUMENT_ARENA_H_

#include <bson/bson.h>

#include <cstddef>
#include <cstdint>

#include "gatedb/document.h"

namespace gatedb {
namespace internal {

struct DocumentChunk;  // document.cc

class DocumentArena {
 public:
  static constexpr size_t kChunkBytes = 32u << 10;

  DocumentArena() = default;
  ~DocumentArena();
  DocumentArena(const DocumentArena&) = delete;
  DocumentArena& operator=(const DocumentArena&) = delete;

  // A read-only copy of `from`, as Document::Copy makes.
  Document Copy(const bson_t* from);

 private:
  DocumentChunk* chunk_ = nullptr;  // the open chunk; the arena holds one reference
  uintptr_t next_ = 0;              // its first free byte
  uintptr_t end_ = 0;
  uint32_t reserve_ = 0;            // references to chunk_ it holds
  bool copied_ = false;             // the first copy (allocated alone) is made
};

}  // namespace internal
}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_DOCUMENT_ARENA_H_
