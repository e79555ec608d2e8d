#include "common/cli/tool_main.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/cli/cli.h"

namespace tpuperf {

namespace {

constexpr std::chrono::seconds kSilentRankWait{10};

}  // namespace

int launcher_rank() {
  // The first of these that is set wins; a value that is not a rank counts as unset, since
  // a stray variable must not silence the only process that would print.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (!value) continue;
    try {
      return parse_int<int>(name, value, 0);
    } catch (const UsageError&) {
    }
  }
  return 0;
}

int print_help_once(const HelpRequested& help) {
  if (launcher_rank() == 0) {
    std::fputs(help.text.c_str(), stdout);
    std::fflush(stdout);
  }
  return kExitOk;
}

int report_usage_error_once(const char* program, const UsageError& error) {
  if (launcher_rank() == 0) {
    std::fprintf(stderr, "%s: error: %s\n", program, error.what());
    std::fflush(stderr);
    return kExitError;
  }
  // mpirun ends a job with SIGTERM as soon as one process exits non-zero. Were a silent
  // rank to exit first, rank 0 could be killed before it says what was wrong (it starts
  // and parses no sooner than its peers), and the job would fail without a word. So the
  // silent ranks leave the exit to rank 0, whose exit ends them; the bound only matters
  // when no rank 0 makes the same mistake (e.g. mpirun with different programs).
  std::this_thread::sleep_for(kSilentRankWait);
  return kExitError;
}

int run_tool(const char* program, int argc, char** argv,
             const std::function<int(int, char**)>& body) {
  try {
    init_logging(-1, "info");
    return body(argc, argv);
  } catch (const HelpRequested& help) {
    return print_help_once(help);
  } catch (const UsageError& e) {
    return report_usage_error_once(program, e);
  } catch (const std::exception& e) {
    // One line on stderr, independent of the log level, so failures are never silent.
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return kExitError;
  }
}

}  // namespace tpuperf
