// sage_linear's loops over float rows of H = 32 or 64 (trainer/kernels/sage_linear.cpp
// splits the rows into tasks): CSR means gathered in registers into blocks of rows and the
// register-blocked matmuls of small_matmul.h over them.
#include "trainer/kernels/vector/rows.h"

#include <algorithm>

#include "trainer/kernels/vector/small_matmul.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {
namespace {

// dst[:kH] = the weighted sum of the rows of CSR row u of src (one slot's rows of width kH):
// weight 1 / (row length) ("own", other_ptr null) or 1 / (length of v's row in other_ptr)
// ("theirs"). The sum stays in registers and is stored once (no zero-fill, no
// read-modify-write per neighbour). The accumulators are this function's own array: passed
// in by pointer, GCC zeroed them in memory with `rep stos` and copied them out through the
// stack with 16-byte moves, a fifth of the forward kernel's own time on the AVX2 path
// (perf annotate, 2026-12-07).
template <int kH>
[[gnu::always_inline]] inline void gather_mean(const float* src, const int64_t* ptr, const int64_t* idx,
                                               const int64_t* other_ptr, int64_t u, float* dst) {
  constexpr int kV = kH / kLanes;
  FloatVec acc[kV];
#pragma GCC unroll 8
  for (int q = 0; q < kV; ++q) acc[q] = FloatVec{};
  const int64_t b = ptr[u], e = ptr[u + 1];
  for (int64_t k = b; k < e; ++k) {
    const int64_t v = idx[k];
    const float w = 1.0f / float(other_ptr ? other_ptr[v + 1] - other_ptr[v] : e - b);
    const float* row = src + v * kH;
    const FloatVec wv = broadcast(w);
#pragma GCC unroll 8
    for (int q = 0; q < kV; ++q) acc[q] += wv * load_vec(row + kLanes * q);
  }
#pragma GCC unroll 8
  for (int q = 0; q < kV; ++q) store_vec(dst + kLanes * q, acc[q]);
}

// Rows ahead whose consumers' rows the gathers prefetch: a consumer usually comes after its
// producer, beyond the rows just streamed through the cache, and a gather waited on each of
// its rows' cache lines (perf annotate, 2026-12-07).
constexpr int64_t kPrefetchRows = 8;

// Prefetches the rows of CSR row u's entries of one slot's rows (width kH).
template <int kH>
[[gnu::always_inline]] inline void prefetch_rows(const float* src, const int64_t* ptr, const int64_t* idx, int64_t u) {
  for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k)
#pragma GCC unroll 4
    for (int line = 0; line < kH / 16; ++line) __builtin_prefetch(src + idx[k] * kH + 16 * line);
}

// Calls f(slab, u, i) for rows r = r0 + i in [r0, r1) of S slots of N rows each: slab is
// slot r / N's first row, u = r % N (one division per call, not one per row). Before each
// row it prefetches the consumers' rows of the row kPrefetchRows ahead in the same slot
// (both the forward's and the backward's gathers read them).
template <int kH, typename F>
[[gnu::always_inline]] inline void for_slot_rows(const float* x, int64_t N, const CsrGraph& g, int64_t r0, int64_t r1,
                                                 F&& f) {
  int64_t u = r0 % N;
  const float* slab = x + (r0 - u) * kH;
  for (int64_t i = 0; i < r1 - r0; ++i) {
    if (u + kPrefetchRows < N) prefetch_rows<kH>(slab, g.consumer_ptr, g.consumer_idx, u + kPrefetchRows);
    f(slab, u, i);
    if (++u == N) u = 0, slab += N * kH;
  }
}

// Forward: row (s, u)'s means of producers and of consumers, [2 kH], from slot s's rows.
template <int kH>
[[gnu::always_inline]] inline void means_row(const float* slab, const CsrGraph& g, int64_t u, float* m) {
  gather_mean<kH>(slab, g.producer_ptr, g.producer_idx, nullptr, u, m);
  gather_mean<kH>(slab, g.consumer_ptr, g.consumer_idx, nullptr, u, m + kH);
}

// Forward: out = bias + x W_self + means W_means, a block of rows at a time (the block's
// means stay in cache and are not stored: backward does not read them).
template <int kH>
void forward(const float* x, int64_t N, const CsrGraph& g, int64_t b, int64_t e, const float* wt,
             const float* bias, float* out) {
  alignas(64) float means[kMeansBlockRows * 2 * kH];
  for (int64_t b0 = b; b0 < e; b0 += kMeansBlockRows) {
    const int64_t e0 = std::min(e, b0 + kMeansBlockRows);
    for_slot_rows<kH>(x, N, g, b0, e0, [&](const float* slab, int64_t u, int64_t i) {
      means_row<kH>(slab, g, u, means + i * 2 * kH);
    });
    // The output rows start as the bias, written per block while in cache (whole vectors:
    // std::copy was a libc call a row).
    for (int64_t r = b0; r < e0; ++r)
      for (int j = 0; j < kH; j += kLanes) store_vec(out + r * kH + j, load_vec(bias + j));
    matmul_rows<kH, kH>(x, kH, b0, e0, wt, out, kH, true);
    matmul_rows<2 * kH, kH>(means, 2 * kH, 0, e0 - b0, wt + kH * kH, out + b0 * kH, kH, true);
  }
}

// Backward: the means of slot s's rows of out's gradient (slab) through which node v's row
// reached the forward's means: of v's consumers u, each over |P(u)| (v was in u's producer
// mean), then of v's producers w, each over |C(w)| (v was in w's consumer mean); [2 kH].
template <int kH>
[[gnu::always_inline]] inline void grad_means_row(const float* slab, const CsrGraph& g, int64_t v, float* m) {
  gather_mean<kH>(slab, g.consumer_ptr, g.consumer_idx, g.producer_ptr, v, m);
  gather_mean<kH>(slab, g.producer_ptr, g.producer_idx, g.consumer_ptr, v, m + kH);
}

// With E = [g, grad means]: x's gradient E ws (+ also_x) and gws = E^T x, a block of rows at
// a time (E's block stays in cache; no row of g W, 3 kH wide, goes to memory, and the
// weight's gradient reads x instead of the forward's means, which are never stored).
template <int kH>
void backward(const float* g, const float* x, int64_t N, const CsrGraph& graph, int64_t r0, int64_t r1,
              const float* ws, const float* also_x, float* gx, float* gws, double* gb) {
  std::fill(gws, gws + 3 * kH * kH, 0.0f);
  Row32Double bias[kH / 32];  // the bias's sums, 32 columns each, in double
  alignas(64) float means[kMeansBlockRows * 2 * kH];
  for (int64_t b0 = r0; b0 < r1; b0 += kMeansBlockRows) {
    const int64_t e0 = std::min(r1, b0 + kMeansBlockRows), n = e0 - b0;
    for_slot_rows<kH>(g, N, graph, b0, e0, [&](const float* slab, int64_t v, int64_t i) {
      grad_means_row<kH>(slab, graph, v, means + i * 2 * kH);
    });
    matmul_rows<kH, kH>(g, kH, b0, e0, ws, gx, kH, false);
    matmul_rows<2 * kH, kH>(means, 2 * kH, 0, n, ws + kH * kH, gx + b0 * kH, kH, true);
    if (also_x)  // added after the sum, as the autograd engine adds two gradients: the same bits
      for (int64_t j = b0 * kH; j < e0 * kH; j += kLanes) store_vec(gx + j, load_vec(gx + j) + load_vec(also_x + j));
    small_outer_rows<kH, kH>(g, kH, x, kH, b0, e0, gws);
    small_outer_rows<2 * kH, kH>(means, 2 * kH, x + b0 * kH, kH, 0, n, gws + kH * kH);
    // While the block's rows of g are in cache. A pass over all of g after the loop read
    // them from memory again: the backward at the layout default's shapes ran 1.018x faster
    // this way on the AVX2 path and 1.028x on AVX-512 (in-process alternating pairs, faster
    // in 74 of 80 and 77 of 80; 2026-12-07, E52). Rows in order either way: the same sums.
    for (int64_t r = b0; r < e0; ++r)
      for (int q = 0; q < kH / 32; ++q) bias[q].add(load_row32(g + r * kH + 32 * q));
  }
  for (int q = 0; q < kH / 32; ++q) bias[q].store(gb + 32 * q);
}

}  // namespace

void sage_forward(int64_t H, const float* x, int64_t N, const CsrGraph& graph, int64_t b, int64_t e,
                  const float* wt, const float* bias, float* out) {
  if (H == 64) forward<64>(x, N, graph, b, e, wt, bias, out);
  else forward<32>(x, N, graph, b, e, wt, bias, out);
}

void sage_backward(int64_t H, const float* g, const float* x, int64_t N, const CsrGraph& graph, int64_t r0,
                   int64_t r1, const float* ws, const float* also_x, float* gx, float* gws, double* gb) {
  if (H == 64) backward<64>(g, x, N, graph, r0, r1, ws, also_x, gx, gws, gb);
  else backward<32>(g, x, N, graph, r0, r1, ws, also_x, gx, gws, gb);
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
