// sage_block: a SAGE residual block, sage_linear then gelu_dropout_add_layer_norm, as one
// autograd function on the vector path.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/block_passes.h"

namespace tpuperf {

namespace kernels {
namespace {

// x reaches the output twice, through the linear map and as the residual. As two functions
// the autograd engine adds their two [S, N, H] gradients of x in a pass of its own; here the
// linear map's backward adds the residual's gradient to each block of rows while it is in
// cache. A small gain: a layout default block's forward and backward 1.0035x on AVX2, 1.009x
// on AVX-512 (paired iterations, docs/experiments E51). The values and gradients are those
// of the two functions, bit for bit (tests/trainer/kernels/test_fused_ops.cpp).
struct SageBlockFunction : torch::autograd::Function<SageBlockFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                        const Tensor& gamma, const Tensor& beta, const Tensor& pptr, const Tensor& pidx,
                        const Tensor& cptr, const Tensor& cidx, double eps, double p, int64_t seed) {
    const auto x = x_in.contiguous();
    const VectorPath& path = *sage_path(x);  // sage_block chose this function only with one
    const auto z = sage_forward_rows(path, x, weight, bias, csr_graph(pptr, pidx, cptr, cidx));
    EpilogueSaved saved;
    auto out = epilogue_forward_rows(path, z, x, gamma, beta, eps, p, static_cast<uint64_t>(seed), &saved);
    ctx->save_for_backward({x, weight, pptr, pidx, cptr, cidx, saved.xhat, saved.keep_slope, saved.rstd, gamma});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const VectorPath* path = vector_path();
    TORCH_CHECK(path, "sage_block: the vector path was turned off between forward and backward");
    const EpilogueGrads e = epilogue_backward_rows(*path, {s[6], s[7], s[8]}, s[9], grads[0].contiguous());
    const auto [grad_x, grad_w, grad_b] =
        sage_backward_rows(*path, e.z, s[0], s[1].contiguous(), csr_graph(s[2], s[3], s[4], s[5]), e.x);
    return {grad_x, grad_w, grad_b, e.gamma, e.beta, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor sage_block(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                         const Adjacency& adj, const torch::Tensor& gamma, const torch::Tensor& beta, double eps,
                         double p, uint64_t seed) {
  check_states(x, 3, "sage_block: x");
  // Without a backward to save a pass of, or off the vector path: the two functions.
  if (!will_differentiate({x, weight, bias, gamma, beta}) || !sage_path(x) || !epilogue_path(x, drop_threshold(p)))
    return gelu_dropout_add_layer_norm(sage_linear(x, weight, bias, adj), x, gamma, beta, eps, p, seed);
  check_sage_operands(x, weight, bias, adj.producer_ptr);
  check_layer_norm_weights(x, gamma, beta, "sage_block");
  return SageBlockFunction::apply(x, weight, bias, gamma, beta, adj.producer_ptr, adj.producer_idx,
                                  adj.consumer_ptr, adj.consumer_idx, eps, p, static_cast<int64_t>(seed));
}

}  // namespace tpuperf
