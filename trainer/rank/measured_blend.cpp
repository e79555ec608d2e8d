#include "trainer/rank/measured_blend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "common/base/error.h"
#include "common/base/random.h"
#include "common/graph/graph.h"
#include "common/metrics/metrics.h"
#include "tpuperf/ranker.h"

namespace tpuperf {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Ridge penalties tried (the kernel's diagonal is about 1 for both kinds of rows; a layout
// graph's one-hot kernel averages over hundreds to thousands of columns, which the small
// penalties are for: with 0.01 the least, the ridge fell well short of its best there, E37).
constexpr double kAlphas[] = {0.0001, 0.001, 0.01, 0.1, 1.0, 10.0};
// Weights of the residual fit tried against the run's score (1: the fit wholly).
constexpr double kResidualWeights[] = {0.25, 0.5, 0.75, 1.0};
constexpr int kMaxFolds = 5;

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v, double mean) {
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size())) : 0.0;
}

template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<int64_t>& idx) {
  std::vector<T> out;
  out.reserve(idx.size());
  for (int64_t i : idx) out.push_back(v[static_cast<size_t>(i)]);
  return out;
}

// The submatrix rows x cols of an n x n row-major matrix.
std::vector<double> submatrix(const std::vector<double>& m, size_t n, const std::vector<int64_t>& rows,
                              const std::vector<int64_t>& cols) {
  std::vector<double> out;
  out.reserve(rows.size() * cols.size());
  for (int64_t r : rows)
    for (int64_t c : cols) out.push_back(m[static_cast<size_t>(r) * n + static_cast<size_t>(c)]);
  return out;
}

// Solves (A) x = b for symmetric positive definite A (n x n, row-major) by Cholesky.
std::vector<double> solve_spd(std::vector<double> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) throw Error("ridge system not positive definite");
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = b
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= a[i * n + k] * b[k];
    b[i] = s / a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[k * n + i] * b[k];
    b[i] = s / a[i * n + i];
  }
  return b;
}

// The dual ridge on a precomputed training kernel (n x n): fills dual, kernel_row_mean,
// target_mean.
void solve_ridge(RidgeFit& fit, const std::vector<double>& k, const std::vector<double>& target) {
  const size_t n = target.size();
  fit.target_mean = mean_of(target);
  fit.kernel_row_mean.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) fit.kernel_row_mean[i] += k[i * n + j] / static_cast<double>(n);
  const double grand = mean_of(fit.kernel_row_mean);
  std::vector<double> kc(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      kc[i * n + j] = k[i * n + j] - fit.kernel_row_mean[i] - fit.kernel_row_mean[j] + grand + (i == j ? fit.alpha : 0.0);
  std::vector<double> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = target[i] - fit.target_mean;
  fit.dual = solve_spd(std::move(kc), std::move(t));
}

// Predictions from the kernel between the predicted configs and the training ones (m x n).
std::vector<double> predict_from_kernel(const RidgeFit& fit, const std::vector<double>& k, size_t m) {
  const size_t n = fit.dual.size();
  std::vector<double> out(m, fit.target_mean);
  for (size_t r = 0; r < m; ++r)
    for (size_t i = 0; i < n; ++i) out[r] += fit.dual[i] * (k[r * n + i] - fit.kernel_row_mean[i]);
  return out;
}

// The slope of t on r (both given), at least 0: how far the run's score explains the
// measurements, so that the ridge fits only what it leaves.
double run_slope(const std::vector<double>& r, const std::vector<double>& t) {
  const double mr = mean_of(r), mt = mean_of(t);
  double cov = 0, var = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    cov += (r[i] - mr) * (t[i] - mt);
    var += (r[i] - mr) * (r[i] - mr);
  }
  return var > 0 ? std::max(0.0, cov / var) : 0.0;
}

// One candidate of the cross-validation: score = weight_run r + weight_fit f, f a ridge of
// penalty alpha fit to t - beta r (residual) or to t (ridge alone).
struct Candidate {
  std::string label;
  bool uses_fit = false, residual = false;
  double w = 0, alpha = 0;
};

std::vector<Candidate> candidates() {
  std::vector<Candidate> out{{"run", false, false, 0, 0}};
  for (double alpha : kAlphas) {
    for (double w : kResidualWeights)
      out.push_back({"residual w=" + fmt::format("{:g}", w) + " alpha=" + fmt::format("{:g}", alpha), true, true, w, alpha});
    out.push_back({"ridge alpha=" + fmt::format("{:g}", alpha), true, false, 1.0, alpha});
  }
  return out;
}

double tau_or_zero(const std::vector<double>& pred, const std::vector<double>& t) {
  const double tau = kendall_tau(pred, t);
  return std::isnan(tau) ? 0.0 : tau;
}

// The per-fold held-out taus of every candidate (candidate-major); folds whose held-out
// runtimes are all equal are left out.
std::vector<std::vector<double>> cross_validate(const std::vector<Candidate>& cands, const std::vector<double>& k,
                                                const std::vector<double>& r, const std::vector<double>& t,
                                                const std::vector<int>& fold_of, int folds) {
  const size_t n = t.size();
  std::vector<std::vector<double>> taus(cands.size());
  for (int f = 0; f < folds; ++f) {
    std::vector<int64_t> tr, te;
    for (size_t i = 0; i < n; ++i) (fold_of[i] == f ? te : tr).push_back(static_cast<int64_t>(i));
    const std::vector<double> t_te = pick(t, te), r_te = pick(r, te), t_tr = pick(t, tr), r_tr = pick(r, tr);
    if (std::all_of(t_te.begin(), t_te.end(), [&](double v) { return v == t_te[0]; })) continue;
    const double beta = run_slope(r_tr, t_tr);
    std::vector<double> resid(t_tr.size());
    for (size_t i = 0; i < resid.size(); ++i) resid[i] = t_tr[i] - beta * r_tr[i];
    const std::vector<double> k_tr = submatrix(k, n, tr, tr), k_te = submatrix(k, n, te, tr);
    for (size_t c = 0; c < cands.size(); ++c) {
      const Candidate& cand = cands[c];
      std::vector<double> pred = r_te;
      if (cand.uses_fit) {
        RidgeFit fit;
        fit.alpha = cand.alpha;
        solve_ridge(fit, k_tr, cand.residual ? resid : t_tr);
        const std::vector<double> f = predict_from_kernel(fit, k_te, te.size());
        for (size_t i = 0; i < pred.size(); ++i)
          pred[i] = cand.residual ? (1 - cand.w) * r_te[i] + cand.w * (beta * r_te[i] + f[i]) : f[i];
      }
      taus[c].push_back(tau_or_zero(pred, t_te));
    }
  }
  return taus;
}

// The candidate to use: the best mean held-out tau among those that beat the run by more
// than one standard error of their per-fold gains; the run when none does.
size_t choose(const std::vector<std::vector<double>>& taus) {
  size_t best = 0;
  double best_mean = mean_of(taus[0]);
  for (size_t c = 1; c < taus.size(); ++c) {
    std::vector<double> gain(taus[c].size());
    for (size_t f = 0; f < gain.size(); ++f) gain[f] = taus[c][f] - taus[0][f];
    const double g = mean_of(gain);
    const double se = sd_of(gain, g) / std::sqrt(std::max<double>(1.0, static_cast<double>(gain.size()) - 1.0));
    const double m = mean_of(taus[c]);
    if (g > 0 && g > se && m > best_mean) {
      best = c;
      best_mean = m;
    }
  }
  return best;
}

// The first config of each distinct row; least[first] becomes the least runtime of its copies.
std::vector<int64_t> distinct_configs(const ConfigRows& rows, std::vector<double>& least) {
  std::unordered_map<std::string_view, int64_t> first;
  std::vector<int64_t> out;
  for (int64_t c = 0; c < rows.size(); ++c) {
    const std::string_view row(reinterpret_cast<const char*>(rows.row(c)), static_cast<size_t>(rows.width) * sizeof(float));
    const auto [it, fresh] = first.emplace(row, c);
    if (fresh) out.push_back(c);
    else least[static_cast<size_t>(it->second)] = std::min(least[static_cast<size_t>(it->second)], least[static_cast<size_t>(c)]);
  }
  return out;
}

}  // namespace

ConfigRows tile_rows(const std::vector<float>& config_feat) {
  ConfigRows rows;
  rows.width = kTileConfigDim;
  rows.values.resize(config_feat.size());
  for (size_t i = 0; i < config_feat.size(); ++i) rows.values[i] = std::log1p(std::max(config_feat[i], 0.0f));
  return rows;
}

ConfigRows layout_rows(const std::vector<int8_t>& node_config_feat, int64_t config_nodes) {
  ConfigRows rows;
  rows.categorical = true;
  rows.width = config_nodes * kLayoutConfigDim;
  rows.values.assign(node_config_feat.begin(), node_config_feat.end());
  return rows;
}

ConfigRows select_rows(const ConfigRows& rows, const std::vector<int64_t>& indices) {
  ConfigRows out;
  out.categorical = rows.categorical;
  out.width = rows.width;
  out.values.reserve(indices.size() * static_cast<size_t>(rows.width));
  for (int64_t c : indices) out.values.insert(out.values.end(), rows.row(c), rows.row(c) + rows.width);
  return out;
}

Standardizer fit_standardizer(const std::vector<std::vector<double>>& member_scores) {
  Standardizer st;
  for (const auto& s : member_scores) {
    const double m = mean_of(s), sd = sd_of(s, m);
    st.mean.push_back(m);
    st.sd.push_back(sd > 0 ? sd : 1.0);
  }
  const std::vector<double> e = standardized_ensemble(st, member_scores);
  st.ensemble_mean = mean_of(e);
  const double sd = sd_of(e, st.ensemble_mean);
  st.ensemble_sd = sd > 0 ? sd : 1.0;
  // Re-applied by standardized_ensemble from here on: the ensemble's own centre and scale.
  return st;
}

std::vector<double> standardized_ensemble(const Standardizer& st, const std::vector<std::vector<double>>& member_scores,
                                          std::vector<double>* spread) {
  if (member_scores.size() != st.mean.size() || member_scores.empty())
    throw Error(std::to_string(member_scores.size()) + " fold models' scores for a standardizer of " +
                std::to_string(st.mean.size()));
  const size_t n = member_scores[0].size(), folds = member_scores.size();
  std::vector<double> out(n, 0.0);
  if (spread) spread->assign(n, 0.0);
  for (size_t c = 0; c < n; ++c) {
    double sum = 0, sq = 0;
    for (size_t f = 0; f < folds; ++f) {
      const double z = (member_scores[f][c] - st.mean[f]) / st.sd[f];
      sum += z;
      sq += z * z;
    }
    const double m = sum / static_cast<double>(folds);
    out[c] = (m - st.ensemble_mean) / st.ensemble_sd;
    if (spread) (*spread)[c] = std::sqrt(std::max(0.0, sq / static_cast<double>(folds) - m * m)) / st.ensemble_sd;
  }
  return out;
}

KernelSpace fit_kernel_space(const ConfigRows& rows) {
  KernelSpace space;
  space.categorical = rows.categorical;
  const int64_t n = rows.size();
  for (int64_t j = 0; j < rows.width; ++j) {
    const float first = rows.values[static_cast<size_t>(j)];
    bool varies = false;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) {
      const float v = rows.row(c)[j];
      varies |= v != first;
      sum += v;
    }
    if (!varies) continue;
    space.columns.push_back(j);
    if (rows.categorical) continue;
    const double m = sum / static_cast<double>(n);
    double ss = 0;
    for (int64_t c = 0; c < n; ++c) ss += (rows.row(c)[j] - m) * (rows.row(c)[j] - m);
    space.mean.push_back(m);
    space.sd.push_back(std::sqrt(ss / static_cast<double>(n)));
  }
  return space;
}

std::vector<float> KernelSpace::transform(const ConfigRows& rows) const {
  const size_t p = columns.size();
  std::vector<float> out(static_cast<size_t>(rows.size()) * p);
  for (int64_t c = 0; c < rows.size(); ++c)
    for (size_t j = 0; j < p; ++j) {
      const float v = rows.row(c)[columns[j]];
      out[static_cast<size_t>(c) * p + j] = categorical ? v : static_cast<float>((v - mean[j]) / sd[j]);
    }
  return out;
}

std::vector<double> KernelSpace::kernel(const std::vector<float>& a, const std::vector<float>& b) const {
  const size_t p = columns.size();
  if (p == 0) return std::vector<double>(a.size() * b.size(), 0.0);  // never reached with rows: sizes are 0
  const size_t na = a.size() / p, nb = b.size() / p;
  std::vector<double> k(na * nb);
  for (size_t i = 0; i < na; ++i) {
    const float* x = a.data() + i * p;
    for (size_t j = 0; j < nb; ++j) {
      const float* y = b.data() + j * p;
      double s = 0;
      if (categorical) {
        int64_t same = 0;
        for (size_t q = 0; q < p; ++q) same += x[q] == y[q];
        s = static_cast<double>(same);
      } else {
        for (size_t q = 0; q < p; ++q) s += static_cast<double>(x[q]) * y[q];
      }
      k[i * nb + j] = s / static_cast<double>(p);
    }
  }
  return k;
}

std::vector<double> RidgeFit::predict(const ConfigRows& rows) const {
  if (space.columns.empty() || dual.empty()) return std::vector<double>(static_cast<size_t>(rows.size()), target_mean);
  return predict_from_kernel(*this, space.kernel(space.transform(rows), train), static_cast<size_t>(rows.size()));
}

RidgeFit fit_ridge(const ConfigRows& rows, const std::vector<double>& target, double alpha) {
  RidgeFit fit;
  fit.space = fit_kernel_space(rows);
  fit.train = fit.space.transform(rows);
  fit.alpha = alpha;
  if (!fit.space.columns.empty()) solve_ridge(fit, fit.space.kernel(fit.train, fit.train), target);
  else fit.target_mean = mean_of(target);
  return fit;
}

Blend fit_blend(const std::vector<std::vector<double>>& member_scores, const ConfigRows& rows,
                const std::vector<double>& runtimes, uint64_t seed) {
  Blend blend;
  blend.standardizer = fit_standardizer(member_scores);
  blend.cv_tau_run = blend.cv_tau = kNaN;
  // Re-measured copies of a config count once, at their least runtime (as preprocessing
  // dedups): a copy on each side of a fold would let the ridge look better than it is.
  std::vector<double> least = runtimes;
  std::vector<int64_t> order = distinct_configs(rows, least);
  if (static_cast<int64_t>(order.size()) < kBlendMinMeasured) return blend;
  // The configs the ridge sees, in a seeded order (their positions deal the folds).
  SplitMix64 rng(mix_seed(seed, "blend"));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);  // Fisher-Yates
  if (static_cast<int64_t>(order.size()) > kBlendMaxMeasured) order.resize(static_cast<size_t>(kBlendMaxMeasured));
  const size_t n = order.size();
  const std::vector<double> r_all = standardized_ensemble(blend.standardizer, member_scores);
  const std::vector<double> r = pick(r_all, order);
  std::vector<double> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = std::log(least[static_cast<size_t>(order[i])]);
  const double tm = mean_of(t), tsd = sd_of(t, tm);
  for (double& v : t) v = (v - tm) / (tsd > 0 ? tsd : 1.0);

  const ConfigRows measured = select_rows(rows, order);
  RidgeFit fit;
  fit.space = fit_kernel_space(measured);
  if (fit.space.columns.empty()) return blend;  // every measured config alike: nothing to fit
  fit.train = fit.space.transform(measured);
  const std::vector<double> k = fit.space.kernel(fit.train, fit.train);

  blend.cv_folds = static_cast<int>(std::min<size_t>(kMaxFolds, n / 4));
  std::vector<int> fold_of(n);
  for (size_t i = 0; i < n; ++i) fold_of[i] = static_cast<int>(i % static_cast<size_t>(blend.cv_folds));
  const std::vector<Candidate> cands = candidates();
  const auto taus = cross_validate(cands, k, r, t, fold_of, blend.cv_folds);
  if (taus[0].empty()) return blend;  // every held-out fold's runtimes tie
  const size_t chosen = choose(taus);
  const Candidate& c = cands[chosen];
  blend.label = c.label;
  blend.cv_tau_run = mean_of(taus[0]);
  blend.cv_tau = mean_of(taus[chosen]);
  if (!c.uses_fit) return blend;
  const double beta = c.residual ? run_slope(r, t) : 0.0;
  std::vector<double> target(n);
  for (size_t i = 0; i < n; ++i) target[i] = t[i] - beta * r[i];
  fit.alpha = c.alpha;
  solve_ridge(fit, k, target);
  blend.fit = std::move(fit);
  blend.fit_beta = beta;
  blend.weight_run = c.residual ? (1 - c.w) + c.w * beta : 0.0;
  blend.weight_fit = c.w;
  return blend;
}

std::vector<double> blend_scores(const Blend& blend, const std::vector<std::vector<double>>& member_scores,
                                 const ConfigRows& rows, std::vector<double>* spread) {
  std::vector<double> out = standardized_ensemble(blend.standardizer, member_scores, spread);
  if (spread)
    for (double& s : *spread) s *= std::abs(blend.weight_run);
  if (blend.weight_fit == 0) return out;
  const std::vector<double> f = blend.fit.predict(rows);
  for (size_t i = 0; i < out.size(); ++i) out[i] = blend.weight_run * out[i] + blend.weight_fit * f[i];
  return out;
}

}  // namespace tpuperf
