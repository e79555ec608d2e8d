// Training and scoring of one fold model inside its fold group.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "trainer/train/dataset.h"
#include "trainer/eval/predictions.h"
#include "trainer/losses/losses.h"
#include "trainer/models/models.h"

namespace tpuperf {

// train.* and model.* settings, read in one place.
struct TrainSettings {
  std::string processed_dir, output_dir;
  std::vector<std::string> collections;
  int64_t epochs = 10, graphs_per_step = 8;
  int64_t tile_steps_per_epoch = 0, layout_steps_per_epoch = 0;  // 0: one pass
  int64_t tile_slate = 32, layout_slate = 16, eval_max_configs = 1000;
  double lr = 1e-3, weight_decay = 1e-4, warmup_fraction = 0.05, grad_clip = 1.0;
  LossOptions loss;
  uint64_t seed = 0;
  ModelOptions tile_model, layout_model;
  std::string ensemble = "mean_z";
  bool tile_keep_default = true;  // output.tile_keep_default, see tile_top_k

  explicit TrainSettings(const Config& cfg);
  int64_t slate(Kind kind) const { return kind == Kind::Tile ? tile_slate : layout_slate; }
  int64_t steps_per_epoch(Kind kind) const {
    return kind == Kind::Tile ? tile_steps_per_epoch : layout_steps_per_epoch;
  }
  const ModelOptions& model(Kind kind) const { return kind == Kind::Tile ? tile_model : layout_model; }
};

// A model of either kind behind one interface.
struct Ranker {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const Batch&)> forward;
};
Ranker make_ranker(Kind kind, int64_t num_node_feat, const ModelOptions& options);

// Where a fold's files live below output.dir.
std::string checkpoint_path(const TrainSettings& s, const std::string& collection, int fold,
                            const std::string& which);  // "best" or "last"
std::string fold_metrics_path(const TrainSettings& s, const std::string& collection, int fold);

// The sampler's batch_overhead (SamplerOptions) for a model of this size: a batch's fixed
// cost (its passes' overhead) in the unit of graph cost x slate slot, i.e. node slots. The
// fixed part barely grows with the model, a slot's cost grows about as layers x hidden^2:
// 2000 at hidden 32 with 2 layers, 333 at hidden 64 with 3.
int64_t batch_overhead_in_node_slots(const ModelOptions& model);

struct FoldData {
  const GraphSet* train = nullptr;
  const GraphSet* oof = nullptr;    // held-out train fold; may be empty
  const GraphSet* valid = nullptr;  // the valid split; may be empty
};

// Trains (or, with resume, continues) one fold model; every rank of `group` calls it.
// Writes metrics rows and best/last checkpoints (group rank 0). Returns the path of the
// best checkpoint.
std::string train_fold(const TrainSettings& s, const std::string& collection, int fold,
                       const FoldData& data, MPI_Comm group, bool resume);

// Scores graphs of a set with a model: every config (all_configs) or the deterministic
// evaluation subset. Graphs are spread over the group's ranks; each rank returns the
// scores of its share.
std::vector<GraphScores> score_set(const TrainSettings& s, Ranker& ranker, const GraphSet& set,
                                   const std::string& split, int fold, bool all_configs, MPI_Comm group);

// The competition metric of scored graphs with known runtimes (tile: top-5 slowdown;
// layout: Kendall tau), averaged over the graphs (NaNs skipped). Local, no MPI.
// keep_default: tile predictions keep config 0 among the top 5 (tile_top_k).
struct ScoreSum {
  double sum = 0;
  double count = 0;
};
ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default);

}  // namespace tpuperf
