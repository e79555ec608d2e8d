// Batches: graphs concatenated, slates padded with their first config, layout values
// decoded for the embedding table, targets per kind.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>
#include <vector>

#include "common/error.h"
#include "tests/trainer/model_test_util.h"
#include "trainer/models/batch.h"

namespace tpuperf {
namespace {

constexpr int64_t kFeat = 4;

class Batches : public ::testing::Test {};

TEST_F(Batches, TileBatchLayout) {
  std::mt19937_64 rng(1);
  auto a = random_graph(Kind::Tile, rng, 5, 6), b = random_graph(Kind::Tile, rng, 3, 4);
  b.config_runtime[2] = 300;
  b.config_runtime_normalizers[2] = 4;
  const auto batch = make_batch(Kind::Tile, {&a, &b}, {{0, 1, 2}, {2}});
  EXPECT_EQ(batch.num_graphs, 2);
  EXPECT_EQ(batch.slate, 3);
  EXPECT_EQ(batch.num_nodes, 8);
  EXPECT_EQ(batch.node_offsets, (std::vector<int64_t>{0, 5, 8}));
  EXPECT_EQ(batch.node_graph[6].item<int64_t>(), 1);
  // Graph b's first edge [1, x] is shifted by 5 nodes.
  EXPECT_EQ(batch.edges.consumer[4].item<int64_t>(), 6);
  EXPECT_EQ(batch.edges.producer[4].item<int64_t>(), 5 + b.edge_index[1]);
  EXPECT_EQ(batch.config_mask[1][0].item<bool>(), true);
  EXPECT_EQ(batch.config_mask[1][1].item<bool>(), false);
  EXPECT_EQ(batch.config_index[1][2].item<int64_t>(), 2);  // padding repeats slot 0
  EXPECT_DOUBLE_EQ(batch.target[1][0].item<double>(), 75.0);
  EXPECT_DOUBLE_EQ(batch.target[1][1].item<double>(), 0.0);
  EXPECT_EQ(batch.config_feat.sizes(), (std::vector<int64_t>{2, 3, 24}));
  EXPECT_EQ(batch.config_feat[0][1][5].item<float>(), a.config_feat[24 + 5]);
  EXPECT_EQ(batch.node_feat[6][1].item<float>(), b.node_feat[kFeat + 1]);
  EXPECT_THROW(make_batch(Kind::Tile, {&a}, {{6}}), Error);
  EXPECT_THROW(make_batch(Kind::Tile, {&a}, {{}}), Error);
}

TEST_F(Batches, LayoutBatchDecodesValues) {
  std::mt19937_64 rng(2);
  auto a = random_graph(Kind::Layout, rng, 6, 2, 2), b = random_graph(Kind::Layout, rng, 9, 3, 3);
  int8_t v[kLayoutConfigDim];
  for (int j = 0; j < kLayoutConfigDim; ++j) v[j] = static_cast<int8_t>(j % 7 - 1);
  b.node_config_packed[2 * 3 + 1] = pack_layout_values(v);  // config 2, node_config_ids[1]
  const auto batch = make_batch(Kind::Layout, {&a, &b}, {{1, 0}, {2}});
  ASSERT_EQ(batch.config_node.size(0), 5);
  EXPECT_EQ(batch.config_node[3].item<int64_t>(), 6 + b.node_config_ids[1]);
  EXPECT_EQ(batch.config_offsets, (std::vector<int64_t>{0, 2, 5}));
  ASSERT_EQ(batch.config_values.sizes(), (std::vector<int64_t>{2, 5, 18}));
  for (int j = 0; j < kLayoutConfigDim; ++j) {
    EXPECT_EQ(batch.config_values[0][3][j].item<int64_t>(), j * 7 + (j % 7));
    EXPECT_EQ(batch.config_values[1][3][j].item<int64_t>(), j * 7 + (j % 7));  // padding
  }
  EXPECT_DOUBLE_EQ(batch.target[0][0].item<double>(), static_cast<double>(a.config_runtime[1]));
}

}  // namespace
}  // namespace tpuperf
