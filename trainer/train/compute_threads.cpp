#include "trainer/train/compute_threads.h"

#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

namespace tpuperf {

namespace {

// OpenBLAS's own entry points, looked up at run time: libblas.so.3 is whatever Debian's
// alternatives point at (OpenBLAS, BLIS, the reference BLAS), so we cannot link to them.
template <typename Fn>
Fn blas_entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

int choose_threads(const Config& cfg, MPI_Comm world) {
  int64_t t = cfg.get_int("train.threads_per_rank");
  if (t > 0) return static_cast<int>(t);
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / local);
}

void set_compute_threads(int threads) {
  torch::set_num_threads(threads);
  if (auto set = blas_entry<void (*)(int)>("openblas_set_num_threads")) set(1);
}

int blas_threads() {
  auto get = blas_entry<int (*)()>("openblas_get_num_threads");
  return get ? get() : -1;
}

}  // namespace tpuperf
