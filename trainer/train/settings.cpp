#include "trainer/train/settings.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/base/error.h"
#include "common/graph/collection.h"
#include "trainer/models/registry.h"

namespace tpuperf {

// A function-try-block: the member initializers read keys too. Errors name the key as
// the config sets it (a collection's section entry, for a collection's settings) and
// where its value came from (the config file or --set).
TrainSettings::TrainSettings(const Config& cfg, OneCollection) try
    : processed_dir(cfg.get_path("data.processed_dir")),
      output_dir(cfg.get_path("output.dir")),
      collections(cfg.get_list("data.collections")),
      epochs(cfg.get_int("train.epochs")),
      graphs_per_step(cfg.get_int("train.graphs_per_step")),
      fixed_steps_per_epoch(cfg.get_int("train.steps_per_epoch")),
      min_steps_per_epoch(cfg.get_int("train.min_steps_per_epoch")),
      max_config_passes_per_epoch(cfg.get_float("train.max_config_passes_per_epoch")),
      single_graph_min_config_passes_per_epoch(cfg.get_float("train.single_graph_min_config_passes_per_epoch")),
      max_node_configs_per_epoch(cfg.get_float("train.max_node_configs_per_epoch")),
      tile_slate(cfg.get_int("train.tile_slate")),
      layout_slate(cfg.get_int("train.layout_slate")),
      eval_max_configs(cfg.get_int("train.eval_max_configs")),
      eval_every(cfg.get_int("train.eval_every")),
      tile_eval_chunk(cfg.get_int("train.tile_eval_chunk")),
      layout_eval_chunk(cfg.get_int("train.layout_eval_chunk")),
      lr(cfg.get_float("train.lr")),
      weight_decay(cfg.get_float("train.weight_decay")),
      warmup_fraction(cfg.get_float("train.warmup_fraction")),
      grad_clip(cfg.get_float("train.grad_clip")),
      ema_decay(cfg.get_float("train.ema_decay")),
      stall_timeout_s(cfg.get_float("train.stall_timeout_s")),
      config_cache_mb(cfg.get_float("train.config_cache_mb")),
      seed(static_cast<uint64_t>(cfg.get_int("train.seed"))),
      tile_model(configured_model_spec(cfg, Kind::Tile)),
      layout_model(configured_model_spec(cfg, Kind::Layout)),
      ensemble(cfg.get_string("output.ensemble")),
      tile_keep_default(cfg.get_bool("output.tile_keep_default")),
      tile_ensemble_spread(cfg.get_float("output.tile_ensemble_spread")),
      tile_first_pick(cfg.get_string("output.tile_first_pick")),
      collection_id(cfg.collection()),
      ema_decay_key(cfg.key_path("train.ema_decay")) {
  tile_loss = configured_loss(cfg, "train.tile_loss");
  layout_loss = configured_loss(cfg, "train.layout_loss");
  // Building each model once checks its name and options, naming the key, before any work.
  for (Kind kind : {Kind::Tile, Kind::Layout}) make_model(kind_model_spec(kind, 1));
  if (processed_dir.empty()) throw Error("is not set", "", "data.processed_dir");
  if (output_dir.empty()) throw Error("is not set", "", "output.dir");
} catch (const Error& e) {
  throw cfg.located(e);
}

TrainSettings::TrainSettings(const Config& cfg) : TrainSettings(cfg, OneCollection{}) {
  // Every collection's, not only data.collections': a run's config also serves tools that
  // rank other collections' graphs, and a bad section entry should fail before training.
  for (const Collection& c : Collection::all())
    collections_[c.id()].reset(new TrainSettings(cfg.for_collection(c.id()), OneCollection{}));  // private: no make_shared
}

const TrainSettings& TrainSettings::of(const std::string& collection) const {
  const std::string id = Collection::parse(collection).id();
  if (id == collection_id) return *this;
  const auto own = collections_.find(id);
  if (own == collections_.end())
    throw Error("program asked for " + id + "'s settings from " + collection_id + "'s");
  return *own->second;
}

double TrainSettings::ema_decay_of(const std::string& collection) const { return of(collection).ema_decay; }

std::string TrainSettings::ema_decay_key_of(const std::string& collection) const {
  return of(collection).ema_decay_key;
}

int64_t TrainSettings::steps_per_epoch(const std::string& collection, int64_t pass_steps, int64_t train_configs,
                                       int64_t train_graphs) const {
  const TrainSettings& own = of(collection);
  if (own.fixed_steps_per_epoch > 0) return own.fixed_steps_per_epoch;
  const Kind kind = Collection::parse(collection).kind;
  int64_t floor = own.min_steps_per_epoch;
  const double per_step = static_cast<double>(own.graphs_per_step * own.slate(kind));
  const auto steps_for = [&](double passes) {
    return static_cast<int64_t>(std::ceil(passes * static_cast<double>(train_configs) / per_step));
  };
  // The floors came from folds of many graphs, where more steps stopped helping; one graph
  // of 2,000 configs at a floor of 20 steps sees each config 13 times in 10 epochs, and
  // ranked its held-out configs better with about 3x that (docs/experiments E12, E15).
  // Only a lone graph: the bench tree's folds of 6-7 graphs with 10^4-10^5
  // configs would train thousands of steps an epoch.
  if (own.single_graph_min_config_passes_per_epoch > 0 && train_configs > 0 && train_graphs == 1)
    floor = std::max(floor, steps_for(own.single_graph_min_config_passes_per_epoch));
  // The cap: the floors were chosen for folds of many graphs with thousands of configs; one
  // graph of 64 configs at a floor of 20 sees each config 400 times in 10 epochs, and ranked
  // its held-out configs worse than at 120 (docs/experiments E6).
  if (own.max_config_passes_per_epoch > 0 && train_configs > 0)
    floor = std::min(floor, steps_for(own.max_config_passes_per_epoch));  // >= 1: passes and configs are positive
  return std::max(pass_steps, floor);
}

int64_t TrainSettings::steps_per_epoch_by_cost(const std::string& collection, int64_t pass_steps,
                                               int64_t train_configs, int64_t train_graphs,
                                               double rank_node_configs_per_step) const {
  const TrainSettings& own = of(collection);
  const int64_t steps = steps_per_epoch(collection, pass_steps, train_configs, train_graphs);
  if (own.fixed_steps_per_epoch > 0 || own.max_node_configs_per_epoch <= 0 || rank_node_configs_per_step <= 0)
    return steps;
  const double affordable = std::floor(own.max_node_configs_per_epoch / rank_node_configs_per_step);
  if (affordable >= static_cast<double>(steps)) return steps;
  return std::max({pass_steps, int64_t{1}, static_cast<int64_t>(affordable)});
}

ModelSpec TrainSettings::kind_model_spec(Kind kind, int64_t num_node_feat) const {
  ModelSpec spec = kind == Kind::Tile ? tile_model : layout_model;
  spec.num_node_feat = num_node_feat;
  return spec;
}

ModelSpec TrainSettings::model_spec(const std::string& collection, int64_t num_node_feat) const {
  return of(collection).kind_model_spec(Collection::parse(collection).kind, num_node_feat);
}

std::string checkpoint_path(const TrainSettings& s, const std::string& collection, int fold,
                            const std::string& which) {
  return s.output_dir + "/checkpoints/" + collection_dir(collection) + "/fold" + std::to_string(fold) + "/" +
         which + ".pt";
}

std::string fold_metrics_path(const TrainSettings& s, const std::string& collection, int fold) {
  return s.output_dir + "/metrics/" + collection_dir(collection) + ".fold" + std::to_string(fold) + ".csv";
}

}  // namespace tpuperf
