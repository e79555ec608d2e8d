// What a training run's directory (output.dir) holds for prediction, read without a
// processed tree: the effective training config (train_config.yaml: ensemble method, tile
// keep-default rule, each collection's scoring chunks and configured model for checkpoints
// that record none, as its collections: section sets them), the preprocessing settings its
// graphs were prepared with (preprocess_settings.yaml, written by tpuperf-train: how each
// collection was pruned), what each tile collection's rankings put first (first_pick.json,
// trainer/eval/first_pick.h) and every fold's best checkpoint per collection. Files of older
// versions load: their keys that the collections: section replaced are read as entries of
// it (Config::from_text).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/config/config.h"
#include "common/graph/prune_rules.h"
#include "trainer/eval/ensemble.h"
#include "trainer/eval/first_pick.h"
#include "trainer/eval/submission.h"
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
  double tile_ensemble_spread = 0;  // output.tile_ensemble_spread
  // The run's first-pick decisions (first_pick.json); without the file (a run of an older
  // version or one that did not finish) output.tile_first_pick: default still puts config
  // 0 first, auto and model keep the model's first pick.
  std::map<std::string, FirstPick> first_picks;

  // Where the run's rankings of the collection's graphs put config 0 (tile only).
  TileDefault tile_default(const std::string& collection) const;

  // Configs a collection's models score in one forward pass.
  int64_t chunk(const std::string& collection) const;
  // The model the config asked for a collection (for checkpoints written before specs were
  // recorded).
  ModelSpec configured_model(const std::string& collection) const;
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
