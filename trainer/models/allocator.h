// How the process's heap gives memory back to the system (training and ranking).
#pragma once

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
void keep_freed_memory_for_reuse();

}  // namespace tpuperf
