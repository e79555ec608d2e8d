// embedding_sum: per row, the sum of the embedding rows its indices pick.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"

namespace tpuperf {

namespace kernels {
namespace {

// out rows [b, e) = the sum of the table rows (wp) each row's K indices pick, in order.
template <int kH, typename T>
void sum_rows(Width<kH> width, const T* wp, const int64_t* vp, int64_t K, int64_t b, int64_t e, T* out) {
  [[maybe_unused]] const int64_t H = width.value();  // the generic loop's
  for (int64_t r = b; r < e; ++r) {
    if constexpr (kInRegisters<kH, T>) {
      FloatRow<kH> sum;
      sum.load(wp + vp[r * K] * kH);
      for (int64_t k = 1; k < K; ++k) sum.add(wp + vp[r * K + k] * kH);
      sum.store(out + r * kH);
    } else {
      T* __restrict o = out + r * H;
      const T* first = wp + vp[r * K] * H;
      for (int64_t j = 0; j < H; ++j) o[j] = first[j];
      for (int64_t k = 1; k < K; ++k) {
        const T* __restrict w = wp + vp[r * K + k] * H;
        for (int64_t j = 0; j < H; ++j) o[j] += w[j];
      }
    }
  }
}

// table rows (V x H) += each row r in [b, e) of g, once per index it picked.
template <int kH, typename T>
void add_rows(Width<kH> width, const T* g, const int64_t* vp, int64_t K, int64_t b, int64_t e, T* table) {
  const int64_t H = width.value();
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict gr = g + r * H;
    for (int64_t k = 0; k < K; ++k) {
      T* __restrict t = table + vp[r * K + k] * H;
      for (int64_t j = 0; j < H; ++j) t[j] += gr[j];
    }
  }
}

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
      with_width(H, [&](auto width) {
        at::parallel_for(0, R, kGrain, [&](int64_t b, int64_t e) { sum_rows(width, wp, vp, K, b, e, op); });
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
    auto partial = torch::zeros({parts.count, V, H}, g.options());
    const int64_t* vp = values.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "embedding_sum_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* pp = partial.data_ptr<scalar_t>();
      with_width(H, [&](auto width) {
        for_each_part(parts, R,
                      [&](int64_t c, int64_t r0, int64_t r1) { add_rows(width, gp, vp, K, r0, r1, pp + c * V * H); });
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
