// The phase clock (common/base/phase_clock.h) and tpuperf-preprocess's table of it: nested
// phases are exclusive, totals add up, and the table lists every rank's phases in order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <thread>

#include "common/base/phase_clock.h"
#include "pipeline/preprocess/phase_table.h"

using namespace tpuperf;
using ::testing::ElementsAre;

namespace {

double wall_of(const PhaseTotals& totals, const std::string& name) {
  for (const auto& [n, t] : totals)
    if (n == name) return t.wall_s;
  return -1;
}

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void burn_cpu(double seconds) {  // this thread's CPU time, however loaded the machine
  const double end = thread_cpu() + seconds;
  volatile unsigned x = 0;
  while (thread_cpu() < end) x = x + 1;
}

}  // namespace

TEST(PhaseClock, NestedPhasesAreExclusive) {
  // Runs on its own thread: the clock is per thread, so the totals are this test's alone.
  PhaseTotals totals;
  double outer_elapsed = 0;
  std::thread([&] {
    const auto t0 = std::chrono::steady_clock::now();
    {
      ScopedPhase outer("outer");
      burn_cpu(0.05);
      {
        ScopedPhase inner("inner");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      burn_cpu(0.05);
    }
    outer_elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ScopedPhase again("inner");  // entered twice: one total
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    totals = phase_totals();  // an open phase counts up to now
  }).join();
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].first, "outer");
  EXPECT_EQ(totals[1].first, "inner");
  EXPECT_GE(totals[0].second.cpu_s, 0.1);  // both loops
  EXPECT_GE(wall_of(totals, "outer"), totals[0].second.cpu_s);
  // Without the inner phase's 0.1 s of sleep (a little slack for the clock reads).
  EXPECT_LE(wall_of(totals, "outer"), outer_elapsed - 0.1 + 1e-3);
  EXPECT_GE(wall_of(totals, "inner"), 0.15);  // both entries
  EXPECT_LT(totals[1].second.cpu_s, 0.05);  // sleeping costs no CPU
}

TEST(PhaseTable, ListsEveryRanksPhasesWithTotals) {
  std::vector<PhaseTotals> per_rank = {
      {{"inflate", {2.0, 1.5}}, {"dedup", {0.5, 0.25}}},
      {{"inflate", {1.0, 1.0}}, {kCollectives, {3.0, 0.125}}},
  };
  EXPECT_THAT(phase_table_lines(per_rank),
              ElementsAre("phase inflate: wall 2.000 1.000 s, cpu 1.500 1.000 s",
                          "phase dedup: wall 0.500 0.000 s, cpu 0.250 0.000 s",
                          "phase collectives (waiting): wall 0.000 3.000 s, cpu 0.000 0.125 s",
                          "phase total: wall 2.500 4.000 s, cpu 1.750 1.125 s"));
}
