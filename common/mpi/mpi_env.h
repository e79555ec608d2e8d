// MPI set-up shared by the MPI tools (tpuperf-preprocess, tpuperf-train).
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "common/base/error.h"

namespace tpuperf {

struct MpiContext {
  int rank = 0;
  int size = 1;
  MPI_Comm world = MPI_COMM_WORLD;
};

// An error every rank of the job raises at the same point with the same message (e.g. a
// check of the input that all ranks make on the same data): run_mpi_tool reports it once,
// from rank 0, and every rank ends normally with kExitError, without MPI_Abort.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// MPI_Init, rank-tagged logging, the body, MPI_Finalize. A fatal error on any rank is
// printed with its rank and ends the whole job with MPI_Abort (when size > 1), so no
// rank waits forever in a collective for a peer that has died. A CollectiveError is
// printed once and ends the job without the abort.
int run_mpi_tool(const char* program, int argc, char** argv,
                 const std::function<int(const MpiContext&, int, char**)>& body);

// Typed wrappers used across stages.
void check_mpi(int rc, const char* what);
// This process's rank in comm and comm's size (checked).
int mpi_rank(MPI_Comm comm);
int mpi_size(MPI_Comm comm);
// Element-wise sum of doubles across the communicator, in place.
void allreduce_sum(double* values, int n, MPI_Comm comm);
// Exit code agreed by all ranks: the maximum.
int allreduce_max(int value, MPI_Comm comm);

}  // namespace tpuperf
