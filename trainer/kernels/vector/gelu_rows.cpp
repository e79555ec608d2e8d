// fused_gelu's loop (trainer/kernels/gelu.cpp splits the elements into tasks): the
// epilogue's vector GELU (vector_math.h's gelu_vec) over flat float arrays.
#include <algorithm>

#include "trainer/kernels/vector/rows.h"
#include "trainer/kernels/vector/vector_math.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {
namespace {

constexpr int64_t kGeluBlock = kLanes;  // floats per gelu_vec call

FloatVec gelu_block(const FloatVec& z, const FloatVec* grad) {
  const GeluVec r = gelu_vec(z);
  return grad ? *grad * r.slope : r.value;
}

}  // namespace

// Whole registers, the tail through a zero-padded block.
void gelu(const float* z, const float* grad, float* out, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + kGeluBlock <= e; i += kGeluBlock) {
    const FloatVec gv = grad ? load_vec(grad + i) : FloatVec{};
    store_vec(out + i, gelu_block(load_vec(z + i), grad ? &gv : nullptr));
  }
  if (i == e) return;
  float zt[kGeluBlock] = {}, gt[kGeluBlock] = {}, ot[kGeluBlock];
  std::copy(z + i, z + e, zt);
  if (grad) std::copy(grad + i, grad + e, gt);
  const FloatVec gv = load_vec(gt);
  store_vec(ot, gelu_block(load_vec(zt), grad ? &gv : nullptr));
  std::copy(ot, ot + (e - i), out + i);
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
