// fused_gelu: the erf GELU of the small layers around the SAGE blocks, in the vector code of
// the epilogue (vector_math.h's gelu16).
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_math.h"

namespace tpuperf {

namespace kernels {
namespace {

constexpr int64_t kGeluBlock = 16;  // floats per gelu16 call

// Element i of out = gelu(z[i]) (grad null) or grad[i] * gelu'(z[i]), for i in [b, e): whole
// blocks of 16 in registers, the tail through a zero-padded block.
void gelu_range(const float* z, const float* grad, float* out, int64_t b, int64_t e) {
  const auto one = [&](const Float16& zv, const Float16* gv) {
    const Gelu16 r = gelu16(zv);
    return gv ? *gv * r.slope : r.value;
  };
  int64_t i = b;
  for (; i + kGeluBlock <= e; i += kGeluBlock) {
    const Float16 gv = grad ? load_float16(grad + i) : Float16{};
    store_float16(out + i, one(load_float16(z + i), grad ? &gv : nullptr));
  }
  if (i == e) return;
  float zt[kGeluBlock] = {}, gt[kGeluBlock] = {}, ot[kGeluBlock];
  std::copy(z + i, z + e, zt);
  if (grad) std::copy(grad + i, grad + e, gt);
  const Float16 gv = load_float16(gt);
  store_float16(ot, one(load_float16(zt), grad ? &gv : nullptr));
  std::copy(ot, ot + (e - i), out + i);
}

// out = gelu(z), or grad * gelu'(z) when grad is defined; z (and grad) contiguous float.
Tensor gelu_pass(const Tensor& z, const Tensor& grad) {
  auto out = torch::empty_like(z);
  const float* zp = z.data_ptr<float>();
  const float* gp = grad.defined() ? grad.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
  const int64_t n = z.numel(), blocks = (n + kGeluBlock - 1) / kGeluBlock;
  at::parallel_for(0, blocks, kDropoutGrain / kGeluBlock, [&](int64_t b, int64_t e) {
    gelu_range(zp, gp, op, b * kGeluBlock, std::min(n, e * kGeluBlock));
  });
  return out;
}

// Float inputs take the vector pass (LibTorch's GELU and its backward took 4% of a tile
// default step on these G x S x H tensors, perf 2026-11-29); double takes LibTorch's.
struct FusedGelu : torch::autograd::Function<FusedGelu> {
  static Tensor forward(AutogradContext* ctx, const Tensor& z_in) {
    const auto z = z_in.contiguous();
    ctx->save_for_backward({z});
    return z.scalar_type() == torch::kFloat ? gelu_pass(z, Tensor()) : at::gelu(z);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto z = ctx->get_saved_variables()[0];
    const auto g = grads[0].contiguous();
    return {z.scalar_type() == torch::kFloat ? gelu_pass(z, g) : at::gelu_backward(g, z)};
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
