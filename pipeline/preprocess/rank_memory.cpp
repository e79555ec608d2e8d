#include "pipeline/preprocess/rank_memory.h"

#include <malloc.h>
#include <sys/mman.h>

#include <climits>
#include <cstdlib>

#include "common/base/log.h"

namespace tpuperf {

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
// A layout file's peak: its largest member inflated (float32 configs), the int8 configs
// converted from it (a quarter), the packed kept configs and the node arrays: measured
// 1.35x the file's inflated size on the bench tree's largest file; 2x leaves room.
constexpr double kWorkingMemoryPerUnpackedByte = 2.0;

}  // namespace

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

void reserve_working_memory(int64_t unpacked_bytes) {
  const size_t n = static_cast<size_t>(static_cast<double>(unpacked_bytes) * kWorkingMemoryPerUnpackedByte);
  if (n < kHugePage) return;
  // Freed at once, the block stays in the heap as its free top (keep_freed_memory): the
  // allocations that follow are carved from it, inside the range advised here.
  void* block = std::malloc(n);
  if (!block) return;
  const uintptr_t start = (reinterpret_cast<uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(block) + n) & ~(kHugePage - 1);
  if (end > start && madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE) != 0)
    spdlog::debug("no transparent huge pages for the working memory (madvise failed)");
  std::free(block);
}

}  // namespace tpuperf
