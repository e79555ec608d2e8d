// The layout choices of a search: the options each node group can take (make_layout_options)
// and configurations drawn from them (sample_choice).
#pragma once

#include <string>
#include <vector>

#include "pipeline/synth/rng.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

// The layout choices each node group can take under a search ("random": arbitrary
// permutations; "default": small departures from the compiler's choice). Option 0 is
// the compiler default.
void make_layout_options(LayoutProblem& problem, const std::string& search, Rng& rng);

// One configuration the search's way: random, every group picks freely (keeping the
// default with a per-config probability); default, a few groups depart from the default.
std::vector<int> sample_choice(const LayoutProblem& p, const std::string& search, Rng& rng);

}  // namespace tpuperf::synth
