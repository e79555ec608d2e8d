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

// n nodes of 140 zero columns and opcode 0; node i's shape dims are {10 * (i + 1), i + 1}.
ProcessedGraph graph_of(int64_t n) {
  ProcessedGraph g;
  g.collection = "layout:xla:random";
  g.name = "g";
  g.num_nodes = n;
  g.num_node_feat = kNodeFeatDim;
  g.node_feat.assign(static_cast<size_t>(n * kNodeFeatDim), 0.0f);
  g.node_opcode.assign(static_cast<size_t>(n), 0);
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
  // No element type set: 4 bytes an element; no parameter nodes: no inputs.
  EXPECT_EQ(g.config_dims, (std::vector<int64_t>{30, 3, 0, 0, 0, 0, 0, 1, -1, -1, -1, -1, 4, 0, 0}));
}

// Columns 2-20 hold the element type in upstream's PrimitiveType order; 28 the shape product.
void set_type(ProcessedGraph& g, int64_t node, int type_index, float elements) {
  at(g, node, 2 + type_index) = 1;
  at(g, node, 28) = elements;
}
constexpr int kPred = 1, kF32 = 11, kBf16 = 13, kC128 = 15;
constexpr uint8_t kParameter = 63, kTuple = 100;

TEST(ConfigDims, TileSumsTheParametersBytesAndElements) {
  ProcessedGraph g = graph_of(4);
  g.node_opcode = {kParameter, kParameter, 2, kParameter};
  set_type(g, 0, kBf16, 1000);  // 2,000 bytes
  set_type(g, 1, kF32, 10);     // 40 bytes
  set_type(g, 2, kC128, 7);     // not a parameter: not counted
  set_type(g, 3, kPred, 1);     // a scalar predicate: 1 byte
  at(g, 2, 0) = 1;              // the root: a c128 output
  attach_config_dims(Kind::Tile, g);
  EXPECT_EQ(g.config_dims[0], 30);
  EXPECT_EQ(g.config_dims[kTileOutBytes], 16);
  EXPECT_EQ(g.config_dims[kTileInBytes], 2041);
  EXPECT_EQ(g.config_dims[kTileInElements], 1011);
}

// A multi-output kernel: the tuple root (node 4) of a bf16 output of 40 x 4 = 160 elements
// (node 3) and an f32 one of 20 x 2 = 40 (node 1); node 2 is not an element.
TEST(ConfigDims, TileTupleRootTakesItsLargestElementAndSumsTheWidths) {
  ProcessedGraph g = graph_of(5);
  g.node_opcode = {kParameter, 2, 2, 2, kTuple};
  g.edge_index = {2, 0, 3, 2, 4, 1, 4, 3};
  set_type(g, 1, kF32, 40);
  set_type(g, 3, kBf16, 160);
  at(g, 3, 134) = 1;
  at(g, 3, 135) = 0;
  at(g, 4, 0) = 1;
  attach_config_dims(Kind::Tile, g);
  EXPECT_EQ(std::vector<int64_t>(g.config_dims.begin(), g.config_dims.begin() + 8),
            (std::vector<int64_t>{40, 4, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(g.config_dims[kTileOutBytes], 6);
}

// As the featurizer writes a release tile graph: the entry computation's tuple-shaped fusion
// (node 6, the last root) consumes its callee's root, a tuple (node 3) of an f32 (10 x 20)
// add (node 1) and an f32 (10) reduce, and two entry parameters (f32 10 x 20, bf16 100).
// The callee's own parameter (node 0) repeats an entry one and is not counted.
TEST(ConfigDims, TileFusionRootReadsThroughItsCalleesTuple) {
  ProcessedGraph g = graph_of(7);
  constexpr uint8_t kAdd = 2, kReduce = 70, kFusion = 41;
  constexpr int kTupleType = 16;
  g.node_opcode = {kParameter, kAdd, kReduce, kTuple, kParameter, kParameter, kFusion};
  g.edge_index = {1, 0, 2, 1, 3, 1, 3, 2, 6, 3, 6, 4, 6, 5};
  for (int64_t n : {0, 1, 4}) {
    at(g, n, 21) = 10;
    at(g, n, 22) = 20;
    set_type(g, n, kF32, 200);
  }
  at(g, 2, 21) = 10;
  at(g, 2, 22) = 0;
  set_type(g, 2, kF32, 10);
  at(g, 5, 21) = 100;
  at(g, 5, 22) = 0;
  set_type(g, 5, kBf16, 100);
  for (int64_t n : {3, 6}) {
    at(g, n, 0) = 1;  // the callee's root and the entry's
    at(g, n, 21) = at(g, n, 22) = 0;
    set_type(g, n, kTupleType, 1);
  }
  attach_config_dims(Kind::Tile, g);
  EXPECT_EQ(g.config_dims[0], 10);
  EXPECT_EQ(g.config_dims[1], 20);
  EXPECT_EQ(g.config_dims[kTileOutBytes], 8);
  EXPECT_EQ(g.config_dims[kTileInBytes], 200 * 4 + 100 * 2);
  EXPECT_EQ(g.config_dims[kTileInElements], 300);
}

TEST(ConfigDims, TileRefusesAGraphWithoutOpcodes) {
  ProcessedGraph g = graph_of(3);
  g.node_opcode.clear();
  try {
    attach_config_dims(Kind::Tile, g);
    FAIL() << "a graph without opcodes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opcodes"), std::string::npos) << e.what();
  }
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
