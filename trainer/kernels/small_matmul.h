// Register-blocked matrix kernels for the SAGE layer's small shapes (internal to
// trainer/kernels/).
#pragma once

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_math.h"

namespace tpuperf::kernels {

// ------------------------------------------------------------- rows times a small matrix
// The SAGE layer's matmuls have K and M of H to 3H (32 to 96): too small for a BLAS's
// packing to pay off. These kernels keep a block of outputs in vector registers and
// stream the rows.
// Rows per register block of small_matmul_rows: as many as the accumulators allow, and
// with AVX-512 6 for outputs of up to 64 columns: at 64 -> 64 and 128 -> 64, 6 rows ran
// 1.3-2x faster than 3 on one core although 6 x 4 accumulators leave few registers for
// the rest (tests/bench/kernel_blocks.cpp, 2026-11-29).
constexpr int matmul_block_rows(int kM) {
  return kLanes == 16 && kM <= 64 ? 6 : std::max(1, kAccumulators / (kM / kLanes));
}

// out[r] (+)= a[r, :kK] @ w (kK x kM, row-major with row stride ldw) for r in [r0, r1);
// kR rows share each load of w.
template <int kK, int kM, int kR = matmul_block_rows(kM)>
void small_matmul_rows(const float* __restrict a, int64_t lda, int64_t r0, int64_t r1,
                       const float* __restrict w, int64_t ldw, float* __restrict out,
                       int64_t ldo, bool accumulate) {
  constexpr int kV = kM / kLanes;
  static_assert(kM % kLanes == 0, "output width must be a whole number of vectors");
  int64_t r = r0;
  for (; r + kR <= r1; r += kR) {
    FloatVec acc[kR][kV];
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i)
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v)
        acc[i][v] = accumulate ? load_vec(out + (r + i) * ldo + kLanes * v) : FloatVec{};
    for (int k = 0; k < kK; ++k) {
      FloatVec ak[kR];
#pragma GCC unroll 16
      for (int i = 0; i < kR; ++i) ak[i] = broadcast(a[(r + i) * lda + k]);
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) {
        const FloatVec wv = load_vec(w + k * ldw + kLanes * v);
#pragma GCC unroll 16
        for (int i = 0; i < kR; ++i) acc[i][v] += ak[i] * wv;
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i)
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) store_vec(out + (r + i) * ldo + kLanes * v, acc[i][v]);
  }
  if constexpr (kR > 1) small_matmul_rows<kK, kM, 1>(a, lda, r, r1, w, ldw, out, ldo, accumulate);
}

// One block of rows of small_outer_rows.
template <int kJ, int kM, int kJB>
void small_outer_block(const float* __restrict g, int64_t ldg, const float* __restrict b,
                       int64_t ldb, int64_t r0, int64_t r1, float* __restrict out, int64_t ldo) {
  constexpr int kV = kM / kLanes;
  for (int j0 = 0; j0 < kJ; j0 += kJB) {
    FloatVec acc[kJB][kV] = {};
    for (int64_t r = r0; r < r1; ++r) {
      FloatVec bv[kV];
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) bv[v] = load_vec(b + r * ldb + kLanes * v);
#pragma GCC unroll 16
      for (int j = 0; j < kJB; ++j) {
        const FloatVec gj = broadcast(g[r * ldg + j0 + j]);
#pragma GCC unroll 16
        for (int v = 0; v < kV; ++v) acc[j][v] += gj * bv[v];
      }
    }
    for (int j = 0; j < kJB; ++j)
      for (int v = 0; v < kV; ++v) {
        float* o = out + (j0 + j) * ldo + kLanes * v;
        store_vec(o, load_vec(o) + acc[j][v]);
      }
  }
}

// Output rows per block of small_outer_rows. With AVX-512, 8 for every shape here: at
// 32 x 32, 32 x 64 and 64 x 64 blocks of 8 rows ran at 113-140 GF/s on one core against
// 62-75 with 2 or 4 (tests/bench/kernel_blocks.cpp, 2026-11-29), although 8 x 4 vectors
// of 64 x 64 fill all 32 registers. Otherwise as many as the accumulators allow.
constexpr int outer_block_rows(int kM) { return kLanes == 16 ? 8 : floor_pow2(kAccumulators / (kM / kLanes)); }

// out (kJ x kM, row stride ldo) += sum over r in [r0, r1) of g[r, :kJ]^T b[r, :kM]: a
// weight gradient. Blocks of kJB output rows stay in registers while blocks of 64 rows (in
// L1) stream through.
template <int kJ, int kM, int kJB = outer_block_rows(kM)>
void small_outer_rows(const float* __restrict g, int64_t ldg, const float* __restrict b,
                      int64_t ldb, int64_t r0, int64_t r1, float* __restrict out, int64_t ldo = kM) {
  static_assert(kM % kLanes == 0 && kJ % kJB == 0, "blocks must tile the output");
  for (int64_t rb = r0; rb < r1; rb += 64) {
    const int64_t re = std::min(r1, rb + 64);
    small_outer_block<kJ, kM, kJB>(g, ldg, b, ldb, rb, re, out, ldo);
  }
}

// The SAGE layer's shapes the vector kernels cover: float with H = 32 (the bench model)
// or 64 (the schema's default). Other widths and double use LibTorch's BLAS calls on whole
// tensors, outside any parallel region.
inline bool has_small_kernels(const Tensor& x) {
  return x.scalar_type() == torch::kFloat && (x.size(-1) == 32 || x.size(-1) == 64);
}

// out[r] (+)= a[r, :K] @ w (K x M, row-major) for r in [r0, r1): the shapes of H = 32 and
// 64 (K = H or 2H, M = H or 3H). Outputs wider than 64 columns go in blocks of 64 (at H = 64
// the 12 accumulators of one row's 192 outputs would leave no register for the rest).
inline void matmul_rows(const float* a, int64_t lda, int64_t r0, int64_t r1, const float* w, int64_t K,
                        int64_t M, float* out, int64_t ldo, bool accumulate) {
  if (K == 32 && M == 32) return small_matmul_rows<32, 32>(a, lda, r0, r1, w, M, out, ldo, accumulate);
  if (K == 64 && M == 32) return small_matmul_rows<64, 32>(a, lda, r0, r1, w, M, out, ldo, accumulate);
  if (K == 32 && M == 96) return small_matmul_rows<32, 96>(a, lda, r0, r1, w, M, out, ldo, accumulate);
  TORCH_CHECK((K == 64 || K == 128) && M % 64 == 0, "matmul_rows: no kernel for ", K, " x ", M);
  for (int64_t c = 0; c < M; c += 64) {
    if (K == 64) small_matmul_rows<64, 64>(a, lda, r0, r1, w + c, M, out + c, ldo, accumulate);
    else small_matmul_rows<128, 64>(a, lda, r0, r1, w + c, M, out + c, ldo, accumulate);
  }
}

// out (J x M, row stride M) += sum over r in [r0, r1) of g[r, :J]^T b[r, :M]: the SAGE
// weight gradient's blocks, J = H (32 or 64), M = H or 2H; at H = 64 in blocks of 64
// columns.
inline void outer_rows(const float* g, int64_t ldg, int64_t J, const float* b, int64_t ldb, int64_t M,
                       int64_t r0, int64_t r1, float* out) {
  if (J == 32 && M == 32) return small_outer_rows<32, 32>(g, ldg, b, ldb, r0, r1, out);
  if (J == 32 && M == 64) return small_outer_rows<32, 64>(g, ldg, b, ldb, r0, r1, out);
  TORCH_CHECK(J == 64 && M % 64 == 0, "outer_rows: no kernel for ", J, " x ", M);
  for (int64_t c = 0; c < M; c += 64) small_outer_rows<64, 64>(g, ldg, b + c, ldb, r0, r1, out + c, M);
}

}  // namespace tpuperf::kernels
