// Register-blocked matrix kernels for the SAGE layer's small shapes (internal to
// trainer/kernels/vector/).
#pragma once

#include <algorithm>
#include <cstdint>

#include "trainer/kernels/vector/vector_math.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {

// Rows of one block of SAGE means (sage_rows.cpp): the matmuls read a block's means while
// they are in cache (64 rows of 2 x 64 means: 32 KiB). With AVX2, 64 rows: the weight
// gradient's register blocks (12 accumulators) are stored half as often, and the AVX2 tile
// default trained 1.039x faster than with 32 (median of 10 alternating pairs, 9 faster;
// layout default 1.001x, 5 pairs; 2026-12-07, docs/experiments E49). AVX-512 keeps 32 (not
// measured).
constexpr int64_t kMeansBlockRows = kLanes == 8 ? 64 : 32;

// ------------------------------------------------------------- rows times a small matrix
// The SAGE layer's matmuls have K of H or 2H and M of H (32 to 128): too small for a
// BLAS's packing to pay off. These kernels keep a block of outputs in vector registers and
// stream the rows.
// Rows per register block of small_matmul_rows: as many as the accumulators allow, and
// with AVX-512 6 for outputs of up to 64 columns: at 64 -> 64 and 128 -> 64, 6 rows ran
// 1.3-2x faster than 3 on one core although 6 x 4 accumulators leave few registers for
// the rest (tests/bench/kernel_blocks.cpp, 2026-11-29).
// With AVX2, 3 rows of 32 outputs (12 of the 16 registers): 93-101 GF/s on one core against
// 56-59 with 2 (kernel_blocks_avx2, 2026-12-02).
constexpr int matmul_block_rows(int kM) {
  if (kLanes == 16) return kM <= 64 ? 6 : std::max(1, kAccumulators / (kM / kLanes));
  return kM == 32 ? 3 : std::max(1, kAccumulators / (kM / kLanes));
}

// out[r] (+)= a[r, :K] @ w (K x kM, row-major with row stride ldw) for r in [r0, r1); kR
// rows share each load of w. The body of small_matmul_rows (K a constant there, once
// inlined) and of the linear layers' kernels (linear_rows.cpp, K as the layer has it).
template <int kM, int kR = matmul_block_rows(kM)>
[[gnu::always_inline]] inline void matmul_rows_k(const float* __restrict a, int64_t lda, int64_t K, int64_t r0,
                                                 int64_t r1, const float* __restrict w, int64_t ldw,
                                                 float* __restrict out, int64_t ldo, bool accumulate) {
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
    for (int64_t k = 0; k < K; ++k) {
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
  if constexpr (kR > 1) matmul_rows_k<kM, 1>(a, lda, K, r, r1, w, ldw, out, ldo, accumulate);
}

// matmul_rows_k with K = kK, compiled for that K (the SAGE layer's).
template <int kK, int kM, int kR = matmul_block_rows(kM)>
void small_matmul_rows(const float* __restrict a, int64_t lda, int64_t r0, int64_t r1,
                       const float* __restrict w, int64_t ldw, float* __restrict out,
                       int64_t ldo, bool accumulate) {
  matmul_rows_k<kM, kR>(a, lda, kK, r0, r1, w, ldw, out, ldo, accumulate);
}

// Rows per block of small_outer_rows: a block's rows of g and b stay in L1 while the
// output's register blocks go over them.
constexpr int64_t kOuterBlockRows = 64;

// Output rows per register block of small_outer_rows. With AVX-512, 8 for every shape here:
// at 32 x 32, 32 x 64 and 64 x 64 blocks of 8 rows ran at 113-140 GF/s on one core against
// 62-75 with 2 or 4 (tests/bench/kernel_blocks.cpp, 2026-11-29), although 8 x 4 vectors of
// 64 x 64 fill all 32 registers. With AVX2 8 rows at 32 x 32 (58-59 GF/s against 49-51
// with 2; kernel_blocks_avx2, 2026-12-02), and at 64 columns 3 rows of 4 vectors
// (outer_block_vectors).
constexpr int outer_block_rows(int kM) {
  if (kLanes == 16 || kM == 32) return 8;
  if (kM == 64) return 3;
  return floor_pow2(kAccumulators / (kM / kLanes));
}

// Vectors per register block of small_outer_rows: a whole row of outputs, but 4 with AVX2 at
// 64 columns. A row of 8 accumulators loads 8 vectors of b and broadcasts 1 of g per 8
// FMAs; 3 rows x 4 vectors (12 accumulators) load 4 and broadcast 3 per 12. E45 chose 6 rows
// x 2 vectors (load 2, broadcast 6) by whole tile-default steps; inside the SAGE backward at
// the layout default's shapes 3 x 4 ran 1.022x faster (in-process alternating pairs, faster
// in 86 of 100; 2026-12-07, E52).
constexpr int outer_block_vectors(int kM) {
  if (kLanes == 8 && kM == 64) return 4;
  return kM / kLanes;
}

// out rows 0 .. kJB, vectors 0 .. kVB (row stride ldo) += sum over the n rows of g (row
// stride ldg) and of b (row stride ldb) of g[r, :kJB]^T b[r, :kVB vectors].
template <int kJB, int kVB>
[[gnu::always_inline]] inline void outer_register_block(const float* __restrict g, int64_t ldg,
                                                        const float* __restrict b, int64_t ldb, int64_t n,
                                                        float* __restrict out, int64_t ldo) {
  FloatVec acc[kJB][kVB] = {};
  for (int64_t r = 0; r < n; ++r) {
    FloatVec pv[kVB];
#pragma GCC unroll 16
    for (int v = 0; v < kVB; ++v) pv[v] = load_vec(b + r * ldb + kLanes * v);
#pragma GCC unroll 16
    for (int j = 0; j < kJB; ++j) {
      const FloatVec gj = broadcast(g[r * ldg + j]);
#pragma GCC unroll 16
      for (int v = 0; v < kVB; ++v) acc[j][v] += gj * pv[v];
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < kJB; ++j)
#pragma GCC unroll 16
    for (int v = 0; v < kVB; ++v) {
      float* o = out + j * ldo + kLanes * v;
      store_vec(o, load_vec(o) + acc[j][v]);
    }
}

// One block of rows [r0, r1) of small_outer_rows. Whole rows of outputs (kVB = kM / kLanes)
// and narrower blocks (kJB output rows at a time, the last block smaller where kJB does not
// divide kJ) read b in place. Either way each output element sums the
// block's rows in order.
template <int kJ, int kM, int kJB, int kVB>
void small_outer_block(const float* __restrict g, int64_t ldg, const float* __restrict b,
                       int64_t ldb, int64_t r0, int64_t r1, float* __restrict out, int64_t ldo) {
  constexpr int kV = kM / kLanes;
  if constexpr (kVB == kV) {
    static_assert(kJ % kJB == 0, "whole-row blocks must tile the output");
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
  } else {
    static_assert(kV % kVB == 0, "register blocks must tile the row");
    const int64_t n = r1 - r0;
    const float *gb = g + r0 * ldg, *bb = b + r0 * ldb;
    for (int c = 0; c < kV; c += kVB) {
      int j = 0;
      for (; j + kJB <= kJ; j += kJB)
        outer_register_block<kJB, kVB>(gb + j, ldg, bb + c * kLanes, ldb, n, out + j * ldo + c * kLanes, ldo);
      if constexpr (kJ % kJB > 0)
        outer_register_block<kJ % kJB, kVB>(gb + j, ldg, bb + c * kLanes, ldb, n, out + j * ldo + c * kLanes, ldo);
    }
  }
}

// out (kJ x kM, row stride ldo) += sum over r in [r0, r1) of g[r, :kJ]^T b[r, :kM]: a
// weight gradient. Register blocks of kJB output rows x kVB vectors go over blocks of
// kOuterBlockRows rows (in L1).
template <int kJ, int kM, int kJB = outer_block_rows(kM), int kVB = outer_block_vectors(kM)>
void small_outer_rows(const float* __restrict g, int64_t ldg, const float* __restrict b,
                      int64_t ldb, int64_t r0, int64_t r1, float* __restrict out, int64_t ldo = kM) {
  static_assert(kM % kLanes == 0, "output width must be a whole number of vectors");
  for (int64_t rb = r0; rb < r1; rb += kOuterBlockRows) {
    const int64_t re = std::min(r1, rb + kOuterBlockRows);
    small_outer_block<kJ, kM, kJB, kVB>(g, ldg, b, ldb, rb, re, out, ldo);
  }
}

// Output columns per block of matmul_rows: with AVX-512 a whole row (up to 4 vectors), with
// AVX2 blocks of 32 columns, 3 rows each (64 -> 64: 78-81 GF/s against 56-62 for whole rows;
// kernel_blocks_avx2, 2026-12-02).
constexpr int matmul_column_block(int kM) { return kLanes == 16 ? kM : 32; }

// out[r] (+)= a[r, :kK] @ w (kK x kM, row-major) for r in [r0, r1) at the SAGE layer's
// shapes for H = 32 and 64: kK = H or 2H with kM = H (the forward, x's gradient); in blocks
// of matmul_column_block(kM) output columns.
template <int kK, int kM>
void matmul_rows(const float* a, int64_t lda, int64_t r0, int64_t r1, const float* w, float* out,
                 int64_t ldo, bool accumulate) {
  constexpr int kMB = matmul_column_block(kM);
  static_assert(kM % kMB == 0, "column blocks must tile the output");
  for (int c = 0; c < kM; c += kMB)
    small_matmul_rows<kK, kMB>(a, lda, r0, r1, w + c, kM, out + c, ldo, accumulate);
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
