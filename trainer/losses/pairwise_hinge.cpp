#include "trainer/losses/ranking_losses.h"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpuperf {

namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The hinge loss of pairwise_hinge_loss_reference and its gradient in one pass over each
// graph's S x S pairs (the reference is ~17 LibTorch ops forward and as many backward on a
// G x S x S tensor, each a few microseconds of dispatch for a few thousand pairs). Sums run
// in double; the gradient is computed in forward (it costs no more than the loss) and
// scaled by the output's gradient in backward. A pair exactly at the margin has gradient
// 0, as relu's.
struct PairwiseHinge : torch::autograd::Function<PairwiseHinge> {
  static Tensor forward(AutogradContext* ctx, const Tensor& scores_in, const Tensor& target_in,
                        const Tensor& mask_in, double margin) {
    const auto scores = scores_in.contiguous();
    const auto target = target_in.to(torch::kDouble).contiguous();  // exact for float and double
    const auto mask = mask_in.to(torch::kBool).contiguous();
    const int64_t G = scores.size(0), S = scores.size(1);
    auto grad = torch::zeros_like(scores);
    double total = 0;
    AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "pairwise_hinge_loss", [&] {
      total = hinge_and_gradient(scores.data_ptr<scalar_t>(), target.data_ptr<double>(),
                                 mask.data_ptr<bool>(), G, S, margin, grad.data_ptr<scalar_t>());
    });
    ctx->save_for_backward({grad});
    return torch::full({}, total, scores.options());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {ctx->get_saved_variables()[0] * grads[0], Tensor(), Tensor(), Tensor()};
  }

  // The loss; grad (zeroed, G x S) receives its gradient with respect to the scores.
  template <typename T>
  static double hinge_and_gradient(const T* s, const double* t, const bool* m, int64_t G, int64_t S,
                                   double margin, T* grad) {
    std::vector<double> per_graph(static_cast<size_t>(G), 0.0);
    std::vector<int64_t> pairs(static_cast<size_t>(G), 0);
    int64_t graphs = 0;
    for (int64_t g = 0; g < G; ++g) {
      const T* sg = s + g * S;
      const double* tg = t + g * S;
      const bool* mg = m + g * S;
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j)
          if (mg[i] && mg[j] && tg[i] < tg[j]) {
            ++pairs[g];
            per_graph[g] += std::max(0.0, margin - (double(sg[j]) - double(sg[i])));
          }
      graphs += pairs[g] > 0;
    }
    const double over = double(std::max<int64_t>(graphs, 1));
    double total = 0;
    for (int64_t g = 0; g < G; ++g) {
      if (pairs[g] == 0) continue;
      total += per_graph[g] / double(pairs[g]);
      const double w = 1.0 / (double(pairs[g]) * over);
      const T* sg = s + g * S;
      const double* tg = t + g * S;
      const bool* mg = m + g * S;
      T* gg = grad + g * S;
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j)
          if (mg[i] && mg[j] && tg[i] < tg[j] && margin - (double(sg[j]) - double(sg[i])) > 0) {
            gg[i] += T(w);
            gg[j] -= T(w);
          }
    }
    return total / over;
  }
};

}  // namespace

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
  TORCH_CHECK(scores.is_floating_point() && target.is_floating_point(),
              "pairwise_hinge_loss: scores and target must be floating point, got ", scores.scalar_type(), " and ",
              target.scalar_type());
  return PairwiseHinge::apply(scores, target, mask, margin);
}

torch::Tensor pairwise_hinge_loss_reference(const torch::Tensor& scores, const torch::Tensor& target,
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
