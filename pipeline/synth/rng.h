// The generator's only source of randomness. Every draw goes through std::mt19937_64's raw
// output and our own integer/real mappings, because the standard distributions are
// implementation-defined: the same seed must give byte-identical trees with any standard
// library. Independent streams (one per file) come from mixing the tree seed with labels
// (mix_seed, common/base/random.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/base/random.h"

namespace tpuperf::synth {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  uint64_t bits() { return gen_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(bits() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Log-uniform in [lo, hi]: sizes spread over orders of magnitude.
  double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
  // Uniform integer in [lo, hi], unbiased (rejection on the top of the range).
  int64_t randint(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(bits());
    uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x;
    do x = bits();
    while (x >= limit);
    return lo + static_cast<int64_t>(x % span);
  }
  bool chance(double p) { return uniform() < p; }
  // Standard normal (Box-Muller; the second value is dropped to keep the stream simple).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(randint(0, static_cast<int64_t>(v.size()) - 1))];
  }
  // Index drawn with probability proportional to weights[i].
  size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<size_t>(randint(0, static_cast<int64_t>(i) - 1))]);
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace tpuperf::synth
