// How each collection is pruned (common/graph/prune_rules.h): the schema's hops and bridges,
// a collection's own in its collections: section, overrides, bad entries, and the saved
// settings of runs from before the section and the bridges existed.
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

TEST(PruneRules, ACollectionsSectionSetsItsOwnHopsAndBridges) {
  const PruneRules rules(Config::load("", {"preprocess.prune_hops=3", "preprocess.prune_bridges=0",
                                           "collections.layout:nlp:random.preprocess.prune_hops=-1",
                                           "collections.layout:xla:random={preprocess.prune_hops: 0}",
                                           "collections.layout:nlp:default.preprocess.prune_bridges=2"}));
  expect_rule(rules, "layout:nlp:random", -1, 0);
  expect_rule(rules, "layout:xla:random", 0, 0);
  expect_rule(rules, "layout:xla:default", 3, 0);
  expect_rule(rules, "layout:nlp:default", 3, 2);
  EXPECT_EQ(rules.describe(),
            "hops: layout:nlp:random -1, layout:xla:random 0, others 3; bridges through layout:nlp:default 2, "
            "others 0 pruned nodes");
  EXPECT_THROW(rules.of("tile:xla"), Error);
}

TEST(PruneRules, BadEntriesNameTheSectionEntry) {
  auto with = [](const std::string& entry) { return error_of([&] { PruneRules(Config::load("", {entry})); }); };
  EXPECT_THAT(with("collections.layout:xla:default.preprocess.prune_hops=-2"),
              HasSubstr("--set: key 'collections.layout:xla:default.preprocess.prune_hops': value -2 is out of range"));
  EXPECT_THAT(with("collections.layout:xla:default.preprocess.prune_hops=two"), HasSubstr("expected an integer"));
  EXPECT_THAT(with("collections.layout:xla:fast.preprocess.prune_hops=2"), HasSubstr("layout:xla:fast"));
  EXPECT_THAT(with("collections.tile:xla.preprocess.prune_hops=2"), HasSubstr("tile graphs are not pruned"));
  EXPECT_THAT(with("preprocess.prune_hops_by_collection=[layout:xla:default=2]"),
              HasSubstr("write collections: {layout:xla:default: {preprocess.prune_hops: 2}}"));
  const TempDir dir;
  const std::string file = dir.file("bad.yaml");
  std::ofstream(file) << "collections:\n  tile:xla: {preprocess.prune_hops: 2}\n";
  EXPECT_THAT(error_of([&] { PruneRules(Config::load(file, {})); }), HasSubstr(file));
}

TEST(PruneRules, SavedSettingsReadKeysTheyPredateAsTheirDataWasPruned) {
  // Settings saved before the bridges existed hold only prune_hops: that run pruned every
  // collection by it, with no bridges, and so must a reader of its settings (the ranker,
  // tpuperf-inspect --compare).
  const Config old_settings = Config::from_text("preprocess:\n  prune_hops: 3\n", "old settings");
  for (const char* id : kLayoutIds) expect_rule(PruneRules::saved(old_settings), id, 3, 0);
  // Read as a config a user wrote, the same text takes the schema's bridges.
  expect_rule(PruneRules(old_settings), "layout:xla:default", 3, 3);
  // Settings of the time of the per-collection list read it as the collections' own hops.
  const PruneRules listed = PruneRules::saved(Config::from_text(
      "preprocess:\n  prune_hops: 1\n  prune_bridges: 2\n  prune_hops_by_collection: [layout:nlp:default=3]\n",
      "list settings"));
  expect_rule(listed, "layout:nlp:default", 3, 2);
  expect_rule(listed, "layout:xla:default", 1, 2);
  // A collection's own bridges count as given.
  const PruneRules own = PruneRules::saved(
      Config::from_text("collections:\n  layout:nlp:random: {preprocess.prune_bridges: 4}\n", "section settings"));
  expect_rule(own, "layout:nlp:random", 1, 4);
  expect_rule(own, "layout:xla:random", 1, 0);
  // What a run saves (Config::save dumps every key and section) reads back as it was.
  const TempDir dir;
  const std::string file = dir.file("settings.yaml");
  Config::load("", {"preprocess.prune_bridges=5", "collections.layout:xla:random.preprocess.prune_hops=2"}).save(file);
  expect_rule(PruneRules::saved(Config::load_saved(file)), "layout:nlp:random", 1, 5);
  expect_rule(PruneRules::saved(Config::load_saved(file)), "layout:xla:random", 2, 5);
  Config::load("", {}).save(file);
  expect_rule(PruneRules::saved(Config::load_saved(file)), "layout:nlp:random", 1, 3);
}

TEST(PruneRules, BadBridgesNameTheKey) {
  EXPECT_THAT(error_of([] { PruneRules(Config::load("", {"preprocess.prune_bridges=-1"})); }),
              HasSubstr("preprocess.prune_bridges"));
}
