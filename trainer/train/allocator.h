// How the training process's heap gives memory back to the system.
#pragma once

namespace tpuperf {

// Makes glibc's malloc keep freed memory for reuse (below 32 MiB per block) instead of
// returning it to the system. A training step frees and reallocates tensors of the same
// sizes every step; with glibc's adaptive defaults many of them came back as fresh pages,
// each paid for with a page fault and zeroing on first touch (measured: a tile step ran
// up to 15% slower, depending on the mix of sizes). The heap then stays at its high-water
// mark, which training reaches in its first steps anyway. Call before the first allocation
// worth keeping, i.e. first thing in main.
void keep_freed_memory_for_reuse();

}  // namespace tpuperf
