// Progress lines name their unit and show MB/s only for work measured in bytes.
#include <gtest/gtest.h>

#include <cmath>

#include "common/base/progress.h"

namespace tpuperf {
namespace {

TEST(Progress, LineNamesTheUnitAndLeavesOutMbPerSecondWithoutBytes) {
  Progress steps("tile:xla fold 0 epoch 1/8", 20, 0, 1e9, "steps");
  for (int i = 0; i < 5; ++i) steps.tick(0);
  const std::string line = steps.line();
  EXPECT_EQ(line.rfind("tile:xla fold 0 epoch 1/8: 5/20 steps (25%), ", 0), 0u) << line;
  EXPECT_NE(line.find(" steps/s, elapsed "), std::string::npos) << line;
  EXPECT_EQ(line.find("MB/s"), std::string::npos) << line;
  EXPECT_EQ(line.find("files"), std::string::npos) << line;
}

TEST(Progress, FilesWithBytesShowMbPerSecondAndProgressByBytes) {
  Progress files("preprocess", 4, 1000, 1e9);
  files.tick(750);
  const std::string line = files.line();
  // 1 of 4 files but 75% of the bytes: the percentage and ETA go by bytes.
  EXPECT_EQ(line.rfind("preprocess: 1/4 files (75%), ", 0), 0u) << line;
  EXPECT_NE(line.find(" files/s, "), std::string::npos) << line;
  EXPECT_NE(line.find(" MB/s, elapsed "), std::string::npos) << line;
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-3), "0s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(std::nan("")), "n/a");
  // The report's precision: tenths under a minute, the same above.
  EXPECT_EQ(format_duration(42.44, 1), "42.4s");
  EXPECT_EQ(format_duration(59.96, 1), "1m00s");
  EXPECT_EQ(format_duration(125, 1), "2m05s");
  EXPECT_EQ(format_duration(3723, 1), "1h02m");
}

}  // namespace
}  // namespace tpuperf
