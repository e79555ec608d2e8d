// What a configuration means for the tensors it tiles or lays out, as model inputs: the
// quantities the flat baselines rank by (docs/experiments E0),
// which a GNN joining the raw config additively cannot form on its own. They combine a
// config with the raw dims of trainer/models/config_dims.h. TPU tensors are stored in (8 x 128)
// tiles over their two minor dims, so a layout putting a dim of 3 minor pads it 42-fold,
// and a tile grid has prod_i ceil(dim_i / tile_i) steps.
#pragma once

#include <cstdint>

namespace tpuperf {

// Tile, per config: per dim log ceil(dim / tile) (6), then the log grid steps, log tile
// elements, log tile elements padded to (8 x 128) on the root's minor dims, the log
// padding waste, log(grid x padded tile), log kernel tile elements and log(grid x kernel
// tile); then the tile's bytes, log(1 + x) each: the padded output tile at the kernel's
// output widths, its inputs' bytes if they scale with the output tile (the parameters'
// bytes per output element x padded tile), the kernel tile at the parameters' mean width,
// and the output plus the scaled inputs. Scaled to about unit range.
// Why bytes: a tile whose working set outgrows the scratchpad (16 MiB on TPU v3) spills and
// runs several times slower; where that cliff lies depends on element widths and operand
// counts, which tile sizes alone do not say (issue #57 item 3, E36, E42, E43).
constexpr int kTileShapeFeat = 17;
// config24: a config_feat row; dims15: the graph's config_dims (config_dims.h).
void tile_shape_features(const float* config24, const int64_t* dims15, float* out);

// Layout, per configurable node and tensor (output, input, kernel), 9 each: compiler
// default (all -1), row-major, log of the minor and the second-minor dim's size, log of
// their padding to 128 and 8, log of the tensor's elements, and its padded waste w =
// elements x (padding factor - 1) / the graph's largest configurable tensor, as w / 8 and
// log(1 + w). w is not clipped: summed over nodes it is the size-weighted padding the flat
// baselines rank real layouts by (clipping it at 16 scored 0.04 lower on the real module).
// A default or absent tensor gets only its default flag and size.
constexpr int kLayoutShapeFeat = 27;
// values18: one node's layout values (-1..5); dims18: its config_dims row; max_elements:
// the largest element count over the graph's config_dims tensors (>= 1).
void layout_shape_features(const int8_t* values18, const int64_t* dims18, double max_elements, float* out);

// What of those features depends on the node alone (its tensors' ranks and element counts,
// per dim the log of its size and of its paddings), computed once per node: a batch builds
// each node's features for every config in its slate, and per config only the waste's two
// logs are left (the per-config logs took about 2% of an AVX2 layout default step, perf
// 2026-12-07). The same values as from dims18, bit for bit.
struct LayoutNodeDims {
  struct TensorDims {
    int rank = 0;
    double size = 1;      // elements
    float log_size = 0;   // feature 6
    float log_dim[6] = {};  // features 2 and 3 per dim
    double pad128[6] = {}, pad8[6] = {};  // log(padded / size) per dim, to 128 and to 8
  };
  TensorDims tensor[3];
};
LayoutNodeDims layout_node_dims(const int64_t* dims18);
void layout_shape_features(const int8_t* values18, const LayoutNodeDims& node, double max_elements, float* out);

// The largest element count of any tensor in nc config_dims rows of 18 (at least 1).
double max_layout_elements(const int64_t* dims, int64_t nc);

}  // namespace tpuperf
