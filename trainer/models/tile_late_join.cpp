// late_join, a second tile model: the official TpuGraphs baseline's shape. The graph is
// embedded once, without its configs (SAGE blocks on N x H, mean and max pooled per
// graph), and each config's features join only after pooling: score = MLP([graph
// embedding, config embedding]). S times less message passing than early_join, so it
// trains and ranks fast, but a config cannot change how nodes see each other.
#include "trainer/models/blocks.h"
#include "trainer/models/registry.h"

namespace tpuperf {

namespace F = torch::nn::functional;

namespace {

class TileLateJoin : public RankingModel {
 public:
  TileLateJoin(int64_t num_node_feat, const ModelOptions& opts)
      : fused(opts.fused),
        encoder(register_module("encoder", NodeEncoder(num_node_feat, opts))),
        blocks(make_sage_blocks(*this, opts)),
        graph_proj(register_module("graph_proj", torch::nn::Linear(2 * opts.hidden, opts.hidden))),
        config_in(register_module("config_in", torch::nn::Linear(kTileConfigDim, opts.hidden))),
        config_out(register_module("config_out", torch::nn::Linear(opts.hidden, opts.hidden))),
        readout(register_module("readout", Readout(opts))) {}

  torch::Tensor forward(const Batch& batch) override {
    const BatchGraph graph(batch);
    auto x = encoder(batch.node_feat, batch.node_opcode).unsqueeze(0);  // 1 x N x H
    for (auto& block : blocks) x = block->forward(x, graph);
    const auto g = apply_gelu(graph_proj(pool_mean_max(x, batch, fused).squeeze(0)), fused);  // G x H
    const auto cfg = config_out(apply_gelu(config_in(signed_log1p(batch.config_feat)), fused));  // G x S x H
    // The readout's input is the mean and max halves of a pooled embedding: here the
    // graph's and the config's.
    return readout->forward_pooled(torch::cat({g.unsqueeze(1).expand_as(cfg), cfg}, -1), batch);
  }

  bool fused;
  NodeEncoder encoder{nullptr};
  std::vector<SageBlock> blocks;
  torch::nn::Linear graph_proj{nullptr}, config_in{nullptr}, config_out{nullptr};
  Readout readout{nullptr};
};

}  // namespace

ModelPtr make_tile_late_join(const ModelSpec& spec) {
  return std::make_shared<TileLateJoin>(spec.num_node_feat, spec.options);
}

}  // namespace tpuperf
