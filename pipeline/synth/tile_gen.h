// Tile collection: one fused kernel of a model (convolution, dot, loop or reduce fusion)
// and its measured tilings.
#pragma once

#include <cstdint>
#include <string>

#include "common/graph.h"
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

// The kernel's file: graph, the default tiling as config 0 then up to max_configs - 1
// distinct others (fewer when the tiling space is smaller), a few re-measured duplicates,
// runtimes from the simulator with ~0.1% measurement noise, and a per-graph normalizer
// (the default's runtime rounded to two significant digits).
TileGraph make_tile_graph(const std::string& name, const TileKernel& kernel, int64_t max_configs,
                          Rng& rng);

// Multiplicative measurement noise: ~0.1% normal, clipped to +-0.9%.
double measurement_noise(Rng& rng);

}  // namespace tpuperf::synth
