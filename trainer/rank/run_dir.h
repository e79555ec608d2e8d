// What a training run's directory (output.dir) holds for prediction, read without a
// processed tree: the effective training config (train_config.yaml: ensemble method, tile
// keep-default rule, scoring chunks, the configured model for checkpoints that record
// none), the preprocessing settings its graphs were prepared with
// (preprocess_settings.yaml, written by tpuperf-train: how each collection was pruned) and every fold's best
// checkpoint per collection.
#pragma once

#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/config/config.h"
#include "common/graph/prune_rules.h"
#include "trainer/eval/ensemble.h"
#include "trainer/models/model_spec.h"

namespace tpuperf {

constexpr const char* kTrainConfigFile = "train_config.yaml";
constexpr const char* kPreprocessSettingsFile = "preprocess_settings.yaml";

struct RunDir {
  std::string dir;
  Config config;        // train_config.yaml
  PruneRules prune;  // how the data trained on was pruned, per collection
  EnsembleMethod ensemble = EnsembleMethod::MeanZ;
  bool tile_keep_default = true;

  int64_t chunk(Kind kind) const;
  // The configured model of a collection (for checkpoints written before specs were recorded).
  // Its dropout is the kind's: ranking runs the models in evaluation mode, where it does nothing.
  ModelSpec configured_model(Kind kind) const;
  // Best checkpoints of fold 0, 1, ... of the collection. Throws Error naming the run
  // directory and what is missing.
  std::vector<std::string> fold_checkpoints(const std::string& collection) const;
  // Collections with at least one fold's best checkpoint, in id order.
  std::vector<std::string> collections() const;
};

// Throws Error naming the file when the directory lacks train_config.yaml or it does not
// parse. Without preprocess_settings.yaml (runs of older versions) the train config's
// preprocess.prune_* keys are used, with a warning.
RunDir open_run_dir(const std::string& dir);

}  // namespace tpuperf
