#include "common/base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/base/error.h"

namespace tpuperf {

static spdlog::level::level_enum parse_level(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (lvl == spdlog::level::off && level != "off")
    throw Error("unknown log level '" + level +
                "' (expected trace, debug, info, warn, error, critical or off)");
  return lvl;
}

void init_logging(int rank, const std::string& level) {
  // Logs go to stderr so that tools can print machine-readable output on stdout.
  auto logger = spdlog::stderr_color_mt("tpuperf");
  std::string tag = rank >= 0 ? " [rank " + std::to_string(rank) + "]" : "";
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$]" + tag + " %v");
  logger->set_level(parse_level(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void set_log_level(const std::string& level) { spdlog::set_level(parse_level(level)); }

}  // namespace tpuperf
