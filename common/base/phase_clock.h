// Wall and CPU time per named phase of a thread's work, summed over its life: where a long run
// spends its time, cheap enough to stay on (two clock reads per phase entered, no lock).
// Phases nest and are exclusive: while an inner phase runs, the outer one is paused, so
// the totals add up to the time spent inside phases. tpuperf-preprocess prints its
// totals per rank at the end (pipeline/preprocess/driver.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpuperf {

struct PhaseTime {
  double wall_s = 0;
  double cpu_s = 0;  // this thread's user + system time
};

// Charges the time from construction to destruction, less that of phases entered
// meanwhile, to `phase` (a string literal: kept by pointer, compared by content).
class ScopedPhase {
 public:
  explicit ScopedPhase(const char* phase);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  const char* outer_;
};

// This thread's time per phase, in the order the phases were first entered.
std::vector<std::pair<std::string, PhaseTime>> phase_totals();

}  // namespace tpuperf
