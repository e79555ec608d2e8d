// One graph after preprocessing: what the pipeline writes into HDF5 shards and what the
// trainer reads back. Tile and layout graphs share this record; fields of the other kind
// stay empty.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// Fold of a graph: 0..k-1 for train graphs, or one of these.
constexpr int kFoldValid = -1;
constexpr int kFoldTest = -2;

struct ProcessedGraph {
  std::string collection;  // "tile:xla", "layout:nlp:random"
  std::string split;       // "train", "valid", "test"
  std::string name;        // source file stem
  int fold = kFoldTest;

  int64_t num_nodes = 0;
  int num_node_feat = 0;             // columns kept after the feature transform
  std::vector<float> node_feat;      // num_nodes x num_node_feat, transformed
  std::vector<uint8_t> node_opcode;  // num_nodes
  std::vector<int32_t> edge_index;   // num_edges x 2, [u, v]: u consumes v (re-indexed)
  int64_t num_edges() const { return static_cast<int64_t>(edge_index.size() / 2); }

  // Measured configurations after dedup (train/valid) or untouched (test).
  std::vector<int64_t> config_runtime;  // num_configs, ns
  int64_t num_configs() const { return static_cast<int64_t>(config_runtime.size()); }

  // tile only
  std::vector<float> config_feat;                   // num_configs x 24
  std::vector<int64_t> config_runtime_normalizers;  // num_configs

  // layout only
  std::vector<int32_t> node_config_ids;  // nc, indices into the (pruned) nodes
  // num_configs x nc: the 18 values (-1..5) of one node's layout packed base 7,
  // value v at position j contributes (v + 1) * 7^j. Exact: 7^18 < 2^53.
  std::vector<uint64_t> node_config_packed;
  std::vector<int64_t> node_splits;  // re-indexed computation boundaries

  // Raw tensor dims the configs are read against (tile: 12, layout: nc x 18; see
  // trainer/models/config_dims.h). Not stored in the shards: attach_config_dims fills it from the
  // untransformed node features when a graph is loaded; empty until then.
  std::vector<int64_t> config_dims;
  bool has_config_dims = false;  // set by attach_config_dims (nc = 0 leaves config_dims empty)

  // Provenance: what preprocessing did to this graph.
  int64_t configs_before = 0;  // configs in the source file
  int64_t nodes_before = 0;
  int64_t edges_before = 0;
};

namespace detail {

// 7^j: the digits' products are independent, where Horner's rule chains 18 multiplies.
constexpr std::array<uint64_t, 18> kPow7 = [] {
  std::array<uint64_t, 18> p{};
  p[0] = 1;
  for (size_t j = 1; j < p.size(); ++j) p[j] = p[j - 1] * 7;
  return p;
}();

}  // namespace detail

// Base-7 packing of one node's 18 layout values (-1..5) and its exact inverse. Packing is
// inline: preprocessing calls it once per node of every kept config (a call across
// translation units per 18 multiply-adds cost more than the arithmetic).
inline uint64_t pack_layout_values(const int8_t* values18) {
  uint64_t packed = 0;
  for (size_t j = 0; j < 18; ++j) packed += static_cast<uint64_t>(values18[j] + 1) * detail::kPow7[j];
  return packed;
}
void unpack_layout_values(uint64_t packed, int8_t* values18);

}  // namespace tpuperf
