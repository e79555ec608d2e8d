// The program families the layout collections hold, each built into a Net
// (program_builder.h) together with its reduction computations and its root tuple.
// Internal to the layout generator (layout_gen.cpp picks the family by the model's arch).
#pragma once

#include <cstdint>

#include "pipeline/synth/models.h"
#include "pipeline/synth/program_builder.h"
#include "pipeline/synth/rng.h"

namespace tpuperf::synth {

// "xla": a convolution network of the model's arch (convnets.cpp), forward blocks until
// target_nodes or the configurable-node budget is used, then the head and, when training,
// the backward pass and weight updates.
void build_convnet(Net& net, const ModelSpec& m, int64_t target_nodes, Rng& rng);

// "nlp": a transformer encoder of the model's layers (transformers.cpp), plus the backward
// pass and weight updates when training.
void build_transformer(Net& net, const ModelSpec& m);

}  // namespace tpuperf::synth
