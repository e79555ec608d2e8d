// How a preprocessing rank gets its memory. A rank inflates and converts file after file,
// each into arrays of up to a gigabyte, freed before the next. Memory fresh from the
// kernel costs a page fault per 4 KiB page on first touch, and on this kind of machine
// (a VM) that costs more than inflating the data into it: about 3.6 s per GB against
// 0.05 s per GB for memory touched before. So a rank keeps the memory it has freed, and
// backs it with transparent huge pages (one fault per 2 MiB), where the kernel allows.
#pragma once

#include <cstdint>

namespace tpuperf {

// Process start, before any allocation: glibc serves every block from its heap (no
// per-block mmap) and never gives freed memory back (no trimming below 2 GiB), so one
// file's memory is reused by the next and peak RSS stays that of the largest file.
void keep_freed_memory();

// Grows the heap by room for a file of `unpacked_bytes` arrays (its inflated members and
// the arrays converted from them) and asks for huge pages there (madvise
// MADV_HUGEPAGE; no effect where transparent huge pages are off). Nothing is touched: RSS
// does not grow until the memory is used. Call once, with the rank's largest file.
void reserve_working_memory(int64_t unpacked_bytes);

}  // namespace tpuperf
