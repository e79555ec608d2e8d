// Per-fold checkpoints: model, optimizer, progress and the feature transform the model
// was trained with (prediction on new data must apply exactly that transform). Written to
// a temporary file and renamed, so a run killed while saving keeps the previous one.
//
// Randomness needs no saved state: the sampler is a pure function of (seed, fold, epoch,
// step) and LibTorch's generator (dropout) is re-seeded at the start of every epoch from
// (seed, collection, fold, epoch, rank), so resuming at an epoch boundary replays exactly.
#pragma once

#include <torch/torch.h>

#include <limits>
#include <string>

#include "common/feature_transform.h"

namespace tpuperf {

struct CheckpointMeta {
  int64_t epochs_done = 0;  // completed epochs
  int64_t step = 0;         // optimizer steps taken
  double best_score = -std::numeric_limits<double>::infinity();
  int64_t best_epoch = -1;
  int64_t num_node_feat = 0;
};

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const FeatureTransform& transform);

// Loads into an already constructed model (and optimizer when given). Throws Error
// naming the file when it is unreadable or does not match the model.
CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer, FeatureTransform* transform);

// Only the metadata and transform (to construct the right model before loading it).
CheckpointMeta peek_checkpoint(const std::string& path, FeatureTransform* transform);

}  // namespace tpuperf
