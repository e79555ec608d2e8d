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
#include <vector>

#include "common/graph/feature_transform.h"
#include "trainer/models/model_spec.h"

namespace tpuperf {

struct CheckpointMeta {
  int64_t epochs_done = 0;  // completed epochs
  int64_t step = 0;         // optimizer steps taken
  double best_score = -std::numeric_limits<double>::infinity();
  int64_t best_epoch = -1;
  // The model's architecture, options and input width (model.fused is recorded but not
  // binding: either path loads any checkpoint). Checkpoints written before architectures
  // were recorded hold only num_node_feat: their model.arch reads back empty.
  ModelSpec model;
};

// The model's parameters are what prediction uses. With weight averaging (train.ema_decay)
// the model holds the average, and training_weights the weights training steps (for
// --resume), in the order of model.parameters().
void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const FeatureTransform& transform,
                     const std::vector<torch::Tensor>* training_weights = nullptr);

// Loads into an already constructed model (and optimizer when given). Throws Error
// naming the file when it is unreadable or does not match the model. training_weights,
// when given, receives the saved training weights (empty: the checkpoint has none).
CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer, FeatureTransform* transform,
                               std::vector<torch::Tensor>* training_weights = nullptr);

// Only the metadata and transform (to construct the right model before loading it, e.g.
// make_model(meta.model)).
CheckpointMeta peek_checkpoint(const std::string& path, FeatureTransform* transform);

class RankingModel;

// The model a checkpoint holds, built as it records (fallback's architecture and options
// for a checkpoint that records none; its input width always comes from the checkpoint)
// and loaded, in evaluation mode. `fused` picks the path (not part of the architecture).
// Fills the transform and meta when given. Throws Error naming the file.
std::shared_ptr<RankingModel> load_trained_model(const std::string& path, const ModelSpec& fallback, bool fused,
                                                 FeatureTransform* transform, CheckpointMeta* meta = nullptr);

}  // namespace tpuperf
