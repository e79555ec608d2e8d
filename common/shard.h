// HDF5 shards: one .h5 file holds many preprocessed graphs of one collection and split.
// tpuperf-preprocess writes them (ShardWriter), the trainer and tpuperf-inspect read them
// (ShardReader). Rows of all graphs are concatenated; offset arrays (CSR) say where each
// graph's rows start, so one graph, or a few configs of one graph, can be read alone.
//
// File layout, schema_version 1 (G graphs; every dataset below exists in every shard,
// the ones of the other kind with zero rows):
//   root attributes: schema_version (int32), collection, split, created_by
//                    ("tpuperf-preprocess") (fixed-length strings), num_graphs (int64)
//   per graph (length G): name (fixed-length string), fold (int32), num_nodes,
//     num_edges, num_configs, num_config_nodes, configs_before, nodes_before,
//     edges_before (int64)
//   offsets (length G+1, int64, first 0) and the rows they index:
//     node_offsets        -> node_feat (N x F float32), node_opcode (N uint8)
//     edge_offsets        -> edge_index (E x 2 int32, node ids local to the graph)
//     config_offsets      -> config_runtime (C int64);
//                            tile: config_feat (C x 24 float32),
//                                  config_runtime_normalizers (C int64)
//     config_node_offsets -> node_config_ids (int32)                        [layout]
//     packed_offsets      -> node_config_packed (uint64; per graph num_configs x nc,
//                            row-major)                                     [layout]
//     split_offsets       -> node_splits (int64)                            [layout]
//   /feature_transform: kept_columns (int32), log1p (uint8), mean, stddev (float64)
// Every dataset is chunked with fletcher32 checksums (plus shuffle + deflate when the
// level is > 0), so a damaged file is detected on read, not trained on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/graph.h"
#include "common/processed_graph.h"

namespace tpuperf {

constexpr int kShardSchemaVersion = 1;

// The shards' handling of HDF5 errors, for every other HDF5 file tpuperf writes or reads
// (the feature files). quiet_hdf5(): call before any HDF5 use (no error stacks printed on
// stderr, no atexit clean-up that could crash after a failed close). hdf5_error_detail():
// the cause of the last HDF5 failure, " (HDF5: ...)" to append to an Error's reason, or ""
// when HDF5 recorded none; clears HDF5's error stack.
void quiet_hdf5();
std::string hdf5_error_detail();

// What a shard knows about one graph without reading its rows.
struct ShardGraphInfo {
  std::string name;
  int fold = kFoldTest;
  int64_t num_nodes = 0, num_edges = 0, num_configs = 0, num_config_nodes = 0;
  int64_t configs_before = 0, nodes_before = 0, edges_before = 0;
};

// The rows of some configs of one graph, in the order they were asked for.
struct ConfigRows {
  std::vector<int64_t> indices;
  std::vector<int64_t> config_runtime;              // indices.size()
  std::vector<float> config_feat;                   // tile: indices.size() x 24
  std::vector<int64_t> config_runtime_normalizers;  // tile: indices.size()
  std::vector<uint64_t> node_config_packed;         // layout: indices.size() x nc
};

// Streams graphs into "<path>.tmp" and renames it to path on close(), so a reader never
// sees a partial shard. Rows go to the file in whole chunks as they arrive: memory holds
// at most about one 64 KiB chunk per dataset plus the small per-graph arrays.
class ShardWriter {
 public:
  // collection must be a tile ("tile:...") or layout ("layout:...") collection id.
  // deflate_level 0..9; 0 stores uncompressed (checksums are always on).
  ShardWriter(std::string path, std::string collection, std::string split,
              const FeatureTransform& transform, int deflate_level);
  // Without a successful close() the temporary file is removed.
  ~ShardWriter();
  ShardWriter(ShardWriter&&) noexcept;
  ShardWriter& operator=(ShardWriter&&) noexcept;

  // Checks the graph (sizes consistent, node ids in range, same number of node feature
  // columns as the graphs before, collection/split empty or equal to the shard's, name
  // new) before writing anything, so a rejected graph leaves the shard usable.
  void add(const ProcessedGraph& g);
  // Changes the fold of the graph added index-th (0-based) before close(): train folds
  // are assigned only once every graph of the collection is known.
  void set_fold(int64_t index, int fold);
  // Uncompressed bytes of the rows added so far: the driver closes a shard near shard_mb.
  int64_t bytes_added() const;
  int64_t num_graphs() const;
  const std::string& path() const;
  // Writes the per-graph arrays and attributes, closes and renames. Errors name the
  // shard and the dataset; after an error the temporary file is gone.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ShardReader {
 public:
  // Opens read-only and loads the per-graph arrays and offsets (small). Throws Error if
  // the file is missing, is not a tpuperf shard, has another schema_version or has
  // inconsistent offsets.
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const std::string& path() const;
  const std::string& collection() const;
  const std::string& split() const;
  bool is_tile() const;
  int num_node_feat() const;
  int64_t num_graphs() const;
  const ShardGraphInfo& info(int64_t i) const;
  std::vector<std::string> names() const;
  // Index of the graph with that name, or -1.
  int64_t find(const std::string& name) const;
  const FeatureTransform& feature_transform() const;

  // The whole graph. A checksum or read failure throws Error naming the shard, the graph
  // and the dataset.
  ProcessedGraph read(int64_t i) const;
  // Everything but the per-config rows: config_runtime is filled, config_feat,
  // config_runtime_normalizers and node_config_packed stay empty.
  ProcessedGraph read_structure(int64_t i) const;
  // Only the rows of the given configs (any order, repeats allowed), read with
  // hyperslab selections: a slate of a 100k-config graph costs only its chunks.
  ConfigRows read_configs(int64_t i, const std::vector<int64_t>& config_indices) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuperf
