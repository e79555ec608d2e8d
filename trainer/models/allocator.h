// How the process's heap gives memory back to the system (training and ranking).
#pragma once

#include <cstddef>

namespace tpuperf {

// Makes glibc's malloc keep freed memory for reuse (below 32 MiB per block) instead of
// returning it to the system. A training step frees and reallocates tensors of the same
// sizes every step; with glibc's adaptive defaults many of them came back as fresh pages,
// each paid for with a page fault and zeroing on first touch (measured: a tile step ran
// up to 15% slower, depending on the mix of sizes). The heap then stays at its high-water
// mark, which training reaches in its first steps anyway. Call before the first allocation
// worth keeping, i.e. first thing in main. Ranking likewise: 1,000 tile configs with 5
// fold models took 3.6 s instead of 0.47 s with chunks of 1024 configs, 30% of it in page
// faults (perf; tests/bench/bench_rank.sh).
// It also gives LibTorch's CPU tensors a pool of their own (allocator.cpp): blocks cut from
// segments of huge pages, split to the size asked and merged with free neighbours when
// freed, so that the memory a run touches stays close to what its steps hold at once.
// The pool never gives memory back: the process keeps the most its tensors ever held at
// once, and the holes between them, for its whole life (a ranker too).
void keep_freed_memory_for_reuse();

// The pool's state in bytes (blocks with their 64-byte headers): blocks held by tensors
// now and at most at once, the memory touched (each segment from its start up to the end
// of the furthest block ever handed out: an estimate, as a block handed out counts whole
// whether its tensor wrote it all or not), and the address space mapped, in `segments`
// mappings.
struct CpuPoolStats {
  size_t live_bytes = 0, peak_live_bytes = 0, touched_bytes = 0, mapped_bytes = 0, segments = 0;
};
CpuPoolStats cpu_tensor_pool_stats();

// Walks every block of the pool and throws std::logic_error naming the first broken
// invariant (blocks that do not tile their segment, two free neighbours, a free block
// missing from its list, byte counts that disagree). For tests.
void check_cpu_tensor_pool();

}  // namespace tpuperf
