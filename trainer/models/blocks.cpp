#include "trainer/models/blocks.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "trainer/kernels/fused_ops.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

// The slot term's weights for the four kinds of node (see node_kinds): kind k's block is
// W_self + (k & 1) W_producers + (k & 2) W_consumers, blocks of linear's weight [W_self |
// W_producers | W_consumers] (H x 3H). Returns them stacked as 4H x H, so one matmul gives
// every kind's term; formed on the H x H weights instead of on the S x G x 3H products
// (a broadcast multiply and sum there cost more than the whole matmul on many graphs).
torch::Tensor kind_weights(const torch::nn::Linear& linear) {
  const int64_t H = linear->weight.size(0);
  static float kCombine[4][3] = {{1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}};  // read only
  const auto blocks = linear->weight.view({H, 3, H}).transpose(0, 1).reshape({3, H * H});
  const auto combine = torch::from_blob(kCombine, {4, 3}).to(blocks.scalar_type());
  return torch::mm(combine, blocks).view({4 * H, H});
}

// Per node u: graph[u] * 4 + (u has producers) + 2 * (u has consumers), the row of its slot
// term in forward_split. One pass over the CSR arrays (tensor ops cost more than the loop
// on graphs this small); checks the split's premise, that every edge joins two nodes of
// one graph, on the way.
torch::Tensor node_kinds(const torch::Tensor& graph, const Adjacency& adj) {
  const auto g = graph.to(torch::kInt64).contiguous();
  const int64_t n = g.numel();
  TORCH_CHECK(n == adj.num_nodes, "SageBlock::forward_split: ", n, " graph ids for ", adj.num_nodes, " nodes");
  auto kind = torch::empty({n}, torch::kInt64);
  const int64_t *gp = g.data_ptr<int64_t>(), *pp = adj.producer_ptr.data_ptr<int64_t>(),
                *pi = adj.producer_idx.data_ptr<int64_t>(), *cp = adj.consumer_ptr.data_ptr<int64_t>();
  int64_t* kp = kind.data_ptr<int64_t>();
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t e = pp[u]; e < pp[u + 1]; ++e)
      TORCH_CHECK(gp[pi[e]] == gp[u], "SageBlock::forward_split: an edge joins two graphs");
    kp[u] = gp[u] * 4 + (pp[u + 1] > pp[u] ? 1 : 0) + (cp[u + 1] > cp[u] ? 2 : 0);
  }
  return kind;
}

// Where forward_configs' term rows reach the nodes: per node u (CSR over u), the rows of
// the terms' products (S x 3M x H, row 3 m + k: term m through W's block k) that its output
// adds, with their weights. Block 0 (W_self) of u's own term, weight 1; block 1 (W_producers)
// of each configurable producer, 1 / |P(u)|; block 2 (W_consumers) of each configurable
// consumer, 1 / |C(u)|: the terms' shares of u's means (repeated edges repeated, as in the
// means). A node listed twice in config_node has two terms, as index_add adds both.
// Also, as compressed rows over nodes, each node's positions in config_node (node_ptr,
// node_term): the rows of the terms that the block's input adds to the node.
struct ConfigMessages {
  torch::Tensor ptr, index, weight;   // int64 N + 1, int64 K, float64 K
  torch::Tensor node_ptr, node_term;  // int64 N + 1, int64 M
};

ConfigMessages config_messages(const torch::Tensor& config_node, const Adjacency& adj) {
  const auto nodes = config_node.to(torch::kInt64).contiguous();
  const int64_t N = adj.num_nodes, M = nodes.numel();
  const int64_t* cn = nodes.data_ptr<int64_t>();
  // The positions m of each node in config_node, as compressed rows over nodes.
  std::vector<int64_t> pos_ptr(N + 1, 0), pos(M);
  for (int64_t m = 0; m < M; ++m) {
    TORCH_CHECK(cn[m] >= 0 && cn[m] < N, "SageBlock::forward_configs: configurable node ", cn[m], " outside [0, ", N, ")");
    ++pos_ptr[cn[m] + 1];
  }
  for (int64_t u = 0; u < N; ++u) pos_ptr[u + 1] += pos_ptr[u];
  std::vector<int64_t> fill(pos_ptr.begin(), pos_ptr.end() - 1);
  for (int64_t m = 0; m < M; ++m) pos[fill[cn[m]]++] = m;
  const int64_t *pp = adj.producer_ptr.data_ptr<int64_t>(), *pi = adj.producer_idx.data_ptr<int64_t>(),
                *cp = adj.consumer_ptr.data_ptr<int64_t>(), *ci = adj.consumer_idx.data_ptr<int64_t>();
  std::vector<int64_t> ptr(N + 1, 0), index;
  std::vector<double> weight;
  const auto add_terms = [&](int64_t v, int64_t block, double w) {
    for (int64_t j = pos_ptr[v]; j < pos_ptr[v + 1]; ++j) {
      index.push_back(3 * pos[j] + block);
      weight.push_back(w);
    }
  };
  for (int64_t u = 0; u < N; ++u) {
    add_terms(u, 0, 1.0);
    for (int64_t e = pp[u]; e < pp[u + 1]; ++e) add_terms(pi[e], 1, 1.0 / double(pp[u + 1] - pp[u]));
    for (int64_t e = cp[u]; e < cp[u + 1]; ++e) add_terms(ci[e], 2, 1.0 / double(cp[u + 1] - cp[u]));
    ptr[u + 1] = static_cast<int64_t>(index.size());
  }
  const auto as_tensor = [](auto& v, torch::Dtype dtype) {
    return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, dtype).clone();
  };
  return {as_tensor(ptr, torch::kInt64), as_tensor(index, torch::kInt64), as_tensor(weight, torch::kFloat64),
          as_tensor(pos_ptr, torch::kInt64), as_tensor(pos, torch::kInt64)};
}

}  // namespace

const Adjacency& BatchGraph::adjacency() const {
  if (!adjacency_) adjacency_ = Adjacency::build(batch_.edges, batch_.num_nodes);
  return *adjacency_;
}

DropoutDraw draw_dropout(const torch::nn::Module& m, double p) {
  if (!m.is_training() || p == 0) return {};
  return {p, draw_dropout_seed()};
}

torch::Tensor apply_dropout(const torch::Tensor& x, const DropoutDraw& d, bool fused) {
  if (d.p == 0) return x;
  if (fused) return counter_dropout(x, d.p, d.seed);
  return x * dropout_multipliers(x.sizes(), d.p, d.seed, x.scalar_type());
}

torch::Tensor apply_gelu(const torch::Tensor& x, bool fused) { return fused ? fused_gelu(x) : F::gelu(x); }

torch::Tensor apply_linear(torch::nn::Linear& linear, const torch::Tensor& x, bool fused) {
  return fused ? row_linear(x, linear->weight, linear->bias) : linear(x);
}

SageBlockImpl::SageBlockImpl(int64_t hidden, double dropout_, bool fused_)
    : linear(register_module("linear", torch::nn::Linear(3 * hidden, hidden))),
      norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
      dropout(dropout_),
      fused(fused_) {}

torch::Tensor SageBlockImpl::forward(const torch::Tensor& x, const BatchGraph& graph) {
  const DropoutDraw d = draw_dropout(*this, dropout);
  if (fused)
    return sage_block(x, linear->weight, linear->bias, graph.adjacency(), norm->weight, norm->bias,
                      norm->options.eps(), d.p, d.seed);
  const auto& edges = graph.edges();
  const auto z = linear(torch::cat({x, aggregate_from_producers(x, edges), aggregate_from_consumers(x, edges)}, -1));
  return norm(x + apply_dropout(F::gelu(z), d, false));
}

torch::Tensor SageBlockImpl::forward_split(const torch::Tensor& node, const torch::Tensor& slot,
                                           const BatchGraph& graph) {
  const torch::Tensor& node_graph = graph.batch().node_graph;
  if (!fused) return forward(node.unsqueeze(0) + slot.index_select(1, node_graph), graph);
  const int64_t S = slot.size(0), G = slot.size(1), H = slot.size(2);
  const Adjacency& adj = graph.adjacency();
  const auto from_node = sage_linear(node.unsqueeze(0), linear->weight, linear->bias, adj);
  // Per (slot, graph), the slot term for each kind k of node: self + producers (k & 1) +
  // consumers (k & 2); node u reads row graph[u] * 4 + its kind.
  const auto from_slot = torch::mm(slot.reshape({S * G, H}), kind_weights(linear).t()).view({S, G * 4, H});
  const auto z = add_gathered(from_node.squeeze(0), from_slot, node_kinds(node_graph, adj));
  const auto x = add_gathered(node, slot, node_graph);
  const DropoutDraw d = draw_dropout(*this, dropout);
  return gelu_dropout_add_layer_norm(z, x, norm->weight, norm->bias, norm->options.eps(), d.p, d.seed);
}

torch::Tensor SageBlockImpl::forward_linear(const torch::Tensor& z, const torch::Tensor& x) {
  TORCH_CHECK(fused, "SageBlock::forward_linear: the plain path forms its linear map itself");
  const DropoutDraw d = draw_dropout(*this, dropout);
  return gelu_dropout_add_layer_norm(z, x, norm->weight, norm->bias, norm->options.eps(), d.p, d.seed);
}

torch::Tensor SageBlockImpl::forward_configs(const torch::Tensor& base, const torch::Tensor& term,
                                             const torch::Tensor& config_node, const BatchGraph& graph,
                                             torch::Tensor* base_linear) {
  const int64_t S = term.size(0), M = term.size(1), N = base.size(0), H = base.size(1);
  if (!fused) return forward(base.unsqueeze(0).expand({S, N, H}).index_add(1, config_node, term), graph);
  const DropoutDraw d = draw_dropout(*this, dropout);  // where forward draws it
  const auto from_base = sage_linear(base.unsqueeze(0), linear->weight, linear->bias, graph.adjacency());
  if (base_linear) *base_linear = from_base;
  // W's blocks [W_self | W_producers | W_consumers] (H x 3H) stacked as a 3H x H linear
  // layer: row 3 m + k of the product is term m through block k.
  const auto blocks = linear->weight.reshape({H, 3, H}).transpose(0, 1).reshape({3 * H, H});
  const auto from_term = row_linear(term, blocks, torch::Tensor()).view({S, 3 * M, H});
  const ConfigMessages m = config_messages(config_node, graph.adjacency());
  const auto z = add_gathered_sum(from_base.squeeze(0), from_term, m.ptr, m.index, m.weight);
  // The block's input, index_add's sum of base and the terms at their nodes, by the same
  // kernel: LibTorch's index_add on the expanded base and its backward took 1.4 ms of a
  // 78 ms AVX2 layout default step (its shapes, one thread).
  const auto x = add_gathered_sum(base, term, m.node_ptr, m.node_term, torch::ones({M}, base.options()));
  return gelu_dropout_add_layer_norm(z, x, norm->weight, norm->bias, norm->options.eps(), d.p, d.seed);
}

NodeEncoderImpl::NodeEncoderImpl(int64_t num_node_feat, const ModelOptions& opts)
    : opcode(register_module("opcode", torch::nn::Embedding(kNumOpcodes, opts.opcode_dim))),
      in(register_module("input", torch::nn::Linear(num_node_feat + opts.opcode_dim, opts.hidden))),
      out(register_module("out", torch::nn::Linear(opts.hidden, opts.hidden))),
      fused(opts.fused) {}

torch::Tensor NodeEncoderImpl::forward(const torch::Tensor& node_feat, const torch::Tensor& node_opcode) {
  return out(apply_gelu(in(torch::cat({node_feat, opcode(node_opcode)}, -1)), fused));
}

ConfigAttentionImpl::ConfigAttentionImpl(int64_t hidden, int64_t heads_)
    : heads(heads_),
      qkv(register_module("qkv", torch::nn::Linear(hidden, 3 * hidden))),
      proj(register_module("proj", torch::nn::Linear(hidden, hidden))),
      norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))) {
  if (heads < 1 || hidden % heads != 0)
    throw Error("attention heads (" + std::to_string(heads) + ") must divide hidden (" + std::to_string(hidden) +
                ")");
}

torch::Tensor ConfigAttentionImpl::forward(const torch::Tensor& z, const torch::Tensor& mask) {
  const int64_t G = z.size(0), S = z.size(1), H = z.size(2), d = H / heads;
  // G x S x 3H -> 3 x G x heads x S x d
  const auto parts = qkv(z).view({G, S, 3, heads, d}).permute({2, 0, 3, 1, 4});
  const auto q = parts[0], k = parts[1], v = parts[2];
  auto logits = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(d));
  // Every graph has a real slot 0, so no row is empty.
  logits = logits.masked_fill(mask.logical_not().view({G, 1, 1, S}), -std::numeric_limits<double>::infinity());
  const auto mixed = torch::matmul(torch::softmax(logits, -1), v);  // G x heads x S x d
  return norm(z + proj(mixed.permute({0, 2, 1, 3}).reshape({G, S, H})));
}

torch::Tensor pool_mean_max(const torch::Tensor& x, const Batch& batch, bool fused) {
  if (fused) return segment_mean_max(x, batch.node_offsets);
  const int64_t G = batch.num_graphs;
  return torch::cat({segment_mean(x, batch.node_graph, G), segment_max(x, batch.node_graph, G)}, -1);
}

torch::Tensor pool_nodes_and_config_nodes(const torch::Tensor& x, const Batch& batch, bool fused) {
  if (fused) return segment_mean_max(x, batch.node_offsets, batch.config_offsets, batch.config_node);
  const auto config_states = x.index_select(1, batch.config_node);  // S x M x H
  const auto graph = batch.node_graph.index_select(0, batch.config_node);
  const int64_t G = batch.num_graphs;
  return torch::cat({pool_mean_max(x, batch, false), segment_mean(config_states, graph, G),
                     segment_max(config_states, graph, G)},
                    -1);
}

ReadoutImpl::ReadoutImpl(const ModelOptions& opts, int64_t pools)
    : pool_proj(register_module("pool_proj", torch::nn::Linear(pools * 2 * opts.hidden, opts.hidden))),
      hidden(register_module("hidden", torch::nn::Linear(opts.hidden, opts.hidden))),
      score(register_module("score", torch::nn::Linear(opts.hidden, 1))),
      dropout(opts.dropout),
      fused(opts.fused) {
  if (opts.attention_heads > 0)
    attention = register_module("attention", ConfigAttention(opts.hidden, opts.attention_heads));
}

torch::Tensor ReadoutImpl::forward(const torch::Tensor& x, const Batch& batch) {
  return forward_pooled(pool_mean_max(x, batch, fused).transpose(0, 1), batch);  // S x G -> G x S
}

torch::Tensor ReadoutImpl::forward_pooled(const torch::Tensor& pooled, const Batch& batch) {
  auto z = apply_gelu(pool_proj(pooled), fused);  // G x S x H
  if (!attention.is_empty()) z = attention(z, batch.config_mask);
  const DropoutDraw d = draw_dropout(*this, dropout);
  return score(apply_dropout(apply_gelu(hidden(z), fused), d, fused)).squeeze(-1);  // G x S
}

std::vector<SageBlock> make_sage_blocks(torch::nn::Module& owner, const ModelOptions& opts) {
  std::vector<SageBlock> blocks;
  for (int64_t i = 0; i < opts.layers; ++i)
    blocks.push_back(
        owner.register_module("sage" + std::to_string(i), SageBlock(opts.hidden, opts.dropout, opts.fused)));
  return blocks;
}

torch::Tensor signed_log1p(const torch::Tensor& x) { return torch::sign(x) * torch::log1p(x.abs()); }

}  // namespace tpuperf
