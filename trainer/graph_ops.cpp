#include "trainer/graph_ops.h"

#include <vector>

namespace tpuperf {

namespace {

int64_t node_dim(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() >= 2, "graph ops expect [..., N, H] features, got ", x.sizes());
  return x.dim() - 2;
}

// Shape of x with the node dimension replaced by n.
std::vector<int64_t> with_nodes(const torch::Tensor& x, int64_t n) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[static_cast<size_t>(node_dim(x))] = n;
  return shape;
}

// Count per index as a column that broadcasts against [..., n, H]; at least 1, so that
// empty targets divide 0 by 1.
torch::Tensor clamped_counts(const torch::Tensor& index, int64_t n, const torch::Tensor& like) {
  auto counts = torch::zeros({n}, like.options())
                    .index_add_(0, index, torch::ones({index.size(0)}, like.options()));
  return counts.clamp_min(1).unsqueeze(-1);
}

}  // namespace

torch::Tensor scatter_aggregate(const torch::Tensor& x, const torch::Tensor& src,
                                const torch::Tensor& dst, Aggregation agg) {
  const int64_t dim = node_dim(x), n = x.size(dim);
  auto out =
      torch::zeros(with_nodes(x, n), x.options()).index_add_(dim, dst, x.index_select(dim, src));
  if (agg == Aggregation::Mean) out = out / clamped_counts(dst, n, x);
  return out;
}

torch::Tensor aggregate_from_producers(const torch::Tensor& x, const GraphEdges& edges,
                                       Aggregation agg) {
  return scatter_aggregate(x, edges.producer, edges.consumer, agg);
}

torch::Tensor aggregate_from_consumers(const torch::Tensor& x, const GraphEdges& edges,
                                       Aggregation agg) {
  return scatter_aggregate(x, edges.consumer, edges.producer, agg);
}

torch::Tensor segment_sum(const torch::Tensor& x, const torch::Tensor& segment,
                          int64_t num_segments) {
  const int64_t dim = node_dim(x);
  return torch::zeros(with_nodes(x, num_segments), x.options()).index_add_(dim, segment, x);
}

torch::Tensor segment_mean(const torch::Tensor& x, const torch::Tensor& segment,
                           int64_t num_segments) {
  return segment_sum(x, segment, num_segments) / clamped_counts(segment, num_segments, x);
}

torch::Tensor segment_max(const torch::Tensor& x, const torch::Tensor& segment,
                          int64_t num_segments) {
  const int64_t dim = node_dim(x);
  // scatter_reduce wants an index shaped like x: the segment id along the node dimension.
  std::vector<int64_t> view(static_cast<size_t>(x.dim()), 1);
  view[static_cast<size_t>(dim)] = segment.size(0);
  const auto index = segment.view(view).expand(x.sizes());
  // include_self=false: the zeros only show through for segments without nodes.
  return torch::zeros(with_nodes(x, num_segments), x.options())
      .scatter_reduce(dim, index, x, "amax", /*include_self=*/false);
}

}  // namespace tpuperf
