#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "tests/test_util.h"
#include "common/error.h"
#include "common/files.h"
#include "trainer/eval/report.h"

using namespace tpuperf;
using testing::HasSubstr;

namespace {

MetricsRow row(const std::string& coll, int fold, int epoch, int64_t step, const std::string& split,
               double loss, double score) {
  MetricsRow r;
  r.collection = coll;
  r.fold = fold;
  r.epoch = epoch;
  r.step = step;
  r.split = split;
  r.loss = loss;
  r.score = score;
  return r;
}

// Two folds, two epochs of tile:xla: train losses, oof and valid scores.
std::vector<MetricsRow> tile_metrics() {
  const double N = MetricsRow::kNone;
  std::vector<MetricsRow> rows;
  for (int fold = 0; fold < 2; ++fold) {
    for (int epoch = 1; epoch <= 2; ++epoch) {
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10 - 5, "train", 2.0 / epoch + fold, N));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "train", 1.0 / epoch + fold, N));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "oof", N, 0.5 + 0.1 * epoch + 0.2 * fold));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "valid", N, 0.6 + 0.1 * epoch));
    }
  }
  return rows;
}

bool svg_parses(const std::string& path) {
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys, xml.dom.minidom; "
      "d = xml.dom.minidom.parse(sys.argv[1]); sys.exit(d.documentElement.tagName != 'svg')\" '" +
      path + "'";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

TEST(Metrics, AppendWritesHeaderOnceAndReadsBack) {
  TempDir dir;
  const std::string path = dir.path() + "/metrics.csv";
  MetricsRow a = row("tile:xla", 0, 1, 100, "train", 0.75, MetricsRow::kNone);
  a.configs_per_s = 1234.5;
  a.elapsed_s = 12.25;
  append_metrics(path, {a});
  append_metrics(path, {row("layout:nlp:random", -1, 2, 200, "valid", MetricsRow::kNone, 0.125)});
  EXPECT_EQ(read_text_file(path),
            "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s\n"
            "tile:xla,0,1,100,train,0.75,,1234.5,12.25\n"
            "layout:nlp:random,-1,2,200,valid,,0.125,,\n");
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
}

TEST(Metrics, FullPrecisionRoundTrip) {
  TempDir dir;
  const std::string path = dir.path() + "/m.csv";
  append_metrics(path, {row("tile:xla", 0, 0, 0, "oof", 0.1234567891, 1.0 / 3.0)});
  EXPECT_NEAR(read_metrics(path)[0].score, 1.0 / 3.0, 1e-9);
}

TEST(Metrics, ParseErrorsNameTheLine) {
  const std::string h = std::string(kMetricsHeader) + "\n";
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
  EXPECT_THAT(md, HasSubstr("| **overall** | 0.8000 | 0.5953 |"));
  // Per-fold table: fold 1's last epoch has losses 2/2+1 and 1/2+1 -> 1.75; kept epoch 2
  // with oof 0.9.
  EXPECT_THAT(md, HasSubstr("| fold 1 | 2 | 1.7500 | 2 | 0.9000 | 0.8456 |"));
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

TEST(Report, CurvesFileName) {
  EXPECT_EQ(curves_file_name("layout:xla:default"), "curves_layout_xla_default.svg");
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
