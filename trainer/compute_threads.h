// How many threads each training rank computes with, and making every thread pool of the
// process honour that number.
#pragma once

#include <mpi.h>

#include "common/config.h"

namespace tpuperf {

// train.threads_per_rank when > 0, else cores of the node / ranks on the node (at least 1),
// so that ranks x threads never exceeds the cores. Collective over `world`.
int choose_threads(const Config& cfg, MPI_Comm world);

// Sets LibTorch's intra-op threads and the BLAS's own thread pool to `threads`. Debian's
// LibTorch calls an OpenBLAS whose pool starts with one thread per core and ignores
// torch::set_num_threads: two ranks on two cores would run four BLAS threads that spin
// (sched_yield) waiting for work.
void set_compute_threads(int threads);

// The BLAS's thread count if it can be asked (OpenBLAS), else -1.
int blas_threads();

}  // namespace tpuperf
