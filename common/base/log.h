// The one logger: spdlog's default logger, set up once per process with a line format
// that carries the time, the level and the MPI rank. Code logs with spdlog::info(...) etc.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace tpuperf {

// rank < 0 means "not an MPI program" and leaves the rank out of the line.
// level is one of trace, debug, info, warn, error, critical, off.
void init_logging(int rank, const std::string& level);

// Changes the level after start-up (e.g. once the config has been read).
void set_log_level(const std::string& level);

}  // namespace tpuperf
