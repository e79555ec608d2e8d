// Prunes a layout graph to its configurable nodes plus every node within `hops` hops of
// one (edges taken in either direction), and re-indexes what refers to nodes. Config
// values are untouched: configurable nodes are always kept and keep their order.
// Optionally bridges what pruning cut: two kept nodes joined through pruned nodes only
// (conv -> relu -> add -> bias -> conv keeps relu and bias at 1 hop, not add) get an
// edge, so a model still sees which convolution's output feeds which.
#pragma once

#include <cstdint>
#include <vector>

#include "common/graph/graph.h"

namespace tpuperf {

// hops = -1: no pruning (identity); 0: only the configurable nodes.
constexpr int kNoPruning = -1;

struct PruneRule {
  int hops = kNoPruning;
  // Bridge two kept nodes joined by a producer path through at most this many pruned
  // nodes (0: none). Applied only when hops >= 1: then every producer of a configurable
  // node is kept, so no bridge ends in a configurable node, where the trainer would read
  // it as an operand (trainer/models/config_dims.h).
  int bridges = 0;
};

struct PrunedGraph {
  int64_t num_nodes = 0;
  std::vector<int64_t> kept_nodes;   // source index of each kept node, ascending
  std::vector<float> node_feat;      // kept rows, num_nodes x 140
  std::vector<uint8_t> node_opcode;  // kept rows
  // Edges among kept nodes, re-indexed, [u, v] orientation and source row order kept
  // (the re-indexing is monotonic, so rows sorted in the source stay sorted), then the
  // bridges (bridge_edges' order).
  std::vector<int64_t> edge_index;
  std::vector<int64_t> node_config_ids;  // re-indexed, same order as the source
  // Each boundary b becomes the number of kept nodes with source index < b, so every
  // computation stays one contiguous range (empty ranges stay, as duplicates).
  std::vector<int64_t> node_splits;
  int64_t nodes_before = 0;
  int64_t edges_before = 0;
  int64_t bridges = 0;  // edges added by bridging (the last rows of edge_index)
  int64_t num_edges() const { return static_cast<int64_t>(edge_index.size() / 2); }
};

// Marks (1) the nodes within `hops` undirected hops of a seed: BFS over a CSR adjacency,
// O(n + m). hops < 0 marks every node. Throws Error on an out-of-range endpoint or seed.
std::vector<uint8_t> nodes_within_hops(int64_t num_nodes, const std::vector<int64_t>& edge_index,
                                       const std::vector<int64_t>& seeds, int hops);

// Bridges as edge rows [u, y] (source indices): for each kept node u, each kept y that u
// consumes through a chain of 1..max_pruned pruned nodes (u -> p1 -> ... -> y, rows
// [u, p1], ..., [pk, y]) and that no edge [u, y] joins already; ordered by u, then y.
// Each u's search is a BFS over pruned producers that stops at kept nodes.
std::vector<int64_t> bridge_edges(int64_t num_nodes, const std::vector<int64_t>& edge_index,
                                  const std::vector<uint8_t>& keep, int max_pruned);

// Throws Error when rule.hops < -1 or rule.bridges < 0, or when hops >= 0 and the graph
// has no configurable node (nothing would be left).
PrunedGraph prune_layout(const LayoutGraph& g, const PruneRule& rule);

}  // namespace tpuperf
