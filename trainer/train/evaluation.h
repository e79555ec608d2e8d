// Scoring graphs with a fold model, and the competition metric of those scores: what
// training logs per epoch (out-of-fold and valid) and what prediction gathers.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "trainer/eval/predictions.h"
#include "trainer/models/registry.h"
#include "trainer/train/dataset.h"
#include "trainer/train/settings.h"

namespace tpuperf {

// Scores graphs of a set with a model, in chunks of train.<kind>_eval_chunk configs: every
// config (all_configs: prediction, through trainer/rank/graph_scoring.h, duplicate configs
// scored once) or the deterministic evaluation subset (train.eval_max_configs). Graphs
// are spread over the group's ranks; each rank returns the scores of its share.
std::vector<GraphScores> score_set(const TrainSettings& s, RankingModel& model, const GraphSet& set,
                                   const std::string& split, int fold, bool all_configs, MPI_Comm group);

// The competition metric of scored graphs with known runtimes (tile: top-5 slowdown;
// layout: Kendall tau), summed over the graphs (NaNs skipped). Local, no MPI.
// keep_default: tile predictions keep config 0 among the top 5 (tile_top_k).
struct ScoreSum {
  double sum = 0;
  double count = 0;
  double mean() const;  // NaN without graphs
};
ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default);

// metric_of over the whole set, its graphs scored by the group's ranks. Collective.
ScoreSum group_metric(const TrainSettings& s, RankingModel& model, const GraphSet* set, const std::string& split,
                      int fold, MPI_Comm group);

}  // namespace tpuperf
