// One graph after preprocessing: what the pipeline writes into HDF5 shards and what the
// trainer reads back. Tile and layout graphs share this record; fields of the other kind
// stay empty.
#pragma once

#include <cstdint>
#include <cstring>
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

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "pack_layout_values reads bytes as words");

// 8 layout values (-1..5, one per byte of w, the first in the lowest byte) as the base-7
// number sum (v_j + 1) * 7^j, j = 0..7, in three multiplies: each step joins neighbouring
// digits into lanes twice as wide (base 7 -> 49 -> 2401 -> 7^8), and no lane overflows
// (48 < 2^8, 2400 < 2^16, 7^8 - 1 < 2^32).
inline uint64_t pack_8_layout_values(uint64_t w) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full, kOnes = 0x0101010101010101ull;
  const uint64_t d = ((w & kLow7) + kOnes) ^ (w & ~kLow7);  // v + 1 per byte, no carries
  const uint64_t d49 = (d & 0x00ff00ff00ff00ffull) + ((d >> 8) & 0x00ff00ff00ff00ffull) * 7;
  const uint64_t d2401 = (d49 & 0x0000ffff0000ffffull) + ((d49 >> 16) & 0x0000ffff0000ffffull) * 49;
  return (d2401 & 0xffffffffull) + (d2401 >> 32) * 2401;
}

}  // namespace detail

// Base-7 packing of one node's 18 layout values (-1..5) and its exact inverse: value v at
// position j contributes (v + 1) * 7^j. Packing is inline and works on words:
// preprocessing packs every node of every kept config, and a call across translation
// units per 18 digit-by-digit multiply-adds cost more than the packing itself.
inline uint64_t pack_layout_values(const int8_t* values18) {
  constexpr uint64_t kPow7_8 = 5764801;  // 7^8
  uint64_t lo, mid;
  std::memcpy(&lo, values18, 8);
  std::memcpy(&mid, values18 + 8, 8);
  const uint64_t top = static_cast<uint64_t>(values18[16] + 1) + static_cast<uint64_t>(values18[17] + 1) * 7;
  return detail::pack_8_layout_values(lo) +
         (detail::pack_8_layout_values(mid) + top * kPow7_8) * kPow7_8;
}
void unpack_layout_values(uint64_t packed, int8_t* values18);

}  // namespace tpuperf
