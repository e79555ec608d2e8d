#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

namespace {

// Per graph, the mean of x over its real slots (G x 1).
torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& real, const torch::Tensor& count) {
  return (x * real).sum(1, /*keepdim=*/true) / count;
}

}  // namespace

torch::Tensor log_mse_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask) {
  check_loss_shapes(scores, target, mask);
  const auto type = scores.scalar_type();
  // z in the targets' precision (double): near-tied runtimes differ by 1e-6 relative or
  // less, about float's spacing at a log runtime of ~14; only z becomes `type`.
  const auto real_t = mask.to(target.scalar_type());
  const auto count_t = real_t.sum(1, /*keepdim=*/true).clamp_min(1);
  // Padding's target may be 0: it is masked out, the clamp only keeps log finite.
  const auto log_t = target.clamp_min(1e-300).log();
  const auto centred = (log_t - masked_mean(log_t, real_t, count_t)) * real_t;
  const auto sd = masked_mean(centred * centred, real_t, count_t).sqrt();
  // A slate of exact ties has sd 0: its target is all zeros (no order), not 0 / 0.
  const auto z = (centred / torch::where(sd > 0, sd, torch::ones_like(sd))).to(type);
  const auto real = real_t.to(type), count = count_t.to(type);
  const auto predicted = (scores - masked_mean(scores, real, count)) * real;
  const auto per_graph = masked_mean((predicted - z).square(), real, count).squeeze(1);
  const auto counted = (count.squeeze(1) >= 2).to(type);
  return (per_graph * counted).sum() / counted.sum().clamp_min(1);
}

}  // namespace tpuperf
