// What a model is: its kind, its architecture's registry name and its options. Training
// builds it from the config (model.<kind>.*); a checkpoint records it, and loading a
// checkpoint builds the model it records, whatever the current config says.
#pragma once

#include <cstdint>
#include <string>

#include "common/graph/collection.h"
#include "common/config/config.h"

namespace tpuperf {

struct ModelOptions {
  int64_t hidden = 64;  // H
  int64_t layers = 3;   // SAGE residual blocks
  double dropout = 0.1;
  int64_t opcode_dim = 32;      // opcode embedding width
  int64_t attention_heads = 4;  // cross-config attention; 0 turns it off; divides hidden
  // Run the hot path in the fused CPU kernels (trainer/kernels/) or in plain LibTorch ops
  // (the models' readable definition). Not part of the architecture: both give the same
  // scores and gradients up to float rounding, and a checkpoint of one loads into the other.
  bool fused = true;
};

struct ModelSpec {
  Kind kind = Kind::Tile;
  std::string arch;            // a name in the model registry (trainer/models/registry.h)
  int64_t num_node_feat = 0;   // columns of the transformed node features
  ModelOptions options;
};

// The spec the config's model.<kind>.* keys and model.fused describe (num_node_feat 0: the
// data sets it); a collection's, when cfg is its Config::for_collection. The one reader of
// those keys: training builds its models from it, and the ranker falls back to it for
// checkpoints that predate recording their spec.
ModelSpec configured_model_spec(const Config& cfg, Kind kind);

}  // namespace tpuperf
