// What tpuperf-inspect reports for an HDF5 shard written by tpuperf-preprocess: its
// collection, split and graphs; one graph in detail; and a comparison of a stored graph
// with its source file, recomputed with the settings recorded in the manifest.
#pragma once

#include <string>

namespace tpuperf {

class JsonWriter;

// The shard's graphs, one line each (name, fold, nodes, edges, configs and what
// dedup/pruning removed).
std::string shard_text(const std::string& path);
void shard_json(JsonWriter& json, const std::string& path);

// One graph of the shard: counts, node splits, first runtimes, config node ids.
std::string shard_graph_text(const std::string& path, const std::string& name);

// Recomputes the graph from its source (source_path, or the file the manifest's
// data.raw_dir points at when empty) and compares every field. Returns a report; sets
// `identical`.
std::string compare_with_source(const std::string& shard_path, const std::string& name,
                                const std::string& source_path, bool& identical);

}  // namespace tpuperf
