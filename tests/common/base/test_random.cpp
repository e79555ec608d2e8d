// common/base/random.h: splitmix64 and mix_seed against values computed independently (Python,
// the published splitmix64), so that a change to the one seed mixer cannot go unnoticed:
// tpuperf-synth's trees, fold tie-breaks, evaluation subsets, baselines and training's
// torch seeds all derive from it.
#include <gtest/gtest.h>

#include <string>

#include "common/base/random.h"

namespace tpuperf {
namespace {

TEST(Random, SplitMix64MatchesTheReference) {
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);  // the first output of seed 0
  SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xe220a8397b1dcdafULL);
}

TEST(Random, MixSeedPinnedValues) {
  EXPECT_EQ(mix_seed(0, "tile:xla"), 0x2122038ba2850af7ULL);
  EXPECT_EQ(mix_seed(7, std::string("plan:layout:nlp")), 0x1ffb034359c24f5fULL);
  EXPECT_EQ(mix_seed(~uint64_t{0}, ""), 0xcc0dc8910321bcb5ULL);
  EXPECT_EQ(mix_seed(42, "layout:xla:random:g1"), 0x59f1f88903cfd54bULL);
  EXPECT_EQ(mix_seed(5, uint64_t{0x1234}), 0xcfa8fae7a291ff44ULL);
}

TEST(Random, MixSeedSeparatesSeedsAndLabels) {
  EXPECT_NE(mix_seed(1, "a"), mix_seed(2, "a"));
  EXPECT_NE(mix_seed(1, "a"), mix_seed(1, "b"));
  EXPECT_NE(mix_seed(1, "ab"), mix_seed(1, "ba"));
}

}  // namespace
}  // namespace tpuperf
