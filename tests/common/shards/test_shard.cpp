// ShardWriter/ShardReader: exact round trips, partial reads, temporary-file handling and
// detection of damaged files.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <stdlib.h>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/shards/shard_reader.h"
#include "common/shards/shard_writer.h"

namespace tpuperf {
namespace {

namespace fs = std::filesystem;

constexpr int kF = 6;

// Common part of both kinds, filled from a seeded generator so that every graph differs.
ProcessedGraph make_base(const std::string& collection, const std::string& name, int64_t nodes,
                         int64_t edges, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-100.f, 100.f);
  ProcessedGraph g;
  g.collection = collection;
  g.split = "train";
  g.name = name;
  g.fold = static_cast<int>(seed % 5);
  g.num_nodes = nodes;
  g.num_node_feat = kF;
  for (int64_t i = 0; i < nodes * kF; ++i) g.node_feat.push_back(real(rng));
  for (int64_t i = 0; i < nodes; ++i) g.node_opcode.push_back(static_cast<uint8_t>(rng() % 121));
  for (int64_t e = 0; e < edges; ++e) {
    g.edge_index.push_back(static_cast<int32_t>(rng() % nodes));
    g.edge_index.push_back(static_cast<int32_t>(rng() % nodes));
  }
  g.nodes_before = nodes + seed % 7;
  g.edges_before = edges + seed % 3;
  return g;
}

ProcessedGraph make_tile(const std::string& name, int64_t nodes, int64_t edges, int64_t configs,
                         unsigned seed) {
  ProcessedGraph g = make_base("tile:xla", name, nodes, edges, seed);
  std::mt19937_64 rng(seed + 1000);
  for (int64_t c = 0; c < configs; ++c) {
    g.config_runtime.push_back(static_cast<int64_t>(rng() % 10000000000ULL));
    g.config_runtime_normalizers.push_back(static_cast<int64_t>(rng() % 1000 + 1));
    for (int j = 0; j < kTileConfigDim; ++j) g.config_feat.push_back(static_cast<float>(rng() % 4096) / 8.f);
  }
  g.configs_before = configs + 3;
  return g;
}

ProcessedGraph make_layout(const std::string& name, int64_t nodes, int64_t edges, int64_t configs,
                           int64_t nc, unsigned seed) {
  ProcessedGraph g = make_base("layout:nlp:random", name, nodes, edges, seed);
  std::mt19937_64 rng(seed + 2000);
  for (int64_t k = 0; k < nc; ++k) g.node_config_ids.push_back(static_cast<int32_t>(rng() % nodes));
  for (int64_t c = 0; c < configs; ++c) {
    g.config_runtime.push_back(static_cast<int64_t>(rng() % 100000000ULL));
    for (int64_t k = 0; k < nc; ++k) g.node_config_packed.push_back(rng() % 1628413597910449ULL);
  }
  g.node_splits = {0, nodes / 3, nodes};
  g.configs_before = configs * 2;
  return g;
}

void expect_same(const ProcessedGraph& a, const ProcessedGraph& b) {
  EXPECT_EQ(a.collection, b.collection);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.fold, b.fold);
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.num_node_feat, b.num_node_feat);
  EXPECT_EQ(a.node_feat, b.node_feat) << a.name;
  EXPECT_EQ(a.node_opcode, b.node_opcode) << a.name;
  EXPECT_EQ(a.edge_index, b.edge_index) << a.name;
  EXPECT_EQ(a.config_runtime, b.config_runtime) << a.name;
  EXPECT_EQ(a.config_feat, b.config_feat) << a.name;
  EXPECT_EQ(a.config_runtime_normalizers, b.config_runtime_normalizers) << a.name;
  EXPECT_EQ(a.node_config_ids, b.node_config_ids) << a.name;
  EXPECT_EQ(a.node_config_packed, b.node_config_packed) << a.name;
  EXPECT_EQ(a.node_splits, b.node_splits) << a.name;
  EXPECT_EQ(a.configs_before, b.configs_before);
  EXPECT_EQ(a.nodes_before, b.nodes_before);
  EXPECT_EQ(a.edges_before, b.edges_before);
}

std::vector<ProcessedGraph> tile_graphs() {
  return {
      make_tile("resnet50.4x4.fp16", 37, 60, 50, 1),
      make_tile("no_edges", 1, 0, 8, 2),
      make_tile("one_config", 5, 4, 1, 3),
      // More rows than one 64 KiB chunk holds (2730 node rows), so rows stream in chunks.
      make_tile("big", 12000, 20000, 3000, 4),
      make_tile("no_configs", 3, 2, 0, 5),
  };
}

std::vector<ProcessedGraph> layout_graphs() {
  return {
      make_layout("bert_en_cased", 40, 70, 30, 6, 11),
      make_layout("no_edges", 3, 0, 4, 2, 12),
      make_layout("one_config", 10, 12, 1, 3, 13),
      // 2500 x 20 packed values span several 64 KiB chunks.
      make_layout("big", 5000, 8000, 2500, 20, 14),
  };
}

std::string write_shard(const std::string& path, const std::string& collection,
                        const std::vector<ProcessedGraph>& graphs, int deflate = 4) {
  ShardWriter w(path, collection, "train", deflate);
  int64_t last = 0;
  for (const auto& g : graphs) {
    w.add(g);
    EXPECT_GT(w.bytes_added(), last);
    last = w.bytes_added();
  }
  EXPECT_EQ(w.num_graphs(), static_cast<int64_t>(graphs.size()));
  w.close();
  return path;
}

// num_node_feat: the graphs' node feature columns; a shard without graphs has 140.
void expect_round_trip(const std::string& path, const std::string& collection,
                       const std::vector<ProcessedGraph>& graphs, int num_node_feat = kF) {
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  ShardReader r(path);
  EXPECT_EQ(r.collection(), collection);
  EXPECT_EQ(r.split(), "train");
  EXPECT_EQ(r.num_node_feat(), num_node_feat);
  ASSERT_EQ(r.num_graphs(), static_cast<int64_t>(graphs.size()));
  for (size_t i = 0; i < graphs.size(); ++i) {
    const ProcessedGraph& g = graphs[i];
    const ShardGraphInfo& info = r.info(static_cast<int64_t>(i));
    EXPECT_EQ(info.name, g.name);
    EXPECT_EQ(info.fold, g.fold);
    EXPECT_EQ(info.num_nodes, g.num_nodes);
    EXPECT_EQ(info.num_edges, g.num_edges());
    EXPECT_EQ(info.num_configs, g.num_configs());
    EXPECT_EQ(info.num_config_nodes, static_cast<int64_t>(g.node_config_ids.size()));
    EXPECT_EQ(info.configs_before, g.configs_before);
    EXPECT_EQ(r.find(g.name), static_cast<int64_t>(i));
    expect_same(r.read(static_cast<int64_t>(i)), g);
  }
  EXPECT_EQ(r.find("absent"), -1);
}

TEST(Shard, TileRoundTrip) {
  TempDir dir;
  auto graphs = tile_graphs();
  expect_round_trip(write_shard(dir.file("tile.h5"), "tile:xla", graphs), "tile:xla", graphs);
}

TEST(Shard, LayoutRoundTrip) {
  TempDir dir;
  auto graphs = layout_graphs();
  for (auto& g : graphs) g.collection = "layout:nlp:random";
  expect_round_trip(write_shard(dir.file("layout.h5"), "layout:nlp:random", graphs),
                    "layout:nlp:random", graphs);
}

TEST(Shard, UncompressedRoundTrip) {
  TempDir dir;
  auto graphs = layout_graphs();
  expect_round_trip(write_shard(dir.file("layout.h5"), "layout:nlp:random", graphs, 0),
                    "layout:nlp:random", graphs);
}

TEST(Shard, SetFoldBeforeClose) {
  TempDir dir;
  auto graphs = tile_graphs();
  ShardWriter w(dir.file("s.h5"), "tile:xla", "train", 1);
  for (const auto& g : graphs) w.add(g);
  w.set_fold(0, 4);
  w.set_fold(3, kFoldValid);
  EXPECT_THROW(w.set_fold(5, 0), Error);
  w.close();
  EXPECT_THROW(w.set_fold(0, 1), Error);
  graphs[0].fold = 4;
  graphs[3].fold = kFoldValid;
  expect_round_trip(dir.file("s.h5"), "tile:xla", graphs);
}

TEST(Shard, EmptyShard) {
  TempDir dir;
  expect_round_trip(write_shard(dir.file("empty.h5"), "tile:xla", {}), "tile:xla", {}, kNodeFeatDim);
}

// Graph collection/split may be left empty: the shard's are filled in on read.
TEST(Shard, EmptyCollectionAndSplitTakeTheShards) {
  TempDir dir;
  auto g = make_tile("x", 4, 3, 2, 9);
  g.collection.clear();
  g.split.clear();
  write_shard(dir.file("s.h5"), "tile:xla", {g});
  ProcessedGraph back = ShardReader(dir.file("s.h5")).read(0);
  EXPECT_EQ(back.collection, "tile:xla");
  EXPECT_EQ(back.split, "train");
}

void expect_config_rows(const ShardReader& r, int64_t i, const std::vector<int64_t>& idx) {
  const ProcessedGraph full = r.read(i);
  const ConfigRows rows = r.read_configs(i, idx);
  const size_t nc = full.node_config_ids.size();
  ASSERT_EQ(rows.indices, idx);
  ASSERT_EQ(rows.config_runtime.size(), idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    const size_t c = static_cast<size_t>(idx[k]);
    EXPECT_EQ(rows.config_runtime[k], full.config_runtime[c]);
    if (r.is_tile()) {
      ASSERT_EQ(rows.config_feat.size(), idx.size() * kTileConfigDim);
      EXPECT_EQ(rows.config_runtime_normalizers[k], full.config_runtime_normalizers[c]);
      EXPECT_TRUE(std::equal(rows.config_feat.begin() + k * kTileConfigDim,
                             rows.config_feat.begin() + (k + 1) * kTileConfigDim,
                             full.config_feat.begin() + c * kTileConfigDim));
    } else {
      ASSERT_EQ(rows.node_config_packed.size(), idx.size() * nc);
      EXPECT_TRUE(rows.config_feat.empty());
      EXPECT_TRUE(std::equal(rows.node_config_packed.begin() + k * nc,
                             rows.node_config_packed.begin() + (k + 1) * nc,
                             full.node_config_packed.begin() + c * nc));
    }
  }
}

void expect_structure(const ShardReader& r, int64_t i) {
  ProcessedGraph full = r.read(i);
  const ProcessedGraph s = r.read_structure(i);
  EXPECT_TRUE(s.config_feat.empty());
  EXPECT_TRUE(s.config_runtime_normalizers.empty());
  EXPECT_TRUE(s.node_config_packed.empty());
  full.config_feat.clear();
  full.config_runtime_normalizers.clear();
  full.node_config_packed.clear();
  expect_same(s, full);  // including config_runtime
}

TEST(Shard, StructureAndScatteredConfigs) {
  TempDir dir;
  auto tiles = tile_graphs();
  auto layouts = layout_graphs();
  ShardReader tile(write_shard(dir.file("t.h5"), "tile:xla", tiles));
  ShardReader layout(write_shard(dir.file("l.h5"), "layout:nlp:random", layouts));
  for (int64_t i = 0; i < tile.num_graphs(); ++i) expect_structure(tile, i);
  for (int64_t i = 0; i < layout.num_graphs(); ++i) expect_structure(layout, i);
  // Unsorted, repeated, adjacent (runs), first and last; the big graphs span chunks.
  expect_config_rows(tile, 3, {2999, 0, 1, 2, 1500, 7, 7, 2048, 1499});
  expect_config_rows(tile, 2, {0});
  expect_config_rows(tile, 0, {});
  expect_config_rows(layout, 3, {2499, 3, 4, 5, 100, 1000, 999, 3, 0});
  expect_config_rows(layout, 2, {0, 0});
  expect_config_rows(layout, 0, {29, 28, 10});
  EXPECT_THROW(tile.read_configs(2, {1}), Error);
  EXPECT_THROW(layout.read_configs(0, {-1}), Error);
  EXPECT_THROW(layout.read(99), Error);
}

TEST(Shard, DestructorWithoutCloseRemovesTemporaryFile) {
  TempDir dir;
  const std::string path = dir.file("s.h5");
  {
    ShardWriter w(path, "tile:xla", "train", 1);
    w.add(make_tile("a", 4, 3, 2, 1));
    EXPECT_TRUE(fs::exists(path + ".tmp"));
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path));
}

TEST(Shard, RejectsInconsistentGraphAndStaysUsable) {
  TempDir dir;
  const std::string path = dir.file("s.h5");
  ShardWriter w(path, "tile:xla", "train", 1);
  auto good = make_tile("good", 4, 3, 2, 1);
  auto bad = make_tile("bad", 4, 3, 2, 2);
  bad.node_feat.pop_back();
  try {
    w.add(bad);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node_feat"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'bad'"), std::string::npos) << e.what();
  }
  auto wrong_edge = make_tile("edge", 4, 3, 2, 3);
  wrong_edge.edge_index[1] = 4;
  EXPECT_THROW(w.add(wrong_edge), Error);
  auto other = make_tile("other", 4, 3, 2, 4);
  other.collection = "tile:other";
  EXPECT_THROW(w.add(other), Error);
  w.add(good);
  EXPECT_THROW(w.add(good), Error);  // same name twice
  w.close();
  expect_round_trip(path, "tile:xla", {good});
}

// Runs in a child process: a file size limit makes writes fail as a full disk would.
void write_past_size_limit(const std::string& path) {
  std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of being killed
  rlimit limit{256 * 1024, 256 * 1024};
  setrlimit(RLIMIT_FSIZE, &limit);
  try {
    ShardWriter w(path, "tile:xla", "train", 0);
    w.add(make_tile("big", 100000, 10, 2, 1));  // 2.4 MB of node features
    w.close();
    std::fprintf(stderr, "no error\n");
    std::exit(1);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(fs::exists(path + ".tmp") || fs::exists(path) ? 2 : 0);
  }
}

// The error names the shard, the dataset and the cause; no temporary file is left, and
// the process exits normally afterwards (HDF5 could crash at exit after a failed close).
TEST(Shard, WriteFailureIsAnErrorNamingShardAndDataset) {
  TempDir dir;
  const std::string path = dir.file("full.h5");
  EXPECT_EXIT(write_past_size_limit(path), ::testing::ExitedWithCode(0),
              "full\\.h5: .*dataset '.*File too large");
}

TEST(Shard, NotAShardIsAClearError) {
  TempDir dir;
  auto expect_error = [](const std::string& path, const std::string& words) {
    try {
      ShardReader r(path);
      FAIL() << "expected an Error for " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error(dir.file("missing.h5"), "no such");
  std::ofstream(dir.file("text.h5")) << "hello, not HDF5\n";
  expect_error(dir.file("text.h5"), "not an HDF5 file");
  hid_t f = H5Fcreate(dir.file("plain.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  expect_error(dir.file("plain.h5"), "not a tpuperf shard");

  // Same file, other schema version.
  const std::string path = write_shard(dir.file("v.h5"), "tile:xla", {make_tile("a", 3, 2, 2, 1)});
  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
  const int32_t v = 99;
  H5Awrite(a, H5T_NATIVE_INT32, &v);
  H5Aclose(a);
  H5Fclose(f);
  expect_error(path, "schema_version 99");
  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  a = H5Aopen(f, "schema_version", H5P_DEFAULT);
  const int32_t zero = 0;
  H5Awrite(a, H5T_NATIVE_INT32, &zero);
  H5Aclose(a);
  H5Fclose(f);
  expect_error(path, "schema_version 0");
}

// Turns a shard written by this build into one of schema version 1, as the version-1
// writer left it: the same datasets plus a /feature_transform group of four chunked,
// checksummed datasets (the identity transform it always held).
void make_version1(const std::string& path, int columns) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
  const int32_t v1 = 1;
  ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT32, &v1), 0);
  H5Aclose(a);
  hid_t g = H5Gcreate2(f, "feature_transform", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(g, 0);
  std::vector<int32_t> kept(static_cast<size_t>(columns));
  for (int c = 0; c < columns; ++c) kept[static_cast<size_t>(c)] = c;
  const std::vector<uint8_t> log1p(kept.size(), 0);
  const std::vector<double> mean(kept.size(), 0.0), stddev(kept.size(), 1.0);
  auto dataset = [&](const char* name, hid_t file_type, hid_t mem_type, const void* data) {
    hsize_t dims[1] = {kept.size()}, chunk[1] = {std::max<hsize_t>(kept.size(), 1)};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    H5Pset_fletcher32(dcpl);
    hid_t d = H5Dcreate2(g, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    ASSERT_GE(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
  };
  dataset("kept_columns", H5T_STD_I32LE, H5T_NATIVE_INT32, kept.data());
  dataset("log1p", H5T_STD_U8LE, H5T_NATIVE_UINT8, log1p.data());
  dataset("mean", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, mean.data());
  dataset("stddev", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, stddev.data());
  H5Gclose(g);
  ASSERT_GE(H5Fclose(f), 0);
}

// Processed trees written before schema version 2 still load: their shards read as before
// and the leftover transform group is ignored.
TEST(Shard, Version1ShardStillReads) {
  TempDir dir;
  auto layouts = layout_graphs();
  for (auto& g : layouts) g.collection = "layout:nlp:random";
  const std::string layout = write_shard(dir.file("layout_v1.h5"), "layout:nlp:random", layouts);
  make_version1(layout, kF);
  expect_round_trip(layout, "layout:nlp:random", layouts);
  const ConfigRows rows = ShardReader(layout).read_configs(3, {2499, 0, 7});
  EXPECT_EQ(rows.config_runtime.size(), 3u);

  const auto tiles = tile_graphs();
  const std::string tile = write_shard(dir.file("tile_v1.h5"), "tile:xla", tiles);
  make_version1(tile, kF);
  expect_round_trip(tile, "tile:xla", tiles);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5A));
}

void expect_damage_reported(const std::string& path, int64_t index, const std::string& name,
                            const std::string& dataset) {
  ShardReader r(path);
  try {
    r.read(index);
    FAIL() << "damaged graph read without error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + name + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index " + std::to_string(index)), std::string::npos) << msg;
    EXPECT_NE(msg.find("dataset '" + dataset + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("checksum"), std::string::npos) << msg;
  }
}

// Uncompressed: the graph's node features lie in the file as written, so a recognizable
// pattern finds them without knowing anything about HDF5's layout.
TEST(Shard, FlippedByteInUncompressedDataIsDetected) {
  TempDir dir;
  const std::string path = dir.file("s.h5");
  auto marked = make_tile("resnet50.4x4.fp16", 64, 10, 4, 7);
  for (size_t i = 0; i < marked.node_feat.size(); ++i) marked.node_feat[i] = 1234567.f + static_cast<float>(i);
  write_shard(path, "tile:xla", {make_tile("a", 5, 4, 3, 1), make_tile("b", 5, 4, 3, 2),
                                 make_tile("c", 5, 4, 3, 3), marked}, 0);
  const std::string bytes = read_bytes(path);
  const std::string pattern(reinterpret_cast<const char*>(marked.node_feat.data()), 16 * sizeof(float));
  const size_t at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(pattern, at + 1), std::string::npos);
  flip_byte(path, at + 9);
  expect_damage_reported(path, 3, "resnet50.4x4.fp16", "node_feat");
}

// Compressed: ask HDF5 where the chunk holding the graph's first packed value lies.
TEST(Shard, FlippedByteInCompressedChunkIsDetected) {
  TempDir dir;
  const std::string path = dir.file("s.h5");
  auto graphs = layout_graphs();
  write_shard(path, "layout:nlp:random", graphs, 6);
  int64_t first = 0;  // packed values before graph 3
  for (int i = 0; i < 3; ++i) first += static_cast<int64_t>(graphs[i].node_config_packed.size());

  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "node_config_packed", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(d);
  hsize_t chunk = 0;
  H5Pget_chunk(dcpl, 1, &chunk);
  hsize_t coord = static_cast<hsize_t>(first) / chunk * chunk;
  unsigned mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
  ASSERT_GE(H5Dget_chunk_info_by_coord(d, &coord, &mask, &addr, &size), 0);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Fclose(f);
  ASSERT_GT(size, 16u);
  flip_byte(path, addr + size / 2);
  expect_damage_reported(path, 3, "big", "node_config_packed");
  // The checksum covers the stored (compressed) bytes, so it fails before inflate does.
  try {
    ShardReader(path).read(3);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Fletcher32"), std::string::npos) << e.what();
  }
  // Reading only configs is checked as well.
  ShardReader r(path);
  EXPECT_THROW(r.read_configs(3, {0}), Error);
}

}  // namespace
}  // namespace tpuperf
