// Helpers of the GoogleTest binaries that run under mpirun (tests/**/test_*_mpi.cpp).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

namespace tpuperf {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// The body of an MPI test binary's main: every rank runs every test and prints its own
// report (interleaved), so a failure on any rank is visible; the job fails when any rank
// failed.
inline int run_mpi_tests(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace tpuperf
