#include "pipeline/featurize/layout_records.h"

#include <limits>

#include <fmt/format.h>

#include "common/base/error.h"
#include "pipeline/featurize/extra_features.h"
#include "pipeline/featurize/hlo_graph.h"
#include "pipeline/featurize/tuning_records.pb.h"

namespace tpuperf::featurize {

namespace {

namespace pb = tpuperf::records;

constexpr int kTensorsPerNode = 3;  // output, input, kernel
constexpr int kDimsPerTensor = kLayoutConfigDim / kTensorsPerNode;
// tpuperf's format (and its base-7 packing) holds layout values -1..5: -1 for "none",
// 0..5 a dimension of a tensor of rank <= 6.
constexpr int kMinLayoutValue = -1, kMaxLayoutValue = 5;

// The module's name from the record's module field when it can be read, for messages
// about a record that cannot be parsed as a whole.
std::string module_label(const uint8_t* data, const TopLevel& top) {
  for (const WireField& f : top.fields) {
    pb::HloModuleProto module;
    if (f.number == 1 && f.wire_type == 2 && module.ParseFromArray(data + f.payload, static_cast<int>(f.size)) &&
        !module.name().empty())
      return "module " + module.name();
  }
  return "-";
}

// A kept run's layout config as rows of 18 values (-1 padded), or the reason it does not
// fit the module. Values are appended to `out` only when the whole run fits.
std::string layout_rows(const pb::ConfigProfile& run, int nc, std::vector<int8_t>& out) {
  if (!run.module_config().has_layout_config()) return "module_config without a layout_config";
  const auto& nodes = run.module_config().layout_config().nodes();
  if (nodes.size() != nc)
    return fmt::format("layout config for {} nodes, but config_index_to_node names {}", nodes.size(), nc);
  std::vector<int8_t> rows(static_cast<size_t>(nc) * kLayoutConfigDim, -1);
  for (int k = 0; k < nc; ++k) {
    const auto& tensors = nodes[k].tensors();
    if (tensors.size() > kTensorsPerNode)
      return fmt::format("config node {} has {} tensor layouts (at most 3: output, input, kernel)", k,
                         tensors.size());
    for (int t = 0; t < tensors.size(); ++t) {
      const auto& dims = tensors[t].dims();
      for (int d = 0; d < dims.size() && d < kDimsPerTensor; ++d) {
        int32_t v = dims[d];
        if (v < kMinLayoutValue || v > kMaxLayoutValue)
          return fmt::format("config node {} tensor {} holds layout value {}, outside {}..{}", k, t, v,
                             kMinLayoutValue, kMaxLayoutValue);
        rows[static_cast<size_t>(k) * kLayoutConfigDim + t * kDimsPerTensor + d] = static_cast<int8_t>(v);
      }
    }
  }
  out.insert(out.end(), rows.begin(), rows.end());
  return "";
}

// Why a run without error is not kept, or "" (its rows then appended to `rows`).
std::string keep_run(const pb::ConfigProfile& run, int nc, std::vector<int8_t>& rows) {
  if (run.config_case() != pb::ConfigProfile::kModuleConfig)
    return "no layout config (module_config) in the run";
  if (!run.has_profile()) return "no profile (no runtime measured)";
  if (run.profile().compute_time_ns() <= 0)
    return fmt::format("runtime of {} ns (a kept run needs a positive one)", run.profile().compute_time_ns());
  return layout_rows(run, nc, rows);
}

// Why no kept run is the default.
std::string no_default_reason(const pb::ModuleTuningData& m, const std::vector<std::string>& why_not_kept) {
  for (int r = 0; r < m.runs_size(); ++r) {
    if (!m.runs(r).is_default()) continue;
    return fmt::format("no default run among the kept runs (run {} is the default, but {})", r,
                       m.runs(r).error() ? "it has an error" : why_not_kept[r]);
  }
  return "no run is marked is_default (upstream keeps no config of such a module)";
}

class LayoutFeaturizer {
 public:
  LayoutFeaturizer(const std::string& name, bool extra) : name_(name), extra_(extra) {}

  LayoutResult run(const uint8_t* data, size_t size, const TopLevel& top) {
    if (top.damaged) return reject(module_label(data, top), "truncated or garbled record: " + top.damage);
    if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
      return reject(module_label(data, top),
                    fmt::format("{} bytes: protobuf parses messages of at most 2 GiB", size));
    pb::ModuleTuningData m;
    if (!m.ParseFromArray(data, static_cast<int>(size)))
      return reject(module_label(data, top),
                    "not a valid ModuleTuningData: protobuf cannot parse it (garbled)");
    record_ = m.module().name().empty() ? "module (unnamed)" : "module " + m.module().name();
    result_.counts.kernels = 1;
    result_.counts.runs = m.runs_size();
    for (const auto& run : m.runs()) result_.counts.error_runs += run.error() ? 1 : 0;
    if (!m.has_module()) return reject(record_, "no module (HloModuleProto) in the record");
    if (m.config_index_to_node_size() == 0)
      return reject(record_, "config_index_to_node is empty: the module has no configurable node");
    HloGraph graph;
    try {
      graph = encode_module(m.module());
    } catch (const Error& e) {
      return reject(record_, e.what());
    }
    for (int i = 0; i < m.config_index_to_node_size(); ++i) {
      uint64_t node = m.config_index_to_node(i);
      if (node >= static_cast<uint64_t>(graph.num_nodes))
        return reject(record_, fmt::format("config_index_to_node[{}] = {} names no node: the module has {}",
                                           i, node, graph.num_nodes));
    }
    LayoutGraph g;
    if (!keep_runs(m, g)) return std::move(result_);
    try {
      build(m, std::move(graph), g);
    } catch (const Error& e) {
      return reject(record_, e.what());
    }
    return std::move(result_);
  }

 private:
  void note(const std::string& record, const std::string& reason) {
    result_.rejected.push_back({record, reason});
  }
  LayoutResult reject(const std::string& record, const std::string& reason) {
    note(record, reason);
    return std::move(result_);
  }

  // Fills g's configs and runtimes; false (and the module rejected) without a kept default.
  bool keep_runs(const pb::ModuleTuningData& m, LayoutGraph& g) {
    int nc = m.config_index_to_node_size();
    std::vector<std::string> why_not(m.runs_size());
    bool has_default = false;
    for (int r = 0; r < m.runs_size(); ++r) {
      const auto& run = m.runs(r);
      if (run.error()) continue;  // failed measurements: dropped, as upstream does
      why_not[r] = keep_run(run, nc, g.node_config_feat);
      if (!why_not[r].empty()) {
        note(fmt::format("{} run {}", record_, r), why_not[r]);
        continue;
      }
      g.config_runtime.push_back(run.profile().compute_time_ns());
      has_default = has_default || run.is_default();
    }
    if (!has_default) note(record_, no_default_reason(m, why_not));
    return has_default;
  }

  void build(const pb::ModuleTuningData& m, HloGraph graph, LayoutGraph& g) {
    g.name = name_;
    g.num_nodes = graph.num_nodes;
    g.node_feat = std::move(graph.node_feat);
    g.node_opcode = std::move(graph.node_opcode);
    g.edge_index = std::move(graph.edge_index);
    g.node_splits = std::move(graph.node_splits);
    g.node_config_ids.assign(m.config_index_to_node().begin(), m.config_index_to_node().end());
    validate(g);  // the rules every reader of the format applies (e.g. no node configured twice)
    FeaturizedLayout out;
    out.record = record_;
    out.graph = std::move(g);
    if (extra_) out.extra.node_feat_extra = extra_node_features(m.module());
    result_.module = std::move(out);
  }

  std::string name_;
  bool extra_;
  std::string record_ = "-";
  LayoutResult result_;
};

}  // namespace

LayoutResult featurize_module_tuning_data(const uint8_t* data, size_t size, const TopLevel& top,
                                          const std::string& name, bool extra_features) {
  return LayoutFeaturizer(name, extra_features).run(data, size, top);
}

}  // namespace tpuperf::featurize
