// Vector helpers of the fused kernels' vector paths (internal to trainer/kernels/vector/):
// GCC vector types of the register width of the instruction set the translation unit is
// compiled for, rows of the default width (H = 32) as a few such registers, GELU with its
// slope, and the dropout mask of a whole row.
//
// Every type here is one register wide (16 floats with AVX-512, 8 with AVX2) or an array of
// such: GCC splits a wider vector type into registers for plain arithmetic, but expands its
// selects, comparisons and shuffles element by element (with 16-float types the AVX2 build
// ran GELU as scalar code: -Wvector-operation-performance, 2026-12-02).
#pragma once

#include <cstdint>
#include <cstring>

#include "common/base/random.h"
#include "trainer/kernels/vector/isa.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {

// -------------------------------------------------------------------- vector helpers
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
// Accumulators per kernel: enough independent FMAs to hide their latency, few enough to
// stay in registers (32 vector registers with AVX-512, 16 with AVX2).
constexpr int kAccumulators = kLanes == 16 ? 12 : 8;
using FloatVec = float __attribute__((vector_size(4 * kLanes)));
using IntVec = int32_t __attribute__((vector_size(4 * kLanes)));
using UIntVec = uint32_t __attribute__((vector_size(4 * kLanes)));
using DoubleVec = double __attribute__((vector_size(4 * kLanes)));  // kLanes / 2 doubles
using HalfFloatVec = float __attribute__((vector_size(2 * kLanes)));  // kLanes / 2 floats
using Float8 = float __attribute__((vector_size(32)));
using Float4 = float __attribute__((vector_size(16)));

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

inline FloatVec select(const IntVec& cond, const FloatVec& yes, const FloatVec& no) { return cond ? yes : no; }

// ------------------------------------------------------------------- rows of 32 floats
// A row of the default width (H = 32) as kRowVecs registers. (A single 32-float vector type
// would read the same, but GCC moves such values, wider than any register, through the
// stack: the epilogue ran 2.5x slower that way, measured.)
constexpr int kRowVecs = 32 / kLanes;

struct Row32 {
  FloatVec v[kRowVecs];
};

template <typename F>
[[gnu::always_inline]] inline Row32 row_map(F&& f) {
  Row32 r;
#pragma GCC unroll 4
  for (int i = 0; i < kRowVecs; ++i) r.v[i] = f(i);
  return r;
}

inline Row32 operator+(const Row32& a, const Row32& b) { return row_map([&](int i) { return a.v[i] + b.v[i]; }); }
inline Row32 operator-(const Row32& a, const Row32& b) { return row_map([&](int i) { return a.v[i] - b.v[i]; }); }
inline Row32 operator*(const Row32& a, const Row32& b) { return row_map([&](int i) { return a.v[i] * b.v[i]; }); }
inline Row32 operator+(const Row32& a, float b) { return row_map([&](int i) { return a.v[i] + b; }); }
inline Row32 operator-(const Row32& a, float b) { return row_map([&](int i) { return a.v[i] - b; }); }
inline Row32 operator*(const Row32& a, float b) { return row_map([&](int i) { return a.v[i] * b; }); }
inline Row32 operator*(float a, const Row32& b) { return b * a; }

inline Row32 load_row32(const float* p) { return row_map([&](int i) { return load_vec(p + kLanes * i); }); }

inline void store_row32(float* p, const Row32& r) {
#pragma GCC unroll 4
  for (int i = 0; i < kRowVecs; ++i) store_vec(p + kLanes * i, r.v[i]);
}

// The sum of a row's 32 elements, in one order for both instruction sets (so both paths
// give the same bits): element j + 8 k summed over k (a tree: (0 + 16) + (8 + 24)), then
// the 8 sums by halving (register shuffles: halves copied out with memcpy went through
// memory).
inline float row32_sum(const Row32& r) {
#if defined(__AVX512F__)  // (not if constexpr: outside a template both branches must compile)
  const FloatVec t = r.v[0] + r.v[1];
  const Float8 e = __builtin_shufflevector(t, t, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(t, t, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  const Float8 e = (r.v[0] + r.v[2]) + (r.v[1] + r.v[3]);
#endif
  const Float4 q = __builtin_shufflevector(e, e, 0, 1, 2, 3) + __builtin_shufflevector(e, e, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// Per-column sums of many rows, in double: each register's halves widened.
struct Row32Double {
  DoubleVec q[2 * kRowVecs] = {};
  void add(const Row32& r) {
#pragma GCC unroll 4
    for (int i = 0; i < kRowVecs; ++i) {
      HalfFloatVec lo, hi;
      std::memcpy(&lo, &r.v[i], sizeof lo);
      std::memcpy(&hi, reinterpret_cast<const char*>(&r.v[i]) + sizeof lo, sizeof hi);
      q[2 * i] += __builtin_convertvector(lo, DoubleVec);
      q[2 * i + 1] += __builtin_convertvector(hi, DoubleVec);
    }
  }
  void store(double* p) const { std::memcpy(p, q, sizeof q); }
};

// ------------------------------------------------------------------------ dropout mask
// The dropout multipliers (scale or 0) of row `row` of width 32, elements 32 row ..
// 32 row + 31, exactly as keeps() (trainer/kernels/dropout_mask.h) draws them: the row's 8
// hashes, kLanes / 2 to a register, each hash's four 16-bit lanes compared with the
// threshold (< 2^16).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "row32_keep reads hash lanes little-endian");
inline Row32 row32_keep(uint64_t seed, int64_t row, uint16_t threshold, float scale) {
  constexpr int kHashes = kLanes / 2;  // per register
  using U64Vec = uint64_t __attribute__((vector_size(4 * kLanes)));
  using U16Vec = uint16_t __attribute__((vector_size(4 * kLanes)));  // 2 kLanes lanes
  using I16Vec = int16_t __attribute__((vector_size(4 * kLanes)));
  using I16Half = int16_t __attribute__((vector_size(2 * kLanes)));  // kLanes lanes
  // hash_of_quad for quads q = 8 row + j, j = 0..7: splitmix64(seed + gamma q) mixes
  // seed + gamma (8 row) + gamma (j + 1), a per-row base plus a constant (with AVX-512 a
  // constant vector: only one scalar multiply depends on the row).
  constexpr int kRowHashes = 8;  // 32 elements, 4 to a hash
  static_assert(kRowVecs / 2 * kHashes == kRowHashes, "a row of 32 takes 8 hashes");
  const uint64_t base = seed + kSplitMix64Gamma * 8 * static_cast<uint64_t>(row);
#if defined(__AVX512F__)
  U64Vec steps;
  for (int j = 0; j < kHashes; ++j) steps[j] = static_cast<uint64_t>(j + 1) * kSplitMix64Gamma;
#else
  // AVX2 has no 64-bit vector multiply: GCC emulated each with three 32-bit multiplies and
  // shifts on the vector ports the GELU needs. The 8 hashes by scalar multiplies (the asm
  // keeps GCC from vectorizing them back) run on the integer ports alongside, and each
  // register is built from 4 of them (not through memory: 8-byte stores do not forward to a
  // 32-byte load): the epilogue's forward with dropout took 68 ns a row of 64 instead of
  // 80 (2026-12-07).
  uint64_t hashes[kRowHashes];
#pragma GCC unroll 8
  for (int j = 0; j < kRowHashes; ++j) {
    uint64_t state = base + kSplitMix64Gamma * static_cast<uint64_t>(j + 1);
    asm("" : "+r"(state));
    hashes[j] = splitmix64_mix(state);
  }
#endif
  Row32 keep;
#pragma GCC unroll 2
  for (int g = 0; g < kRowVecs / 2; ++g) {
#if defined(__AVX512F__)
    const U64Vec x = splitmix64_mix(base + kSplitMix64Gamma * static_cast<uint64_t>(g * kHashes) + steps);
#else
    const U64Vec x = {hashes[kHashes * g], hashes[kHashes * g + 1], hashes[kHashes * g + 2], hashes[kHashes * g + 3]};
#endif
    U16Vec lanes;  // little-endian: lane k of hash q is element 4 q + k
    std::memcpy(&lanes, &x, sizeof lanes);
    const I16Vec kept = -(lanes >= threshold);  // 1 or 0
#if defined(__AVX512F__)
    const I16Half lo = __builtin_shufflevector(kept, kept, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const I16Half hi =
        __builtin_shufflevector(kept, kept, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
#else
    const I16Half lo = __builtin_shufflevector(kept, kept, 0, 1, 2, 3, 4, 5, 6, 7);
    const I16Half hi = __builtin_shufflevector(kept, kept, 8, 9, 10, 11, 12, 13, 14, 15);
#endif
    keep.v[2 * g] = __builtin_convertvector(lo, FloatVec) * scale;
    keep.v[2 * g + 1] = __builtin_convertvector(hi, FloatVec) * scale;
  }
  return keep;
}

// ------------------------------------------------------------------------------- GELU
// GELU on one register, exact form 0.5 z (1 + erf(z / sqrt 2)), and its derivative, without
// LibTorch's separate passes over memory (measured: they took 15% of a tile step).
// erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), whose exp(-x^2) is also the
// Gaussian density of the derivative; exp by range reduction to [-ln2/2, ln2/2] and the
// Cephes expf polynomial.

// exp(x) for x <= 0; 0 below -80 (exp(-80) ~ 1.8e-35) instead of values near the denormal
// range, which the CPU computes slowly (later products may still get there, rarely).
inline FloatVec exp_nonpositive(const FloatVec& x_in) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const IntVec tiny = x_in < -80.0f;
  const FloatVec x = select(tiny, FloatVec{} - 80.0f, x_in);
  const FloatVec shifted = x * 1.44269504088896341f + kRound;
  const FloatVec n = shifted - kRound;
  const FloatVec r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  FloatVec poly = r * 1.9875691500e-4f + 1.3981999507e-3f;
  poly = poly * r + 8.3334519073e-3f;
  poly = poly * r + 4.1665795894e-2f;
  poly = poly * r + 1.6666665459e-1f;
  poly = poly * r + 5.0000001201e-1f;
  poly = poly * (r * r) + r + 1.0f;
  UIntVec n_bits;  // unsigned: a NaN input must not make the shift overflow a signed int
  std::memcpy(&n_bits, &shifted, sizeof n_bits);
  const UIntVec bits = (n_bits - 0x4B400000u + 127u) << 23;  // kRound's bits off: n, biased
  FloatVec two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return select(tiny, FloatVec{}, poly * two_n);
}

struct GeluVec {
  FloatVec value, slope;  // gelu(z) and gelu'(z)
};

// The constants of the Gaussian density c = 1 / sqrt(2 pi) and of the tail's 1/2 are folded
// into the exp's argument (c exp(-z^2 / 2) = exp(ln c - z^2 / 2), one FMA) and the
// polynomial's coefficients (1/2 of the tail over c), and |x| clears the sign bit: 4 fewer
// operations a register, and GELU with its slope took 40-41 ns a row of 64 instead of 47-48
// on the AVX2 path (in-process, 2026-12-07, docs/experiments E52); the same error against
// erfc in double (4e-7 for the value, 3e-7 for the slope over [-15, 15]).
inline GeluVec gelu_vec(const FloatVec& z) {
  constexpr float kLnDensity = -0.91893853320467274f;  // ln(1 / sqrt(2 pi))
  constexpr float kHalfOverDensity = 1.25331413731550025f;  // (1 / 2) sqrt(2 pi)
  const FloatVec x = z * 0.70710678118654752f;  // z / sqrt 2
  UIntVec abs_bits;
  std::memcpy(&abs_bits, &x, sizeof abs_bits);
  abs_bits &= 0x7fffffffu;
  FloatVec ax;
  std::memcpy(&ax, &abs_bits, sizeof ax);
  const FloatVec t = 1.0f / (1.0f + 0.3275911f * ax);
  FloatVec poly = t * (kHalfOverDensity * 1.061405429f) - (kHalfOverDensity * 1.453152027f);
  poly = poly * t + (kHalfOverDensity * 1.421413741f);
  poly = poly * t - (kHalfOverDensity * 0.284496736f);
  poly = poly * t + (kHalfOverDensity * 0.254829592f);
  const FloatVec density = exp_nonpositive(kLnDensity - ax * ax);  // exp(-z^2 / 2) / sqrt(2 pi)
  // Phi(z) = (1 + erf(x)) / 2 with erf(|x|) = 1 - tail: for z < 0 it is tail / 2 itself,
  // which keeps its relative precision far out (1 - erf would round it away).
  const FloatVec half_tail = poly * t * density;
  const FloatVec cdf = select(z < 0.0f, half_tail, 1.0f - half_tail);
  return {z * cdf, cdf + z * density};
}

inline Row32 gelu_row32(const Row32& z, Row32* slope) {
  Row32 value;
#pragma GCC unroll 4
  for (int i = 0; i < kRowVecs; ++i) {
    const GeluVec g = gelu_vec(z.v[i]);
    value.v[i] = g.value;
    if (slope) slope->v[i] = g.slope;
  }
  return value;
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
