#include "trainer/losses/losses.h"

#include <limits>

#include "common/error.h"

namespace tpuperf {

namespace {

void check_shapes(const torch::Tensor& scores, const torch::Tensor& target,
                  const torch::Tensor& mask) {
  TORCH_CHECK(
      scores.dim() == 2 && scores.sizes() == target.sizes() && scores.sizes() == mask.sizes(),
      "ranking losses expect G x S scores, target and mask; got ", scores.sizes(), ", ",
      target.sizes(), ", ", mask.sizes());
}

// [g, i, j]: slot i is truly faster than slot j, both real.
torch::Tensor valid_pairs(const torch::Tensor& target, const torch::Tensor& mask) {
  return (target.unsqueeze(2) < target.unsqueeze(1)) & mask.unsqueeze(2) & mask.unsqueeze(1);
}

}  // namespace

torch::Tensor pairwise_hinge_loss(const torch::Tensor& scores, const torch::Tensor& target,
                                  const torch::Tensor& mask, double margin) {
  check_shapes(scores, target, mask);
  const auto valid = valid_pairs(target, mask);
  const auto gap = scores.unsqueeze(1) - scores.unsqueeze(2);  // s_j - s_i
  const auto losses = torch::relu(margin - gap) * valid;
  const auto pairs = valid.sum({1, 2}).to(scores.scalar_type());
  const auto has_pairs = (pairs > 0).to(scores.scalar_type());
  const auto per_graph = losses.sum({1, 2}) / pairs.clamp_min(1);
  // clamp_min keeps graphs without pairs out of the mean without dividing by zero.
  return (per_graph * has_pairs).sum() / has_pairs.sum().clamp_min(1);
}

torch::Tensor listmle_loss(const torch::Tensor& scores, const torch::Tensor& target,
                           const torch::Tensor& mask) {
  check_shapes(scores, target, mask);
  // Padding sorts last so that it never stands in the denominators of real slots.
  const auto keyed =
      target.masked_fill(mask.logical_not(), std::numeric_limits<double>::infinity());
  // The explicit optional picks the stable overload, not sort(self, dim, descending).
  const auto order =
      std::get<1>(torch::sort(keyed, c10::optional<bool>(true), /*dim=*/1, /*descending=*/false));
  const auto real = mask.gather(1, order);
  // A large finite value instead of -inf keeps every gradient finite; exp() of it is 0.
  const auto utility = (-scores).gather(1, order).masked_fill(real.logical_not(), -1e9);
  const auto tail_lse = torch::logcumsumexp(utility.flip(1), 1).flip(1);
  return ((tail_lse - utility) * real).sum(1).mean();
}

void check_loss_name(const std::string& name) {
  if (name != "listmle" && name != "hinge")
    throw Error("unknown loss '" + name + "' (known: listmle, hinge)", "", "loss");
}

int64_t ranking_loss_graphs(const LossOptions& opts, const torch::Tensor& target,
                            const torch::Tensor& mask) {
  check_loss_name(opts.name);
  if (opts.name == "hinge") return valid_pairs(target, mask).any(2).any(1).sum().item<int64_t>();
  return target.size(0);
}

double backward_joint_loss(const LossOptions& opts, const std::vector<Batch>& batches,
                           const std::function<torch::Tensor(const Batch&)>& forward, double scale) {
  std::vector<int64_t> counted;
  int64_t all = 0;
  for (const Batch& b : batches) all += counted.emplace_back(ranking_loss_graphs(opts, b.target, b.config_mask));
  double joint = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (counted[i] == 0) continue;  // e.g. hinge on slates without a pair: no loss, no gradient
    const double share = static_cast<double>(counted[i]) / static_cast<double>(all);
    const torch::Tensor loss = ranking_loss(opts, forward(batches[i]), batches[i].target, batches[i].config_mask);
    (loss * (share * scale)).backward();
    joint += loss.item<double>() * share;
  }
  return joint;
}

torch::Tensor ranking_loss(const LossOptions& opts, const torch::Tensor& scores,
                           const torch::Tensor& target, const torch::Tensor& mask) {
  check_loss_name(opts.name);
  if (opts.name == "hinge") return pairwise_hinge_loss(scores, target, mask, opts.margin);
  return listmle_loss(scores, target, mask);
}

}  // namespace tpuperf
