// sage, the layout model: the configuration is per node, so each configurable node's 18
// layout values are embedded per config slot and added to that node's config-free state;
// SAGE residual blocks run on all S copies of the graph (S x N x H), and the readout pools
// each copy per graph, lets the slots attend to each other and scores them.
// sage_config_pool is the same model whose readout pools the configurable nodes apart as
// well (mean and max over all nodes, and over the configurable ones): a config changes
// only those nodes' inputs, and in a 10k-node graph their share of a mean is small.
#include "trainer/models/blocks.h"
#include "trainer/models/registry.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class LayoutSage : public RankingModel {
 public:
  LayoutSage(int64_t num_node_feat, const ModelOptions& opts, bool pool_config)
      : pool_config(pool_config),
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
        readout(register_module("readout", Readout(opts, pool_config ? 2 : 1))) {}

  torch::Tensor forward(const Batch& batch) override {
    const auto base = encoder(batch.node_feat, batch.node_opcode);  // N x H, config-free
    const int64_t S = batch.slate, M = batch.config_node.size(0), H = base.size(1);
    auto x = base.unsqueeze(0).expand({S, base.size(0), H});
    if (M > 0) {
      const auto cfg = config_out(F::gelu(embed_values(batch.config_values.view({S * M, kLayoutConfigDim}))))
                           .view({S, M, H});
      x = x.index_add(1, batch.config_node, cfg);
    } else {
      x = x.contiguous();
    }
    const BatchGraph graph(batch);
    for (auto& block : blocks) x = block->forward(x, graph);
    if (!pool_config) return readout(x, batch);
    const auto pooled = torch::cat({pool_mean_max(x, batch, fused), pool_config_nodes(x, batch, fused)}, -1);
    return readout->forward_pooled(pooled.transpose(0, 1), batch);  // S x G -> G x S
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

  bool pool_config;
  bool fused;  // model.fused: the kernels' path, or the plain definition
  NodeEncoder encoder{nullptr};
  torch::nn::EmbeddingBag config_embed{nullptr};
  torch::nn::Linear config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_layout_sage(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.num_node_feat, spec.options, false);
}

ModelPtr make_layout_sage_config_pool(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.num_node_feat, spec.options, true);
}

}  // namespace tpuperf
