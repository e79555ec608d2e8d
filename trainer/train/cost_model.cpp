#include "trainer/train/cost_model.h"

#include <algorithm>

namespace tpuperf {

int64_t batch_overhead_in_node_slots(const ModelOptions& model) {
  // Calibrated at hidden 32, 2 layers on 780 traced tile steps (small tree, 1 thread, AMD
  // EPYC): a batch's forward and backward took 0.76 ms + 0.0004 ms per node slot, ~2000
  // slots. A slot's cost grows about as layers x hidden^2 (the SAGE matmuls): 0.47, 1.67,
  // 2.95 and 9.0 us at hidden/layers 32/2, 64/2, 64/3 and 128/3 (forward, backward and
  // step, 1 thread), while a batch's own part stays 0.6-0.9 ms; so the overhead in slots
  // shrinks by that factor. With 2000 kept at 64/3 (the schema's default model) the
  // sampler padded narrow slates into wide batches instead of giving them their own; 333
  // there took 4-epoch tile runs (small tree) from 6526-6755 to 6739-7133 configs/s on 1
  // rank and from 11173-11606 to 12341-12965 on 2. Measured on tile only: layout slates
  // are rarely narrower than train.layout_slate, so layout steps stay one batch anyway.
  const int64_t size = std::max<int64_t>(model.layers, 1) * model.hidden * model.hidden;
  return kCalibratedBatchOverhead * kCalibratedModelSize / std::max<int64_t>(size, 1);
}

}  // namespace tpuperf
