// Ranking losses over slates. Inputs are G x S: scores (lower = predicted faster, the
// project convention), targets (lower = faster: runtime or runtime / normalizer) and the
// mask of real slots. Both losses average over the graphs of the batch, so a batch's loss
// does not grow with its number of graphs.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/train/batch.h"

namespace tpuperf {

struct LossOptions {
  std::string name = "listmle";  // "listmle" or "hinge"
  double margin = 0.1;           // hinge only
};

// Per graph: mean over ordered pairs (i faster than j, both real; equal targets skipped)
// of max(0, margin - (score_j - score_i)); then the mean over graphs that have such a pair
// (0 when none does).
torch::Tensor pairwise_hinge_loss(const torch::Tensor& scores, const torch::Tensor& target,
                                  const torch::Tensor& mask, double margin);

// Plackett-Luce negative log-likelihood of the true order (fastest first; equal targets
// keep slot order) with utilities -score: per graph
//   sum_i [ logsumexp_{j >= i} (-s_pi(j)) + s_pi(i) ]  over real slots,
// then the mean over graphs.
torch::Tensor listmle_loss(const torch::Tensor& scores, const torch::Tensor& target,
                           const torch::Tensor& mask);

// The loss named in opts; throws Error on an unknown name.
torch::Tensor ranking_loss(const LossOptions& opts, const torch::Tensor& scores,
                           const torch::Tensor& target, const torch::Tensor& mask);
// How many graphs of a batch the loss named in opts averages over: every graph for
// ListMLE, those with at least one pair for hinge. Splitting graphs into batches and
// weighting each batch's loss by its count / the summed count gives their joint loss.
int64_t ranking_loss_graphs(const LossOptions& opts, const torch::Tensor& target,
                            const torch::Tensor& mask);
// The joint loss of graphs split into batches, i.e. the loss one batch of them all would
// have, times `scale`, backpropagated batch by batch (only one batch's activations are
// alive at a time): each batch's loss weighted by its ranking_loss_graphs share. Returns
// the joint loss (unscaled); 0 when no graph counts.
double backward_joint_loss(const LossOptions& opts, const std::vector<Batch>& batches,
                           const std::function<torch::Tensor(const Batch&)>& forward, double scale);
// Throws Error unless name is a known loss (for config validation before training).
void check_loss_name(const std::string& name);

}  // namespace tpuperf
