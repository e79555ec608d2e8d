// The plan of a generated tree: every graph tpuperf-synth writes, decided up front and
// sequentially, so that names are unique and the tree depends only on the seed and the
// scale, not on the thread count, the order in which files are written or the collections
// asked for (every graph has its own random stream, GraphPlan::seed). The scales' planners:
// classic_plan.h (tiny, small, bench), release_plan.h (release), stress_plan.h (stress).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/rng.h"

namespace tpuperf::synth {

// How a tile kernel is built: any kernel of the model, one node alone (an iota fusion: no
// edges), or a loop fusion of a long element-wise chain (several thousand nodes).
enum class TileBody { Any, SingleNode, LongChain };

// Shapes beyond the classic generator's; the defaults give the classic graphs.
struct GraphShape {
  TileBody tile_body = TileBody::Any;
  int64_t chain_ops = 0;         // LongChain: element-wise ops of the fusion
  bool remeasured_only = false;  // every config is one config, measured again and again
  int64_t isolated_nodes = 0;    // layout: unused entry parameters, nodes without edges
  bool one_computation = false;  // layout: the entry computation only (node_splits [0, n])
  bool no_config_nodes = false;  // layout: nothing configurable (preprocessing rejects it)
  // Layout, random search: measured by a converged autotuner (converged_search.h).
  bool converged = false;
};

struct GraphPlan {
  std::string split, name;
  int64_t index = 0;  // position within its split
  ModelSpec model;
  int64_t target_nodes = 0, max_config_nodes = 0;  // layout programs
  int64_t configs = 0;  // configs of the file (tile: at most; fewer if the tilings run out)
  uint64_t seed = 0;    // the graph's random stream
  GraphShape shape;
  double est_bytes = 0;  // estimated decompressed size: largest written first; release sampling
};

// A collection's graphs: train, then valid, then test.
struct CollectionPlan {
  Collection collection;
  std::vector<GraphPlan> graphs;
};

// Log-uniform integer in [lo, hi]: sizes spread over orders of magnitude.
int64_t draw_count(Rng& rng, int64_t lo, int64_t hi);

// Two-piece log-uniform integer: half of the draws log-uniform in [lo, median], half in
// [median, hi]. Matches a documented minimum, median and maximum exactly, with log-scale
// spread on both sides (sizes in the release are given that way: 372..43,615, median ~12k).
int64_t draw_around_median(Rng& rng, int64_t lo, int64_t median, int64_t hi);

// make_model (models.h) drawn again until the model trains (training 1), serves (0) or
// either (-1): convolution networks reach different node counts per configurable node
// (training adds the backward pass: ~18 nodes per configurable node, inference ~11).
ModelSpec draw_model(const std::string& source, size_t family, int64_t target_nodes,
                     int64_t max_config_nodes, Rng& rng, int64_t max_layers, int training);

// The label of a graph's random stream: "tile:xla/train/3".
std::string graph_label(const std::string& what, const std::string& split, int64_t index);

// Train graphs cycle through a few families (several graphs each, at least 4 families, which
// is what fold assignment needs); valid and test draw freely. One family index per graph.
std::vector<size_t> assign_families(int64_t n, size_t families, bool train, Rng& rng);

// Kernels of tile:xla: counts[s] graphs per split, each a kernel of a model of any family
// (train cycling through a few, as assign_families does), configs log-uniform in
// [configs_min, configs_max], names as the release's (model name and kernel fingerprint;
// test: 32 hex digits). stream names the planner's random stream and prefixes the graphs'.
std::vector<GraphPlan> plan_tile_kernels(const int64_t counts[3], int64_t configs_min, int64_t configs_max,
                                         const std::string& stream, uint64_t seed);

// Estimated decompressed bytes of a file: node arrays (features, opcodes, ~1.7 edges per
// node) plus configs. Layout config nodes are at most max_config_nodes; tile kernels hold
// ~37 nodes (the release's median).
double estimate_tile_bytes(int64_t configs);
double estimate_layout_bytes(int64_t nodes, int64_t config_nodes, int64_t configs);

}  // namespace tpuperf::synth
