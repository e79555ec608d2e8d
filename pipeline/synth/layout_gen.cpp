#include "pipeline/synth/layout_gen.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "pipeline/synth/layout_links.h"
#include "pipeline/synth/program_builder.h"
#include "pipeline/synth/program_families.h"
#include "pipeline/synth/tile_gen.h"

namespace tpuperf::synth {

void append_config_rows(const LayoutProblem& p, const std::vector<int>& choice,
                        std::vector<int8_t>& out) {
  for (const auto& n : p.nodes) {
    const LayoutChoice& c = p.options[static_cast<size_t>(n.group)]
                                     [static_cast<size_t>(choice[static_cast<size_t>(n.group)])];
    for (int s = 0; s < 3; ++s)
      for (size_t k = 0; k < 6; ++k)
        out.push_back(!c.is_default && k < c.perm[s].size() ? static_cast<int8_t>(c.perm[s][k])
                                                            : int8_t{-1});
  }
}

LayoutGraph start_layout_graph(const std::string& name, const LayoutProgram& program) {
  LayoutGraph g;
  g.name = name;
  program.hlo.fill(g);
  g.node_splits = program.hlo.splits();
  for (const auto& n : program.problem.nodes) g.node_config_ids.push_back(n.node_id);
  return g;
}

LayoutProgram build_layout_program(const ModelSpec& model, int64_t target_nodes,
                                   int64_t max_config_nodes, Rng& rng, const ProgramShape& shape) {
  LayoutProgram prog;
  Net net(model, max_config_nodes, shape);
  if (model.arch == Arch::Transformer) {
    build_transformer(net, model);
  } else {
    build_convnet(net, model, target_nodes, rng);
  }
  add_links(net.h, net.prob);
  net.prob.base_ns = base_cost_ns(net.h, net.prob);
  prog.hlo = std::move(net.h);
  prog.problem = std::move(net.prob);
  return prog;
}

namespace {

// Appends the configs' rows and their measured runtimes (~0.1% measurement noise), and
// to noise_free (when given) the runtimes without the noise.
void measure_choices(const LayoutProblem& p, const std::vector<std::vector<int>>& choices,
                     LayoutGraph& g, Rng& rng, std::vector<int64_t>* noise_free) {
  LayoutCostModel model(p);
  g.node_config_feat.reserve(choices.size() * p.nodes.size() * kLayoutConfigDim);
  for (const auto& c : choices) {
    append_config_rows(p, c, g.node_config_feat);
    const double exact = model.runtime_ns(c);
    g.config_runtime.push_back(stored_runtime_ns(exact * (1.0 + measurement_noise(rng))));
    if (noise_free) noise_free->push_back(stored_runtime_ns(exact));
  }
}

}  // namespace

LayoutGraph make_layout_graph(const std::string& name, const LayoutProgram& program,
                              const std::string& search, int64_t num_configs, Rng& rng,
                              std::vector<int64_t>* noise_free) {
  LayoutGraph g = start_layout_graph(name, program);
  const LayoutProblem& p = program.problem;

  // The default configuration measured many times, some others re-measured.
  const int64_t defaults = std::max<int64_t>(
      2, std::llround(static_cast<double>(num_configs) * rng.uniform(0.01, 0.04)));
  const int64_t remeasured =
      std::llround(static_cast<double>(num_configs) * rng.uniform(0.01, 0.05));
  const int64_t fresh = std::max<int64_t>(1, num_configs - defaults - remeasured);
  std::vector<std::vector<int>> choices;
  for (int64_t i = 0; i < fresh; ++i) choices.push_back(sample_choice(p, search, rng));
  for (int64_t i = 0; i < defaults; ++i) choices.emplace_back(p.options.size(), 0);
  for (int64_t i = 0; static_cast<int64_t>(choices.size()) < num_configs; ++i)
    choices.push_back(choices[static_cast<size_t>(rng.randint(0, fresh - 1))]);
  choices.resize(static_cast<size_t>(num_configs));
  rng.shuffle(choices);
  measure_choices(p, choices, g, rng, noise_free);
  return g;
}

LayoutGraph make_remeasured_layout_graph(const std::string& name, const LayoutProgram& program,
                                         const std::string& search, int64_t copies, Rng& rng,
                                         std::vector<int64_t>* noise_free) {
  LayoutGraph g = start_layout_graph(name, program);
  const std::vector<int> one = sample_choice(program.problem, search, rng);
  measure_choices(program.problem,
                  std::vector<std::vector<int>>(static_cast<size_t>(std::max<int64_t>(1, copies)), one),
                  g, rng, noise_free);
  return g;
}

}  // namespace tpuperf::synth
