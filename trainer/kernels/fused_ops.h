// Fused kernels of the models' hot path, each a torch::autograd::Function with a
// hand-written backward. They compute exactly what a composition of LibTorch ops computes
// (up to float rounding; tests/trainer/kernels/test_fused_ops.cpp compares them), in fewer passes
// over memory:
//
//   sage_linear        linear(cat(x, mean of producers' x, mean of consumers' x)) per node:
//                      the means are CSR gathers (no scatter) both ways, taken before the
//                      matmul on H-wide rows, and for float with H = 32 or 64 the matmuls use
//                      register-blocked vector kernels instead of the BLAS (whose packing
//                      costs more than the math at these widths);
//   sage_block         gelu_dropout_add_layer_norm(sage_linear(x), x): a whole SAGE residual
//                      block as one function, whose backward adds x's two gradients (through
//                      the linear map, through the residual) in the linear map's pass;
//   gelu_dropout_add_layer_norm
//                      LayerNorm(x + dropout(gelu(z))): GELU, dropout, residual and
//                      LayerNorm in one pass (forward and backward; float rows of 32 or 64
//                      compute the GELU in the pass and keep the normalized rows and
//                      keep * gelu'(z) for backward, other shapes take LibTorch's GELU
//                      first and keep the mask, drawn by hashing, as bytes);
//   fused_gelu         the erf GELU of the layers around the blocks (float: the epilogue's
//                      vector GELU, one pass each way);
//   counter_dropout    dropout whose mask is a hash of (seed, element index): nothing is
//                      stored, backward regenerates it (used where tensors are small);
//   segment_mean_max   per-graph mean and max pooling of contiguous node ranges, both halves
//                      of the readout's cat written in one pass (and of some rows picked
//                      by index: the layout readout's configurable nodes);
//   add_gathered       node[u] + table[s, index[u]] for every slot s and node u: the tile
//                      model's per-node plus per-(slot, graph) inputs, whose backward is one
//                      pass (a sum over slots and a sum per table row) instead of LibTorch's
//                      broadcast, index_select, sum and index_add;
//   add_gathered_sum   node[u] + a weighted sum of table rows per (slot, node): the layout
//                      models' first block, whose config terms reach a node through its
//                      own row and its configurable neighbours' (SageBlock::forward_configs);
//   embedding_sum      per row the sum of the table rows its indices pick (the layout
//                      value table), without the one-hot matrix a matmul would need;
//   row_linear         a linear layer x W^T + b over rows: for float with out features a
//                      multiple of 64 (the layout models' config terms) the small-matrix
//                      kernels of sage_linear instead of the BLAS, and the input gradient,
//                      weight gradient and bias sums in one pass over each block of rows.
//
// All take per-config states [S, N, H] (contiguous float or double). Dropout masks are
// those of dropout_mask.h. One file per kernel (its autograd Function and entry point);
// kernel_base.h holds the tunables they share, block_passes.h the passes sage_block takes
// from sage_linear and the epilogue. The loops of sage_linear, the epilogue and fused_gelu
// over float rows of H = 32 and 64, and of row_linear, are the vector paths of
// vector_path.h (vector/: compiled
// for AVX2 and for AVX-512, chosen at run time); without one (a CPU without AVX2, or
// TPUPERF_VECTOR_ISA=none) those kernels take LibTorch's ops for the same math.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "trainer/kernels/dropout_mask.h"
#include "trainer/models/graph_ops.h"

namespace tpuperf {

// x * keep / (1 - p) with keep from dropout_keeps(seed, flat index); identity when p == 0.
torch::Tensor counter_dropout(const torch::Tensor& x, double p, uint64_t seed);

// gelu(z) = z Phi(z), the erf GELU (float: erf within 1.5e-7, as the epilogue's).
torch::Tensor fused_gelu(const torch::Tensor& z);

// torch::nn::functional::linear(x, weight, bias): x [..., K], weight [M, K], bias [M] or
// undefined (none). The vector path takes float with M a multiple of 64 when x needs no
// gradient or K is a multiple of 64; other shapes take LibTorch's matmul.
torch::Tensor row_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

namespace kernels {
struct VectorPath;
// The vector path row_linear takes for these operands (x's gradient wanted or not), null
// for LibTorch's matmul: its tests check that the shapes meant for the kernels get them.
const VectorPath* row_linear_path(const torch::Tensor& x, const torch::Tensor& weight, bool x_grad);
}  // namespace kernels

// LayerNorm(x + dropout(gelu(z))) over the last dimension (the erf GELU: LibTorch's, or
// for float rows of 32 or 64 an approximation of erf within 1.5e-7; weight gamma, bias beta, the
// mask of counter_dropout with this seed; p = 0 for none).
torch::Tensor gelu_dropout_add_layer_norm(const torch::Tensor& z, const torch::Tensor& x,
                                          const torch::Tensor& gamma, const torch::Tensor& beta,
                                          double eps, double p, uint64_t seed);

// z[s, u] = bias + W [x[s, u], mean_{v producer of u} x[s, v], mean_{w consumer of u} x[s, w]]
// (a mean over no nodes is 0). x is [S, N, H], weight [H, 3H] (nn::Linear(3H, H)'s), bias [H].
torch::Tensor sage_linear(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias, const Adjacency& adj);

// gelu_dropout_add_layer_norm(sage_linear(x, weight, bias, adj), x, gamma, beta, eps, p, seed),
// the same bits; in training on the vector path as one autograd function.
torch::Tensor sage_block(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                         const Adjacency& adj, const torch::Tensor& gamma, const torch::Tensor& beta, double eps,
                         double p, uint64_t seed);

// [S, G, 2H]: per graph g (nodes offsets[g]..offsets[g+1]-1), the mean then the max of x's
// rows; graphs without nodes pool to 0. Max gradients are split among tied maxima, as
// scatter_reduce("amax") does.
torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets);
// [S, G, 4H]: the same, then the mean and max of rows picks[k], k in pick_offsets[g] ..
// pick_offsets[g + 1] - 1 (each a row of graph g), in one pass (no [S, K, H] gather formed;
// backward writes x's gradient once).
torch::Tensor segment_mean_max(const torch::Tensor& x, const std::vector<int64_t>& offsets,
                               const std::vector<int64_t>& pick_offsets, const torch::Tensor& picks);

// [S, N, H]: out[s, u] = node[u] + table[s, index[u]] (node [N, H], table [S, T, H], index N
// values in [0, T)).
torch::Tensor add_gathered(const torch::Tensor& node, const torch::Tensor& table,
                           const torch::Tensor& index);
// [S, N, H]: out[s, u] = node[u] + sum over k in [ptr[u], ptr[u + 1]) of
// weight[k] table[s, index[k]] (node [N, H], table [S, T, H], ptr N + 1 offsets from 0 to K,
// index K values in [0, T), weight K values).
torch::Tensor add_gathered_sum(const torch::Tensor& node, const torch::Tensor& table, const torch::Tensor& ptr,
                               const torch::Tensor& index, const torch::Tensor& weight);
// [R, H]: out[r] = sum over k of weight[values[r, k]] (weight [V, H], values [R, K] in
// [0, V), K >= 1): an EmbeddingBag in sum mode.
torch::Tensor embedding_sum(const torch::Tensor& weight, const torch::Tensor& values);

}  // namespace tpuperf
