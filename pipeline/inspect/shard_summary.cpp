#include "pipeline/inspect/shard_summary.h"

#include <filesystem>
#include <sstream>

#include "common/graph/collection.h"
#include "common/config/config.h"
#include "common/base/error.h"
#include "common/formats/json.h"
#include "common/shards/manifest.h"
#include "common/shards/shard_reader.h"
#include "pipeline/preprocess/convert.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

std::string fold_text(int fold) {
  if (fold == kFoldValid) return "valid";
  if (fold == kFoldTest) return "test";
  return "fold " + std::to_string(fold);
}

int64_t require_graph(const ShardReader& r, const std::string& name) {
  int64_t i = r.find(name);
  if (i < 0) throw Error("no graph named '" + name + "' in this shard", r.path());
  return i;
}

// Shards live at <processed_dir>/<collection dir>/<split>/<file>.h5.
std::string processed_dir_of(const std::string& shard_path) {
  return fs::absolute(shard_path).parent_path().parent_path().parent_path().string();
}

// --graph shows the first values of each array: per-node arrays, per-config arrays.
constexpr size_t kShownNodeValues = 12;
constexpr size_t kShownConfigValues = 8;

template <typename T>
std::string head(const std::vector<T>& v, size_t n) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < std::min(n, v.size()); ++i) out << (i ? ", " : "") << v[i];
  if (v.size() > n) out << ", ... (" << v.size() << ")";
  return out.str() + "]";
}

}  // namespace

std::string shard_text(const std::string& path) {
  ShardReader r(path);
  std::ostringstream out;
  out << path << ": shard of " << r.collection() << " " << r.split() << ", " << r.num_graphs()
      << " graphs, " << r.num_node_feat() << " node feature columns\n";
  for (int64_t i = 0; i < r.num_graphs(); ++i) {
    const ShardGraphInfo& g = r.info(i);
    out << "  " << g.name << "  " << fold_text(g.fold) << "  nodes " << g.num_nodes << "/" << g.nodes_before
        << "  edges " << g.num_edges << "/" << g.edges_before << "  configs " << g.num_configs << "/"
        << g.configs_before;
    if (!r.is_tile()) out << "  configurable " << g.num_config_nodes;
    out << "\n";
  }
  return out.str();
}

void shard_json(JsonWriter& json, const std::string& path) {
  ShardReader r(path);
  json.begin_object().key("path").value(path).key("type").value("shard");
  json.key("collection").value(r.collection()).key("split").value(r.split());
  json.key("graphs").begin_array();
  for (int64_t i = 0; i < r.num_graphs(); ++i) {
    const ShardGraphInfo& g = r.info(i);
    json.begin_object().key("name").value(g.name).key("fold").value(g.fold);
    json.key("nodes").value(g.num_nodes).key("edges").value(g.num_edges).key("configs").value(g.num_configs);
    json.key("config_nodes").value(g.num_config_nodes).key("nodes_before").value(g.nodes_before);
    json.key("edges_before").value(g.edges_before).key("configs_before").value(g.configs_before);
    json.end_object();
  }
  json.end_array().end_object();
}

std::string shard_graph_text(const std::string& path, const std::string& name) {
  ShardReader r(path);
  ProcessedGraph g = r.read(require_graph(r, name));
  std::ostringstream out;
  out << g.name << " (" << r.collection() << " " << r.split() << ", " << fold_text(g.fold) << ")\n"
      << "  nodes " << g.num_nodes << " (source " << g.nodes_before << "), edges " << g.num_edges()
      << " (source " << g.edges_before << "), configs " << g.num_configs() << " (source " << g.configs_before
      << ")\n"
      << "  node feature columns " << g.num_node_feat << "\n"
      << "  opcodes " << head(std::vector<int>(g.node_opcode.begin(), g.node_opcode.end()), kShownNodeValues) << "\n"
      << "  config_runtime " << head(g.config_runtime, kShownConfigValues) << "\n";
  if (r.is_tile()) {
    out << "  config_runtime_normalizers " << head(g.config_runtime_normalizers, kShownConfigValues) << "\n";
  } else {
    out << "  node_config_ids " << head(g.node_config_ids, kShownNodeValues) << "\n"
        << "  node_splits " << head(g.node_splits, kShownNodeValues) << "\n";
    if (!g.node_config_packed.empty()) {
      int8_t v[18];
      unpack_layout_values(g.node_config_packed[0], v);
      out << "  config 0, node " << g.node_config_ids[0] << " layout " << head(std::vector<int>(v, v + 18), 18)
          << "\n";
    }
  }
  return out.str();
}

std::string compare_with_source(const std::string& shard_path, const std::string& name,
                                const std::string& source_path, bool& identical) {
  ShardReader r(shard_path);
  ProcessedGraph stored = r.read(require_graph(r, name));
  std::string processed = processed_dir_of(shard_path);
  Manifest m = read_manifest(processed + "/" + kManifestFileName);
  Config settings = Config::from_text(m.settings, processed + "/" + kManifestFileName + " (settings)");
  const PreprocessSettings s = PreprocessSettings::saved(settings);
  std::string source = source_path;
  if (source.empty())
    source = Collection::parse(r.collection()).split_dir(s.raw_root, r.split()) + "/" + name + ".npz";
  ProcessedGraph fresh = convert_source(source, r.collection(), r.split(), stored.fold, s);
  fresh.num_node_feat = stored.num_node_feat;
  std::vector<std::string> diff = diff_graphs(stored, fresh);
  identical = diff.empty();
  std::ostringstream out;
  out << name << " in " << shard_path << "\n  recomputed from " << source << " with the manifest's settings\n";
  if (identical) {
    out << "  identical: every field matches\n";
  } else {
    out << "  DIFFERENT fields:";
    for (const auto& f : diff) out << " " << f;
    out << "\n";
  }
  return out.str();
}

}  // namespace tpuperf
