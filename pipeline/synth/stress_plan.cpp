#include "pipeline/synth/stress_plan.h"

#include <map>
#include <set>
#include <string>

#include "common/base/error.h"

namespace tpuperf::synth {

namespace {

// The extremes of one stress scale.
struct StressSizes {
  int64_t tile_train, tile_test, tile_configs_max;
  int chain_ops_a, chain_ops_b;  // two long element-wise chains: ~1.5 nodes per op
  int64_t remeasured_copies;
  int64_t big_nodes, big_config_nodes, big_configs;  // the 40k+-node program
  int64_t giant_configs;        // the 100,040-config file (a test file: every config predicted)
  int64_t giant_train_configs;  // nlp random's largest train file (the release's is 100,040)
  int64_t converged_configs;
  int64_t layout_train, layout_nodes_max, layout_configs_max, max_config_nodes, test_configs;
};

const StressSizes& sizes(bool small) {
  // The 40k+-node program needs more configurable nodes than the release's 3,143: the
  // generator's inference networks have ~11 nodes per configurable node.
  static const StressSizes full = {24,     6,      3000,  4000, 2500, 200, 48000, 4400, 300,
                                   100040, 100040, 20000, 7,    3000, 2000, 400,   1000};
  static const StressSizes little = {10,     5,     200,  2000, 1200, 40,  42000, 4400, 24,
                                     100040, 20000, 1500, 6,    1200, 300, 120,   100};
  return small ? little : full;
}

// Plans graphs of one collection, one random stream for the whole collection. Every draw is
// its own statement: the order of a call's argument evaluation is unspecified.
class Planner {
 public:
  Planner(const Collection& c, uint64_t seed, const StressSizes& z)
      : rng(mix_seed(seed, "stress:" + c.id())), c_(c), seed_(seed), z_(z) {}

  // A tile kernel of a model of `family` (any source). configs 0: drawn log-uniformly;
  // name empty: the model's name and a fingerprint (test: 32 hex digits).
  GraphPlan& tile(const std::string& split, std::string name, size_t family, int64_t configs,
                  const GraphShape& shape = {}) {
    const size_t nx = num_families("xla"), nn = num_families("nlp");
    family %= nx + nn;
    ModelSpec m = family < nx ? make_model("xla", family, 1000, 500, rng)
                              : make_model("nlp", family - nx, 1000, 500, rng);
    if (configs == 0) configs = draw_count(rng, 8, z_.tile_configs_max);
    if (name.empty() && split != "test") name = m.name + "_" + hex_digits(rng, 16);
    GraphPlan& g = add(split, std::move(name), m, configs, shape);
    g.est_bytes = estimate_tile_bytes(g.configs);
    return g;
  }

  // A program of this collection's source. nodes / configs 0: drawn log-uniformly.
  // inference: an inference model (a training network stops its forward pass early).
  GraphPlan& layout(const std::string& split, size_t family, int64_t nodes, int64_t max_config_nodes,
                    int64_t configs, const GraphShape& shape = {}, bool inference = false) {
    if (nodes == 0) nodes = draw_count(rng, 300, z_.layout_nodes_max);
    if (configs == 0) configs = draw_count(rng, 100, z_.layout_configs_max);
    ModelSpec m = draw_model(c_.source, family, nodes, max_config_nodes, rng, 160, inference ? 0 : -1);
    GraphPlan& g = add(split, "", m, configs, shape);
    g.target_nodes = nodes;
    g.max_config_nodes = max_config_nodes;
    g.est_bytes = estimate_layout_bytes(nodes, max_config_nodes, configs);
    return g;
  }

  std::vector<GraphPlan> plans;
  Rng rng;

 private:
  GraphPlan& add(const std::string& split, std::string name, const ModelSpec& model, int64_t configs,
                 const GraphShape& shape) {
    GraphPlan g;
    g.split = split;
    g.index = count_[split]++;
    g.model = model;
    if (name.empty()) name = split == "test" ? hex_digits(rng, 32) : model.name;
    g.name = unique_name(name, used_, rng);
    g.configs = configs;
    g.shape = shape;
    g.seed = mix_seed(seed_, graph_label("stress:" + c_.id(), split, g.index));
    plans.push_back(g);
    return plans.back();
  }

  const Collection& c_;
  uint64_t seed_;
  const StressSizes& z_;
  std::set<std::string> used_;
  std::map<std::string, int64_t> count_;
};

void plan_tile(Planner& p, const StressSizes& z) {
  GraphShape single, chain_a, chain_b, remeasured;
  single.tile_body = TileBody::SingleNode;
  chain_a.tile_body = chain_b.tile_body = TileBody::LongChain;
  chain_a.chain_ops = z.chain_ops_a;
  chain_b.chain_ops = z.chain_ops_b;
  remeasured.remeasured_only = true;
  // Train: the odd names and shapes first, then kernels of many models.
  p.tile("train", "2024.11-07", 0, 0, single);
  p.tile("train", "résnet-ü.3", 1, 0, chain_a);
  p.tile("train", "模型.v2-α", 2, 2);
  p.tile("train", "1-2-3.4.5", 3, z.remeasured_copies, remeasured);
  p.tile("train", "Δ-net.0.bf16", 4, 0, chain_b);
  for (int64_t i = 5; i < z.tile_train; ++i) p.tile("train", "", static_cast<size_t>(i), 0);
  // Valid: exactly one graph.
  p.tile("valid", "", 7, 0);
  // Test: the same shapes, one name in UTF-8.
  p.tile("test", "", 0, 0, single);
  p.tile("test", "", 1, 0, chain_b);
  p.tile("test", "テスト.1-a", 2, 2);
  p.tile("test", "", 3, z.remeasured_copies, remeasured);
  for (int64_t i = 4; i < z.tile_test; ++i) p.tile("test", "", static_cast<size_t>(i), 0);
}

void plan_layout(Planner& p, const Collection& c, const StressSizes& z) {
  const size_t families = num_families(c.source);
  const int64_t cfg = z.max_config_nodes;
  GraphShape converged, remeasured, empty;
  converged.converged = true;
  remeasured.remeasured_only = true;
  empty.no_config_nodes = true;
  const std::string id = c.id();
  if (id == "layout:xla:random") {
    p.layout("train", 0, z.big_nodes, z.big_config_nodes, z.big_configs, {}, true);
    p.layout("train", 1, 1500, cfg, z.converged_configs, converged);
    p.layout("train", 2, 0, cfg, 2);
    p.layout("train", 3, 0, cfg, 20, empty);
    for (int64_t i = 4; i < z.layout_train; ++i) p.layout("train", static_cast<size_t>(i) % families, 0, cfg, 0);
    p.layout("valid", 5, 1500, cfg, z.test_configs * 5, converged);
    p.layout("valid", 6, 0, cfg, 0);
    p.layout("test", 7, 600, 20, z.giant_configs);  // 100k configs of a small program
    p.layout("test", 8, 0, cfg, z.test_configs);
  } else if (id == "layout:xla:default") {
    // No valid split at all.
    for (int64_t i = 0; i < z.layout_train - 1; ++i)
      p.layout("train", static_cast<size_t>(i) % families, 0, cfg, 0);
    p.layout("test", 1, 0, cfg, z.test_configs);
    p.layout("test", 2, 0, cfg, z.test_configs);
  } else if (id == "layout:nlp:random") {
    // One model family only: every train name starts with the same word.
    p.layout("train", 0, 900, 40, z.giant_train_configs);
    p.layout("train", 0, 0, cfg, z.converged_configs, converged);
    p.layout("train", 0, 0, cfg, z.remeasured_copies, remeasured);
    for (int64_t i = 3; i < z.layout_train; ++i) p.layout("train", 0, 0, cfg, 0);
    p.layout("valid", 1, 0, cfg, 0);
    p.layout("valid", 2, 0, cfg, 0);
    p.layout("test", 3, 0, cfg, z.test_configs);  // a test split of exactly one graph
  } else {
    GraphShape one, one_remeasured, lonely;
    one.one_computation = true;
    one.isolated_nodes = 50;
    one_remeasured = one;
    one_remeasured.remeasured_only = true;
    lonely.isolated_nodes = 5;
    p.layout("train", 0, 0, cfg, 0, one);
    p.layout("train", 1, 0, cfg, 2, one);
    p.layout("train", 2, 0, cfg, z.remeasured_copies, one_remeasured);
    for (int64_t i = 3; i < z.layout_train; ++i)
      p.layout("train", static_cast<size_t>(i) % families, 0, cfg, 0, lonely);
    p.layout("valid", 4, 0, cfg, 0, one);
    p.layout("valid", 5, 0, cfg, 0, lonely);
    p.layout("test", 6, 0, cfg, z.test_configs, one_remeasured);
    p.layout("test", 7, 0, cfg, z.test_configs, one);
  }
}

}  // namespace

bool is_stress_scale(const std::string& scale) { return scale == "stress" || scale == "stress-small"; }

CollectionPlan plan_stress(const Collection& c, uint64_t seed, bool small) {
  const StressSizes& z = sizes(small);
  Planner p(c, seed, z);
  if (c.kind == Kind::Tile) {
    plan_tile(p, z);
  } else {
    plan_layout(p, c, z);
  }
  CollectionPlan plan;
  plan.collection = c;
  plan.graphs = std::move(p.plans);
  return plan;
}

}  // namespace tpuperf::synth
