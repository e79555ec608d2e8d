#include "trainer/models/allocator.h"

#include <c10/core/CPUAllocator.h>
#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace tpuperf {

namespace {

// glibc's allocations (all but tensors) up to this size come from its heap, not from mmap:
// its largest mmap threshold (32 MiB on 64-bit). A fixed value also turns off glibc's threshold adaptation.
constexpr int kHeapBlockLimit = 32 * 1024 * 1024;
// The top of the heap is never given back (-1: no trim threshold).
constexpr int kNeverTrim = -1;

// LibTorch's alignment of CPU tensor data; the block's header takes one such unit.
constexpr size_t kAlignment = 64;
// Tensor memory lies on transparent huge pages where the system allows them (madvise mode,
// Debian's default): touching fresh memory costs one fault per 2 MiB instead of one per
// 4 KiB. On this project's virtual machines a 4 KiB fault costs 13-18 us (64 MiB touched
// page by page: 220-290 ms; on huge pages 4-5 ms once the kernel has them free), and the
// first epoch of a tile default run, which fills the pool (~40k faults), took 2.3x a
// later one (2026-11-29, docs/experiments E35).
constexpr size_t kHugePage = size_t{2} << 20;
// Blocks below this size are carved from shared chunks of huge pages; larger ones are
// mapped on their own, so that one given back (munmap) leaves no hole.
constexpr size_t kOwnMapping = size_t{16} << 20;
constexpr size_t kChunkBytes = size_t{64} << 20;
// A request of kLargeRequest bytes or more may take a free block up to kLargerClasses
// classes larger (< 2x its size). From 4 KiB rather than 1 MiB: the tile default's tensors
// are mostly smaller than 1 MiB and of many sizes, and with exact classes below 1 MiB its
// pool held 159 MB for a peak of 43 MB live (124 MB from 4 KiB; the layout default 283 ->
// 260 MB for 135 MB). Every byte the pool holds was touched fresh once, in the first
// epoch, where page zeroing on this project's VMs took ~10% of a 3-epoch run (perf,
// 2026-12-07, docs/experiments E48).
constexpr size_t kLargeRequest = size_t{4} << 10;
constexpr int kLargerClasses = 3;
// Free blocks are kept up to the larger of this and 1.5 x the most bytes ever live at once
// (a step's peak), the rest given back (give_back): a step of a large graph frees GBs of
// activations that the next step needs again, and mapping them anew cost a layout step of
// 194k node slots 27% of its time in page faults (perf, 2026-11-28) when only 512 MiB were
// kept. The half above the peak is slack for size classes: a step's requests do not fit
// the blocks of the step before exactly, and with free blocks capped at the peak itself a
// default-model step of that graph still mapped ~300 MB anew (3.56 s a step; 1.14 s with
// the slack, 2026-11-29).
constexpr size_t kMinCachedBytes = size_t{512} << 20;
// Four classes per power of two (at most 25% rounding), from 64 bytes to 2^47.
constexpr int kClasses = 4 * 42;

// The size class of n bytes: its rounded size and its index (smaller sizes, smaller index).
size_t size_class(size_t n, int* index) {
  if (n <= kAlignment) {
    *index = 0;
    return kAlignment;
  }
  const int k = 63 - __builtin_clzll(n - 1);  // 2^k < n <= 2^(k+1), k >= 6
  const size_t base = size_t{1} << k, step = base / 4;
  const size_t sub = (n - base + step - 1) / step;  // 1..4
  *index = (k - 6) * 4 + static_cast<int>(sub);
  return base + sub * step;
}

size_t class_bytes(int index) {
  if (index == 0) return kAlignment;
  const size_t base = size_t{1} << ((index - 1) / 4 + 6);
  return base + static_cast<size_t>((index - 1) % 4 + 1) * (base / 4);
}

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

// The address space a block of class `size` takes, its header included.
size_t block_span(size_t size) { return round_up(size + kAlignment, size >= kOwnMapping ? kHugePage : kAlignment); }

// `bytes` (a multiple of 2 MiB) of fresh memory at a 2 MiB boundary, advised to use huge
// pages (no effect where transparent huge pages are off). Nothing is touched: untouched
// pages cost no memory.
void* map_huge(size_t bytes) {
  void* p = mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(p), aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(p, aligned - start);
  if (const size_t tail = start + kHugePage - aligned) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

// Blocks below kOwnMapping, cut one after another from chunks of huge pages; the rest of
// a chunk too short for a block is left untouched (address space, no memory).
class Chunks {
 public:
  void* carve(size_t span) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<size_t>(end_ - next_) < span) {
      next_ = static_cast<char*>(map_huge(kChunkBytes));
      end_ = next_ + kChunkBytes;
    }
    void* p = next_;
    next_ += span;
    return p;
  }

 private:
  std::mutex mutex_;
  char* next_ = nullptr;
  char* end_ = nullptr;
};

Chunks& chunks() {
  static Chunks* c = new Chunks;  // never destroyed: tensors may be freed during exit
  return *c;
}

void* new_block(size_t size) { return size >= kOwnMapping ? map_huge(block_span(size)) : chunks().carve(block_span(size)); }

// Gives a block's memory back to the system. A block of its own mapping is unmapped; one
// carved from a chunk keeps its address (it is reused for its class, see `released`) and
// only its whole pages are given back (MADV_DONTNEED: they read as zeros when touched
// again).
void give_back(void* block, size_t size) {
  if (size >= kOwnMapping) {
    munmap(block, block_span(size));
    return;
  }
  const uintptr_t start = round_up(reinterpret_cast<uintptr_t>(block), 4096);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(block) + block_span(size)) / 4096 * 4096;
  if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

// The block's header (kAlignment bytes before the tensor's data): its size class, and when
// it is free, the time it was freed (a count of releases).
struct BlockHeader {
  int index;
  uint64_t freed_at;
};
static_assert(sizeof(BlockHeader) <= kAlignment, "the header fits in front of the data");

BlockHeader& header(void* block) { return *static_cast<BlockHeader*>(block); }

// LibTorch's CPU tensors from per-size-class free lists. A training step frees and
// allocates tensors of a few hundred sizes that change with every batch's graphs; through
// glibc's malloc (posix_memalign) the holes they left were not reused, and the heap grew
// by ~4 MB a step without bound: 8 GB a rank after the demo's 4 layout collections, with
// 0.3 GB live (heaptrack). Rounded to a class, a freed block serves the next tensor of its
// class (a large one also of the next smaller classes). What the free lists hold beyond
// their cap (kMinCachedBytes) goes back to the system, the blocks
// freed longest ago first: they are of sizes the steps no longer ask for. (Giving back
// the block being freed instead kept stale blocks of the first steps forever and mapped
// a large graph's activations anew every step: 16 blocks of 3-50 MB, ~75k page faults a
// step, perf 2026-11-29.) A block carved from a chunk keeps its address when its memory
// goes back, and serves its class again before a new one is carved.
class ReusingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    int index = 0;
    const size_t size = size_class(n, &index);
    void* block = take(index, size >= kLargeRequest ? kLargerClasses : 0);
    if (!block) {
      block = take_released(index);
      if (!block) {
        block = new_block(size);
        count_new(size);
      }
      header(block).index = index;  // a released block's header may read zero
    }
    return {static_cast<char*>(block) + kAlignment, block, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  static CpuPoolStats stats() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    return {p.live_bytes, p.cached_bytes, p.peak_live_bytes, p.blocks_created};
  }

 private:
  struct Pool {
    std::mutex mutex;
    std::array<std::vector<void*>, kClasses> free;      // each list oldest first
    std::array<std::vector<void*>, kClasses> released;  // carved blocks given back
    size_t cached_bytes = 0;
    size_t live_bytes = 0, peak_live_bytes = 0;  // in blocks handed out
    size_t blocks_created = 0;
    uint64_t releases = 0;
  };
  static void count_new(size_t size) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    count_live(p, size);
    ++p.blocks_created;
  }
  static void count_live(Pool& p, size_t size) {
    p.live_bytes += size;
    p.peak_live_bytes = std::max(p.peak_live_bytes, p.live_bytes);
  }
  static Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: tensors may be freed during exit
    return *p;
  }
  // A free block of class `index` or up to `larger` classes above it (its header keeps
  // its own class), the most recently freed of its class.
  static void* take(int index, int larger) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (int i = index; i <= std::min(index + larger, kClasses - 1); ++i) {
      auto& list = p.free[static_cast<size_t>(i)];
      if (list.empty()) continue;
      void* block = list.back();
      list.pop_back();
      p.cached_bytes -= class_bytes(i);
      count_live(p, class_bytes(i));
      return block;
    }
    return nullptr;
  }
  // A carved block of class `index` whose memory was given back; its pages read zero.
  static void* take_released(int index) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto& list = p.released[static_cast<size_t>(index)];
    if (list.empty()) return nullptr;
    void* block = list.back();
    list.pop_back();
    count_live(p, class_bytes(index));
    return block;
  }
  // Gives a free block's memory back to the system; a carved one is kept for reuse.
  static void retire(void* block) {
    const int index = header(block).index;
    const size_t size = class_bytes(index);
    give_back(block, size);
    if (size >= kOwnMapping) return;
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.released[static_cast<size_t>(index)].push_back(block);
  }
  // Removes the free block freed longest ago (the oldest front of the lists) and returns
  // it; the pool must be locked and hold at least one free block.
  static void* evict_oldest(Pool& p) {
    size_t oldest = kClasses;
    for (size_t i = 0; i < p.free.size(); ++i)
      if (!p.free[i].empty() &&
          (oldest == kClasses || header(p.free[i].front()).freed_at < header(p.free[oldest].front()).freed_at))
        oldest = i;
    auto& list = p.free[oldest];
    void* block = list.front();
    list.erase(list.begin());
    p.cached_bytes -= class_bytes(static_cast<int>(oldest));
    return block;
  }
  static void release(void* block) {
    if (!block) return;
    const int index = header(block).index;
    const size_t size = class_bytes(index);
    std::vector<void*> evicted;
    {
      Pool& p = pool();
      std::lock_guard<std::mutex> lock(p.mutex);
      p.live_bytes -= size;
      const size_t cap = std::max(kMinCachedBytes, p.peak_live_bytes + p.peak_live_bytes / 2);  // see kMinCachedBytes
      if (size <= cap) {
        while (p.cached_bytes + size > cap) evicted.push_back(evict_oldest(p));
        header(block).freed_at = ++p.releases;
        p.free[static_cast<size_t>(index)].push_back(block);
        p.cached_bytes += size;
        block = nullptr;
      }
    }
    if (block) retire(block);
    for (void* b : evicted) retire(b);
  }
};

}  // namespace

size_t cpu_tensor_size_class(size_t bytes) {
  int index = 0;
  return size_class(bytes, &index);
}

CpuPoolStats cpu_tensor_pool_stats() { return ReusingCpuAllocator::stats(); }

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kHeapBlockLimit);
  mallopt(M_TRIM_THRESHOLD, kNeverTrim);
#endif
  static ReusingCpuAllocator allocator;
  // Above the default CPU allocator's priority (0); installing it twice is harmless.
  c10::SetCPUAllocator(&allocator, 1);
}

}  // namespace tpuperf
