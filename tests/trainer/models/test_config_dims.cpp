// Config dims: the raw tensor dims read from the untransformed node features, the tile
// kernel's root and each configurable node's output and first two operands.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "trainer/models/config_dims.h"
#include "common/base/error.h"
#include "common/graph/graph.h"

namespace tpuperf {
namespace {

// n nodes of 140 zero columns; node i's shape dims are {10 * (i + 1), i + 1}.
ProcessedGraph graph_of(int64_t n) {
  ProcessedGraph g;
  g.collection = "layout:xla:random";
  g.name = "g";
  g.num_nodes = n;
  g.num_node_feat = kNodeFeatDim;
  g.node_feat.assign(static_cast<size_t>(n * kNodeFeatDim), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    g.node_feat[static_cast<size_t>(i * kNodeFeatDim + 21)] = static_cast<float>(10 * (i + 1));
    g.node_feat[static_cast<size_t>(i * kNodeFeatDim + 22)] = static_cast<float>(i + 1);
  }
  return g;
}

float& at(ProcessedGraph& g, int64_t node, int col) {
  return g.node_feat[static_cast<size_t>(node * kNodeFeatDim + col)];
}

TEST(ConfigDims, TileTakesTheLastRootAndItsMinorToMajor) {
  ProcessedGraph g = graph_of(4);
  at(g, 1, 0) = 1;  // is_root
  at(g, 2, 0) = 1;  // the last root
  at(g, 2, 134) = 0;
  at(g, 2, 135) = 1;
  for (int c = 136; c < 140; ++c) at(g, 2, c) = -1;
  attach_config_dims(Kind::Tile, g);
  EXPECT_TRUE(g.has_config_dims);
  EXPECT_EQ(g.config_dims, (std::vector<int64_t>{30, 3, 0, 0, 0, 0, 0, 1, -1, -1, -1, -1}));
}

TEST(ConfigDims, TileWithoutARootTakesTheLastNode) {
  ProcessedGraph g = graph_of(3);
  attach_config_dims(Kind::Tile, g);
  EXPECT_EQ(g.config_dims[0], 30);
  EXPECT_EQ(g.config_dims[1], 3);
}

TEST(ConfigDims, LayoutTakesOutputAndFirstTwoOperandsInEdgeOrder) {
  ProcessedGraph g = graph_of(6);
  g.node_config_ids = {5, 2};
  // Node 5 consumes 1, 3 and 4 (the third is not a tensor of the config); node 2 consumes 0.
  g.edge_index = {5, 1, 2, 0, 5, 3, 5, 4, 4, 2};
  at(g, 2, 21) = 7.4f;  // rounded
  attach_config_dims(Kind::Layout, g);
  ASSERT_EQ(g.config_dims.size(), 36u);
  const std::vector<int64_t> node5(g.config_dims.begin(), g.config_dims.begin() + 18);
  const std::vector<int64_t> node2(g.config_dims.begin() + 18, g.config_dims.end());
  EXPECT_EQ(node5, (std::vector<int64_t>{60, 6, 0, 0, 0, 0, 20, 2, 0, 0, 0, 0, 40, 4, 0, 0, 0, 0}));
  EXPECT_EQ(node2, (std::vector<int64_t>{7, 3, 0, 0, 0, 0, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(ConfigDims, LayoutWithoutConfigurableNodesIsEmptyButAttached) {
  ProcessedGraph g = graph_of(2);
  attach_config_dims(Kind::Layout, g);
  EXPECT_TRUE(g.config_dims.empty());
  EXPECT_TRUE(g.has_config_dims);
}

TEST(ConfigDims, RefusesTransformedFeaturesAndNonFiniteDims) {
  ProcessedGraph g = graph_of(2);
  g.num_node_feat = 7;
  EXPECT_THROW(attach_config_dims(Kind::Tile, g), Error);
  g = graph_of(2);
  at(g, 1, 21) = std::numeric_limits<float>::quiet_NaN();
  try {
    attach_config_dims(Kind::Tile, g);
    FAIL() << "a NaN dim was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 21"), std::string::npos) << e.what();
  }
  g = graph_of(2);
  g.node_config_ids = {2};
  EXPECT_THROW(attach_config_dims(Kind::Layout, g), Error);
}

}  // namespace
}  // namespace tpuperf
