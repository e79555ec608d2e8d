// tpuperf-synth's converged-search runtime shape: converged-search files have issue 20's
// statistics, and their incumbent is a local optimum of the cost model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/graph.h"
#include "common/metrics.h"
#include "pipeline/synth/converged_search.h"
#include "pipeline/synth/layout_gen.h"

using namespace tpuperf;
using namespace tpuperf::synth;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// ---------------------------------------------------------------- converged search shape

TEST(ConvergedSearch, IncumbentIsALocalOptimum) {
  Rng rng(11);
  LayoutProgram prog = build_layout_program(make_model("xla", 1, 1200, 150, rng), 1200, 150, rng);
  make_layout_options(prog.problem, "random", rng);
  const auto best = local_search_best(prog.problem);
  const LayoutCostModel model(prog.problem);
  const double t = model.runtime_ns(best);
  EXPECT_LE(t, model.runtime_ns(std::vector<int>(best.size(), 0)));
  for (size_t g = 0; g < best.size(); ++g)
    for (int o = 0; o < static_cast<int>(prog.problem.options[g].size()); ++o) {
      auto other = best;
      other[g] = o;
      EXPECT_GE(model.runtime_ns(other), t) << "group " << g << " option " << o;
    }
}

// Issue 20's statistics of a real layout file: 37% re-measurements, median within 0.2%
// of the best, 10th percentile equal to it, a tail of several x, first and second
// measurements at Kendall tau 0.66. Bounds around those, on programs of both sources.
TEST(ConvergedSearch, FilesHaveTheRealRuntimeShape) {
  for (uint64_t seed : {1, 2, 3}) {
    for (const std::string source : {"xla", "nlp"}) {
      Rng rng(seed);
      LayoutProgram prog =
          build_layout_program(make_model(source, seed, 1200, 150, rng), 1200, 150, rng);
      make_layout_options(prog.problem, "random", rng);
      const LayoutGraph g = make_converged_layout_graph("c", prog, 3000, rng);
      validate(g);
      ASSERT_EQ(g.num_configs(), 3000);
      std::vector<double> rt(g.config_runtime.begin(), g.config_runtime.end());
      std::vector<double> sorted = rt;
      std::sort(sorted.begin(), sorted.end());
      const double best = sorted.front();
      const std::string what = source + " seed " + std::to_string(seed);
      EXPECT_EQ(sorted[sorted.size() / 10], best) << what;
      EXPECT_LE(median(rt) / best, 1.0025) << what;
      EXPECT_GE(sorted.back() / best, 1.3) << what;
      // Re-measurements: rows equal to an earlier row; first and second measurements.
      const size_t row = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
      std::map<std::vector<int8_t>, std::vector<double>> by_config;
      for (size_t i = 0; i < rt.size(); ++i) {
        auto begin = g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(i * row);
        by_config[std::vector<int8_t>(begin, begin + static_cast<std::ptrdiff_t>(row))].push_back(rt[i]);
      }
      const double remeasured = 1.0 - static_cast<double>(by_config.size()) / static_cast<double>(rt.size());
      EXPECT_GE(remeasured, 0.28) << what;
      EXPECT_LE(remeasured, 0.5) << what;
      std::vector<double> first, second;
      for (const auto& [config, values] : by_config)
        if (values.size() >= 2) first.push_back(values[0]), second.push_back(values[1]);
      const double tau = kendall_tau(first, second);  // scipy's tau-b (test_metrics)
      EXPECT_GE(tau, 0.4) << what;
      EXPECT_LE(tau, 0.85) << what;
    }
  }
}
