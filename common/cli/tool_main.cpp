#include "common/cli/tool_main.h"

#include <cstdio>
#include <exception>

#include "common/base/error.h"
#include "common/base/log.h"

namespace tpuperf {

int run_tool(const char* program, int argc, char** argv,
             const std::function<int(int, char**)>& body) {
  try {
    init_logging(-1, "info");
    return body(argc, argv);
  } catch (const std::exception& e) {
    // One line on stderr, independent of the log level, so failures are never silent.
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return kExitError;
  }
}

}  // namespace tpuperf
