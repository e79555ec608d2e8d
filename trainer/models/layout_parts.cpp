#include "trainer/models/layout_parts.h"

#include "common/graph/processed_graph.h"

namespace tpuperf {

torch::nn::EmbeddingBag make_layout_value_table(int64_t hidden) {
  return torch::nn::EmbeddingBag(
      torch::nn::EmbeddingBagOptions(kLayoutConfigDim * kLayoutLevels, hidden).mode(torch::kSum));
}

torch::Tensor embed_layout_values(torch::nn::EmbeddingBag& table, const torch::Tensor& values, bool fused) {
  if (!fused) return table(values);
  const auto& weight = table->weight;
  // Each row's 18 indices are distinct (one per position), so a scatter of ones is exact.
  const auto one_hot = torch::zeros({values.size(0), weight.size(0)}, weight.options()).scatter_(1, values, 1.0);
  return one_hot.matmul(weight);
}

torch::Tensor add_configs_per_slot(const torch::Tensor& base, const torch::Tensor& cfg, const Batch& batch) {
  const auto copies = base.unsqueeze(0).expand({cfg.size(0), base.size(0), base.size(1)});
  // index_add writes a new tensor; without configurable nodes the expanded view is made
  // contiguous instead (the SAGE blocks' kernels read rows in place).
  if (cfg.size(1) == 0) return copies.contiguous();
  return copies.index_add(1, batch.config_node, cfg);
}

}  // namespace tpuperf
