// The blend of Ranker::adapted (trainer/rank/measured_blend.h): the kernel ridge against
// the primal normal equations solved here independently, the standardized ensemble against
// hand values, and the cross-validated choice on measurements built so that the answer is
// known: a run that is right keeps its ranking, a run that knows nothing gives way to the
// fit, too few measurements never move it.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "common/base/random.h"
#include "common/metrics/metrics.h"
#include "tpuperf/ranker.h"
#include "trainer/rank/measured_blend.h"

namespace {

using tpuperf::ConfigRows;

double uniform(uint64_t key) { return static_cast<double>(tpuperf::splitmix64(key) >> 11) / 9007199254740992.0; }

ConfigRows dense_rows(size_t n, size_t width, uint64_t seed) {
  ConfigRows rows;
  rows.width = static_cast<int64_t>(width);
  for (size_t i = 0; i < n * width; ++i) rows.values.push_back(static_cast<float>(4 * uniform(seed * 1000003 + i)));
  return rows;
}

// Primal ridge with an unpenalized intercept on the standardized columns, scaled as the
// kernel is (x / sqrt(p)): (Xc^T Xc + alpha I) w = Xc^T (t - mean t), by Gaussian elimination.
std::vector<double> primal_ridge(const ConfigRows& train, const std::vector<double>& t, const ConfigRows& test,
                                 double alpha) {
  const size_t n = t.size(), p = static_cast<size_t>(train.width);
  std::vector<double> mean(p, 0), sd(p, 0);
  for (size_t j = 0; j < p; ++j) {
    for (size_t i = 0; i < n; ++i) mean[j] += train.row(i)[j] / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) sd[j] += std::pow(train.row(i)[j] - mean[j], 2) / static_cast<double>(n);
    sd[j] = std::sqrt(sd[j]);
  }
  auto x = [&](const ConfigRows& r, size_t i, size_t j) {
    return (static_cast<double>(r.row(i)[j]) - mean[j]) / sd[j] / std::sqrt(static_cast<double>(p));
  };
  const double tm = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(n);
  std::vector<double> a(p * (p + 1), 0);  // augmented [X^T X + alpha I | X^T t]
  for (size_t j = 0; j < p; ++j) {
    for (size_t k = 0; k < p; ++k)
      for (size_t i = 0; i < n; ++i) a[j * (p + 1) + k] += x(train, i, j) * x(train, i, k);
    a[j * (p + 1) + j] += alpha;
    for (size_t i = 0; i < n; ++i) a[j * (p + 1) + p] += x(train, i, j) * (t[i] - tm);
  }
  for (size_t j = 0; j < p; ++j)
    for (size_t r = 0; r < p; ++r) {
      if (r == j) continue;
      const double f = a[r * (p + 1) + j] / a[j * (p + 1) + j];
      for (size_t k = 0; k <= p; ++k) a[r * (p + 1) + k] -= f * a[j * (p + 1) + k];
    }
  std::vector<double> pred(static_cast<size_t>(test.size()), tm);
  for (size_t i = 0; i < pred.size(); ++i)
    for (size_t j = 0; j < p; ++j) pred[i] += x(test, i, j) * a[j * (p + 1) + p] / a[j * (p + 1) + j];
  return pred;
}

tpuperf::RidgeFit ridge(const ConfigRows& train, const std::vector<double>& t, double alpha) {
  return tpuperf::fit_ridge(train, t, alpha);
}

TEST(MeasuredBlend, KernelRidgeEqualsThePrimalSolution) {
  const ConfigRows train = dense_rows(40, 5, 1), test = dense_rows(15, 5, 2);
  std::vector<double> t;
  for (int64_t i = 0; i < train.size(); ++i)
    t.push_back(2 * train.row(i)[0] - train.row(i)[3] + 0.3 * uniform(900 + i));
  for (double alpha : {0.01, 1.0, 10.0}) {
    const std::vector<double> dual = ridge(train, t, alpha).predict(test);
    const std::vector<double> primal = primal_ridge(train, t, test, alpha);
    for (size_t i = 0; i < dual.size(); ++i) EXPECT_NEAR(dual[i], primal[i], 1e-4) << "alpha " << alpha << " row " << i;
  }
}

TEST(MeasuredBlend, CategoricalRidgeLearnsAPerValueCost) {
  // Layout-like rows: 6 columns of values -1..5, the runtime's log a sum of per-(column,
  // value) costs; 120 measured, 200 held out.
  auto rows_of = [](size_t n, uint64_t seed) {
    ConfigRows r;
    r.categorical = true;
    r.width = 6;
    for (size_t i = 0; i < n * 6; ++i) r.values.push_back(static_cast<float>(tpuperf::splitmix64(seed + i) % 7) - 1);
    return r;
  };
  auto cost = [](const ConfigRows& r) {
    std::vector<double> out;
    for (int64_t i = 0; i < r.size(); ++i) {
      double s = 0;
      for (int64_t j = 0; j < 6; ++j) s += uniform(static_cast<uint64_t>(j * 7 + r.row(i)[j] + 1));
      out.push_back(s);
    }
    return out;
  };
  const ConfigRows train = rows_of(120, 10), test = rows_of(200, 5000);
  const std::vector<double> pred = ridge(train, cost(train), 0.1).predict(test);
  EXPECT_GT(tpuperf::kendall_tau(pred, cost(test)), 0.9);
}

TEST(MeasuredBlend, StandardizedEnsembleAndSpreadByHand) {
  // Two models, three configs; model 1 is model 0 doubled and shifted: after standardizing
  // they agree exactly, so the spread is 0 and the ensemble is model 0's z-score.
  const std::vector<std::vector<double>> same = {{1, 2, 3}, {12, 14, 16}};
  std::vector<double> spread;
  const std::vector<double> z = tpuperf::standardized_ensemble(tpuperf::fit_standardizer(same), same, &spread);
  const double s = std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(z[0], -1 / s, 1e-12);
  EXPECT_NEAR(z[1], 0, 1e-12);
  EXPECT_NEAR(z[2], 1 / s, 1e-12);
  for (double v : spread) EXPECT_NEAR(v, 0, 1e-12);
  // Models that disagree on config 0 only: z rows (-1.22, 0, 1.22) and (1.22, 0, -1.22)...
  const std::vector<std::vector<double>> apart = {{1, 2, 3}, {3, 2, 1}};
  const tpuperf::Standardizer st = tpuperf::fit_standardizer(apart);
  EXPECT_NEAR(st.mean[1], 2, 1e-12);
  EXPECT_NEAR(st.sd[1], s, 1e-12);
  const std::vector<double> zz = tpuperf::standardized_ensemble(st, apart, &spread);
  // ...average to 0 everywhere (a constant ensemble keeps its unit scale), spread 1.22, 0, 1.22.
  for (double v : zz) EXPECT_NEAR(v, 0, 1e-12);
  EXPECT_NEAR(spread[0], 1 / s, 1e-12);
  EXPECT_NEAR(spread[1], 0, 1e-12);
  // Configs scored later are standardized with the fitted statistics, not their own.
  const std::vector<double> later = tpuperf::standardized_ensemble(st, {{2}, {2}});
  EXPECT_NEAR(later[0], 0, 1e-12);
}

// Measurements of n configs with log runtime = a function of dense rows (linear, which the
// ridge can learn, or not); the run's two fold models score `run_quality` x that function +
// (1 - run_quality) x noise.
struct Measured {
  ConfigRows rows;
  std::vector<double> runtime, truth;
  std::vector<std::vector<double>> members;
};
Measured measured(size_t n, double run_quality, uint64_t seed, bool linear = true) {
  Measured m;
  m.rows = dense_rows(n, 4, seed);
  for (int64_t i = 0; i < m.rows.size(); ++i) {
    const float* x = m.rows.row(i);
    const double f = linear ? x[0] + 0.5 * x[1] - x[2] : std::sin(3 * x[0]) * std::cos(2 * x[1]) + x[2] * x[3] / 8;
    m.truth.push_back(f);
    m.runtime.push_back(std::exp(f + 0.05 * uniform(seed * 77 + i)));
  }
  m.members.resize(2);
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < n; ++i)
      m.members[k].push_back(run_quality * m.truth[i] + (1 - run_quality) * 3 * uniform(seed * 31 + k * 1000 + i));
  return m;
}

TEST(MeasuredBlend, ARunThatIsRightKeepsItsRanking) {
  // The runtimes are what the run predicts, in a form the ridge cannot learn.
  const Measured m = measured(64, 1.0, 3, false);
  const tpuperf::Blend b = tpuperf::fit_blend(m.members, m.rows, m.runtime, 0);
  EXPECT_EQ(b.weight_fit, 0) << b.label;
  EXPECT_EQ(b.weight_run, 1);
  EXPECT_EQ(b.label, "run");
  EXPECT_GT(b.cv_tau_run, 0.9);
  EXPECT_EQ(b.cv_folds, 5);
}

TEST(MeasuredBlend, ARunThatKnowsNothingGivesWayToTheFit) {
  const Measured m = measured(64, 0.0, 4), held_out = measured(200, 0.0, 5);
  const tpuperf::Blend b = tpuperf::fit_blend(m.members, m.rows, m.runtime, 0);
  EXPECT_GT(b.weight_fit, 0) << b.label;
  EXPECT_GT(b.cv_tau, b.cv_tau_run + 0.3) << b.label;
  const std::vector<double> s = tpuperf::blend_scores(b, held_out.members, held_out.rows);
  const std::vector<double> run = tpuperf::standardized_ensemble(b.standardizer, held_out.members);
  EXPECT_GT(tpuperf::kendall_tau(s, held_out.truth), 0.8);
  EXPECT_LT(std::abs(tpuperf::kendall_tau(run, held_out.truth)), 0.2);
}

TEST(MeasuredBlend, TooFewMeasurementsNeverMoveTheRun) {
  const Measured m = measured(tpuperf::kBlendMinMeasured - 1, 0.0, 6);
  const tpuperf::Blend b = tpuperf::fit_blend(m.members, m.rows, m.runtime, 0);
  EXPECT_EQ(b.label, "run");
  EXPECT_EQ(b.weight_fit, 0);
  EXPECT_TRUE(std::isnan(b.cv_tau));
  // The blend's scores are then the standardized ensemble's.
  EXPECT_EQ(tpuperf::blend_scores(b, m.members, m.rows), tpuperf::standardized_ensemble(b.standardizer, m.members));
}

TEST(MeasuredBlend, SameSeedSameBlendAndTheSeedDealsTheFolds) {
  const Measured m = measured(48, 0.3, 7), held_out = measured(50, 0.3, 8);
  const tpuperf::Blend a = tpuperf::fit_blend(m.members, m.rows, m.runtime, 1);
  const tpuperf::Blend b = tpuperf::fit_blend(m.members, m.rows, m.runtime, 1);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.cv_tau, b.cv_tau);
  EXPECT_EQ(tpuperf::blend_scores(a, held_out.members, held_out.rows),
            tpuperf::blend_scores(b, held_out.members, held_out.rows));
  const tpuperf::Blend c = tpuperf::fit_blend(m.members, m.rows, m.runtime, 2);
  EXPECT_NE(a.cv_tau_run, c.cv_tau_run) << "another seed deals other folds";
}

TEST(MeasuredBlend, CopiesOfAConfigCountOnce) {
  // 7 distinct configs measured, one of them 20 times: fewer than kBlendMinMeasured distinct
  // ones, so the run alone, however many rows there are.
  Measured m = measured(7, 0.0, 9);
  for (int k = 0; k < 20; ++k) {
    m.rows.values.insert(m.rows.values.end(), m.rows.row(0), m.rows.row(0) + m.rows.width);
    m.runtime.push_back(m.runtime[0] * (1 + 0.001 * k));
    for (auto& s : m.members) s.push_back(s[0]);
  }
  const tpuperf::Blend b = tpuperf::fit_blend(m.members, m.rows, m.runtime, 0);
  EXPECT_EQ(b.label, "run");
  EXPECT_TRUE(std::isnan(b.cv_tau));
}

TEST(MeasuredBlend, RowsOfBothKinds) {
  const ConfigRows t = tpuperf::tile_rows(std::vector<float>(48, 0.0f));
  EXPECT_EQ(t.width, 24);
  EXPECT_EQ(t.size(), 2);
  const ConfigRows t2 = tpuperf::tile_rows({std::vector<float>{std::exp(1.0f) - 1, -3.0f}});
  EXPECT_NEAR(t2.values[0], 1.0, 1e-6);
  EXPECT_EQ(t2.values[1], 0.0f);  // negative values count as 0
  const ConfigRows l = tpuperf::layout_rows(std::vector<int8_t>(3 * 2 * 18, -1), 2);
  EXPECT_TRUE(l.categorical);
  EXPECT_EQ(l.width, 36);
  EXPECT_EQ(l.size(), 3);
  EXPECT_EQ(tpuperf::select_rows(l, {2, 0}).size(), 2);
}

}  // namespace
