// The building blocks the rankers share. Each block has one definition in plain LibTorch
// ops (fused = false: the readable reference, runs wherever LibTorch runs) and a fused
// path through the CPU kernels of trainer/kernels/ (fused = true, the default) that
// computes the same up to float rounding (tests/trainer/models/test_fused_models.cpp). Both draw
// dropout seeds the same way and use the same counter-based masks
// (trainer/kernels/dropout_mask.h), so even training-mode outputs agree.
//
// States are per-config: S x N x H (slot, node, hidden), or N x H before configs join.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "trainer/models/batch.h"
#include "trainer/models/graph_ops.h"
#include "trainer/models/model_spec.h"

namespace tpuperf {

// A batch's graph structure in the two forms the paths need: edge lists for the plain
// scatter ops, compressed rows (built on first use) for the fused gathers.
class BatchGraph {
 public:
  explicit BatchGraph(const Batch& batch) : batch_(batch) {}
  const Batch& batch() const { return batch_; }
  const GraphEdges& edges() const { return batch_.edges; }
  const Adjacency& adjacency() const;

 private:
  const Batch& batch_;
  mutable std::optional<Adjacency> adjacency_;
};

// The dropout probability to apply now (0 in evaluation mode) and a fresh mask seed drawn
// from torch's generator (so torch::manual_seed replays it).
struct DropoutDraw {
  double p = 0;
  uint64_t seed = 0;
};
DropoutDraw draw_dropout(const torch::nn::Module& m, double p);

// x * keep / (1 - p), keep the counter-based mask of the draw; identity when p == 0.
torch::Tensor apply_dropout(const torch::Tensor& x, const DropoutDraw& d, bool fused);

// The erf GELU: fused_gelu (trainer/kernels/) or LibTorch's.
torch::Tensor apply_gelu(const torch::Tensor& x, bool fused);

// linear(x): row_linear (trainer/kernels/) or the module's own forward. For the layers
// applied per (slot, configurable node): ~10k rows a layout default step.
torch::Tensor apply_linear(torch::nn::Linear& linear, const torch::Tensor& x, bool fused);

// h' = LayerNorm(h + Dropout(GELU(W [h, mean of producers, mean of consumers]))). The
// parameters are those of the plain modules (linear: H x 3H, norm), so checkpoints do not
// depend on the path.
struct SageBlockImpl : torch::nn::Module {
  SageBlockImpl(int64_t hidden, double dropout, bool fused = true);
  torch::Tensor forward(const torch::Tensor& x, const BatchGraph& graph);
  // forward(node[u] + slot[s, graph of u]) for node states N x H and per-(slot, graph)
  // terms S x G x H. The plain path forms that sum; the fused one never does: W's blocks
  // go to node and slot apart (N + S x G rows instead of S x N), since a slot term's mean
  // over u's producers or consumers is the term itself (0 when u has none).
  torch::Tensor forward_split(const torch::Tensor& node, const torch::Tensor& slot,
                              const BatchGraph& graph);
  // forward(x) for x = S copies of node states base (N x H) with per-slot terms term
  // (S x M x H) added at rows config_node (M nodes): the layout models' first block. The
  // plain path forms x; the fused one takes W's blocks to base (N rows) and to the terms
  // (S x M rows) apart, and moves the terms' products along the edges from configurable
  // nodes (add_gathered_sum), since the means are linear: N + S x M rows instead of S x N.
  // With base_linear, the fused path also returns there its product of base (1 x N x H),
  // which is sage_linear(base) and so forward(base)'s (forward_linear takes it from there);
  // the plain path does not touch it.
  torch::Tensor forward_configs(const torch::Tensor& base, const torch::Tensor& term,
                                const torch::Tensor& config_node, const BatchGraph& graph,
                                torch::Tensor* base_linear = nullptr);
  // forward(x) given z = its sage_linear(x, ...), computed elsewhere: the epilogue alone,
  // drawing the dropout seed as forward does.
  torch::Tensor forward_linear(const torch::Tensor& z, const torch::Tensor& x);

  torch::nn::Linear linear{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  double dropout;
  bool fused;
};
TORCH_MODULE(SageBlock);

// Config-independent node states: MLP over [node features, opcode embedding] -> N x H.
struct NodeEncoderImpl : torch::nn::Module {
  NodeEncoderImpl(int64_t num_node_feat, const ModelOptions& opts);
  torch::Tensor forward(const torch::Tensor& node_feat, const torch::Tensor& node_opcode);

  torch::nn::Embedding opcode{nullptr};
  torch::nn::Linear in{nullptr}, out{nullptr};
  bool fused;
};
TORCH_MODULE(NodeEncoder);

// Self-attention across the S slots of each graph: z (G x S x H), mask (G x S, true =
// real slot) -> LayerNorm(z + attention(z)). Padded slots are never attended to. No
// positional encoding, so scores are equivariant to the order of the slate.
struct ConfigAttentionImpl : torch::nn::Module {
  ConfigAttentionImpl(int64_t hidden, int64_t heads);
  torch::Tensor forward(const torch::Tensor& z, const torch::Tensor& mask);

  int64_t heads;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(ConfigAttention);

// Per graph: the mean then the max of its nodes' states, [.., N, H] -> [.., G, 2H].
torch::Tensor pool_mean_max(const torch::Tensor& x, const Batch& batch, bool fused);

// pool_mean_max, then the same over each graph's configurable nodes only (layout batches):
// [S, N, H] -> [S, G, 4H]. A layout config changes only these nodes' inputs; in a mean over
// all nodes one node's change is diluted by the graph's size, here it is not.
torch::Tensor pool_nodes_and_config_nodes(const torch::Tensor& x, const Batch& batch, bool fused);

// Per-config node states (S x N x H) -> scores (G x S): mean+max pooling per graph, MLP,
// optional cross-config attention (S x S per graph over pooled embeddings, not per node:
// affordable on large layout graphs), dropout, MLP to one score.
struct ReadoutImpl : torch::nn::Module {
  // pools: how many mean+max poolings forward_pooled receives side by side (2H each).
  explicit ReadoutImpl(const ModelOptions& opts, int64_t pools = 1);
  torch::Tensor forward(const torch::Tensor& x, const Batch& batch);
  // The same from pooled embeddings G x S x (pools * 2H).
  torch::Tensor forward_pooled(const torch::Tensor& pooled, const Batch& batch);

  torch::nn::Linear pool_proj{nullptr}, hidden{nullptr}, score{nullptr};
  ConfigAttention attention{nullptr};
  double dropout;
  bool fused;
};
TORCH_MODULE(Readout);

// SAGE blocks sage0, sage1, ... registered on owner.
std::vector<SageBlock> make_sage_blocks(torch::nn::Module& owner, const ModelOptions& opts);

// Tile config features are bounds, sums and products of bounds (up to ~1e6): compressed
// as sign(x) * log1p(|x|), the same way the pipeline treats heavy-tailed node columns.
torch::Tensor signed_log1p(const torch::Tensor& x);

}  // namespace tpuperf
