// The learning-curve SVG: its file name, a document that parses, one series per fold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/base/files.h"
#include "tests/trainer/eval/metrics_fixtures.h"
#include "tests/test_util.h"
#include "trainer/eval/charts.h"

using namespace tpuperf;
using testing::HasSubstr;

TEST(Charts, CurvesFileName) {
  EXPECT_EQ(curves_file_name("layout:xla:default"), "curves_layout_xla_default.svg");
}

TEST(Charts, LearningCurvesNameFoldsAndParse) {
  TempDir dir;
  const std::string svg = learning_curves_svg(tile_metrics(), "tile:xla");
  for (const char* s : {"Learning curves: tile:xla", "fold 0", "fold 1", "epoch", "<polyline",
                        "stroke-dasharray"})
    EXPECT_THAT(svg, HasSubstr(s));
  write_file_atomic(dir.file("c.svg"), svg);
  EXPECT_TRUE(svg_parses(dir.file("c.svg")));
  EXPECT_THAT(learning_curves_svg(tile_metrics(), "layout:xla:random"), HasSubstr("no data"));
}

TEST(Charts, FoldLabels) {
  EXPECT_EQ(fold_label(2), "fold 2");
  EXPECT_EQ(fold_label(-1), "ensemble");
}
