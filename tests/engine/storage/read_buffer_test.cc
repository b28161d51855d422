// ReadBuffer (engine/storage/db_impl_internal.h): a thread's point reads
// share one value buffer, which keeps its capacity; a nested read gets its
// own; a buffer that grew too big is let go.
#include <string>
#include <thread>

#include "engine/storage/db_impl_internal.h"
#include "tests/testutil/test_util.h"

namespace gatedb {
namespace {

TEST(ReadBufferTest, AThreadsReadsReuseOneBufferAndNestedReadsGetTheirOwn) {
  std::string* first = nullptr;
  {
    ReadBuffer<std::string> a;
    first = a.get();
    a.get()->assign(1000, 'x');
    ReadBuffer<std::string> nested;
    EXPECT_NE(first, nested.get()) << "a read inside another must not share its buffer";
    nested.get()->assign("inner");
    EXPECT_EQ(std::string(1000, 'x'), *a.get());
  }
  ReadBuffer<std::string> b;
  EXPECT_EQ(first, b.get());
  EXPECT_TRUE(b.get()->empty()) << "handed out cleared";
  EXPECT_GE(b.get()->capacity(), 1000u) << "with the capacity it grew to";

  std::string* other_thread = nullptr;
  std::thread t([&] {
    ReadBuffer<std::string> c;
    other_thread = c.get();
  });
  t.join();
  EXPECT_NE(first, other_thread);
}

TEST(ReadBufferTest, ABufferGrownPastTheLimitIsNotKept) {
  {
    ReadBuffer<std::string> a;
    a.get()->assign(ReadBuffer<std::string>::kMaxKeptBytes + 1, 'x');
  }
  ReadBuffer<std::string> b;
  EXPECT_LT(b.get()->capacity(), ReadBuffer<std::string>::kMaxKeptBytes);
}

TEST(ReadBufferTest, APinnableSliceIsResetForTheNextRead) {
  rocksdb::PinnableSlice* first = nullptr;
  {
    ReadBuffer<rocksdb::PinnableSlice> a;
    first = a.get();
    a.get()->PinSelf(rocksdb::Slice("a stored value"));
    EXPECT_EQ("a stored value", a.get()->ToString());
  }
  ReadBuffer<rocksdb::PinnableSlice> b;
  EXPECT_EQ(first, b.get());
  EXPECT_EQ(0u, b.get()->size());
  EXPECT_FALSE(b.get()->IsPinned());
}

}  // namespace
}  // namespace gatedb
