#include "engine/document/document_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gatedb/document.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

// {"i": i, "s": <n bytes of a letter picked by i>}
Document Sized(int i, size_t n) {
  bson_t* b = bson_new();
  BSON_APPEND_INT32(b, "i", i);
  std::string s(n, static_cast<char>('a' + i % 26));
  BSON_APPEND_UTF8(b, "s", s.c_str());
  return Document::Adopt(b);
}

// Every copy an arena hands out holds its own bytes, 128-byte aligned as
// libbson's bson_t must be, and stays valid however the arena and the other
// copies are destroyed: in chunks, across chunk boundaries, after the arena.
TEST(DocumentArenaTest, CopiesOutliveTheArenaAndEachOther) {
  std::vector<Document> originals;
  for (int i = 0; i < 400; ++i) originals.push_back(Sized(i, static_cast<size_t>(i * 37 % 1500)));
  std::vector<Document> copies;
  {
    internal::DocumentArena arena;
    for (const Document& d : originals) copies.push_back(arena.Copy(d.bson()));
  }
  ASSERT_EQ(copies.size(), originals.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copies[i].bson()) % alignof(bson_t), 0u);
    EXPECT_NE(copies[i].data(), originals[i].data());
    EXPECT_TRUE(BinaryEqual(copies[i].view(), originals[i].view())) << i;
  }
  // Free every other copy, then check the rest (their chunks are shared).
  for (size_t i = 0; i < copies.size(); i += 2) copies[i] = Document();
  for (size_t i = 1; i < copies.size(); i += 2) EXPECT_TRUE(BinaryEqual(copies[i].view(), originals[i].view())) << i;
}

// A document too large for a chunk's share, and the first copy, are lone
// allocations; both still compare equal and free cleanly (ASan checks).
TEST(DocumentArenaTest, LargeDocumentsAreCopiedAlone) {
  internal::DocumentArena arena;
  Document small = Sized(1, 10);
  Document large = Sized(2, internal::DocumentArena::kChunkBytes);
  Document a = arena.Copy(small.bson());
  Document b = arena.Copy(large.bson());
  Document c = arena.Copy(small.bson());
  EXPECT_TRUE(BinaryEqual(a.view(), small.view()));
  EXPECT_TRUE(BinaryEqual(b.view(), large.view()));
  EXPECT_TRUE(BinaryEqual(c.view(), small.view()));
}

// Copies are read-only blocks: writing to one (mutable_bson) or taking its
// bson_t (Release) first makes it an ordinary libbson document, leaving the
// chunk's other copies untouched.
TEST(DocumentArenaTest, WritingOrReleasingACopyLeavesTheOthers) {
  internal::DocumentArena arena;
  Document orig = Sized(3, 100);
  Document first = arena.Copy(orig.bson());
  Document a = arena.Copy(orig.bson());
  Document b = arena.Copy(orig.bson());
  BSON_APPEND_INT32(a.mutable_bson(), "added", 7);
  EXPECT_TRUE(BinaryEqual(b.view(), orig.view()));
  EXPECT_FALSE(BinaryEqual(a.view(), orig.view()));
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, a.bson(), "added"));
  EXPECT_EQ(bson_iter_int32(&it), 7);
  bson_t* released = b.Release();
  EXPECT_EQ(released->len, orig.size());
  EXPECT_EQ(0, memcmp(bson_get_data(released), orig.data(), orig.size()));
  bson_destroy(released);
  Document copy_of_first = first;  // a copy of a copy: its own block
  first = Document();
  EXPECT_TRUE(BinaryEqual(copy_of_first.view(), orig.view()));
}

// The copies of one arena destroyed on several threads at once: each chunk
// freed exactly once, by whichever copy goes last (ASan and TSan would see
// a double free, a leak or a race on the count).
TEST(DocumentArenaTest, CopiesDestroyedOnManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<Document>> parts(kThreads);
    std::vector<Document> originals;
    for (int i = 0; i < kThreads * kPerThread; ++i) originals.push_back(Sized(i, 40 + i % 300));
    {
      internal::DocumentArena arena;
      // Interleaved, so every chunk has copies owned by every thread.
      for (int i = 0; i < kThreads * kPerThread; ++i) parts[i % kThreads].push_back(arena.Copy(originals[i].bson()));
    }
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (size_t k = 0; k < parts[t].size(); ++k) {
          if (!BinaryEqual(parts[t][k].view(), originals[k * kThreads + t].view())) ++mismatches[t];
          parts[t][k] = Document();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

}  // namespace
}  // namespace gatedb
