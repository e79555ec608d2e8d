// The stress scales: shapes the classic trees never have, in the real format, so that every
// stage meets them in tests. "stress" is the full set (bench_scale.sh runs it end to end);
// "stress-small" has the same shapes with smaller extremes, for ctest (test_stress.sh).
//
//   tile:xla            names without letters, with dots, dashes and non-ASCII letters
//                       (valid UTF-8); a graph of 1 node (no edge); graphs of thousands of
//                       nodes; files of 2 configs; a file of one config re-measured only;
//                       a valid split of exactly one graph; a test name in UTF-8
//   layout:xla:random   a program of 40k+ nodes and ~4000 configurable nodes; a file of
//                       2 configs; converged-search files (converged_search.h); a program
//                       without configurable nodes (preprocessing must reject it by name);
//                       a test file of 100,040 configs
//   layout:xla:default  no valid split at all (an empty valid directory)
//   layout:nlp:random   one model family only; a train file of 100,040 configs (stress-small:
//                       20,000); a file of one config re-measured only; a test split of
//                       exactly one graph
//   layout:nlp:default  programs of one computation (node_splits of length 2) with unused
//                       parameters (nodes without edges); a file of 2 configs; a test file
//                       of one config re-measured only
// Every collection keeps at least 5 usable train graphs, so that 5 folds can train.
#pragma once

#include <cstdint>

#include "pipeline/synth/plan.h"

namespace tpuperf::synth {

bool is_stress_scale(const std::string& scale);

// The graphs of one collection at scale "stress" or "stress-small".
CollectionPlan plan_stress(const Collection& c, uint64_t seed, bool small);

}  // namespace tpuperf::synth
