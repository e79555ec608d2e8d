// The two rankers. Both map a Batch to a G x S tensor of scores, one per (graph, config
// slot), where LOWER score = predicted FASTER (the project-wide convention of
// common/metrics.h).
//
// Shape of the computation: each graph's node states are computed once without configs
// (N x H), then every config slot gets its own copy with the config injected (S x N x H):
//   tile:   + a projection of the graph's config features on every node (early join);
//   layout: + an embedding of the node's 18 layout values at each configurable node.
// SAGE residual blocks then run on all S copies at once, each copy is pooled per graph
// (mean and max), and the readout scores each (graph, slot).
//
// Cross-config attention: after pooling, each graph's S slot embeddings attend to each
// other (multi-head, padded slots masked out as keys), so a config is scored relative to
// the others in its slate. We attend over pooled embeddings, not per node: S x S per graph
// instead of S x S per node, which is what makes it affordable on large layout graphs. No
// positional encoding, so scores are equivariant to the order of the slate.
#pragma once

#include <torch/torch.h>

#include "trainer/train/batch.h"

namespace tpuperf {

struct ModelOptions {
  int64_t hidden = 64;  // H
  int64_t layers = 3;   // SAGE residual blocks
  double dropout = 0.1;
  int64_t opcode_dim = 32;      // opcode embedding width
  int64_t attention_heads = 4;  // cross-config attention; 0 turns it off; divides hidden
};

// h' = LayerNorm(h + Dropout(GELU(W [h, mean of producers, mean of consumers]))), computed
// with the fused kernels of trainer/fused_ops.h: sage_linear (means, then the matmul, no
// 3H-wide cat), then dropout, residual and LayerNorm in one pass. The parameters are those
// of the plain modules (linear: H x 3H, norm), so checkpoints do not depend on the fusion.
struct SageBlockImpl : torch::nn::Module {
  SageBlockImpl(int64_t hidden, double dropout);
  torch::Tensor forward(const torch::Tensor& x, const Adjacency& adj);
  // forward(x) for x[s, u] = node[u] + slot[s, graph[u]] (node: N x H, slot: S x G x H,
  // graph: the int64 graph of every node; edges stay inside a graph), without forming x
  // before the epilogue: W's blocks go to node and slot apart (N + S x G rows instead of
  // S x N), and a slot term's mean over u's producers or consumers is the term itself (0
  // when u has none). The tile model's first block, where this saves the S x N matmuls and
  // message passing (only the LayerNorm epilogue runs on S x N rows).
  torch::Tensor forward_split(const torch::Tensor& node, const torch::Tensor& slot,
                              const torch::Tensor& graph, const Adjacency& adj);

  torch::nn::Linear linear{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  double dropout;
};
TORCH_MODULE(SageBlock);

// Config-independent node states: MLP over [node features, opcode embedding] -> N x H.
struct NodeEncoderImpl : torch::nn::Module {
  NodeEncoderImpl(int64_t num_node_feat, const ModelOptions& opts);
  torch::Tensor forward(const torch::Tensor& node_feat, const torch::Tensor& node_opcode);

  torch::nn::Embedding opcode{nullptr};
  torch::nn::Linear in{nullptr}, out{nullptr};
};
TORCH_MODULE(NodeEncoder);

// Self-attention across the S slots of each graph: z (G x S x H), mask (G x S, true =
// real slot) -> LayerNorm(z + attention(z)).
struct ConfigAttentionImpl : torch::nn::Module {
  ConfigAttentionImpl(int64_t hidden, int64_t heads);
  torch::Tensor forward(const torch::Tensor& z, const torch::Tensor& mask);

  int64_t heads;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(ConfigAttention);

// Per-config node states (S x N x H) -> scores (G x S): mean+max pooling per graph, MLP,
// optional cross-config attention, MLP to one score. Dropout before the score layer is
// counter_dropout (trainer/fused_ops.h), like the SAGE blocks'.
struct ReadoutImpl : torch::nn::Module {
  explicit ReadoutImpl(const ModelOptions& opts);
  torch::Tensor forward(const torch::Tensor& x, const Batch& batch);

  torch::nn::Linear pool_proj{nullptr}, hidden{nullptr}, score{nullptr};
  ConfigAttention attention{nullptr};
  double dropout;
};
TORCH_MODULE(Readout);

// Tile: config_feat goes through sign(x) * log1p(|x|) inside the model, because its sums
// and products of bounds are heavy-tailed (harmless if the pipeline already scaled them).
struct TileModelImpl : torch::nn::Module {
  TileModelImpl(int64_t num_node_feat, const ModelOptions& opts = {});
  torch::Tensor forward(const Batch& batch);  // G x S, lower = faster

  NodeEncoder encoder{nullptr};
  torch::nn::Linear config_in{nullptr}, config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};
TORCH_MODULE(TileModel);

struct LayoutModelImpl : torch::nn::Module {
  LayoutModelImpl(int64_t num_node_feat, const ModelOptions& opts = {});
  torch::Tensor forward(const Batch& batch);  // G x S, lower = faster

  NodeEncoder encoder{nullptr};
  // Sum of one learned vector per (position, value): the same as a linear layer over the
  // 18 x 7 one-hot encoding, without materializing it.
  torch::nn::EmbeddingBag config_embed{nullptr};
  torch::nn::Linear config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};
TORCH_MODULE(LayoutModel);

}  // namespace tpuperf
