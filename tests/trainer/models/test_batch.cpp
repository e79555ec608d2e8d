// Batches: graphs concatenated, slates padded with their first config, layout values
// decoded for the embedding table, targets per kind.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "tests/trainer/models/model_test_util.h"
#include "trainer/models/batch.h"
#include "trainer/models/config_dims.h"
#include "trainer/models/shape_features.h"

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

// Tile: a (100 x 300) output whose minor dim is 1, tiled (5 x 100) with a (2 x 3) kernel
// tile: 20 x 3 = 60 grid steps; the tile pads to (8 x 128) = 1024 elements from 500. The
// kernel writes 6 bytes an output element (a bf16 and an f32 output) and reads 240,000
// bytes in 90,000 elements: 8 bytes an output element, 8/3 bytes an input element.
TEST_F(Batches, TileShapeFeaturesByHand) {
  float config[24] = {2, 3, 0, 0, 0, 0, 5, 6, 5, 100, 0, 0, 0, 0, 105, 500};
  const int64_t dims[kTileConfigDims] = {100, 300, 0, 0, 0, 0, 1, 0, -1, -1, -1, -1, 6, 240000, 90000};
  float out[kTileShapeFeat];
  tile_shape_features(config, dims, out);
  const double l = std::log(60.0), p = std::log(1024.0), t = std::log(500.0), k = std::log(6.0);
  const double out_bytes = 1024.0 * 6, in_bytes = 1024.0 * 8, kernel_bytes = 6.0 * 8 / 3;
  const double expect[kTileShapeFeat] = {std::log(20.0) / 4,
                                         std::log(3.0) / 4,
                                         0,
                                         0,
                                         0,
                                         0,
                                         l / 8,
                                         t / 8,
                                         p / 8,
                                         (p - t) / 4,
                                         (l + p) / 8,
                                         k / 8,
                                         (l + k) / 8,
                                         std::log1p(out_bytes) / 16,
                                         std::log1p(in_bytes) / 16,
                                         std::log1p(kernel_bytes) / 16,
                                         std::log1p(out_bytes + in_bytes) / 16};
  for (int j = 0; j < kTileShapeFeat; ++j) EXPECT_NEAR(out[j], expect[j], 1e-6) << j;
  // A kernel without parameters reads nothing: its input terms are log1p(0) = 0.
  const int64_t no_inputs[kTileConfigDims] = {100, 300, 0, 0, 0, 0, 1, 0, -1, -1, -1, -1, 6, 0, 0};
  tile_shape_features(config, no_inputs, out);
  EXPECT_EQ(out[14], 0.0f);
  EXPECT_EQ(out[15], 0.0f);
  EXPECT_NEAR(out[16], std::log1p(out_bytes) / 16, 1e-6);
}

// Layout: an output of (4 x 256) laid out with dim 0 minor (4 pads to 128, 256 is a
// multiple of 8), a default input, an absent kernel.
TEST_F(Batches, LayoutShapeFeaturesByHand) {
  const int8_t values[18] = {0, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, -1, -1, -1, -1, -1};
  const int64_t dims[18] = {4, 256, 0, 0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  float out[kLayoutShapeFeat];
  layout_shape_features(values, dims, 65536.0, out);
  const double waste = 1024.0 * 31 / 65536;
  const double expect_out[9] = {0, 0, std::log1p(4.0) / 8, std::log1p(256.0) / 8, std::log(32.0) / 4, 0,
                                std::log1p(1024.0) / 16, waste / 8, std::log1p(waste)};
  for (int j = 0; j < 9; ++j) EXPECT_NEAR(out[j], expect_out[j], 1e-6) << j;
  const double expect_in[9] = {1, 0, 0, 0, 0, 0, std::log1p(64.0) / 16, 0, 0};
  for (int j = 0; j < 9; ++j) EXPECT_NEAR(out[9 + j], expect_in[j], 1e-6) << j;
  for (int j = 18; j < 27; ++j) EXPECT_EQ(out[j], 0.0f) << j;
  // Row-major (dim 1 minor): no padding of 256 to 128, 4 to 8 doubles it.
  const int8_t row_major[18] = {1, 0, -1, -1, -1, -1};
  const int64_t dims2[18] = {4, 256};
  layout_shape_features(row_major, dims2, 1024.0, out);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_NEAR(out[4], 0.0, 1e-7);
  EXPECT_NEAR(out[5], std::log(2.0) / 2, 1e-6);
  EXPECT_NEAR(out[7], 1.0 / 8, 1e-6);
  EXPECT_NEAR(out[8], std::log(2.0), 1e-6);
  // A dim of 1 put minor pads 128-fold: the waste is not clipped.
  const int8_t one_minor[18] = {0, 1, -1, -1, -1, -1};
  const int64_t dims3[18] = {1, 1024};
  layout_shape_features(one_minor, dims3, 1024.0, out);
  EXPECT_NEAR(out[7], 127.0 / 8, 1e-5);
  EXPECT_DOUBLE_EQ(max_layout_elements(dims, 1), 1024.0);
}

TEST_F(Batches, ShapeFeaturesFollowTheSlots) {
  std::mt19937_64 rng(3);
  auto a = random_graph(Kind::Tile, rng, 5, 6), b = random_graph(Kind::Tile, rng, 3, 4);
  auto tile = make_batch(Kind::Tile, {&a, &b}, {{0, 4}, {3}});
  ASSERT_EQ(tile.config_shape.sizes(), (std::vector<int64_t>{2, 2, kTileShapeFeat}));
  float out[kTileShapeFeat];
  tile_shape_features(b.config_feat.data() + 3 * 24, b.config_dims.data(), out);
  for (int j = 0; j < kTileShapeFeat; ++j) {
    EXPECT_EQ(tile.config_shape[1][0][j].item<float>(), out[j]);
    EXPECT_EQ(tile.config_shape[1][1][j].item<float>(), out[j]);  // padding repeats slot 0
  }
  auto c = random_graph(Kind::Layout, rng, 6, 2, 2), d = random_graph(Kind::Layout, rng, 9, 3, 3);
  auto layout = make_batch(Kind::Layout, {&c, &d}, {{1, 0}, {2}});
  ASSERT_EQ(layout.config_shape.sizes(), (std::vector<int64_t>{2, 5, kLayoutShapeFeat}));
  int8_t v[18];
  unpack_layout_values(d.node_config_packed[2 * 3 + 1], v);
  float row[kLayoutShapeFeat];
  layout_shape_features(v, d.config_dims.data() + 18, max_layout_elements(d.config_dims.data(), 3), row);
  for (int j = 0; j < kLayoutShapeFeat; ++j) EXPECT_EQ(layout.config_shape[0][3][j].item<float>(), row[j]) << j;

  // Graphs without config dims give no config_shape; models that need it say so; a batch
  // mixing both is refused.
  b.has_config_dims = false;
  b.config_dims.clear();
  EXPECT_THROW(make_batch(Kind::Tile, {&a, &b}, {{0}, {0}}), Error);
  const auto plain = make_batch(Kind::Tile, {&b}, {{0}});
  EXPECT_FALSE(plain.config_shape.defined());
  for (const char* arch : {"early_join_shape", "early_join"}) {
    ModelSpec spec;
    spec.kind = Kind::Tile;
    spec.arch = arch;
    spec.num_node_feat = kFeat;
    spec.options = small_options();
    const ModelPtr model = make_model(spec);
    if (std::string(arch) == "early_join") {
      EXPECT_NO_THROW(model->forward(plain));
    } else {
      try {
        model->forward(plain);
        FAIL() << "early_join_shape ran without config dims";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("early_join_shape"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace tpuperf
