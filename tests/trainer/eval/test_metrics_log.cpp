// metrics.csv: rows append and read back at full precision, malformed files name the
// line, and the cross-validation score is the mean of each fold's kept oof score.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/base/error.h"
#include "common/base/files.h"
#include "tests/trainer/eval/metrics_fixtures.h"
#include "tests/test_util.h"
#include "trainer/eval/metrics_log.h"

using namespace tpuperf;
using testing::HasSubstr;

TEST(Metrics, AppendWritesHeaderOnceAndReadsBack) {
  TempDir dir;
  const std::string path = dir.path() + "/metrics.csv";
  MetricsRow a = row("tile:xla", 0, 1, 100, "train", 0.75, MetricsRow::kNone);
  a.configs_per_s = 1234.5;
  a.elapsed_s = 12.25;
  append_metrics(path, {a});
  MetricsRow v = row("layout:nlp:random", -1, 2, 200, "valid", MetricsRow::kNone, 0.125);
  v.slowdown = {1.5, 1.25, 1.0};
  v.slowdown_5_own = 1.375;
  append_metrics(path, {v});
  EXPECT_EQ(read_text_file(path),
            "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s,slowdown_1,slowdown_5,slowdown_10,"
            "slowdown_5_own\n"
            "tile:xla,0,1,100,train,0.75,,1234.5,12.25,,,,\n"
            "layout:nlp:random,-1,2,200,valid,,0.125,,,1.5,1.25,1,1.375\n");
  const auto rows = read_metrics(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].collection, "tile:xla");
  EXPECT_EQ(rows[0].step, 100);
  EXPECT_EQ(rows[0].loss, 0.75);
  EXPECT_TRUE(std::isnan(rows[0].score));
  EXPECT_EQ(rows[0].configs_per_s, 1234.5);
  EXPECT_EQ(rows[1].fold, -1);
  EXPECT_EQ(rows[1].epoch, 2);
  EXPECT_EQ(rows[1].split, "valid");
  EXPECT_EQ(rows[1].score, 0.125);
  EXPECT_TRUE(std::isnan(rows[0].slowdown[0]));
  EXPECT_EQ(rows[1].slowdown[0], 1.5);
  EXPECT_EQ(rows[1].slowdown[1], 1.25);
  EXPECT_EQ(rows[1].slowdown[2], 1.0);
  EXPECT_TRUE(std::isnan(rows[0].slowdown_5_own));
  EXPECT_EQ(rows[1].slowdown_5_own, 1.375);
}

// A metrics.csv begun before slowdown_5_own (the 12 columns of kMetricsHeaderV2) is read
// with NaN there and a resumed run appends to it in its 12 columns.
TEST(Metrics, FilesWithoutTheOwnTopFiveColumn) {
  TempDir dir;
  const std::string path = dir.path() + "/metrics.csv";
  write_file_atomic(path, std::string(kMetricsHeaderV2) + "\ntile:xla,0,1,100,oof,,0.5,,,2,1.25,1\n");
  MetricsRow next = row("tile:xla", 0, 2, 200, "oof", MetricsRow::kNone, 0.75);
  next.slowdown = {1.5, 1.0, 1.0};
  next.slowdown_5_own = 1.125;
  append_metrics(path, {next});
  EXPECT_EQ(read_text_file(path), std::string(kMetricsHeaderV2) +
                                      "\ntile:xla,0,1,100,oof,,0.5,,,2,1.25,1\n"
                                      "tile:xla,0,2,200,oof,,0.75,,,1.5,1,1\n");
  const auto rows = read_metrics(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].slowdown[0], 2.0);
  EXPECT_EQ(rows[1].slowdown[0], 1.5);
  for (const auto& r : rows) EXPECT_TRUE(std::isnan(r.slowdown_5_own));
  try {
    parse_metrics(std::string(kMetricsHeader) + "\ntile:xla,0,1,100,oof,,0.5,,,2,1.25,1\n", "m.csv");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("line 2: 12 fields, expected 13"));
  }
}

// A metrics.csv an earlier run began (no slowdown columns) is read with NaN slowdowns, and
// a resumed run appends to it in its own columns, so that it stays one table.
TEST(Metrics, FilesWithoutTheSlowdownColumns) {
  TempDir dir;
  const std::string path = dir.path() + "/metrics.csv";
  write_file_atomic(path,
                  "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s\n"
                  "tile:xla,0,1,100,oof,,0.5,,\n");
  MetricsRow next = row("tile:xla", 0, 2, 200, "oof", MetricsRow::kNone, 0.75);
  next.slowdown = {1.5, 1.0, 1.0};
  append_metrics(path, {next});
  EXPECT_EQ(read_text_file(path),
            "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s\n"
            "tile:xla,0,1,100,oof,,0.5,,\n"
            "tile:xla,0,2,200,oof,,0.75,,\n");
  const auto rows = read_metrics(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].score, 0.75);
  for (const auto& r : rows)
    for (double v : r.slowdown) EXPECT_TRUE(std::isnan(v));
  // A row of the old width under the new header is an error naming the line.
  try {
    parse_metrics(std::string(kMetricsHeader) + "\ntile:xla,0,1,100,oof,,0.5,,\n", "m.csv");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("line 2: 9 fields, expected 13"));
  }
}

TEST(Metrics, FullPrecisionRoundTrip) {
  TempDir dir;
  const std::string path = dir.path() + "/m.csv";
  append_metrics(path, {row("tile:xla", 0, 0, 0, "oof", 0.1234567891, 1.0 / 3.0)});
  EXPECT_NEAR(read_metrics(path)[0].score, 1.0 / 3.0, 1e-9);
}

TEST(Metrics, ParseErrorsNameTheLine) {
  const std::string h = std::string(kMetricsHeaderV1) + "\n";  // rows of 9 fields
  auto fails = [](const std::string& text, const std::string& fragment) {
    try {
      parse_metrics(text, "m.csv");
      ADD_FAILURE() << "no error for: " << text;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(fragment));
      EXPECT_THAT(e.what(), HasSubstr("m.csv"));
    }
  };
  fails("collection,fold\n", "header");
  fails(h + "tile:xla,0,1,1,train,1,,,\ntile:xla,x,1,1,train,1,,,\n", "line 3");
  fails(h + "tile:xla,0,1,1,train,1,,\n", "8 fields");
  fails(h + "tile:xla,0,1,1,test,1,,,\n", "split");
  fails(h + "tile:xla,0,1,1,oof,,abc,,\n", "'abc'");
}

TEST(Metrics, CommaInFieldRefused) {
  TempDir dir;
  EXPECT_THROW(append_metrics(dir.path() + "/m.csv", {row("a,b", 0, 0, 0, "oof", 1, 1)}), Error);
}

TEST(Metrics, CvScoreIsMeanOfKeptOofPerFold) {
  // Best (= last) epoch 2: fold 0 oof 0.7, fold 1 oof 0.9.
  EXPECT_NEAR(cv_score(tile_metrics(), "tile:xla"), 0.8, 1e-12);
  EXPECT_TRUE(std::isnan(cv_score(tile_metrics(), "layout:xla:random")));
  // A worse third epoch is not the kept one: fold 0 keeps 0.7 (epoch 2), fold 1 0.9.
  auto rows = tile_metrics();
  rows.push_back(row("tile:xla", 0, 3, 30, "oof", MetricsRow::kNone, 0.2));
  rows.push_back(row("tile:xla", 1, 3, 30, "oof", MetricsRow::kNone, 0.95));
  EXPECT_NEAR(cv_score(rows, "tile:xla"), (0.7 + 0.95) / 2, 1e-12);
}

TEST(Metrics, MeanAndTextOfMeasuredValues) {
  EXPECT_EQ(mean_finite({1.0, MetricsRow::kNone, 3.0}), 2.0);
  EXPECT_TRUE(std::isnan(mean_finite({MetricsRow::kNone})));
  EXPECT_TRUE(std::isnan(mean_finite({})));
  EXPECT_EQ(format_value(0.87654), "0.8765");
  EXPECT_EQ(format_value(2.5, 0), "2");
  EXPECT_EQ(format_value(MetricsRow::kNone), "n/a");
}
