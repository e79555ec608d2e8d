// Tile and layout graph records: save/load round trips, the dtype variants the loader
// accepts, and one test per validation rule (key and reason in the message).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/formats/npz_reader.h"
#include "common/formats/npz_writer.h"

using namespace tpuperf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// n = 5 nodes in a chain plus one extra edge; c = 3 configs.
TileGraph make_tile() {
  TileGraph g;
  g.num_nodes = 5;
  for (int i = 0; i < 5 * kNodeFeatDim; ++i) g.node_feat.push_back(i * 0.5f - 3);
  g.node_opcode = {63, 63, 26, 41, 100};
  g.edge_index = {1, 0, 2, 1, 3, 2, 4, 3, 4, 0};
  for (int i = 0; i < 3 * kTileConfigDim; ++i) g.config_feat.push_back(static_cast<float>(i % 9));
  g.config_runtime = {1000, 2500, 1700};
  g.config_runtime_normalizers = {1000, 1000, 1000};
  return g;
}

// n = 6 nodes, nc = 2 configurable nodes, c = 3 configs, two computations.
LayoutGraph make_layout() {
  LayoutGraph g;
  g.num_nodes = 6;
  for (int i = 0; i < 6 * kNodeFeatDim; ++i) g.node_feat.push_back(static_cast<float>(i % 11));
  g.node_opcode = {63, 26, 34, 75, 2, 100};
  g.edge_index = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4};
  g.node_config_ids = {1, 3};
  for (int i = 0; i < 3 * 2 * kLayoutConfigDim; ++i) g.node_config_feat.push_back(static_cast<int8_t>(i % 7 - 1));
  g.config_runtime = {5000, 5100, 4900};
  g.node_splits = {0, 3, 6};
  return g;
}

using Arrays = std::vector<std::pair<std::string, NpyArray>>;

// The file's arrays as save_*_graph would write them, for tests to tamper with.
Arrays tile_arrays(const TileGraph& g) {
  return {{"node_feat", NpyArray::from(g.node_feat, {g.num_nodes, kNodeFeatDim})},
          {"node_opcode", NpyArray::from(g.node_opcode, {g.num_nodes})},
          {"edge_index", NpyArray::from(g.edge_index, {g.num_edges(), 2})},
          {"config_feat", NpyArray::from(g.config_feat, {g.num_configs(), kTileConfigDim})},
          {"config_runtime", NpyArray::from(g.config_runtime, {g.num_configs()})},
          {"config_runtime_normalizers", NpyArray::from(g.config_runtime_normalizers, {g.num_configs()})}};
}

Arrays layout_arrays(const LayoutGraph& g) {
  std::vector<float> cfg(g.node_config_feat.begin(), g.node_config_feat.end());
  return {{"node_feat", NpyArray::from(g.node_feat, {g.num_nodes, kNodeFeatDim})},
          {"node_opcode", NpyArray::from(g.node_opcode, {g.num_nodes})},
          {"edge_index", NpyArray::from(g.edge_index, {g.num_edges(), 2})},
          {"node_config_feat",
           NpyArray::from(cfg, {g.num_configs(), g.num_config_nodes(), kLayoutConfigDim})},
          {"node_config_ids", NpyArray::from(g.node_config_ids, {g.num_config_nodes()})},
          {"config_runtime", NpyArray::from(g.config_runtime, {g.num_configs()})},
          {"node_splits", NpyArray::from(g.node_splits, {1, static_cast<int64_t>(g.node_splits.size())})}};
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void replace(Arrays& arrays, const std::string& key, NpyArray a) {
  for (auto& [k, v] : arrays)
    if (k == key) v = std::move(a);
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ + "/bad.npz";
  }

  std::string write(const std::string& name, const Arrays& arrays, bool compress = false) {
    std::string p = dir_ + "/" + name;
    NpzWriter w(p, compress);
    for (const auto& [k, v] : arrays) w.add(k, v);
    w.close();
    return p;
  }
  // Loading a tampered file (always path_) fails with "<path>: key '<key>': <reason>".
  std::string tile_error(const Arrays& arrays) {
    std::string p = write("bad.npz", arrays);
    return error_of([&] { load_tile_graph(p); });
  }
  std::string layout_error(const Arrays& arrays) {
    std::string p = write("bad.npz", arrays);
    return error_of([&] { load_layout_graph(p); });
  }
  std::string at(const std::string& key) const { return path_ + ": key '" + key + "': "; }

  TempDir tmp_{"graph"};
  std::string dir_ = tmp_.path(), path_;
};

void expect_same(const TileGraph& a, const TileGraph& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.node_feat, b.node_feat);
  EXPECT_EQ(a.node_opcode, b.node_opcode);
  EXPECT_EQ(a.edge_index, b.edge_index);
  EXPECT_EQ(a.config_feat, b.config_feat);
  EXPECT_EQ(a.config_runtime, b.config_runtime);
  EXPECT_EQ(a.config_runtime_normalizers, b.config_runtime_normalizers);
}

void expect_same(const LayoutGraph& a, const LayoutGraph& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.node_feat, b.node_feat);
  EXPECT_EQ(a.node_opcode, b.node_opcode);
  EXPECT_EQ(a.edge_index, b.edge_index);
  EXPECT_EQ(a.node_config_ids, b.node_config_ids);
  EXPECT_EQ(a.node_config_feat, b.node_config_feat);
  EXPECT_EQ(a.config_runtime, b.config_runtime);
  EXPECT_EQ(a.node_splits, b.node_splits);
}

}  // namespace

TEST(FileStem, StripsDirectoryAndNpz) {
  EXPECT_EQ(file_stem("/data/npz/tile/xla/train/resnet50.4x4.fp16.npz"), "resnet50.4x4.fp16");
  EXPECT_EQ(file_stem("alexnet_train_batch_32_-1bae27a41d70f4dc.npz"),
            "alexnet_train_batch_32_-1bae27a41d70f4dc");
  EXPECT_EQ(file_stem("dir/name.4x4"), "name.4x4");
}

TEST_F(GraphTest, TileRoundTrip) {
  TileGraph g = make_tile();
  validate(g);
  for (bool compress : {false, true}) {
    std::string p = dir_ + "/tile.one.npz";
    save_tile_graph(p, g, compress);
    TileGraph h = load_tile_graph(p);
    EXPECT_EQ(h.name, "tile.one");
    expect_same(g, h);
  }
}

TEST_F(GraphTest, LayoutRoundTrip) {
  LayoutGraph g = make_layout();
  validate(g);
  for (bool compress : {false, true}) {
    std::string p = dir_ + "/layout.npz";
    save_layout_graph(p, g, compress);
    LayoutGraph h = load_layout_graph(p);
    EXPECT_EQ(h.name, "layout");
    expect_same(g, h);
  }
}

TEST_F(GraphTest, SavedFilesUseTheReleaseKeysAndDtypes) {
  std::string tp = dir_ + "/t.npz", lp = dir_ + "/l.npz";
  save_tile_graph(tp, make_tile(), true);
  save_layout_graph(lp, make_layout(), true);
  NpzReader t(tp);
  EXPECT_EQ(sorted(t.keys()), sorted({"node_feat", "node_opcode", "edge_index", "config_feat",
                                      "config_runtime", "config_runtime_normalizers"}));
  EXPECT_EQ(t.header("node_opcode").dtype, DType::U1);
  EXPECT_EQ(t.header("edge_index").dtype, DType::I8);
  EXPECT_EQ(t.header("edge_index").shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(t.header("node_feat").dtype, DType::F4);
  EXPECT_EQ(t.header("config_feat").shape, (std::vector<int64_t>{3, 24}));
  EXPECT_EQ(t.header("config_runtime_normalizers").dtype, DType::I8);
  NpzReader l(lp);
  EXPECT_EQ(sorted(l.keys()), sorted({"node_feat", "node_opcode", "edge_index", "node_config_ids",
                                      "node_config_feat", "config_runtime", "node_splits"}));
  EXPECT_EQ(l.header("node_splits").shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(l.header("node_splits").dtype, DType::I8);
  EXPECT_EQ(l.header("node_config_ids").dtype, DType::I8);
  NpyArray cfg = l.read("node_config_feat");
  EXPECT_EQ(cfg.dtype, DType::F4);
  EXPECT_EQ(cfg.shape, (std::vector<int64_t>{3, 2, 18}));
  std::vector<int8_t> values = make_layout().node_config_feat;
  EXPECT_EQ(cfg.to_float(), std::vector<float>(values.begin(), values.end()));
}

TEST_F(GraphTest, AcceptsTheReadmeDtypes) {
  // int32 opcodes, edges, ids, runtimes and splits; (k,) splits; float64 features.
  TileGraph tg = make_tile();
  Arrays ta = tile_arrays(tg);
  replace(ta, "node_opcode", NpyArray::from(std::vector<int32_t>(tg.node_opcode.begin(), tg.node_opcode.end()), {5}));
  replace(ta, "edge_index", NpyArray::from(std::vector<int32_t>(tg.edge_index.begin(), tg.edge_index.end()), {5, 2}));
  replace(ta, "config_runtime", NpyArray::from(std::vector<int32_t>{1000, 2500, 1700}, {3}));
  replace(ta, "node_feat", NpyArray::from(std::vector<double>(tg.node_feat.begin(), tg.node_feat.end()), {5, 140}));
  expect_same(tg, load_tile_graph(write("t32.npz", ta)));

  LayoutGraph lg = make_layout();
  Arrays la = layout_arrays(lg);
  replace(la, "node_opcode", NpyArray::from(std::vector<int64_t>(lg.node_opcode.begin(), lg.node_opcode.end()), {6}));
  replace(la, "edge_index", NpyArray::from(std::vector<int32_t>(lg.edge_index.begin(), lg.edge_index.end()), {5, 2}));
  replace(la, "node_config_ids", NpyArray::from(std::vector<int32_t>{1, 3}, {2}));
  replace(la, "config_runtime", NpyArray::from(std::vector<int32_t>{5000, 5100, 4900}, {3}));
  replace(la, "node_splits", NpyArray::from(std::vector<int32_t>{0, 3, 6}, {3}));
  expect_same(lg, load_layout_graph(write("l32.npz", la, true)));
}

TEST_F(GraphTest, RejectsOtherDtypes) {
  Arrays a = tile_arrays(make_tile());
  replace(a, "edge_index", NpyArray::from(std::vector<float>(10, 1.f), {5, 2}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("edge_index") + "dtype <f4 is not accepted here (expected <i8, <i4)"));
}

TEST_F(GraphTest, MissingKey) {
  Arrays a = tile_arrays(make_tile());
  a.pop_back();
  EXPECT_THAT(tile_error(a), HasSubstr(at("config_runtime_normalizers") + "no such member"));
}

// ---- one test per validation rule ----

TEST_F(GraphTest, NodeFeatShapeMismatch) {
  Arrays a = tile_arrays(make_tile());
  replace(a, "node_feat", NpyArray::from(std::vector<float>(5 * 139), {5, 139}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("node_feat") + "shape (5, 139) does not match (n, 140)"));
  TileGraph g = make_tile();
  g.node_feat.pop_back();
  EXPECT_THAT(error_of([&] { validate(g); }),
              HasSubstr("key 'node_feat': holds 699 values, expected 5 x 140 = 700"));
}

TEST_F(GraphTest, OpcodeCountMismatch) {
  Arrays a = tile_arrays(make_tile());
  replace(a, "node_opcode", NpyArray::from(std::vector<uint8_t>{1, 2, 3}, {3}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("node_opcode") + "shape (3,) does not match (5,)"));
}

TEST_F(GraphTest, OpcodeOutOfRange) {
  Arrays a = tile_arrays(make_tile());
  replace(a, "node_opcode", NpyArray::from(std::vector<uint8_t>{1, 2, 121, 4, 5}, {5}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("node_opcode") + "node 2 has opcode 121, outside 0..120"));
  replace(a, "node_opcode", NpyArray::from(std::vector<int32_t>{1, 2, 3, 300, 5}, {5}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("node_opcode") + "node 3 has opcode 300, outside 0..120"));
  replace(a, "node_opcode", NpyArray::from(std::vector<int64_t>{-1, 2, 3, 4, 5}, {5}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("node_opcode") + "node 0 has opcode -1, outside 0..120"));
  TileGraph g = make_tile();
  g.node_opcode[4] = 200;
  EXPECT_THAT(error_of([&] { validate(g); }), HasSubstr("key 'node_opcode': node 4 has opcode 200"));
}

TEST_F(GraphTest, EdgeEndpointOutOfRange) {
  TileGraph g = make_tile();
  g.edge_index[7] = 5;  // edge 3 = [4, 5] with n = 5
  Arrays a = tile_arrays(g);
  EXPECT_THAT(tile_error(a), HasSubstr(at("edge_index") + "edge 3 endpoint 5 is outside [0, 5)"));
  g.edge_index[7] = -1;
  EXPECT_THAT(error_of([&] { validate(g); }),
              HasSubstr("key 'edge_index': edge 3 endpoint -1 is outside [0, 5)"));
  Arrays b = tile_arrays(make_tile());
  replace(b, "edge_index", NpyArray::from(std::vector<int64_t>(15), {5, 3}));
  EXPECT_THAT(tile_error(b), HasSubstr(at("edge_index") + "shape (5, 3) does not match (m, 2)"));
}

TEST_F(GraphTest, DuplicateNodeConfigId) {
  LayoutGraph g = make_layout();
  g.node_config_ids = {3, 3};
  EXPECT_THAT(layout_error(layout_arrays(g)),
              HasSubstr(at("node_config_ids") + "node 3 appears twice (entries 0 and 1)"));
}

TEST_F(GraphTest, NodeConfigIdOutOfRange) {
  LayoutGraph g = make_layout();
  g.node_config_ids = {1, 6};
  EXPECT_THAT(layout_error(layout_arrays(g)),
              HasSubstr(at("node_config_ids") + "entry 1 names node 6, outside [0, 6)"));
}

TEST_F(GraphTest, ConfigValueNotInRange) {
  LayoutGraph g = make_layout();
  Arrays a = layout_arrays(g);
  std::vector<float> cfg(g.node_config_feat.begin(), g.node_config_feat.end());
  cfg[18 + 3] = 7;  // config 0, config node 1, column 3
  replace(a, "node_config_feat", NpyArray::from(cfg, {3, 2, 18}));
  EXPECT_THAT(layout_error(a), HasSubstr(at("node_config_feat") +
                                         "value 7 at config 0, config node 1, column 3 is not an "
                                         "integer in -1..5"));
  cfg[18 + 3] = 0;
  cfg[2 * 36 + 5] = 0.5f;  // config 2, config node 0, column 5
  replace(a, "node_config_feat", NpyArray::from(cfg, {3, 2, 18}));
  EXPECT_THAT(layout_error(a), HasSubstr(at("node_config_feat") +
                                         "value 0.5 at config 2, config node 0, column 5 is not an "
                                         "integer in -1..5"));
  cfg[2 * 36 + 5] = std::nanf("");
  replace(a, "node_config_feat", NpyArray::from(cfg, {3, 2, 18}));
  EXPECT_THAT(layout_error(a), HasSubstr("value nan at config 2"));
  // Values whose float-to-int conversion would be undefined, or that round into -1..5, in
  // float32 and float64 files (the vectorized check and its scalar fallback must agree).
  for (double bad : {1e30, -1e30, 5.5, -1.5, 2.0000002, -1e-40, 6.0, -2.0, HUGE_VAL, -HUGE_VAL}) {
    cfg[2 * 36 + 5] = static_cast<float>(bad);
    replace(a, "node_config_feat", NpyArray::from(cfg, {3, 2, 18}));
    EXPECT_THAT(layout_error(a), HasSubstr("at config 2, config node 0, column 5 is not an integer in -1..5"))
        << bad;
    std::vector<double> cfg64(cfg.begin(), cfg.end());
    cfg64[2 * 36 + 5] = bad;
    replace(a, "node_config_feat", NpyArray::from(cfg64, {3, 2, 18}));
    EXPECT_THAT(layout_error(a), HasSubstr("at config 2, config node 0, column 5 is not an integer in -1..5"))
        << bad;
  }
  cfg[2 * 36 + 5] = -0.0f;  // an integer, as numpy sees it
  replace(a, "node_config_feat", NpyArray::from(cfg, {3, 2, 18}));
  EXPECT_EQ(load_layout_graph(write("zero.npz", a)).node_config_feat[2 * 36 + 5], 0);
  g.node_config_feat[10] = -2;
  EXPECT_THAT(error_of([&] { validate(g); }),
              HasSubstr("key 'node_config_feat': value -2 at config 0, config node 0, column 10"));
}

TEST_F(GraphTest, ConfigFeatShapeMismatch) {
  LayoutGraph g = make_layout();
  Arrays a = layout_arrays(g);
  replace(a, "node_config_feat", NpyArray::from(std::vector<float>(3 * 3 * 18), {3, 3, 18}));
  EXPECT_THAT(layout_error(a), HasSubstr(at("node_config_feat") + "shape (3, 3, 18) does not match (3, 2, 18)"));
}

TEST_F(GraphTest, NegativeRuntime) {
  TileGraph g = make_tile();
  g.config_runtime[1] = -4;
  EXPECT_THAT(tile_error(tile_arrays(g)),
              HasSubstr(at("config_runtime") + "config 1 has config_runtime -4, expected >= 0"));
  LayoutGraph l = make_layout();
  l.config_runtime[2] = -1;
  EXPECT_THAT(layout_error(layout_arrays(l)),
              HasSubstr(at("config_runtime") + "config 2 has config_runtime -1, expected >= 0"));
  TileGraph z = make_tile();
  z.config_runtime_normalizers[0] = 0;
  EXPECT_THAT(error_of([&] { validate(z); }),
              HasSubstr("key 'config_runtime_normalizers': config 0 has config_runtime_normalizers 0, "
                        "expected >= 1"));
}

TEST_F(GraphTest, ZeroConfigs) {
  TileGraph g = make_tile();
  g.config_feat.clear();
  g.config_runtime.clear();
  g.config_runtime_normalizers.clear();
  EXPECT_THAT(tile_error(tile_arrays(g)),
              HasSubstr(at("config_runtime") + "no configurations (at least one is needed)"));
  LayoutGraph l = make_layout();
  l.node_config_feat.clear();
  l.config_runtime.clear();
  EXPECT_THAT(layout_error(layout_arrays(l)), HasSubstr(at("config_runtime") + "no configurations"));
}

TEST_F(GraphTest, TileConfigFeatWidth23) {
  TileGraph g = make_tile();
  Arrays a = tile_arrays(g);
  replace(a, "config_feat", NpyArray::from(std::vector<float>(3 * 23), {3, 23}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("config_feat") + "shape (3, 23) does not match (c, 24)"));
  g.config_feat.resize(3 * 23);
  EXPECT_THAT(error_of([&] { validate(g); }),
              HasSubstr("key 'config_feat': holds 69 values, expected 3 x 24 = 72"));
}

TEST_F(GraphTest, RuntimeCountMismatch) {
  Arrays a = tile_arrays(make_tile());
  replace(a, "config_runtime_normalizers", NpyArray::from(std::vector<int64_t>{1, 1}, {2}));
  EXPECT_THAT(tile_error(a), HasSubstr(at("config_runtime_normalizers") + "shape (2,) does not match (3,)"));
}

TEST_F(GraphTest, NonFiniteNodeFeat) {
  TileGraph g = make_tile();
  g.node_feat[2 * 140 + 17] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(tile_error(tile_arrays(g)), HasSubstr(at("node_feat") + "node 2 feature 17 is nan"));
  g.node_feat[2 * 140 + 17] = 0;
  g.node_feat[4 * 140 + 139] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT(error_of([&] { validate(g); }), HasSubstr("key 'node_feat': node 4 feature 139 is -inf"));
}

TEST_F(GraphTest, NodeSplitsOutOfRange) {
  LayoutGraph g = make_layout();
  g.node_splits = {0, 3, 7};
  EXPECT_THAT(layout_error(layout_arrays(g)),
              HasSubstr(at("node_splits") + "split 2 is 7: splits must be non-decreasing within [0, 6]"));
  g.node_splits = {0, 4, 3, 6};
  EXPECT_THAT(error_of([&] { validate(g); }), HasSubstr("key 'node_splits': split 2 is 3"));
  g.node_splits = {-1, 6};
  EXPECT_THAT(error_of([&] { validate(g); }), HasSubstr("key 'node_splits': split 0 is -1"));
  Arrays a = layout_arrays(make_layout());
  replace(a, "node_splits", NpyArray::from(std::vector<int64_t>{0, 3, 6}, {3, 1}));
  EXPECT_THAT(layout_error(a), HasSubstr(at("node_splits") + "shape (3, 1) does not match (1, k)"));
}

TEST_F(GraphTest, NoNodes) {
  TileGraph g = make_tile();
  g.num_nodes = 0;
  g.node_feat.clear();
  g.node_opcode.clear();
  g.edge_index.clear();
  EXPECT_THAT(tile_error(tile_arrays(g)), HasSubstr(at("node_feat") + "graph has no nodes"));
}

TEST_F(GraphTest, ErrorsFromTheArchiveNameFileAndKey) {
  std::string p = dir_ + "/damaged.npz";
  save_tile_graph(p, make_tile(), false);
  // Flip one byte inside the node_feat data (feature 0 of node 0 is -3.0f = 0xc0400000).
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t at_feat = bytes.find(std::string("\x00\x00\x40\xc0", 4));
  ASSERT_NE(at_feat, std::string::npos);
  bytes[at_feat + 1] = 1;
  std::ofstream(p, std::ios::binary) << bytes;
  EXPECT_THAT(error_of([&] { load_tile_graph(p); }), HasSubstr(p + ": key 'node_feat': CRC mismatch"));
}
