// Training settings read from the config: the steps of an epoch (a one-pass epoch has a
// floor, an explicit count wins) and the default models.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config.h"
#include "common/error.h"
#include "trainer/models/registry.h"
#include "trainer/train/settings.h"

namespace tpuperf {
namespace {

TrainSettings settings_of(std::vector<std::string> overrides) {
  register_model_choices();
  overrides.push_back("data.processed_dir=/tmp/p");
  overrides.push_back("output.dir=/tmp/o");
  return TrainSettings(Config::load("", overrides));
}

TEST(TrainSettings, OnePassEpochsHaveAFloor) {
  const TrainSettings s = settings_of({});
  EXPECT_EQ(s.steps_per_epoch(Kind::Layout, 1), 20);    // 6 graphs, 8 per step: one step
  EXPECT_EQ(s.steps_per_epoch(Kind::Tile, 714), 714);   // the release's tile pass
  const TrainSettings floor5 = settings_of({"train.min_steps_per_epoch=5"});
  EXPECT_EQ(floor5.steps_per_epoch(Kind::Layout, 2), 5);
  EXPECT_EQ(floor5.steps_per_epoch(Kind::Layout, 26), 26);
  EXPECT_THROW(settings_of({"train.min_steps_per_epoch=0"}), Error);
}

TEST(TrainSettings, ExplicitStepsWinOverThePassAndTheFloor) {
  const TrainSettings s = settings_of({"train.steps_per_epoch=3", "train.tile_steps_per_epoch=7"});
  EXPECT_EQ(s.steps_per_epoch(Kind::Tile, 500), 7);
  EXPECT_EQ(s.steps_per_epoch(Kind::Layout, 500), 3);
}

TEST(TrainSettings, DefaultModelsAreTheShapeAwareOnes) {
  const TrainSettings s = settings_of({});
  EXPECT_EQ(s.tile_arch, "early_join_shape");
  EXPECT_EQ(s.layout_arch, "sage_shape");
  EXPECT_EQ(settings_of({"model.layout.arch=sage"}).layout_arch, "sage");
}

}  // namespace
}  // namespace tpuperf
