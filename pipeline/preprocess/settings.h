// The preprocess.* and data.* settings, read from the config in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/graph/config_dedup.h"
#include "common/graph/prune_rules.h"
#include "pipeline/preprocess/features.h"
#include "pipeline/preprocess/folds.h"

namespace tpuperf {

struct PreprocessSettings {
  std::string raw_root, out_dir;
  std::vector<std::string> collections;
  PruneRules prune;
  DedupPolicy dedup = DedupPolicy::Min;
  int folds = 5;
  FoldBy fold_by = FoldBy::Auto;
  uint64_t seed = 0;
  int64_t shard_bytes = 0;
  int deflate = 4;
  FitOptions fit;

  explicit PreprocessSettings(const Config& cfg);
  // The settings a manifest recorded (PruneRules::saved: keys it predates read as the
  // data was made without them).
  static PreprocessSettings saved(const Config& cfg);
};

}  // namespace tpuperf
