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
// It also gives LibTorch's CPU tensors free lists per size class (sizes rounded up by at
// most 25%): without them the heap of a training rank grew by megabytes a step, holes of
// freed tensors left unused. Their memory is mapped on transparent huge pages where the
// system allows (one page fault per 2 MiB, not per 4 KiB: the first epoch of a tile run
// ran 2.3x slower than the next, filling the pool with 4 KiB faults; allocator.cpp).
void keep_freed_memory_for_reuse();

// The bytes a CPU tensor of `bytes` takes from the pool: its size class.
size_t cpu_tensor_size_class(size_t bytes);

// The pool's state, in bytes of size classes: blocks held by tensors, free blocks kept,
// the most ever held at once, and how many blocks were created (address space taken from
// the system; a block whose memory went back and serves its class again is not new).
struct CpuPoolStats {
  size_t live_bytes = 0, cached_bytes = 0, peak_live_bytes = 0, blocks_created = 0;
};
CpuPoolStats cpu_tensor_pool_stats();

}  // namespace tpuperf
