// early_join, the default tile model: GraphSAGE with the config features joined to every
// node before the message passing ("early join", which beat late join for the best
// published solutions). Each graph's node states are computed once without configs
// (N x H); every config slot then gets its own copy with the projection of its config's
// features added to every node (S x N x H), SAGE residual blocks run on all S copies, and
// the readout pools each copy per graph and scores it.
#include "trainer/models/blocks.h"
#include "trainer/models/registry.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class TileEarlyJoin : public RankingModel {
 public:
  TileEarlyJoin(int64_t num_node_feat, const ModelOptions& opts)
      : encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        config_in(register_module("config_in", torch::nn::Linear(kTileConfigDim, opts.hidden))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        blocks(make_sage_blocks(*this, opts)),
        readout(register_module("readout", Readout(opts))) {}

  torch::Tensor forward(const Batch& batch) override {
    const auto base = encoder(batch.node_feat, batch.node_opcode);                       // N x H
    const auto cfg = config_out(F::gelu(config_in(signed_log1p(batch.config_feat))));  // G x S x H
    const auto slot = cfg.transpose(0, 1);                                               // S x G x H
    if (blocks.empty()) return readout(base.unsqueeze(0) + slot.index_select(1, batch.node_graph), batch);
    // The first block takes node and slot terms apart (the config only adds a per-graph
    // term to every node), the others the full S x N x H states.
    const BatchGraph graph(batch);
    auto x = blocks[0]->forward_split(base, slot, graph);
    for (size_t i = 1; i < blocks.size(); ++i) x = blocks[i]->forward(x, graph);
    return readout(x, batch);
  }

  NodeEncoder encoder{nullptr};
  torch::nn::Linear config_in{nullptr}, config_out{nullptr};
  std::vector<SageBlock> blocks;
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_tile_early_join(const ModelSpec& spec) {
  return std::make_shared<TileEarlyJoin>(spec.num_node_feat, spec.options);
}

}  // namespace tpuperf
