// gelu_dropout_add_layer_norm's loops over float rows of H = 32 or 64
// (trainer/kernels/layer_norm_epilogue.cpp splits the rows into tasks and owns the
// tensors): GELU, dropout, residual and LayerNorm in one pass per row each way.
#include <algorithm>
#include <cmath>

#include "trainer/kernels/vector/rows.h"
#include "trainer/kernels/vector/vector_math.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {
namespace {

// The forward of a row of H = 32 kC floats (kC = 1 or 2: the bench and default widths) as
// kC Row32 vectors, in two parts run over a block of rows each (epilogue_forward_range):
// the residual part, r = x + keep gelu(z), stored to out, and the LayerNorm of out in place.
// One row through both parts at once is a long chain (GELU, sum, mean, squares, sqrt,
// divide) that held the AVX2 path at ~90 ns a row of 64; apart, a block's GELUs overlap
// and the norm reads rows still in L1 (81 ns; 2026-12-07, docs/experiments E48). The
// values are those of one pass: r goes through memory unchanged.
//
// When the forward will be differentiated (kSave), it also stores per element what the
// backward needs: xhat = (r - mean) / std and keep * gelu'(z) (keep = scale or 0, 1 without
// dropout), so the backward does not compute the GELU again (recomputing it was about two
// thirds of the backward's work, perf 2026-11-29). No dropout when threshold is 0. `row`
// counts rows of H; the dropout draws of 32-wide part c are those of elements
// H row + 32 c .. + 31, as keeps() draws them. Returns the row's mean.
template <int kC, bool kSave>
inline float epilogue_residual_row(int64_t row, const float* x, const float* z, uint64_t seed, uint16_t threshold,
                                   float scale, float* out, float* keep_slope) {
  // Sums over the row's kC parts are added as vectors first: one horizontal reduction per
  // row and sum, not one per part.
  Row32 sum{};
  for (int c = 0; c < kC; ++c) {
    Row32 slope;
    Row32 r = gelu_row32(load_row32(z + 32 * c), kSave ? &slope : nullptr);
    if (threshold > 0) {
      const Row32 keep = row32_keep(seed, row * kC + c, threshold, scale);
      r = r * keep;
      if (kSave) slope = slope * keep;
    }
    if (kSave) store_row32(keep_slope + 32 * c, slope);
    r = r + load_row32(x + 32 * c);
    store_row32(out + 32 * c, r);
    sum = sum + r;
  }
  return row32_sum(sum) / (32.0f * kC);
}

// The LayerNorm of a row (out, in place, mean mu) with gamma and beta; with kSave xhat and
// the row's 1 / std (rstd) for the backward.
template <int kC, bool kSave>
inline void epilogue_norm_row(float mu, const Row32* gamma, const Row32* beta, float eps, float* out, float* xhat,
                              float* rstd) {
  Row32 r[kC], squares{};
  for (int c = 0; c < kC; ++c) {
    r[c] = load_row32(out + 32 * c) - mu;
    squares = squares + r[c] * r[c];
  }
  const float inv = 1.0f / std::sqrt(row32_sum(squares) / (32.0f * kC) + eps);
  for (int c = 0; c < kC; ++c) {
    const Row32 normed = r[c] * inv;
    store_row32(out + 32 * c, normed * gamma[c] + beta[c]);
    if (kSave) store_row32(xhat + 32 * c, normed);
  }
  if (kSave) *rstd = inv;
}

// The backward of one row from the forward's xhat and keep * gelu'(z): the gradients of x
// (gx) and z (gz); the row's gamma and beta gradient terms are added to acc_g and acc_b
// (float sums of a few rows, see kEpilogueBlockRows).
template <int kC>
inline void epilogue_backward_rows(const float* xhat, const float* keep_slope, const float* go,
                                   const Row32* gamma, float inv, float* gx, float* gz, Row32* acc_g,
                                   Row32* acc_b) {
  constexpr float kWidth = 32.0f * kC;
  Row32 xh[kC], gy[kC], sum_gy{}, sum_gyx{};  // sums: as in forward
  for (int c = 0; c < kC; ++c) {
    xh[c] = load_row32(xhat + 32 * c);
    const Row32 g = load_row32(go + 32 * c);
    gy[c] = g * gamma[c];
    acc_g[c] = acc_g[c] + g * xh[c];
    acc_b[c] = acc_b[c] + g;
    sum_gy = sum_gy + gy[c];
    sum_gyx = sum_gyx + gy[c] * xh[c];
  }
  const float m1 = row32_sum(sum_gy) / kWidth, m2 = row32_sum(sum_gyx) / kWidth;
  for (int c = 0; c < kC; ++c) {
    const Row32 gr = inv * (gy[c] - m1 - xh[c] * m2);
    store_row32(gx + 32 * c, gr);
    store_row32(gz + 32 * c, gr * load_row32(keep_slope + 32 * c));
  }
}

// Rows per block of the forward's two parts (epilogue_residual_row, then epilogue_norm_row):
// a block of rows of 64 floats stays in L1 between them.
constexpr int64_t kNormBlockRows = 8;

// Forward over rows [b, e) of width H = 32 kC (float, the vector path).
template <int kC, bool kSave>
void epilogue_forward_range(int64_t b, int64_t e, const EpilogueForward& a) {
  constexpr int64_t H = 32 * kC;
  Row32 g[kC], bt[kC];
  for (int c = 0; c < kC; ++c) {
    g[c] = load_row32(a.gamma + 32 * c);
    bt[c] = load_row32(a.beta + 32 * c);
  }
  float mu[kNormBlockRows];
  for (int64_t b0 = b; b0 < e; b0 += kNormBlockRows) {
    const int64_t e0 = std::min(e, b0 + kNormBlockRows);
    for (int64_t row = b0; row < e0; ++row)
      mu[row - b0] = epilogue_residual_row<kC, kSave>(row, a.x + row * H, a.z + row * H, a.seed, a.threshold,
                                                      a.scale, a.out + row * H,
                                                      kSave ? a.keep_slope + row * H : nullptr);
    for (int64_t row = b0; row < e0; ++row)
      epilogue_norm_row<kC, kSave>(mu[row - b0], g, bt, a.eps, a.out + row * H, kSave ? a.xhat + row * H : nullptr,
                                   kSave ? a.rstd + row : nullptr);
  }
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
void epilogue_backward_range(int64_t r0, int64_t r1, const float* xh, const float* ks, const float* go,
                             const float* gamma, const float* rp, float* gx, float* gz, double* acc) {
  constexpr int64_t H = 32 * kC;
  Row32 g[kC];
  for (int c = 0; c < kC; ++c) g[c] = load_row32(gamma + 32 * c);
  Row32Double acc_g[kC], acc_b[kC];
  for (int64_t b0 = r0; b0 < r1; b0 += kEpilogueBlockRows) {
    Row32 block_g[kC] = {}, block_b[kC] = {};
    for (int64_t row = b0; row < std::min(r1, b0 + kEpilogueBlockRows); ++row)
      epilogue_backward_rows<kC>(xh + row * H, ks + row * H, go + row * H, g, rp[row], gx + row * H,
                                 gz + row * H, block_g, block_b);
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

}  // namespace

void epilogue_forward(int64_t H, int64_t b, int64_t e, const EpilogueForward& args) {
  const bool save = args.xhat != nullptr;
  if (H == 32) {
    if (save) epilogue_forward_range<1, true>(b, e, args);
    else epilogue_forward_range<1, false>(b, e, args);
  } else {
    if (save) epilogue_forward_range<2, true>(b, e, args);
    else epilogue_forward_range<2, false>(b, e, args);
  }
}

void epilogue_backward(int64_t H, int64_t r0, int64_t r1, const float* xhat, const float* keep_slope,
                       const float* gout, const float* gamma, const float* rstd, float* gx, float* gz,
                       double* acc) {
  if (H == 32) epilogue_backward_range<1>(r0, r1, xhat, keep_slope, gout, gamma, rstd, gx, gz, acc);
  else epilogue_backward_range<2>(r0, r1, xhat, keep_slope, gout, gamma, rstd, gx, gz, acc);
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
