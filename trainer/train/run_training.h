// tpuperf-train as a library call: the world split into fold groups, each group training
// its folds of every collection, then every fold model scoring the valid and test graphs,
// the scores gathered to world rank 0, ensembled, and written as submission.csv,
// metrics.csv and report.md.
#pragma once

#include "common/config/config.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

struct TrainRunOptions {
  bool resume = false;        // continue from the last checkpoints
  bool fresh = false;         // delete previous checkpoints and metrics first
  bool predict_only = false;  // no training: score with the saved best checkpoints
  bool train_only = false;    // train the folds, then stop: no prediction or ensemble
};

// Collective over ctx.world. Returns an exit code.
int run_training(const Config& cfg, const MpiContext& ctx, const TrainRunOptions& opts);

}  // namespace tpuperf
