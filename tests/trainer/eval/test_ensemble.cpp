#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/base/error.h"
#include "trainer/eval/ensemble.h"

using namespace tpuperf;
using testing::HasSubstr;

namespace {

GraphScores graph(int model, std::vector<int64_t> idx, std::vector<double> s,
                  const std::string& name = "g1") {
  GraphScores g;
  g.collection = "layout:xla:random";
  g.split = "valid";
  g.name = name;
  g.model = model;
  g.config_index = std::move(idx);
  g.score = std::move(s);
  return g;
}

// Model A scores configs 0..3 as 1, 2, 3, 4. Model B lists its configs in another order:
// by config index its scores are 0, 2, 8, 8.
std::vector<GraphScores> two_models() {
  return {graph(0, {0, 1, 2, 3}, {1, 2, 3, 4}), graph(1, {3, 2, 1, 0}, {8, 8, 2, 0})};
}

void expect_scores(const GraphScores& g, const std::vector<double>& want) {
  ASSERT_EQ(g.score.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g.score[i], want[i], 1e-12) << "config " << i;
}

}  // namespace

TEST(Ensemble, MeanRaw) {
  const auto e = ensemble_graph(two_models(), EnsembleMethod::MeanRaw);
  EXPECT_EQ(e.model, -1);
  EXPECT_EQ(e.config_index, (std::vector<int64_t>{0, 1, 2, 3}));
  expect_scores(e, {0.5, 2.0, 5.5, 6.0});
}

TEST(Ensemble, MeanZ) {
  // A: mean 2.5, population variance (2.25+0.25+0.25+2.25)/4 = 1.25.
  // B: mean 4.5, deviations -4.5 -2.5 3.5 3.5, variance 51/4 = 12.75.
  const double sa = std::sqrt(1.25), sb = std::sqrt(12.75);
  const auto e = ensemble_graph(two_models(), EnsembleMethod::MeanZ);
  expect_scores(e, {(-1.5 / sa - 4.5 / sb) / 2, (-0.5 / sa - 2.5 / sb) / 2,
                    (0.5 / sa + 3.5 / sb) / 2, (1.5 / sa + 3.5 / sb) / 2});
}

TEST(Ensemble, MeanRank) {
  // A ranks 1 2 3 4; B ranks 1 2 3.5 3.5 (the tie at 8 shares ranks 3 and 4).
  const auto e = ensemble_graph(two_models(), EnsembleMethod::MeanRank);
  expect_scores(e, {1.0, 2.0, 3.25, 3.75});
}

TEST(Ensemble, ConstantModelStandardizesToZeros) {
  EXPECT_EQ(standardize({3, 3, 3}), (std::vector<double>{0, 0, 0}));
  // So a constant model adds nothing: the ensemble is half the other model's z-scores.
  const auto e = ensemble_graph({graph(0, {0, 1}, {1, 3}), graph(1, {0, 1}, {7, 7})},
                                EnsembleMethod::MeanZ);
  expect_scores(e, {-0.5, 0.5});
}

TEST(Ensemble, AverageRanksWithTies) {
  EXPECT_EQ(average_ranks({5, 1, 5, 5, 0}), (std::vector<double>{4, 2, 4, 4, 1}));
}

TEST(Ensemble, MethodNames) {
  EXPECT_EQ(parse_ensemble_method("mean_z"), EnsembleMethod::MeanZ);
  EXPECT_EQ(parse_ensemble_method("mean_rank"), EnsembleMethod::MeanRank);
  EXPECT_EQ(parse_ensemble_method("mean_raw"), EnsembleMethod::MeanRaw);
  EXPECT_EQ(ensemble_method_name(EnsembleMethod::MeanRank), "mean_rank");
  try {
    parse_ensemble_method("median");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.key(), "output.ensemble");
    EXPECT_THAT(e.what(), HasSubstr("median"));
    EXPECT_THAT(e.what(), HasSubstr("mean_z"));
  }
}

TEST(Ensemble, DifferentConfigSetsNameTheGraph) {
  try {
    ensemble_graph({graph(0, {0, 1, 2}, {1, 2, 3}), graph(1, {0, 1, 5}, {1, 2, 3})},
                   EnsembleMethod::MeanZ);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("g1"));
    EXPECT_THAT(e.what(), HasSubstr("5"));
  }
  EXPECT_THROW(ensemble_graph({graph(0, {0, 1, 2}, {1, 2, 3}), graph(1, {0, 1}, {1, 2})},
                              EnsembleMethod::MeanRaw),
               Error);
  EXPECT_THROW(ensemble_graph({graph(0, {0, 1}, {1, 2}), graph(1, {0, 1}, {1, std::nan("")})},
                              EnsembleMethod::MeanRaw),
               Error);
  EXPECT_THROW(ensemble_graph({graph(0, {0, 1}, {1, 2}), graph(1, {0, 1}, {1, 2}, "other")},
                              EnsembleMethod::MeanRaw),
               Error);
}

TEST(Ensemble, AllGroupsByGraphAndJoinsSplitRecords) {
  auto models = two_models();
  // Model 1 of graph g1 arrives in two pieces (configs split over two ranks), and in
  // the opposite order from model 0.
  GraphScores b1 = graph(1, {3, 2}, {8, 8}), b2 = graph(1, {1, 0}, {2, 0});
  std::vector<GraphScores> all = {b1, graph(0, {0, 1}, {4, 5}, "g0"), b2, models[0],
                                  graph(1, {1, 0}, {1, 1}, "g0")};
  const auto out = ensemble_all(all, EnsembleMethod::MeanRaw);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "g0");
  expect_scores(out[0], {2.5, 3.0});
  EXPECT_EQ(out[1].name, "g1");
  EXPECT_EQ(out[1].config_index, (std::vector<int64_t>{0, 1, 2, 3}));  // model 0's order
  expect_scores(out[1], {0.5, 2.0, 5.5, 6.0});
}

TEST(Ensemble, SameConfigTwiceFromOneModelIsAnError) {
  EXPECT_THROW(ensemble_all({graph(0, {0, 1}, {1, 2}), graph(0, {0, 1}, {1, 2})},
                            EnsembleMethod::MeanRaw),
               Error);
}

// output.tile_ensemble_spread: a tile graph's score is the members' mean plus the spread
// weight times their (population) standard deviation; other collections and weight 0 keep
// the mean. By config index A = 1, 2, 3, 4 and B = 0, 2, 8, 8: mean 0.5, 2, 5.5, 6, sd 0.5,
// 0, 2.5, 2, so weight 2 gives 1.5, 2, 10.5, 10: config 3 now ranks before config 2, on
// which the models disagree more. With z-scores: A's are
// (-3, -1, 1, 3) / sqrt(5), B's (-4.5, -2.5, 3.5, 3.5) / sqrt(12.75).
TEST(Ensemble, TileSpreadAddsTheMembersStandardDeviation) {
  auto tile = two_models();
  for (auto& g : tile) g.collection = "tile:xla";
  expect_scores(ensemble_graph(tile, EnsembleMethod::MeanRaw, 2.0), {1.5, 2, 10.5, 10});
  expect_scores(ensemble_graph(tile, EnsembleMethod::MeanRaw, 0.0), {0.5, 2, 5.5, 6});
  expect_scores(ensemble_graph(two_models(), EnsembleMethod::MeanRaw, 2.0), {0.5, 2, 5.5, 6});  // layout
  const double a = std::sqrt(5.0), b = std::sqrt(12.75);
  const std::vector<double> za = {-3 / a, -1 / a, 1 / a, 3 / a}, zb = {-4.5 / b, -2.5 / b, 3.5 / b, 3.5 / b};
  std::vector<double> want;
  for (size_t i = 0; i < 4; ++i) want.push_back((za[i] + zb[i]) / 2 + 0.5 * std::fabs(za[i] - zb[i]));
  expect_scores(ensemble_graph(tile, EnsembleMethod::MeanZ, 1.0), want);
  // One model has no spread; ensemble_all passes the weight on.
  expect_scores(ensemble_graph({tile[0]}, EnsembleMethod::MeanRaw, 2.0), {1, 2, 3, 4});
  const auto all = ensemble_all(tile, EnsembleMethod::MeanRaw, 2.0);
  ASSERT_EQ(all.size(), 1u);
  expect_scores(all[0], {1.5, 2, 10.5, 10});
}
