// What the sampler's cost model charges for a graph and a batch (trainer/fit/sampler.h):
// a rank's step runs its graphs in batches padded to their widest slate, so a batch costs
// a fixed overhead plus widest slate x the summed work of its graphs. Fitted on traced
// tile steps; the constants live here, with their measurements.
#pragma once

#include <cstdint>

#include "trainer/models/model_spec.h"

namespace tpuperf {

// A graph's work per slate slot: its nodes plus this (a per-config term fitted to ~0 on
// traced tile steps; +1 keeps every cost >= 1, as the sampler needs).
constexpr int64_t kConfigWorkInNodes = 1;
inline int64_t graph_work(int64_t num_nodes) { return num_nodes + kConfigWorkInNodes; }

// The calibration point of batch_overhead_in_node_slots: a batch's fixed cost at hidden
// 32 with 2 layers, in node slots.
constexpr int64_t kCalibratedBatchOverhead = 2000;
constexpr int64_t kCalibratedModelSize = 2 * 32 * 32;  // layers x hidden^2

// The sampler's batch_overhead (SamplerOptions) for a model of this size: a batch's fixed
// cost (its passes' overhead) in the unit of graph work x slate slot, i.e. node slots. The
// fixed part barely grows with the model, a slot's cost grows about as layers x hidden^2:
// 2000 at hidden 32 with 2 layers, 333 at hidden 64 with 3.
int64_t batch_overhead_in_node_slots(const ModelOptions& model);

}  // namespace tpuperf
