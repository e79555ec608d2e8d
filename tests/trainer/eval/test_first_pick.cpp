#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/base/error.h"
#include "common/base/files.h"
#include "tests/test_util.h"
#include "trainer/eval/first_pick.h"

using namespace tpuperf;
using testing::HasSubstr;

TEST(FirstPick, AutoPutsConfigZeroFirstOnlyWhereItWasFasterOnValid) {
  // The demo's under-trained model: its first pick 1.576x the best on average, config 0 1.222x.
  FirstPick p = choose_first_pick("auto", true, 30, 1.576, 1.222);
  EXPECT_TRUE(p.default_first);
  EXPECT_EQ(p.setting, "auto");
  EXPECT_EQ(p.valid_graphs, 30);
  // The bench tree at the defaults: the model's 1.04 against 1.30.
  EXPECT_FALSE(choose_first_pick("auto", true, 30, 1.04, 1.30).default_first);
  // A tie keeps the model.
  EXPECT_FALSE(choose_first_pick("auto", true, 30, 1.2, 1.2).default_first);
  // Nothing to compare on: the model.
  EXPECT_FALSE(choose_first_pick("auto", true, 0, FirstPick::kNone, FirstPick::kNone).default_first);
  EXPECT_FALSE(choose_first_pick("auto", true, 5, 1.5, FirstPick::kNone).default_first);
  // output.tile_keep_default off says config 0 is not the compiler default: auto keeps the model.
  const FirstPick off = choose_first_pick("auto", false, 30, 1.576, 1.222);
  EXPECT_FALSE(off.default_first);
  EXPECT_TRUE(off.measured());
  EXPECT_THAT(describe_first_pick("tile:xla", off), HasSubstr("output.tile_keep_default is off"));
  EXPECT_TRUE(choose_first_pick("default", false, 30, 1.0, 2.0).default_first);
}

TEST(FirstPick, RuleOfACollection) {
  std::map<std::string, FirstPick> picks;
  picks["tile:xla"] = choose_first_pick("auto", true, 30, 1.576, 1.222);
  const TileDefault rule = tile_default_of(picks, "tile:xla", true);
  EXPECT_TRUE(rule.keep);
  EXPECT_TRUE(rule.first);
  EXPECT_FALSE(tile_default_of(picks, "tile:xla", false).keep);
  // No decision: the fallback (output.tile_first_pick: default without a file).
  EXPECT_FALSE(tile_default_of({}, "tile:xla", true).first);
  EXPECT_TRUE(tile_default_of({}, "tile:xla", true, true).first);
}

TEST(FirstPick, FixedSettingsIgnoreTheEvidence) {
  EXPECT_TRUE(choose_first_pick("default", true, 30, 1.0, 2.0).default_first);
  EXPECT_TRUE(choose_first_pick("default", true, 0, FirstPick::kNone, FirstPick::kNone).default_first);
  EXPECT_FALSE(choose_first_pick("model", true, 30, 2.0, 1.0).default_first);
  const std::string e = error_of([] { choose_first_pick("first", true, 30, 1.0, 1.0); });
  EXPECT_THAT(e, HasSubstr("output.tile_first_pick"));
  EXPECT_THAT(e, HasSubstr("'first'"));
}

TEST(FirstPick, DescriptionNamesTheDecisionAndItsEvidence) {
  const std::string auto_default = describe_first_pick("tile:xla", choose_first_pick("auto", true, 30, 1.576, 1.222));
  EXPECT_THAT(auto_default, HasSubstr("tile:xla: first pick config 0 (the compiler default)"));
  EXPECT_THAT(auto_default, HasSubstr("30 valid graphs"));
  EXPECT_THAT(auto_default, HasSubstr("1.576"));
  EXPECT_THAT(auto_default, HasSubstr("1.222"));
  EXPECT_THAT(describe_first_pick("tile:xla", choose_first_pick("auto", true, 30, 1.04, 1.3)),
              HasSubstr("first pick the model's best-scored config"));
  EXPECT_THAT(describe_first_pick("tile:xla", choose_first_pick("auto", true, 0, FirstPick::kNone, FirstPick::kNone)),
              HasSubstr("no valid graphs"));
  EXPECT_THAT(describe_first_pick("tile:xla", choose_first_pick("model", true, 30, 2.0, 1.0)),
              HasSubstr("set by output.tile_first_pick: model"));
}

TEST(FirstPick, FileRoundTripsAndIsOptional) {
  const TempDir tmp("first_pick");
  const std::string& dir = tmp.path();
  EXPECT_TRUE(read_first_picks(dir).empty());  // an older run's directory
  std::map<std::string, FirstPick> picks;
  picks["tile:xla"] = choose_first_pick("auto", true, 30, 1.576, 1.222);
  picks["tile:other"] = choose_first_pick("auto", true, 0, FirstPick::kNone, FirstPick::kNone);
  write_first_picks(dir, picks);
  const auto back = read_first_picks(dir);
  ASSERT_EQ(back.size(), 2u);
  const FirstPick& a = back.at("tile:xla");
  EXPECT_TRUE(a.default_first);
  EXPECT_EQ(a.setting, "auto");
  EXPECT_EQ(a.valid_graphs, 30);
  EXPECT_DOUBLE_EQ(a.valid_top1_model, 1.576);
  EXPECT_DOUBLE_EQ(a.valid_top1_default, 1.222);
  EXPECT_TRUE(a.keep_default);
  const FirstPick& b = back.at("tile:other");
  EXPECT_FALSE(b.default_first);
  EXPECT_FALSE(b.measured());
  EXPECT_TRUE(std::isnan(b.valid_top1_model));  // written as null
  EXPECT_TRUE(std::isnan(b.valid_top1_default));
}

TEST(FirstPick, BadFileIsNamed) {
  const TempDir tmp("first_pick_bad");
  const std::string& dir = tmp.path();
  const std::string path = dir + "/" + kFirstPickFile;
  write_file_atomic(path, "{\"tile:xla\": {\"setting\": \"auto\", \"default_first\": 1, \"valid_graphs\": 3, "
                          "\"valid_top1_model\": 1.0, \"valid_top1_default\": 1.0, \"keep_default\": true}}\n");
  const std::string e = error_of([&] { read_first_picks(dir); });
  EXPECT_THAT(e, HasSubstr(path));
  EXPECT_THAT(e, HasSubstr("default_first"));
  write_file_atomic(path, "{\"tile:xla\": {\"setting\": \"auto\"");
  EXPECT_THROW(read_first_picks(dir), Error);
}
