#include "pipeline/synth/classic_plan.h"

#include <algorithm>
#include <set>

#include "common/base/error.h"
#include "common/graph/graph.h"

namespace tpuperf::synth {

namespace {

// Sets the per-collection graph counts; the rest are set by the caller.
void set_counts(ScaleParams& p, std::vector<int64_t> tile, std::vector<int64_t> layout) {
  for (size_t s = 0; s < 3; ++s) {
    p.tile_graphs[s] = tile[s];
    p.layout_graphs[s] = layout[s];
  }
}

std::vector<GraphPlan> plan_layout(const ScaleParams& sp, const Collection& c, uint64_t seed) {
  const std::string& source = c.source;
  Rng rng(mix_seed(seed, "plan:layout:" + source));
  std::set<std::string> used;
  std::vector<GraphPlan> plans;
  const bool nlp = source == "nlp";
  for (size_t s = 0; s < kSplits.size(); ++s) {
    const std::string& split = kSplits[s];
    const bool test = split == "test";
    auto fams = assign_families(sp.layout_graphs[s], num_families(source), split == "train", rng);
    for (int64_t i = 0; i < sp.layout_graphs[s]; ++i) {
      GraphPlan g;
      g.split = split;
      g.index = i;
      g.target_nodes = draw_count(rng, nlp ? sp.nlp_nodes_min : sp.xla_nodes_min,
                                  nlp ? sp.nlp_nodes_max : sp.xla_nodes_max);
      // Both searches' counts are drawn for every graph, so that the two collections of a
      // source share names and programs.
      const int64_t random_configs =
          test ? sp.test_configs
          : (nlp && split == "train" && i == 0 && sp.giant_configs > 0)
              ? sp.giant_configs
              : draw_count(rng, sp.random_configs_min, sp.random_configs_max);
      const int64_t default_configs =
          test ? sp.test_configs : draw_count(rng, sp.default_configs_min, sp.default_configs_max);
      const double per_node = static_cast<double>(std::max(random_configs, default_configs)) *
                              kLayoutConfigDim * 4.0;
      // The giant file may hold ~0.9 GB of node_config_feat, like the release's largest.
      const double budget = random_configs == sp.giant_configs ? std::max(sp.max_feat_bytes, 9e8)
                                                               : sp.max_feat_bytes;
      g.max_config_nodes =
          std::clamp<int64_t>(static_cast<int64_t>(budget / per_node), 30, sp.max_config_nodes);
      g.model =
          make_model(source, fams[static_cast<size_t>(i)], g.target_nodes, g.max_config_nodes, rng);
      g.name = unique_name(test ? hex_digits(rng, 32) : g.model.name, used, rng);
      g.seed = mix_seed(seed, graph_label("layout:" + source, split, i));
      g.configs = c.search == "random" ? random_configs : default_configs;
      g.shape.converged = c.search == "random" && i == sp.converged_index;
      g.est_bytes = estimate_layout_bytes(g.target_nodes, g.max_config_nodes, g.configs);
      plans.push_back(g);
    }
  }
  return plans;
}

}  // namespace

bool is_classic_scale(const std::string& scale) {
  return scale == "tiny" || scale == "small" || scale == "bench";
}

ScaleParams scale_params(const std::string& scale) {
  ScaleParams p;
  if (scale == "tiny") {  // tests: the whole tree in a second or two
    set_counts(p, {16, 4, 4}, {6, 2, 2});
    p.tile_configs_min = 10, p.tile_configs_max = 30;
    p.xla_nodes_min = 100, p.xla_nodes_max = 300, p.nlp_nodes_min = 150, p.nlp_nodes_max = 350;
    p.random_configs_min = 40, p.random_configs_max = 100;
    p.default_configs_min = 30, p.default_configs_max = 80;
    p.test_configs = 50, p.max_config_nodes = 60, p.max_feat_bytes = 1e7;
  } else if (scale == "small") {  // the demo: under a minute to write, minutes to train
    set_counts(p, {150, 30, 30}, {20, 5, 5});
    p.tile_configs_min = 50, p.tile_configs_max = 300;
    p.xla_nodes_min = 300, p.xla_nodes_max = 1500, p.nlp_nodes_min = 300, p.nlp_nodes_max = 2000;
    p.random_configs_min = 200, p.random_configs_max = 2000;
    p.default_configs_min = 100, p.default_configs_max = 1000;
    p.test_configs = 200, p.max_config_nodes = 300, p.max_feat_bytes = 1e8;
  } else if (scale == "bench") {  // the release's sizes, few graphs: benchmarks
    set_counts(p, {300, 30, 30}, {8, 2, 2});
    p.tile_configs_min = 500, p.tile_configs_max = 7000;
    p.xla_nodes_min = 2000, p.xla_nodes_max = 10000, p.nlp_nodes_min = 1000, p.nlp_nodes_max = 8000;
    p.random_configs_min = 10000, p.random_configs_max = 40000;
    p.default_configs_min = 10000, p.default_configs_max = 20000;
    p.test_configs = 1000, p.max_config_nodes = 500, p.max_feat_bytes = 3e8;
    p.giant_configs = 100040;
    // One random-search graph per split measured the way real tuners converge (issue 20).
    p.converged_index = 1;
  } else {
    throw Error("unknown scale '" + scale +
                "' (expected tiny, small, bench, release, stress or stress-small)");
  }
  return p;
}

CollectionPlan plan_classic(const ScaleParams& sp, const Collection& c, uint64_t seed) {
  CollectionPlan plan;
  plan.collection = c;
  plan.graphs = c.kind == Kind::Tile
                    ? plan_tile_kernels(sp.tile_graphs, sp.tile_configs_min, sp.tile_configs_max, "tile:xla", seed)
                    : plan_layout(sp, c, seed);
  return plan;
}

}  // namespace tpuperf::synth
