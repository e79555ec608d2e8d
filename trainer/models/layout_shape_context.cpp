// sage_shape_context, the default layout model (model.layout.arch). A layout config gives
// each configurable node of a graph 18 layout values (trainer/models/layout_parts.h); the
// model scores S configs of a graph at once, lower = predicted faster, in five steps:
//
// 1. Node encoder: each node's state from its features and opcode alone, without any
//    config (N x H).
// 2. Layout embedding, per config and configurable node: the sum of one learned vector per
//    (position, value) of its 18 values, plus a linear map of what the layout means for
//    the node's tensors (trainer/models/shape_features.h: the size of the dims it puts
//    minor, their padding to the (8 x 128) tiles, the waste), through an MLP; added to the
//    node's state on S copies of the graph, one per config (S x N x H).
// 3. SAGE residual blocks on all S copies: a node's state reads its producers' and
//    consumers', so a layout's effect reaches the nodes it feeds.
// 4. Readout: per copy, the mean and max of all nodes' states and, apart, of the
//    configurable nodes' (in a 10k-node graph their share of an all-node mean is small);
//    optional attention across the S configs; an MLP to one score.
// 5. Wide cost term, added to each score: a sum over the graph's configurable nodes of
//    <A(node), [shape features, one-hot layout values]>, where A maps the node's
//    config-free state after the SAGE blocks (one more pass of the blocks over the graph
//    without configs: 1/S of their cost) to weights. A layout's cost is close to a sum over
//    nodes of what each node's choice costs it, and a flat model on such sums ranks real
//    layouts better than a mean pool of deep states can (docs/experiments E0; the tables
//    are RESULTS.md's "Baselines" section). A reads the node's neighbourhood, so two
//    convolutions of one shape in different places weigh their layouts apart, as a flat
//    model's one-hot of (node, value) does within one graph (docs/experiments E4). A starts
//    at zero, so training starts from the deep model (steps 1-4).
#include "trainer/models/blocks.h"
#include "trainer/models/layout_parts.h"
#include "trainer/models/registry.h"
#include "trainer/models/shape_features.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

constexpr const char* kArch = "sage_shape_context";  // its registry name, for errors
constexpr int64_t kOneHotValues = kLayoutConfigDim * kLayoutLevels;

class LayoutShapeContext : public RankingModel {
 public:
  // Registered in checkpoint order, not in the order of the steps: the parameter names and
  // their order (the optimizer state and the saved training weights are by position) are
  // those of the checkpoints this model has written, and the same seed draws the same
  // initial weights (tests/trainer/models/test_checkpoint.cpp pins the list).
  LayoutShapeContext(int64_t num_node_feat, const ModelOptions& opts)
      : fused(opts.fused),
        encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        config_embed(register_module("config_embed", make_layout_value_table(opts.hidden))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        blocks(make_sage_blocks(*this, opts)),
        readout(register_module("readout", Readout(opts, /*pools=*/2))),
        shape_in(register_module("shape_in", torch::nn::Linear(kLayoutShapeFeat, opts.hidden))),
        wide(register_module("wide", torch::nn::Linear(opts.hidden, kLayoutShapeFeat + kOneHotValues))) {
    torch::NoGradGuard no_grad;
    wide->weight.zero_();
    wide->bias.zero_();
  }

  torch::Tensor forward(const Batch& batch) override {
    const BatchGraph graph(batch);
    const auto base = encoder(batch.node_feat, batch.node_opcode);  // 1. N x H
    torch::Tensor base_linear;  // the first block's product of base, if its fused path made one
    const auto x = sage_blocks_over_configs(
        blocks, base, batch, graph,
        [&] {  // 2.-3. S x N x H
          const auto shape = apply_linear(shape_in, require_config_shape(batch, kArch).flatten(0, 1), fused);
          return apply_linear(config_out, apply_gelu(embed_layout_values(config_embed, batch, fused) + shape, fused),
                              fused);
        },
        &base_linear);
    auto scores = readout_scores(x, batch);  // 4. G x S
    // 5. After the readout, as it always was: in training each SAGE block and the readout
    // draw a dropout seed from torch's generator, in this order.
    if (batch.config_node.size(0) > 0) scores = scores + wide_cost(context_state(base, base_linear, graph), batch);
    return scores;
  }

 private:
  // Step 4: G x S scores from the states after the blocks (S x N x H).
  torch::Tensor readout_scores(const torch::Tensor& x, const Batch& batch) {
    const auto pooled = pool_nodes_and_config_nodes(x, batch, fused);  // S x G x 4H
    return readout->forward_pooled(pooled.transpose(0, 1), batch);    // S x G -> G x S
  }

  // N x H: the nodes' config-free states after the SAGE blocks. The first block's linear
  // map of base is base_linear when step 3 made it (the fused path: a third of this pass's
  // matmuls and gathers, forward and backward, not done twice).
  torch::Tensor context_state(const torch::Tensor& base, const torch::Tensor& base_linear, const BatchGraph& graph) {
    auto x = base.unsqueeze(0);
    for (size_t i = 0; i < blocks.size(); ++i)
      x = i == 0 && base_linear.defined() ? blocks[0]->forward_linear(base_linear, x) : blocks[i]->forward(x, graph);
    return x.squeeze(0);
  }

  // Step 5: G x S, per graph the sum over its configurable nodes of <wide(node state),
  // [shape features, one-hot values]> of each slot's config; `state` is N x H.
  torch::Tensor wide_cost(const torch::Tensor& state, const Batch& batch) {
    const int64_t S = batch.slate, M = batch.config_node.size(0);
    const auto& shape_feat = require_config_shape(batch, kArch);
    const auto weights = wide(state.index_select(0, batch.config_node));  // M x (F + 126)
    const auto w_shape = weights.narrow(1, 0, kLayoutShapeFeat);
    const auto w_values = weights.narrow(1, kLayoutShapeFeat, kOneHotValues);
    // <w, one-hot of the 18 values> is the sum of the 18 weights the values pick: a gather
    // from the (not materialized) S-fold expansion, so scoring 128 configs of a 3k-node
    // graph does not build an S x M x 126 one-hot.
    const auto picked = w_values.unsqueeze(0).expand({S, M, w_values.size(1)}).gather(2, batch.config_values);
    const auto per_node = (shape_feat * w_shape.unsqueeze(0)).sum(-1) + picked.sum(-1);  // S x M
    const auto graph_of = batch.node_graph.index_select(0, batch.config_node);  // M
    return segment_sum(per_node.unsqueeze(-1), graph_of, batch.num_graphs).squeeze(-1).transpose(0, 1);
  }

  bool fused;  // model.fused: the kernels' path, or the plain definition
  NodeEncoder encoder{nullptr};
  torch::nn::EmbeddingBag config_embed{nullptr};
  torch::nn::Linear config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
  torch::nn::Linear shape_in{nullptr}, wide{nullptr};
};

}  // namespace

ModelPtr make_layout_shape_context(const ModelSpec& spec) {
  return std::make_shared<LayoutShapeContext>(spec.num_node_feat, spec.options);
}

}  // namespace tpuperf
