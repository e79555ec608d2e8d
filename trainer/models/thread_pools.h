// Making the process's thread pools compute with a given number of threads, for training
// and for ranking alike.
#pragma once

namespace tpuperf {

// Sets LibTorch's intra-op threads to `threads` and the BLAS's own thread pool to one
// thread. Debian's LibTorch calls an OpenBLAS whose pool starts with one thread per core
// and ignores torch::set_num_threads; on top of LibTorch's threads it oversubscribes the
// cores, and its threaded sgemm gives results that depend on its thread count. Measured on
// 2 cores, 1 rank with 2 LibTorch threads: OpenBLAS at 2 threads trained layout:xla:random
// at 466-510 configs/s, at 1 thread 915-949 (tile 21062 vs 39553-40961), and a
// --predict-only run on 2 threads reproduced the 1-thread submission only with 1 BLAS thread.
// Ranking 1,000 tile configs with 5 fold models on one LibTorch thread took 0.55-3.5 s with
// OpenBLAS's default pool on a busy machine (tests/bench/bench_rank.sh).
void set_compute_threads(int threads);

// The BLAS's thread count if it can be asked (OpenBLAS), else -1.
int blas_threads();

}  // namespace tpuperf
