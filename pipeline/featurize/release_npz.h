// Writes featurized graphs as release .npz files through tpuperf's npz writer: the keys,
// dtypes and shapes of the release (and of common/graph/graph.h's save_*_graph), deflated like
// numpy's savez_compressed, plus node_feat_extra when the graph carries it. A file appears
// only when complete (NpzWriter writes "<path>.tmp" and renames it).
#pragma once

#include <string>

#include "pipeline/featurize/featurized.h"

namespace tpuperf::featurize {

void write_tile_npz(const std::string& path, const FeaturizedTile& tile);
void write_layout_npz(const std::string& path, const FeaturizedLayout& layout);

}  // namespace tpuperf::featurize
