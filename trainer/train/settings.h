// The train.*, model.* and output.* settings a training run reads, in one place, and
// where a run's files live below output.dir. A collection's folds read its own
// (TrainSettings::of): the config's collections: section may give it its own train.* and
// model.* values (common/config/config.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/config/config.h"
#include "trainer/losses/registry.h"
#include "trainer/models/model_spec.h"

namespace tpuperf {

// The constructor reads every member from the config: the schema (common/config/config_schema.cpp)
// holds the defaults, and the members are only zero-initialized here so that no second copy
// of a default can drift from it.
struct TrainSettings {
  std::string processed_dir, output_dir;
  std::vector<std::string> collections;
  int64_t epochs{}, graphs_per_step{};
  int64_t fixed_steps_per_epoch{};  // train.steps_per_epoch; 0: one pass, with a floor
  int64_t min_steps_per_epoch{};  // the floor on an epoch that is one pass over the train graphs
  // Caps a floor at about this many passes over the fold's train configs (0: no cap), so
  // that a few small graphs are not repeated hundreds of times an epoch. A step counts as
  // graphs_per_step full slates.
  double max_config_passes_per_epoch{};
  // A fold of one train graph (a graph tuned on its own configs) raises its floor to about
  // this many passes over its train configs (0: off).
  double single_graph_min_config_passes_per_epoch{};
  // Caps the floors so that a rank's epoch processes at most about this many node-configs
  // (0: no cap).
  double max_node_configs_per_epoch{};
  int64_t tile_slate{}, layout_slate{}, eval_max_configs{};
  int64_t eval_every{};  // score oof/valid after every eval_every-th epoch and the last
  int64_t tile_eval_chunk{}, layout_eval_chunk{};
  double lr{}, weight_decay{}, warmup_fraction{}, grad_clip{};
  double ema_decay{};  // 0: no weight averaging (weight_average.h)
  double stall_timeout_s{};
  double config_cache_mb{};  // the train set's layout config rows kept inflated
  LossOptions tile_loss, layout_loss;
  uint64_t seed{};
  ModelSpec tile_model, layout_model;  // the kinds' configured models (num_node_feat 0: the data's)
  std::string ensemble;
  bool tile_keep_default{};  // output.tile_keep_default, see tile_top_k
  double tile_ensemble_spread{};  // output.tile_ensemble_spread, see ensemble_graph
  std::string tile_first_pick;    // output.tile_first_pick, see choose_first_pick

  // Throws Error naming the key of an invalid setting (unknown loss or model, heads that
  // do not divide the width, unset directories), in a collection's section too
  // ("collections.<id>.<key>").
  explicit TrainSettings(const Config& cfg);
  // The settings of a collection's folds: every member as the collection's config reads it
  // (Config::for_collection). Throws Error on an unknown collection.
  const TrainSettings& of(const std::string& collection) const;
  int64_t slate(Kind kind) const { return kind == Kind::Tile ? tile_slate : layout_slate; }
  // Whether the oof and valid graphs are scored after `epoch` (0-based).
  bool evaluates_after(int64_t epoch) const { return (epoch + 1) % eval_every == 0 || epoch + 1 == epochs; }
  int64_t eval_chunk(Kind kind) const { return kind == Kind::Tile ? tile_eval_chunk : layout_eval_chunk; }
  const LossOptions& loss(Kind kind) const { return kind == Kind::Tile ? tile_loss : layout_loss; }
  // The collection's steps per epoch, or, when that is 0, one pass over the train graphs
  // (`pass_steps`) with the collection's floor, raised to
  // single_graph_min_config_passes_per_epoch passes over the fold's `train_configs` when it
  // has one `train_graphs`, then capped at max_config_passes_per_epoch
  // passes (train_configs 0: unknown, neither). No defaults: a caller that forgot the counts
  // would silently train another budget.
  int64_t steps_per_epoch(const std::string& collection, int64_t pass_steps, int64_t train_configs,
                          int64_t train_graphs) const;
  // steps_per_epoch's plan, then its floor capped by cost: at most about
  // max_node_configs_per_epoch / `rank_node_configs_per_step` steps (what one step costs a
  // rank: its share of the step's graphs' nodes times their slates), never below
  // `pass_steps` nor 1. A set train.steps_per_epoch is kept as it is.
  int64_t steps_per_epoch_by_cost(const std::string& collection, int64_t pass_steps, int64_t train_configs,
                                  int64_t train_graphs, double rank_node_configs_per_step) const;
  // The weight averaging decay of a collection's folds.
  double ema_decay_of(const std::string& collection) const;
  // The key that set ema_decay_of(collection) (train.ema_decay or the collection's section
  // entry), for errors that name it.
  std::string ema_decay_key_of(const std::string& collection) const;
  // The model the config asks a collection's folds for, for data with this many node
  // feature columns: its kind's model.<kind>.* as the collection's config reads them.
  ModelSpec model_spec(const std::string& collection, int64_t num_node_feat) const;
  // The kind's model as the top-level keys describe it, without any collection's section.
  ModelSpec kind_model_spec(Kind kind, int64_t num_node_feat) const;

 private:
  struct OneCollection {};
  TrainSettings(const Config& own, OneCollection);
  std::string collection_id;  // the collection whose settings these are; "" for the top level's
  std::string ema_decay_key;  // where ema_decay came from
  std::map<std::string, std::shared_ptr<const TrainSettings>> collections_;  // of()
};

// Where a fold's files live below output.dir.
std::string checkpoint_path(const TrainSettings& s, const std::string& collection, int fold,
                            const std::string& which);  // "best" or "last"
std::string fold_metrics_path(const TrainSettings& s, const std::string& collection, int fold);

}  // namespace tpuperf
