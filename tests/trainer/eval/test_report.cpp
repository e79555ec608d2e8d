// report.md: the numbers of every collection, fold and baseline, the charts it links, and
// a report without metrics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "tests/trainer/eval/metrics_fixtures.h"
#include "trainer/eval/report.h"

using namespace tpuperf;
using testing::HasSubstr;

TEST(Report, MarkdownHoldsTheNumbersAndSvgsParse) {
  TempDir dir;
  ReportInput in;
  in.ensemble = "mean_z";
  in.folds = 2;
  in.notes = {"config: configs/demo.yaml"};
  CollectionReport tile;
  tile.collection = "tile:xla";
  tile.cv_score = cv_score(tile_metrics(), "tile:xla");
  tile.valid_ensemble = 0.8765;
  tile.valid_per_fold = {0.8123, 0.8456};
  tile.valid_random = 0.4321;
  tile.valid_default_first = 0.5678;
  tile.valid_graphs = 12;
  tile.train_seconds = 125;
  tile.configs_per_s = 3456.7;
  CollectionReport lay;
  lay.collection = "layout:nlp:random";
  lay.valid_ensemble = 0.3141;
  in.collections = {tile, lay};
  in.metrics = tile_metrics();
  in.metrics.push_back(row("layout:nlp:random", 0, 1, 3, "train", 0.5, MetricsRow::kNone));

  const std::string md_path = write_report(dir.path(), in);
  EXPECT_EQ(md_path, dir.path() + "/report.md");
  const std::string md = read_text_file(md_path);
  for (const char* s : {"0.8000", "0.8765", "0.8123 / 0.8456", "0.4321", "0.5678", "| 12 |",
                        "2m05s", "3457", "0.3141", "mean_z", "configs/demo.yaml",
                        "![Learning curves of tile:xla](curves_tile_xla.svg)",
                        "![Learning curves of layout:nlp:random](curves_layout_nlp_random.svg)"})
    EXPECT_THAT(md, HasSubstr(s));
  // Overall row: mean of the valid ensemble scores (0.8765 + 0.3141) / 2.
  EXPECT_THAT(md, HasSubstr("| **overall** | 0.8000 | n/a | 0.5953 | n/a |"));
  // Per-fold table: fold 1's last epoch has losses 2/2+1 and 1/2+1 -> 1.75; kept epoch 2
  // with oof 0.9.
  EXPECT_THAT(md, HasSubstr("| fold 1 | 2 | 1.7500 | 2 | 0.9000 | n/a | 0.8456 |"));
  // Default-first is n/a for layout.
  EXPECT_THAT(md, HasSubstr("n/a"));

  for (const char* svg : {"curves_tile_xla.svg", "curves_layout_nlp_random.svg"}) {
    const std::string p = dir.path() + "/" + svg;
    ASSERT_TRUE(std::filesystem::exists(p)) << p;
    EXPECT_TRUE(svg_parses(p)) << p;
  }
  const std::string svg = read_text_file(dir.path() + "/curves_tile_xla.svg");
  EXPECT_THAT(svg, HasSubstr("fold 0"));
  EXPECT_THAT(svg, HasSubstr("fold 1"));
  EXPECT_THAT(svg, HasSubstr("epoch"));
  EXPECT_THAT(svg, HasSubstr("<polyline"));
}

TEST(Report, EmptyMetricsStillWritesReport) {
  TempDir dir;
  ReportInput in;
  CollectionReport c;
  c.collection = "tile:xla";
  in.collections = {c};
  const std::string md = read_text_file(write_report(dir.path(), in));
  EXPECT_THAT(md, HasSubstr("No metrics rows"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/curves_tile_xla.svg"));
}

// The kept epoch of each fold is its best oof row; the report averages those rows'
// slowdowns over the folds and prints them beside the valid ensemble's and a random order's.
TEST(Report, SlowdownsOfTheKeptEpochs) {
  std::vector<MetricsRow> rows = tile_metrics();  // oof: fold 0 0.6, 0.7; fold 1 0.8, 0.9
  for (auto& r : rows)
    if (r.split == "oof") {
      r.slowdown = {1.0 + r.epoch + 10 * r.fold, 1.0, MetricsRow::kNone};
      r.slowdown_5_own = 1.0 + 0.5 * r.epoch + r.fold;
    }
  // Kept: epoch 2 of both folds -> top-1 (3 + 13) / 2 = 8; top-10 never measured; own
  // top-5 (2 + 3) / 2 = 2.5.
  const auto kept = kept_oof_slowdowns(rows, "tile:xla");
  EXPECT_DOUBLE_EQ(kept[0], 8.0);
  EXPECT_DOUBLE_EQ(kept[1], 1.0);
  EXPECT_TRUE(std::isnan(kept[2]));
  EXPECT_TRUE(std::isnan(kept_oof_slowdowns(rows, "layout:xla:random")[0]));
  EXPECT_DOUBLE_EQ(kept_oof_own_slowdown_5(rows, "tile:xla"), 2.5);
  EXPECT_TRUE(std::isnan(kept_oof_own_slowdown_5(rows, "layout:xla:random")));

  ReportInput in;
  CollectionReport tile;
  tile.collection = "tile:xla";
  tile.cv_score = 0.85;
  tile.valid_ensemble = 0.9375;
  tile.kept_oof_slowdown = kept;
  tile.kept_oof_own5 = 2.5;
  tile.valid_slowdown = {1.25, 1.0625, 1.0};
  tile.valid_own5 = 1.125;
  tile.valid_random_slowdown = {1.5, 1.125, MetricsRow::kNone};
  in.collections = {tile};
  in.metrics = rows;
  const std::string md = report_markdown(in);
  EXPECT_THAT(md, HasSubstr("| tile:xla | 8.000 / 1.000 / n/a | 2.500 | 1.250 / 1.062 / 1.000 | 1.125 | "
                            "1.500 / 1.125 / n/a |"));
  // The summary gives each score's top-1 beside it (CV 0.85 with the kept epochs' 8, the
  // valid ensemble's 0.9375 with its 1.25), and the fold table each kept epoch's.
  EXPECT_THAT(md, HasSubstr("| tile:xla | 0.8500 | 8.000 | 0.9375 | 1.250 |"));
  EXPECT_THAT(md, HasSubstr("| **overall** | 0.8500 | 8.000 | 0.9375 | 1.250 |"));
  EXPECT_THAT(md, HasSubstr("| fold 0 | 2 | 0.7500 | 2 | 0.7000 | 3.000 |"));
  EXPECT_THAT(md, HasSubstr("| fold 1 | 2 | 1.7500 | 2 | 0.9000 | 13.000 |"));
}
