// splitmix64: the one small, fully specified random generator of tpuperf, used wherever
// draws must be the same on every platform, build, rank and run (evaluation subsets,
// training slates, baselines, the generator's seed mixing). The std:: distributions are
// not specified bit for bit across standard libraries, so they are not used for these.
#pragma once

#include <cstdint>
#include <limits>

namespace tpuperf {

// The splitmix64 output function of state x: decorrelates nearby inputs completely.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t out = splitmix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
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
