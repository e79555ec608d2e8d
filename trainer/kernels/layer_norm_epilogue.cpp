// gelu_dropout_add_layer_norm: the SAGE block's epilogue in one pass per row.
#include "trainer/kernels/fused_ops.h"

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_math.h"

namespace tpuperf {

namespace kernels {
namespace {

// The epilogue's rows for any width and type, as functions of __restrict pointers: without
// them the compiler must assume the scratch rows alias the tensors and keeps these loops
// scalar. (Float rows of 32 and 64 take the Row32 versions below.)

// Forward of one row at flat offset `at`: out = LayerNorm(x + keep * a), the mask bytes
// (if mask), and the row's mean and 1 / std.
template <typename T>
inline void epilogue_forward_row(int64_t n, int64_t at, const T* __restrict x, const T* __restrict a,
                                 uint64_t seed, uint64_t threshold, T scale,
                                 const T* __restrict gamma, const T* __restrict beta, T eps,
                                 T* __restrict keep, T* __restrict r, uint8_t* __restrict mask,
                                 T* __restrict out, T& mean, T& rstd) {
  fill_keep(keep, seed, at, n, threshold, scale);
  if (mask)
    for (int64_t j = 0; j < n; ++j) mask[j] = keep[j] != T(0);
  for (int64_t j = 0; j < n; ++j) r[j] = x[j] + a[j] * keep[j];
  const T mu = row_sum(r, n) / T(n);
  for (int64_t j = 0; j < n; ++j) r[j] -= mu;
  for (int64_t j = 0; j < n; ++j) keep[j] = r[j] * r[j];
  const T inv = T(1) / std::sqrt(row_sum(keep, n) / T(n) + eps);
  for (int64_t j = 0; j < n; ++j) out[j] = r[j] * inv * gamma[j] + beta[j];
  mean = mu;
  rstd = inv;
}

// Backward of one row: the gradients of x (gx) and of the activation before dropout (ga),
// and the row's terms of gamma's and beta's gradients added to acc_g and acc_b. keep is
// scale * mask byte (mask = all ones and scale 1 without dropout).
template <typename T>
inline void epilogue_backward_row(int64_t n, const T* __restrict x, const T* __restrict a,
                                  const uint8_t* __restrict mask, T scale, const T* __restrict go,
                                  const T* __restrict gamma, T mu, T inv, T* __restrict xhat,
                                  T* __restrict gy, T* __restrict gyx, T* __restrict gx,
                                  T* __restrict ga, double* __restrict acc_g,
                                  double* __restrict acc_b) {
  for (int64_t j = 0; j < n; ++j) {
    xhat[j] = (x[j] + a[j] * (scale * T(mask[j])) - mu) * inv;
    gy[j] = go[j] * gamma[j];
    gyx[j] = gy[j] * xhat[j];
    acc_g[j] += go[j] * xhat[j];
    acc_b[j] += go[j];
  }
  const T m1 = row_sum(gy, n) / T(n), m2 = row_sum(gyx, n) / T(n);
  for (int64_t j = 0; j < n; ++j) {
    const T gr = inv * (gy[j] - m1 - xhat[j] * m2);
    gx[j] = gr;
    ga[j] = gr * (scale * T(mask[j]));
  }
}

// The same rows for float and H = 32 kC (kC = 1 or 2: the bench and default widths) as kC
// Row32 vectors, with the GELU inside: the forward reads z, not gelu(z), and the backward
// recomputes gelu(z) and gelu'(z) from z and returns z's gradient. mask is null without
// dropout. `row` counts rows of H; the dropout draws of 32-wide part c are those of
// elements H row + 32 c .. + 31, as keeps() draws them.
template <int kC>
inline void epilogue_forward_rows(int64_t row, const float* x, const float* z, uint64_t seed,
                                  uint16_t threshold, float scale, const Row32* gamma,
                                  const Row32* beta, float eps, uint8_t* mask, float* out,
                                  float& mean, float& rstd) {
  constexpr float kWidth = 32.0f * kC;
  // Sums over the row's kC parts are added as vectors first: one horizontal reduction per
  // row and sum, not one per part.
  Row32 r[kC], sum{}, squares{};
  for (int c = 0; c < kC; ++c) {
    r[c] = gelu_row32(load_row32(z + 32 * c), nullptr);
    if (mask) r[c] = r[c] * row32_keep(seed, row * kC + c, threshold, scale, mask + 32 * c);
    r[c] = r[c] + load_row32(x + 32 * c);
    sum = sum + r[c];
  }
  const float mu = row32_sum(sum) / kWidth;
  for (int c = 0; c < kC; ++c) {
    r[c] = r[c] - mu;
    squares = squares + r[c] * r[c];
  }
  const float inv = 1.0f / std::sqrt(row32_sum(squares) / kWidth + eps);
  for (int c = 0; c < kC; ++c) store_row32(out + 32 * c, r[c] * inv * gamma[c] + beta[c]);
  mean = mu;
  rstd = inv;
}

// mask: the row's H mask bytes (0 or 1), all ones without dropout (scale 1). The row's
// gamma and beta gradient terms are added to acc_g and acc_b (float sums of a few rows,
// see kEpilogueBlockRows).
template <int kC>
inline void epilogue_backward_rows(const float* x, const float* z, const uint8_t* mask, float scale,
                                   const float* go, const Row32* gamma, float mu, float inv,
                                   float* gx, float* gz, Row32* acc_g, Row32* acc_b) {
  constexpr float kWidth = 32.0f * kC;
  Row32 keep[kC], slope[kC], xhat[kC], gy[kC], sum_gy{}, sum_gyx{};  // sums: as in forward
  for (int c = 0; c < kC; ++c) {
    keep[c] = row32_of_mask(mask + 32 * c, scale);
    const Row32 a = gelu_row32(load_row32(z + 32 * c), &slope[c]);
    xhat[c] = (load_row32(x + 32 * c) + a * keep[c] - mu) * inv;
    const Row32 g = load_row32(go + 32 * c);
    gy[c] = g * gamma[c];
    acc_g[c] = acc_g[c] + g * xhat[c];
    acc_b[c] = acc_b[c] + g;
    sum_gy = sum_gy + gy[c];
    sum_gyx = sum_gyx + gy[c] * xhat[c];
  }
  const float m1 = row32_sum(sum_gy) / kWidth, m2 = row32_sum(sum_gyx) / kWidth;
  for (int c = 0; c < kC; ++c) {
    const Row32 gr = inv * (gy[c] - m1 - xhat[c] * m2);
    store_row32(gx + 32 * c, gr);
    store_row32(gz + 32 * c, gr * keep[c] * slope[c]);
  }
}

// Forward over rows [b, e) of width H = 32 kC (float, the vector path).
template <int kC>
void epilogue_forward_range(int64_t b, int64_t e, const float* xp, const float* zp, uint64_t seed,
                            uint16_t threshold, float scale, const float* gamma, const float* beta,
                            float eps, uint8_t* mk, float* op, float* mp, float* rp) {
  constexpr int64_t H = 32 * kC;
  Row32 g[kC], bt[kC];
  for (int c = 0; c < kC; ++c) {
    g[c] = load_row32(gamma + 32 * c);
    bt[c] = load_row32(beta + 32 * c);
  }
  for (int64_t row = b; row < e; ++row)
    epilogue_forward_rows<kC>(row, xp + row * H, zp + row * H, seed, threshold, scale, g, bt, eps,
                              mk ? mk + row * H : nullptr, op + row * H, mp[row], rp[row]);
}

// Rows whose gamma and beta gradient terms are summed in float before the sum is added to
// the chunk's double sums: widening every row's terms to double took about a tenth of the
// backward (perf, 2026-11-29). A float sum of 16 terms carries a relative rounding of
// ~16 x 2^-24 (1e-6) of their magnitude, below the 1e-5 the gradients are tested to and the
// float rounding of the result; the long sums over up to rows / kMaxChunks rows stay double.
constexpr int64_t kEpilogueBlockRows = 16;

// Backward over rows [r0, r1), gamma's and beta's sums of those rows stored to acc (2 H
// doubles: gamma's, then beta's).
template <int kC>
void epilogue_backward_range(int64_t r0, int64_t r1, const float* xp, const float* zp,
                             const uint8_t* mk, int64_t mask_stride, float scale, const float* go,
                             const float* gamma, const float* mp, const float* rp, float* gx,
                             float* ga, double* acc) {
  constexpr int64_t H = 32 * kC;
  Row32 g[kC];
  for (int c = 0; c < kC; ++c) g[c] = load_row32(gamma + 32 * c);
  Row32Double acc_g[kC], acc_b[kC];
  for (int64_t b0 = r0; b0 < r1; b0 += kEpilogueBlockRows) {
    Row32 block_g[kC] = {}, block_b[kC] = {};
    for (int64_t row = b0; row < std::min(r1, b0 + kEpilogueBlockRows); ++row)
      epilogue_backward_rows<kC>(xp + row * H, zp + row * H, mk + row * mask_stride, scale, go + row * H,
                                 g, mp[row], rp[row], gx + row * H, ga + row * H, block_g, block_b);
    for (int c = 0; c < kC; ++c) {
      acc_g[c].add(block_g[c]);
      acc_b[c].add(block_b[c]);
    }
  }
  for (int c = 0; c < kC; ++c) {
    acc_g[c].store(acc + 32 * c);
    acc_b[c].store(acc + H + 32 * c);
  }
}


// ------------------------------------------------------- gelu, dropout, add, LayerNorm
struct GeluDropoutAddLayerNorm : torch::autograd::Function<GeluDropoutAddLayerNorm> {
  static Tensor forward(AutogradContext* ctx, const Tensor& z_in, const Tensor& x_in,
                        const Tensor& gamma, const Tensor& beta, double eps, double p, int64_t seed) {
    const auto z = z_in.contiguous(), x = x_in.contiguous();
    TORCH_CHECK(z.sizes() == x.sizes(), "gelu_dropout_add_layer_norm: z ", z.sizes(), " and x ",
                x.sizes(), " differ");
    const int64_t H = x.size(-1), rows = x.numel() / H;
    auto out = torch::empty_like(x);
    auto mean = torch::empty({rows}, x.options()), rstd = torch::empty({rows}, x.options());
    const uint64_t threshold = drop_threshold(p), useed = static_cast<uint64_t>(seed);
    // The mask as bytes for backward: hashing costs more than storing and reading 1 byte.
    auto mask = torch::empty({threshold > 0 ? rows * H : 0}, torch::kUInt8);
    uint8_t* mk = mask.data_ptr<uint8_t>();
    // Float rows of 32 or 64 compute the GELU in the loop (gelu16); other shapes take LibTorch's
    // vectorized GELU (a scalar erf in the loop costs more than the pass it saves) and keep
    // its output for backward.
    const bool row32 = x.scalar_type() == torch::kFloat && (H == 32 || H == 64) && threshold < 65536;
    Tensor a;
    if (row32) {
      const float *zp = z.data_ptr<float>(), *xp = x.data_ptr<float>();
      const auto g = gamma.contiguous(), bt = beta.contiguous();
      float *op = out.data_ptr<float>(), *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
      const float scale = float(1.0 / (1.0 - p));
      const auto t = static_cast<uint16_t>(threshold);
      uint8_t* m = threshold > 0 ? mk : nullptr;
      at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
        if (H == 32)
          epilogue_forward_range<1>(b, e, xp, zp, useed, t, scale, g.data_ptr<float>(), bt.data_ptr<float>(),
                                    float(eps), m, op, mp, rp);
        else
          epilogue_forward_range<2>(b, e, xp, zp, useed, t, scale, g.data_ptr<float>(), bt.data_ptr<float>(),
                                    float(eps), m, op, mp, rp);
      });
    } else AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_dropout_add_layer_norm", [&] {
      a = at::gelu(z);
      const scalar_t* ap = a.data_ptr<scalar_t>();
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const auto g = gamma.contiguous(), bt = beta.contiguous();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* bp = bt.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      scalar_t* mp = mean.data_ptr<scalar_t>();
      scalar_t* rp = rstd.data_ptr<scalar_t>();
      const scalar_t scale = scalar_t(1.0 / (1.0 - p));
      at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
        std::vector<scalar_t> scratch(static_cast<size_t>(2 * H));
        for (int64_t row = b; row < e; ++row) {
          const int64_t at = row * H;
          epilogue_forward_row(H, at, xp + at, ap + at, useed, threshold, scale, gp, bp, scalar_t(eps),
                               scratch.data(), scratch.data() + H, threshold > 0 ? mk + at : nullptr,
                               op + at, mp[row], rp[row]);
        }
      });
    });
    ctx->save_for_backward({z, a, x, gamma, mean, rstd, mask});
    ctx->saved_data["p"] = p;
    ctx->saved_data["row32"] = row32;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &z = saved[0], &a = saved[1], &x = saved[2], &gamma = saved[3], &mean = saved[4],
               &rstd = saved[5], &mask = saved[6];
    const double p = ctx->saved_data["p"].toDouble();
    const auto gout = grads[0].contiguous();
    const int64_t H = x.size(-1), rows = x.numel() / H, per = chunk_rows(rows);
    const int64_t chunks = (rows + per - 1) / per;
    const bool row32 = ctx->saved_data["row32"].toBool();
    // row32: z's gradient (the GELU's backward is in the loop); else the gradient of gelu(z).
    auto grad_a = torch::empty_like(z), grad_x = torch::empty_like(x);
    // Per chunk partial sums of gamma's and beta's gradients, added in chunk order.
    // In double: each sums the values of up to rows / kMaxChunks rows.
    auto partial = torch::zeros({chunks, 2, H}, x.options().dtype(torch::kDouble));
    const uint64_t threshold = drop_threshold(p);
    // Without dropout every row reads one row of ones as its mask (and the scale is 1).
    const std::vector<uint8_t> ones(static_cast<size_t>(H), 1);
    const uint8_t* mk = threshold > 0 ? mask.data_ptr<uint8_t>() : ones.data();
    const int64_t mask_stride = threshold > 0 ? H : 0;
    if (row32) {
      const float *zp = z.data_ptr<float>(), *xp = x.data_ptr<float>(), *go = gout.data_ptr<float>();
      const float *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
      const auto gm = gamma.contiguous();
      float *ga = grad_a.data_ptr<float>(), *gx = grad_x.data_ptr<float>();
      double* pp = partial.data_ptr<double>();
      const float scale = threshold > 0 ? float(1.0 / (1.0 - p)) : 1.0f;
      at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          const int64_t r0 = c * per, r1 = std::min(rows, (c + 1) * per);
          if (H == 32)
            epilogue_backward_range<1>(r0, r1, xp, zp, mk, mask_stride, scale, go, gm.data_ptr<float>(), mp, rp,
                                       gx, ga, pp + c * 2 * H);
          else
            epilogue_backward_range<2>(r0, r1, xp, zp, mk, mask_stride, scale, go, gm.data_ptr<float>(), mp, rp,
                                       gx, ga, pp + c * 2 * H);
        }
      });
    } else AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_dropout_add_layer_norm_backward", [&] {
      const scalar_t* ap = a.data_ptr<scalar_t>();
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const auto gm = gamma.contiguous();
      const scalar_t* gp = gm.data_ptr<scalar_t>();
      const scalar_t* mp = mean.data_ptr<scalar_t>();
      const scalar_t* rp = rstd.data_ptr<scalar_t>();
      const scalar_t* go = gout.data_ptr<scalar_t>();
      scalar_t* ga = grad_a.data_ptr<scalar_t>();
      scalar_t* gx = grad_x.data_ptr<scalar_t>();
      double* pp = partial.data_ptr<double>();
      const scalar_t scale = threshold > 0 ? scalar_t(1.0 / (1.0 - p)) : scalar_t(1);
      at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        std::vector<scalar_t> scratch(static_cast<size_t>(3 * H));
        std::vector<double> acc(static_cast<size_t>(2 * H));
        for (int64_t c = cb; c < ce; ++c) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t row = c * per; row < std::min(rows, (c + 1) * per); ++row) {
            const int64_t at = row * H;
            epilogue_backward_row(H, xp + at, ap + at, mk + row * mask_stride, scale, go + at, gp,
                                  mp[row], rp[row], scratch.data(), scratch.data() + H,
                                  scratch.data() + 2 * H, gx + at, ga + at, acc.data(), acc.data() + H);
          }
          std::copy(acc.begin(), acc.end(), pp + c * 2 * H);
        }
      });
    });
    const auto sums = partial.sum(0).to(x.scalar_type());
    return {row32 ? grad_a : at::gelu_backward(grad_a, z), grad_x, sums[0], sums[1], Tensor(), Tensor(), Tensor()};
  }
};


}  // namespace
}  // namespace kernels

using namespace kernels;

torch::Tensor gelu_dropout_add_layer_norm(const torch::Tensor& z, const torch::Tensor& x,
                                          const torch::Tensor& gamma, const torch::Tensor& beta,
                                          double eps, double p, uint64_t seed) {
  check_states(x, -1, "gelu_dropout_add_layer_norm: x");
  TORCH_CHECK(gamma.numel() == x.size(-1) && beta.numel() == x.size(-1),
              "gelu_dropout_add_layer_norm: LayerNorm weights of ", gamma.numel(),
              " for features of ", x.size(-1));
  return GeluDropoutAddLayerNorm::apply(z, x, gamma, beta, eps, p, static_cast<int64_t>(seed));
}

}  // namespace tpuperf
