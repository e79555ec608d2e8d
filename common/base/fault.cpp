#include "common/base/fault.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "common/base/log.h"

namespace tpuperf {

namespace {

struct FaultSpec {
  std::string point;
  int hit = 1;
  std::string action = "kill";
};

FaultSpec parse_spec(const std::string& s) {
  FaultSpec f;
  const size_t a = s.find(':');
  f.point = s.substr(0, a);
  if (a == std::string::npos) return f;
  const size_t b = s.find(':', a + 1);
  f.hit = std::atoi(s.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1).c_str());
  if (b != std::string::npos) f.action = s.substr(b + 1);
  return f;
}

}  // namespace

void fault_point(const char* point) {
  static const char* env = std::getenv("TPUPERF_FAULT");
  static int hits = 0;
  if (!env) return;
  static const FaultSpec spec = parse_spec(env);
  if (spec.point != point || ++hits < spec.hit) return;
  if (spec.action == "hang") {
    spdlog::warn("fault injection: hanging at {} (hit {})", point, hits);
    spdlog::default_logger()->flush();
    for (;;) ::pause();
  }
  spdlog::warn("fault injection: killing this process at {} (hit {})", point, hits);
  spdlog::default_logger()->flush();
  std::raise(SIGKILL);
}

}  // namespace tpuperf
