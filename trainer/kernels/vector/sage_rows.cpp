// sage_linear's loops over float rows of H = 32 or 64 (trainer/kernels/sage_linear.cpp
// splits the rows into tasks): CSR means gathered in registers and the register-blocked
// matmuls of small_matmul.h.
#include "trainer/kernels/vector/rows.h"

#include <algorithm>

#include "trainer/kernels/vector/small_matmul.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {
namespace {

// Rows of one forward block: the kernels read a block's means while they are in cache.
constexpr int64_t kForwardBlock = 32;

// acc (kH / kLanes vectors) += the weighted rows of CSR row u of src (one slot's rows of
// width src_width, columns off .. off + kH): weight 1 / (row length) ("own", other_ptr null)
// or 1 / (length of v's row in other_ptr) ("theirs"). The sum stays in registers: the
// means are stored once (no zero-fill, no read-modify-write per neighbour).
template <int kH>
[[gnu::always_inline]] inline void gather_rows_vec(const float* src, int64_t src_width, int64_t off,
                                                   const int64_t* ptr, const int64_t* idx,
                                                   const int64_t* other_ptr, int64_t u, FloatVec* acc) {
  constexpr int kV = kH / kLanes;
  const int64_t b = ptr[u], e = ptr[u + 1];
  for (int64_t k = b; k < e; ++k) {
    const int64_t v = idx[k];
    const float w = 1.0f / float(other_ptr ? other_ptr[v + 1] - other_ptr[v] : e - b);
    const float* row = src + v * src_width + off;
    const FloatVec wv = broadcast(w);
#pragma GCC unroll 8
    for (int q = 0; q < kV; ++q) acc[q] += wv * load_vec(row + kLanes * q);
  }
}

// Forward: row (s, u)'s means of producers and of consumers, [2 kH], from slot s's rows.
template <int kH>
void means_row(const float* slab, const CsrGraph& g, int64_t u, float* m) {
  constexpr int kV = kH / kLanes;
  FloatVec prod[kV] = {}, cons[kV] = {};
  gather_rows_vec<kH>(slab, kH, 0, g.producer_ptr, g.producer_idx, nullptr, u, prod);
  gather_rows_vec<kH>(slab, kH, 0, g.consumer_ptr, g.consumer_idx, nullptr, u, cons);
  for (int q = 0; q < kV; ++q) {
    store_vec(m + kLanes * q, prod[q]);
    store_vec(m + kH + kLanes * q, cons[q]);
  }
}

template <int kH>
void forward(const float* x, int64_t N, const CsrGraph& g, int64_t b, int64_t e, const float* wt,
             const float* bias, float* means, float* out) {
  for (int64_t b0 = b; b0 < e; b0 += kForwardBlock) {
    const int64_t e0 = std::min(e, b0 + kForwardBlock);
    for (int64_t r = b0; r < e0; ++r) means_row<kH>(x + (r / N) * N * kH, g, r % N, means + r * 2 * kH);
    // The output rows start as the bias, written per block while in cache (whole vectors:
    // std::copy was a libc call a row).
    for (int64_t r = b0; r < e0; ++r)
      for (int j = 0; j < kH; j += kLanes) store_vec(out + r * kH + j, load_vec(bias + j));
    matmul_rows<kH, kH>(x, kH, b0, e0, wt, out, kH, true);
    matmul_rows<2 * kH, kH>(means, 2 * kH, b0, e0, wt + kH * kH, out, kH, true);
  }
}

// Backward: x's gradient of node v of one slot (slab: its rows of 3 kH, the gradient of
// [x, means]). v's row reached each consumer u of v through u's producer mean (weight
// 1/|P(u)|), each producer w of v through w's consumer mean (1/|C(w)|).
template <int kH>
void grad_x(const float* grad_in, int64_t N, const CsrGraph& g, int64_t b, int64_t e, float* gx) {
  constexpr int kV = kH / kLanes;
  for (int64_t r = b; r < e; ++r) {
    const float* slab = grad_in + (r / N) * N * 3 * kH;
    const int64_t v = r % N;
    FloatVec acc[kV];
    for (int q = 0; q < kV; ++q) acc[q] = load_vec(slab + v * 3 * kH + kLanes * q);
    gather_rows_vec<kH>(slab, 3 * kH, kH, g.consumer_ptr, g.consumer_idx, g.producer_ptr, v, acc);
    gather_rows_vec<kH>(slab, 3 * kH, 2 * kH, g.producer_ptr, g.producer_idx, g.consumer_ptr, v, acc);
    for (int q = 0; q < kV; ++q) store_vec(gx + r * kH + kLanes * q, acc[q]);
  }
}

template <int kH>
void param_grads(const float* g, const float* x, const float* means, int64_t r0, int64_t r1, float* px,
                 float* pm, double* pb) {
  std::fill(px, px + kH * kH, 0.0f);
  std::fill(pm, pm + kH * 2 * kH, 0.0f);
  outer_rows<kH, kH>(g, kH, x, kH, r0, r1, px);
  outer_rows<kH, 2 * kH>(g, kH, means, 2 * kH, r0, r1, pm);
  for (int q = 0; q < kH; q += 32) {  // the bias's sums, 32 columns at a time, in double
    Row32Double bias;
    for (int64_t r = r0; r < r1; ++r) bias.add(load_row32(g + r * kH + q));
    bias.store(pb + q);
  }
}

}  // namespace

void sage_forward(int64_t H, const float* x, int64_t N, const CsrGraph& graph, int64_t b, int64_t e,
                  const float* wt, const float* bias, float* means, float* out) {
  if (H == 64) forward<64>(x, N, graph, b, e, wt, bias, means, out);
  else forward<32>(x, N, graph, b, e, wt, bias, means, out);
}

void sage_grad_in(int64_t H, const float* g, const float* w, int64_t b, int64_t e, float* grad_in) {
  if (H == 64) matmul_rows<64, 192>(g, 64, b, e, w, grad_in, 192, false);
  else matmul_rows<32, 96>(g, 32, b, e, w, grad_in, 96, false);
}

void sage_grad_x(int64_t H, const float* grad_in, int64_t N, const CsrGraph& graph, int64_t b, int64_t e,
                 float* gx) {
  if (H == 64) grad_x<64>(grad_in, N, graph, b, e, gx);
  else grad_x<32>(grad_in, N, graph, b, e, gx);
}

void sage_param_grads(int64_t H, const float* g, const float* x, const float* means, int64_t r0, int64_t r1,
                      float* px, float* pm, double* pb) {
  if (H == 64) param_grads<64>(g, x, means, r0, r1, px, pm, pb);
  else param_grads<32>(g, x, means, r0, r1, px, pm, pb);
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
