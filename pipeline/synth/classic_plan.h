// The classic scales: tiny (tests), small (the demo), bench (the release's per-file sizes,
// few graphs). Each is a few ranges (ScaleParams) from which every graph's size is drawn
// log-uniformly; names and families as the release's (models.h).
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/synth/plan.h"

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
  // Layout random-search files measured by a converged autotuner (converged_search.h):
  // the graph of this index in every split (-1: none).
  int64_t converged_index = -1;
};

bool is_classic_scale(const std::string& scale);

// "tiny" (tests: whole tree in seconds), "small" (the demo), "bench" (real sizes).
// Throws Error for any other name.
ScaleParams scale_params(const std::string& scale);

// The graphs of one collection. The random and default collections of a source share
// their graphs (the release's two searches ran over largely the same models).
CollectionPlan plan_classic(const ScaleParams& sp, const Collection& c, uint64_t seed);

}  // namespace tpuperf::synth
