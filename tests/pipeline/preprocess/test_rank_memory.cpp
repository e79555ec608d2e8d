// How a preprocessing rank gets its memory (pipeline/preprocess/rank_memory.h): freed blocks
// stay in the heap for the next file, and reserving room for the largest file touches
// nothing. Its own executable (one per test file): the mallopt settings are process-wide.
#include "pipeline/preprocess/rank_memory.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace tpuperf {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Resident bytes of this process (/proc/self/statm's second field, in pages).
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Free bytes glibc keeps in its heap (arenas), i.e. what a later malloc can reuse untouched.
size_t heap_free_bytes() { return mallinfo2().fordblks; }

class RankMemory : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { keep_freed_memory(); }
};

// Without keep_freed_memory, glibc maps a 64 MiB block on its own and unmaps it on free:
// nothing would stay for the next file, which pays a page fault per page again.
TEST_F(RankMemory, AFreedLargeBlockStaysInTheHeap) {
  auto* block = static_cast<char*>(std::malloc(64 * kMiB));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 64 * kMiB);
  const size_t held = heap_free_bytes();
  std::free(block);
  EXPECT_GE(heap_free_bytes(), held + 60 * kMiB);
}

// The room for the largest file is taken from the system once and left free in the heap
// (so the file's arrays are carved from it), and none of it is touched: RSS stays.
TEST_F(RankMemory, ReservedRoomIsFreeInTheHeapAndNotResident) {
  const size_t rss_before = resident_bytes();
  reserve_working_memory(int64_t{128} * static_cast<int64_t>(kMiB));  // 2x: 256 MiB of room
  EXPECT_GE(heap_free_bytes(), 250 * kMiB);
  EXPECT_LT(resident_bytes(), rss_before + 16 * kMiB);
}

TEST_F(RankMemory, TooLittleToReserveIsNoOp) {
  const size_t free_before = heap_free_bytes();
  reserve_working_memory(1024);
  EXPECT_LT(heap_free_bytes(), free_before + kMiB);
}

}  // namespace
}  // namespace tpuperf
