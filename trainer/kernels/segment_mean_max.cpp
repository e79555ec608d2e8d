// segment_mean_max: the readout's per-graph mean and max pooling in one pass.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// ------------------------------------------------------------------ segment mean, max
struct SegmentMeanMax : torch::autograd::Function<SegmentMeanMax> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& offsets) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    TORCH_CHECK(G >= 0 && off[0] == 0 && off[G] == N, "segment_mean_max: offsets do not cover ",
                N, " nodes");
    auto out = torch::zeros({S, G, 2 * H}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          if (n0 == n1) continue;
          scalar_t* mean = op + sg * 2 * H;
          scalar_t* max = mean + H;
          std::fill(max, max + H, -std::numeric_limits<scalar_t>::infinity());
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j) {
              mean[j] += row[j];
              max[j] = std::max(max[j], row[j]);
            }
          }
          for (int64_t j = 0; j < H; ++j) mean[j] /= scalar_t(n1 - n0);
        }
      });
    });
    ctx->save_for_backward({x, out, offsets});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &out = saved[1], &offsets = saved[2];
    const auto g = grads[0].contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    auto gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max_backward", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const scalar_t* op = out.data_ptr<scalar_t>();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* gxp = gx.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        std::vector<scalar_t> share(static_cast<size_t>(H));
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          const scalar_t* max = op + sg * 2 * H + H;
          const scalar_t* gmean = gp + sg * 2 * H;
          const scalar_t* gmax = gmean + H;
          std::fill(share.begin(), share.end(), scalar_t(0));
          for (int64_t n = n0; n < n1; ++n)
            for (int64_t j = 0; j < H; ++j) share[j] += xp[(s * N + n) * H + j] == max[j];
          for (int64_t j = 0; j < H; ++j) share[j] = gmax[j] / std::max(share[j], scalar_t(1));
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            scalar_t* grow = gxp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j)
              grow[j] = gmean[j] / scalar_t(n1 - n0) + (row[j] == max[j] ? share[j] : scalar_t(0));
          }
        }
      });
    });
    return {gx, Tensor()};
  }
};


}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets) {
  check_states(x, 3, "segment_mean_max: x");
  return SegmentMeanMax::apply(x, torch::tensor(offsets, torch::kInt64));
}

}  // namespace tpuperf
