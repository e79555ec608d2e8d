// splitmix64: the one small, fully specified random generator of tpuperf, used wherever
// draws must be the same on every platform, build, rank and run (evaluation subsets,
// training slates, baselines, the generator's seed mixing), and mix_seed, the one way to
// derive a stream's seed from a seed and a label. The std:: distributions are
// not specified bit for bit across standard libraries, so they are not used for these.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

namespace tpuperf {

// splitmix64's state step: state k of a generator seeded with s is s + k * this.
constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's mixing of a stepped state. A template so that vector code (GCC vector
// types of uint64_t) mixes several states with the same expressions.
template <typename U>
inline U splitmix64_mix(U x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The splitmix64 output function of state x: decorrelates nearby inputs completely.
inline uint64_t splitmix64(uint64_t x) { return splitmix64_mix(x + kSplitMix64Gamma); }

// The seed of an independent stream named by `label`, derived from `seed`: nearby seeds
// and labels give unrelated streams. tpuperf-synth's definition, kept bit for bit so that
// generated trees stay byte-identical; also the seed of fold assignment tie-breaks,
// evaluation subsets, random baselines and training's torch seeds.
inline uint64_t mix_seed(uint64_t seed, uint64_t label) { return splitmix64(splitmix64(seed) ^ label); }

// A string label ("tile:xla/train", "configs") enters as its FNV-1a 64-bit hash.
inline uint64_t mix_seed(uint64_t seed, std::string_view label) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis
  for (unsigned char c : label) h = (h ^ c) * 0x100000001b3ULL;  // FNV-1a prime
  return mix_seed(seed, h);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t out = splitmix64(state_);
    state_ += kSplitMix64Gamma;
    return out;
  }

  // Uniform in [0, n), n >= 1: rejecting the top partial range keeps it unbiased.
  uint64_t below(uint64_t n) {
    const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }

 private:
  uint64_t state_;
};

}  // namespace tpuperf
