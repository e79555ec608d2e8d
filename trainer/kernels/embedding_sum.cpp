// embedding_sum: per row, the sum of the embedding rows its indices pick.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// ------------------------------------------------------------------ embedding sum
// The layout model's value table: each (config, configurable node) row sums the 18 rows of
// its layout values. LibTorch's fast path was a one-hot matrix (rows x 126, zeroed and
// scattered) times the table; this reads the 18 rows directly, and its backward adds each
// row's gradient into its 18 table rows.
struct EmbeddingSum : torch::autograd::Function<EmbeddingSum> {
  static Tensor forward(AutogradContext* ctx, const Tensor& weight_in, const Tensor& values) {
    const auto weight = weight_in.contiguous();
    const int64_t V = weight.size(0), H = weight.size(1), R = values.size(0), K = values.size(1);
    const int64_t* vp = values.data_ptr<int64_t>();
    check_indices(vp, R * K, V, "embedding_sum");
    auto out = torch::empty({R, H}, weight.options());
    AT_DISPATCH_FLOATING_TYPES(weight.scalar_type(), "embedding_sum", [&] {
      const scalar_t* __restrict wp = weight.data_ptr<scalar_t>();
      scalar_t* __restrict op = out.data_ptr<scalar_t>();
      at::parallel_for(0, R, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          scalar_t* __restrict o = op + r * H;
          const scalar_t* first = wp + vp[r * K] * H;
          for (int64_t j = 0; j < H; ++j) o[j] = first[j];
          for (int64_t k = 1; k < K; ++k) {
            const scalar_t* __restrict w = wp + vp[r * K + k] * H;
            for (int64_t j = 0; j < H; ++j) o[j] += w[j];
          }
        }
      });
    });
    ctx->save_for_backward({values});
    ctx->saved_data["V"] = V;
    return out;
  }

  // Partial tables over fixed chunks of rows, added in chunk order: the result does not
  // depend on the number of threads.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto values = ctx->get_saved_variables()[0];
    const auto g = grads[0].contiguous();
    const int64_t R = g.size(0), H = g.size(1), K = values.size(1), V = ctx->saved_data["V"].toInt();
    const RowParts parts = row_parts(R, kMaxChunks);
    const int64_t per = parts.per, chunks = parts.count;
    auto partial = torch::zeros({chunks, V, H}, g.options());
    const int64_t* vp = values.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "embedding_sum_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* pp = partial.data_ptr<scalar_t>();
      at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c)
          for (int64_t r = c * per; r < std::min(R, (c + 1) * per); ++r) {
            const scalar_t* __restrict gr = gp + r * H;
            for (int64_t k = 0; k < K; ++k) {
              scalar_t* __restrict t = pp + (c * V + vp[r * K + k]) * H;
              for (int64_t j = 0; j < H; ++j) t[j] += gr[j];
            }
          }
      });
    });
    return {partial.sum(0), Tensor()};
  }
};

}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor embedding_sum(const torch::Tensor& weight, const torch::Tensor& values) {
  check_states(weight, 2, "embedding_sum: weight");
  TORCH_CHECK(values.dim() == 2, "embedding_sum: values must be rows x indices, got ", values.sizes());
  TORCH_CHECK(values.size(1) > 0, "embedding_sum: rows of no indices");
  return EmbeddingSum::apply(weight, values.to(torch::kInt64).contiguous());
}

}  // namespace tpuperf
