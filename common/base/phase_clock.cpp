#include "common/base/phase_clock.h"

#include <time.h>

#include <chrono>
#include <cstring>

namespace tpuperf {

namespace {

using Clock = std::chrono::steady_clock;

// This thread's CPU time: on a shared machine, what a phase costs apart from waiting for
// a core (one system call, about a microsecond; phases switch a few times per file and
// per written chunk).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct ThreadPhases {
  std::vector<std::pair<const char*, PhaseTime>> totals;
  const char* current = nullptr;  // the innermost open phase
  Clock::time_point since;        // when `current` last started or resumed
  double cpu_since = 0;

  // Charges the time since the last switch to the current phase, then switches to next.
  void switch_to(const char* next) {
    const Clock::time_point now = Clock::now();
    const double cpu = thread_cpu_seconds();
    if (current) {
      PhaseTime& t = slot(current);
      t.wall_s += std::chrono::duration<double>(now - since).count();
      t.cpu_s += cpu - cpu_since;
    }
    current = next;
    since = now;
    cpu_since = cpu;
  }

  PhaseTime& slot(const char* phase) {
    for (auto& [name, t] : totals)
      if (name == phase || std::strcmp(name, phase) == 0) return t;
    totals.emplace_back(phase, PhaseTime{});
    return totals.back().second;
  }
};

thread_local ThreadPhases t_phases;

}  // namespace

ScopedPhase::ScopedPhase(const char* phase) : outer_(t_phases.current) {
  t_phases.slot(phase);  // listed from its first entry, even if it takes no time
  t_phases.switch_to(phase);
}

ScopedPhase::~ScopedPhase() { t_phases.switch_to(outer_); }

std::vector<std::pair<std::string, PhaseTime>> phase_totals() {
  t_phases.switch_to(t_phases.current);  // open phases count up to now
  std::vector<std::pair<std::string, PhaseTime>> out;
  for (const auto& [name, t] : t_phases.totals) out.emplace_back(name, t);
  return out;
}

}  // namespace tpuperf
