// How each collection is pruned (common/graph/prune_rules.h): the schema's hops and bridges,
// the per-collection list, overrides, bad entries, and the saved settings of runs from
// before the list and the bridges existed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/config/config.h"
#include "common/base/error.h"
#include "common/graph/prune_rules.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

namespace {

const char* const kLayoutIds[] = {"layout:xla:default", "layout:xla:random", "layout:nlp:default",
                                  "layout:nlp:random"};

void expect_rule(const PruneRules& rules, const std::string& id, int hops, int bridges) {
  EXPECT_EQ(rules.of(id).hops, hops) << id;
  EXPECT_EQ(rules.of(id).bridges, bridges) << id;
}

}  // namespace

TEST(PruneRules, SchemaPrunesEveryCollectionByOneHopAndBridgesThreePrunedNodes) {
  const PruneRules rules(Config::load("", {}));
  for (const char* id : kLayoutIds) expect_rule(rules, id, 1, 3);
  EXPECT_EQ(rules.describe(), "hops: 1; bridges through 3 pruned nodes");
}

TEST(PruneRules, TheListReplacesTheHopsOnlyForTheCollectionsItNames) {
  const PruneRules rules(Config::load("", {"preprocess.prune_hops=3", "preprocess.prune_bridges=0",
                                           "preprocess.prune_hops_by_collection=[layout:nlp:random = -1, "
                                           "layout:xla:random=0]"}));
  expect_rule(rules, "layout:nlp:random", -1, 0);
  expect_rule(rules, "layout:xla:random", 0, 0);
  expect_rule(rules, "layout:xla:default", 3, 0);
  expect_rule(rules, "layout:nlp:default", 3, 0);
  EXPECT_EQ(rules.describe(),
            "hops: layout:nlp:random -1, layout:xla:random 0, others 3; bridges through 0 pruned nodes");
}

TEST(PruneRules, BadEntriesNameTheListKey) {
  auto with = [](const std::string& list) {
    return error_of([&] { PruneRules(Config::load("", {"preprocess.prune_hops_by_collection=" + list})); });
  };
  EXPECT_THAT(with("[layout:xla:default]"), HasSubstr("expected collection=hops"));
  EXPECT_THAT(with("[layout:xla:default=-2]"),
              HasSubstr("'preprocess.prune_hops_by_collection': in 'layout:xla:default=-2': value -2 is out of range"));
  EXPECT_THAT(with("[layout:xla:default=two]"), HasSubstr("preprocess.prune_hops_by_collection"));
  EXPECT_THAT(with("[layout:xla:fast=2]"), HasSubstr("preprocess.prune_hops_by_collection"));
  EXPECT_THAT(with("[tile:xla=2]"), HasSubstr("tile:xla is not a layout collection"));
  EXPECT_THAT(with("[layout:xla:default=2, layout:xla:default=1]"), HasSubstr("given twice"));
  EXPECT_THAT(with("[tile:xla=2]"), HasSubstr("--set"));  // where the list came from
  const TempDir dir;
  const std::string file = dir.file("bad.yaml");
  std::ofstream(file) << "preprocess:\n  prune_hops_by_collection: [tile:xla=2]\n";
  EXPECT_THAT(error_of([&] { PruneRules(Config::load(file, {})); }), HasSubstr(file));
}

TEST(PruneRules, SavedSettingsReadKeysTheyPredateAsTheirDataWasPruned) {
  // Settings saved before the list and the bridges existed hold only prune_hops: that run
  // pruned every collection by it, with no bridges, and so must a reader of its settings
  // (the ranker, tpuperf-inspect --compare).
  const Config old_settings = Config::from_text("preprocess:\n  prune_hops: 3\n", "old settings");
  for (const char* id : kLayoutIds) expect_rule(PruneRules::saved(old_settings), id, 3, 0);
  // Read as a config a user wrote, the same text takes the schema's bridges.
  expect_rule(PruneRules(old_settings), "layout:xla:default", 3, 3);
  // Settings that hold the keys are read as they are.
  const PruneRules saved = PruneRules::saved(Config::from_text(
      "preprocess:\n  prune_hops: 1\n  prune_bridges: 2\n  prune_hops_by_collection: [layout:nlp:default=3]\n",
      "new settings"));
  expect_rule(saved, "layout:nlp:default", 3, 2);
  expect_rule(saved, "layout:xla:default", 1, 2);
  // What a run saves (Config::save dumps every key) reads back as it was.
  const TempDir dir;
  const std::string file = dir.file("settings.yaml");
  Config::load("", {"preprocess.prune_bridges=5"}).save(file);
  expect_rule(PruneRules::saved(Config::load(file, {})), "layout:nlp:random", 1, 5);
  Config::load("", {}).save(file);
  expect_rule(PruneRules::saved(Config::load(file, {})), "layout:nlp:random", 1, 3);
}

TEST(PruneRules, BadBridgesNameTheKey) {
  EXPECT_THAT(error_of([] { PruneRules(Config::load("", {"preprocess.prune_bridges=-1"})); }),
              HasSubstr("preprocess.prune_bridges"));
}
