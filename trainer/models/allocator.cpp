#include "trainer/models/allocator.h"

#include <malloc.h>

namespace tpuperf {

namespace {

// Blocks up to this size come from the heap, not from mmap: glibc's largest mmap
// threshold (32 MiB on 64-bit). A fixed value also turns off glibc's threshold adaptation.
constexpr int kHeapBlockLimit = 32 * 1024 * 1024;
// The top of the heap is never given back (-1: no trim threshold).
constexpr int kNeverTrim = -1;

}  // namespace

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kHeapBlockLimit);
  mallopt(M_TRIM_THRESHOLD, kNeverTrim);
#endif
}

}  // namespace tpuperf
