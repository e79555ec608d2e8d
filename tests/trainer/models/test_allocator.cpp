// The CPU tensor pool of trainer/models/allocator.h: its size classes (values worked out by
// hand) and the reuse of freed blocks. That training's heap stays bounded with it is a
// measurement (docs/experiments E25), not a test: a synthetic loop did not grow glibc's
// heap the way training steps do.
#include "trainer/models/allocator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>

namespace tpuperf {
namespace {

TEST(Allocator, SizeClassesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(cpu_tensor_size_class(1), 64u);
  EXPECT_EQ(cpu_tensor_size_class(64), 64u);
  EXPECT_EQ(cpu_tensor_size_class(65), 80u);    // 64 + 16
  EXPECT_EQ(cpu_tensor_size_class(128), 128u);
  EXPECT_EQ(cpu_tensor_size_class(129), 160u);  // 128 + 32
  EXPECT_EQ(cpu_tensor_size_class(1000), 1024u);
  EXPECT_EQ(cpu_tensor_size_class(1025), 1280u);
  EXPECT_EQ(cpu_tensor_size_class(3000000), 3145728u);  // 2 MiB + 2 x 512 KiB
  for (size_t n = 65; n < 100000; n += 97) {
    const size_t c = cpu_tensor_size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n + n / 4 + 1) << n;
  }
}

TEST(Allocator, FreedBlockServesTheNextTensorOfItsClass) {
  keep_freed_memory_for_reuse();
  const void* first = nullptr;
  {
    torch::Tensor t = torch::ones({1000}, torch::kFloat32);
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_FLOAT_EQ(t.sum().item<float>(), 1000.0f);
  }
  torch::Tensor again = torch::zeros({990}, torch::kFloat32);  // 3960 bytes: the class of 4000
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_FLOAT_EQ(again.sum().item<float>(), 0.0f);
  // A large request takes a free block of a larger class (less than twice its size).
  const void* large = nullptr;
  {
    torch::Tensor t = torch::empty({3 << 20}, torch::kUInt8);
    large = t.data_ptr();
  }
  torch::Tensor smaller = torch::empty({2 << 20}, torch::kUInt8);
  EXPECT_EQ(smaller.data_ptr(), large);
}

// When the free blocks would exceed the cap (1.5 x the peak of live blocks, 512 MiB at
// least), the blocks freed longest ago go back to the system, not the one being freed: a
// step that allocates the same sizes again finds them. Untouched mmapped blocks cost no
// memory.
TEST(Allocator, FullCacheGivesBackTheBlocksFreedLongestAgo) {
  keep_freed_memory_for_reuse();
  constexpr int64_t kMiB = 1 << 20;
  const size_t base = cpu_tensor_pool_stats().cached_bytes;  // what earlier tests left
  ASSERT_LT(base, size_t{16} << 20);
  // Two stale free blocks, of classes 192 and 448 MiB: the peak is 448 MiB, the cap 672.
  { torch::Tensor stale = torch::empty({180 * kMiB}, torch::kUInt8); }
  { torch::Tensor stale = torch::empty({400 * kMiB}, torch::kUInt8); }
  ASSERT_EQ(cpu_tensor_pool_stats().cached_bytes, base + (size_t{640} << 20));
  // 90 MiB (class 96 MiB) cannot take either (more than 3 classes larger); freeing it would
  // make 736 MiB of free blocks, so the blocks freed before it go back, oldest first (the
  // earlier tests' and the 192 MiB one), and the next 90 MiB tensor reuses its block
  // without taking a new one.
  const void* first = nullptr;
  {
    torch::Tensor t = torch::empty({90 * kMiB}, torch::kUInt8);
    first = t.data_ptr();
  }
  const CpuPoolStats freed = cpu_tensor_pool_stats();
  EXPECT_EQ(freed.cached_bytes, size_t{448 + 96} << 20);
  torch::Tensor again = torch::empty({90 * kMiB}, torch::kUInt8);
  EXPECT_EQ(cpu_tensor_pool_stats().blocks_created, freed.blocks_created);
  EXPECT_EQ(again.data_ptr(), first);
}

// A block carved from a chunk of huge pages (below 16 MiB) keeps its address when its
// memory goes back: the next tensor of its class gets it, its whole pages read zero (they
// were given back, not kept), and no new block is created.
TEST(Allocator, CarvedBlockGivenBackServesItsClassAgain) {
  keep_freed_memory_for_reuse();
  constexpr int64_t kMiB = 1 << 20, kPage = 4096;
  const void* carved = nullptr;
  {
    torch::Tensor t = torch::ones({5 * kMiB}, torch::kUInt8);  // class 5 MiB
    carved = t.data_ptr();
  }
  // Free blocks of ever larger classes, one live at a time (untouched: no memory), until
  // they pass the cap (1.5x the peak of live blocks): the blocks freed before them go
  // back, the carved one among them.
  for (int64_t mib = 100; mib < 800; mib = mib * 13 / 10) torch::empty({mib * kMiB}, torch::kUInt8);
  const CpuPoolStats before = cpu_tensor_pool_stats();
  torch::Tensor back = torch::empty({5 * kMiB - 100}, torch::kUInt8);
  EXPECT_EQ(back.data_ptr(), carved);
  EXPECT_EQ(cpu_tensor_pool_stats().blocks_created, before.blocks_created);
  // The pages lying wholly inside the data (its first and last partial pages may share a
  // page with neighbouring blocks) read zero.
  EXPECT_EQ(back.slice(0, kPage, 5 * kMiB - 2 * kPage).sum().item<int64_t>(), 0);
}

}  // namespace
}  // namespace tpuperf
