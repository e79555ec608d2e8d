// GraphSet: loading shards through a manifest, feature transform, on-demand layout config
// rows. A small processed_dir is written here with the shard and manifest writers;
// expected values are computed independently in the test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/shards/manifest.h"
#include "common/metrics/metrics.h"
#include "common/shards/shard_writer.h"
#include "trainer/train/dataset.h"

namespace tpuperf {
namespace {

namespace fs = std::filesystem;

const char* kLayout = "layout:xla:random";
const char* kTile = "tile:xla";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tpuperf_test_dataset_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the preprocess driver stores in shards: all 140 columns, untransformed.
// The collection's fitted transform: a few columns, one with the log, non-trivial stats.
FeatureTransform fitted_transform() {
  FeatureTransform t;
  t.kept_columns = {0, 3, 21, 50, 139};
  t.log1p = {0, 1, 0, 0, 1};
  t.mean = {0.5, -1.25, 2.0, 0.0, 0.75};
  t.stddev = {2.0, 0.5, 3.0, 1.5, 4.0};
  return t;
}

// Independent of apply_transform: the formula of the docs, written out.
std::vector<float> expected_features(const FeatureTransform& t, const std::vector<float>& raw,
                                     int64_t n) {
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i)
    for (size_t j = 0; j < t.kept_columns.size(); ++j) {
      double x = raw[static_cast<size_t>(i * kNodeFeatDim + t.kept_columns[j])];
      if (t.log1p[j]) x = x < 0 ? -std::log1p(-x) : std::log1p(x);
      out.push_back(static_cast<float>((x - t.mean[j]) / t.stddev[j]));
    }
  return out;
}

ProcessedGraph make_base(const std::string& collection, const std::string& split,
                         const std::string& name, int fold, int64_t nodes, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-50.f, 50.f);
  ProcessedGraph g;
  g.collection = collection;
  g.split = split;
  g.name = name;
  g.fold = fold;
  g.num_nodes = nodes;
  g.num_node_feat = kNodeFeatDim;
  for (int64_t i = 0; i < nodes * kNodeFeatDim; ++i) g.node_feat.push_back(real(rng));
  for (int64_t i = 0; i < nodes; ++i) g.node_opcode.push_back(static_cast<uint8_t>(rng() % 121));
  for (int64_t e = 0; e < 2 * nodes; ++e) {
    g.edge_index.push_back(static_cast<int32_t>(rng() % nodes));
    g.edge_index.push_back(static_cast<int32_t>(rng() % nodes));
  }
  g.nodes_before = nodes;
  g.edges_before = 2 * nodes;
  return g;
}

ProcessedGraph make_layout(const std::string& split, const std::string& name, int fold,
                           int64_t nodes, int64_t configs, int64_t nc, unsigned seed) {
  ProcessedGraph g = make_base(kLayout, split, name, fold, nodes, seed);
  std::mt19937_64 rng(seed + 100);
  for (int64_t k = 0; k < nc; ++k) g.node_config_ids.push_back(static_cast<int32_t>(rng() % nodes));
  int8_t values[18];
  for (int64_t c = 0; c < configs; ++c) {
    g.config_runtime.push_back(static_cast<int64_t>(1000 + rng() % 1000000));
    for (int64_t k = 0; k < nc; ++k) {
      for (int8_t& v : values) v = static_cast<int8_t>(static_cast<int>(rng() % 7) - 1);
      g.node_config_packed.push_back(pack_layout_values(values));
    }
  }
  g.node_splits = {0, nodes / 2};
  g.configs_before = configs;
  return g;
}

ProcessedGraph make_tile(const std::string& name, int fold, int64_t nodes, int64_t configs,
                         unsigned seed) {
  ProcessedGraph g = make_base(kTile, "train", name, fold, nodes, seed);
  std::mt19937_64 rng(seed + 200);
  for (int64_t c = 0; c < configs; ++c) {
    g.config_runtime.push_back(static_cast<int64_t>(1 + rng() % 100000));
    g.config_runtime_normalizers.push_back(static_cast<int64_t>(1 + rng() % 100));
    for (int j = 0; j < kTileConfigDim; ++j) g.config_feat.push_back(static_cast<float>(rng() % 64));
  }
  g.configs_before = configs;
  return g;
}

// A processed_dir: layout train shard (3 graphs), layout valid shard (1), tile shard (2).
class ProcessedDir {
 public:
  ProcessedDir() {
    layout_train = {make_layout("train", "bert", 0, 30, 40, 5, 1),
                    make_layout("train", "resnet", 1, 12, 7, 3, 2),
                    make_layout("train", "mlp", 2, 20, 25, 4, 3)};
    layout_valid = {make_layout("valid", "vit", kFoldValid, 9, 11, 2, 4)};
    tile = {make_tile("t0", 0, 8, 15, 5), make_tile("t1", 1, 6, 9, 6)};
    // A recognizable run of raw features locates this graph's rows in the uncompressed
    // file for the corruption test.
    for (size_t i = 0; i < layout_train[2].node_feat.size(); ++i)
      layout_train[2].node_feat[i] = 7654321.f + static_cast<float>(i);

    fs::create_directories(dir.path() + "/layout_xla_random");
    fs::create_directories(dir.path() + "/tile_xla");
    write("layout_xla_random/train-00000.h5", kLayout, "train", layout_train);
    write("layout_xla_random/valid-00000.h5", kLayout, "valid", layout_valid);
    write("tile_xla/train-00000.h5", kTile, "train", tile);
    manifest.collections = {kLayout, kTile};
    manifest.feature_transforms[kLayout] = fitted_transform();
    FeatureTransform tt = fitted_transform();
    tt.kept_columns = {1, 2, 3};
    tt.log1p = {1, 0, 0};
    tt.mean = {0.1, 0.2, 0.3};
    tt.stddev = {1.5, 2.5, 3.5};
    manifest.feature_transforms[kTile] = tt;
    write_manifest(dir.path() + "/" + kManifestFileName, manifest);
  }

  std::string shard_path(const std::string& file) const { return dir.path() + "/" + file; }

  TempDir dir;
  Manifest manifest;
  std::vector<ProcessedGraph> layout_train, layout_valid, tile;

 private:
  void write(const std::string& file, const std::string& collection, const std::string& split,
             const std::vector<ProcessedGraph>& graphs) {
    ShardWriter w(shard_path(file), collection, split, 0);
    for (const ProcessedGraph& g : graphs) w.add(g);
    w.close();
    int64_t index = 0;
    for (const ProcessedGraph& g : graphs) {
      ManifestGraph m;
      m.collection = collection;
      m.split = split;
      m.name = g.name;
      m.shard = file;
      m.index = index++;
      m.fold = g.fold;
      m.num_nodes = g.num_nodes;
      m.num_edges = g.num_edges();
      m.num_configs = g.num_configs();
      m.configs_before = g.configs_before;
      m.nodes_before = g.nodes_before;
      m.edges_before = g.edges_before;
      manifest.graphs.push_back(m);
    }
    ManifestShard s;
    s.file = file;
    s.collection = collection;
    s.split = split;
    s.num_graphs = static_cast<int64_t>(graphs.size());
    manifest.shards.push_back(s);
  }
};

std::vector<uint64_t> packed_rows(const ProcessedGraph& g, const std::vector<int64_t>& configs) {
  const size_t nc = g.node_config_ids.size();
  std::vector<uint64_t> out;
  for (int64_t c : configs)
    for (size_t m = 0; m < nc; ++m) out.push_back(g.node_config_packed[static_cast<size_t>(c) * nc + m]);
  return out;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5A));
}

template <class T>
size_t find_pattern(const std::string& path, const T* data, size_t count) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  const std::string pattern(reinterpret_cast<const char*>(data), count * sizeof(T));
  const size_t at = bytes.find(pattern);
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(bytes.find(pattern, at + 1), std::string::npos);
  return at;
}

// ---------------------------------------------------------------------------------------
// GraphSet

TEST(GraphSet, LoadsSelectedLayoutGraphsWithTransformedFeatures) {
  ProcessedDir pd;
  GraphSet set(pd.dir.path(), kLayout,
               [](const ManifestGraph& m) { return m.split == "train" && m.fold != 1; }, "test");
  EXPECT_EQ(set.kind(), Kind::Layout);
  EXPECT_EQ(set.num_node_feat(), 5);
  ASSERT_EQ(set.size(), 2);
  const std::vector<const ProcessedGraph*> want = {&pd.layout_train[0], &pd.layout_train[2]};
  for (int64_t i = 0; i < set.size(); ++i) {
    const ProcessedGraph& g = set.graph(i);
    const ProcessedGraph& w = *want[static_cast<size_t>(i)];
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(set.entry(i).name, w.name);
    EXPECT_EQ(set.key(i), std::string(kLayout) + ":" + w.name);
    EXPECT_EQ(g.fold, w.fold);
    EXPECT_EQ(g.split, "train");
    EXPECT_EQ(g.num_node_feat, 5);
    const std::vector<float> expect = expected_features(fitted_transform(), w.node_feat, w.num_nodes);
    ASSERT_EQ(g.node_feat.size(), expect.size());
    for (size_t k = 0; k < expect.size(); ++k) ASSERT_FLOAT_EQ(g.node_feat[k], expect[k]) << k;
    EXPECT_EQ(g.node_opcode, w.node_opcode);
    EXPECT_EQ(g.edge_index, w.edge_index);
    EXPECT_EQ(g.config_runtime, w.config_runtime);
    EXPECT_EQ(g.node_config_ids, w.node_config_ids);
    EXPECT_EQ(g.node_splits, w.node_splits);
    EXPECT_TRUE(g.node_config_packed.empty()) << "layout rows are read on demand";
  }
  EXPECT_EQ(set.num_configs(), (std::vector<int64_t>{40, 25}));
  EXPECT_GT(set.memory_bytes(), 0);
}

TEST(GraphSet, ValidSplitFromItsOwnShard) {
  ProcessedDir pd;
  GraphSet set(pd.dir.path(), pd.manifest, kLayout,
               [](const ManifestGraph& m) { return m.split == "valid"; });
  ASSERT_EQ(set.size(), 1);
  EXPECT_EQ(set.graph(0).name, "vit");
  EXPECT_EQ(set.graph(0).fold, kFoldValid);
  const std::vector<int64_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(set.with_configs(0, all).node_config_packed, pd.layout_valid[0].node_config_packed);
}

TEST(GraphSet, LayoutWithConfigsReturnsExactlyTheRequestedRows) {
  ProcessedDir pd;
  GraphSet set(pd.dir.path(), kLayout, [](const ManifestGraph& m) { return m.split == "train"; });
  ASSERT_EQ(set.size(), 3);
  const ProcessedGraph& src = pd.layout_train[0];
  const std::vector<int64_t> pick = {39, 2, 17, 2, 0};
  ProcessedGraph v = set.with_configs(0, pick);
  EXPECT_EQ(v.node_config_packed, packed_rows(src, pick));
  ASSERT_EQ(v.num_configs(), 5);
  for (size_t s = 0; s < pick.size(); ++s)
    EXPECT_EQ(v.config_runtime[s], src.config_runtime[static_cast<size_t>(pick[s])]);
  EXPECT_EQ(v.node_feat, set.graph(0).node_feat);
  EXPECT_EQ(v.node_config_ids, src.node_config_ids);

  GraphSlate s = set.slate(1, {6, 0, 3});
  ASSERT_NE(s.graph, nullptr);
  EXPECT_EQ(s.graph, s.view.get());
  EXPECT_EQ(s.configs, (std::vector<int64_t>{6, 0, 3}));
  EXPECT_EQ(s.batch_configs, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(s.graph->node_config_packed, packed_rows(pd.layout_train[1], {6, 0, 3}));
  EXPECT_EQ(s.graph->config_runtime[0], pd.layout_train[1].config_runtime[6]);
  // The stored graph is untouched.
  EXPECT_TRUE(set.graph(1).node_config_packed.empty());
  EXPECT_EQ(set.graph(1).num_configs(), 7);

  EXPECT_THROW(set.with_configs(1, {7}), Error);
  EXPECT_THROW(set.slate(1, {-1}), Error);
  EXPECT_THROW(set.graph(3), Error);
}

// The config cache reaches HDF5 and changes where rows come from, never which: the same
// slates before and after it is set (the reader reopens its dataset with the cache), and
// with it set first. The fixture's config rows are a few chunks, less than HDF5's default
// 1 MiB per shard, so a cache holding all of them reports less than the default.
TEST(GraphSet, ConfigCacheReturnsTheSameRows) {
  ProcessedDir pd;
  auto train = [](const ManifestGraph& m) { return m.split == "train"; };
  GraphSet set(pd.dir.path(), kLayout, train);
  const std::vector<int64_t> pick = {39, 2, 17, 2, 0};
  const auto before = set.with_configs(0, pick).node_config_packed;
  const int64_t hdf5_default = set.config_cache_bytes();
  EXPECT_GT(hdf5_default, 0);
  EXPECT_EQ(hdf5_default % (1 << 20), 0);
  set.set_config_cache_mb(1);
  EXPECT_GT(set.config_cache_bytes(), 0);
  EXPECT_LT(set.config_cache_bytes(), hdf5_default);
  for (int round = 0; round < 2; ++round) {  // the second round reads from the cache
    EXPECT_EQ(set.with_configs(0, pick).node_config_packed, before);
    EXPECT_EQ(set.slate(1, {6, 0, 3}).graph->node_config_packed, packed_rows(pd.layout_train[1], {6, 0, 3}));
  }
  GraphSet cached_first(pd.dir.path(), kLayout, train);
  cached_first.set_config_cache_mb(0.01);  // raised to 1 MiB a shard, then capped at its rows
  EXPECT_EQ(cached_first.config_cache_bytes(), set.config_cache_bytes());
  EXPECT_EQ(cached_first.with_configs(0, pick).node_config_packed, packed_rows(pd.layout_train[0], pick));
}

TEST(GraphSet, TileConfigsAreCompleteInMemory) {
  ProcessedDir pd;
  GraphSet set(pd.dir.path(), kTile, [](const ManifestGraph&) { return true; });
  EXPECT_EQ(set.kind(), Kind::Tile);
  EXPECT_EQ(set.num_node_feat(), 3);
  ASSERT_EQ(set.size(), 2);
  for (int64_t i = 0; i < 2; ++i) {
    const ProcessedGraph& g = set.graph(i);
    const ProcessedGraph& w = pd.tile[static_cast<size_t>(i)];
    EXPECT_EQ(g.config_runtime, w.config_runtime);
    EXPECT_EQ(g.config_feat, w.config_feat);
    EXPECT_EQ(g.config_runtime_normalizers, w.config_runtime_normalizers);
    const std::vector<float> expect =
        expected_features(pd.manifest.feature_transforms[kTile], w.node_feat, w.num_nodes);
    ASSERT_EQ(g.node_feat.size(), expect.size());
    for (size_t k = 0; k < expect.size(); ++k) ASSERT_FLOAT_EQ(g.node_feat[k], expect[k]) << k;
  }
  // A tile slate points at the stored graph, with source indices.
  GraphSlate s = set.slate(0, {4, 1});
  EXPECT_EQ(s.graph, &set.graph(0));
  EXPECT_EQ(s.batch_configs, (std::vector<int64_t>{4, 1}));
  // with_configs also works for tile: rows in the requested order.
  ProcessedGraph v = set.with_configs(0, {4, 1});
  ASSERT_EQ(v.config_feat.size(), 2u * kTileConfigDim);
  EXPECT_TRUE(std::equal(v.config_feat.begin(), v.config_feat.begin() + kTileConfigDim,
                         pd.tile[0].config_feat.begin() + 4 * kTileConfigDim));
  EXPECT_EQ(v.config_runtime_normalizers,
            (std::vector<int64_t>{pd.tile[0].config_runtime_normalizers[4],
                                  pd.tile[0].config_runtime_normalizers[1]}));
}

TEST(GraphSet, MissingTransformIsAnError) {
  ProcessedDir pd;
  Manifest m = pd.manifest;
  m.feature_transforms.erase(kTile);
  try {
    GraphSet set(pd.dir.path(), m, kTile, [](const ManifestGraph&) { return true; });
    FAIL() << "loaded without a transform";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(kTile), std::string::npos) << e.what();
  }
}

TEST(GraphSet, ExplicitTransformOverridesTheManifest) {
  ProcessedDir pd;
  Manifest m = pd.manifest;
  m.feature_transforms.erase(kLayout);  // not needed when the caller brings one
  FeatureTransform t;
  t.kept_columns = {7, 3};
  t.log1p = {1, 1};
  t.mean = {-0.5, 1.0};
  t.stddev = {0.25, 2.0};
  GraphSet set(pd.dir.path(), m, kLayout, [](const ManifestGraph& g) { return g.name == "vit"; },
               "override", &t);
  EXPECT_EQ(set.num_node_feat(), 2);
  ASSERT_EQ(set.size(), 1);
  const std::vector<float> expect = expected_features(t, pd.layout_valid[0].node_feat, 9);
  ASSERT_EQ(set.graph(0).node_feat.size(), expect.size());
  for (size_t k = 0; k < expect.size(); ++k) ASSERT_FLOAT_EQ(set.graph(0).node_feat[k], expect[k]);
  EXPECT_EQ(set.transform().kept_columns, t.kept_columns);
}

TEST(GraphSet, ManifestThatDisagreesWithTheShardIsAnError) {
  ProcessedDir pd;
  Manifest m = pd.manifest;
  for (ManifestGraph& g : m.graphs)
    if (g.name == "resnet") g.index = 0;  // points at "bert"
  try {
    GraphSet set(pd.dir.path(), m, kLayout, [](const ManifestGraph& g) { return g.name == "resnet"; });
    FAIL() << "loaded the wrong graph";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("train-00000.h5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'resnet'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bert'"), std::string::npos) << msg;
  }
}

TEST(GraphSet, DamagedNodeFeaturesNameShardAndGraph) {
  ProcessedDir pd;
  const std::string path = pd.shard_path("layout_xla_random/train-00000.h5");
  const size_t at = find_pattern(path, pd.layout_train[2].node_feat.data(), 16);
  flip_byte(path, at + 9);
  try {
    // Only "mlp": the other graphs' rows share its checksummed chunk.
    GraphSet set(pd.dir.path(), kLayout, [](const ManifestGraph& m) { return m.name == "mlp"; });
    FAIL() << "damaged shard loaded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("'mlp'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("checksum"), std::string::npos) << msg;
  }
}

TEST(GraphSet, DamagedConfigRowsAreDetectedOnDemand) {
  ProcessedDir pd;
  const std::string path = pd.shard_path("layout_xla_random/train-00000.h5");
  GraphSet set(pd.dir.path(), kLayout, [](const ManifestGraph& m) { return m.split == "train"; });
  const auto& packed = pd.layout_train[0].node_config_packed;
  const size_t at = find_pattern(path, packed.data(), 8);
  flip_byte(path, at + 3);
  try {
    set.with_configs(0, {0});
    FAIL() << "damaged config rows read";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bert'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tpuperf
