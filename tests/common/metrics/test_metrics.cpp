// The metrics module against hand-computed values, a naive O(n^2) Kendall tau-b written
// here from the definition, and scipy.stats.kendalltau as the external reference.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/metrics/metrics.h"

namespace tpuperf {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const float kNaNf = std::numeric_limits<float>::quiet_NaN();

// Tau-b from its definition: (C - D) / sqrt((C + D + Tx) (C + D + Ty)), where Tx counts
// pairs tied only in x and Ty pairs tied only in y.
double naive_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
  double c = 0, d = 0, tx = 0, ty = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;
      if (dx == 0) {
        ++tx;
      } else if (dy == 0) {
        ++ty;
      } else if ((dx > 0) == (dy > 0)) {
        ++c;
      } else {
        ++d;
      }
    }
  }
  const double denom = std::sqrt((c + d + tx) * (c + d + ty));
  return denom == 0 ? kNaN : (c - d) / denom;
}

TEST(KendallTau, HandComputedCases) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  // Pairs (0,1) C, (0,2) C, (1,2) D: (2 - 1) / 3.
  EXPECT_NEAR(kendall_tau({1, 2, 3}, {1, 3, 2}), 1.0 / 3.0, 1e-15);
  // One pair tied only in x, one only in y, four concordant: 4 / sqrt(5 * 5).
  EXPECT_NEAR(kendall_tau({1, 1, 2, 3}, {1, 2, 2, 3}), 0.8, 1e-15);
  // A pair tied in both is left out of every count: C = 5, Tx = Ty = 0 -> 5 / 5.
  EXPECT_NEAR(kendall_tau({1, 1, 2, 3}, {5, 5, 6, 7}), 1.0, 1e-15);
  // x = (1, 2, 2, 3), y = (2, 1, 3, 3): (0,1) D, (0,2) C, (0,3) C, (1,2) Tx, (1,3) C,
  // (2,3) Ty -> (3 - 1) / sqrt(5 * 5) = 0.4.
  EXPECT_NEAR(kendall_tau({1, 2, 2, 3}, {2, 1, 3, 3}), 0.4, 1e-15);
}

TEST(KendallTau, UndefinedCasesAreNaN) {
  EXPECT_TRUE(std::isnan(kendall_tau({}, {})));
  EXPECT_TRUE(std::isnan(kendall_tau({1}, {2})));
  EXPECT_TRUE(std::isnan(kendall_tau({3, 3, 3}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(kendall_tau({1, 2, 3}, {7, 7, 7})));
  EXPECT_TRUE(std::isnan(kendall_tau({1, kNaN, 3}, {1, 2, 3})));
  EXPECT_THROW(kendall_tau({1, 2}, {1, 2, 3}), Error);
}

TEST(KendallTau, MatchesNaiveDefinitionOnRandomInputs) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 60);
    const int levels = 1 + static_cast<int>(rng() % 8);  // few levels -> many ties
    std::vector<double> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<double>(rng() % levels);
      y[i] = static_cast<double>(rng() % (levels + 3));
    }
    const double expected = naive_tau_b(x, y), got = kendall_tau(x, y);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << "trial " << trial;
    } else {
      EXPECT_NEAR(got, expected, 1e-12) << "trial " << trial;
    }
  }
}

// Writes cases to a file, lets scipy compute tau for each and reads the answers back.
std::vector<double> scipy_taus(
    const std::vector<std::pair<std::vector<double>, std::vector<double>>>& cases) {
  char tmpl[] = "/tmp/tpuperf_metrics_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string in = std::string(dir) + "/cases.txt", out = std::string(dir) + "/taus.txt",
                    script = std::string(dir) + "/ref.py";
  {
    std::ofstream f(in);
    f.precision(17);
    for (const auto& [a, b] : cases) {
      f << a.size() << "\n";
      for (double v : a) f << v << " ";
      f << "\n";
      for (double v : b) f << v << " ";
      f << "\n";
    }
  }
  {
    std::ofstream f(script);
    f << "import sys\n"
         "from scipy.stats import kendalltau\n"
         "lines = open(sys.argv[1]).read().split('\\n')\n"
         "res = []\n"
         "for i in range(0, len(lines) - 2, 3):\n"
         "    a = [float(v) for v in lines[i + 1].split()]\n"
         "    b = [float(v) for v in lines[i + 2].split()]\n"
         "    res.append(repr(float(kendalltau(a, b)[0])))\n"
         "open(sys.argv[2], 'w').write('\\n'.join(res) + '\\n')\n";
  }
  const std::string cmd = "/usr/bin/python3 " + script + " " + in + " " + out;
  const int rc = std::system(cmd.c_str());
  std::vector<double> taus;
  std::ifstream f(out);
  std::string line;
  while (std::getline(f, line)) taus.push_back(line == "nan" ? kNaN : std::stod(line));
  std::filesystem::remove_all(dir);
  if (rc != 0) throw std::runtime_error("'" + cmd + "' failed: is python3-scipy installed?");
  return taus;
}

TEST(KendallTau, MatchesScipy) {
  std::mt19937_64 rng(2024);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> cases;
  const std::vector<int> sizes = {2, 3, 4, 5, 7, 10, 33, 34, 100, 257, 1000, 2000};
  for (int n : sizes) {
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<double> a(n), b(n);
      std::normal_distribution<double> normal(0.0, 1.0);
      for (int i = 0; i < n; ++i) {
        switch (variant) {
          case 0:  // continuous, correlated
            a[i] = normal(rng);
            b[i] = a[i] + normal(rng);
            break;
          case 1:  // heavy ties in both, like quantized runtimes and tied scores
            a[i] = static_cast<double>(rng() % 5);
            b[i] = static_cast<double>(rng() % 3) * 1.5;
            break;
          case 2:  // ties only in b, anti-correlated
            a[i] = normal(rng);
            b[i] = std::round(-a[i] * 2.0);
            break;
          default:  // large runtimes with a few discrete levels
            a[i] = 1e9 + static_cast<double>(rng() % 4) * 1e6;
            b[i] = normal(rng) * 1e-3;
        }
      }
      cases.emplace_back(a, b);
    }
  }
  cases.push_back({{5, 5, 5}, {1, 2, 3}});  // constant: NaN in scipy too
  std::vector<double> big_a(100000), big_b(100000);
  for (size_t i = 0; i < big_a.size(); ++i) {
    big_a[i] = static_cast<double>(rng() % 1000);
    big_b[i] = big_a[i] + static_cast<double>(rng() % 500);
  }
  cases.emplace_back(big_a, big_b);

  const std::vector<double> ref = scipy_taus(cases);
  ASSERT_EQ(ref.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const double got = kendall_tau(cases[i].first, cases[i].second);
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(got)) << "case " << i;
    } else {
      EXPECT_NEAR(got, ref[i], 1e-9) << "case " << i << " n=" << cases[i].first.size();
    }
  }
}

TEST(Ranking, AscendingStableWithNaNLast) {
  EXPECT_EQ(ranking_from_scores(std::vector<double>{0.5, -1.0, 0.5, 2.0, -1.0}),
            (std::vector<int64_t>{1, 4, 0, 2, 3}));
  EXPECT_EQ(ranking_from_scores(std::vector<float>{kNaNf, 1.f, kNaNf, 0.f}),
            (std::vector<int64_t>{3, 1, 0, 2}));
  EXPECT_TRUE(ranking_from_scores(std::vector<double>{}).empty());
}

TEST(TileScore, HandExamples) {
  const std::vector<double> y = {3.0, 2.0, 4.0, 1.0, 5.0, 6.0, 8.0};
  // Best config (3, y = 1) among the first 5 -> 1.
  EXPECT_DOUBLE_EQ(tile_slowdown_score({0, 1, 2, 4, 3}, y), 1.0);
  // Best of the top 5 is y = 2 -> 2 - 2 / 1 = 0.
  EXPECT_DOUBLE_EQ(tile_slowdown_score({6, 5, 4, 2, 1, 3}, y), 0.0);
  // Only the first k count: the best is 6th.
  EXPECT_DOUBLE_EQ(tile_slowdown_score({0, 6, 5, 4, 2, 3}, y), 2.0 - 3.0);
  EXPECT_DOUBLE_EQ(tile_slowdown_score({2}, y, 1), 2.0 - 4.0);
  // Fewer predictions than k: use what is there.
  EXPECT_DOUBLE_EQ(tile_slowdown_score({1, 0}, y), 0.0);
  // Targets are runtime / normalizer: config 1 is 12/4 = 3, config 0 is 10/2 = 5.
  EXPECT_DOUBLE_EQ(tile_slowdown_score({0}, {10, 12}, {2, 4}, 1), 2.0 - 5.0 / 3.0);
  // From scores: lower is faster, so the two lowest scores are configs 3 and 1.
  EXPECT_DOUBLE_EQ(tile_slowdown_score_from_scores({0.3, 0.1, 0.9, 0.2, 1, 1, 1}, y, 2), 1.0);
  EXPECT_DOUBLE_EQ(tile_slowdown_score_from_scores({0.3, 0.1, 0.9, 5.0, 1, 1, 1}, y, 2), 0.0);
}

TEST(TileScore, TopKKeepsTheDefault) {
  const std::vector<double> s = {0.3, 0.1, 0.9, 0.2, 1.0, 0.5, 0.7};  // ranking 1 3 0 5 6 2 4
  EXPECT_EQ(tile_top_k(s, 3), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(tile_top_k(s, 3, 0), (std::vector<int64_t>{1, 3, 0}));   // already in
  EXPECT_EQ(tile_top_k(s, 3, 4), (std::vector<int64_t>{1, 3, 4}));   // replaces the 3rd
  EXPECT_EQ(tile_top_k(s, 1, 2), (std::vector<int64_t>{2}));
  EXPECT_EQ(tile_top_k({0.2, 0.1}, 5, 0), (std::vector<int64_t>{1, 0}));  // fewer than k
  EXPECT_THROW(tile_top_k(s, 3, 7), Error);
  EXPECT_THROW(tile_top_k(s, 0), Error);
  // The model ranks the slow configs 2 and 4 first; the default (config 0, y = 3) caps the
  // loss: without it 2 - 4/1 = -2, with it 2 - 3/1 = -1.
  const std::vector<double> y = {3.0, 2.0, 4.0, 1.0, 5.0, 6.0, 8.0};
  const std::vector<double> bad = {0.5, 0.9, 0.1, 0.8, 0.2, 0.7, 0.6};
  EXPECT_DOUBLE_EQ(tile_slowdown_score_from_scores(bad, y, 2), -2.0);
  EXPECT_DOUBLE_EQ(tile_slowdown_score_from_scores(bad, y, 2, 0), -1.0);
}

TEST(TileScore, RejectsBadInput) {
  EXPECT_THROW(tile_slowdown_score({7}, {1.0, 2.0}), Error);
  EXPECT_THROW(tile_slowdown_score({-1}, {1.0, 2.0}), Error);
  EXPECT_THROW(tile_slowdown_score({}, {1.0, 2.0}), Error);
  EXPECT_THROW(tile_slowdown_score({0}, std::vector<double>{}), Error);
  EXPECT_THROW(tile_slowdown_score({0}, {10, 12}, {2, 0}), Error);
  EXPECT_THROW(tile_slowdown_score_from_scores({0.1}, {1.0, 2.0}), Error);
}

TEST(TopKSlowdown, HandExamples) {
  // Runtimes of 6 configs; the best is config 4 (50).
  const std::vector<double> y = {80.0, 100.0, 60.0, 120.0, 50.0, 75.0};
  const std::vector<int64_t> order = {2, 0, 5, 4, 1, 3};
  EXPECT_DOUBLE_EQ(top_k_slowdown(order, y, 1), 60.0 / 50.0);  // 1.2: the pick is 20% slower
  EXPECT_DOUBLE_EQ(top_k_slowdown(order, y, 3), 60.0 / 50.0);  // best of 60, 80, 75
  EXPECT_DOUBLE_EQ(top_k_slowdown(order, y, 4), 1.0);          // config 4 is 4th
  EXPECT_DOUBLE_EQ(top_k_slowdown(order, y, 10), 1.0);         // k beyond the configs: all of them
  EXPECT_DOUBLE_EQ(top_k_slowdown({3, 1, 0, 5, 2, 4}, y, 1), 120.0 / 50.0);
  // A prediction shorter than min(k, configs) cannot tell: NaN (a tile row of 5, k = 10).
  EXPECT_TRUE(std::isnan(top_k_slowdown({2, 0, 5, 4, 1}, y, 10)));
  EXPECT_DOUBLE_EQ(top_k_slowdown({2, 0, 5, 4, 1}, y, 5), 1.0);
  // The tile score is 2 minus the top-5 slowdown of the same targets.
  EXPECT_DOUBLE_EQ(tile_slowdown_score(order, y), 2.0 - top_k_slowdown(order, y, 5));
  EXPECT_THROW(top_k_slowdown({6}, y, 1), Error);
  EXPECT_THROW(top_k_slowdown({0}, {0.0, 1.0}, 1), Error);
}

TEST(LayoutScore, KendallOfScoresAgainstRuntimes) {
  EXPECT_DOUBLE_EQ(layout_kendall_score({0.1, 0.2, 0.3}, {100, 200, 300}), 1.0);
  EXPECT_DOUBLE_EQ(layout_kendall_score({0.3, 0.2, 0.1}, {100, 200, 300}), -1.0);
}

TEST(EvalSampling, DeterministicSortedSubset) {
  const auto s1 = sample_eval_configs(5000, 1000, 42, "layout:xla:random:g1");
  const auto s2 = sample_eval_configs(5000, 1000, 42, "layout:xla:random:g1");
  EXPECT_EQ(s1, s2);
  ASSERT_EQ(s1.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(s1.begin(), s1.end()));
  EXPECT_EQ(std::set<int64_t>(s1.begin(), s1.end()).size(), 1000u);
  EXPECT_GE(s1.front(), 0);
  EXPECT_LT(s1.back(), 5000);
  // Spread over the whole range, not a prefix.
  EXPECT_GT(s1.back(), 4000);
  EXPECT_NE(s1, sample_eval_configs(5000, 1000, 42, "layout:xla:random:g2"));
  EXPECT_NE(s1, sample_eval_configs(5000, 1000, 43, "layout:xla:random:g1"));
  EXPECT_EQ(sample_eval_configs(3, 1000, 1, "g"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(sample_eval_configs(0, 10, 1, "g").empty());
}

TEST(ScoreAverager, MeansPerCollectionAndOverall) {
  ScoreAverager avg;
  avg.add("tile:xla", 0.9);
  avg.add("tile:xla", 0.7);
  avg.add("layout:xla:random", 0.5);
  avg.add("layout:xla:random", kNaN);
  avg.add("layout:nlp:default", kNaN);
  const auto s = avg.summary();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].collection, "layout:nlp:default");
  EXPECT_TRUE(std::isnan(s[0].mean));
  EXPECT_EQ(s[0].skipped, 1);
  EXPECT_EQ(s[1].collection, "layout:xla:random");
  EXPECT_DOUBLE_EQ(s[1].mean, 0.5);
  EXPECT_EQ(s[1].graphs, 1);
  EXPECT_EQ(s[1].skipped, 1);
  EXPECT_DOUBLE_EQ(s[2].mean, 0.8);
  EXPECT_DOUBLE_EQ(avg.mean("tile:xla"), 0.8);
  EXPECT_TRUE(std::isnan(avg.mean("nope")));
  EXPECT_DOUBLE_EQ(avg.overall(), (0.8 + 0.5) / 2);
}

}  // namespace
}  // namespace tpuperf
