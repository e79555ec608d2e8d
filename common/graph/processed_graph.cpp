#include "common/graph/processed_graph.h"

#include <array>

namespace tpuperf {

namespace {

// 7^j: the digits' products are independent, where Horner's rule chains 18 multiplies.
constexpr auto kPow7 = [] {
  std::array<uint64_t, 18> p{};
  p[0] = 1;
  for (size_t j = 1; j < p.size(); ++j) p[j] = p[j - 1] * 7;
  return p;
}();

}  // namespace

uint64_t pack_layout_values(const int8_t* values18) {
  uint64_t packed = 0;
  for (size_t j = 0; j < 18; ++j) packed += static_cast<uint64_t>(values18[j] + 1) * kPow7[j];
  return packed;
}

void unpack_layout_values(uint64_t packed, int8_t* values18) {
  for (int j = 0; j < 18; ++j) {
    values18[j] = static_cast<int8_t>(packed % 7) - 1;
    packed /= 7;
  }
}

}  // namespace tpuperf
