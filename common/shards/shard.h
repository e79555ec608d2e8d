// HDF5 shards, their format: one .h5 file holds many preprocessed graphs of one collection
// and split. tpuperf-preprocess writes them (ShardWriter, common/shards/shard_writer.h), the
// trainer and tpuperf-inspect read them (ShardReader, common/shards/shard_reader.h). Rows of all
// graphs are concatenated; offset arrays (CSR) say where each graph's rows start, so one
// graph, or a few configs of one graph, can be read alone.
//
// File layout, schema_version 2 (G graphs; every dataset below exists in every shard,
// the ones of the other kind with zero rows):
//   root attributes: schema_version (int32), collection, split, created_by
//                    ("tpuperf-preprocess") (fixed-length strings), num_graphs (int64)
//   per graph (length G): name (fixed-length string), fold (int32), num_nodes,
//     num_edges, num_configs, num_config_nodes, configs_before, nodes_before,
//     edges_before (int64)
//   offsets (length G+1, int64, first 0) and the rows they index:
//     node_offsets        -> node_feat (N x F float32; the re-padded, untransformed
//                            features: F = 140), node_opcode (N uint8)
//     edge_offsets        -> edge_index (E x 2 int32, node ids local to the graph)
//     config_offsets      -> config_runtime (C int64);
//                            tile: config_feat (C x 24 float32),
//                                  config_runtime_normalizers (C int64)
//     config_node_offsets -> node_config_ids (int32)                        [layout]
//     packed_offsets      -> node_config_packed (uint64; per graph num_configs x nc,
//                            row-major)                                     [layout]
//     split_offsets       -> node_splits (int64)                            [layout]
// Every dataset is chunked with fletcher32 checksums (plus shuffle + deflate when the
// level is > 0), so a damaged file is detected on read, not trained on.
//
// The feature transform is not in the shards: it is fitted after they are written and
// lives in the manifest (and in the checkpoints trained with it). Schema version 1 also
// held a /feature_transform group that no reader used (tpuperf-preprocess wrote the
// identity there); readers accept version 1 and ignore it, so processed trees written
// before still load.
#pragma once

namespace tpuperf {

// What this build writes; it reads this one and kShardOldestReadableVersion onwards.
constexpr int kShardSchemaVersion = 2;
constexpr int kShardOldestReadableVersion = 1;
// The root attribute created_by of every shard: what tells a shard from another HDF5 file.
constexpr const char* kShardCreatedBy = "tpuperf-preprocess";

}  // namespace tpuperf
