#include "trainer/train/compute_threads.h"

#include <algorithm>
#include <thread>

namespace tpuperf {

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

}  // namespace tpuperf
