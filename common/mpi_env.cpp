#include "common/mpi_env.h"

#include <cstdio>
#include <exception>

#include "common/error.h"
#include "common/log.h"
#include "common/tool_main.h"

namespace tpuperf {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string(what) + " failed: " + std::string(msg, len));
  }
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
                 const std::function<int(const MpiContext&, int, char**)>& body) {
  MPI_Init(&argc, &argv);
  MpiContext ctx;
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
  // Errors are reported by exceptions, never by MPI's default "abort silently" handler.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int code = kExitOk;
  try {
    init_logging(ctx.rank, "info");
    code = body(ctx, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s [rank %d]\n", program, e.what(), ctx.rank);
    std::fflush(stderr);
    if (ctx.size > 1) MPI_Abort(MPI_COMM_WORLD, kExitError);
    code = kExitError;
  }
  MPI_Finalize();
  return code;
}

}  // namespace tpuperf
