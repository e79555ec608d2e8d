// Training metrics (metrics.csv) and the human-readable report (report.md with one
// learning-curve SVG per collection beside it).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tpuperf {

// One line of metrics.csv:
//   collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s
// split: "train" (loss only), "oof" (the fold's held-out graphs) or "valid". Unknown
// values are NaN, written as empty fields.
struct MetricsRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string collection;
  int fold = 0;  // -1: the ensemble
  int epoch = 0;
  int64_t step = 0;
  std::string split;
  double loss = kNone, score = kNone, configs_per_s = kNone, elapsed_s = kNone;
};

extern const char* const kMetricsHeader;

// Appends rows and flushes; writes the header first when the file is new or empty.
// Throws Error naming the file on I/O failure or a field holding ',' or a newline.
void append_metrics(const std::string& path, const std::vector<MetricsRow>& rows);
// Throws Error naming the file and line on a bad header or a malformed row.
std::vector<MetricsRow> read_metrics(const std::string& path);
std::vector<MetricsRow> parse_metrics(const std::string& text, const std::string& path);

// Mean over folds of the oof score of each fold's kept epoch (NaN if none): the
// cross-validation score of a collection. Training keeps the epoch with the best oof score
// (the first of equals), so this is each fold's best oof score.
double cv_score(const std::vector<MetricsRow>& rows, const std::string& collection);

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

// "curves_tile_xla.svg" for "tile:xla".
std::string curves_file_name(const std::string& collection);
// Two panels: training loss (mean per epoch) and oof (solid) / valid (dashed) score per
// epoch, one colour per fold, with axes, ticks, labels and a legend.
std::string learning_curves_svg(const std::vector<MetricsRow>& rows,
                                const std::string& collection);
std::string report_markdown(const ReportInput& input);
// Writes out_dir/report.md and one SVG per collection, atomically; returns report.md's path.
std::string write_report(const std::string& out_dir, const ReportInput& input);

}  // namespace tpuperf
