// Tile collection: one fused kernel of a model (convolution, dot, loop or reduce fusion)
// and its measured tilings.
#pragma once

#include <cstdint>
#include <string>

#include "common/graph/graph.h"
#include "pipeline/synth/hlo.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/rng.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

struct TileKernel {
  HloBuilder hlo;
  TileProblem problem;
};

// A kernel of the model: parameters, the core op, element-wise prologue/epilogue, root.
TileKernel build_tile_kernel(const ModelSpec& model, Rng& rng);
// An iota fusion: a graph of one node and no edge.
TileKernel build_single_node_kernel(const ModelSpec& model, Rng& rng);
// A loop fusion of chain_ops element-wise ops (chain_ops in the thousands: a graph of
// several thousand nodes, ten times the release's largest tile graph).
TileKernel build_chain_kernel(const ModelSpec& model, int chain_ops, Rng& rng);

// The kernel's file: graph, the default tiling as config 0 then up to max_configs - 1
// distinct others (fewer when the tiling space is smaller), a few re-measured duplicates,
// runtimes from the simulator with ~0.1% measurement noise, and a per-graph normalizer
// (the default's runtime rounded to two significant digits). noise_free, when given,
// receives each config's runtime without the noise (same rounding).
TileGraph make_tile_graph(const std::string& name, const TileKernel& kernel, int64_t max_configs,
                          Rng& rng, std::vector<int64_t>* noise_free = nullptr);
// A file of re-measurements only: the default tiling measured `copies` times.
TileGraph make_remeasured_tile_graph(const std::string& name, const TileKernel& kernel,
                                     int64_t copies, Rng& rng, std::vector<int64_t>* noise_free = nullptr);

// Multiplicative measurement noise: ~0.1% normal, clipped to +-0.9%.
double measurement_noise(Rng& rng);

}  // namespace tpuperf::synth
