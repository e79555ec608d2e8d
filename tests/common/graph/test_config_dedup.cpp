// Dedup against a naive O(c^2) pairwise reference and, for the large case, a sort-based one.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

#include "common/base/error.h"
#include "common/graph/config_dedup.h"

using namespace tpuperf;

namespace {

struct Expected {
  std::vector<int64_t> kept, runtime;
};

// Pairwise: row r is a duplicate of the earliest earlier row with identical bytes.
Expected naive_dedup(const uint8_t* rows, size_t row_bytes, int64_t c,
                     const std::vector<int64_t>& runtime, DedupPolicy policy) {
  Expected e;
  std::vector<std::vector<int64_t>> members;
  for (int64_t r = 0; r < c; ++r) {
    bool found = false;
    for (size_t k = 0; k < e.kept.size(); ++k) {
      if (std::memcmp(rows + r * row_bytes, rows + e.kept[k] * row_bytes, row_bytes) == 0) {
        members[k].push_back(runtime[r]);
        found = true;
        break;
      }
    }
    if (!found) {
      e.kept.push_back(r);
      members.push_back({runtime[r]});
    }
  }
  for (const auto& m : members) {
    if (policy == DedupPolicy::First) {
      e.runtime.push_back(m[0]);
    } else if (policy == DedupPolicy::Min) {
      e.runtime.push_back(*std::min_element(m.begin(), m.end()));
    } else {
      long double sum = 0;
      for (int64_t v : m) sum += v;
      e.runtime.push_back(static_cast<int64_t>(std::llroundl(sum / m.size())));
    }
  }
  return e;
}

// A tile graph whose configs repeat: unique rows, then copies planted at random positions.
TileGraph random_tile(std::mt19937_64& rng, int unique, int copies) {
  TileGraph g;
  g.name = "tile_test";
  std::uniform_int_distribution<int> val(0, 3), pick(0, unique - 1);
  std::vector<std::vector<float>> rows(unique, std::vector<float>(kTileConfigDim));
  for (auto& row : rows)
    for (float& x : row) x = static_cast<float>(val(rng));
  std::vector<int> order;
  for (int i = 0; i < unique; ++i) order.push_back(i);
  for (int i = 0; i < copies; ++i) order.push_back(pick(rng));
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<int64_t> rt(1000, 100000);
  for (int idx : order) {
    g.config_feat.insert(g.config_feat.end(), rows[idx].begin(), rows[idx].end());
    g.config_runtime.push_back(rt(rng));
    g.config_runtime_normalizers.push_back(500 + idx);  // equal for copies, as in real files
  }
  return g;
}

LayoutGraph random_layout(std::mt19937_64& rng, int nc, int unique, int copies) {
  LayoutGraph g;
  g.name = "layout_test";
  for (int i = 0; i < nc; ++i) g.node_config_ids.push_back(i);
  std::uniform_int_distribution<int> val(-1, 5), pick(0, unique - 1);
  std::vector<std::vector<int8_t>> blocks(unique, std::vector<int8_t>(nc * kLayoutConfigDim));
  for (auto& b : blocks)
    for (int8_t& x : b) x = static_cast<int8_t>(val(rng));
  // Near-duplicates: differ in exactly one value, must never be merged.
  if (unique >= 2) {
    blocks[1] = blocks[0];
    blocks[1].back() = static_cast<int8_t>(blocks[0].back() == 5 ? 4 : blocks[0].back() + 1);
  }
  std::vector<int> order;
  for (int i = 0; i < unique; ++i) order.push_back(i);
  for (int i = 0; i < copies; ++i) order.push_back(pick(rng));
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<int64_t> rt(1000, 100000);
  for (int idx : order) {
    g.node_config_feat.insert(g.node_config_feat.end(), blocks[idx].begin(), blocks[idx].end());
    g.config_runtime.push_back(rt(rng));
  }
  return g;
}

const DedupPolicy kPolicies[] = {DedupPolicy::Min, DedupPolicy::Mean, DedupPolicy::First};

}  // namespace

TEST(Dedup, ParsePolicy) {
  EXPECT_EQ(parse_dedup_policy("min"), DedupPolicy::Min);
  EXPECT_EQ(parse_dedup_policy("mean"), DedupPolicy::Mean);
  EXPECT_EQ(parse_dedup_policy("first"), DedupPolicy::First);
  EXPECT_THROW(parse_dedup_policy("max"), Error);
  EXPECT_STREQ(dedup_policy_name(DedupPolicy::Mean), "mean");
}

TEST(Dedup, TileMatchesPairwise) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    TileGraph g = random_tile(rng, 1 + trial * 7, trial * 11);
    for (DedupPolicy p : kPolicies) {
      DedupResult r = dedup_tile(g, p);
      Expected e = naive_dedup(reinterpret_cast<const uint8_t*>(g.config_feat.data()),
                               kTileConfigDim * sizeof(float), g.num_configs(), g.config_runtime, p);
      EXPECT_EQ(r.kept, e.kept) << "trial " << trial;
      EXPECT_EQ(r.runtime, e.runtime) << "trial " << trial;
      EXPECT_EQ(r.removed, g.num_configs() - static_cast<int64_t>(e.kept.size()));
      ASSERT_EQ(r.normalizers.size(), r.kept.size());
      for (size_t i = 0; i < r.kept.size(); ++i)
        EXPECT_EQ(r.normalizers[i], g.config_runtime_normalizers[r.kept[i]]);
      EXPECT_TRUE(std::is_sorted(r.kept.begin(), r.kept.end()));  // first occurrences in order
    }
  }
}

TEST(Dedup, TileComparesBitwise) {
  TileGraph g;
  g.config_feat.assign(3 * kTileConfigDim, 1.0f);
  g.config_feat[kTileConfigDim] = 0.0f;          // row 1: +0
  g.config_feat[2 * kTileConfigDim] = -0.0f;     // row 2: -0, equal as floats, not as bits
  g.config_runtime = {5, 6, 7};
  g.config_runtime_normalizers = {1, 1, 1};
  DedupResult r = dedup_tile(g, DedupPolicy::Min);
  EXPECT_EQ(r.kept, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r.removed, 0);
}

TEST(Dedup, LayoutMatchesPairwise) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    LayoutGraph g = random_layout(rng, 1 + trial % 5, 2 + trial * 5, trial * 9);
    const size_t row_bytes = g.num_config_nodes() * kLayoutConfigDim;
    for (DedupPolicy p : kPolicies) {
      DedupResult r = dedup_layout(g, p);
      Expected e = naive_dedup(reinterpret_cast<const uint8_t*>(g.node_config_feat.data()),
                               row_bytes, g.num_configs(), g.config_runtime, p);
      EXPECT_EQ(r.kept, e.kept) << "trial " << trial;
      EXPECT_EQ(r.runtime, e.runtime) << "trial " << trial;
      EXPECT_EQ(r.removed, g.num_configs() - static_cast<int64_t>(e.kept.size()));
      EXPECT_TRUE(r.normalizers.empty());
    }
  }
}

TEST(Dedup, MeanRoundsHalfAwayFromZero) {
  // Three identical rows, runtimes 1, 2, 2 -> mean 5/3 -> 2; two rows 1, 2 -> 1.5 -> 2.
  const int8_t rows[5] = {1, 1, 1, 2, 2};
  const int64_t rt[5] = {1, 2, 2, 1, 2};
  DedupResult r = dedup_rows(rows, 1, 5, rt, DedupPolicy::Mean);
  EXPECT_EQ(r.kept, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(r.runtime, (std::vector<int64_t>{2, 2}));
}

TEST(Dedup, IdentityKeepsAll) {
  DedupResult r = identity_dedup({4, 4, 9});
  EXPECT_EQ(r.kept, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r.runtime, (std::vector<int64_t>{4, 4, 9}));
  EXPECT_EQ(r.removed, 0);
}

// 100,040 configs x nc 50, most of them copies. Checked against an ordered map.
TEST(Dedup, LargeLayoutRuns) {
  std::mt19937_64 rng(3);
  const int nc = 50;
  LayoutGraph g = random_layout(rng, nc, 40, 100040 - 40);
  ASSERT_EQ(g.num_configs(), 100040);
  DedupResult r = dedup_layout(g, DedupPolicy::Min);
  const size_t row_bytes = nc * kLayoutConfigDim;
  std::map<std::string, std::pair<int64_t, int64_t>> first_and_min;  // row -> (first, min)
  for (int64_t i = 0; i < g.num_configs(); ++i) {
    std::string key(reinterpret_cast<const char*>(g.node_config_feat.data()) + i * row_bytes, row_bytes);
    auto [it, inserted] = first_and_min.emplace(key, std::make_pair(i, g.config_runtime[i]));
    if (!inserted) it->second.second = std::min(it->second.second, g.config_runtime[i]);
  }
  std::vector<std::pair<int64_t, int64_t>> expected;
  for (const auto& [key, v] : first_and_min) expected.push_back(v);
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(r.kept.size(), expected.size());
  EXPECT_EQ(r.kept.size(), 40u);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.kept[i], expected[i].first);
    EXPECT_EQ(r.runtime[i], expected[i].second);
  }
  EXPECT_EQ(r.removed, 100040 - 40);
}

TEST(Dedup, RejectsInconsistentSizes) {
  LayoutGraph g;
  g.node_config_ids = {0, 1};
  g.config_runtime = {1, 2};
  g.node_config_feat.assign(2 * 18, 0);  // should be 2 x 2 x 18
  EXPECT_THROW(dedup_layout(g, DedupPolicy::Min), Error);
}
