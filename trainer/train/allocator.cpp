#include "trainer/train/allocator.h"

#include <malloc.h>

namespace tpuperf {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap, and the top
  // of the heap is never trimmed. Fixed values also turn off glibc's threshold adaptation.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

}  // namespace tpuperf
