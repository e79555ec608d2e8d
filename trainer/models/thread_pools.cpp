#include "trainer/models/thread_pools.h"

#include <dlfcn.h>
#include <torch/torch.h>

namespace tpuperf {

namespace {

// OpenBLAS's own entry points, looked up at run time: libblas.so.3 is whatever Debian's
// alternatives point at (OpenBLAS, BLIS, the reference BLAS), so we cannot link to them.
template <typename Fn>
Fn blas_entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void set_compute_threads(int threads) {
  torch::set_num_threads(threads);
  if (auto set = blas_entry<void (*)(int)>("openblas_set_num_threads")) set(1);
}

int blas_threads() {
  auto get = blas_entry<int (*)()>("openblas_get_num_threads");
  return get ? get() : -1;
}

}  // namespace tpuperf
