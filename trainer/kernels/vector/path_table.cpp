// This instruction set's table of loops (vector_path.h).
#include "trainer/kernels/vector/rows.h"

#include "trainer/kernels/vector/vector_math.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {

#define TPUPERF_STRINGIZE_(x) #x
#define TPUPERF_STRINGIZE(x) TPUPERF_STRINGIZE_(x)

const VectorPath& path_table() {
  static const VectorPath table{kLanes == 16 ? VectorIsa::kAvx512 : VectorIsa::kAvx2,
                                TPUPERF_STRINGIZE(TPUPERF_VECTOR_NS),
                                sage_forward,
                                sage_backward,
                                epilogue_forward,
                                epilogue_backward,
                                gelu,
                                linear_forward,
                                linear_backward};
  return table;
}

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
