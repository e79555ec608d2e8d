// Per-collection pruning hops (common/prune_hops.h): the schema's list, overrides, bad
// entries, and the saved settings of runs from before the list existed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/config.h"
#include "common/error.h"
#include "common/prune_hops.h"
#include "tests/test_util.h"

using namespace tpuperf;
using ::testing::HasSubstr;

TEST(PruneHops, SchemaPrunesEveryCollectionByOneHop) {
  const PruneHops hops(Config::load("", {}));
  for (const char* id : {"layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"})
    EXPECT_EQ(hops.of(id), 1) << id;
  EXPECT_EQ(hops.describe(), "1");
}

TEST(PruneHops, TheListReplacesTheHopsOnlyForTheCollectionsItNames) {
  const PruneHops hops(Config::load(
      "", {"preprocess.prune_hops=3", "preprocess.prune_hops_by_collection=[layout:nlp:random = -1, layout:xla:random=0]"}));
  EXPECT_EQ(hops.of("layout:nlp:random"), -1);
  EXPECT_EQ(hops.of("layout:xla:random"), 0);
  EXPECT_EQ(hops.of("layout:xla:default"), 3);
  EXPECT_EQ(hops.of("layout:nlp:default"), 3);
  EXPECT_EQ(hops.describe(), "layout:nlp:random -1, layout:xla:random 0, others 3");
}

TEST(PruneHops, BadEntriesNameTheListKey) {
  auto with = [](const std::string& list) {
    return error_of([&] { PruneHops(Config::load("", {"preprocess.prune_hops_by_collection=" + list})); });
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
  EXPECT_THAT(error_of([&] { PruneHops(Config::load(file, {})); }), HasSubstr(file));
}

TEST(PruneHops, SavedSettingsWithoutTheListPruneEveryCollectionAlike) {
  // A run preprocessed before the list existed saved only preprocess.prune_hops, and pruned
  // every collection by it: so must a reader of its settings (the ranker, tpuperf-inspect).
  const PruneHops old(Config::from_text("preprocess:\n  prune_hops: 3\n", "old settings"));
  for (const char* id : {"layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"})
    EXPECT_EQ(old.of(id), 3) << id;
  const PruneHops saved(Config::from_text(
      "preprocess:\n  prune_hops: 1\n  prune_hops_by_collection: [layout:nlp:default=3]\n", "new settings"));
  EXPECT_EQ(saved.of("layout:nlp:default"), 3);
  EXPECT_EQ(saved.of("layout:xla:default"), 1);
}
