#include "common/fault.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"

namespace tpuperf {

void fault_point(const char* point) {
  static const char* spec = std::getenv("TPUPERF_FAULT");
  static int hits = 0;
  if (!spec) return;
  std::string s = spec;
  std::string name = s.substr(0, s.find(':'));
  int n = s.find(':') == std::string::npos ? 1 : std::atoi(s.c_str() + s.find(':') + 1);
  if (name != point || ++hits < n) return;
  spdlog::warn("fault injection: killing this process at {} (hit {})", point, hits);
  spdlog::default_logger()->flush();
  std::raise(SIGKILL);
}

}  // namespace tpuperf
