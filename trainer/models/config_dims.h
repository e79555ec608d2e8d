// The raw tensor dims a graph's configurations are read against: which dims a tile
// covers, which dim a layout puts minor. The feature transform standardizes the shape
// columns, so these are taken from the untransformed node features, after loading and
// before the transform (the trainer's dataset and the ranker both call this), and are
// never stored in the shards: a processed tree of any schema version gets them.
#pragma once

#include <cstdint>

#include "common/graph/collection.h"
#include "common/graph/processed_graph.h"

namespace tpuperf {

// Tile: the root's shape dims 0-5 and minor_to_major 6-11, then the bytes the kernel writes
// per output element, the bytes and the element count of its parameters (its inputs).
constexpr int kTileConfigDims = 15;
constexpr int kTileOutBytes = 12, kTileInBytes = 13, kTileInElements = 14;
constexpr int kLayoutConfigDims = 18;  // per configurable node: output, operand 0, operand 1

// Fills g.config_dims from g.node_feat, which must still hold the re-padded, untransformed
// 140 columns (num_node_feat == 140).
//   tile: the shape dims (columns 21-26) and minor_to_major (134-139, -1 past the rank) of
//         the kernel's root: the last node whose is_root (column 0) is set, else the last
//         node; when its output is a tuple (a multi-output kernel: a tuple root, or a
//         tuple-shaped fusion whose operand with is_root set, its callee's root, is the
//         tuple), of the tuple's element with the most elements. Then the bytes written per
//         output element (a tuple's elements' summed), from the element type one-hot
//         (columns 2-20); the bytes (shape product, column 28, x element bytes) and elements
//         of the parameter nodes (opcode 63) summed, of a fusion root's operands only when
//         the root is a fusion (the callee's own parameters repeat them): what a tile's
//         working set is made of (shape_features.h);
//   layout: per configurable node, in node_config_ids order, the shape dims of its output
//         (the node itself) and of its first two operands in edge order (the release's
//         edges are sorted, so the two lowest-numbered producers); 0 where an operand is
//         absent (no such edge, or pruned away).
// Values are rounded to integers and clamped at -1. Throws Error naming the graph when
// node_feat has another width, a value is not finite or an index is out of range.
void attach_config_dims(Kind kind, ProcessedGraph& g);

}  // namespace tpuperf
