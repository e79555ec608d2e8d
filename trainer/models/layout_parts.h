// The pieces the layout models share. A layout configuration is per node: each
// configurable node of a graph gets 18 layout values (a minor-to-major order of up to 6
// dims for its output, input and kernel tensors; -1..5) per config. Both layout models
// embed those values per config and add them to the node's config-free state, on S copies
// of the graph (one per config slot of the slate).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "trainer/models/batch.h"
#include "trainer/models/blocks.h"

namespace tpuperf {

// The value table: one learned H-vector per (position, value) of the 18 layout values,
// summed over the positions. The same as a linear layer over the 18 x 7 one-hot encoding,
// without materializing it.
torch::nn::EmbeddingBag make_layout_value_table(int64_t hidden);

// The batch's layout values (S x M x 18, indices into the table) -> (S * M) x H: per slot
// and configurable node, the sum of the table rows its values pick. fused = false: the
// EmbeddingBag itself; fused = true: the one-hot rows times the table, the same sum whose
// backward is one dense matmul, where EmbeddingBag's sorts and scatters (20-40% of a
// layout step in tests/bench/RESULTS.md's profile).
torch::Tensor embed_layout_values(torch::nn::EmbeddingBag& table, const Batch& batch, bool fused);

// S x N x H: S copies of the config-free node states base (N x H), one per config slot,
// with each slot's config term added at the batch's configurable nodes. config_term gives
// those terms, (S * M) x H, slot-major; it is called only when the batch has configurable
// nodes.
torch::Tensor add_configs_per_slot(const torch::Tensor& base, const Batch& batch,
                                   const std::function<torch::Tensor()>& config_term);

// The SAGE blocks over add_configs_per_slot(base, batch, config_term): steps 2 and 3 of
// both layout models. The first block takes base and the config terms apart
// (SageBlock::forward_configs: on the fused path N + S x M rows through its weight instead
// of S x N); the same function of its input either way. base_linear: as forward_configs'.
torch::Tensor sage_blocks_over_configs(std::vector<SageBlock>& blocks, const torch::Tensor& base,
                                       const Batch& batch, const BatchGraph& graph,
                                       const std::function<torch::Tensor()>& config_term,
                                       torch::Tensor* base_linear = nullptr);

}  // namespace tpuperf
