// What featurizing one tuning record yields: release-format graphs (common/graph/graph.h records,
// checked by common's validate() like any file tpuperf reads) and the parts of the record
// that were rejected, each with the record it belongs to and the reason.
#pragma once

#include <string>
#include <vector>

#include "common/graph/graph.h"

namespace tpuperf::featurize {

// record: "kernel 3 (fusion.209)", "kernel 1 (fusion.191) run 575", "module main__.10904",
// or "-" when the damage comes before any record could be named.
struct Rejection {
  std::string record;
  std::string reason;
};

// Opt-in columns beside the release's 140 (--extra-features); empty when not asked for.
struct ExtraFeatures {
  std::vector<float> node_feat_extra;  // num_nodes x kExtraNodeFeatDim
};

struct FeaturizedTile {
  std::string record;  // the kernel, for messages
  TileGraph graph;     // graph.name: the output file's stem
  ExtraFeatures extra;
};

struct FeaturizedLayout {
  std::string record;
  LayoutGraph graph;
  ExtraFeatures extra;
};

// Counts for the per-file log line.
struct RecordCounts {
  int kernels = 0;     // tile: ModuleTuningData entries seen; layout: 1
  int runs = 0;        // runs seen
  int error_runs = 0;  // runs with error set: dropped as upstream does, not rejections
};

}  // namespace tpuperf::featurize
