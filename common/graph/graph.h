// Typed, validated records of one TpuGraphs file. Loading accepts the dtypes the real
// release uses and the ones its README documents (opcodes uint8 or int32, edges and ids
// int64 or int32, runtimes int64 or int32) and converts them to one in-memory form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

class NpzBuffer;  // common/formats/npz_reader.h

constexpr int kNodeFeatDim = 140;
constexpr int kTileConfigDim = 24;
constexpr int kLayoutConfigDim = 18;
constexpr int kNumOpcodes = 121;  // ids 0..120

// What tile and layout graphs share: the graph itself.
struct GraphBase {
  std::string name;                // file stem
  int64_t num_nodes = 0;
  std::vector<float> node_feat;    // num_nodes x 140
  std::vector<uint8_t> node_opcode;  // num_nodes
  std::vector<int64_t> edge_index;   // num_edges x 2, row [u, v]: u consumes v
  int64_t num_edges() const { return static_cast<int64_t>(edge_index.size() / 2); }
};

struct TileGraph : GraphBase {
  std::vector<float> config_feat;                 // num_configs x 24
  std::vector<int64_t> config_runtime;            // num_configs, ns
  std::vector<int64_t> config_runtime_normalizers;  // num_configs, ns
  int64_t num_configs() const { return static_cast<int64_t>(config_runtime.size()); }
};

struct LayoutGraph : GraphBase {
  std::vector<int64_t> node_config_ids;  // nc, indices of configurable nodes
  // num_configs x nc x 18, values -1..5. Held as int8: stored in the file as float32,
  // validated to be integers in range on load (4x less memory).
  std::vector<int8_t> node_config_feat;
  std::vector<int64_t> config_runtime;  // num_configs, ns
  std::vector<int64_t> node_splits;     // k (file shape (1, k))
  int64_t num_config_nodes() const { return static_cast<int64_t>(node_config_ids.size()); }
  int64_t num_configs() const { return static_cast<int64_t>(config_runtime.size()); }
};

// Load a file and validate it. Errors name the file and the key at fault.
// buffer: see NpzBuffer (common/formats/npz_reader.h); none: memory freed on return.
TileGraph load_tile_graph(const std::string& path, NpzBuffer* buffer = nullptr);
LayoutGraph load_layout_graph(const std::string& path, NpzBuffer* buffer = nullptr);

// Checks every rule of the real format; throws Error with the offending key.
// Rules: shapes consistent ((n,140) features, (m,2) edges, (c,24) or (c,nc,18) configs),
// n >= 1, opcodes in 0..120, edge endpoints in [0,n), node_config_ids in [0,n) and
// unique, config values integers in -1..5, runtimes >= 0, normalizers >= 1 (the target
// divides by them), at least one config, node features and tile config features finite,
// node_splits non-decreasing within [0,n].
// Loading also checks each file array's dtype and shape, and that layout config values
// stored as floats are exact integers, before converting them.
void validate(const TileGraph& g);
void validate(const LayoutGraph& g);

// Writes the real file format: keys and dtypes as in the release (uint8 opcodes,
// int64 edges/ids/runtimes, float32 features and configs, node_splits shape (1,k)).
// Does not validate, so tests can write broken files; num_nodes sets the node count and
// vector sizes that disagree with it throw Error naming the key.
void save_tile_graph(const std::string& path, const TileGraph& g, bool compress);
void save_layout_graph(const std::string& path, const LayoutGraph& g, bool compress);

// File stem of a path: ".../resnet50.4x4.fp16.npz" -> "resnet50.4x4.fp16". Only ".npz"
// is stripped: graph names contain dots.
std::string file_stem(const std::string& path);

}  // namespace tpuperf
