// Counter-based dropout masks: which elements a dropout with seed s keeps is a pure
// function of (s, element index), so backward regenerates the mask instead of storing it,
// and the plain-LibTorch model path (dropout_multipliers) applies exactly the masks the
// fused kernels draw. Element i of a call with seed s is kept iff 16-bit lane i % 4 of the
// (i / 4)-th output of SplitMix64(s) is at least round(p * 2^16): p is applied in steps of
// 2^-16 (p = 0.1: keep rate 0.899994).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/base/random.h"

namespace tpuperf {

// Whether element i of a call with `seed` is kept.
bool dropout_keeps(uint64_t seed, int64_t i, double p);

// A fresh dropout seed from torch's default CPU generator (one draw), so torch::manual_seed
// makes runs, and resumed epochs, replay identically.
uint64_t draw_dropout_seed();

// The multipliers (1 / (1 - p) where kept, else 0) of a tensor of these sizes, elements in
// row-major order: the mask as a plain tensor, for the models' unfused path.
torch::Tensor dropout_multipliers(torch::IntArrayRef sizes, double p, uint64_t seed,
                                  torch::ScalarType dtype);

namespace kernels {

constexpr double kTwo16 = 65536.0;  // the mask compares 16 random bits with p * 2^16

inline uint64_t drop_threshold(double p) {
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

}  // namespace kernels
}  // namespace tpuperf
