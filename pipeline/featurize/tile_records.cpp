#include "pipeline/featurize/tile_records.h"

#include <map>

#include <fmt/format.h>

#include "common/base/error.h"
#include "pipeline/featurize/extra_features.h"
#include "pipeline/featurize/hlo_graph.h"
#include "pipeline/featurize/node_features.h"
#include "pipeline/featurize/tuning_records.pb.h"

namespace tpuperf::featurize {

namespace {

namespace pb = tpuperf::records;

constexpr uint32_t kModulesField = 1;  // TuningData.modules
constexpr int kLengthDelimited = 2;

std::string kernel_label(int index, const pb::ModuleTuningData* kernel) {
  if (!kernel || kernel->module().name().empty()) return fmt::format("kernel {}", index);
  return fmt::format("kernel {} ({})", index, kernel->module().name());
}

bool has_tile_config(const pb::ConfigProfile& run) {
  return run.config_case() == pb::ConfigProfile::kOpConfig && run.op_config().has_tile_size_config();
}

// Why upstream would not featurize the kernel at all, or "".
std::string kernel_problem(const pb::ModuleTuningData& kernel) {
  if (kernel.runs_size() <= 1)
    return fmt::format("{} run{}: ranking needs at least 2 (upstream skips such kernels)",
                       kernel.runs_size(), kernel.runs_size() == 1 ? "" : "s");
  if (!kernel.has_module()) return "no module (HloModuleProto) in the record";
  for (int r = 0; r < kernel.runs_size(); ++r)
    if (!has_tile_config(kernel.runs(r)))
      return fmt::format("run {} has no tile_size_config (upstream skips the whole kernel)", r);
  return "";
}

// Why a run without error is not kept, or "".
std::string run_problem(const pb::ConfigProfile& run) {
  if (!run.has_profile()) return "no profile (no runtime measured)";
  if (run.profile().compute_time_ns() <= 1)
    return fmt::format("runtime of {} ns (a kept run needs more than 1 ns)",
                       run.profile().compute_time_ns());
  return "";
}

struct KeptKernel {
  int index = 0;
  std::string record;
  pb::ModuleTuningData kernel;
  std::vector<int> runs;  // kept run indices, record order
  int default_run = -1;   // the first kept run marked is_default
  HloGraph graph;
};

// Why no kept run is the default: the first run marked default and what happened to it.
std::string no_default_reason(const pb::ModuleTuningData& kernel) {
  for (int r = 0; r < kernel.runs_size(); ++r) {
    const auto& run = kernel.runs(r);
    if (!run.is_default()) continue;
    std::string why = run.error() ? "it has an error" : run_problem(run);
    return fmt::format("no default run among the kept runs (run {} is the default, but {})", r, why);
  }
  return "no run is marked is_default (the normalizer is the default's runtime)";
}

class TileFeaturizer {
 public:
  TileFeaturizer(const std::string& prefix, bool extra) : prefix_(prefix), extra_(extra) {}

  void kernel(int index, const uint8_t* payload, size_t size, size_t offset) {
    KeptKernel k;
    k.index = index;
    ++result_.counts.kernels;
    if (!k.kernel.ParseFromArray(payload, static_cast<int>(size))) {
      reject(kernel_label(index, nullptr),
             fmt::format("not a valid ModuleTuningData: protobuf cannot parse its {} bytes at byte "
                         "{} (garbled)",
                         size, offset));
      return;
    }
    k.record = kernel_label(index, &k.kernel);
    result_.counts.runs += k.kernel.runs_size();
    for (const auto& run : k.kernel.runs()) result_.counts.error_runs += run.error() ? 1 : 0;
    if (std::string why = kernel_problem(k.kernel); !why.empty()) return reject(k.record, why);
    keep_runs(k);
    if (k.default_run < 0) return reject(k.record, no_default_reason(k.kernel));
    try {
      k.graph = encode_module(k.kernel.module());
    } catch (const Error& e) {
      return reject(k.record, e.what());
    }
    // Upstream keys the normalizer by module name: with two kept kernels of one name, both
    // get the later one's default runtime.
    normalizer_[k.kernel.module().name()] =
        k.kernel.runs(k.default_run).profile().compute_time_ns();
    kept_.push_back(std::move(k));
  }

  void damage(int index, const TopLevel& top) {
    reject(fmt::format("kernel {} and any after it", index),
           "truncated or garbled record: " + top.damage);
  }

  TileResult finish() {
    for (KeptKernel& k : kept_) {
      try {
        result_.kernels.push_back(build(k));
      } catch (const Error& e) {
        reject(k.record, e.what());
      }
    }
    return std::move(result_);
  }

 private:
  void reject(const std::string& record, const std::string& reason) {
    result_.rejected.push_back({record, reason});
  }

  void keep_runs(KeptKernel& k) {
    for (int r = 0; r < k.kernel.runs_size(); ++r) {
      const auto& run = k.kernel.runs(r);
      if (run.error()) continue;  // failed measurements: dropped, as upstream does
      if (std::string why = run_problem(run); !why.empty()) {
        reject(fmt::format("{} run {}", k.record, r), why);
        continue;
      }
      if (run.is_default() && k.default_run < 0) k.default_run = r;
      k.runs.push_back(r);
    }
  }

  FeaturizedTile build(KeptKernel& k) {
    FeaturizedTile out;
    out.record = k.record;
    TileGraph& g = out.graph;
    g.name = prefix_ + "_" + signed_hex(k.kernel.fingerprint());
    g.num_nodes = k.graph.num_nodes;
    g.node_feat = std::move(k.graph.node_feat);
    g.node_opcode = std::move(k.graph.node_opcode);
    g.edge_index = std::move(k.graph.edge_index);
    int64_t normalizer = normalizer_.at(k.kernel.module().name());
    g.config_feat.resize(k.runs.size() * kTileConfigDim);
    for (size_t j = 0; j < k.runs.size(); ++j) {
      const auto& run = k.kernel.runs(k.runs[j]);
      tile_config_features(run.op_config().tile_size_config(), g.config_feat.data() + j * kTileConfigDim);
      g.config_runtime.push_back(run.profile().compute_time_ns());
      g.config_runtime_normalizers.push_back(normalizer);
    }
    validate(g);  // the rules every reader of the format applies
    if (extra_) out.extra.node_feat_extra = extra_node_features(k.kernel.module());
    return out;
  }

  std::string prefix_;
  bool extra_;
  std::vector<KeptKernel> kept_;
  std::map<std::string, int64_t> normalizer_;
  TileResult result_;
};

}  // namespace

std::string signed_hex(uint64_t fingerprint) {
  int64_t v = static_cast<int64_t>(fingerprint);
  if (v >= 0) return fmt::format("{:x}", fingerprint);
  return fmt::format("-{:x}", ~fingerprint + 1);  // the magnitude, also right for INT64_MIN
}

TileResult featurize_tuning_data(const uint8_t* data, const TopLevel& top, const std::string& prefix,
                                 bool extra_features) {
  TileFeaturizer f(prefix, extra_features);
  int index = 0;
  for (const WireField& field : top.fields) {
    // Other fields are unknown to a TuningData: protobuf would skip them too.
    if (field.number != kModulesField || field.wire_type != kLengthDelimited) continue;
    f.kernel(index++, data + field.payload, field.size, field.offset);
  }
  if (top.damaged) f.damage(index, top);
  return f.finish();
}

}  // namespace tpuperf::featurize
