// The tensor batch a model consumes: several graphs concatenated into one node set, and per
// graph a "slate" of S configurations (the configs ranked against each other by the loss).
// Graphs with fewer chosen configs than the widest slate are padded; config_mask says which
// slots are real. Padded slots repeat the graph's first chosen config, so models compute
// finite scores for them; losses and metrics ignore them.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/graph/graph.h"
#include "common/graph/processed_graph.h"
#include "trainer/models/graph_slate.h"
#include "trainer/models/graph_ops.h"

namespace tpuperf {

constexpr int64_t kLayoutLevels = 7;     // values -1..5

struct Batch {
  Kind kind = Kind::Tile;
  int64_t num_graphs = 0;             // G
  int64_t slate = 0;                  // S
  int64_t num_nodes = 0;              // N, over all graphs
  std::vector<int64_t> node_offsets;  // G + 1: graph g owns nodes [off[g], off[g+1])

  torch::Tensor node_feat;    // N x F float32, transformed features
  torch::Tensor node_opcode;  // N int64
  torch::Tensor node_graph;   // N int64: graph of each node
  GraphEdges edges;           // global node ids

  torch::Tensor config_index;  // G x S int64: config index in the source graph
  torch::Tensor config_mask;   // G x S bool: real slot (not padding)
  // G x S float64: what the ranking is about, lower = faster. Tile: runtime / normalizer;
  // layout: runtime. Zero for padding and for unlabelled (test) graphs.
  torch::Tensor target;

  // What each slot's config means for the graph's tensors (trainer/models/shape_features.h):
  // tile G x S x kTileShapeFeat, layout S x M x kLayoutShapeFeat, float32. Undefined when
  // the graphs carry no config_dims (trainer/models/config_dims.h); models that need it say so.
  torch::Tensor config_shape;

  // tile
  torch::Tensor config_feat;  // G x S x 24 float32, raw (models transform it)

  // layout: M configurable nodes over all graphs
  torch::Tensor config_node;  // M int64: global node id, grouped by graph in graph order
  std::vector<int64_t> config_offsets;  // G + 1: graph g's are config_node[off[g], off[g+1])
  // S x M x 18 int64: value v (-1..5) at position j encoded as j * 7 + (v + 1), i.e. an
  // index into a (18 * 7)-row embedding table. Slot s of node m uses the config in slot s
  // of m's graph.
  torch::Tensor config_values;
};

// Builds a batch from graphs and, per graph, the config indices of its slate (at least one
// each, all in range). Layout values are decoded with unpack_layout_values. Throws Error
// naming the graph on inconsistent records.
Batch make_batch(Kind kind, const std::vector<const ProcessedGraph*>& graphs,
                 const std::vector<std::vector<int64_t>>& configs);

// The batch's config_shape, or Error naming `model` when the graphs carried no config dims.
const torch::Tensor& require_config_shape(const Batch& batch, const std::string& model);

// The batch with its floating-point inputs (node_feat, config_feat, config_shape) cast to dtype, e.g.
// torch::kFloat64 for gradient checks; target stays float64.
Batch batch_to_dtype(const Batch& batch, torch::ScalarType dtype);

}  // namespace tpuperf
