// ShardWriter: streams preprocessed graphs into one HDF5 shard (format: common/shards/shard.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/graph/processed_graph.h"
#include "common/shards/shard.h"

namespace tpuperf {

// Streams graphs into "<path>.tmp" and renames it to path on close(), so a reader never
// sees a partial shard. Rows go to the file in whole chunks as they arrive: memory holds
// at most about one kShardChunkBytes chunk per dataset plus the small per-graph arrays.
class ShardWriter {
 public:
  // collection must be a collection id (common/graph/collection.h). deflate_level 0..9; 0 stores
  // uncompressed (checksums are always on).
  ShardWriter(std::string path, std::string collection, std::string split, int deflate_level);
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
  // Writes the per-graph arrays and attributes, closes and renames. A shard without
  // graphs gets kNodeFeatDim node feature columns. Errors name the shard and the dataset;
  // after an error the temporary file is gone.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpuperf
