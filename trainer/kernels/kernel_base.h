// What the fused kernels share (internal to trainer/kernels/): their tunables in one
// place, input checks and an order-fixed row sum. Parallel loops split rows into fixed
// chunks, never by thread count, so results do not depend on the number of threads.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

namespace tpuperf::kernels {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kGrain = 32;           // rows per parallel task
constexpr int64_t kMaxChunks = 64;       // fixed partial-sum chunks: results independent of threads
// Row parts of the backwards that write a partial weight gradient per part (sage_linear,
// row_linear): their tasks.
constexpr int64_t kWeightGradientParts = 8;
constexpr int64_t kDropoutGrain = 4096;  // elements per parallel task of counter_dropout

// dims < 0: any number of dimensions.
inline void check_states(const Tensor& t, int64_t dims, const char* what) {
  TORCH_CHECK(dims < 0 || t.dim() == dims, what, " must have ", dims, " dimensions, got ",
              t.sizes());
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble, what,
              " must be float32 or float64, got ", t.scalar_type());
}

// LayerNorm weights gamma and beta of x's last dimension.
inline void check_layer_norm_weights(const Tensor& x, const Tensor& gamma, const Tensor& beta, const char* what) {
  TORCH_CHECK(gamma.numel() == x.size(-1) && beta.numel() == x.size(-1), what, ": LayerNorm weights of ",
              gamma.numel(), " for features of ", x.size(-1));
}

// Whether the result of a function of these inputs will be differentiated: only then do
// the kernels store what their backward reads (evaluation and ranking run under
// NoGradGuard).
inline bool will_differentiate(std::initializer_list<Tensor> inputs) {
  return torch::GradMode::is_enabled() &&
         std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}

// Every one of the n indices lies in [0, bound): a kernel gathers rows by them unchecked.
inline void check_indices(const int64_t* idx, int64_t n, int64_t bound, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(idx[i] >= 0 && idx[i] < bound, what, ": index ", idx[i], " outside [0, ", bound, ")");
}

// Sum of v[0..H) in 8 interleaved lanes, which the compiler vectorizes.
template <typename T>
[[gnu::always_inline]] inline T row_sum(const T* v, int64_t H) {
  T lane[8] = {};
  const int64_t blocks = H / 8;
  for (int64_t q = 0; q < blocks; ++q)
    for (int k = 0; k < 8; ++k) lane[k] += v[8 * q + k];
  T total = 0;
  for (int64_t t = 0; t < H % 8; ++t) total += v[8 * blocks + t];
  for (int k = 0; k < 8; ++k) total += lane[k];
  return total;
}

// A row width: kH if fixed at compile time (kH > 0), else the run-time value. Kernels whose
// rows take a few operations each (a copy, a few adds of 64 floats) spent most of their
// time on loops of unknown length and their alias checks (docs/experiments E53).
template <int kH>
struct Width {
  static constexpr int kFixed = kH;
  int64_t run_time;
  int64_t value() const { return kH > 0 ? kH : run_time; }
};

// Calls f(Width<kH>) with kH = H for the default models' widths (32 and 64), else 0.
template <typename F>
void with_width(int64_t H, F&& f) {
  if (H == 64) f(Width<64>{H});
  else if (H == 32) f(Width<32>{H});
  else f(Width<0>{H});
}

// Whether rows of type T and Width<kH> are summed in registers (FloatRow below): float rows
// of a width fixed at compile time.
template <int kH, typename T>
constexpr bool kInRegisters = kH > 0 && std::is_same_v<T, float>;

// Calls f(r, s, i) for the flat rows r in [b, e) (b < e) of blocks of M rows, r = s M + i:
// one division per call, not one per row.
template <typename F>
[[gnu::always_inline]] inline void for_flat_rows(int64_t b, int64_t e, int64_t M, F&& f) {
  int64_t s = b / M, i = b % M;
  for (int64_t r = b; r < e; ++r) {
    f(r, s, i);
    if (++i == M) i = 0, ++s;
  }
}

// A row of kH floats (a multiple of 8) in vector registers: a sum of a few rows loaded,
// added and stored once, not added into memory row by row. GCC kept such sums in memory when
// they were arrays of floats; arrays of its vector type stay in registers (embedding_sum's
// forward at the layout default's shapes ran 2.7x faster, docs/experiments E53). Without
// AVX (no -march) GCC makes each vector two SSE halves.
template <int kH>
struct FloatRow {
  static_assert(kH % 8 == 0, "whole vectors of 8 floats");
  typedef float Vec __attribute__((vector_size(32)));
  Vec v[kH / 8];

  [[gnu::always_inline]] void zero() {
    for (auto& q : v) q = Vec{};
  }
  [[gnu::always_inline]] void load(const float* p) {
#pragma GCC unroll 8
    for (int q = 0; q < kH / 8; ++q) std::memcpy(&v[q], p + 8 * q, sizeof(Vec));
  }
  [[gnu::always_inline]] void add(const float* p) {
#pragma GCC unroll 8
    for (int q = 0; q < kH / 8; ++q) {
      Vec x;
      std::memcpy(&x, p + 8 * q, sizeof(Vec));
      v[q] += x;
    }
  }
  // += w * p, elementwise as the generic loops' `o[j] += w * p[j]`: with GCC's default
  // -ffp-contract=fast for C++ and an FMA target both become the same multiply-adds.
  [[gnu::always_inline]] void add_scaled(const float* p, float w) {
#pragma GCC unroll 8
    for (int q = 0; q < kH / 8; ++q) {
      Vec x;
      std::memcpy(&x, p + 8 * q, sizeof(Vec));
      v[q] += w * x;
    }
  }
  [[gnu::always_inline]] void store(float* p) const {
#pragma GCC unroll 8
    for (int q = 0; q < kH / 8; ++q) std::memcpy(p + 8 * q, &v[q], sizeof(Vec));
  }
};

// out (N x H) = the sum over s of g[s] (S x N x H, contiguous), slots added in order: the
// gradient of a per-node input broadcast to every slot. Float rows of 32 and 64 are summed
// in registers, a node at a time (one store a row, not S read-modify-writes); other rows a
// range of nodes at a time, slots inner, each slot's rows of the range read contiguously.
template <typename T>
void sum_over_slots(const T* g, int64_t S, int64_t N, int64_t H, T* out) {
  if (S == 0) {
    std::fill(out, out + N * H, T(0));
    return;
  }
  with_width(H, [&](auto width) {
    constexpr int kH = decltype(width)::kFixed;
    if constexpr (kInRegisters<kH, T>) {
      at::parallel_for(0, N, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) {
          FloatRow<kH> sum;
          sum.load(g + u * kH);
          for (int64_t s = 1; s < S; ++s) sum.add(g + (s * N + u) * kH);
          sum.store(out + u * kH);
        }
      });
    } else {
      const int64_t W = width.value();
      at::parallel_for(0, N, kGrain, [&](int64_t b, int64_t e) {
        std::copy(g + b * W, g + e * W, out + b * W);
        for (int64_t s = 1; s < S; ++s) {
          const T* gs = g + (s * N + b) * W;
          T* o = out + b * W;
          for (int64_t k = 0; k < (e - b) * W; ++k) o[k] += gs[k];
        }
      });
    }
  });
}

// A fixed split of `rows` into `count` parts of `per` rows (the last one shorter; at least
// one part, of at least kGrain rows, at most max_parts of them): partial sums per part, added
// in order, do not depend on the number of threads.
struct RowParts {
  int64_t per, count;
};
inline RowParts row_parts(int64_t rows, int64_t max_parts) {
  const int64_t per = std::max(kGrain, (rows + max_parts - 1) / max_parts);
  return {per, std::max<int64_t>(1, (rows + per - 1) / per)};
}

// Calls f(p, r0, r1) for each part p of `parts` over rows [0, rows): part p is rows
// [r0, r1) = [p per, min(rows, (p + 1) per)), a task per part.
template <typename F>
void for_each_part(const RowParts& parts, int64_t rows, F&& f) {
  at::parallel_for(0, parts.count, 1, [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      const int64_t r0 = std::min(rows, p * parts.per);
      f(p, r0, std::min(rows, r0 + parts.per));
    }
  });
}

// Rows per chunk so that there are at most kMaxChunks chunks of at least kGrain rows.
inline int64_t chunk_rows(int64_t rows) { return row_parts(rows, kMaxChunks).per; }


}  // namespace tpuperf::kernels
