#include "trainer/fit/optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tpuperf {

namespace {

// The AdamW state of p, created as AdamW::step creates it.
torch::optim::AdamWParamState& state_of(
    ska::flat_hash_map<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>& states,
    const torch::Tensor& p) {
  auto& slot = states[c10::guts::to_string(p.unsafeGetTensorImpl())];
  if (!slot) {
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    slot = std::move(state);
  }
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

// One parameter's update in the order of AdamW::step's tensor ops, each product and sum
// rounded on its own and every scalar rounded to float from its double value, as those ops
// do: decay, moments, then p += -lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps). The gradient
// enters times clip, as clip_grad_norm_ scales it. Measured against AdamW: equal bits on
// most steps, else a last-bit difference in a few values.
void update(float* p, const float* g, float* m, float* v, int64_t n, float decay, double beta1,
            double beta2, float step_size, double sqrt_bc2, float eps, float clip) {
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  const float one_minus_beta1 = static_cast<float>(1 - beta1), one_minus_beta2 = static_cast<float>(1 - beta2);
  const float root_bc2 = static_cast<float>(sqrt_bc2);
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * clip;
    const float pi = p[i] * decay;
    const float mi = m[i] * b1 + one_minus_beta1 * gi;
    const float vi = v[i] * b2 + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * mi / (std::sqrt(vi) / root_bc2 + eps);
  }
}

// The summed squares of the float gradients, accumulated in double (8 partial sums so that
// the loop is not one long dependency chain): one pass instead of clip_grad_norm_'s norm
// op per parameter, whose dispatch cost more than the arithmetic (0.12 of 0.18 ms per
// tile step). Within float rounding of clip_grad_norm_'s norm.
double sum_of_squares(const std::vector<torch::Tensor>& params) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (const auto& p : params) {
    const float* g = p.grad().data_ptr<float>();
    const int64_t n = p.grad().numel();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) part[k] += static_cast<double>(g[i + k]) * g[i + k];
    for (; i < n; ++i) part[0] += static_cast<double>(g[i]) * g[i];
  }
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

FusedAdamW::FusedAdamW(const std::vector<torch::Tensor>& params, const torch::optim::AdamWOptions& options)
    : torch::optim::AdamW(params, options) {}

bool FusedAdamW::fusable() const {
  for (const auto& group : param_groups_) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse() || p.scalar_type() != torch::kFloat || !p.is_contiguous() ||
          !p.grad().is_contiguous())
        return false;
    }
  }
  return true;
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  if (closure || !fusable()) return torch::optim::AdamW::step(closure);
  clip_and_step(0);
  return {};
}

double FusedAdamW::clip_and_step(double max_norm) {
  std::vector<torch::Tensor> with_grad;
  for (const auto& group : param_groups_)
    for (const auto& p : group.params())
      if (p.grad().defined()) with_grad.push_back(p);
  if (!fusable()) {
    const double norm = max_norm > 0 ? torch::nn::utils::clip_grad_norm_(with_grad, max_norm) : 0.0;
    torch::optim::AdamW::step();
    return norm;
  }
  torch::NoGradGuard no_grad;
  double norm = 0;
  float clip = 1.0f;
  if (max_norm > 0 && !with_grad.empty()) {
    norm = std::sqrt(sum_of_squares(with_grad));
    clip = static_cast<float>(std::min(1.0, max_norm / (norm + 1e-6)));
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(state_, p);
      // A loaded state must fit the parameter: the loop below indexes it as p's values.
      for (const torch::Tensor* t : {&state.exp_avg(), &state.exp_avg_sq()})
        TORCH_CHECK(t->numel() == p.numel() && t->scalar_type() == torch::kFloat && t->is_contiguous(),
                    "FusedAdamW: optimizer state of ", t->sizes(), " ", t->scalar_type(), " for a parameter of ",
                    p.sizes());
      state.step(state.step() + 1);
      const double bc1 = 1 - std::pow(beta1, state.step()), bc2 = 1 - std::pow(beta2, state.step());
      const float decay = o.weight_decay() != 0 ? static_cast<float>(1 - o.lr() * o.weight_decay()) : 1.0f;
      update(p.data_ptr<float>(), p.grad().data_ptr<float>(), state.exp_avg().data_ptr<float>(),
             state.exp_avg_sq().data_ptr<float>(), p.numel(), decay, beta1, beta2,
             static_cast<float>(o.lr() / bc1), std::sqrt(bc2), static_cast<float>(o.eps()),
             clip);
    }
  }
  return norm;
}

}  // namespace tpuperf
