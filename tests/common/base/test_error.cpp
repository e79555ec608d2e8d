// The error type: one message naming file, key, reason and rank.
#include <gtest/gtest.h>

#include "common/base/error.h"

using namespace tpuperf;

TEST(Error, MessageCarriesFileKeyAndRank) {
  Error e("bad shape", "/d/g.npz");
  e.with_key("node_feat").with_rank(1).with_file("/ignored/outer.npz");
  EXPECT_STREQ(e.what(), "/d/g.npz: key 'node_feat': bad shape [rank 1]");
}
