// early_join, the default tile model: GraphSAGE with the config features joined to every
// node before the message passing ("early join", which beat late join for the best
// published solutions). Each graph's node states are computed once without configs
// (N x H); every config slot then gets its own copy with the projection of its config's
// features added to every node (S x N x H), SAGE residual blocks run on all S copies, and
// the readout pools each copy per graph and scores it.
// early_join_shape is the same model whose config input also holds what the tiling means
// for the kernel's output (trainer/models/shape_features.h: grid steps ceil(dim / tile)
// per dim and their product, the tile padded to (8 x 128)), which an additive join of the
// raw config features cannot form from the node features. It also adds a "wide" term to
// each score: <A(graph), config input>, A a linear map of the mean and max of the graph's
// config-free node states (zero at the start), so a graph's configs can be ranked by a
// weighting of their features that depends on the kernel, as a flat model does.
#include "trainer/models/blocks.h"
#include "trainer/models/registry.h"
#include "trainer/models/shape_features.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class TileEarlyJoin : public RankingModel {
 public:
  TileEarlyJoin(int64_t num_node_feat, const ModelOptions& opts, bool shape)
      : shape(shape),
        fused(opts.fused),
        encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        config_in(register_module("config_in",
                                  torch::nn::Linear(kTileConfigDim + (shape ? kTileShapeFeat : 0), opts.hidden))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        blocks(make_sage_blocks(*this, opts)),
        readout(register_module("readout", Readout(opts))) {
    if (!shape) return;
    wide = register_module("wide", torch::nn::Linear(2 * opts.hidden, kTileConfigDim + kTileShapeFeat));
    torch::NoGradGuard no_grad;
    wide->weight.zero_();
    wide->bias.zero_();
  }

  torch::Tensor forward(const Batch& batch) override {
    const auto base = encoder(batch.node_feat, batch.node_opcode);                       // N x H
    auto in = signed_log1p(batch.config_feat);
    if (shape) in = torch::cat({in, require_config_shape(batch, "early_join_shape")}, -1);
    const auto cfg = config_out(apply_gelu(config_in(in), fused));  // G x S x H
    const auto slot = cfg.transpose(0, 1);                                               // S x G x H
    auto scores = deep(base, slot, batch);
    if (!shape) return scores;
    const auto weights = wide(pool_mean_max(base.unsqueeze(0), batch, fused)[0]);  // G x K
    return scores + (in * weights.unsqueeze(1)).sum(-1);
  }

  torch::Tensor deep(const torch::Tensor& base, const torch::Tensor& slot, const Batch& batch) {
    if (blocks.empty()) return readout(base.unsqueeze(0) + slot.index_select(1, batch.node_graph), batch);
    // The first block takes node and slot terms apart (the config only adds a per-graph
    // term to every node), the others the full S x N x H states.
    const BatchGraph graph(batch);
    auto x = blocks[0]->forward_split(base, slot, graph);
    for (size_t i = 1; i < blocks.size(); ++i) x = blocks[i]->forward(x, graph);
    return readout(x, batch);
  }

  bool shape;  // early_join_shape
  bool fused;  // model.fused: the kernels' path, or the plain definition
  NodeEncoder encoder{nullptr};
  torch::nn::Linear config_in{nullptr}, config_out{nullptr}, wide{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_tile_early_join(const ModelSpec& spec) {
  return std::make_shared<TileEarlyJoin>(spec.num_node_feat, spec.options, false);
}

ModelPtr make_tile_early_join_shape(const ModelSpec& spec) {
  return std::make_shared<TileEarlyJoin>(spec.num_node_feat, spec.options, true);
}

}  // namespace tpuperf
