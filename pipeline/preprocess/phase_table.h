// The per-rank phase table that tpuperf-preprocess logs at the end of a run: where each
// rank's time went (common/base/phase_clock.h), so that a slow run names its slow phase.
// tests/bench/bench_preprocess.sh reads it into RESULTS.md.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "common/base/phase_clock.h"

namespace tpuperf {

// Time spent in MPI collectives, most of it waiting for the other ranks.
constexpr const char* kCollectives = "collectives (waiting)";

using PhaseTotals = std::vector<std::pair<std::string, PhaseTime>>;

// "phase <name>: wall <rank 0> <rank 1> ... s, cpu <rank 0> <rank 1> ... s" lines, one per
// phase (in order of first appearance over the ranks; 0 where a rank never entered it),
// then the same for "total".
std::vector<std::string> phase_table_lines(const std::vector<PhaseTotals>& per_rank);

// Collective: gathers every rank's phase_totals() and logs the table on rank 0 (info).
void log_phase_table(int rank, MPI_Comm comm);

}  // namespace tpuperf
