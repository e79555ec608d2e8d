// The runtime model behind the generated measurements: a small analytic TPU-core model,
// so that runtimes are a learnable function of what the files hold (shapes, opcodes,
// windows, config features) rather than noise.
//
// The machine (one TensorCore, orders of magnitude of a TPU v4 core):
//  - HBM bandwidth ~1.2 TB/s, MXU (matrix unit) ~137 TFLOP/s, VPU (vector unit) ~8 TFLOP/s;
//  - data lives in (8 x 128) tiles: the minor-most dimension of a tensor is padded to a
//    multiple of 128 lanes and the second-minor to a multiple of 8 sublanes, so a layout
//    or tile that puts a small dimension minor moves and computes on padding;
//  - a kernel runs a grid of steps; each step streams its operand tiles into the 16 MiB
//    VMEM scratchpad (double-buffered), computes and writes its output tile back, and pays
//    a fixed per-step overhead (DMA set-up, pipeline prologue/epilogue).
//
// Tile collection: one fused kernel, one config = its tiling. See tile_runtime_ns.
// Layout collection: one whole program, one config = the layouts of its configurable
// nodes (convolution, dot, reshape). runtime = the non-configurable work (each op reads
// its operands and writes its result once) + per configurable node its cost under the
// chosen layouts (padding waste, MXU relayout, reshape bitcast or copy) + a transpose for
// every producer/consumer pair whose layouts disagree. Nodes with the same signature form
// a group that takes one choice per config, so runtimes cluster into discrete levels.
// The compiler default (all -1 in the file) resolves to a greedy per-tensor heuristic that
// ignores the transposes it causes: near the optimum, not always at it. See LayoutProblem.
//
// Measurements. The classic files (tile, and layout files of the random and default
// searches) add ~0.1% normal multiplicative noise, clipped to +-0.9% (tile_gen.h:
// measurement_noise); their configs spread 1.4-3x (random search) with the median 1.3-2x
// the best. Layout files of a converged autotuner (converged_search.h; issue 20: real
// files look like this) are measured as a TPU runs:
//  - what is measured is the compiled program: a requested layout that layout assignment
//    overrides (most groups of such a file: the incumbent's layout is propagated) costs
//    nothing, so most configs near the incumbent run exactly as it does;
//  - the hardware is deterministic: an undisturbed run (40-60% of them) repeats the
//    noise-free runtime to the nanosecond; a disturbed run is slower by sigma * |N(0,1)|
//    (sigma 0.1-0.2%, at most 0.9%), never faster;
//  - re-measurements (30-45% of the rows) are independent runs of the same program.
// So the best runtime recurs exactly (the 10th percentile equals it), the median config is
// within ~0.2% of it, random restarts give a tail of 1.5-4x, and the first and second
// measurements of re-measured configs agree at Kendall tau ~0.5-0.75: near-ties are noise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpuperf::synth {

struct TpuCore {
  double hbm_bytes_per_ns = 1200.0;
  double mxu_flops_per_ns = 137000.0;
  double vpu_flops_per_ns = 8000.0;
  double step_overhead_ns = 350.0;
  double launch_ns = 1500.0;
  double vmem_bytes = 16.0 * 1024 * 1024;
  int64_t lanes = 128, sublanes = 8;
};

const TpuCore& tpu_core();

// A runtime as the files store it: whole nanoseconds, at least 1. Measured and noise-free
// runtimes are both rounded here, so an undisturbed run equals its noise-free runtime.
inline int64_t stored_runtime_ns(double ns) { return std::max<int64_t>(1, std::llround(ns)); }

// ---------------------------------------------------------------------------------------
// Tile kernels

enum class TileKind { Conv, Dot, Loop, Reduce };

// What the runtime of one fused kernel depends on; built from the same values that the
// generator writes into the graph's node features.
struct TileProblem {
  TileKind kind = TileKind::Loop;
  std::vector<int64_t> out_dims;            // the root output, logical order
  std::vector<int64_t> out_minor_to_major;  // its layout
  int out_bytes = 4, in_bytes = 4;
  int64_t contraction = 1;  // dot: K; conv: input features; reduce: reduced extent; loop: 1
  std::vector<int64_t> window_dims;  // conv: kernel spatial extents (height, width)
  int num_inputs = 1;                // loop/reduce: input streams of output-tile size
  int side_inputs = 0;      // dot/conv: epilogue operands of the output's shape (residuals)
  int num_outputs = 1;      // outputs of the output shape written per element
  double vpu_ops = 1;       // element-wise ops per output element (epilogue, loop body)
  bool transposed = false;  // loop kernels whose input is read transposed (strided DMA)
};

// A tiling: an output tile extent per output dim (logical order) and the contraction tile.
struct TileConfig {
  std::vector<int64_t> out_tile;
  int64_t k_tile = 1;
  bool operator<(const TileConfig& o) const {
    return out_tile != o.out_tile ? out_tile < o.out_tile : k_tile < o.k_tile;
  }
  bool operator==(const TileConfig& o) const {
    return out_tile == o.out_tile && k_tile == o.k_tile;
  }
};

// Noise-free runtime in ns:
//   steps = prod_i ceil(D_i / T_i) * ceil(K / tk)     (the grid)
//   per step: tiles padded to (8 x 128) on the layout's two minor dims;
//     memory = operand tiles read + output tile written (HBM),
//     compute = MXU flops (dot/conv, contraction padded to 128) + VPU element-wise flops,
//     time = max(memory, compute) + per-step overhead;
//   working set = 2 x input tiles (double buffering) + 2 x output tile
//     (+ f32 accumulator when the contraction is split); beyond VMEM the kernel spills:
//     the step re-streams its tiles through HBM, 2x + proportional to the excess.
//   runtime = launch + steps x step time.
double tile_runtime_ns(const TileProblem& p, const TileConfig& c);

// Working set of one step in bytes (what the VMEM check compares).
double tile_working_set_bytes(const TileProblem& p, const TileConfig& c);

// Candidate tile extents of one output dim: minor dim multiples of 128, second-minor
// multiples of 8, major dims any size, in roughly geometric steps (1, 2, 3, 4, 6, 8, 12,
// ... granules), each plus the full extent.
std::vector<int64_t> tile_candidates(const TileProblem& p, size_t dim);
std::vector<int64_t> k_tile_candidates(const TileProblem& p);

// The compiler's heuristic tiling: from the smallest aligned tile, greedily double the
// extent that helps most while the step fits half of VMEM. Near the best, not always the
// best: greedy steps stop at local optima and half of VMEM stays unused.
TileConfig default_tile_config(const TileProblem& p);

// The config's 24 features: kernel_bounds (the tile of the kernel operand) [6] + sum +
// product, output_bounds (the output tile) [6] + sum + product, input_bounds [6] + sum +
// product (empty -> zeros, product 0; set only for transposing loop kernels).
std::vector<float> tile_config_features(const TileProblem& p, const TileConfig& c);

// ---------------------------------------------------------------------------------------
// Layout programs

// A permutation of a tensor's dims, minor-most first; empty for "no such operand".
using Perm = std::vector<int64_t>;

struct LayoutTensor {
  std::vector<int64_t> dims;
  int bytes = 4;
  int64_t preferred_minor = -1;  // the dim the MXU wants minor-most (-1: none)
};

// One configurable node. Slot 0 = output, 1 = input (lhs), 2 = kernel (rhs).
struct LayoutNode {
  int node_id = 0;  // graph node id
  int group = 0;    // nodes of a group share their layout choice in every config
  bool is_reshape = false;
  double flops = 0;  // MXU flops (dot/convolution)
  LayoutTensor tensors[3];
  bool has_slot[3] = {true, false, false};
};

// A resolved choice for a group: one permutation per slot (empty where the slot is absent).
struct LayoutChoice {
  Perm perm[3];
  bool is_default = false;  // written to the file as all -1
};

// Where a configurable node's operand comes from (or its output goes to), traced through
// layout-transparent element-wise ops: another configurable node's output, or a fixed
// row-major tensor (parameters, constants, non-configurable ops, program outputs).
// A mismatch between the two layouts costs a transpose of the tensor (400 ns + 6 bytes of
// HBM traffic per tensor byte: read and write, strided).
struct LayoutLink {
  int producer = -1;  // index into nodes (-1: fixed row-major source)
  int consumer = -1;  // index into nodes (-1: fixed row-major sink)
  int slot = 1;       // consumer's slot (1 or 2), when consumer >= 0
  int64_t elements = 0;
  int bytes = 4;
  std::vector<int64_t> dims;
};

struct LayoutProblem {
  std::vector<LayoutNode> nodes;
  std::vector<LayoutLink> links;
  // options[g][o]: the choices group g can take; option 0 is the compiler default
  // (resolved to the compiler's heuristic layouts, written as all -1).
  std::vector<std::vector<LayoutChoice>> options;
  double base_ns = 0;  // the non-configurable work of the program
};

// Compiler default layout of one tensor: the preferred (MXU) dim minor when it is at
// least half a lane wide, otherwise the largest dim; second-minor the largest remaining
// dim that is a multiple of 8 (the batch, for convolutions); the rest row-major. Local and
// greedy: it ignores the copies its choices cause next to row-major producers/consumers.
Perm default_perm(const LayoutTensor& t);
// Reshapes are bitcasts only between row-major layouts, so the compiler keeps row-major.
Perm reshape_default_perm(size_t rank);

// (8 x 128) padding factor of a tensor under a layout (>= 1), capped at 32: very small
// minor dims switch the hardware to a narrower tiling instead of padding to 128.
double pad_factor(const std::vector<int64_t>& dims, const Perm& perm);

// Noise-free runtime of the program with group g taking options[g][choice[g]].
// Costs precomputed per (node, option) and per link, so evaluating one config is
// O(nodes + links): 1e5 configs of a graph with nc ~ 100 take well under a second.
// Keeps a reference to the problem, which must outlive it.
class LayoutCostModel {
 public:
  explicit LayoutCostModel(const LayoutProblem& p);
  double runtime_ns(const std::vector<int>& choice) const;
  // The per-node cost under option o of its group (exposed for tests).
  double node_cost_ns(size_t node, int option) const;

 private:
  const LayoutProblem& p_;
  std::vector<std::vector<double>> node_cost_;  // [node][option]
  std::vector<double> link_copy_ns_;            // cost of one link when layouts differ
  std::vector<Perm> fixed_perm_;                // row-major layout of each link's tensor
};

// Cost of one configurable node under a choice: max(HBM traffic of its padded operands,
// MXU time with a 2x relayout penalty per operand whose preferred dim is not minor) +
// op overhead; reshapes cost nothing when both layouts are row-major (a bitcast) and a
// full copy otherwise.
double layout_node_cost_ns(const LayoutNode& n, const LayoutChoice& c);

}  // namespace tpuperf::synth
