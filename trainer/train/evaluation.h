// Scoring graphs with a fold model, and the competition metric of those scores: what
// training logs per epoch (out-of-fold and valid) and what prediction gathers.
#pragma once

#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "trainer/eval/predictions.h"
#include "trainer/models/registry.h"
#include "trainer/train/dataset.h"
#include "trainer/train/settings.h"

namespace tpuperf {

// Scores graphs of a set with a model, in chunks of train.<kind>_eval_chunk configs: every
// config (all_configs: prediction, through trainer/predict/graph_scoring.h, duplicate configs
// scored once) or the deterministic evaluation subset (train.eval_max_configs). Graphs
// are spread over the group's ranks; each rank returns the scores of its share.
std::vector<GraphScores> score_set(const TrainSettings& s, RankingModel& model, const GraphSet& set,
                                   const std::string& split, int fold, bool all_configs, MPI_Comm group);

// The competition metric of scored graphs with known runtimes (tile: top-5 slowdown;
// layout: Kendall tau) and the top-1/5/10 slowdown of their orders (kSlowdownKs), summed
// over the graphs (NaNs skipped). Local, no MPI. keep_default: tile predictions keep
// config 0 among the top 5 (tile_top_k), in its 5th place, so the top-1 slowdown is the
// model's own first pick either way; own5 is the top-5 slowdown of the model's own 5 best
// (config 0 not put in). A graph's slowdowns are over its scored configs
// (train.eval_max_configs of a layout graph): the best of them is the reference.
struct ScoreSum {
  double sum = 0;
  double count = 0;
  std::array<double, 3> slowdown_sum{}, slowdown_count{};
  double own5_sum = 0, own5_count = 0;
  double mean() const;  // NaN without graphs
  std::array<double, 3> slowdowns() const;  // mean per k, NaN where none is defined
  double own_slowdown_5() const;  // mean, NaN where none is defined
  // As a flat vector and back (for all-reduces).
  std::vector<double> to_vector() const;
  static ScoreSum from_vector(const std::vector<double>& v);
};
ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default);

// metric_of over the whole set, its graphs scored by the group's ranks. Collective.
ScoreSum group_metric(const TrainSettings& s, RankingModel& model, const GraphSet* set, const std::string& split,
                      int fold, MPI_Comm group);

}  // namespace tpuperf
