// The vector-path passes that sage_linear and gelu_dropout_add_layer_norm are made of
// (internal to trainer/kernels/), shared with sage_block, which chains the two in one
// autograd function. Each takes contiguous float tensors of H = 32 or 64 and a path that
// the *_path function below returned for them.
#pragma once

#include <tuple>

#include "trainer/kernels/kernel_base.h"
#include "trainer/kernels/vector_path.h"

namespace tpuperf::kernels {

// ------------------------------------------------------------------ sage_linear.cpp
// Throws unless weight [H, 3H] and bias [H] fit states x [S, N, H] in type and shape and the
// adjacency (pptr: N + 1 offsets) has N nodes.
void check_sage_operands(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& pptr);

// The vector path for these states (float, H = 32 or 64), or null.
const VectorPath* sage_path(const Tensor& x);

// The graph's CSR arrays (Adjacency's tensors) as the vector path reads them.
CsrGraph csr_graph(const Tensor& pptr, const Tensor& pidx, const Tensor& cptr, const Tensor& cidx);

// z = bias + W [x, means] for x [S, N, H].
Tensor sage_forward_rows(const VectorPath& path, const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const CsrGraph& graph);

// From z's gradient g: x's gradient (plus also_x, when defined: x's gradient from elsewhere,
// added as the autograd engine would add it), the weight's and the bias's.
std::tuple<Tensor, Tensor, Tensor> sage_backward_rows(const VectorPath& path, const Tensor& g, const Tensor& x,
                                                      const Tensor& weight, const CsrGraph& graph,
                                                      const Tensor& also_x);

// ---------------------------------------------------------- layer_norm_epilogue.cpp
// The vector path for these rows (float, H = 32 or 64, a 16-bit dropout threshold), or null.
const VectorPath* epilogue_path(const Tensor& x, uint64_t threshold);

// What the epilogue's forward keeps for backward: xhat, keep * gelu'(z) and 1 / std per row.
struct EpilogueSaved {
  Tensor xhat, keep_slope, rstd;
};

// LayerNorm(x + dropout(gelu(z))); with `saved`, fills it for backward.
Tensor epilogue_forward_rows(const VectorPath& path, const Tensor& z, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, double eps, double p, uint64_t seed, EpilogueSaved* saved);

// The gradients of z, x, gamma and beta from the output's gradient gout.
struct EpilogueGrads {
  Tensor z, x, gamma, beta;
};
EpilogueGrads epilogue_backward_rows(const VectorPath& path, const EpilogueSaved& saved, const Tensor& gamma,
                                     const Tensor& gout);

}  // namespace tpuperf::kernels
