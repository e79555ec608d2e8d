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

// What an MPI tool does once MPI runs; made by the tool's parse step from its options.
using MpiBody = std::function<int(const MpiContext&)>;

// The main of an MPI tool. First parse(argc, argv) reads the command line, before
// MPI_Init: --help (HelpRequested) and a bad option (UsageError) end the process there,
// without MPI, printed only by the process whose launcher rank is 0 (tool_main.h), so
// `mpirun -np 2 TOOL --help` prints the help once and every rank exits 0, and a bad
// option prints one line and every rank exits kExitError, with no MPI_Abort and no
// "exited without calling finalize" banner.
// Then MPI_Init, rank-tagged logging, the body, MPI_Finalize. A fatal error on any rank is
// printed with its rank and ends the whole job with MPI_Abort (when size > 1), so no
// rank waits forever in a collective for a peer that has died. A CollectiveError (or a
// UsageError raised by the body) is printed once and ends the job without the abort.
//
// What no program can avoid: Open MPI 4.1's mpirun prints its own notice whenever a rank
// exits non-zero, however cleanly ("Primary job terminated normally, but 1 process
// returned a non-zero exit code..." and "mpirun detected that one or more processes
// exited with non-zero status..."), measured the same with and without MPI_Init. It
// comes from mpirun, after the ranks are gone. `mpirun -q` (--quiet, MCA parameter
// orte_execute_quiet, also OMPI_MCA_orte_execute_quiet=1) removes it and keeps the exit
// code, but also silences mpirun's notices of real failures; orte_abort_on_non_zero_status=0
// removes it too but makes mpirun 4.1.4 exit 0, so it is no remedy.
int run_mpi_tool(const char* program, int argc, char** argv,
                 const std::function<MpiBody(int, char**)>& parse);

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
