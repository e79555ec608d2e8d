// ShardReader: reads graphs, whole or a few configs at a time, from one HDF5 shard
// (format: common/shards/shard.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "common/graph/processed_graph.h"
#include "common/shards/shard.h"

namespace tpuperf {

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

class ShardReader {
 public:
  // Opens read-only and loads the per-graph arrays and offsets (small). Throws Error if
  // the file is missing, is not a tpuperf shard, has a schema_version this build does not
  // read or has inconsistent offsets.
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

  // The whole graph. A checksum or read failure throws Error naming the shard, the graph
  // and the dataset.
  ProcessedGraph read(int64_t i) const;
  // Everything but the per-config rows: config_runtime is filled, config_feat,
  // config_runtime_normalizers and node_config_packed stay empty.
  ProcessedGraph read_structure(int64_t i) const;
  // Only the rows of the given configs (any order, repeats allowed), read with
  // hyperslab selections: a slate of a 100k-config graph costs only its chunks.
  ConfigRows read_configs(int64_t i, const std::vector<int64_t>& config_indices) const;
  // Layout shards: keep up to `bytes` of inflated node_config_packed chunks in memory
  // (HDF5's chunk cache), so that slates drawn again from the same chunks do not inflate
  // them again. 0: HDF5's default (1 MiB). Takes effect on the next read_configs.
  void set_config_cache_bytes(size_t bytes);
  // What node_config_packed's chunk cache holds at most, as HDF5 reports it (opens the
  // dataset); 0 for tile shards.
  size_t config_cache_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuperf
