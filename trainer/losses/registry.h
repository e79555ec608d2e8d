// The ranking losses by name (train.tile_loss, train.layout_loss). Adding a loss is its
// definition (e.g. a new file beside listmle.cpp, declared in ranking_losses.h) plus one
// entry in registry.cpp's table; the config schema's allowed values come from the table
// (register_loss_choices).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/models/batch.h"

namespace tpuperf {

class Config;

struct LossOptions {
  std::string name = "listmle";
  double margin = 0.1;  // train.hinge_margin: losses with a margin
  double temperature = 0.1;  // train.softmax_temperature: softmax_top
  // model.fused: a loss with a fused path (hinge) takes it; otherwise its plain LibTorch
  // definition, so that model.fused=false trains with plain definitions end to end.
  bool fused = true;
};

struct LossKind {
  std::string name;
  std::string summary;  // one line, for --help-config
  // The batch's loss: G x S scores, targets and mask -> a scalar.
  std::function<torch::Tensor(const LossOptions&, const torch::Tensor& scores, const torch::Tensor& target,
                              const torch::Tensor& mask)>
      loss;
  // How many graphs of a batch the loss averages over (e.g. only those with a pair).
  std::function<int64_t(const torch::Tensor& target, const torch::Tensor& mask)> graphs;
};

const std::vector<LossKind>& loss_kinds();
std::vector<std::string> loss_names();
// Throws Error naming the unknown loss, the known ones and the config key it came from.
const LossKind& find_loss(const std::string& name, const std::string& key = "");
// The loss a config names at `key` (train.tile_loss or train.layout_loss), with its
// train.hinge_margin and model.fused; throws as find_loss for an unknown name.
LossOptions configured_loss(const Config& cfg, const std::string& key);
// Makes the config schema's train.tile_loss and train.layout_loss accept exactly the
// registered names. Idempotent.
void register_loss_choices();

// The loss named in opts.
torch::Tensor ranking_loss(const LossOptions& opts, const torch::Tensor& scores, const torch::Tensor& target,
                           const torch::Tensor& mask);
// How many graphs of a batch the loss named in opts averages over. Splitting graphs into
// batches and weighting each batch's loss by its count / the summed count gives their
// joint loss.
int64_t ranking_loss_graphs(const LossOptions& opts, const torch::Tensor& target, const torch::Tensor& mask);
// The joint loss of graphs split into batches, i.e. the loss one batch of them all would
// have, times `scale`, backpropagated batch by batch (only one batch's activations are
// alive at a time): each batch's loss weighted by its ranking_loss_graphs share. Returns
// the joint loss (unscaled); 0 when no graph counts.
double backward_joint_loss(const LossOptions& opts, const std::vector<Batch>& batches,
                           const std::function<torch::Tensor(const Batch&)>& forward, double scale);

}  // namespace tpuperf
