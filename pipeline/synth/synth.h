// tpuperf-synth's library: writes a raw tree in exactly the real TpuGraphs format
//   <out>/npz/tile/xla/{train,valid,test}/<name>.npz
//   <out>/npz/layout/{xla,nlp}/{random,default}/{train,valid,test}/<name>.npz
// plus the hidden test runtimes
//   <out>/truth/tile/xla/test/<name>.npz            (config_runtime, config_runtime_normalizers)
//   <out>/truth/layout/<src>/<search>/test/<name>.npz (config_runtime)
// Test files carry zero runtimes (tile: normalizers one) like the release's.
// The output depends only on the seed and the scale (not on the thread count or the
// collections chosen): every file has its own random stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/collection.h"

namespace tpuperf::synth {

struct ScaleParams {
  int64_t tile_graphs[3] = {0, 0, 0};  // train, valid, test
  int64_t tile_configs_min = 0, tile_configs_max = 0;
  int64_t layout_graphs[3] = {0, 0, 0};  // per collection
  int64_t xla_nodes_min = 0, xla_nodes_max = 0;
  int64_t nlp_nodes_min = 0, nlp_nodes_max = 0;
  int64_t random_configs_min = 0, random_configs_max = 0;    // train/valid, random search
  int64_t default_configs_min = 0, default_configs_max = 0;  // train/valid, default search
  int64_t test_configs = 0;                                  // every layout test file
  int64_t max_config_nodes = 0;
  // Cap on one file's node_config_feat (c x nc x 18 float32) in bytes: bounds nc.
  double max_feat_bytes = 0;
  // Configs of the first nlp random train file (the release's largest holds 100,040).
  int64_t giant_configs = 0;
};

// "tiny" (tests: whole tree in seconds), "small" (the demo), "bench" (real sizes).
ScaleParams scale_params(const std::string& scale);

struct SynthOptions {
  std::string out_dir;
  uint64_t seed = 1;
  std::string scale = "small";
  std::vector<Collection> collections = Collection::all();
  int threads = 1;
};

struct SynthStats {
  int64_t files = 0;  // npz files written, truth files included
  uint64_t bytes = 0;
  double seconds = 0;
};

// Writes the tree; logs one line per collection. Throws Error on any failure.
SynthStats generate_tree(const SynthOptions& options);

// Where a collection's test truth files go: <out>/truth/tile/xla/test, ...
std::string truth_dir(const std::string& out_dir, const Collection& c);

}  // namespace tpuperf::synth
