// Vector helpers of the fused kernels (internal to trainer/kernels/): GCC vector types
// for the target's registers, rows of the default width (H = 32) as two 16-float vectors,
// GELU with its slope, and the dropout mask of a whole row.
#pragma once

#include <cstdint>
#include <cstring>

#include "trainer/kernels/dropout_mask.h"

namespace tpuperf::kernels {

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
// four 16-bit lanes compared with the threshold (< 2^16).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "row32_keep reads hash lanes little-endian");
inline Row32 row32_keep(uint64_t seed, int64_t row, uint16_t threshold, float scale) {
  using U64x8 = uint64_t __attribute__((vector_size(64)));
  using U16x32 = uint16_t __attribute__((vector_size(64)));
  using I16x32 = int16_t __attribute__((vector_size(64)));
  using I16x16 = int16_t __attribute__((vector_size(32)));
  // hash_of_quad for quads q = 8 row + j, j = 0..7: splitmix64(seed + gamma q) mixes
  // seed + gamma (8 row) + gamma (j + 1), a per-row base plus a constant vector, so only
  // one scalar multiply depends on the row.
  const U64x8 steps = U64x8{1, 2, 3, 4, 5, 6, 7, 8} * kSplitMix64Gamma;
  const U64x8 x = splitmix64_mix((seed + kSplitMix64Gamma * 8 * static_cast<uint64_t>(row)) + steps);
  U16x32 lanes;  // little-endian: lane k of hash q is element 4 q + k
  std::memcpy(&lanes, &x, sizeof lanes);
  const I16x32 kept = -(lanes >= threshold);  // 1 or 0
  const I16x16 lo = __builtin_shufflevector(kept, kept, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const I16x16 hi = __builtin_shufflevector(kept, kept, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
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


}  // namespace tpuperf::kernels
