// Collection ids, their directories in a release tree and the way back from a file's path.
#include <gtest/gtest.h>

#include "common/graph/collection.h"
#include "common/base/error.h"

using namespace tpuperf;

TEST(Collection, ParseRoundTripsEveryId) {
  for (const Collection& c : Collection::all()) EXPECT_EQ(Collection::parse(c.id()).id(), c.id());
  EXPECT_THROW(Collection::parse("layout:xla"), Error);
}

TEST(Collection, PlaceInTreeInvertsSplitDir) {
  for (const Collection& c : Collection::all())
    for (const std::string& split : kSplits) {
      const auto place = place_in_tree(c.split_dir("/data/npz_all/npz", split) + "/some.graph-1.npz");
      ASSERT_TRUE(place.has_value()) << c.id() << " " << split;
      EXPECT_EQ(place->collection.id(), c.id());
      EXPECT_EQ(place->split, split);
    }
}

TEST(Collection, PlaceInTreeOfRelativePaths) {
  const auto place = place_in_tree("layout/nlp/default/test/x.npz");
  ASSERT_TRUE(place.has_value());
  EXPECT_EQ(place->collection.id(), "layout:nlp:default");
  EXPECT_EQ(place->split, "test");
}

TEST(Collection, PlaceInTreeRefusesOtherLayouts) {
  EXPECT_FALSE(place_in_tree("x.npz").has_value());
  EXPECT_FALSE(place_in_tree("/tmp/test/x.npz").has_value());
  EXPECT_FALSE(place_in_tree("/d/tile/nlp/test/x.npz").has_value());        // no tile:nlp
  EXPECT_FALSE(place_in_tree("/d/layout/xla/test/x.npz").has_value());      // search missing
  EXPECT_FALSE(place_in_tree("/d/layout/xla/greedy/test/x.npz").has_value());
  EXPECT_FALSE(place_in_tree("/d/tile/xla/holdout/x.npz").has_value());
}
