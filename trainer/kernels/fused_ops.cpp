#include "trainer/kernels/fused_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/random.h"

namespace tpuperf {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

constexpr int64_t kGrain = 32;         // rows per parallel task
constexpr int64_t kMaxChunks = 64;     // fixed partial-sum chunks: results independent of threads
constexpr double kTwo16 = 65536.0;     // the mask compares 16 random bits with p * 2^16

// dims < 0: any number of dimensions.
void check_states(const Tensor& t, int64_t dims, const char* what) {
  TORCH_CHECK(dims < 0 || t.dim() == dims, what, " must have ", dims, " dimensions, got ",
              t.sizes());
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble, what,
              " must be float32 or float64, got ", t.scalar_type());
}

uint64_t drop_threshold(double p) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  return static_cast<uint64_t>(std::llround(p * kTwo16));
}

// The hash of elements 4k .. 4k + 3: the k-th output of SplitMix64(seed), computed without
// stepping through the ones before. Element i uses its 16-bit lane i % 4.
inline uint64_t hash_of_quad(uint64_t seed, int64_t i) {
  return splitmix64(seed + kSplitMix64Gamma * (static_cast<uint64_t>(i) >> 2));
}

inline bool keeps(uint64_t seed, int64_t i, uint64_t threshold) {
  return ((hash_of_quad(seed, i) >> (16 * (i & 3))) & 0xffffULL) >= threshold;
}

// The dropout multipliers (1 / (1 - p) or 0; all 1 without dropout) of elements
// at .. at + H - 1.
template <typename T>
[[gnu::always_inline]] inline void fill_keep(T* keep, uint64_t seed, int64_t at, int64_t H, uint64_t threshold, T scale) {
  if (threshold == 0) {
    std::fill(keep, keep + H, T(1));
    return;
  }
  // Elements before the first quad boundary, whole quads (one hash for four elements, no
  // branches), then the rest.
  const int64_t head = std::min<int64_t>(H, (4 - (at & 3)) & 3);
  const int64_t quads = (H - head) / 4;
  for (int64_t j = 0; j < head; ++j) keep[j] = scale * T(keeps(seed, at + j, threshold));
  for (int64_t q = 0; q < quads; ++q) {
    const int64_t j = head + 4 * q;
    const uint64_t h = hash_of_quad(seed, at + j);
    for (int k = 0; k < 4; ++k) keep[j + k] = scale * T(((h >> (16 * k)) & 0xffffULL) >= threshold);
  }
  for (int64_t j = head + 4 * quads; j < H; ++j) keep[j] = scale * T(keeps(seed, at + j, threshold));
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

// Rows per chunk so that there are at most kMaxChunks chunks of at least kGrain rows.
int64_t chunk_rows(int64_t rows) {
  return std::max(kGrain, (rows + kMaxChunks - 1) / kMaxChunks);
}

// -------------------------------------------------------------------- vector helpers
// The hot loops are written with GCC vector extensions, which the compiler maps to the
// target's registers (a FloatVec is the target's widest: 16 floats with AVX-512, else 8;
// wider types are split into several registers).
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
// Accumulators per kernel: enough independent FMAs to hide their latency, few enough to
// stay in registers (32 vector registers with AVX-512, 16 with AVX2).
constexpr int kAccumulators = kLanes == 16 ? 12 : 8;
using FloatVec = float __attribute__((vector_size(4 * kLanes)));

constexpr int floor_pow2(int n) { return n < 2 ? 1 : 2 * floor_pow2(n / 2); }

inline FloatVec load_vec(const float* p) {
  FloatVec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_vec(float* p, const FloatVec& v) { std::memcpy(p, &v, sizeof v); }

// x - 0 is x for every float (-0 included), so this folds to a plain broadcast; 0 + x would
// not (0 + -0 is +0) and costs an add.
inline FloatVec broadcast(float x) { return x - FloatVec{}; }

// A row of the default width (H = 32) as two 16-float vectors (one AVX-512 register each).
// A single 32-float vector type would read the same, but GCC moves such values, wider than
// any register, through the stack: the epilogue ran 2.5x slower that way (measured).
using Float16 = float __attribute__((vector_size(64)));
using Float8 = float __attribute__((vector_size(32)));
using Float4 = float __attribute__((vector_size(16)));
using Double8 = double __attribute__((vector_size(64)));

struct Row32 {
  Float16 lo, hi;
};

inline Row32 operator+(const Row32& a, const Row32& b) { return {a.lo + b.lo, a.hi + b.hi}; }
inline Row32 operator-(const Row32& a, const Row32& b) { return {a.lo - b.lo, a.hi - b.hi}; }
inline Row32 operator*(const Row32& a, const Row32& b) { return {a.lo * b.lo, a.hi * b.hi}; }
inline Row32 operator+(const Row32& a, float b) { return {a.lo + b, a.hi + b}; }
inline Row32 operator-(const Row32& a, float b) { return {a.lo - b, a.hi - b}; }
inline Row32 operator*(const Row32& a, float b) { return {a.lo * b, a.hi * b}; }
inline Row32 operator*(float a, const Row32& b) { return b * a; }

inline Float16 load_float16(const float* p) {
  Float16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_float16(float* p, const Float16& v) { std::memcpy(p, &v, sizeof v); }

inline Row32 load_row32(const float* p) { return {load_float16(p), load_float16(p + 16)}; }

inline void store_row32(float* p, const Row32& r) {
  store_float16(p, r.lo);
  store_float16(p + 16, r.hi);
}

// Halving adds by register shuffles (halves copied out with memcpy went through memory).
inline float sum_float16(const Float16& v) {
  const Float8 e = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Float4 q = __builtin_shufflevector(e, e, 0, 1, 2, 3) + __builtin_shufflevector(e, e, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

inline float row32_sum(const Row32& r) { return sum_float16(r.lo + r.hi); }

// Per-column sums of many rows, in double: the row's four 8-float quarters widened.
struct Row32Double {
  Double8 q[4] = {};
  void add(const Row32& r) {
    q[0] += __builtin_convertvector(__builtin_shufflevector(r.lo, r.lo, 0, 1, 2, 3, 4, 5, 6, 7), Double8);
    q[1] += __builtin_convertvector(__builtin_shufflevector(r.lo, r.lo, 8, 9, 10, 11, 12, 13, 14, 15), Double8);
    q[2] += __builtin_convertvector(__builtin_shufflevector(r.hi, r.hi, 0, 1, 2, 3, 4, 5, 6, 7), Double8);
    q[3] += __builtin_convertvector(__builtin_shufflevector(r.hi, r.hi, 8, 9, 10, 11, 12, 13, 14, 15), Double8);
  }
  void store(double* p) const { std::memcpy(p, q, sizeof q); }
};

// The dropout multipliers (scale or 0) of row `row` of width 32, elements 32 row ..
// 32 row + 31, exactly as keeps() draws them: the row's 8 hashes as one vector, each hash's
// four 16-bit lanes compared with the threshold (< 2^16). Their mask bytes go to `mask`.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "row32_keep reads hash lanes little-endian");
inline Row32 row32_keep(uint64_t seed, int64_t row, uint16_t threshold, float scale, uint8_t* mask) {
  using U64x8 = uint64_t __attribute__((vector_size(64)));
  using U16x32 = uint16_t __attribute__((vector_size(64)));
  using I16x32 = int16_t __attribute__((vector_size(64)));
  using I16x16 = int16_t __attribute__((vector_size(32)));
  using I8x32 = int8_t __attribute__((vector_size(32)));
  // hash_of_quad for quads q = 8 row + j, j = 0..7: splitmix64(seed + gamma q) mixes
  // seed + gamma (8 row) + gamma (j + 1), a per-row base plus a constant vector, so only
  // one scalar multiply depends on the row.
  const U64x8 steps = U64x8{1, 2, 3, 4, 5, 6, 7, 8} * kSplitMix64Gamma;
  const U64x8 x = splitmix64_mix((seed + kSplitMix64Gamma * 8 * static_cast<uint64_t>(row)) + steps);
  U16x32 lanes;  // little-endian: lane k of hash q is element 4 q + k
  std::memcpy(&lanes, &x, sizeof lanes);
  const I16x32 kept = -(lanes >= threshold);  // 1 or 0
  const I8x32 bytes = __builtin_convertvector(kept, I8x32);
  std::memcpy(mask, &bytes, sizeof bytes);
  const I16x16 lo = __builtin_shufflevector(kept, kept, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const I16x16 hi = __builtin_shufflevector(kept, kept, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  return {__builtin_convertvector(lo, Float16) * scale, __builtin_convertvector(hi, Float16) * scale};
}

// The mask bytes of a row (0 or 1) times scale.
inline Row32 row32_of_mask(const uint8_t* mask, float scale) {
  using U8x16 = uint8_t __attribute__((vector_size(16)));
  U8x16 lo, hi;
  std::memcpy(&lo, mask, sizeof lo);
  std::memcpy(&hi, mask + 16, sizeof hi);
  return {__builtin_convertvector(lo, Float16) * scale, __builtin_convertvector(hi, Float16) * scale};
}

// GELU on 16 floats, exact form 0.5 z (1 + erf(z / sqrt 2)), and its derivative, without
// LibTorch's separate passes over memory (measured: they took 15% of a tile step).
// erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), whose exp(-x^2) is also the
// Gaussian density of the derivative; exp by range reduction to [-ln2/2, ln2/2] and the
// Cephes expf polynomial.
using Int32x16 = int32_t __attribute__((vector_size(64)));

inline Float16 select(const Int32x16& cond, const Float16& yes, const Float16& no) { return cond ? yes : no; }

// exp(x) for x <= 0; 0 below -80 (exp(-80) ~ 1.8e-35) instead of values near the denormal
// range, which the CPU computes slowly (later products may still get there, rarely).
inline Float16 exp_nonpositive(const Float16& x_in) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const Int32x16 tiny = x_in < -80.0f;
  const Float16 x = select(tiny, Float16{} - 80.0f, x_in);
  const Float16 shifted = x * 1.44269504088896341f + kRound;
  const Float16 n = shifted - kRound;
  const Float16 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  Float16 poly = r * 1.9875691500e-4f + 1.3981999507e-3f;
  poly = poly * r + 8.3334519073e-3f;
  poly = poly * r + 4.1665795894e-2f;
  poly = poly * r + 1.6666665459e-1f;
  poly = poly * r + 5.0000001201e-1f;
  poly = poly * (r * r) + r + 1.0f;
  using UInt32x16 = uint32_t __attribute__((vector_size(64)));
  UInt32x16 n_bits;  // unsigned: a NaN input must not make the shift overflow a signed int
  std::memcpy(&n_bits, &shifted, sizeof n_bits);
  const UInt32x16 bits = (n_bits - 0x4B400000u + 127u) << 23;  // kRound's bits off: n, biased
  Float16 two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return select(tiny, Float16{}, poly * two_n);
}

struct Gelu16 {
  Float16 value, slope;  // gelu(z) and gelu'(z)
};

inline Gelu16 gelu16(const Float16& z) {
  const Float16 x = z * 0.70710678118654752f;  // z / sqrt 2
  const Float16 ax = select(x < 0.0f, -x, x);
  const Float16 t = 1.0f / (1.0f + 0.3275911f * ax);
  Float16 poly = t * 1.061405429f - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const Float16 gauss = exp_nonpositive(-ax * ax);  // exp(-z^2 / 2)
  // Phi(z) = (1 + erf(x)) / 2 with erf(|x|) = 1 - tail: for z < 0 it is tail / 2 itself,
  // which keeps its relative precision far out (1 - erf would round it away).
  const Float16 half_tail = 0.5f * (poly * t * gauss);
  const Float16 cdf = select(x < 0.0f, half_tail, 1.0f - half_tail);
  return {z * cdf, cdf + z * gauss * 0.39894228040143268f};  // 1 / sqrt(2 pi)
}

inline Row32 gelu_row32(const Row32& z, Row32* slope) {
  const Gelu16 lo = gelu16(z.lo), hi = gelu16(z.hi);
  if (slope) *slope = {lo.slope, hi.slope};
  return {lo.value, hi.value};
}

// The epilogue's rows for any width and type, as functions of __restrict pointers: without
// them the compiler must assume the scratch rows alias the tensors and keeps these loops
// scalar. (Float rows of the default width take the Row32 versions below.)

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

// The same rows for float and H = 32 (the default width) on whole-row vectors, with the
// GELU inside: the forward reads z, not gelu(z), and the backward recomputes gelu(z) and
// gelu'(z) from z and returns z's gradient. mask is null without dropout.
inline void epilogue_forward_row32(int64_t row, const float* x, const float* z, uint64_t seed,
                                   uint16_t threshold, float scale, const Row32& gamma,
                                   const Row32& beta, float eps, uint8_t* mask, float* out,
                                   float& mean, float& rstd) {
  Row32 r = gelu_row32(load_row32(z), nullptr);
  if (mask) r = r * row32_keep(seed, row, threshold, scale, mask);
  r = r + load_row32(x);
  const float mu = row32_sum(r) / 32.0f;
  const Row32 d = r - mu;
  const float inv = 1.0f / std::sqrt(row32_sum(d * d) / 32.0f + eps);
  store_row32(out, d * inv * gamma + beta);
  mean = mu;
  rstd = inv;
}

// mask: the row's 32 mask bytes (0 or 1), all ones without dropout (scale 1).
inline void epilogue_backward_row32(const float* x, const float* z, const uint8_t* mask, float scale,
                                    const float* go, const Row32& gamma, float mu, float inv,
                                    float* gx, float* gz, Row32Double& acc_g, Row32Double& acc_b) {
  const Row32 keep = row32_of_mask(mask, scale);
  Row32 slope;
  const Row32 a = gelu_row32(load_row32(z), &slope);
  const Row32 xhat = (load_row32(x) + a * keep - mu) * inv;
  const Row32 g = load_row32(go);
  const Row32 gy = g * gamma;
  acc_g.add(g * xhat);
  acc_b.add(g);
  const float m1 = row32_sum(gy) / 32.0f, m2 = row32_sum(gy * xhat) / 32.0f;
  const Row32 gr = inv * (gy - m1 - xhat * m2);
  store_row32(gx, gr);
  store_row32(gz, gr * keep * slope);
}

// ------------------------------------------------------------------------ dropout only
struct CounterDropout : torch::autograd::Function<CounterDropout> {
  static Tensor apply_mask(const Tensor& x, double p, uint64_t seed) {
    auto out = torch::empty_like(x);
    const uint64_t threshold = drop_threshold(p);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "counter_dropout", [&] {
      const scalar_t scale = scalar_t(1.0 / (1.0 - p));
      const scalar_t* in = x.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = keeps(seed, i, threshold) ? in[i] * scale : scalar_t(0);
      });
    });
    return out;
  }

  static Tensor forward(AutogradContext* ctx, const Tensor& x, double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return apply_mask(x.contiguous(), p, static_cast<uint64_t>(seed));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {apply_mask(grads[0].contiguous(), p, seed), Tensor(), Tensor()};
  }
};

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
    // Float rows of 32 compute the GELU in the loop (gelu16); other shapes take LibTorch's
    // vectorized GELU (a scalar erf in the loop costs more than the pass it saves) and keep
    // its output for backward.
    const bool row32 = x.scalar_type() == torch::kFloat && H == 32 && threshold < 65536;
    Tensor a;
    if (row32) {
      const float *zp = z.data_ptr<float>(), *xp = x.data_ptr<float>();
      const Row32 g32 = load_row32(gamma.contiguous().data_ptr<float>()),
                  b32 = load_row32(beta.contiguous().data_ptr<float>());
      float *op = out.data_ptr<float>(), *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
      const float scale = float(1.0 / (1.0 - p));
      at::parallel_for(0, rows, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row)
          epilogue_forward_row32(row, xp + row * 32, zp + row * 32, useed,
                                 static_cast<uint16_t>(threshold), scale, g32, b32, float(eps),
                                 threshold > 0 ? mk + row * 32 : nullptr, op + row * 32, mp[row],
                                 rp[row]);
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
      const Row32 g32 = load_row32(gamma.contiguous().data_ptr<float>());
      float *ga = grad_a.data_ptr<float>(), *gx = grad_x.data_ptr<float>();
      double* pp = partial.data_ptr<double>();
      const float scale = threshold > 0 ? float(1.0 / (1.0 - p)) : 1.0f;
      at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          Row32Double acc_g, acc_b;
          for (int64_t row = c * per; row < std::min(rows, (c + 1) * per); ++row)
            epilogue_backward_row32(xp + row * 32, zp + row * 32, mk + row * mask_stride, scale,
                                    go + row * 32, g32, mp[row], rp[row], gx + row * 32,
                                    ga + row * 32, acc_g, acc_b);
          acc_g.store(pp + c * 64);
          acc_b.store(pp + c * 64 + 32);
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

// ------------------------------------------------------------------------ CSR gathers
// out[:H] (+)= sum over CSR row u of w(u, v) * src[v * src_width + off : ... + H] (src: one
// slot's rows), where w is 1 / (row length) ("own") or 1 / (length of v's row in
// `other_ptr`) ("theirs").
template <typename T>
void gather_rows(const T* src, int64_t src_width, int64_t off, const int64_t* ptr,
                 const int64_t* idx, const int64_t* other_ptr, int64_t u, int64_t H, T* out) {
  const int64_t b = ptr[u], e = ptr[u + 1];
  if (b == e) return;
  if (!other_ptr) {
    const T w = T(1) / T(e - b);
    for (int64_t k = b; k < e; ++k) {
      const T* row = src + idx[k] * src_width + off;
      for (int64_t j = 0; j < H; ++j) out[j] += w * row[j];
    }
    return;
  }
  for (int64_t k = b; k < e; ++k) {
    const int64_t v = idx[k];
    const T w = T(1) / T(other_ptr[v + 1] - other_ptr[v]);
    const T* row = src + v * src_width + off;
    for (int64_t j = 0; j < H; ++j) out[j] += w * row[j];
  }
}

// ------------------------------------------------------------- rows times a small matrix
// The SAGE layer's matmuls have K and M of H to 3H (32 to 96): too small for a BLAS's
// packing to pay off. These kernels keep a block of outputs in vector registers and
// stream the rows.
// out[r] (+)= a[r, :kK] @ w (kK x kM, row-major) for r in [r0, r1); kR rows share each
// load of w.
template <int kK, int kM, int kR = std::max(1, kAccumulators / (kM / kLanes))>
void small_matmul_rows(const float* __restrict a, int64_t lda, int64_t r0, int64_t r1,
                       const float* __restrict w, float* __restrict out, int64_t ldo,
                       bool accumulate) {
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
        const FloatVec wv = load_vec(w + k * kM + kLanes * v);
#pragma GCC unroll 16
        for (int i = 0; i < kR; ++i) acc[i][v] += ak[i] * wv;
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kR; ++i)
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) store_vec(out + (r + i) * ldo + kLanes * v, acc[i][v]);
  }
  if constexpr (kR > 1) small_matmul_rows<kK, kM, 1>(a, lda, r, r1, w, out, ldo, accumulate);
}

// One block of rows of small_outer_rows.
template <int kJ, int kM, int kJB>
void small_outer_block(const float* __restrict g, int64_t ldg, const float* __restrict b,
                       int64_t ldb, int64_t r0, int64_t r1, float* __restrict out) {
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
        float* o = out + (j0 + j) * kM + kLanes * v;
        store_vec(o, load_vec(o) + acc[j][v]);
      }
  }
}

// out (kJ x kM) += sum over r in [r0, r1) of g[r, :kJ]^T b[r, :kM]: a weight gradient.
// Blocks of kJB output rows stay in registers while blocks of 64 rows (in L1) stream
// through.
template <int kJ, int kM, int kJB = floor_pow2(kAccumulators / (kM / kLanes))>
void small_outer_rows(const float* __restrict g, int64_t ldg, const float* __restrict b,
                      int64_t ldb, int64_t r0, int64_t r1, float* __restrict out) {
  static_assert(kM % kLanes == 0 && kJ % kJB == 0, "blocks must tile the output");
  for (int64_t rb = r0; rb < r1; rb += 64) {
    const int64_t re = std::min(r1, rb + 64);
    small_outer_block<kJ, kM, kJB>(g, ldg, b, ldb, rb, re, out);
  }
}

// The SAGE layer's shapes the vector kernels cover: float with H = 32. Other widths and
// double use LibTorch's BLAS calls on whole tensors, outside any parallel region.
bool has_small_kernels(const Tensor& x) { return x.scalar_type() == torch::kFloat && x.size(-1) == 32; }

// out[r] (+)= a[r, :K] @ w (K x M) for r in [r0, r1), H = 32's shapes.
void matmul_rows(const float* a, int64_t lda, int64_t r0, int64_t r1, const float* w, int64_t K,
                 int64_t M, float* out, int64_t ldo, bool accumulate) {
  if (K == 32 && M == 32) return small_matmul_rows<32, 32>(a, lda, r0, r1, w, out, ldo, accumulate);
  if (K == 64 && M == 32) return small_matmul_rows<64, 32>(a, lda, r0, r1, w, out, ldo, accumulate);
  TORCH_CHECK(K == 32 && M == 96, "matmul_rows: no kernel for ", K, " x ", M);
  small_matmul_rows<32, 96>(a, lda, r0, r1, w, out, ldo, accumulate);
}

// The SAGE layer's parameter gradients: g^T [x | means] (H x 3H, the weight's) and the
// column sums of g (the bias's), from g (rows x H), x (rows x H) and means (rows x 2H).
// Partial sums over a fixed split of the rows (at most kParamGradChunks parts: each part's
// H x 3H partial is written and read once more), added in order: the result does not
// depend on the number of threads.
constexpr int64_t kParamGradChunks = 8;

std::pair<Tensor, Tensor> sage_param_grads(const Tensor& g, const Tensor& x, const Tensor& means) {
  const int64_t H = g.size(-1), rows = g.numel() / H;
  const auto g2 = g.reshape({rows, H}), x2 = x.reshape({rows, H}), m2 = means.reshape({rows, 2 * H});
  if (!has_small_kernels(g)) return {torch::cat({g2.t().mm(x2), g2.t().mm(m2)}, 1), g2.sum(0)};
  const int64_t per = std::max(kGrain, (rows + kParamGradChunks - 1) / kParamGradChunks);
  const int64_t chunks = std::max<int64_t>(1, (rows + per - 1) / per);
  auto px = torch::empty({chunks, H, H}, g.options()), pm = torch::empty({chunks, H, 2 * H}, g.options());
  auto pb = torch::empty({chunks, H}, g.options().dtype(torch::kDouble));  // long sums: double
  const float *gp = g2.data_ptr<float>(), *xp = x2.data_ptr<float>(), *mp = m2.data_ptr<float>();
  float *pxp = px.data_ptr<float>(), *pmp = pm.data_ptr<float>();
  double* pbp = pb.data_ptr<double>();
  at::parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = std::min(rows, c * per), r1 = std::min(rows, r0 + per);
      std::fill(pxp + c * H * H, pxp + (c + 1) * H * H, 0.0f);
      std::fill(pmp + c * H * 2 * H, pmp + (c + 1) * H * 2 * H, 0.0f);
      small_outer_rows<32, 32>(gp, H, xp, H, r0, r1, pxp + c * H * H);
      small_outer_rows<32, 64>(gp, H, mp, 2 * H, r0, r1, pmp + c * H * 2 * H);
      Row32Double bias;
      for (int64_t r = r0; r < r1; ++r) bias.add(load_row32(gp + r * H));
      bias.store(pbp + c * H);
    }
  });
  return {torch::cat({px.sum(0), pm.sum(0)}, 1), pb.sum(0).to(g.scalar_type())};
}

// --------------------------------------------------------------------- SAGE linear
// z = linear(cat(x, mean of producers' x, mean of consumers' x)) per node, aggregating
// before the matmul: the means are of H-wide rows (CSR gathers), and the two matmuls
// (self, means) use the small-matrix kernel. The means are kept for weight's gradient.
struct SageLinear : torch::autograd::Function<SageLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& weight,
                        const Tensor& bias, const Tensor& pptr, const Tensor& pidx,
                        const Tensor& cptr, const Tensor& cidx) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2);
    TORCH_CHECK(weight.size(0) == H && weight.size(1) == 3 * H && bias.numel() == H,
                "sage_linear: weight ", weight.sizes(), " and bias ", bias.sizes(),
                " do not fit states ", x.sizes());
    TORCH_CHECK(weight.scalar_type() == x.scalar_type() && bias.scalar_type() == x.scalar_type(),
                "sage_linear: weight, bias and states differ in type");
    TORCH_CHECK(pptr.numel() == N + 1, "sage_linear: adjacency of ", pptr.numel() - 1,
                " nodes for states of ", N);
    // Each row of the means is zeroed just before its gathers add into it (in cache; a
    // zero-filled tensor would be one more pass over memory).
    auto means = torch::empty({S, N, 2 * H}, x.options());
    const auto wt = weight.t().contiguous();  // 3H x H: the self rows, then the means'
    const auto bias_row = bias.reshape({1, H});
    const bool kernels = has_small_kernels(x);
    auto out = kernels ? bias_row.expand({S * N, H}).contiguous() : torch::Tensor();
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sage_linear", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* mp = means.data_ptr<scalar_t>();
      const int64_t *pp = pptr.data_ptr<int64_t>(), *pi = pidx.data_ptr<int64_t>(),
                    *cp = cptr.data_ptr<int64_t>(), *ci = cidx.data_ptr<int64_t>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        // Blocks of kGrain rows: the kernels read the means while they are in cache.
        for (int64_t b0 = b; b0 < e; b0 += kGrain) {
          const int64_t e0 = std::min(e, b0 + kGrain);
          for (int64_t r = b0; r < e0; ++r) {
            const int64_t s = r / N, u = r % N;
            const scalar_t* slab = xp + s * N * H;
            std::fill(mp + r * 2 * H, mp + (r + 1) * 2 * H, scalar_t(0));
            gather_rows(slab, H, 0, pp, pi, static_cast<const int64_t*>(nullptr), u, H, mp + r * 2 * H);
            gather_rows(slab, H, 0, cp, ci, static_cast<const int64_t*>(nullptr), u, H, mp + r * 2 * H + H);
          }
          if (kernels) {
            const auto* xf = reinterpret_cast<const float*>(xp);
            const auto* mf = reinterpret_cast<const float*>(mp);
            const float* wp = wt.data_ptr<float>();
            float* op = out.data_ptr<float>();
            matmul_rows(xf, H, b0, e0, wp, H, H, op, H, true);
            matmul_rows(mf, 2 * H, b0, e0, wp + H * H, 2 * H, H, op, H, true);
          }
        }
      });
    });
    if (!kernels)
      out = torch::addmm(bias_row, x.reshape({S * N, H}), wt.narrow(0, 0, H))
                .addmm_(means.reshape({S * N, 2 * H}), wt.narrow(0, H, 2 * H));
    out = out.view({S, N, H});
    ctx->save_for_backward({x, means, weight, pptr, pidx, cptr, cidx});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &means = saved[1], &weight = saved[2];
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2);
    // The gradient of each node's [x, means] row, then x's gradient gathers it back.
    const bool kernels = has_small_kernels(g);
    auto grad_in = kernels ? torch::empty({S, N, 3 * H}, g.options())
                           : g.reshape({S * N, H}).mm(weight).view({S, N, 3 * H});
    auto grad_x = torch::empty_like(x);
    if (kernels) {
      const float* gp = g.data_ptr<float>();
      const auto w = weight.contiguous();  // H x 3H
      const float* wp = w.data_ptr<float>();
      float* ip = grad_in.data_ptr<float>();
      at::parallel_for(0, S * N, 2 * kGrain, [&](int64_t b, int64_t e) {
        matmul_rows(gp, H, b, e, wp, H, 3 * H, ip, 3 * H, false);
      });
    }
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "sage_linear_backward", [&] {
      const scalar_t* ip = grad_in.data_ptr<scalar_t>();
      scalar_t* xp = grad_x.data_ptr<scalar_t>();
      const int64_t *pp = saved[3].data_ptr<int64_t>(), *pi = saved[4].data_ptr<int64_t>(),
                    *cp = saved[5].data_ptr<int64_t>(), *ci = saved[6].data_ptr<int64_t>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t s = r / N, v = r % N;
          const scalar_t* slab = ip + s * N * 3 * H;
          scalar_t* o = xp + r * H;
          for (int64_t j = 0; j < H; ++j) o[j] = ip[r * 3 * H + j];
          // v's row reached each consumer u of v through u's producer mean (weight
          // 1/|P(u)|), each producer w of v through w's consumer mean (1/|C(w)|).
          gather_rows(slab, 3 * H, H, cp, ci, pp, v, H, o);
          gather_rows(slab, 3 * H, 2 * H, pp, pi, cp, v, H, o);
        }
      });
    });
    // bias has x's type (checked in forward).
    auto [grad_weight, grad_bias] = sage_param_grads(g, x, means);
    return {grad_x, grad_weight, grad_bias, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ------------------------------------------------------------------ add gathered rows
struct AddGathered : torch::autograd::Function<AddGathered> {
  static Tensor forward(AutogradContext* ctx, const Tensor& node_in, const Tensor& table_in,
                        const Tensor& index) {
    const auto node = node_in.contiguous(), table = table_in.contiguous();
    const int64_t N = node.size(0), H = node.size(1), S = table.size(0), T = table.size(1);
    TORCH_CHECK(table.size(2) == H && index.numel() == N && table.scalar_type() == node.scalar_type(),
                "add_gathered: node ", node.sizes(), ", table ", table.sizes(), " and index ",
                index.sizes(), " do not fit");
    const int64_t* ip = index.data_ptr<int64_t>();
    for (int64_t u = 0; u < N; ++u)
      TORCH_CHECK(ip[u] >= 0 && ip[u] < T, "add_gathered: index ", ip[u], " outside [0, ", T, ")");
    auto out = torch::empty({S, N, H}, node.options());
    AT_DISPATCH_FLOATING_TYPES(node.scalar_type(), "add_gathered", [&] {
      const scalar_t* np = node.data_ptr<scalar_t>();
      const scalar_t* tp = table.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, S * N, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t s = r / N, u = r % N;
          const scalar_t* t = tp + (s * T + ip[u]) * H;
          for (int64_t j = 0; j < H; ++j) op[r * H + j] = np[u * H + j] + t[j];
        }
      });
    });
    ctx->save_for_backward({index});
    ctx->saved_data["T"] = T;
    return out;
  }

  // Each output row is summed by one task in a fixed order: no dependence on threads.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto index = ctx->get_saved_variables()[0];
    const auto g = grads[0].contiguous();
    const int64_t S = g.size(0), N = g.size(1), H = g.size(2), T = ctx->saved_data["T"].toInt();
    auto grad_node = torch::empty({N, H}, g.options());
    auto grad_table = torch::zeros({S, T, H}, g.options());
    const int64_t* ip = index.data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "add_gathered_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* np = grad_node.data_ptr<scalar_t>();
      scalar_t* tp = grad_table.data_ptr<scalar_t>();
      // Slots outer: each slot's rows of a node range are read contiguously.
      at::parallel_for(0, N, kGrain, [&](int64_t b, int64_t e) {
        std::copy(gp + b * H, gp + e * H, np + b * H);
        for (int64_t s = 1; s < S; ++s) {
          const scalar_t* gs = gp + (s * N + b) * H;
          scalar_t* o = np + b * H;
          for (int64_t k = 0; k < (e - b) * H; ++k) o[k] += gs[k];
        }
      });
      at::parallel_for(0, S, 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s)
          for (int64_t u = 0; u < N; ++u) {
            scalar_t* o = tp + (s * T + ip[u]) * H;
            for (int64_t j = 0; j < H; ++j) o[j] += gp[(s * N + u) * H + j];
          }
      });
    });
    return {grad_node, grad_table, Tensor()};
  }
};

// ------------------------------------------------------------------ segment mean, max
struct SegmentMeanMax : torch::autograd::Function<SegmentMeanMax> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& offsets) {
    const auto x = x_in.contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    TORCH_CHECK(G >= 0 && off[0] == 0 && off[G] == N, "segment_mean_max: offsets do not cover ",
                N, " nodes");
    auto out = torch::zeros({S, G, 2 * H}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          if (n0 == n1) continue;
          scalar_t* mean = op + sg * 2 * H;
          scalar_t* max = mean + H;
          std::fill(max, max + H, -std::numeric_limits<scalar_t>::infinity());
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j) {
              mean[j] += row[j];
              max[j] = std::max(max[j], row[j]);
            }
          }
          for (int64_t j = 0; j < H; ++j) mean[j] /= scalar_t(n1 - n0);
        }
      });
    });
    ctx->save_for_backward({x, out, offsets});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &out = saved[1], &offsets = saved[2];
    const auto g = grads[0].contiguous();
    const int64_t S = x.size(0), N = x.size(1), H = x.size(2), G = offsets.numel() - 1;
    const int64_t* off = offsets.data_ptr<int64_t>();
    auto gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "segment_mean_max_backward", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const scalar_t* op = out.data_ptr<scalar_t>();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* gxp = gx.data_ptr<scalar_t>();
      at::parallel_for(0, S * G, 1, [&](int64_t b, int64_t e) {
        std::vector<scalar_t> share(static_cast<size_t>(H));
        for (int64_t sg = b; sg < e; ++sg) {
          const int64_t s = sg / G, g = sg % G, n0 = off[g], n1 = off[g + 1];
          const scalar_t* max = op + sg * 2 * H + H;
          const scalar_t* gmean = gp + sg * 2 * H;
          const scalar_t* gmax = gmean + H;
          std::fill(share.begin(), share.end(), scalar_t(0));
          for (int64_t n = n0; n < n1; ++n)
            for (int64_t j = 0; j < H; ++j) share[j] += xp[(s * N + n) * H + j] == max[j];
          for (int64_t j = 0; j < H; ++j) share[j] = gmax[j] / std::max(share[j], scalar_t(1));
          for (int64_t n = n0; n < n1; ++n) {
            const scalar_t* row = xp + (s * N + n) * H;
            scalar_t* grow = gxp + (s * N + n) * H;
            for (int64_t j = 0; j < H; ++j)
              grow[j] = gmean[j] / scalar_t(n1 - n0) + (row[j] == max[j] ? share[j] : scalar_t(0));
          }
        }
      });
    });
    return {gx, Tensor()};
  }
};

}  // namespace

bool dropout_keeps(uint64_t seed, int64_t i, double p) { return keeps(seed, i, drop_threshold(p)); }

uint64_t draw_dropout_seed() {
  return static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

torch::Tensor counter_dropout(const torch::Tensor& x, double p, uint64_t seed) {
  if (drop_threshold(p) == 0) return x;  // p below 2^-17 rounds to no dropout
  return CounterDropout::apply(x, p, static_cast<int64_t>(seed));
}

torch::Tensor gelu_dropout_add_layer_norm(const torch::Tensor& z, const torch::Tensor& x,
                                          const torch::Tensor& gamma, const torch::Tensor& beta,
                                          double eps, double p, uint64_t seed) {
  check_states(x, -1, "gelu_dropout_add_layer_norm: x");
  TORCH_CHECK(gamma.numel() == x.size(-1) && beta.numel() == x.size(-1),
              "gelu_dropout_add_layer_norm: LayerNorm weights of ", gamma.numel(),
              " for features of ", x.size(-1));
  return GeluDropoutAddLayerNorm::apply(z, x, gamma, beta, eps, p, static_cast<int64_t>(seed));
}

torch::Tensor sage_linear(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias, const Adjacency& adj) {
  check_states(x, 3, "sage_linear: x");
  return SageLinear::apply(x, weight, bias, adj.producer_ptr, adj.producer_idx, adj.consumer_ptr,
                           adj.consumer_idx);
}

torch::Tensor add_gathered(const torch::Tensor& node, const torch::Tensor& table,
                           const torch::Tensor& index) {
  check_states(node, 2, "add_gathered: node");
  check_states(table, 3, "add_gathered: table");
  return AddGathered::apply(node, table, index.to(torch::kInt64).contiguous());
}

torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets) {
  check_states(x, 3, "segment_mean_max: x");
  return SegmentMeanMax::apply(x, torch::tensor(offsets, torch::kInt64));
}

}  // namespace tpuperf
