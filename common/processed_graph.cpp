#include "common/processed_graph.h"

namespace tpuperf {

uint64_t pack_layout_values(const int8_t* values18) {
  uint64_t packed = 0;
  for (int j = 17; j >= 0; --j) packed = packed * 7 + static_cast<uint64_t>(values18[j] + 1);
  return packed;
}

void unpack_layout_values(uint64_t packed, int8_t* values18) {
  for (int j = 0; j < 18; ++j) {
    values18[j] = static_cast<int8_t>(packed % 7) - 1;
    packed /= 7;
  }
}

}  // namespace tpuperf
