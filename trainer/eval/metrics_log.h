// metrics.csv: one line per collection, fold, epoch and split of what training measured
// (train loss, configs/s, out-of-fold and valid scores), appended as training goes and read
// back for the report and the cross-validation score.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace tpuperf {

// One line of metrics.csv:
//   collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s,slowdown_1,slowdown_5,slowdown_10,
//   slowdown_5_own
// split: "train" (loss only), "oof" (the fold's held-out graphs) or "valid". elapsed_s is
// the seconds of the epoch's training steps on a train row, of the split's scoring on an
// oof or valid row; slowdown_k the mean top-k slowdown of the split's scored graphs
// (common/metrics/metrics.h) in the order the score is of: for tile with
// output.tile_keep_default, config 0 kept among the top 5 (tile_top_k), which takes the
// 5th place, so slowdown_1 is always the model's own first pick. slowdown_5_own is the
// top-5 slowdown of the model's own 5 best, config 0 not put in (equal to slowdown_5 for
// layout and without the rule). Unknown values are NaN, written as empty fields. Files of
// earlier runs, without the slowdown columns (kMetricsHeaderV1) or without slowdown_5_own
// (kMetricsHeaderV2), are read with NaN there and appended to in their own columns.
struct MetricsRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string collection;
  int fold = 0;  // -1: the ensemble
  int epoch = 0;
  int64_t step = 0;
  std::string split;
  double loss = kNone, score = kNone, configs_per_s = kNone, elapsed_s = kNone;
  std::array<double, 3> slowdown{kNone, kNone, kNone};  // top-1, top-5, top-10 (kSlowdownKs)
  double slowdown_5_own = kNone;  // top-5 of the model's own picks (no kept config 0)
};

extern const char* const kMetricsHeader;
extern const char* const kMetricsHeaderV1;  // before the slowdown columns
extern const char* const kMetricsHeaderV2;  // before slowdown_5_own

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
// Per fold, the oof row of its kept epoch (the best oof score, the first of equals);
// pointers into rows.
std::map<int, const MetricsRow*> kept_oof_rows(const std::vector<MetricsRow>& rows, const std::string& collection);

// The mean of the values that are not NaN (NaN = not measured); NaN when there is none.
double mean_finite(const std::vector<double>& values);
// A measured value with a fixed number of decimals, "n/a" for NaN (report tables, chart
// ticks).
std::string format_value(double v, int decimals = 4);

}  // namespace tpuperf
