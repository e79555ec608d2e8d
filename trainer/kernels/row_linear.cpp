// row_linear: a linear layer, y = x W^T + b, over the rows of x.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_path.h"

namespace tpuperf {

namespace kernels {

const VectorPath* row_linear_path(const Tensor& x, const Tensor& weight, bool x_grad) {
  const VectorPath* path = vector_path();
  const int64_t M = weight.size(0), K = weight.size(1);
  if (!path || x.scalar_type() != torch::kFloat || weight.scalar_type() != torch::kFloat) return nullptr;
  return M % 64 == 0 && (!x_grad || K % 64 == 0) ? path : nullptr;
}

namespace {

// x (rows x K) through the vector path's forward, rows split into tasks.
Tensor forward_rows(const VectorPath& path, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t rows = x.size(0), K = x.size(1), M = weight.size(0);
  const auto wt = weight.t().contiguous();  // K x M
  const auto b = bias.defined() ? bias.contiguous() : Tensor();
  auto y = torch::empty({rows, M}, x.options());
  const float *xp = x.data_ptr<float>(), *wp = wt.data_ptr<float>(), *bp = b.defined() ? b.data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, rows, kGrain, [&](int64_t r0, int64_t r1) { path.linear_forward(K, M, xp, r0, r1, wp, bp, yp); });
  return y;
}

// The vector path's backward over a fixed split of the rows (at most kWeightGradientParts
// parts, each writing its own partial weight and bias gradients, added in order): the
// result does not depend on the number of threads.
std::tuple<Tensor, Tensor, Tensor> backward_rows(const VectorPath& path, const Tensor& g, const Tensor& x,
                                                 const Tensor& weight, bool x_grad) {
  const int64_t rows = x.size(0), K = x.size(1), M = weight.size(0);
  const RowParts parts = row_parts(rows, kWeightGradientParts);
  const auto w = weight.contiguous();
  auto grad_x = x_grad ? torch::empty_like(x) : Tensor();
  auto gwt = torch::empty({parts.count, K, M}, g.options());
  auto gb = torch::empty({parts.count, M}, g.options().dtype(torch::kDouble));  // long sums: double
  const float *gp = g.data_ptr<float>(), *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
  float *gxp = x_grad ? grad_x.data_ptr<float>() : nullptr, *gwp = gwt.data_ptr<float>();
  double* gbp = gb.data_ptr<double>();
  for_each_part(parts, rows, [&](int64_t p, int64_t r0, int64_t r1) {
    path.linear_backward(K, M, xp, gp, r0, r1, wp, gxp, gwp + p * K * M, gbp + p * M);
  });
  return {grad_x, gwt.sum(0).t(), gb.sum(0).to(g.scalar_type())};
}

// No bias is an empty bias_in (LibTorch 1.13's Function::apply takes no undefined inputs).
struct RowLinear : torch::autograd::Function<RowLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& weight, const Tensor& bias_in) {
    const int64_t K = weight.size(1), M = weight.size(0);
    const auto bias = bias_in.numel() > 0 ? bias_in : Tensor();
    const auto x = x_in.contiguous().view({-1, K});
    const bool x_grad = x_in.requires_grad();
    const VectorPath* path = row_linear_path(x, weight, x_grad);
    Tensor y;
    if (path)
      y = forward_rows(*path, x, weight, bias);
    else
      y = bias.defined() ? torch::addmm(bias, x, weight.t()) : torch::mm(x, weight.t());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["vector"] = path != nullptr;
    ctx->saved_data["x_grad"] = x_grad;
    ctx->saved_data["bias"] = bias.defined();
    auto sizes = x_in.sizes().vec();
    sizes.back() = M;
    return y.view(sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1];
    const bool x_grad = ctx->saved_data["x_grad"].toBool(), has_bias = ctx->saved_data["bias"].toBool();
    const int64_t M = weight.size(0);
    const auto g = grads[0].contiguous().view({-1, M});
    Tensor grad_x, grad_w, grad_b;
    if (ctx->saved_data["vector"].toBool()) {
      const VectorPath* path = vector_path();
      TORCH_CHECK(path, "row_linear: the vector path was turned off between forward and backward");
      std::tie(grad_x, grad_w, grad_b) = backward_rows(*path, g, x, weight, x_grad);
    } else {
      if (x_grad) grad_x = g.mm(weight);
      grad_w = g.t().mm(x);
      grad_b = g.sum(0);
    }
    if (grad_x.defined()) {
      auto sizes = grads[0].sizes().vec();
      sizes.back() = x.size(1);
      grad_x = grad_x.view(sizes);
    }
    return {grad_x, grad_w, has_bias ? grad_b : Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor row_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  check_states(x, -1, "row_linear: x");
  TORCH_CHECK(weight.dim() == 2 && x.size(-1) == weight.size(1), "row_linear: weight ", weight.sizes(),
              " does not fit inputs ", x.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "row_linear: bias ",
              bias.sizes(), " does not fit weight ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type() && (!bias.defined() || bias.scalar_type() == x.scalar_type()),
              "row_linear: weight, bias and inputs differ in type");
  return RowLinear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, x.options()));
}

}  // namespace tpuperf
