#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

torch::Tensor pairwise_gap_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask) {
  check_loss_shapes(scores, target, mask);
  const auto type = scores.scalar_type();
  // Padding's target may be 0: its pairs are masked out, the clamp only keeps log finite.
  const auto log_t = target.clamp_min(1e-300).log();
  const auto valid = ordered_pairs(target, mask);
  // [g, i, j] for i faster than j: log(t_j / t_i), the weight of "score i below score j".
  const auto weight = ((log_t.unsqueeze(1) - log_t.unsqueeze(2)) * valid).to(type);
  const auto wrong = torch::softplus(scores.unsqueeze(2) - scores.unsqueeze(1));  // log(1 + e^(s_i - s_j))
  // Per graph the mean over all pairs of real slots, n (n - 1) / 2, so that a slate of
  // near-ties weighs little in all, instead of being rescaled to a full-size loss.
  const auto real = mask.sum(1).to(type);
  const auto pairs = (real * (real - 1) / 2).clamp_min(1);
  const auto has_pairs = valid.any(2).any(1).to(type);
  const auto per_graph = (weight * wrong).sum({1, 2}) / pairs;
  return (per_graph * has_pairs).sum() / has_pairs.sum().clamp_min(1);
}

}  // namespace tpuperf
