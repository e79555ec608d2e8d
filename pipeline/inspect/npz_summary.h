// What tpuperf-inspect reports for one .npz: every member's dtype and shape, and for a
// TpuGraphs file a one-line graph summary. Only headers and config_runtime are read, so
// inspecting a 1 GB layout file is instant; --validate loads and checks the whole graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

class JsonWriter;

struct NpzKeyInfo {
  std::string name;
  std::string dtype;  // numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;
};

struct GraphSummary {
  std::string kind;  // "tile", "layout" or "" when the file is not a TpuGraphs graph
  int64_t nodes = 0, edges = 0, configs = 0, config_nodes = 0;
  int64_t runtime_min = 0, runtime_max = 0;
  bool validated = false;  // true when --validate loaded and checked the whole graph
};

struct NpzSummary {
  std::string path;
  uint64_t file_size = 0;
  std::vector<NpzKeyInfo> keys;
  GraphSummary graph;
};

NpzSummary summarize_npz(const std::string& path, bool validate);
std::string summary_text(const NpzSummary& s);
void summary_json(JsonWriter& json, const NpzSummary& s);

}  // namespace tpuperf
