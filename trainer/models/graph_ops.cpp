#include "trainer/models/graph_ops.h"

#include <tuple>
#include <utility>
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

// Counting sort of the edges by `row` (stable, so each row keeps edge order): CSR of the
// `col` ends.
std::pair<torch::Tensor, torch::Tensor> csr_by(const torch::Tensor& row, const torch::Tensor& col,
                                               int64_t n) {
  const auto r = row.contiguous(), c = col.contiguous();
  const int64_t* rp = r.data_ptr<int64_t>();
  const int64_t* cp = c.data_ptr<int64_t>();
  const int64_t e = r.numel();
  auto ptr = torch::zeros({n + 1}, torch::kInt64);
  auto idx = torch::empty({e}, torch::kInt64);
  int64_t* pp = ptr.data_ptr<int64_t>();
  int64_t* ip = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < e; ++i) {
    TORCH_CHECK(rp[i] >= 0 && rp[i] < n && cp[i] >= 0 && cp[i] < n, "edge ", i, " (", rp[i], ", ",
                cp[i], ") names a node outside [0, ", n, ")");
    ++pp[rp[i] + 1];
  }
  for (int64_t u = 0; u < n; ++u) pp[u + 1] += pp[u];
  std::vector<int64_t> next(pp, pp + n);
  for (int64_t i = 0; i < e; ++i) ip[next[static_cast<size_t>(rp[i])]++] = cp[i];
  return {ptr, idx};
}

}  // namespace

Adjacency Adjacency::build(const GraphEdges& edges, int64_t num_nodes) {
  TORCH_CHECK(edges.consumer.dtype() == torch::kInt64 && edges.producer.dtype() == torch::kInt64,
              "edges must be int64");
  Adjacency adj;
  adj.num_nodes = num_nodes;
  std::tie(adj.producer_ptr, adj.producer_idx) = csr_by(edges.consumer, edges.producer, num_nodes);
  std::tie(adj.consumer_ptr, adj.consumer_idx) = csr_by(edges.producer, edges.consumer, num_nodes);
  return adj;
}

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
