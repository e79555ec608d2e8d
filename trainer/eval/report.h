// report.md: the human-readable summary of a training run (scores per collection, fold
// and ensemble, baselines, time, throughput), linking one learning-curve chart per
// collection (trainer/eval/charts.h) written beside it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "trainer/eval/metrics_log.h"

namespace tpuperf {

// What training measured for one collection; NaN = not measured (shown as n/a).
struct CollectionReport {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string collection;
  double cv_score = kNone;              // see cv_score()
  double valid_ensemble = kNone;        // valid score of the ensembled fold models
  std::vector<double> valid_per_fold;   // valid score of each fold model, index = fold
  double valid_random = kNone;          // baselines on the same valid graphs
  double valid_default_first = kNone;   // tile only
  int64_t valid_graphs = 0;
  double test_score = kNone;            // when the test runtimes are known (synthetic data)
  // Top-1, top-5 and top-10 slowdown (kSlowdownKs) on the valid graphs: the ensemble's,
  // a random order's, and each fold's kept epoch on its out-of-fold graphs (mean over folds).
  using Slowdowns = std::array<double, 3>;
  Slowdowns valid_slowdown{kNone, kNone, kNone}, valid_random_slowdown{kNone, kNone, kNone};
  Slowdowns kept_oof_slowdown{kNone, kNone, kNone};
  // Tile: config 0 alone first on the valid graphs (its top-1 slowdown; top-5 and top-10
  // with the random rest do not apply), and what the run's rankings put first
  // (describe_first_pick; empty for layout).
  double valid_default_top1 = kNone;
  std::string first_pick;
  // Tile: the top-5 slowdown of the model's own 5 best (config 0 not put in by
  // output.tile_keep_default; the top-1 is its own either way), kept oof and valid ensemble.
  double kept_oof_own5 = kNone, valid_own5 = kNone;
  double train_seconds = kNone;
  double configs_per_s = kNone;         // training throughput
};

struct ReportInput {
  std::string title = "tpuperf training report";
  std::string ensemble;            // output.ensemble
  int folds = 0;
  std::vector<std::string> notes;  // extra lines for the header (config, data, submission)
  std::vector<CollectionReport> collections;
  std::vector<MetricsRow> metrics;  // for the curves and per-fold tables
};

std::string report_markdown(const ReportInput& input);
// Mean over the collection's folds of the slowdowns on the oof row of each fold's kept
// (best oof) epoch, as cv_score() averages its score.
std::array<double, 3> kept_oof_slowdowns(const std::vector<MetricsRow>& rows, const std::string& collection);
// The same mean of the kept epochs' slowdown_5_own.
double kept_oof_own_slowdown_5(const std::vector<MetricsRow>& rows, const std::string& collection);
// Writes out_dir/report.md and one SVG per collection, atomically; returns report.md's path.
std::string write_report(const std::string& out_dir, const ReportInput& input);

}  // namespace tpuperf
