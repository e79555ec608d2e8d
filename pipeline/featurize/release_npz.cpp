#include "pipeline/featurize/release_npz.h"

#include <algorithm>
#include <vector>

#include "common/formats/npz_writer.h"
#include "pipeline/featurize/extra_features.h"

namespace tpuperf::featurize {

namespace {

constexpr bool kCompress = true;

void add_graph(NpzWriter& w, const GraphBase& g, const ExtraFeatures& extra) {
  w.add("node_feat", g.node_feat, {g.num_nodes, kNodeFeatDim});
  w.add("node_opcode", g.node_opcode, {g.num_nodes});
  w.add("edge_index", g.edge_index, {g.num_edges(), 2});
  if (!extra.node_feat_extra.empty())
    w.add("node_feat_extra", extra.node_feat_extra, {g.num_nodes, kExtraNodeFeatDim});
}

// The in-memory int8 configs as the file's float32, one config at a time: a large module's
// configs are never held twice.
void add_layout_configs(NpzWriter& w, const LayoutGraph& g) {
  const int64_t c = g.num_configs(), nc = g.num_config_nodes();
  w.begin_member("node_config_feat", DType::F4, {c, nc, kLayoutConfigDim});
  const size_t per_config = static_cast<size_t>(nc) * kLayoutConfigDim;
  std::vector<float> config(per_config);
  for (int64_t j = 0; j < c; ++j) {
    const int8_t* src = g.node_config_feat.data() + j * per_config;
    std::copy(src, src + per_config, config.begin());
    w.write_data(config.data(), per_config * sizeof(float));
  }
  w.end_member();
}

}  // namespace

void write_tile_npz(const std::string& path, const FeaturizedTile& tile) {
  const TileGraph& g = tile.graph;
  NpzWriter w(path, kCompress);
  add_graph(w, g, tile.extra);
  w.add("config_feat", g.config_feat, {g.num_configs(), kTileConfigDim});
  w.add("config_runtime", g.config_runtime, {g.num_configs()});
  w.add("config_runtime_normalizers", g.config_runtime_normalizers, {g.num_configs()});
  w.close();
}

void write_layout_npz(const std::string& path, const FeaturizedLayout& layout) {
  const LayoutGraph& g = layout.graph;
  NpzWriter w(path, kCompress);
  add_graph(w, g, layout.extra);
  add_layout_configs(w, g);
  w.add("node_config_ids", g.node_config_ids, {g.num_config_nodes()});
  w.add("config_runtime", g.config_runtime, {g.num_configs()});
  w.add("node_splits", g.node_splits, {1, static_cast<int64_t>(g.node_splits.size())});
  w.close();
}

}  // namespace tpuperf::featurize
