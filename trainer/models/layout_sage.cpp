// sage, the layout model: the configuration is per node, so each configurable node's 18
// layout values are embedded per config slot and added to that node's config-free state;
// SAGE residual blocks run on all S copies of the graph (S x N x H), and the readout pools
// each copy per graph, lets the slots attend to each other and scores them.
// sage_config_pool is the same model whose readout pools the configurable nodes apart as
// well (mean and max over all nodes, and over the configurable ones): a config changes
// only those nodes' inputs, and in a 10k-node graph their share of a mean is small.
// sage_shape is sage_config_pool whose config embedding also sees what each layout means
// for the node's tensors (trainer/models/shape_features.h: the size of the dims it puts
// minor, their padding to the (8 x 128) tiles, the waste), through a linear map added to
// the value embedding before the config MLP's nonlinearity, and adds a "wide" cost term to
// each score: a sum over the graph's configurable nodes of <A(node), [shape features,
// one-hot layout values]>, where A maps the node's config-free state to weights. A layout's
// cost is close to a sum over nodes of what each node's choice costs it, and a flat model
// on such sums ranks real layouts better than a mean pool of deep states can (the
// Baselines section of tests/bench/RESULTS.md); A starts at zero, so training starts from
// the deep model.
// sage_shape_context is sage_shape whose A reads the node's config-free state after the SAGE
// blocks (one more pass of the blocks over the graph without configs: 1/S of their cost)
// instead of its own features: two convolutions of one shape in different places of the
// graph then weigh their layouts apart, as a flat model's one-hot of (node, value) does
// within one graph.
// sage_node_cost is sage_shape_context plus a deep cost per configurable node: a small MLP
// on each configurable node's per-config state after the SAGE blocks, summed over the
// graph's configurable nodes. A layout's runtime is close to a sum of what each op costs,
// and what a node's choice costs depends on its neighbours' choices (a mismatch costs a
// copy), which its state after the blocks sees; a mean pool of those states followed by
// an MLP cannot add up per-node nonlinear costs. The MLP's output layer starts at zero.
#include <string>
#include <utility>

#include "trainer/models/blocks.h"
#include "trainer/models/registry.h"
#include "trainer/models/shape_features.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class LayoutSage : public RankingModel {
 public:
  // The parts beyond sage's: which of the variants above this one is.
  struct Parts {
    bool pool_config = false, shape = false, wide_context = false, node_cost = false;
  };

  LayoutSage(std::string arch, int64_t num_node_feat, const ModelOptions& opts, Parts parts)
      : arch(std::move(arch)),
        pool_config(parts.pool_config),
        wide_context(parts.wide_context),
        fused(opts.fused),
        encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        // Sum of one learned vector per (position, value): the same as a linear layer over
        // the 18 x 7 one-hot encoding, without materializing it.
        config_embed(register_module(
            "config_embed",
            torch::nn::EmbeddingBag(
                torch::nn::EmbeddingBagOptions(kLayoutConfigDim * kLayoutLevels, opts.hidden).mode(torch::kSum)))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        blocks(make_sage_blocks(*this, opts)),
        readout(register_module("readout", Readout(opts, parts.pool_config ? 2 : 1))) {
    // forward adds the wide and node-cost terms only on the config-pool path.
    TORCH_CHECK(parts.pool_config || !(parts.shape || parts.node_cost), "layout parts need pool_config");
    TORCH_CHECK(parts.shape || !parts.wide_context, "wide_context needs shape");
    torch::NoGradGuard no_grad;
    if (parts.node_cost) {
      node_cost_in = register_module("node_cost_in", torch::nn::Linear(opts.hidden, opts.hidden));
      node_cost_out = register_module("node_cost_out", torch::nn::Linear(opts.hidden, 1));
      node_cost_out->weight.zero_();
      node_cost_out->bias.zero_();
    }
    if (!parts.shape) return;
    shape_in = register_module("shape_in", torch::nn::Linear(kLayoutShapeFeat, opts.hidden));
    wide = register_module("wide", torch::nn::Linear(opts.hidden, kLayoutShapeFeat + kLayoutConfigDim * kLayoutLevels));
    wide->weight.zero_();
    wide->bias.zero_();
  }

  torch::Tensor forward(const Batch& batch) override {
    const auto base = encoder(batch.node_feat, batch.node_opcode);  // N x H, config-free
    const int64_t S = batch.slate, M = batch.config_node.size(0), H = base.size(1);
    auto x = base.unsqueeze(0).expand({S, base.size(0), H});
    if (M > 0) {
      auto embedded = embed_values(batch.config_values.view({S * M, kLayoutConfigDim}));
      if (shape_in) embedded = embedded + shape_in(require_config_shape(batch, arch).view({S * M, kLayoutShapeFeat}));
      const auto cfg = config_out(F::gelu(embedded)).view({S, M, H});
      x = x.index_add(1, batch.config_node, cfg);
    } else {
      x = x.contiguous();
    }
    const BatchGraph graph(batch);
    for (auto& block : blocks) x = block->forward(x, graph);
    if (!pool_config) return readout(x, batch);
    const auto config_states = x.index_select(1, batch.config_node);  // S x M x H
    const auto pooled =
        torch::cat({pool_mean_max(x, batch, fused), pool_config_nodes(config_states, batch, fused)}, -1);
    auto scores = readout->forward_pooled(pooled.transpose(0, 1), batch);  // S x G -> G x S
    if (wide && M > 0) scores = scores + wide_cost(wide_context ? context_state(base, graph) : base, batch);
    if (node_cost_in && M > 0) scores = scores + deep_node_cost(config_states, batch);
    return scores;
  }

  // G x S: per graph, the sum over its configurable nodes of the node-cost MLP on their
  // per-config states (S x M x H).
  torch::Tensor deep_node_cost(const torch::Tensor& config_states, const Batch& batch) {
    return sum_per_graph(node_cost_out(F::gelu(node_cost_in(config_states))), batch);  // S x M x 1 -> G x S
  }

  // N x H: the nodes' config-free states after the SAGE blocks.
  torch::Tensor context_state(const torch::Tensor& base, const BatchGraph& graph) {
    auto x = base.unsqueeze(0);
    for (auto& block : blocks) x = block->forward(x, graph);
    return x.squeeze(0);
  }

  // G x S: per graph, the sum over its configurable nodes of <wide(node state), [shape
  // features, one-hot values]> of each slot's config; `state` is N x H.
  torch::Tensor wide_cost(const torch::Tensor& state, const Batch& batch) {
    const int64_t S = batch.slate, M = batch.config_node.size(0);
    const auto& shape_feat = require_config_shape(batch, arch);
    const auto weights = wide(state.index_select(0, batch.config_node));  // M x (F + 126)
    const auto w_shape = weights.narrow(1, 0, kLayoutShapeFeat);
    const auto w_values = weights.narrow(1, kLayoutShapeFeat, kLayoutConfigDim * kLayoutLevels);
    // <w, one-hot of the 18 values> is the sum of the 18 weights the values pick: a gather
    // from the (not materialized) S-fold expansion, so scoring 128 configs of a 3k-node
    // graph does not build an S x M x 126 one-hot.
    const auto picked = w_values.unsqueeze(0).expand({S, M, w_values.size(1)}).gather(2, batch.config_values);
    const auto per_node = (shape_feat * w_shape.unsqueeze(0)).sum(-1) + picked.sum(-1);  // S x M
    return sum_per_graph(per_node.unsqueeze(-1), batch);
  }

  // S x M x 1 terms of the configurable nodes -> G x S: their sum over each graph's nodes.
  static torch::Tensor sum_per_graph(const torch::Tensor& per_node, const Batch& batch) {
    const auto graph_of = batch.node_graph.index_select(0, batch.config_node);  // M
    return segment_sum(per_node, graph_of, batch.num_graphs).squeeze(-1).transpose(0, 1);
  }

  // Sum over the 18 positions of config_embed's row for (position, value). The fused path
  // multiplies the one-hot rows by the table instead: the same sum, and its backward is
  // one dense matmul, where EmbeddingBag's sorts and scatters (20-40% of a layout step in
  // tests/bench/RESULTS.md's profile).
  torch::Tensor embed_values(const torch::Tensor& values) {
    if (!fused) return config_embed(values);
    const auto& table = config_embed->weight;
    // Each row's 18 indices are distinct (one per position), so a scatter of ones is exact.
    const auto one_hot = torch::zeros({values.size(0), table.size(0)}, table.options()).scatter_(1, values, 1.0);
    return one_hot.matmul(table);
  }

  std::string arch;  // the registered name, for errors
  bool pool_config;
  bool wide_context;  // sage_shape_context: the wide weights from context_state
  bool fused;  // model.fused: the kernels' path, or the plain definition
  NodeEncoder encoder{nullptr};
  torch::nn::EmbeddingBag config_embed{nullptr};
  torch::nn::Linear config_out{nullptr};
  torch::nn::Linear shape_in{nullptr}, wide{nullptr};  // the _shape models only
  torch::nn::Linear node_cost_in{nullptr}, node_cost_out{nullptr};  // sage_node_cost only
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_layout_sage(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.arch, spec.num_node_feat, spec.options, LayoutSage::Parts{});
}

ModelPtr make_layout_sage_config_pool(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.arch, spec.num_node_feat, spec.options,
                                      LayoutSage::Parts{/*pool_config=*/true});
}

ModelPtr make_layout_sage_shape(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.arch, spec.num_node_feat, spec.options,
                                      LayoutSage::Parts{/*pool_config=*/true, /*shape=*/true});
}

ModelPtr make_layout_sage_shape_context(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.arch, spec.num_node_feat, spec.options,
                                      LayoutSage::Parts{/*pool_config=*/true, /*shape=*/true, /*wide_context=*/true});
}

ModelPtr make_layout_sage_node_cost(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(
      spec.arch, spec.num_node_feat, spec.options,
      LayoutSage::Parts{/*pool_config=*/true, /*shape=*/true, /*wide_context=*/true, /*node_cost=*/true});
}

}  // namespace tpuperf
