// The common main() of every tpuperf binary: sets up logging, runs the tool's body and
// turns any error into one clear line and a non-zero exit code. MPI tools use
// run_mpi_tool (common/mpi/mpi_env.h) instead, which also aborts the job on a fatal error.
#pragma once

#include <functional>

namespace tpuperf {

// Exit codes shared by all tools.
constexpr int kExitOk = 0;
constexpr int kExitError = 2;     // bad usage, bad config, unreadable input, I/O failure
constexpr int kExitRejected = 3;  // finished, but some input files were rejected

int run_tool(const char* program, int argc, char** argv,
             const std::function<int(int, char**)>& body);

}  // namespace tpuperf
