#include <limits>

#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

torch::Tensor softmax_top_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask,
                               double temperature) {
  check_loss_shapes(scores, target, mask);
  TORCH_CHECK(temperature > 0, "softmax_top_loss: temperature must be positive, got ", temperature);
  const auto type = scores.scalar_type();
  const auto padding = mask.logical_not();
  // The target distribution in the targets' precision: near-ties differ by ~1e-6 relative.
  // Padding's target may be 0: it is masked out, the clamp only keeps log finite.
  const auto log_t = target.clamp_min(1e-300).log().masked_fill(padding, 0.0);
  // Relative to the slate's fastest real config (0 there, positive elsewhere), so that the
  // weights exp(-gap / T) do not underflow together.
  const auto fastest = log_t.masked_fill(padding, std::numeric_limits<double>::infinity()).amin(1, true);
  const auto gap = (log_t - fastest.masked_fill(fastest.isinf(), 0.0)) / temperature;
  // A large finite value instead of inf keeps every gradient finite; exp() of it is 0. log p
  // comes from log_softmax (finite on padding, where p is 0), not from log(p), which is
  // -inf where p underflows (in float: 0 x -inf would be NaN).
  const auto log_p_t = torch::log_softmax((-gap).masked_fill(padding, -1e9), 1);
  const auto p = log_p_t.exp().to(type), log_p = log_p_t.to(type);
  const auto log_q = torch::log_softmax((-scores).masked_fill(padding, -1e9), 1);
  // KL(p || q): 0 when the predicted distribution is the target's.
  const auto per_graph = (p * (log_p - log_q) * mask.to(type)).sum(1);
  const auto counted = (mask.sum(1) >= 2).to(type);
  return (per_graph * counted).sum() / counted.sum().clamp_min(1);
}

}  // namespace tpuperf
