// The manifest of a processed_dir: which shards exist, which graph is where, which source
// files produced them (so that a rerun can skip unchanged work) and which were rejected.
// tpuperf-preprocess writes it last, atomically: a processed_dir with a manifest is
// complete, and every file the manifest names is there with the recorded size and hash.
//
// Format: YAML, written in its JSON-compatible flow subset: the file is plain JSON and
// reads the same with any YAML (PyYAML's safe_load) or JSON parser (json.load, jq; much
// faster in Python). tpuperf writes and reads it with common/formats/json.h, whose escaping keeps
// it valid for both: yaml-cpp took ~2 s each way for the real dataset's 8000 graphs and
// 8000 sources, these take ~0.2 s. One record per line keeps it readable and greppable:
//   {
//    "schema_version": 1,
//    "created": "2024-05-01T12:00:00Z",
//    "settings_digest": "3f2a...",
//    "settings": "...",          // the preprocess config dump, as text
//    "collections": ["tile:xla", "layout:nlp:random"],
//    "feature_transforms": {     // per collection, fitted on its train split
//     "tile:xla": {"kept_columns": [...], "log1p": [...], "mean": [...], "stddev": [...]}
//    },
//    "feature_files": {"tile:xla": "tile_xla/features-g1.h5"},
//    "shards": [
//     {"file": "tile_xla/train-00000.h5", "collection": "tile:xla", "split": "train",
//      "rank": 0, "index": 0, "size": 1234, "hash": "0123456789abcdef", "num_graphs": 10}
//    ],
//    "graphs": [
//     {"collection": "tile:xla", "split": "train", "name": "...", "shard": "tile_xla/...",
//      "index": 3, "fold": 0, "num_nodes": 37, "num_edges": 60, "num_configs": 900,
//      "configs_before": 1000, "nodes_before": 37, "edges_before": 60}
//    ],
//    "sources": [
//     {"file": "tile/xla/train/x.npz", "collection": "tile:xla", "split": "train",
//      "size": 5678, "mtime_ns": 1700000000000000000, "hash": "...", "status": "ok",
//      "reason": ""}
//    ],
//    "rejected": [{"file": "layout/xla/random/train/y.npz", "key": "node_feat", "reason": "..."}]
//   }
// Doubles are written as the shortest text that reads back bit for bit, always with a
// '.' so that YAML 1.1 reads them as floats too ("1.0e-300", not "1e-300").
// Paths are relative to the processed_dir (shards) or to the raw root (sources).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/graph/feature_transform.h"
#include "common/graph/processed_graph.h"

namespace tpuperf {

constexpr int kManifestSchemaVersion = 1;
constexpr const char* kManifestFileName = "manifest.yaml";
constexpr const char* kSourceOk = "ok";
constexpr const char* kSourceRejected = "rejected";

struct ManifestShard {
  std::string file;  // relative to the processed_dir
  std::string collection, split;
  int rank = 0;   // MPI rank that wrote it
  int index = 0;  // the shard's number among that rank's shards of this collection/split
  int64_t size_bytes = 0;
  std::string hash;  // hash_file() of the shard
  int64_t num_graphs = 0;
};

struct ManifestGraph {
  std::string collection, split, name;
  std::string shard;  // ManifestShard::file
  int64_t index = 0;  // position inside the shard
  int fold = kFoldTest;
  int64_t num_nodes = 0, num_edges = 0, num_configs = 0;
  int64_t configs_before = 0, nodes_before = 0, edges_before = 0;  // before dedup/pruning
};

struct ManifestSource {
  std::string file;  // relative to the raw root
  std::string collection, split;
  int64_t size_bytes = 0;
  int64_t mtime_ns = 0;
  std::string hash;                 // hash_file() of the source
  std::string status = kSourceOk;   // kSourceOk or kSourceRejected
  std::string reason;               // why it was rejected; empty when ok
  bool ok() const { return status == kSourceOk; }
};

struct ManifestRejected {
  std::string file, key, reason;
};

struct Manifest {
  int schema_version = kManifestSchemaVersion;
  std::string created;  // ISO 8601 UTC, see utc_now_iso8601()
  std::string settings_digest;
  std::string settings;  // the preprocess config dump
  std::vector<std::string> collections;
  std::map<std::string, FeatureTransform> feature_transforms;  // by collection id
  // By collection id: the file holding the train statistics the transform was fitted on,
  // relative to the processed_dir.
  std::map<std::string, std::string> feature_files;
  std::vector<ManifestShard> shards;
  std::vector<ManifestGraph> graphs;
  std::vector<ManifestSource> sources;
  std::vector<ManifestRejected> rejected;

  // nullptr when absent. Linear scans: callers looking up many build their own index.
  const ManifestGraph* find_graph(const std::string& collection, const std::string& name) const;
  const ManifestShard* find_shard(const std::string& file) const;
  const ManifestSource* find_source(const std::string& file) const;
  const FeatureTransform* find_transform(const std::string& collection) const;
  // The graphs of one collection and split (split empty = all splits), in manifest order.
  std::vector<const ManifestGraph*> graphs_of(const std::string& collection,
                                              const std::string& split = "") const;
};

std::string manifest_to_yaml(const Manifest& m);
// path only names the source in errors.
// Reads the JSON subset manifest_to_yaml writes (a hand-edited block-style YAML file is
// refused with the line and column).
Manifest manifest_from_yaml(const std::string& text, const std::string& path);

// Writes atomically (write_file_atomic).
void write_manifest(const std::string& path, const Manifest& m);
// Throws Error naming the file and, for a missing or malformed field, its location
// (e.g. key 'graphs[12].num_nodes'); also on another schema_version.
Manifest read_manifest(const std::string& path);

// e.g. "2024-05-01T12:00:00Z".
std::string utc_now_iso8601();

}  // namespace tpuperf
