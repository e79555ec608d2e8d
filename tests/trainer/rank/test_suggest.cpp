// The batch of Ranker::suggest (trainer/rank/suggest.h) on scores built so that each rule
// decides the answer: the fold models' disagreement outweighs a small predicted gain when
// exploring and not otherwise, a batch leaves near-copies of its first pick for a distinct
// config, measured configs and their copies never come back, and bad options are named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/base/error.h"
#include "trainer/rank/suggest.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tpuperf::ConfigRows;

// n categorical rows of `width` columns, row i holding value i in every column (all distinct).
ConfigRows distinct_rows(int64_t n, int64_t width) {
  ConfigRows rows;
  rows.categorical = true;
  rows.width = width;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < width; ++j) rows.values.push_back(static_cast<float>(i));
  return rows;
}

tpuperf::SuggestOptions options(int64_t count, double exploration, double diversity) {
  tpuperf::SuggestOptions o;
  o.count = count;
  o.exploration = exploration;
  o.diversity = diversity;
  return o;
}

TEST(Suggest, DisagreementOutweighsASmallPredictedGainWhenExploring) {
  // Config 1 is predicted a little faster and the models agree on it; config 2 a little
  // slower, and they disagree about it by a lot.
  const std::vector<double> score = {1.0, -0.1, 0.0, 0.8};
  const std::vector<double> spread = {0.0, 0.0, 1.0, 0.0};
  const ConfigRows rows = distinct_rows(4, 3);
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, options(1, 0.0, 0.0)).configs, ElementsAre(1));
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, options(1, 1.0, 0.0)).configs, ElementsAre(2));
  const tpuperf::Suggestion all = tpuperf::suggest_configs(score, spread, rows, options(9, 0.0, 0.0));
  EXPECT_THAT(all.configs, ElementsAre(1, 2, 3, 0)) << "fewer candidates than asked: all of them, best first";
  // Scores and spreads come standardized over the candidates (mean 0.425, sd 0.4815).
  ASSERT_EQ(all.score.size(), 4u);
  EXPECT_NEAR(all.score[0], (-0.1 - 0.425) / 0.481534, 1e-5);
  EXPECT_NEAR(all.uncertainty[1], 1.0 / 0.481534, 1e-5);
}

TEST(Suggest, ABatchIsNotNearCopiesOfOneConfig) {
  // Configs 0..9 differ from each other in one of 10 columns (near-copies), all predicted
  // best; config 10 differs from them everywhere and is predicted a little slower.
  ConfigRows rows;
  rows.categorical = true;
  rows.width = 10;
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 10; ++j) rows.values.push_back(j == i ? 1.0f : 0.0f);
  for (int64_t j = 0; j < 10; ++j) rows.values.push_back(5.0f);
  // Configs 11..14, distinct and predicted slow, give the scores their spread.
  for (int64_t i = 11; i < 15; ++i)
    for (int64_t j = 0; j < 10; ++j) rows.values.push_back(static_cast<float>(i));
  std::vector<double> score(10, 0.0);
  score.push_back(0.1);
  score.resize(15, 2.0);
  const std::vector<double> spread(15, 0.0);
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, options(2, 0.0, 1.0)).configs, ElementsAre(0, 10));
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, options(2, 0.0, 0.0)).configs, ElementsAre(0, 1))
      << "without the diversity penalty the second pick is a near-copy";
}

TEST(Suggest, MeasuredConfigsAndCopiesNeverComeBack) {
  // Rows 0 and 3 are the same config, rows 1 and 4 too; 0 is measured.
  ConfigRows rows = distinct_rows(5, 2);
  rows.values[6] = rows.values[7] = 0.0f;  // row 3 := row 0
  rows.values[8] = rows.values[9] = 1.0f;  // row 4 := row 1
  const std::vector<double> score = {0.0, 0.1, 0.2, -1.0, -0.5};
  const std::vector<double> spread(5, 0.0);
  tpuperf::SuggestOptions o = options(5, 0.0, 0.0);
  o.exclude = {0};
  // 3 is a copy of the measured 0; of 1 and 4 only the first is suggested.
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, o).configs, ElementsAre(1, 2));
  // The same inputs, the same batch.
  EXPECT_EQ(tpuperf::suggest_configs(score, spread, rows, o).configs,
            tpuperf::suggest_configs(score, spread, rows, o).configs);
}

TEST(Suggest, TheRunsFirstPickOpensTheBatch) {
  // Config 0 is predicted slow; as the run's first pick it opens the batch, and the rest
  // follow by the rule. Row 3, a copy of row 0, is never suggested (measuring 0 measures it).
  ConfigRows rows = distinct_rows(5, 2);
  rows.values[6] = rows.values[7] = 0.0f;  // row 3 := row 0
  const std::vector<double> score = {1.0, 0.1, 0.2, -1.0, -0.5};
  const std::vector<double> spread(5, 0.0);
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, options(3, 0.0, 0.0)).configs, ElementsAre(4, 1, 2));
  const tpuperf::Suggestion first = tpuperf::suggest_configs(score, spread, rows, options(3, 0.0, 0.0), 0);
  EXPECT_THAT(first.configs, ElementsAre(0, 4, 1));
  ASSERT_EQ(first.score.size(), 3u);
  EXPECT_GT(first.score[0], first.score[1]) << "its own score, not the batch's best";
  // Measured (excluded), it is not suggested again.
  tpuperf::SuggestOptions o = options(2, 0.0, 0.0);
  o.exclude = {0};
  EXPECT_THAT(tpuperf::suggest_configs(score, spread, rows, o, 0).configs, ElementsAre(4, 1));
}

TEST(Suggest, BadOptionsAreNamed) {
  auto error_of = [](const tpuperf::SuggestOptions& o) {
    try {
      tpuperf::check_suggest_options(o, 10, "g");
    } catch (const tpuperf::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error_of(options(0, 1, 1)), HasSubstr("count"));
  EXPECT_THAT(error_of(options(1, -1, 1)), HasSubstr("exploration"));
  EXPECT_THAT(error_of(options(1, 1, std::nan(""))), HasSubstr("diversity"));
  tpuperf::SuggestOptions o = options(1, 1, 1);
  o.exclude = {10};
  EXPECT_THAT(error_of(o), HasSubstr("index 10 is not one of the 10 candidates"));
  EXPECT_THAT(error_of(o), HasSubstr("g"));
  EXPECT_EQ(error_of(options(3, 0, 0)), "");
}

}  // namespace
