// Layout collections: a whole program (a convolution network for "xla", a transformer for
// "nlp"), its configurable nodes (convolution, dot, reshape) grouped by signature, and
// sampled layout configurations with simulated runtimes. The programs come from
// program_families.h, their links and base cost from layout_links.h, the search's options
// and configurations from layout_sampling.h (included: callers make the options).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "pipeline/synth/hlo.h"
#include "pipeline/synth/layout_sampling.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/rng.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

struct LayoutProgram {
  HloBuilder hlo;
  LayoutProblem problem;  // nodes, links, base cost; options come from the search
};

// Shapes of a program beyond the classic ones (plan.h GraphShape).
struct ProgramShape {
  int64_t isolated_nodes = 0;    // unused entry parameters: nodes without edges
  bool one_computation = false;  // no reduction computations: node_splits [0, n]
};

// Builds the model's program: about target_nodes nodes (at least 20 configurable nodes,
// at most max_config_nodes), computations for the reduction lambdas, then the entry.
LayoutProgram build_layout_program(const ModelSpec& model, int64_t target_nodes,
                                   int64_t max_config_nodes, Rng& rng,
                                   const ProgramShape& shape = {});

// One file: the program, num_configs configurations sampled the search's way (random:
// every group picks freely; default: a few groups depart from the default), the default
// configuration repeated several times, some configs re-measured, runtimes from the cost
// model with ~0.1% measurement noise. noise_free, when given, receives each config's runtime
// without the noise (same rounding), in the file's order; the file is the same either way.
LayoutGraph make_layout_graph(const std::string& name, const LayoutProgram& program,
                              const std::string& search, int64_t num_configs, Rng& rng,
                              std::vector<int64_t>* noise_free = nullptr);

// A file of re-measurements only: one configuration sampled the search's way, measured
// `copies` times.
LayoutGraph make_remeasured_layout_graph(const std::string& name, const LayoutProgram& program,
                                         const std::string& search, int64_t copies, Rng& rng,
                                         std::vector<int64_t>* noise_free = nullptr);

// The file without configs: the program's arrays, node_splits and node_config_ids.
LayoutGraph start_layout_graph(const std::string& name, const LayoutProgram& program);
// Appends one config's rows (nc x 18, the compiler default as all -1) to out.
void append_config_rows(const LayoutProblem& p, const std::vector<int>& choice,
                        std::vector<int8_t>& out);

}  // namespace tpuperf::synth
