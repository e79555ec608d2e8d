#include "common/mpi/mpi_env.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/cli/cli.h"
#include "common/cli/tool_main.h"

namespace tpuperf {

namespace {

char g_term_message[512];
size_t g_term_length = 0;

// mpirun ends the surviving ranks with SIGTERM when one rank dies: each says so in one
// line (only async-signal-safe calls here) and exits with the error code.
extern "C" void on_sigterm(int) {
  const ssize_t written = ::write(STDERR_FILENO, g_term_message, g_term_length);
  (void)written;
  ::_exit(kExitError);
}

void report_termination(const char* program, int rank) {
  const int n = std::snprintf(g_term_message, sizeof g_term_message,
                              "%s: error: stopped by SIGTERM [rank %d]; under mpirun this means another "
                              "rank failed (its error or signal is reported above). Rerun to continue "
                              "(tpuperf-train: --resume).\n",
                              program, rank);
  g_term_length = n > 0 ? std::min(static_cast<size_t>(n), sizeof g_term_message - 1) : 0;
  struct sigaction sa = {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

// Once MPI_Finalize has returned this rank has nothing left to stop: a SIGTERM now is
// mpirun ending the job because a peer has already exited non-zero (it does so even
// after a clean finalize). The rank ends with its own exit code instead of a misleading
// "stopped by SIGTERM" line.
void ignore_sigterm_after_finalize() {
  struct sigaction sa = {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

// An error all ranks raise alike: said once, from rank 0; every rank then ends normally.
int end_collectively(const char* program, const MpiContext& ctx, const std::exception& e) {
  if (ctx.rank == 0) std::fprintf(stderr, "%s: error: %s\n", program, e.what());
  std::fflush(stderr);
  return kExitError;
}

// The command line, read before MPI starts. Sets body and returns nothing when the tool
// is to run; else the exit code (--help, a bad option).
std::optional<int> parse_before_mpi(const char* program, int argc, char** argv,
                                    const std::function<MpiBody(int, char**)>& parse,
                                    MpiBody& body) {
  try {
    body = parse(argc, argv);
    return std::nullopt;
  } catch (const HelpRequested& help) {
    return print_help_once(help);
  } catch (const UsageError& e) {
    return report_usage_error_once(program, e);
  } catch (const std::exception& e) {
    // Not known to be the same on every process: each says it, tagged with its rank.
    std::fprintf(stderr, "%s: error: %s [rank %d]\n", program, e.what(), launcher_rank());
    return kExitError;
  }
}

}  // namespace

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string(what) + " failed: " + std::string(msg, len));
  }
}

int mpi_rank(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

int mpi_size(MPI_Comm comm) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

void allreduce_sum(double* values, int n, MPI_Comm comm) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
}

int allreduce_max(int value, MPI_Comm comm) {
  int out = value;
  check_mpi(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  return out;
}

int run_mpi_tool(const char* program, int argc, char** argv,
                 const std::function<MpiBody(int, char**)>& parse) {
  MpiBody body;
  if (const auto exit_code = parse_before_mpi(program, argc, argv, parse, body)) return *exit_code;
  MPI_Init(&argc, &argv);
  MpiContext ctx;
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
  // Errors are reported by exceptions, never by MPI's default "abort silently" handler.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  report_termination(program, ctx.rank);
  int code = kExitOk;
  try {
    init_logging(ctx.rank, "info");
    code = body(ctx);
  } catch (const CollectiveError& e) {
    code = end_collectively(program, ctx, e);
  } catch (const UsageError& e) {
    code = end_collectively(program, ctx, e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s [rank %d]\n", program, e.what(), ctx.rank);
    std::fflush(stderr);
    if (ctx.size > 1) MPI_Abort(MPI_COMM_WORLD, kExitError);
    code = kExitError;
  }
  MPI_Finalize();
  ignore_sigterm_after_finalize();
  return code;
}

}  // namespace tpuperf
