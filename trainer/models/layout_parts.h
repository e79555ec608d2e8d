// The pieces the layout models share. A layout configuration is per node: each
// configurable node of a graph gets 18 layout values (a minor-to-major order of up to 6
// dims for its output, input and kernel tensors; -1..5) per config. Both layout models
// embed those values per config and add them to the node's config-free state, on S copies
// of the graph (one per config slot of the slate).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "trainer/models/batch.h"

namespace tpuperf {

// The value table: one learned H-vector per (position, value) of the 18 layout values,
// summed over the positions. The same as a linear layer over the 18 x 7 one-hot encoding,
// without materializing it.
torch::nn::EmbeddingBag make_layout_value_table(int64_t hidden);

// values (R x 18, indices into the table) -> R x H: per row, the sum of the table rows its
// values pick. fused = false: the EmbeddingBag itself; fused = true: the one-hot rows
// times the table, the same sum whose backward is one dense matmul, where EmbeddingBag's
// sorts and scatters (20-40% of a layout step in tests/bench/RESULTS.md's profile).
torch::Tensor embed_layout_values(torch::nn::EmbeddingBag& table, const torch::Tensor& values, bool fused);

// S copies of the config-free node states base (N x H), with each slot's per-node config
// term cfg (S x M x H) added at the batch's configurable nodes: S x N x H.
torch::Tensor add_configs_per_slot(const torch::Tensor& base, const torch::Tensor& cfg, const Batch& batch);

}  // namespace tpuperf
