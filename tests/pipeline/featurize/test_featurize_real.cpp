// The featurizer on the two real TPU v3 tuning records (tests/data/real): the facts of
// /work/notes/featurizer_spec.md §11, counted there by the independent reference
// (tests/pipeline/featurize/reference_featurize.py) and cross-checked against upstream's README.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "pipeline/featurize/extra_features.h"
#include "pipeline/featurize/layout_records.h"
#include "pipeline/featurize/opcodes.h"
#include "pipeline/featurize/record_scan.h"
#include "pipeline/featurize/tile_records.h"

using namespace tpuperf;
using namespace tpuperf::featurize;

namespace {

std::vector<uint8_t> real_file(const std::string& name) {
  std::ifstream in(std::string(TPUPERF_SOURCE_DIR) + "/tests/data/real/" + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::map<int, int> opcode_counts(const std::vector<uint8_t>& ops) {
  std::map<int, int> counts;
  for (uint8_t op : ops) ++counts[op];
  return counts;
}

float column_max(const GraphBase& g, int col) {
  float m = g.node_feat[col];
  for (int64_t i = 0; i < g.num_nodes; ++i) m = std::max(m, g.node_feat[i * kNodeFeatDim + col]);
  return m;
}

class RealLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = real_file("module_tuning_data_layout.pb");
    ASSERT_EQ(data_.size(), 638070u);
    top_ = scan_top_level(data_.data(), data_.size());
    result_ = featurize_module_tuning_data(data_.data(), data_.size(), top_, "module_tuning_data_layout",
                                           false);
    ASSERT_TRUE(result_.module.has_value());
  }
  const LayoutGraph& g() const { return result_.module->graph; }
  std::vector<uint8_t> data_;
  TopLevel top_;
  LayoutResult result_;
};

TEST_F(RealLayout, IsAModuleTuningData) {
  EXPECT_FALSE(top_.damaged);
  EXPECT_EQ(detect_kind(data_.data(), top_), RecordKind::Layout);
  EXPECT_EQ(result_.module->record, "module main__.10904");
  EXPECT_TRUE(result_.rejected.empty());
}

TEST_F(RealLayout, GraphFacts) {
  EXPECT_EQ(g().name, "module_tuning_data_layout");
  EXPECT_EQ(g().num_nodes, 3163);  // upstream README: 3,163 instructions over 143 computations
  EXPECT_EQ(g().num_edges(), 5112);
  EXPECT_EQ(g().node_splits, (std::vector<int64_t>{0, 449, 453, 467, 471, 498, 502, 3163}));
  float roots = 0;
  for (int64_t i = 0; i < g().num_nodes; ++i) roots += g().node_feat[i * kNodeFeatDim];
  EXPECT_EQ(roots, 143);  // one ROOT per computation
  // Column 28 (shape product) reaches 339,738,620, which float32 holds as 339,738,624.
  EXPECT_EQ(column_max(g(), 28), 339738624.0f);
  int above_2_24 = 0;
  for (int64_t i = 0; i < g().num_nodes; ++i) above_2_24 += g().node_feat[i * kNodeFeatDim + 28] > 16777216.0f;
  EXPECT_EQ(above_2_24, 341);
  EXPECT_EQ(column_max(g(), 1), 0);  // element_size_in_bits: always 0
  auto ops = opcode_counts(g().node_opcode);
  EXPECT_EQ(ops.size(), 41u);
  EXPECT_EQ(ops.count(0), 0u);  // no unknown opcode
  EXPECT_EQ(ops[opcode_id("multiply")], 589);
  EXPECT_EQ(ops[opcode_id("add")], 389);
  EXPECT_EQ(ops[opcode_id("parameter")], 287);
  EXPECT_EQ(ops[opcode_id("convolution")], 53);
  EXPECT_EQ(ops[opcode_id("reshape")], 9);
  EXPECT_EQ(ops[opcode_id("sort")], 1);
  EXPECT_EQ(ops.count(opcode_id("fusion")), 0u);  // the layout graph is unfused
}

TEST_F(RealLayout, ConfigFacts) {
  EXPECT_EQ(g().num_config_nodes(), 62);
  EXPECT_EQ(std::vector<int64_t>(g().node_config_ids.begin(), g().node_config_ids.begin() + 5),
            (std::vector<int64_t>{443, 461, 488, 652, 660}));
  EXPECT_EQ(*std::max_element(g().node_config_ids.begin(), g().node_config_ids.end()), 3143);
  int conv = 0, reshape = 0;
  for (int64_t id : g().node_config_ids) {
    conv += g().node_opcode[id] == opcode_id("convolution");
    reshape += g().node_opcode[id] == opcode_id("reshape");
  }
  EXPECT_EQ(conv, 53);
  EXPECT_EQ(reshape, 9);
  // 122 runs, 10 with an error (dropped quietly), 1 default: 112 configs kept.
  EXPECT_EQ(result_.counts.runs, 122);
  EXPECT_EQ(result_.counts.error_runs, 10);
  EXPECT_EQ(g().num_configs(), 112);
  EXPECT_EQ(g().config_runtime[0], 910903932);  // run 0, the default
  EXPECT_EQ(*std::min_element(g().config_runtime.begin(), g().config_runtime.end()), 910876401);
  EXPECT_EQ(*std::max_element(g().config_runtime.begin(), g().config_runtime.end()), 925642328);
  std::set<int> values(g().node_config_feat.begin(), g().node_config_feat.end());
  EXPECT_EQ(values, (std::set<int>{-1, 0, 1, 2, 3, 4}));
  std::set<std::vector<int8_t>> distinct;
  size_t per_config = static_cast<size_t>(g().num_config_nodes()) * kLayoutConfigDim;
  for (int64_t j = 0; j < g().num_configs(); ++j)
    distinct.insert(std::vector<int8_t>(g().node_config_feat.begin() + j * per_config,
                                        g().node_config_feat.begin() + (j + 1) * per_config));
  EXPECT_EQ(distinct.size(), 91u);
}

struct KernelFact {
  const char* module;
  int runs, configs, nodes, edges;
  int64_t normalizer;
  const char* output;
};

// /work/notes/featurizer_spec.md §11.2, in record order.
const KernelFact kKernels[] = {
    {"fusion.232", 61, 61, 20, 19, 57188, "op_tuning_data_579e7b2c540f0929"},
    {"fusion.191", 581, 579, 31, 32, 151565, "op_tuning_data_4ae805e53b8d2b8a"},
    {"fusion.261", 16, 16, 52, 51, 94192, "op_tuning_data_-8a7557b856e7b3b"},
    {"fusion.209", 16, 16, 56, 58, 46351, "op_tuning_data_6506960125603509"},
    {"fusion.205", 16, 16, 30, 30, 45021, "op_tuning_data_11d55dfd21d1a19c"},
    {"fusion.245", 23, 23, 21, 20, 13665, "op_tuning_data_-3545610a073feea6"},
    {"copy.24", 10, 10, 2, 1, 3967, "op_tuning_data_715d6c5d784f9262"},
    {"copy.25", 11, 11, 2, 1, 7310, "op_tuning_data_4d1e36cc29e3e6d8"},
    {"fusion.181", 5, 5, 7, 6, 1447, "op_tuning_data_-d35a43855de59c9"},
    {"fusion.207", 3, 3, 44, 49, 1635, "op_tuning_data_4f37352569503a80"},
    {"fusion.206", 3, 3, 13, 12, 1244, "op_tuning_data_-3006cd0d02fa72c4"},
    {"fusion.250", 2, 2, 10, 9, 598, "op_tuning_data_-426e30b3297100f1"},
    {"reshape.37", 3, 3, 2, 1, 270591, "op_tuning_data_24aa8731e7561309"},
    {"reshape.39", 2, 2, 2, 1, 5664, "op_tuning_data_-741297d2a8031207"},
    {"reshape.38", 2, 2, 2, 1, 4358, "op_tuning_data_-69259acddcd0d88"},
};

class RealTile : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = real_file("op_tuning_data.pb");
    ASSERT_EQ(data_.size(), 61766u);
    top_ = scan_top_level(data_.data(), data_.size());
    result_ = featurize_tuning_data(data_.data(), top_, "op_tuning_data", false);
  }
  bool any_nonzero(const TileGraph& g, int first_col, int last_col) const {
    for (int64_t j = 0; j < g.num_configs(); ++j)
      for (int c = first_col; c <= last_col; ++c)
        if (g.config_feat[j * kTileConfigDim + c] != 0) return true;
    return false;
  }
  std::vector<uint8_t> data_;
  TopLevel top_;
  TileResult result_;
};

TEST_F(RealTile, IsATuningDataOf15Kernels) {
  EXPECT_FALSE(top_.damaged);
  EXPECT_EQ(top_.fields.size(), 15u);
  EXPECT_EQ(detect_kind(data_.data(), top_), RecordKind::Tile);
  EXPECT_TRUE(result_.rejected.empty());
  EXPECT_EQ(result_.counts.kernels, 15);
  EXPECT_EQ(result_.counts.runs, 754);
  EXPECT_EQ(result_.counts.error_runs, 2);  // kernel 1, runs 575 and 579
  ASSERT_EQ(result_.kernels.size(), 15u);
  int64_t configs = 0, nodes = 0, edges = 0;
  for (const auto& k : result_.kernels) {
    configs += k.graph.num_configs();
    nodes += k.graph.num_nodes;
    edges += k.graph.num_edges();
  }
  EXPECT_EQ(configs, 752);
  EXPECT_EQ(nodes, 294);
  EXPECT_EQ(edges, 291);
}

TEST_F(RealTile, KernelFacts) {
  ASSERT_EQ(result_.kernels.size(), std::size(kKernels));
  for (size_t i = 0; i < std::size(kKernels); ++i) {
    const KernelFact& want = kKernels[i];
    const TileGraph& g = result_.kernels[i].graph;
    SCOPED_TRACE(want.module);
    EXPECT_EQ(result_.kernels[i].record, "kernel " + std::to_string(i) + " (" + want.module + ")");
    EXPECT_EQ(g.name, want.output);
    EXPECT_EQ(g.num_configs(), want.configs);
    EXPECT_EQ(g.num_nodes, want.nodes);
    EXPECT_EQ(g.num_edges(), want.edges);
    // One normalizer per kernel: its default run, run 0, which is kept as config 0.
    EXPECT_EQ(g.config_runtime[0], want.normalizer);
    for (int64_t n : g.config_runtime_normalizers) EXPECT_EQ(n, want.normalizer);
    // kernel_bounds only in kernels 1-4 (the convolution fusions); input_bounds never.
    EXPECT_EQ(any_nonzero(g, 0, 7), i >= 1 && i <= 4);
    EXPECT_FALSE(any_nonzero(g, 16, 23));
  }
  // The three reshape kernels carry an empty tile_size_config: all 24 columns 0.
  for (size_t i = 12; i < 15; ++i) EXPECT_FALSE(any_nonzero(result_.kernels[i].graph, 0, 23));
  const TileGraph& big = result_.kernels[1].graph;
  EXPECT_EQ(*std::min_element(big.config_runtime.begin(), big.config_runtime.end()), 137344);
}

TEST_F(RealTile, FusionKernelsHoldTheirFusedComputation) {
  // A fusion kernel's graph: the fused computation's instructions, then the entry
  // computation whose fusion instruction consumes the fused ROOT.
  const TileGraph& g = result_.kernels[0].graph;
  auto ops = opcode_counts(g.node_opcode);
  EXPECT_EQ(ops[opcode_id("fusion")], 1);
  for (int64_t e = 0; e < g.num_edges(); ++e) EXPECT_GT(g.edge_index[2 * e], g.edge_index[2 * e + 1]);
}

// --extra-features on the real records: column sums that count what §10 of the spec
// counted in the records (fusion kinds, get-tuple-elements, custom-call targets, ...).
TEST(RealExtraFeatures, CountWhatTheRecordsHold) {
  auto tile_data = real_file("op_tuning_data.pb");
  TileResult tile = featurize_tuning_data(tile_data.data(), scan_top_level(tile_data.data(), tile_data.size()),
                                          "op_tuning_data", true);
  std::vector<double> sums(kExtraNodeFeatDim, 0);
  for (const auto& k : tile.kernels) {
    ASSERT_EQ(k.extra.node_feat_extra.size(), static_cast<size_t>(k.graph.num_nodes) * kExtraNodeFeatDim);
    for (size_t i = 0; i < k.extra.node_feat_extra.size(); ++i) sums[i % kExtraNodeFeatDim] += k.extra.node_feat_extra[i];
  }
  EXPECT_EQ(sums[0], 14);  // kLoop fusions
  EXPECT_EQ(sums[1], 0);   // kInput
  EXPECT_EQ(sums[2], 4);   // kOutput
  auto layout_data = real_file("module_tuning_data_layout.pb");
  LayoutResult layout = featurize_module_tuning_data(
      layout_data.data(), layout_data.size(), scan_top_level(layout_data.data(), layout_data.size()),
      "module_tuning_data_layout", true);
  ASSERT_TRUE(layout.module.has_value());
  const std::vector<float>& x = layout.module->extra.node_feat_extra;
  ASSERT_EQ(x.size(), 3163u * kExtraNodeFeatDim);
  auto count = [&](int col, auto pred) {
    int n = 0;
    for (int64_t i = 0; i < 3163; ++i) n += pred(x[i * kExtraNodeFeatDim + col]);
    return n;
  };
  EXPECT_EQ(count(4, [](float v) { return v >= 0; }), 253);  // get-tuple-element indices
  EXPECT_EQ(count(11, [](float v) { return v == 1; }), 2661);  // the entry computation's nodes
  EXPECT_EQ(count(54, [](float v) { return v == 1; }), 6);     // X64SplitLow/High, X64Combine
  EXPECT_EQ(count(55, [](float v) { return v > 0; }), 67);     // all-reduces with replica groups
  int compares = 0;
  for (int col = 46; col < 52; ++col) compares += count(col, [](float v) { return v == 1; });
  EXPECT_EQ(compares, 71);  // one direction per compare
  EXPECT_EQ(count(18, [](float v) { return v > 0; }), 239);  // shapes with a TPU tiling
  // The release arrays do not change with the extra block.
  LayoutResult plain = featurize_module_tuning_data(
      layout_data.data(), layout_data.size(), scan_top_level(layout_data.data(), layout_data.size()),
      "module_tuning_data_layout", false);
  EXPECT_EQ(plain.module->graph.node_feat, layout.module->graph.node_feat);
  EXPECT_TRUE(plain.module->extra.node_feat_extra.empty());
}

}  // namespace
