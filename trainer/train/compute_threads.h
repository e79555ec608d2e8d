// How many threads each training rank computes with, and making the process's thread
// pools honour that number.
#pragma once

#include <mpi.h>

#include "common/config.h"

namespace tpuperf {

// train.threads_per_rank when > 0, else cores of the node / ranks on the node (at least 1),
// so that ranks x threads never exceeds the cores. Collective over `world`.
int choose_threads(const Config& cfg, MPI_Comm world);

// Sets LibTorch's intra-op threads to `threads` and the BLAS's own thread pool to one
// thread. Debian's LibTorch calls an OpenBLAS whose pool starts with one thread per core
// and ignores torch::set_num_threads; on top of LibTorch's threads it oversubscribes the
// cores, and its threaded sgemm gives results that depend on its thread count. Measured on
// 2 cores, 1 rank with 2 LibTorch threads: OpenBLAS at 2 threads trained layout:xla:random
// at 466-510 configs/s, at 1 thread 915-949 (tile 21062 vs 39553-40961), and a
// --predict-only run on 2 threads reproduced the 1-thread submission only with 1 BLAS thread.
void set_compute_threads(int threads);

// The BLAS's thread count if it can be asked (OpenBLAS), else -1.
int blas_threads();

}  // namespace tpuperf
