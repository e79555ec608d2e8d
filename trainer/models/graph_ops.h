// Message passing and pooling on batched graphs with index_add_/scatter, for features laid
// out as [..., N, H]: the node dimension is the second-to-last one, so the same code runs on
// config-independent states (N x H) and on per-config states (S x N x H).
// The models train with the fused kernels of trainer/fused_ops.h (which use Adjacency);
// the scatter functions here are the plain LibTorch reference those kernels are tested
// against.
//
// Edge direction: a TpuGraphs edge [u, v] means u consumes v's output (data flows v -> u).
// We keep the two directions as separate channels: at each node, what its producers
// (inputs) send and what its consumers (users) send.
#pragma once

#include <torch/torch.h>

namespace tpuperf {

enum class Aggregation { Mean, Sum };

// Edges of a (batched) graph as two E-long int64 tensors of node ids.
struct GraphEdges {
  torch::Tensor consumer;  // u
  torch::Tensor producer;  // v
};

// The same edges in compressed sparse row form, both ways, for gather-only aggregation
// (trainer/fused_ops.h): the producers of node u are producer_idx[producer_ptr[u] ..
// producer_ptr[u + 1]), its consumers consumer_idx[consumer_ptr[u] .. consumer_ptr[u + 1]),
// each in edge order, repeated edges repeated (so counts equal the scatter version's).
// All int64 CPU tensors; the ptr ones have N + 1 entries.
struct Adjacency {
  int64_t num_nodes = 0;
  torch::Tensor producer_ptr, producer_idx;
  torch::Tensor consumer_ptr, consumer_idx;

  // Throws c10::Error if an edge names a node outside [0, num_nodes).
  static Adjacency build(const GraphEdges& edges, int64_t num_nodes);
};

// out[..., dst[e], :] += x[..., src[e], :] over all edges e; nodes without incoming
// messages get 0. The mean divides by the number of messages a node receives.
torch::Tensor scatter_aggregate(const torch::Tensor& x, const torch::Tensor& src,
                                const torch::Tensor& dst, Aggregation agg);

// At each node: the mean/sum of its producers' states (producer -> consumer messages).
torch::Tensor aggregate_from_producers(const torch::Tensor& x, const GraphEdges& edges,
                                       Aggregation agg = Aggregation::Mean);
// At each node: the mean/sum of its consumers' states (consumer -> producer messages).
torch::Tensor aggregate_from_consumers(const torch::Tensor& x, const GraphEdges& edges,
                                       Aggregation agg = Aggregation::Mean);

// Per-graph pooling of [..., N, H] into [..., G, H], given the graph id (0..G-1, int64) of
// every node. Graphs without nodes pool to 0.
torch::Tensor segment_sum(const torch::Tensor& x, const torch::Tensor& segment,
                          int64_t num_segments);
torch::Tensor segment_mean(const torch::Tensor& x, const torch::Tensor& segment,
                           int64_t num_segments);
torch::Tensor segment_max(const torch::Tensor& x, const torch::Tensor& segment,
                          int64_t num_segments);

}  // namespace tpuperf
