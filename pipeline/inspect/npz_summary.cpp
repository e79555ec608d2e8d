#include "pipeline/inspect/npz_summary.h"

#include <algorithm>
#include <sstream>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/formats/json.h"
#include "common/formats/npz_reader.h"

namespace tpuperf {

namespace {

int64_t dim(const NpzSummary& s, const std::string& key, size_t axis) {
  for (const auto& k : s.keys)
    if (k.name == key && axis < k.shape.size()) return k.shape[axis];
  return 0;
}

bool has_key(const NpzSummary& s, const std::string& key) {
  return std::any_of(s.keys.begin(), s.keys.end(), [&](const NpzKeyInfo& k) { return k.name == key; });
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

void fill_graph_summary(NpzReader& npz, NpzSummary& s) {
  if (!has_key(s, "node_feat") || !has_key(s, "config_runtime")) return;
  GraphSummary& g = s.graph;
  g.kind = has_key(s, "node_config_feat") ? "layout" : "tile";
  g.nodes = dim(s, "node_feat", 0);
  g.edges = dim(s, "edge_index", 0);
  g.configs = dim(s, "config_runtime", 0);
  g.config_nodes = dim(s, "node_config_ids", 0);
  std::vector<int64_t> rt = npz.read("config_runtime").to_int64();
  if (!rt.empty()) {
    auto [lo, hi] = std::minmax_element(rt.begin(), rt.end());
    g.runtime_min = *lo;
    g.runtime_max = *hi;
  }
}

}  // namespace

NpzSummary summarize_npz(const std::string& path, bool validate) {
  NpzSummary s;
  s.path = path;
  NpzReader npz(path);
  s.file_size = npz.file_size();
  for (const auto& key : npz.keys()) {
    NpyHeader h = npz.header(key);
    s.keys.push_back({key, h.descr(), h.shape});  // as numpy names it, byte order included
  }
  fill_graph_summary(npz, s);
  if (validate && !s.graph.kind.empty()) {
    if (s.graph.kind == "tile")
      load_tile_graph(path);
    else
      load_layout_graph(path);
    s.graph.validated = true;
  }
  return s;
}

std::string summary_text(const NpzSummary& s) {
  std::ostringstream out;
  out << s.path << " (" << s.file_size << " bytes)\n";
  for (const auto& k : s.keys) out << "  " << k.name << "  " << k.dtype << "  " << shape_text(k.shape) << "\n";
  const GraphSummary& g = s.graph;
  if (!g.kind.empty()) {
    out << "  " << g.kind << " graph: " << g.nodes << " nodes, " << g.edges << " edges, " << g.configs
        << " configs";
    if (g.kind == "layout") out << ", " << g.config_nodes << " configurable nodes";
    out << ", runtime " << g.runtime_min << ".." << g.runtime_max << " ns";
    if (g.validated) out << ", valid";
    out << "\n";
  }
  return out.str();
}

void summary_json(JsonWriter& json, const NpzSummary& s) {
  json.begin_object().key("path").value(s.path).key("type").value("npz");
  json.key("file_size").value(static_cast<int64_t>(s.file_size));
  json.key("keys").begin_object();
  for (const auto& k : s.keys) {
    json.key(k.name).begin_object().key("dtype").value(k.dtype).key("shape").array(k.shape);
    json.end_object();
  }
  json.end_object();
  const GraphSummary& g = s.graph;
  if (!g.kind.empty()) {
    json.key("summary").begin_object().key("kind").value(g.kind).key("nodes").value(g.nodes);
    json.key("edges").value(g.edges).key("configs").value(g.configs);
    json.key("config_nodes").value(g.config_nodes).key("runtime_min").value(g.runtime_min);
    json.key("runtime_max").value(g.runtime_max).key("validated").value(g.validated);
    json.end_object();
  }
  json.end_object();
}

}  // namespace tpuperf
