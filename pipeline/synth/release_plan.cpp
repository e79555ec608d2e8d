#include "pipeline/synth/release_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "common/base/error.h"
#include "common/graph/graph.h"

namespace tpuperf::synth {

namespace {

struct LayoutRelease {
  int64_t random[3], fallback[3];  // graphs per split: random search, default search
  int64_t nodes_min, nodes_median, nodes_max;
};

const LayoutRelease& layout_release(const std::string& source) {
  static const LayoutRelease xla = {{69, 7, 8}, {61, 7, 8}, 372, 12000, 43615};
  static const LayoutRelease nlp = {{207, 20, 17}, {198, 20, 17}, 876, 3300, 21919};
  return source == "nlp" ? nlp : xla;
}

constexpr int64_t kTileGraphs[3] = {5709, 676, 844};
constexpr int64_t kTileConfigsMin = 8, kTileConfigsMax = 7000;
constexpr int64_t kMaxConfigNodes = 3143;
constexpr int64_t kMaxConfigs = 100040;
constexpr double kMaxFeatBytes = 9e8;  // node_config_feat of the release's largest file
constexpr int64_t kTestConfigs = 1000;
// Assumed medians and minima of layout train/valid configs (see the header).
constexpr int64_t kRandomConfigs[3] = {1000, 15000, kMaxConfigs};
constexpr int64_t kDefaultConfigs[3] = {1000, 10000, 40000};
// Nodes per configurable node of the generator's programs (convolution networks ~11,
// transformers ~8-9): the expected configurable nodes of a planned node count, which bound
// its configs (node_config_feat budget) and, with room, the builder's cap.
double nodes_per_config_node(const std::string& source) { return source == "nlp" ? 8.0 : 11.0; }
// Transformers grow by layers: enough of them for the nlp maximum.
constexpr int64_t kMaxLayers = 160;
// An inference convolution network stops at ~11 nodes per configurable node, ~31k nodes at
// 3,143 of them; larger xla programs are training steps.
constexpr int64_t kLargestInference = 28000;

std::vector<GraphPlan> plan_layout(const Collection& c, uint64_t seed) {
  const LayoutRelease& r = layout_release(c.source);
  // Both searches' graphs come from one stream: the default collection's are the first of
  // the random collection's in every split.
  Rng rng(mix_seed(seed, "release:layout:" + c.source));
  std::set<std::string> used;
  std::vector<GraphPlan> plans;
  for (size_t s = 0; s < kSplits.size(); ++s) {
    const std::string& split = kSplits[s];
    const bool test = split == "test";
    const int64_t n = std::max(r.random[s], r.fallback[s]);
    const int64_t mine = c.search == "random" ? r.random[s] : r.fallback[s];
    auto fams = assign_families(n, num_families(c.source), split == "train", rng);
    for (int64_t i = 0; i < n; ++i) {
      GraphPlan g;
      g.split = split;
      g.index = i;
      g.target_nodes = draw_around_median(rng, r.nodes_min, r.nodes_median, r.nodes_max);
      const int64_t random_configs =
          draw_around_median(rng, kRandomConfigs[0], kRandomConfigs[1], kRandomConfigs[2]);
      const int64_t default_configs =
          draw_around_median(rng, kDefaultConfigs[0], kDefaultConfigs[1], kDefaultConfigs[2]);
      int64_t configs = test ? kTestConfigs + (c.source == "nlp" && i == 0)
                             : c.search == "random" ? random_configs : default_configs;
      const double expected = std::ceil(static_cast<double>(g.target_nodes) / nodes_per_config_node(c.source));
      const int64_t config_nodes = std::clamp<int64_t>(static_cast<int64_t>(1.5 * expected), 20, kMaxConfigNodes);
      // Within the release's largest node_config_feat: fewer configs for big programs.
      const int64_t fits = static_cast<int64_t>(kMaxFeatBytes / (kLayoutConfigDim * 4.0 * expected));
      if (!test) configs = std::clamp<int64_t>(configs, 2, std::min(kMaxConfigs, fits));
      g.configs = configs;
      g.max_config_nodes = config_nodes;
      // Transformer layers hold ~1.5x the nodes models.cpp's layer count assumes; the
      // largest convolution networks reach their size within 3,143 configurable nodes only
      // with a training step's backward pass.
      const bool nlp = c.source == "nlp";
      const int64_t sizing = nlp ? g.target_nodes * 2 / 3 : g.target_nodes;
      g.model = draw_model(c.source, fams[static_cast<size_t>(i)], sizing, config_nodes, rng, kMaxLayers,
                           !nlp && g.target_nodes > kLargestInference ? 1 : -1);
      g.name = unique_name(test ? hex_digits(rng, 32) : g.model.name, used, rng);
      g.seed = mix_seed(seed, graph_label("release:layout:" + c.source, split, i));
      g.shape.converged = c.search == "random" && i % 3 == 1;
      g.est_bytes = estimate_layout_bytes(g.target_nodes, static_cast<int64_t>(expected), g.configs);
      if (i < mine) plans.push_back(g);
    }
  }
  return plans;
}

}  // namespace

CollectionPlan plan_release(const Collection& c, uint64_t seed) {
  CollectionPlan plan;
  plan.collection = c;
  plan.graphs = c.kind == Kind::Tile
                    ? plan_tile_kernels(kTileGraphs, kTileConfigsMin, kTileConfigsMax, "release:tile:xla", seed)
                    : plan_layout(c, seed);
  return plan;
}

std::vector<size_t> select_fraction(const CollectionPlan& plan, double fraction) {
  if (!(fraction > 0 && fraction <= 1))
    throw Error("--fraction must be in (0, 1], got " + std::to_string(fraction));
  std::vector<size_t> out;
  for (const auto& split : kSplits) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < plan.graphs.size(); ++i)
      if (plan.graphs[i].split == split) idx.push_back(i);
    if (idx.empty()) continue;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return plan.graphs[a].est_bytes < plan.graphs[b].est_bytes;
    });
    const size_t n = idx.size();
    const size_t m = std::clamp<size_t>(static_cast<size_t>(std::llround(static_cast<double>(n) * fraction)), 1, n);
    for (size_t j = 0; j < m; ++j)
      out.push_back(idx[static_cast<size_t>((static_cast<double>(j) + 0.5) * static_cast<double>(n) /
                                            static_cast<double>(m))]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string release_plan_listing(const std::vector<CollectionPlan>& plans,
                                 const std::vector<std::vector<size_t>>& selected) {
  std::ostringstream out;
  out << "collection\tsplit\tname\tplanned_nodes\tconfigs\test_bytes\twritten\n";
  for (size_t c = 0; c < plans.size(); ++c) {
    const std::set<size_t> chosen(selected[c].begin(), selected[c].end());
    for (size_t i = 0; i < plans[c].graphs.size(); ++i) {
      const GraphPlan& g = plans[c].graphs[i];
      out << plans[c].collection.id() << '\t' << g.split << '\t' << g.name << '\t' << g.target_nodes << '\t'
          << g.configs << '\t' << std::llround(g.est_bytes) << '\t' << (chosen.count(i) ? 1 : 0) << '\n';
    }
  }
  return out.str();
}

}  // namespace tpuperf::synth
