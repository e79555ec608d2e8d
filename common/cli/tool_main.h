// The common main() of every tpuperf binary: sets up logging, runs the tool's body and
// turns any error into one clear line and a non-zero exit code. MPI tools use
// run_mpi_tool (common/mpi/mpi_env.h) instead, which also aborts the job on a fatal error.
//
// --help and command-line mistakes (HelpRequested, UsageError from common/cli/cli.h) are
// printed by the process its launcher numbered 0 only, so `mpirun -np 2 TOOL --help`
// shows the help once and `mpirun -np 2 TOOL --bogus` the error line once.
#pragma once

#include <functional>

namespace tpuperf {

struct HelpRequested;
class UsageError;

// Exit codes shared by all tools.
constexpr int kExitOk = 0;
constexpr int kExitError = 2;     // bad usage, bad config, unreadable input, I/O failure
constexpr int kExitRejected = 3;  // finished, but some input files were rejected

int run_tool(const char* program, int argc, char** argv,
             const std::function<int(int, char**)>& body);

// This process's rank as its launcher numbered it, read from the environment (mpirun:
// OMPI_COMM_WORLD_RANK; srun and other PMIx/PMI launchers: PMIX_RANK, PMI_RANK,
// SLURM_PROCID); 0 when no launcher started it. Works before MPI_Init and in tools that
// never call it.
int launcher_rank();

// Print the help on stdout (launcher rank 0 only) and return kExitOk.
int print_help_once(const HelpRequested& help);
// Print "PROGRAM: error: MESSAGE" on stderr (launcher rank 0 only) and return kExitError;
// the other ranks return only after up to 10 s, so that rank 0 exits first (see there).
int report_usage_error_once(const char* program, const UsageError& error);

}  // namespace tpuperf
