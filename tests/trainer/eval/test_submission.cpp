#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/base/error.h"
#include "common/base/files.h"
#include "trainer/eval/submission.h"

using namespace tpuperf;
using testing::HasSubstr;

namespace {

GraphScores graph(const std::string& coll, const std::string& split, const std::string& name,
                  std::vector<int64_t> idx, std::vector<double> s) {
  GraphScores g;
  g.collection = coll;
  g.split = split;
  g.name = name;
  g.config_index = std::move(idx);
  g.score = std::move(s);
  return g;
}

// Tile: ascending 0.1 (1), 0.1 (3, tie broken by index), 0.2 (5), 0.3 (2), 0.5 (0).
GraphScores tile7() {
  return graph("tile:xla", "test", "3ba8", {0, 1, 2, 3, 4, 5, 6},
               {0.5, 0.1, 0.3, 0.1, 0.9, 0.2, 0.7});
}
// Layout, configs listed out of order: by index the scores are 5, 0, 0, -1.
GraphScores layout4() {
  return graph("layout:nlp:random", "test", "0a1b", {2, 0, 3, 1}, {0.0, 5.0, -1.0, 0.0});
}

std::string expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_submission(text, "sub.csv");
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fragment));
    EXPECT_THAT(e.what(), HasSubstr("sub.csv"));
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

}  // namespace

TEST(Submission, TopConfigs) {
  EXPECT_EQ(top_configs(tile7()), (std::vector<int64_t>{1, 3, 5, 2, 0}));
  EXPECT_EQ(top_configs(layout4()), (std::vector<int64_t>{3, 1, 2, 0}));
  // Fewer than 5 tile configs: all of them.
  EXPECT_EQ(top_configs(graph("tile:xla", "test", "t", {0, 1, 2}, {3, 1, 2})),
            (std::vector<int64_t>{1, 2, 0}));
}

TEST(Submission, TileKeepsTheDefault) {
  // Config 0 (score 0.5) is 5th already: nothing changes.
  EXPECT_EQ(top_configs(tile7(), TileDefault{true}), (std::vector<int64_t>{1, 3, 5, 2, 0}));
  // Config 0 scored worst: it replaces the 5th (config 2).
  GraphScores g = tile7();
  g.score[0] = 9.0;
  EXPECT_EQ(top_configs(g, TileDefault{false}), (std::vector<int64_t>{1, 3, 5, 2, 6}));
  EXPECT_EQ(top_configs(g, TileDefault{true}), (std::vector<int64_t>{1, 3, 5, 2, 0}));
  // Listed out of order: config 0 is found by index, not by position.
  EXPECT_EQ(top_configs(graph("tile:xla", "test", "t", {5, 4, 3, 2, 1, 0}, {1, 2, 3, 4, 5, 6}), TileDefault{true}),
            (std::vector<int64_t>{5, 4, 3, 2, 0}));
  // Config 0 not scored (an evaluation subset): the plain top 5.
  EXPECT_EQ(top_configs(graph("tile:xla", "test", "t", {1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}), TileDefault{true}),
            (std::vector<int64_t>{6, 5, 4, 3, 2}));
  // Layout rows are full permutations either way.
  EXPECT_EQ(top_configs(layout4(), TileDefault{true}), (std::vector<int64_t>{3, 1, 2, 0}));
  EXPECT_EQ(format_submission(make_submission({g}, TileDefault{true})), "ID,TopConfigs\ntile:xla:3ba8,1;3;5;2;0\n");
}

TEST(Submission, TileDefaultFirst) {
  // Config 0 (score 0.5, 5th by score) first, the rest in score order.
  const TileDefault first{true, true};
  EXPECT_EQ(top_configs(tile7(), first), (std::vector<int64_t>{0, 1, 3, 5, 2}));
  EXPECT_EQ(ranked_configs(tile7(), first), (std::vector<int64_t>{0, 1, 3, 5, 2, 6, 4}));
  // Scored worst: first all the same; the 5 hold the same configs as with keep alone.
  GraphScores g = tile7();
  g.score[0] = 9.0;
  EXPECT_EQ(top_configs(g, first), (std::vector<int64_t>{0, 1, 3, 5, 2}));
  std::vector<int64_t> kept = top_configs(g, TileDefault{true}), put_first = top_configs(g, first);
  std::sort(kept.begin(), kept.end());
  std::sort(put_first.begin(), put_first.end());
  EXPECT_EQ(kept, put_first);
  // Without keep, and scored best already: unchanged.
  EXPECT_EQ(top_configs(g, TileDefault{false, true}), (std::vector<int64_t>{0, 1, 3, 5, 2}));
  g.score[0] = -1.0;
  EXPECT_EQ(top_configs(g, first), top_configs(g));
  // Listed out of order: config 0 found by index.
  EXPECT_EQ(top_configs(graph("tile:xla", "test", "t", {5, 4, 3, 2, 1, 0}, {1, 2, 3, 4, 5, 6}), first),
            (std::vector<int64_t>{0, 5, 4, 3, 2}));
  // Config 0 not scored: the plain order; layout ignores the rule.
  EXPECT_EQ(top_configs(graph("tile:xla", "test", "t", {1, 2, 3}, {3, 2, 1}), first), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(top_configs(layout4(), first), (std::vector<int64_t>{3, 1, 2, 0}));
  EXPECT_EQ(format_submission(make_submission({tile7(), layout4()}, first)),
            "ID,TopConfigs\nlayout:nlp:random:0a1b,3;1;2;0\ntile:xla:3ba8,0;1;3;5;2\n");
}

TEST(Submission, ExactText) {
  const std::vector<GraphScores> scores = {
      tile7(), layout4(), graph("tile:xla", "valid", "ignored", {0}, {1.0})};
  EXPECT_EQ(format_submission(make_submission(scores)),
            "ID,TopConfigs\n"
            "layout:nlp:random:0a1b,3;1;2;0\n"
            "tile:xla:3ba8,1;3;5;2;0\n");
}

TEST(Submission, LayoutNeedsEveryConfig) {
  try {
    top_configs(graph("layout:xla:default", "test", "g", {0, 1, 3}, {1, 2, 3}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("layout:xla:default:g"));
    EXPECT_THAT(e.what(), HasSubstr("config 2"));
  }
  EXPECT_THROW(top_configs(graph("layout:xla:default", "test", "g", {0, 1, 1}, {1, 2, 3})), Error);
}

TEST(Submission, GraphTwiceOrUnknownCollection) {
  EXPECT_THROW(make_submission({tile7(), tile7()}), Error);
  EXPECT_THROW(make_submission({graph("tile:nlp", "test", "x", {0}, {1})}), Error);
}

TEST(Submission, WriteAndReadBack) {
  char tmpl[] = "/tmp/tpuperf_test_submission.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/submission.csv";
  write_submission(path, {tile7(), layout4()});
  const Submission back = read_submission(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("tile:xla:3ba8"), (std::vector<int64_t>{1, 3, 5, 2, 0}));
  EXPECT_EQ(back.at("layout:nlp:random:0a1b"), (std::vector<int64_t>{3, 1, 2, 0}));
  std::filesystem::remove_all(tmpl);
}

TEST(Submission, ParseToleratesCrlfAndBlankLines) {
  const auto s = parse_submission("ID,TopConfigs\r\ntile:xla:a,4;0\r\n\r\n", "x.csv");
  EXPECT_EQ(s.at("tile:xla:a"), (std::vector<int64_t>{4, 0}));
}

TEST(Submission, ParseErrorsNameLineAndReason) {
  expect_error("ID,Configs\n", "header");
  expect_error("", "header");
  expect_error("ID,TopConfigs\ntile:xla:a,1;2\ntile:xla:b,1;x;3\n", "line 3");
  expect_error("ID,TopConfigs\ntile:xla:b,1;x;3\n", "'x'");
  expect_error("ID,TopConfigs\ntile:xla:b,1;;3\n", "not a config index");
  expect_error("ID,TopConfigs\ntile:xla:b,1;-2\n", "'-2'");
  expect_error("ID,TopConfigs\ntile:xla:b,\n", "not a config index");
  expect_error("ID,TopConfigs\ntile:xla:b,1;2;1\n", "config 1 appears twice");
  expect_error("ID,TopConfigs\ntile:xla:b 1;2\n", "line 2: expected 2 comma-separated");
  expect_error("ID,TopConfigs\ntile:xla:b,1,2\n", "expected 2 comma-separated");
  expect_error("ID,TopConfigs\n,1;2\n", "empty ID");
  expect_error("ID,TopConfigs\ntile:xla:b,1\ntile:xla:b,2\n", "line 3: ID repeated");
}

TEST(Submission, MissingFileNamed) {
  try {
    read_submission("/nonexistent/sub.csv");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/sub.csv"));
  }
}
