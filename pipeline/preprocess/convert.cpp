#include "pipeline/preprocess/convert.h"

#include <sys/stat.h>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/base/phase_clock.h"
#include "common/graph/graph.h"
#include "common/graph/graph_prep.h"
#include "pipeline/preprocess/features.h"

namespace tpuperf {

ProcessedGraph convert_source(const std::string& path, const std::string& collection,
                              const std::string& split, int fold, const PreprocessSettings& s,
                              NpzBuffer* buffer) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("is a directory, not an .npz file", path);
  bool dedup = split != "test";  // test configs must keep their indices
  // Phases (common/base/phase_clock.h): loading is inflating, checking the CRC and, here,
  // converting and validating the arrays; to_processed's own dedup, pruning and packing
  // are timed inside it, what remains of it is re-padding and copying.
  ScopedPhase phase("convert + validate");
  if (Collection::parse(collection).kind == Kind::Tile) {
    TileGraph g = load_tile_graph(path, buffer);
    ScopedPhase rest("repad + copies");
    return to_processed(g, collection, split, fold, s.dedup, dedup);
  }
  LayoutGraph g = load_layout_graph(path, buffer);
  ScopedPhase rest("repad + copies");
  return to_processed(g, collection, split, fold, s.dedup, dedup, s.prune.of(collection));
}

std::vector<std::string> diff_graphs(const ProcessedGraph& a, const ProcessedGraph& b) {
  std::vector<std::string> d;
  auto field = [&](const char* name, bool same) {
    if (!same) d.push_back(name);
  };
  field("name", a.name == b.name);
  field("fold", a.fold == b.fold);
  field("num_nodes", a.num_nodes == b.num_nodes);
  field("node_feat", a.node_feat == b.node_feat);
  field("node_opcode", a.node_opcode == b.node_opcode);
  field("edge_index", a.edge_index == b.edge_index);
  field("config_runtime", a.config_runtime == b.config_runtime);
  field("config_feat", a.config_feat == b.config_feat);
  field("config_runtime_normalizers", a.config_runtime_normalizers == b.config_runtime_normalizers);
  field("node_config_ids", a.node_config_ids == b.node_config_ids);
  field("node_config_packed", a.node_config_packed == b.node_config_packed);
  field("node_splits", a.node_splits == b.node_splits);
  field("configs_before", a.configs_before == b.configs_before);
  field("nodes_before", a.nodes_before == b.nodes_before);
  field("edges_before", a.edges_before == b.edges_before);
  return d;
}

}  // namespace tpuperf
