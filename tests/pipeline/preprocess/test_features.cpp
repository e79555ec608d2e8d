// Feature re-padding, statistics, fitting and applying, checked against direct computations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/base/error.h"
#include "pipeline/preprocess/features.h"

using namespace tpuperf;

namespace {

std::vector<float> zero_rows(int n) { return std::vector<float>(static_cast<size_t>(n) * kNodeFeatDim, 0.0f); }

// Random graphs: a few typical kinds of columns, including heavy-tailed and constant ones.
std::vector<std::vector<float>> random_graphs(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> nodes(1, 40), small(0, 5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<float>> graphs;
  for (int gi = 0; gi < count; ++gi) {
    int n = nodes(rng);
    std::vector<float> f = zero_rows(n);
    for (int i = 0; i < n; ++i) {
      float* row = &f[static_cast<size_t>(i) * kNodeFeatDim];
      for (int c = 0; c < kNodeFeatDim; ++c) row[c] = static_cast<float>(small(rng));
      row[1] = 0.0f;                                                     // constant
      row[50] = 7.5f;                                                    // constant
      row[28] = static_cast<float>(std::exp(unit(rng) * 20.0));          // product: up to ~5e8
      row[30] = unit(rng) < 0.02 ? static_cast<float>(small(rng) * 100) : 0.0f;  // skewed ids
      row[40] = static_cast<float>(unit(rng) * 2.0 - 1.0);               // signed, small
    }
    graphs.push_back(f);
  }
  return graphs;
}

struct Direct {
  double count = 0, mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

// Two passes over all values of a column, optionally through signed_log1p.
Direct direct_stats(const std::vector<std::vector<float>>& graphs, int col, bool log) {
  Direct d;
  long double sum = 0;
  for (const auto& g : graphs)
    for (size_t i = col; i < g.size(); i += kNodeFeatDim) {
      double x = log ? signed_log1p(g[i]) : g[i];
      sum += x;
      d.count += 1;
      d.min = std::min(d.min, x);
      d.max = std::max(d.max, x);
    }
  d.mean = static_cast<double>(sum / d.count);
  long double ss = 0;
  for (const auto& g : graphs)
    for (size_t i = col; i < g.size(); i += kNodeFeatDim) {
      double x = log ? signed_log1p(g[i]) : g[i];
      ss += (x - d.mean) * (x - d.mean);
    }
  d.var = static_cast<double>(ss / d.count);
  return d;
}

FeatureStats stats_of(const std::vector<std::vector<float>>& graphs, size_t begin, size_t end) {
  FeatureStats st;
  for (size_t i = begin; i < end; ++i) st.add_graph(graphs[i], static_cast<int64_t>(graphs[i].size() / kNodeFeatDim));
  return st;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST(Features, RepadHandMadeRows) {
  std::vector<float> f = zero_rows(4);
  auto row = [&](int i) { return &f[static_cast<size_t>(i) * kNodeFeatDim]; };
  // Row 0: rank 2 (dims 8, 4), minor_to_major {1, 0}.
  row(0)[21] = 8; row(0)[22] = 4; row(0)[134] = 1; row(0)[135] = 0;
  // Row 1: scalar (rank 0).
  // Row 2: rank 6.
  for (int p = 0; p < 6; ++p) { row(2)[21 + p] = 2; row(2)[134 + p] = static_cast<float>(5 - p); }
  // Row 3: a zero dim stops the rank (leading non-zero entries only): rank 1.
  row(3)[21] = 3; row(3)[22] = 0; row(3)[23] = 5; row(3)[134] = 0; row(3)[135] = 1;
  repad_minor_to_major(f.data(), 4);
  const float expected[4][6] = {{1, 0, -1, -1, -1, -1},
                                {-1, -1, -1, -1, -1, -1},
                                {5, 4, 3, 2, 1, 0},
                                {0, -1, -1, -1, -1, -1}};
  for (int i = 0; i < 4; ++i)
    for (int p = 0; p < 6; ++p) EXPECT_EQ(row(i)[134 + p], expected[i][p]) << i << "," << p;
  EXPECT_EQ(row(0)[21], 8);  // other columns untouched
  EXPECT_EQ(row(3)[23], 5);
}

TEST(Features, SignedLog) {
  EXPECT_DOUBLE_EQ(signed_log1p(0.0), 0.0);
  EXPECT_DOUBLE_EQ(signed_log1p(std::exp(2.0) - 1.0), 2.0);
  EXPECT_DOUBLE_EQ(signed_log1p(-(std::exp(3.0) - 1.0)), -3.0);
}

TEST(Features, StatsEqualTwoPass) {
  auto graphs = random_graphs(1, 60);
  FeatureStats st = stats_of(graphs, 0, graphs.size());
  for (int col : {0, 1, 21, 28, 30, 40, 50, 139}) {
    for (bool log : {false, true}) {
      Direct d = direct_stats(graphs, col, log);
      SCOPED_TRACE("col " + std::to_string(col) + (log ? " log" : ""));
      EXPECT_EQ(st.count(col), static_cast<int64_t>(d.count));
      double mean = log ? st.log_mean(col) : st.mean(col);
      double var = log ? st.log_variance(col) : st.variance(col);
      EXPECT_NEAR(mean, d.mean, 1e-12 * (1 + std::fabs(d.mean)));
      EXPECT_NEAR(var, d.var, 1e-9 * (1 + d.var) + 1e-12 * d.mean * d.mean);
      EXPECT_EQ(log ? st.log_min(col) : st.min(col), d.min);
      EXPECT_EQ(log ? st.log_max(col) : st.max(col), d.max);
    }
  }
}

TEST(Features, MergeOfHalvesEqualsWholeBitwise) {
  auto graphs = random_graphs(2, 41);
  FeatureStats whole = stats_of(graphs, 0, graphs.size());
  FeatureStats a = stats_of(graphs, 0, 17), b = stats_of(graphs, 17, graphs.size());
  a.merge(b);
  EXPECT_TRUE(same_bits(a.to_flat(), whole.to_flat()));
  // Order of graphs does not matter either: reversed.
  FeatureStats rev;
  for (size_t i = graphs.size(); i-- > 0;) rev.add_graph(graphs[i], graphs[i].size() / kNodeFeatDim);
  EXPECT_TRUE(same_bits(rev.to_flat(), whole.to_flat()));
  // Flat round trip, and a flat element-wise sum is a merge.
  EXPECT_TRUE(same_bits(FeatureStats::from_flat(whole.to_flat()).to_flat(), whole.to_flat()));
}

TEST(Features, ExactSumIsOrderIndependent) {
  std::vector<double> xs = {1e20, 1.0, -1e20, 3.5e-10, 1e-30, -7.25, 123456789.123};
  ExactSum fwd, bwd;
  for (double x : xs) fwd.add(x);
  for (size_t i = xs.size(); i-- > 0;) bwd.add(xs[i]);
  double f = fwd.value(), b = bwd.value();
  EXPECT_EQ(std::memcmp(&f, &b, sizeof f), 0);
  EXPECT_NEAR(f, 1.0 + 3.5e-10 - 7.25 + 123456789.123, 1e-6);  // 1e20 cancels exactly
  EXPECT_THROW(fwd.add(INFINITY), Error);
}

TEST(Features, ConstantColumnsDropped) {
  auto graphs = random_graphs(3, 20);
  FeatureStats st = stats_of(graphs, 0, graphs.size());
  FeatureTransform t = fit_transform(st, {true, true});
  auto has = [&](int c) { return std::find(t.kept_columns.begin(), t.kept_columns.end(), c) != t.kept_columns.end(); };
  EXPECT_FALSE(has(1));
  EXPECT_FALSE(has(50));
  EXPECT_TRUE(has(0));
  EXPECT_EQ(t.kept_columns.size(), static_cast<size_t>(kNodeFeatDim - 2));
  FeatureTransform all = fit_transform(st, {false, true});
  EXPECT_EQ(all.kept_columns.size(), static_cast<size_t>(kNodeFeatDim));
  // Constant kept column: stddev floored to 1, values map to 0.
  size_t j50 = std::find(all.kept_columns.begin(), all.kept_columns.end(), 50) - all.kept_columns.begin();
  EXPECT_EQ(all.stddev[j50], 1.0);
  EXPECT_EQ(all.mean[j50], 7.5);
}

TEST(Features, LogRule) {
  auto graphs = random_graphs(4, 50);
  FeatureStats st = stats_of(graphs, 0, graphs.size());
  EXPECT_TRUE(is_heavy_tailed(st, 28));   // max > 1000
  EXPECT_TRUE(is_heavy_tailed(st, 30));   // max up to 500, mean|x| ~ 0.05
  EXPECT_FALSE(is_heavy_tailed(st, 0));   // small integers 0..5
  EXPECT_FALSE(is_heavy_tailed(st, 40));  // signed, |x| < 1
  FeatureTransform t = fit_transform(st, {true, true});
  for (size_t j = 0; j < t.kept_columns.size(); ++j)
    EXPECT_EQ(t.log1p[j] != 0, is_heavy_tailed(st, t.kept_columns[j])) << t.kept_columns[j];
  FeatureTransform nolog = fit_transform(st, {true, false});
  for (uint8_t l : nolog.log1p) EXPECT_EQ(l, 0);

  // Hand-made boundary cases of the rule.
  std::vector<float> f = zero_rows(200);
  f[0 * kNodeFeatDim + 2] = 1000.0f;   // col 2: max 1000 -> not > 1000, mean|x| 5 -> 1000 > 500
  f[0 * kNodeFeatDim + 3] = 16.0f;     // col 3: max 16 -> floor not passed
  f[0 * kNodeFeatDim + 4] = 1001.0f;   // col 4: max > 1000
  for (int i = 0; i < 200; ++i) f[i * kNodeFeatDim + 5] = 100.0f;  // col 5: large but flat
  f[0 * kNodeFeatDim + 5] = 900.0f;
  FeatureStats h;
  h.add_graph(f, 200);
  EXPECT_TRUE(is_heavy_tailed(h, 2));
  EXPECT_FALSE(is_heavy_tailed(h, 3));
  EXPECT_TRUE(is_heavy_tailed(h, 4));
  EXPECT_FALSE(is_heavy_tailed(h, 5));
}

TEST(Features, ApplyStandardizesTrainData) {
  auto graphs = random_graphs(5, 80);
  FeatureStats st = stats_of(graphs, 0, graphs.size());
  FeatureTransform t = fit_transform(st, {true, true});
  const size_t k = t.kept_columns.size();
  std::vector<long double> sum(k, 0), sq(k, 0);
  long double n = 0;
  for (const auto& g : graphs) {
    int64_t rows = g.size() / kNodeFeatDim;
    std::vector<float> out = apply_transform(t, g.data(), rows);
    ASSERT_EQ(out.size(), rows * k);
    for (int64_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < k; ++j) {
        sum[j] += out[i * k + j];
        sq[j] += static_cast<long double>(out[i * k + j]) * out[i * k + j];
      }
    n += rows;
  }
  for (size_t j = 0; j < k; ++j) {
    double mean = static_cast<double>(sum[j] / n), var = static_cast<double>(sq[j] / n) - mean * mean;
    EXPECT_NEAR(mean, 0.0, 1e-5) << "column " << t.kept_columns[j];
    EXPECT_NEAR(var, 1.0, 1e-4) << "column " << t.kept_columns[j];
  }
  // A hand-checked value: column 40 is linear.
  size_t j40 = std::find(t.kept_columns.begin(), t.kept_columns.end(), 40) - t.kept_columns.begin();
  ASSERT_EQ(t.log1p[j40], 0);
  std::vector<float> row(graphs[0].begin(), graphs[0].begin() + kNodeFeatDim);
  std::vector<float> one = apply_transform(t, row.data(), 1);
  EXPECT_EQ(one[j40], static_cast<float>((static_cast<double>(row[40]) - t.mean[j40]) / t.stddev[j40]));
}

TEST(Features, SameBitsOnRepeat) {
  auto graphs = random_graphs(6, 30);
  FeatureTransform t1 = fit_transform(stats_of(graphs, 0, graphs.size()), {true, true});
  FeatureTransform t2 = fit_transform(stats_of(graphs, 0, graphs.size()), {true, true});
  EXPECT_EQ(t1.kept_columns, t2.kept_columns);
  EXPECT_EQ(t1.log1p, t2.log1p);
  EXPECT_TRUE(same_bits(t1.mean, t2.mean));
  EXPECT_TRUE(same_bits(t1.stddev, t2.stddev));
  std::vector<float> a = apply_transform(t1, graphs[3].data(), graphs[3].size() / kNodeFeatDim);
  std::vector<float> b = apply_transform(t2, graphs[3].data(), graphs[3].size() / kNodeFeatDim);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Features, Errors) {
  FeatureStats empty;
  EXPECT_THROW(fit_transform(empty, {}), Error);
  EXPECT_THROW(FeatureStats::from_flat({1.0, 2.0}), Error);
  FeatureTransform bad;
  bad.kept_columns = {0};
  bad.log1p = {0};
  bad.mean = {0.0};
  bad.stddev = {0.0};
  std::vector<float> row = zero_rows(1);
  EXPECT_THROW(apply_transform(bad, row.data(), 1), Error);
  bad.stddev = {1.0};
  bad.kept_columns = {140};
  EXPECT_THROW(apply_transform(bad, row.data(), 1), Error);
}
