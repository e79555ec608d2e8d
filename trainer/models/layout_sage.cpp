// sage, the small layout model (the bench's: tests/bench/reference_train.py implements it
// too). It scores S configs of a graph at once, lower = predicted faster:
//
// 1. Node encoder: each node's state from its features and opcode alone (N x H).
// 2. Layout embedding, per config and configurable node: the sum of one learned vector per
//    (position, value) of its 18 layout values, through an MLP; added to the node's state
//    on S copies of the graph, one per config (S x N x H).
// 3. SAGE residual blocks on all S copies.
// 4. Readout: per copy, the mean and max of all nodes' states, optional attention across
//    the S configs, an MLP to one score.
//
// The default layout model, sage_shape_context (layout_shape_context.cpp), adds the
// layouts' shape features, a pooling of the configurable nodes apart and a wide per-node
// cost term.
#include "trainer/models/blocks.h"
#include "trainer/models/layout_parts.h"
#include "trainer/models/registry.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class LayoutSage : public RankingModel {
 public:
  LayoutSage(int64_t num_node_feat, const ModelOptions& opts)
      : fused(opts.fused),
        encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        config_embed(register_module("config_embed", make_layout_value_table(opts.hidden))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        blocks(make_sage_blocks(*this, opts)),
        readout(register_module("readout", Readout(opts))) {}

  torch::Tensor forward(const Batch& batch) override {
    const BatchGraph graph(batch);
    const auto base = encoder(batch.node_feat, batch.node_opcode);  // 1. N x H
    const auto x = sage_blocks_over_configs(blocks, base, batch, graph, [&] {  // 2.-3. S x N x H
      return apply_linear(config_out, apply_gelu(embed_layout_values(config_embed, batch, fused), fused), fused);
    });
    return readout(x, batch);  // 4. G x S
  }

 private:
  bool fused;  // model.fused: the kernels' path, or the plain definition
  NodeEncoder encoder{nullptr};
  torch::nn::EmbeddingBag config_embed{nullptr};
  torch::nn::Linear config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_layout_sage(const ModelSpec& spec) {
  return std::make_shared<LayoutSage>(spec.num_node_feat, spec.options);
}

}  // namespace tpuperf
