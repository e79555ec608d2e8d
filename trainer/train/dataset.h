// The graphs a trainer rank works on, loaded from a processed_dir's shards.
//
// Shards hold re-padded but untransformed node features; GraphSet applies the manifest's
// FeatureTransform of the collection on load, the same function for train, valid, test and
// new data. Structures (nodes, edges, runtimes) stay in memory. Config rows differ by kind:
// tile rows are small and kept whole; layout rows (up to ~10^5 configs x configurable
// nodes per graph) are read from the shard on demand, a slate at a time.
//
// Not thread-safe: HDF5 is built serial, so one thread at a time may call a GraphSet.
//
// This header stays free of LibTorch and of common/shards/shard.h, so it can sit beside
// trainer/batch.h in one translation unit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/graph/feature_transform.h"
#include "common/shards/manifest.h"
#include "common/graph/processed_graph.h"
#include "trainer/models/graph_slate.h"

namespace tpuperf {

class ShardReader;

class GraphSet {
 public:
  using Filter = std::function<bool(const ManifestGraph&)>;

  // Loads every graph of `collection` the filter accepts, in manifest order. Throws Error
  // naming the shard and graph on a read or checksum failure, and on a manifest that
  // disagrees with its shards or has no transform for the collection. `label` only names
  // the set in log lines ("train fold 2", "valid"). `transform` overrides the manifest's
  // (e.g. the one a checkpoint was trained with, when predicting on another processed_dir);
  // nullptr: the manifest's transform of the collection.
  GraphSet(const std::string& processed_dir, const Manifest& manifest,
           const std::string& collection, const Filter& keep, const std::string& label = "",
           const FeatureTransform* transform = nullptr);
  // The same, reading <processed_dir>/manifest.yaml first.
  GraphSet(const std::string& processed_dir, const std::string& collection, const Filter& keep,
           const std::string& label = "", const FeatureTransform* transform = nullptr);
  ~GraphSet();
  GraphSet(GraphSet&&) noexcept;
  GraphSet& operator=(GraphSet&&) noexcept;

  const std::string& collection() const { return collection_; }
  Kind kind() const { return kind_; }
  // Columns of the transformed node features (the model's input width).
  int num_node_feat() const;
  const FeatureTransform& transform() const { return transform_; }

  int64_t size() const { return static_cast<int64_t>(graphs_.size()); }
  // Structure, transformed node features and config_runtime (all configs). Tile graphs
  // also hold all config rows; layout graphs have node_config_packed empty.
  const ProcessedGraph& graph(int64_t i) const;
  const ManifestGraph& entry(int64_t i) const;
  // "<collection>:<name>", the graph's submission id.
  std::string key(int64_t i) const;
  std::vector<int64_t> num_configs() const;  // per graph
  // Bytes held in memory by the loaded graphs.
  int64_t memory_bytes() const { return memory_bytes_; }

  // A copy of graph i whose config rows (config_runtime and the kind's rows) are exactly
  // the requested ones, in order (repeats allowed): row s is config config_indices[s].
  ProcessedGraph with_configs(int64_t i, const std::vector<int64_t>& config_indices) const;
  // The slate for make_batch; see GraphSlate. Indices must be in range.
  GraphSlate slate(int64_t i, const std::vector<int64_t>& config_indices) const;

  // Layout sets: keep up to `mb` MiB of inflated config rows in memory, split evenly over
  // the set's shards (ShardReader::set_config_cache_bytes). A training set draws slates
  // from the same graphs every epoch, and without a cache each slate inflates a 64 KiB
  // chunk per config it reads. 0: HDF5's default of 1 MiB per shard. Tile sets hold
  // their rows already: no effect.
  void set_config_cache_mb(double mb);
  // The chunk caches of the set's shards' config rows, summed, as HDF5 reports them.
  int64_t config_cache_bytes() const;

 private:
  const ShardReader& reader(const std::string& shard_file) const;
  std::set<std::string> shards() const;  // the shard files of the set's graphs
  void load(const Manifest& manifest, const Filter& keep, const std::string& label);
  ProcessedGraph load_graph(const ManifestGraph& m) const;
  void check_index(int64_t i) const;
  void check_configs(int64_t i, const std::vector<int64_t>& config_indices) const;

  std::string dir_, collection_;
  Kind kind_ = Kind::Tile;
  FeatureTransform transform_;
  std::vector<ManifestGraph> entries_;
  std::vector<ProcessedGraph> graphs_;
  int64_t memory_bytes_ = 0;
  // Open shards by manifest file name, opened on first use. Layout sets keep them for
  // on-demand config reads; tile sets close them after loading.
  mutable std::map<std::string, std::unique_ptr<ShardReader>> readers_;
};

}  // namespace tpuperf
