#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <filesystem>

#include "common/base/error.h"
#include "common/formats/npz_writer.h"
#include "trainer/eval/scoring.h"

using namespace tpuperf;
using testing::HasSubstr;

namespace {

TruthGraph tile(const std::string& name, std::vector<int64_t> runtimes,
                std::vector<int64_t> normalizers = {}) {
  TruthGraph t;
  t.collection = Collection::parse("tile:xla");
  t.name = name;
  if (normalizers.empty()) normalizers.assign(runtimes.size(), 1);
  t.runtimes = std::move(runtimes);
  t.normalizers = std::move(normalizers);
  return t;
}

TruthGraph layout(const std::string& coll, const std::string& name, std::vector<int64_t> runtimes) {
  TruthGraph t;
  t.collection = Collection::parse(coll);
  t.name = name;
  t.runtimes = std::move(runtimes);
  return t;
}

// y = runtime / normalizer = 10 8 4 6 9 7 5: the best is config 2 (y 4).
TruthGraph tile7() { return tile("t7", {20, 16, 12, 6, 9, 7, 5}, {2, 2, 3, 1, 1, 1, 1}); }

}  // namespace

TEST(Scoring, TileBestInTopFiveIsOne) {
  EXPECT_DOUBLE_EQ(score_row({6, 5, 4, 3, 2, 0}, tile7()), 1.0);  // 2 is 5th
}

TEST(Scoring, TileBestMissedHandValue) {
  // Top 5 = 0 1 3 4 5 with y 10 8 6 9 7: best predicted 6, true best 4: 2 - 6/4 = 0.5.
  // Config 2 in 6th place does not count.
  EXPECT_DOUBLE_EQ(score_row({0, 1, 3, 4, 5, 2}, tile7()), 0.5);
}

TEST(Scoring, TileRowTooShortOrOutOfRange) {
  EXPECT_THROW(score_row({2, 0}, tile7()), Error);
  try {
    score_row({0, 1, 3, 4, 9}, tile7());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tile:xla:t7"));
  }
  // A graph with 3 configs needs only 3.
  EXPECT_DOUBLE_EQ(score_row({1, 0, 2}, tile("t3", {5, 4, 6})), 1.0);
}

TEST(Scoring, PositionsAsScores) {
  EXPECT_EQ(positions_as_scores({2, 0, 1}, 3), (std::vector<double>{1, 2, 0}));
  EXPECT_THROW(positions_as_scores({2, 0}, 3), Error);
  EXPECT_THROW(positions_as_scores({2, 0, 0}, 3), Error);
  EXPECT_THROW(positions_as_scores({2, 0, 3}, 3), Error);
}

TEST(Scoring, LayoutKendallViaPositions) {
  const TruthGraph t = layout("layout:xla:random", "l", {30, 10, 20, 40});
  EXPECT_DOUBLE_EQ(score_row({1, 2, 0, 3}, t), 1.0);
  EXPECT_DOUBLE_EQ(score_row({3, 0, 2, 1}, t), -1.0);
  // Order 2 1 0 3 -> positions (2, 1, 0, 3); of the 6 pairs only (1, 2) is discordant:
  // tau = (5 - 1) / 6.
  EXPECT_NEAR(score_row({2, 1, 0, 3}, t), 4.0 / 6.0, 1e-12);
  EXPECT_THROW(score_row({1, 2, 0}, t), Error);
}

TEST(Scoring, RandomBaselineDeterministic) {
  const TruthGraph t = layout("layout:nlp:default", "l", {5, 3, 9, 1, 7, 2, 8, 6});
  const double a = random_baseline(t, 11), b = random_baseline(t, 11);
  EXPECT_EQ(a, b);
  EXPECT_NE(random_baseline(t, 11), random_baseline(t, 12));
  EXPECT_GE(a, -1.0);
  EXPECT_LE(a, 1.0);
  // Two configs: each draw's tau is +1 or -1, so the mean of 5 draws is a multiple of 0.4.
  const double two = random_baseline(layout("layout:nlp:default", "two", {1, 2}), 3, 5);
  EXPECT_NEAR(std::remainder(two + 1.0, 0.4), 0.0, 1e-12);
  // Five tile configs: any top 5 holds the best.
  EXPECT_DOUBLE_EQ(random_baseline(tile("t5", {5, 3, 9, 4, 7}), 1), 1.0);
}

TEST(Scoring, DefaultFirstBaseline) {
  EXPECT_DOUBLE_EQ(default_first_baseline(tile7()), 1.0);  // 0..4 holds config 2
  // Best is config 6 (4); configs 0..4 reach 6 at best: 2 - 6/4.
  EXPECT_DOUBLE_EQ(default_first_baseline(tile("t", {10, 8, 6, 7, 9, 12, 4})), 0.5);
  EXPECT_TRUE(std::isnan(default_first_baseline(layout("layout:xla:default", "l", {1, 2}))));
}

TEST(Scoring, SubmissionPerCollectionAndOverall) {
  const std::vector<TruthGraph> truth = {
      tile7(), tile("t8", {10, 8, 6, 7, 9, 12, 4}),
      layout("layout:xla:random", "l", {30, 10, 20, 40}),
      layout("layout:xla:random", "flat", {5, 5, 5}),  // constant runtimes: tau undefined
  };
  Submission sub;
  sub["tile:xla:t7"] = {2, 0, 1, 3, 4};             // 1.0
  sub["tile:xla:t8"] = {0, 1, 2, 3, 4};             // 0.5
  sub["layout:xla:random:l"] = {2, 1, 0, 3};        // 2/3
  sub["layout:xla:random:flat"] = {0, 1, 2};        // NaN, skipped
  sub["layout:nlp:random:other"] = {0};             // not in the truth
  const SubmissionScore s = score_submission(sub, truth);
  ASSERT_EQ(s.collections.size(), 2u);
  const CollectionScore& l = s.collections[0];
  const CollectionScore& t = s.collections[1];
  EXPECT_EQ(l.collection, "layout:xla:random");
  EXPECT_EQ(l.graphs, 2);
  EXPECT_EQ(l.skipped, 1);
  EXPECT_NEAR(l.score, 4.0 / 6.0, 1e-12);
  EXPECT_TRUE(std::isnan(l.default_first));
  EXPECT_EQ(t.collection, "tile:xla");
  EXPECT_EQ(t.graphs, 2);
  EXPECT_EQ(t.skipped, 0);
  EXPECT_DOUBLE_EQ(t.score, 0.75);
  EXPECT_DOUBLE_EQ(t.default_first, 0.75);  // 1.0 and 0.5
  EXPECT_NEAR(s.overall, (0.75 + 4.0 / 6.0) / 2, 1e-12);
  EXPECT_NEAR(s.overall_random, (t.random + l.random) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(s.overall_default_first));
  EXPECT_EQ(s.extra_ids, (std::vector<std::string>{"layout:nlp:random:other"}));
  // Same inputs, same baselines.
  EXPECT_EQ(score_submission(sub, truth).collections[0].random, l.random);

  // Top-1 / top-5 / top-10 slowdowns (best target of the first k over the best), by hand:
  // t7 (y 10 8 4 6 9 7 5): 4/4, 4/4, and no top-10 from a row of 5 of 7 configs;
  // t8 (y 10 8 6 7 9 12 4): 10/4, 6/4, none; l (30 10 20 40): 20/10, then all 4: 1, 1;
  // flat: 1, 1, 1.
  ASSERT_EQ(s.graphs.size(), 4u);
  EXPECT_EQ(s.graphs[1].id, "tile:xla:t8");
  EXPECT_DOUBLE_EQ(s.graphs[1].slowdown[0], 2.5);
  EXPECT_DOUBLE_EQ(s.graphs[1].slowdown[1], 1.5);
  EXPECT_TRUE(std::isnan(s.graphs[1].slowdown[2]));
  EXPECT_DOUBLE_EQ(t.slowdown[0], (1.0 + 2.5) / 2);
  EXPECT_DOUBLE_EQ(t.slowdown[1], (1.0 + 1.5) / 2);
  EXPECT_TRUE(std::isnan(t.slowdown[2]));
  EXPECT_DOUBLE_EQ(l.slowdown[0], (2.0 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(l.slowdown[1], 1.0);
  EXPECT_DOUBLE_EQ(l.slowdown[2], 1.0);
  // Default first (config 0 first, all configs ranked): t7 10/4, 4/4, 1; t8 10/4, 6/4, 1.
  EXPECT_DOUBLE_EQ(t.default_first_slowdown[0], 2.5);
  EXPECT_DOUBLE_EQ(t.default_first_slowdown[1], 1.25);
  EXPECT_DOUBLE_EQ(t.default_first_slowdown[2], 1.0);
  EXPECT_TRUE(std::isnan(l.default_first_slowdown[0]));
  // Random orders rank every config: their top-k slowdowns are defined, at least 1, and
  // do not grow with k.
  for (const CollectionScore* c : {&t, &l}) {
    EXPECT_GE(c->random_slowdown[0], c->random_slowdown[1]);
    EXPECT_GE(c->random_slowdown[1], c->random_slowdown[2]);
    EXPECT_GE(c->random_slowdown[2], 1.0);
  }
}

TEST(Scoring, MissingGraphsListed) {
  const std::vector<TruthGraph> truth = {tile7(), tile("t8", {1, 2}), tile("t9", {1, 2})};
  Submission sub;
  sub["tile:xla:t7"] = {2, 0, 1, 3, 4};
  try {
    score_submission(sub, truth);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("2 of 3"));
    EXPECT_THAT(e.what(), HasSubstr("tile:xla:t8"));
    EXPECT_THAT(e.what(), HasSubstr("tile:xla:t9"));
  }
}

TEST(Scoring, LoadTruth) {
  char tmpl[] = "/tmp/tpuperf_test_scoring.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  std::filesystem::create_directories(root + "/truth/tile/xla/test");
  std::filesystem::create_directories(root + "/truth/layout/nlp/default/test");
  {
    NpzWriter w(root + "/truth/tile/xla/test/abc.npz", true);
    w.add<int64_t>("config_runtime", {7, 3}, {2});
    w.add<int64_t>("config_runtime_normalizers", {1, 2}, {2});
    w.close();
    NpzWriter l(root + "/truth/layout/nlp/default/test/def.npz", false);
    l.add<int64_t>("config_runtime", {4, 5, 6}, {3});
    l.close();
  }
  const auto truth = load_truth(root);  // the synth root: its truth/ is used
  ASSERT_EQ(truth.size(), 2u);
  EXPECT_EQ(truth[0].id(), "tile:xla:abc");
  EXPECT_EQ(truth[0].runtimes, (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(truth[0].normalizers, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(truth[1].id(), "layout:nlp:default:def");
  EXPECT_EQ(truth[1].runtimes, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(load_truth(root + "/truth").size(), 2u);  // the truth tree itself
  EXPECT_THROW(load_truth(root, "valid"), Error);     // nothing there

  {  // hidden runtimes (all zero) must not be scored as if they were real
    NpzWriter z(root + "/truth/layout/nlp/default/test/zero.npz", false);
    z.add<int64_t>("config_runtime", {0, 0}, {2});
    z.close();
  }
  try {
    load_truth(root);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("zero.npz"));
  }
  std::filesystem::remove_all(root);
}
