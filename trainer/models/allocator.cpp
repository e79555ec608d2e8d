#include "trainer/models/allocator.h"

#include <c10/core/CPUAllocator.h>
#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpuperf {

namespace {

// glibc's allocations (all but tensors) up to this size come from its heap, not from mmap:
// its largest mmap threshold (32 MiB on 64-bit). A fixed value also turns off glibc's threshold adaptation.
constexpr int kHeapBlockLimit = 32 * 1024 * 1024;
// The top of the heap is never given back (-1: no trim threshold).
constexpr int kNeverTrim = -1;

// LibTorch's alignment of CPU tensor data; a block's header takes one such unit, and
// blocks are whole units.
constexpr size_t kUnit = 64;
// Tensor memory lies on transparent huge pages where the system allows them (madvise mode,
// Debian's default): touching fresh memory costs one fault per 2 MiB instead of one per
// 4 KiB. On this project's virtual machines a 4 KiB fault costs 13-18 us (64 MiB touched
// page by page: 220-290 ms; on huge pages 4-5 ms once the kernel has them free), and the
// first epoch of a tile default run, which fills the pool (~40k faults), took 2.3x a
// later one (2026-11-29, docs/experiments E35).
constexpr size_t kHugePage = size_t{2} << 20;
// Memory is mapped in segments of at least this much address space (a larger request
// gets a segment of its own size); blocks are cut from a segment's start onwards, and
// the untouched rest costs no memory (address space only; a system in strict overcommit
// mode counts it). One large segment leaves no unused tails between segments: with
// 64 MiB segments the layout default spread its peak of 123 MB live over 3 segments
// (201 MB), with one segment it touched 136 MB (2026-12-07, docs/experiments E49).
constexpr size_t kSegmentBytes = size_t{1} << 30;
// A free block is split when the rest would be at least this large; a smaller rest stays
// with the tensor.
constexpr size_t kMinSplit = 4 * kUnit;

// Free lists by block size, in units: one per size below 32 units (2 KiB), then 16 per
// power of two (sizes in a list differ by less than 1/16), for blocks below 2^48 bytes.
// Larger requests than kMaxRequest throw std::bad_alloc (no system maps that much).
constexpr int kSubBits = 4, kSub = 1 << kSubBits;
constexpr int kClasses = kSub + (47 - 6 - kSubBits + 1) * kSub;
constexpr int kWords = (kClasses + 63) / 64;
constexpr size_t kMaxRequest = size_t{1} << 46;

// The list a free block of `units` is kept in (its size rounded down to a list's least).
int list_of(size_t units) {
  if (units < kSub) return static_cast<int>(units);
  const int top = 63 - __builtin_clzll(units);
  return kSub + (top - kSubBits) * kSub + static_cast<int>(units >> (top - kSubBits)) - kSub;
}

// The first list all of whose blocks hold `units`.
int list_holding(size_t units) {
  if (units < kSub) return static_cast<int>(units);
  const size_t step = size_t{1} << (63 - __builtin_clzll(units) - kSubBits);
  return list_of((units + step - 1) / step * step);
}

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

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

// A block's header, the unit before its tensor's data. Blocks of a segment lie end to
// end: the next one starts `bytes` after this one; `before` is the one ending where this
// starts (null for a segment's first).
struct Block {
  size_t bytes;  // header included
  Block* before;
  Block* next_free;  // the block's free list, while it is free
  Block* prev_free;
  uint32_t segment;  // its index in Pool::segments_
  bool free;
  bool last;  // in its segment
};
static_assert(sizeof(Block) <= kUnit, "the header fits in front of the data");

Block* after(Block* b) { return reinterpret_cast<Block*>(reinterpret_cast<char*>(b) + b->bytes); }

// The pool of LibTorch's CPU tensors: blocks cut from segments of huge pages, found in
// free lists by size (a two-level segregated fit), split when larger than asked and
// merged with free neighbours when freed, so that a freed block serves a tensor of any
// size. A training step frees and allocates tensors of a few hundred sizes that change
// with every batch's graphs. Through glibc's malloc (posix_memalign) the holes they left
// were not reused and the heap grew by ~4 MB a step without bound (8 GB a rank after the
// demo's 4 layout collections, 0.3 GB live, heaptrack). Free lists of fixed size classes
// (sizes rounded up by up to 25%, no splitting or merging) held 124 MB for the tile
// default's peak of 43 MB live (260 MB for the layout default's 135 MB), and every byte
// held was touched fresh in the first epoch, where page zeroing took up to a fifth of a
// 3-epoch tile run on this project's VMs (perf, 2026-12-07, docs/experiments E49).
// Memory is never given back: what the pool touches is what the steps held at their peak
// plus the holes between, as glibc's heap keeps its high-water mark (allocator.h).
class Pool {
 public:
  void* allocate(size_t n) {
    if (n > kMaxRequest) throw std::bad_alloc();
    const size_t bytes = round_up(n, kUnit) + kUnit;
    std::lock_guard<std::mutex> lock(mutex_);
    Block* b = find(bytes);
    if (b)
      unlist(b);
    else
      b = new_segment(bytes);
    split(b, bytes);
    b->free = false;
    live_ += b->bytes;
    peak_live_ = std::max(peak_live_, live_);
    Segment& seg = segments_[b->segment];
    const size_t end = static_cast<size_t>(reinterpret_cast<char*>(after(b)) - static_cast<char*>(seg.base));
    if (end > seg.touched) touched_ += end - seg.touched, seg.touched = end;
    return reinterpret_cast<char*>(b) + kUnit;
  }

  void release(void* data) {
    Block* b = reinterpret_cast<Block*>(static_cast<char*>(data) - kUnit);
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= b->bytes;
    b->free = true;
    if (!b->last && after(b)->free) {
      Block* next = after(b);
      unlist(next);
      merge(b, next);
    }
    if (b->before && b->before->free) {
      Block* prev = b->before;
      unlist(prev);
      merge(prev, b);
      b = prev;
    }
    enlist(b);
  }

  CpuPoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {live_, peak_live_, touched_, mapped_, segments_.size()};
  }

  void check() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t live = 0, mapped = 0, touched = 0, free_blocks = 0;
    for (size_t i = 0; i < segments_.size(); ++i) {
      const Segment& seg = segments_[i];
      mapped += seg.bytes;
      touched += seg.touched;
      size_t walked = 0;
      Block* prev = nullptr;
      for (Block* b = static_cast<Block*>(seg.base);; b = after(b)) {
        if (b->before != prev) fail("a block's 'before' is not the block ending where it starts");
        if (b->bytes % kUnit || b->bytes < kUnit) fail("a block's size is not a positive number of units");
        if (b->segment != i) fail("a block names another segment");
        if (prev && prev->free && b->free) fail("two free blocks lie side by side");
        walked += b->bytes;
        if (b->free)
          ++free_blocks;
        else
          live += b->bytes;
        if (!b->free && walked > seg.touched) fail("a live block lies past its segment's touched bytes");
        prev = b;
        if (b->last || walked >= seg.bytes) break;
      }
      if (walked != seg.bytes || !prev->last) fail("a segment's blocks do not cover it exactly");
    }
    size_t listed = 0;
    for (int i = 0; i < kClasses; ++i) {
      const bool marked = (nonempty_[static_cast<size_t>(i / 64)] >> (i % 64)) & 1;
      Block* const head = heads_[static_cast<size_t>(i)];
      if (marked != (head != nullptr)) fail("a list's bit does not say whether it is empty");
      if (head && head->prev_free) fail("a list's first block has a block before it");
      for (Block* b = head; b; b = b->next_free) {
        if (listed == free_blocks) fail("the free lists hold more blocks than are free (or a cycle)");
        if (!b->free || list_of(b->bytes / kUnit) != i) fail("a listed block is not free or in the wrong list");
        if (b->next_free && b->next_free->prev_free != b) fail("a free list's links disagree");
        ++listed;
      }
    }
    if (listed != free_blocks) fail("the free lists do not hold every free block once");
    if (live != live_ || mapped != mapped_ || touched != touched_) fail("the byte counts disagree with the blocks");
  }

 private:
  struct Segment {
    void* base;
    size_t bytes;
    size_t touched;  // bytes from its start up to the end of the furthest block ever handed out
  };

  [[noreturn]] static void fail(const std::string& what) { throw std::logic_error("tensor pool: " + what); }

  // A free block of at least `bytes`: the newest in the list of its size if it fits,
  // else the newest in the first non-empty list whose blocks all fit.
  Block* find(size_t bytes) {
    const size_t units = bytes / kUnit;
    if (Block* b = heads_[static_cast<size_t>(list_of(units))]; b && b->bytes >= bytes) return b;
    const int i = first_nonempty(list_holding(units));
    return i < 0 ? nullptr : heads_[static_cast<size_t>(i)];
  }
  int first_nonempty(int from) const {
    if (from >= kClasses) return -1;
    size_t w = static_cast<size_t>(from / 64);
    uint64_t bits = nonempty_[w] & (~uint64_t{0} << (from % 64));
    while (!bits) {
      if (++w == kWords) return -1;
      bits = nonempty_[w];
    }
    return static_cast<int>(w * 64) + __builtin_ctzll(bits);
  }
  void enlist(Block* b) {
    const auto i = static_cast<size_t>(list_of(b->bytes / kUnit));
    b->prev_free = nullptr;
    b->next_free = heads_[i];
    if (heads_[i]) heads_[i]->prev_free = b;
    heads_[i] = b;
    nonempty_[i / 64] |= uint64_t{1} << (i % 64);
  }
  void unlist(Block* b) {
    const auto i = static_cast<size_t>(list_of(b->bytes / kUnit));
    if (b->prev_free)
      b->prev_free->next_free = b->next_free;
    else
      heads_[i] = b->next_free;
    if (b->next_free) b->next_free->prev_free = b->prev_free;
    if (!heads_[i]) nonempty_[i / 64] &= ~(uint64_t{1} << (i % 64));
  }
  // Joins `next`, the block after `b`, to `b`; neither is listed.
  void merge(Block* b, Block* next) {
    b->bytes += next->bytes;
    b->last = next->last;
    if (!b->last) after(b)->before = b;
  }
  // Cuts `b` (not listed) down to `bytes` when the rest is worth a block; the rest is free.
  void split(Block* b, size_t bytes) {
    if (b->bytes - bytes < kMinSplit) return;
    Block* rest = reinterpret_cast<Block*>(reinterpret_cast<char*>(b) + bytes);
    rest->bytes = b->bytes - bytes;
    rest->before = b;
    rest->segment = b->segment;
    rest->free = true;
    rest->last = b->last;
    if (!rest->last) after(rest)->before = rest;
    b->bytes = bytes;
    b->last = false;
    enlist(rest);
  }
  // A new segment as one free block (not listed) of at least `bytes`.
  Block* new_segment(size_t bytes) {
    const size_t size = std::max(kSegmentBytes, round_up(bytes, kHugePage));
    Block* b = static_cast<Block*>(map_huge(size));
    b->bytes = size;
    b->before = nullptr;
    b->segment = static_cast<uint32_t>(segments_.size());
    b->free = true;
    b->last = true;
    segments_.push_back({b, size, 0});
    mapped_ += size;
    return b;
  }

  std::mutex mutex_;
  std::array<Block*, kClasses> heads_{};
  std::array<uint64_t, kWords> nonempty_{};
  std::vector<Segment> segments_;
  size_t live_ = 0, peak_live_ = 0, touched_ = 0, mapped_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: tensors may be freed during exit
  return *p;
}

void release(void* data) {
  if (data) pool().release(data);
}

class PoolAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    void* data = pool().allocate(n);
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};

}  // namespace

CpuPoolStats cpu_tensor_pool_stats() { return pool().stats(); }

void check_cpu_tensor_pool() { pool().check(); }

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kHeapBlockLimit);
  mallopt(M_TRIM_THRESHOLD, kNeverTrim);
#endif
  static PoolAllocator* allocator = new PoolAllocator;  // never destroyed, as the pool
  // Above the default CPU allocator's priority (0); installing it twice is harmless.
  c10::SetCPUAllocator(allocator, 1);
}

}  // namespace tpuperf
