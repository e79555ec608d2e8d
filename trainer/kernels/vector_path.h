// The fused kernels' vector paths: the loops of sage_linear, gelu_dropout_add_layer_norm and
// fused_gelu over float rows of H = 32 or 64, and of row_linear, written once
// (trainer/kernels/vector/) and compiled for two instruction sets, AVX2 + FMA (x86-64-v3,
// 8-float vectors) and AVX-512 (x86-64-v4, 16-float vectors). The kernels call them
// through the table of the path chosen at run time from the CPU's features, so one binary
// (TPUPERF_NATIVE=OFF included) runs the widest path the CPU has; on a CPU without AVX2
// they run their LibTorch definitions.
//
// TPUPERF_VECTOR_ISA=avx512|avx2|none (or use_vector_isa) forces a path, for benchmarking
// and tests: none runs every kernel's LibTorch form (the same math with LibTorch's ops).
// Forcing a path the CPU lacks is an error, not a crash.
#pragma once

#include <cstdint>
#include <string>

namespace tpuperf::kernels {

enum class VectorIsa { kNone, kAvx2, kAvx512 };

// The producer and consumer lists of a graph's nodes as CSR (Adjacency's tensors' data).
struct CsrGraph {
  const int64_t *producer_ptr, *producer_idx, *consumer_ptr, *consumer_idx;
};

// The forward of gelu_dropout_add_layer_norm over float rows of H = 32 or 64:
// out = LayerNorm(x + keep * gelu(z)) (keep: the counter dropout mask of seed, scale or 0;
// no dropout when threshold is 0) and, when xhat is not null, what backward reads: xhat,
// keep * gelu'(z) and 1 / std per row.
struct EpilogueForward {
  const float *x, *z, *gamma, *beta;
  uint64_t seed;
  uint16_t threshold;
  float scale, eps;
  float *out, *xhat, *keep_slope, *rstd;
};

// One instruction set's loops. Every function takes H (32 or 64) and a range of rows; the
// callers split rows into tasks (kernel_base.h) and own the tensors.
struct VectorPath {
  VectorIsa isa;
  const char* name;  // "avx2", "avx512"
  // Rows [b, e) of x (S x N x H): out = bias + x W_self + means W_means (wt: 3H x H, the
  // weight transposed; means: of producers, of consumers, a block of rows at a time, not
  // stored).
  void (*sage_forward)(int64_t H, const float* x, int64_t N, const CsrGraph& graph, int64_t b, int64_t e,
                       const float* wt, const float* bias, float* out);
  // Rows [r0, r1) of the backward from out's gradient g (S x N x H). With E = [g, the means
  // of g through which x's rows reached the forward's means] (rows x 3H): x's gradient
  // (rows of grad_x) = E ws, plus the same rows of also_x when it is not null (x's gradient
  // from elsewhere, added as a sum of two tensors would: the same bits); ws (3H x H) stacks
  // the weight's H x H blocks W_self, W_producers, W_consumers. This part's gradient of ws,
  // gws (3H x H) = E^T x, and of the bias, gb (H doubles) = column sums of g; gws and gb
  // overwritten.
  void (*sage_backward)(int64_t H, const float* g, const float* x, int64_t N, const CsrGraph& graph, int64_t r0,
                        int64_t r1, const float* ws, const float* also_x, float* grad_x, float* gws, double* gb);
  // gelu_dropout_add_layer_norm over rows [b, e).
  void (*epilogue_forward)(int64_t H, int64_t b, int64_t e, const EpilogueForward& args);
  // Its backward over rows [r0, r1): gx, gz, and gamma's then beta's sums of those rows
  // stored to acc (2H doubles).
  void (*epilogue_backward)(int64_t H, int64_t r0, int64_t r1, const float* xhat, const float* keep_slope,
                            const float* gout, const float* gamma, const float* rstd, float* gx, float* gz,
                            double* acc);
  // Elements [b, e): out = gelu(z), or grad * gelu'(z) when grad is not null.
  void (*gelu)(const float* z, const float* grad, float* out, int64_t b, int64_t e);
  // A linear layer over rows [r0, r1) of x (rows of K floats), M (a multiple of 64)
  // outputs: y = x wt + bias (wt: K x M, the weight transposed; bias may be null).
  void (*linear_forward)(int64_t K, int64_t M, const float* x, int64_t r0, int64_t r1, const float* wt,
                         const float* bias, float* y);
  // Its backward from y's gradient g over the same rows: x's gradient g w (w: M x K, the
  // weight; K a multiple of 64; skipped when gx is null), and this part's gradient of wt,
  // gwt (K x M) = x^T g, and of the bias, gb (M doubles) = column sums of g; gwt and gb
  // overwritten.
  void (*linear_backward)(int64_t K, int64_t M, const float* x, const float* g, int64_t r0, int64_t r1,
                          const float* w, float* gx, float* gwt, double* gb);
};

// The path in use: the widest the CPU has, or TPUPERF_VECTOR_ISA's, or the last
// use_vector_isa's; null for none (LibTorch).
const VectorPath* vector_path();

// The widest path this CPU can run.
VectorIsa best_vector_isa();

// Uses `isa` from now on (set it before any kernel runs, not during one); throws
// Error when this CPU cannot run it.
void use_vector_isa(VectorIsa isa);

// "avx512", "avx2" or "none"; parse_vector_isa is its inverse (Error
// naming the accepted values otherwise).
std::string vector_isa_name(VectorIsa isa);
VectorIsa parse_vector_isa(const std::string& name);

// For logs: e.g. "avx512 (best on this CPU)" or "avx2 (forced by TPUPERF_VECTOR_ISA; the CPU has avx512)".
std::string describe_vector_path();

}  // namespace tpuperf::kernels
