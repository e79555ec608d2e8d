#include <limits>

#include "trainer/losses/ranking_losses.h"

namespace tpuperf {

torch::Tensor listmle_loss(const torch::Tensor& scores, const torch::Tensor& target, const torch::Tensor& mask) {
  check_loss_shapes(scores, target, mask);
  // Padding sorts last so that it never stands in the denominators of real slots.
  const auto keyed = target.masked_fill(mask.logical_not(), std::numeric_limits<double>::infinity());
  // The explicit optional picks the stable overload, not sort(self, dim, descending).
  const auto order = std::get<1>(torch::sort(keyed, c10::optional<bool>(true), /*dim=*/1, /*descending=*/false));
  const auto real = mask.gather(1, order);
  // A large finite value instead of -inf keeps every gradient finite; exp() of it is 0.
  const auto utility = (-scores).gather(1, order).masked_fill(real.logical_not(), -1e9);
  const auto tail_lse = torch::logcumsumexp(utility.flip(1), 1).flip(1);
  return ((tail_lse - utility) * real).sum(1).mean();
}

}  // namespace tpuperf
