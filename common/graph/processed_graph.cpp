#include "common/graph/processed_graph.h"

namespace tpuperf {

void unpack_layout_values(uint64_t packed, int8_t* values18) {
  for (int j = 0; j < 18; ++j) {
    values18[j] = static_cast<int8_t>(packed % 7) - 1;
    packed /= 7;
  }
}

}  // namespace tpuperf
