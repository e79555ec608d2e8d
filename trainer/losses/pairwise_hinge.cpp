#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

void check_loss_shapes(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask) {
  TORCH_CHECK(scores.dim() == 2 && scores.sizes() == target.sizes() && scores.sizes() == mask.sizes(),
              "ranking losses expect G x S scores, target and mask; got ", scores.sizes(), ", ", target.sizes(),
              ", ", mask.sizes());
}

torch::Tensor ordered_pairs(const torch::Tensor& target, const torch::Tensor& mask) {
  return (target.unsqueeze(2) < target.unsqueeze(1)) & mask.unsqueeze(2) & mask.unsqueeze(1);
}

torch::Tensor pairwise_hinge_loss(const torch::Tensor& scores, const torch::Tensor& target,
                                  const torch::Tensor& mask, double margin) {
  check_loss_shapes(scores, target, mask);
  const auto valid = ordered_pairs(target, mask);
  const auto gap = scores.unsqueeze(1) - scores.unsqueeze(2);  // s_j - s_i
  const auto losses = torch::relu(margin - gap) * valid;
  const auto pairs = valid.sum({1, 2}).to(scores.scalar_type());
  const auto has_pairs = (pairs > 0).to(scores.scalar_type());
  const auto per_graph = losses.sum({1, 2}) / pairs.clamp_min(1);
  // clamp_min keeps graphs without pairs out of the mean without dividing by zero.
  return (per_graph * has_pairs).sum() / has_pairs.sum().clamp_min(1);
}

}  // namespace tpuperf
