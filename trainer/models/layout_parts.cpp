#include "trainer/models/layout_parts.h"

#include "common/graph/processed_graph.h"
#include "trainer/kernels/fused_ops.h"

namespace tpuperf {

torch::nn::EmbeddingBag make_layout_value_table(int64_t hidden) {
  return torch::nn::EmbeddingBag(
      torch::nn::EmbeddingBagOptions(kLayoutConfigDim * kLayoutLevels, hidden).mode(torch::kSum));
}

torch::Tensor embed_layout_values(torch::nn::EmbeddingBag& table, const Batch& batch, bool fused) {
  const auto values = batch.config_values.flatten(0, 1);  // (S * M) x 18
  return fused ? embedding_sum(table->weight, values) : table(values);
}

torch::Tensor add_configs_per_slot(const torch::Tensor& base, const Batch& batch,
                                   const std::function<torch::Tensor()>& config_term) {
  const int64_t S = batch.slate, M = batch.config_node.size(0), N = base.size(0), H = base.size(1);
  const auto copies = base.unsqueeze(0).expand({S, N, H});
  // The SAGE blocks' kernels read rows in place: index_add writes a new tensor, and
  // without configurable nodes the expanded view is made contiguous instead.
  if (M == 0) return copies.contiguous();
  return copies.index_add(1, batch.config_node, config_term().view({S, M, H}));
}

torch::Tensor sage_blocks_over_configs(std::vector<SageBlock>& blocks, const torch::Tensor& base,
                                       const Batch& batch, const BatchGraph& graph,
                                       const std::function<torch::Tensor()>& config_term,
                                       torch::Tensor* base_linear) {
  const int64_t S = batch.slate, M = batch.config_node.size(0), H = base.size(1);
  if (base_linear) *base_linear = torch::Tensor();  // set only by the fused first block below
  const bool split = M > 0 && !blocks.empty();  // else the blocks all take the summed states
  auto x = split ? blocks.front()->forward_configs(base, config_term().view({S, M, H}), batch.config_node, graph,
                                                    base_linear)
                 : add_configs_per_slot(base, batch, config_term);
  for (size_t i = split ? 1 : 0; i < blocks.size(); ++i) x = blocks[i]->forward(x, graph);
  return x;
}

}  // namespace tpuperf
