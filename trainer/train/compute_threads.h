// How many threads each training rank computes with.
#pragma once

#include <mpi.h>

#include "common/config/config.h"
#include "trainer/models/thread_pools.h"

namespace tpuperf {

// train.threads_per_rank when > 0, else cores of the node / ranks on the node (at least 1),
// so that ranks x threads never exceeds the cores. Collective over `world`.
int choose_threads(const Config& cfg, MPI_Comm world);

// set_compute_threads, blas_threads: trainer/models/thread_pools.h.

}  // namespace tpuperf
