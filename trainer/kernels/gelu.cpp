// fused_gelu: the erf GELU of the small layers around the SAGE blocks, in the vector code of
// the epilogue (the vector path's gelu).
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_path.h"

namespace tpuperf {

namespace kernels {
namespace {

constexpr int64_t kGeluBlock = 16;  // tasks hold whole blocks of the vector GELU

// out = gelu(z), or grad * gelu'(z) when grad is defined; z (and grad) contiguous float.
Tensor gelu_pass(const VectorPath& path, const Tensor& z, const Tensor& grad) {
  auto out = torch::empty_like(z);
  const float* zp = z.data_ptr<float>();
  const float* gp = grad.defined() ? grad.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
  const int64_t n = z.numel(), blocks = (n + kGeluBlock - 1) / kGeluBlock;
  at::parallel_for(0, blocks, kDropoutGrain / kGeluBlock, [&](int64_t b, int64_t e) {
    path.gelu(zp, gp, op, b * kGeluBlock, std::min(n, e * kGeluBlock));
  });
  return out;
}

// Float inputs take the vector pass (LibTorch's GELU and its backward took 4% of a tile
// default step on these G x S x H tensors, perf 2026-11-29); double, and CPUs without a
// vector path, take LibTorch's.
struct FusedGelu : torch::autograd::Function<FusedGelu> {
  static Tensor forward(AutogradContext* ctx, const Tensor& z_in) {
    const auto z = z_in.contiguous();
    ctx->save_for_backward({z});
    const VectorPath* path = vector_path();
    return path && z.scalar_type() == torch::kFloat ? gelu_pass(*path, z, Tensor()) : at::gelu(z);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto z = ctx->get_saved_variables()[0];
    const auto g = grads[0].contiguous();
    const VectorPath* path = vector_path();
    return {path && z.scalar_type() == torch::kFloat ? gelu_pass(*path, z, g) : at::gelu_backward(g, z)};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor fused_gelu(const torch::Tensor& z) {
  check_states(z, -1, "fused_gelu: z");
  return FusedGelu::apply(z);
}

}  // namespace tpuperf
