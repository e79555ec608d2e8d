#include "pipeline/synth/plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/graph/graph.h"

namespace tpuperf::synth {

int64_t draw_count(Rng& rng, int64_t lo, int64_t hi) {
  return std::llround(rng.log_uniform(static_cast<double>(lo), static_cast<double>(hi)));
}

int64_t draw_around_median(Rng& rng, int64_t lo, int64_t median, int64_t hi) {
  const bool low_half = rng.chance(0.5);
  return low_half ? draw_count(rng, lo, median) : draw_count(rng, median, hi);
}

ModelSpec draw_model(const std::string& source, size_t family, int64_t target_nodes,
                     int64_t max_config_nodes, Rng& rng, int64_t max_layers, int training) {
  ModelSpec m = make_model(source, family, target_nodes, max_config_nodes, rng, max_layers);
  for (int i = 0; i < 50 && training >= 0 && m.training != (training == 1); ++i)
    m = make_model(source, family, target_nodes, max_config_nodes, rng, max_layers);
  return m;
}

std::string graph_label(const std::string& what, const std::string& split, int64_t index) {
  return what + "/" + split + "/" + std::to_string(index);
}

std::vector<size_t> assign_families(int64_t n, size_t families, bool train, Rng& rng) {
  std::vector<size_t> order(families);
  for (size_t i = 0; i < families; ++i) order[i] = i;
  rng.shuffle(order);
  const size_t used = std::clamp<size_t>(static_cast<size_t>(n / 2), 4, families);
  std::vector<size_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(train ? order[static_cast<size_t>(i) % used]
                        : static_cast<size_t>(rng.randint(0, static_cast<int64_t>(families) - 1)));
  return out;
}

std::vector<GraphPlan> plan_tile_kernels(const int64_t counts[3], int64_t configs_min, int64_t configs_max,
                                         const std::string& stream, uint64_t seed) {
  Rng rng(mix_seed(seed, "plan:" + stream));
  const size_t nx = num_families("xla"), nn = num_families("nlp");
  std::set<std::string> used;
  std::vector<GraphPlan> plans;
  for (size_t s = 0; s < kSplits.size(); ++s) {
    const std::string& split = kSplits[s];
    auto fams = assign_families(counts[s], nx + nn, split == "train", rng);
    for (int64_t i = 0; i < counts[s]; ++i) {
      GraphPlan g;
      g.split = split;
      g.index = i;
      size_t f = fams[static_cast<size_t>(i)];
      // The model's size only shows in its name (transformer layers).
      const int64_t size = draw_count(rng, 300, 8000);
      g.model =
          f < nx ? make_model("xla", f, size, 500, rng) : make_model("nlp", f - nx, size, 500, rng);
      // A kernel of that model: the model's name plus the kernel's fingerprint.
      g.name = unique_name(
          split == "test" ? hex_digits(rng, 32) : g.model.name + "_" + hex_digits(rng, 16), used,
          rng);
      g.configs = draw_count(rng, configs_min, configs_max);
      g.seed = mix_seed(seed, graph_label(stream, split, i));
      g.est_bytes = estimate_tile_bytes(g.configs);
      plans.push_back(g);
    }
  }
  return plans;
}

namespace {
// float32 features + uint8 opcode per node; int64 [u, v] per edge, ~1.7 edges per node.
double node_bytes(double nodes) { return nodes * (kNodeFeatDim * 4.0 + 1.0 + 1.7 * 16.0); }
}  // namespace

double estimate_tile_bytes(int64_t configs) {
  return node_bytes(37) + static_cast<double>(configs) * (kTileConfigDim * 4.0 + 16.0);
}

double estimate_layout_bytes(int64_t nodes, int64_t config_nodes, int64_t configs) {
  return node_bytes(static_cast<double>(nodes)) +
         static_cast<double>(configs) * (static_cast<double>(config_nodes) * kLayoutConfigDim * 4.0 + 8.0);
}

}  // namespace tpuperf::synth
