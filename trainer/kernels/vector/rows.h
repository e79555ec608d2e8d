// The loops of one vector path, declared in its instruction set's namespace (isa.h); the
// table of path_table.cpp points at them. Their contracts are VectorPath's (vector_path.h).
#pragma once

#include <cstdint>

#include "trainer/kernels/vector/isa.h"
#include "trainer/kernels/vector_path.h"

namespace tpuperf::kernels::TPUPERF_VECTOR_NS {

void sage_forward(int64_t H, const float* x, int64_t N, const CsrGraph& graph, int64_t b, int64_t e,
                  const float* wt, const float* bias, float* out);
void sage_backward(int64_t H, const float* g, const float* x, int64_t N, const CsrGraph& graph, int64_t r0,
                   int64_t r1, const float* ws, const float* also_x, float* gx, float* gws, double* gb);
void epilogue_forward(int64_t H, int64_t b, int64_t e, const EpilogueForward& args);
void epilogue_backward(int64_t H, int64_t r0, int64_t r1, const float* xhat, const float* keep_slope,
                       const float* gout, const float* gamma, const float* rstd, float* gx, float* gz,
                       double* acc);
void gelu(const float* z, const float* grad, float* out, int64_t b, int64_t e);
void linear_forward(int64_t K, int64_t M, const float* x, int64_t r0, int64_t r1, const float* wt,
                    const float* bias, float* y);
void linear_backward(int64_t K, int64_t M, const float* x, const float* g, int64_t r0, int64_t r1, const float* w,
                     float* gx, float* gwt, double* gb);

const VectorPath& path_table();

}  // namespace tpuperf::kernels::TPUPERF_VECTOR_NS
