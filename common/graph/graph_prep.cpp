#include "common/graph/graph_prep.h"

#include <limits>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/base/phase_clock.h"
#include "common/graph/feature_transform.h"
#include "common/graph/prune.h"

namespace tpuperf {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::vector<int32_t> to_int32(const std::vector<int64_t>& v, const std::string& graph,
                              const char* key) {
  std::vector<int32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] > kInt32Max)
      throw Error("index " + std::to_string(v[i]) + " does not fit int32", graph, key);
    out[i] = static_cast<int32_t>(v[i]);
  }
  return out;
}

}  // namespace

void check_node_feat(const GraphBase& g) {
  if (g.node_feat.size() != static_cast<size_t>(g.num_nodes) * kNodeFeatDim)
    throw Error("node_feat has " + std::to_string(g.node_feat.size()) + " values, expected " +
                    std::to_string(g.num_nodes) + " x 140", g.name, "node_feat");
  if (g.num_nodes > kInt32Max) throw Error("too many nodes for int32 indices", g.name, "node_feat");
}

namespace {

ProcessedGraph header(const GraphBase& g, const std::string& collection,
                      const std::string& split, int fold, int64_t configs_before) {
  ProcessedGraph p;
  p.collection = collection;
  p.split = split;
  p.name = g.name;
  p.fold = fold;
  p.configs_before = configs_before;
  p.nodes_before = g.num_nodes;
  p.edges_before = g.num_edges();
  return p;
}

void set_node_features(ProcessedGraph& p, std::vector<float> feat, int64_t n) {
  repad_minor_to_major(feat.data(), n);
  p.num_nodes = n;
  p.num_node_feat = kNodeFeatDim;
  p.node_feat = std::move(feat);
}

DedupResult tile_configs(const TileGraph& g, DedupPolicy policy, bool dedup) {
  const size_t c = static_cast<size_t>(g.num_configs());
  if (g.config_feat.size() != c * kTileConfigDim || g.config_runtime_normalizers.size() != c)
    throw Error("config arrays disagree on the number of configs", g.name, "config_feat");
  ScopedPhase phase("dedup");
  if (dedup) return dedup_tile(g, policy);
  DedupResult r = identity_dedup(g.config_runtime);
  r.normalizers = g.config_runtime_normalizers;
  return r;
}

// Kept configs x nc, each node's 18 values packed base 7, read straight from the source.
std::vector<uint64_t> pack_configs(const LayoutGraph& g, const std::vector<int64_t>& kept) {
  ScopedPhase phase("pack");
  const size_t nc = static_cast<size_t>(g.num_config_nodes());
  std::vector<uint64_t> packed(kept.size() * nc);
  for (size_t k = 0; k < kept.size(); ++k) {
    const int8_t* block = g.node_config_feat.data() + static_cast<size_t>(kept[k]) * nc * kLayoutConfigDim;
    for (size_t j = 0; j < nc; ++j) packed[k * nc + j] = pack_layout_values(block + j * kLayoutConfigDim);
  }
  return packed;
}

}  // namespace

ProcessedGraph to_processed(const TileGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup) {
  try {
    check_node_feat(g);
    ProcessedGraph p = header(g, collection, split, fold, g.num_configs());
    set_node_features(p, g.node_feat, g.num_nodes);
    p.node_opcode = g.node_opcode;
    p.edge_index = to_int32(g.edge_index, g.name, "edge_index");

    DedupResult r = tile_configs(g, policy, dedup);
    p.config_runtime = std::move(r.runtime);
    p.config_runtime_normalizers = std::move(r.normalizers);
    p.config_feat.reserve(r.kept.size() * kTileConfigDim);
    for (int64_t k : r.kept)
      p.config_feat.insert(p.config_feat.end(), g.config_feat.begin() + k * kTileConfigDim,
                           g.config_feat.begin() + (k + 1) * kTileConfigDim);
    return p;
  } catch (Error& e) {
    e.with_file(g.name);
    throw;
  }
}

ProcessedGraph to_processed(const LayoutGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup,
                            const PruneRule& prune) {
  try {
    check_node_feat(g);
    ProcessedGraph p = header(g, collection, split, fold, g.num_configs());
    PrunedGraph pruned = [&] {
      ScopedPhase phase("prune");
      return prune_layout(g, prune);
    }();
    set_node_features(p, std::move(pruned.node_feat), pruned.num_nodes);
    p.node_opcode = std::move(pruned.node_opcode);
    p.edge_index = to_int32(pruned.edge_index, g.name, "edge_index");
    p.node_config_ids = to_int32(pruned.node_config_ids, g.name, "node_config_ids");
    p.node_splits = std::move(pruned.node_splits);

    if (g.node_config_feat.size() !=
        static_cast<size_t>(g.num_configs()) * g.num_config_nodes() * kLayoutConfigDim)
      throw Error("node_config_feat size does not match configs x nc x 18", g.name,
                  "node_config_feat");
    DedupResult r = [&] {
      ScopedPhase phase("dedup");
      return dedup ? dedup_layout(g, policy) : identity_dedup(g.config_runtime);
    }();
    p.config_runtime = std::move(r.runtime);
    p.node_config_packed = pack_configs(g, r.kept);
    return p;
  } catch (Error& e) {
    e.with_file(g.name);
    throw;
  }
}

}  // namespace tpuperf
