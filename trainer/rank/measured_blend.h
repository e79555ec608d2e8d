// Ranker::adapted's default method (AdaptMethod::Blend): the run's ensemble score of a
// graph's configs blended with a ridge regression fit on the measured configs' own values,
// the blend chosen by cross-validation over the measurements so that it never trusts a
// fit the held-out measurements do not support. Plain C++ on the fold models' scores: no
// model is run or changed here.
//
// The ridge is kernel ridge regression with a linear kernel over the config values that
// vary among the measured configs (the dual form: its cost is cubic in the measured
// configs and linear in the values, so a layout graph's thousands of one-hot columns
// cost no more than a tile kernel's 24 features).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// A graph's configs as the ridge and the suggestion's similarity read them.
struct ConfigRows {
  bool categorical = false;  // layout: values compared for equality (a one-hot kernel)
  int64_t width = 0;
  std::vector<float> values;  // configs x width
  int64_t size() const { return width > 0 ? static_cast<int64_t>(values.size()) / width : 0; }
  const float* row(int64_t c) const { return values.data() + c * width; }
};

// Tile: the 24 config features as log(1 + max(v, 0)) (tile sizes act multiplicatively).
ConfigRows tile_rows(const std::vector<float>& config_feat);
// Layout: the 18 layout values of every configurable node, categorical.
ConfigRows layout_rows(const std::vector<int8_t>& node_config_feat, int64_t config_nodes);
// The rows at the given indices.
ConfigRows select_rows(const ConfigRows& rows, const std::vector<int64_t>& indices);

// The fold models' scores (one vector per model, one score per config) standardized per
// model with fixed statistics, averaged: the run's ensemble score, independent of which
// other configs are scored beside it.
struct Standardizer {
  std::vector<double> mean, sd;  // per model
  double ensemble_mean = 0, ensemble_sd = 1;
};
// Statistics from the scores of a set of configs (the measured ones, or the candidates).
Standardizer fit_standardizer(const std::vector<std::vector<double>>& member_scores);
// Per config the standardized ensemble score (unit variance over the fitted set) and,
// when spread is given, the fold models' standard deviation in the same units.
std::vector<double> standardized_ensemble(const Standardizer& st, const std::vector<std::vector<double>>& member_scores,
                                          std::vector<double>* spread = nullptr);

// The columns the ridge reads (those that vary among the measured configs) and, for dense
// rows, their standardization over the measured configs. k(a, b) is the mean over those
// columns of x_a x_b (dense) or [a == b] (categorical), so that its scale, and with it the
// ridge penalty's, does not depend on the number of columns.
struct KernelSpace {
  bool categorical = false;
  std::vector<int64_t> columns;
  std::vector<double> mean, sd;  // dense: per column
  // rows x columns.size(): the kept columns, dense ones standardized.
  std::vector<float> transform(const ConfigRows& rows) const;
  // Kernel matrix between two transformed sets (a_n x b_n, row-major).
  std::vector<double> kernel(const std::vector<float>& a, const std::vector<float>& b) const;
};
KernelSpace fit_kernel_space(const ConfigRows& rows);

// Kernel ridge regression with an unpenalized intercept (the kernel centred over its
// training configs): f(x) = target_mean + sum_i dual_i (k(x, x_i) - kernel_row_mean_i).
struct RidgeFit {
  KernelSpace space;
  std::vector<float> train;  // the training configs, transformed
  std::vector<double> dual, kernel_row_mean;
  double target_mean = 0;
  double alpha = 0;
  std::vector<double> predict(const ConfigRows& rows) const;
};
// The ridge of penalty alpha fit to target over rows' varying columns.
RidgeFit fit_ridge(const ConfigRows& rows, const std::vector<double>& target, double alpha);

// What the cross-validation chose, and the parts to apply it: score = weight_run x the run's
// standardized score + weight_fit x fit's prediction. fit_beta is the slope of the
// measurements on the run's score that the ridge was fit beside (its target is the residual).
struct Blend {
  std::string label = "run";
  double weight_run = 1, weight_fit = 0, fit_beta = 0;
  int cv_folds = 0;
  double cv_tau_run = 0, cv_tau = 0;  // NaN when not cross-validated
  Standardizer standardizer;          // of the run's scores of the measured configs
  RidgeFit fit;                       // used when weight_fit != 0
};

// Chooses and fits the blend. member_scores: each fold model's scores of the measured
// configs; rows: their config rows; runtimes: theirs (> 0). seed: the folds and, beyond
// kBlendMaxMeasured configs, which ones the ridge sees.
Blend fit_blend(const std::vector<std::vector<double>>& member_scores, const ConfigRows& rows,
                const std::vector<double>& runtimes, uint64_t seed);
// The blend's score (lower = faster) of candidates: their fold models' scores and rows.
// spread, when given, receives the fold models' disagreement x weight_run.
std::vector<double> blend_scores(const Blend& blend, const std::vector<std::vector<double>>& member_scores,
                                 const ConfigRows& rows, std::vector<double>* spread = nullptr);

}  // namespace tpuperf
