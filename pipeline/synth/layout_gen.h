// Layout collections: a whole program (a convolution network for "xla", a transformer for
// "nlp"), its configurable nodes (convolution, dot, reshape) grouped by signature, and
// sampled layout configurations with simulated runtimes.
#pragma once

#include <cstdint>
#include <string>

#include "common/graph.h"
#include "pipeline/synth/hlo.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/rng.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

struct LayoutProgram {
  HloBuilder hlo;
  LayoutProblem problem;  // nodes, links, base cost; options come from the search
};

// Builds the model's program: about target_nodes nodes (at least 20 configurable nodes,
// at most max_config_nodes), computations for the reduction lambdas, then the entry.
LayoutProgram build_layout_program(const ModelSpec& model, int64_t target_nodes,
                                   int64_t max_config_nodes, Rng& rng);

// The layout choices each node group can take under a search ("random": arbitrary
// permutations; "default": small departures from the compiler's choice). Option 0 is
// the compiler default.
void make_layout_options(LayoutProblem& problem, const std::string& search, Rng& rng);

// One file: the program, num_configs configurations sampled the search's way (random:
// every group picks freely; default: a few groups depart from the default), the default
// configuration repeated several times, some configs re-measured, runtimes from the cost
// model with ~0.1% measurement noise.
LayoutGraph make_layout_graph(const std::string& name, const LayoutProgram& program,
                              const std::string& search, int64_t num_configs, Rng& rng);

}  // namespace tpuperf::synth
