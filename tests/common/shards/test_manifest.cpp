// Manifest: exact round trips (tricky strings and doubles included), the size of the real
// dataset, and errors that name the file and the missing field.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/shards/manifest.h"

namespace tpuperf {
namespace {

namespace fs = std::filesystem;

ManifestGraph graph(int i) {
  ManifestGraph g;
  g.collection = i % 2 ? "tile:xla" : "layout:nlp:random";
  g.split = i % 3 == 0 ? "train" : (i % 3 == 1 ? "valid" : "test");
  g.name = (i % 5 == 0) ? "0123456789abcdef0123456789abcde" + std::to_string(i % 10)
                        : "resnet50.4x4.fp16-" + std::to_string(i);
  g.shard = "tile_xla/train-r0-" + std::to_string(i / 100) + ".h5";
  g.index = i % 100;
  g.fold = i % 7 - 2;
  g.num_nodes = 10 + i;
  g.num_edges = 17 + 2 * i;
  g.num_configs = 1000 + i;
  g.configs_before = 1500 + i;
  g.nodes_before = 40000000000LL + i;  // > 2^32: int64 throughout
  g.edges_before = 30 + 3 * i;
  return g;
}

ManifestSource source(int i) {
  ManifestSource s;
  s.file = "tile/xla/train/graph " + std::to_string(i) + ".npz";
  s.collection = "tile:xla";
  s.split = "train";
  s.size_bytes = 123456789LL * (i + 1);
  s.mtime_ns = 1700000000123456789LL + i;
  s.hash = "0123456789abcdef";
  if (i % 4 == 3) {
    s.status = kSourceRejected;
    s.reason = "key 'node_feat': shape (3, 5) does not match (3, 140)";
  }
  return s;
}

Manifest sample(int graphs, int sources) {
  Manifest m;
  m.created = utc_now_iso8601();
  m.settings_digest = "a1b2c3d4e5f60718";
  // A config dump with the characters JSON and YAML care about.
  m.settings = "data:\n  raw_dir: /home/u/data: x\n  list: [1, 2]\n# comment\n  q: \"quoted\" 'single'\n"
               "\ttab: yes\n  trailing spaces   \n\n  unicode: \xc3\xa9\n";
  m.collections = {"tile:xla", "layout:nlp:random"};
  FeatureTransform t;
  t.kept_columns = {0, 2, 21, 139};
  t.log1p = {0, 1, 1, 0};
  t.mean = {0.1, 1.0 / 3.0, 1e-300, -12345678.901234567};
  t.stddev = {1.0, 2.5e10, 3.0000000000000004, 0.7};
  m.feature_transforms["tile:xla"] = t;
  m.feature_transforms["layout:nlp:random"] = FeatureTransform{};
  m.feature_files["tile:xla"] = "tile_xla/features-g1.h5";
  m.feature_files["layout:nlp:random"] = "layout_nlp_random/features-g2.h5";
  for (int i = 0; i < 3; ++i) {
    ManifestShard s;
    s.file = "tile_xla/train-r" + std::to_string(i) + "-00000.h5";
    s.collection = "tile:xla";
    s.split = "train";
    s.rank = i;
    s.index = 2 * i;
    s.size_bytes = 300000000LL + i;
    s.hash = "fedcba9876543210";
    s.num_graphs = 100 + i;
    m.shards.push_back(s);
  }
  for (int i = 0; i < graphs; ++i) m.graphs.push_back(graph(i));
  for (int i = 0; i < sources; ++i) m.sources.push_back(source(i));
  m.rejected.push_back({"layout/xla/random/train/unet_3d.4x4.bf16.npz", "node_config_feat",
                        "values outside -1..5: \"7\" at [3, 0, 2]"});
  m.rejected.push_back({"tile/xla/train/x.npz", "", "not a zip file\nsecond line"});
  return m;
}

void expect_same(const FeatureTransform& a, const FeatureTransform& b) {
  EXPECT_EQ(a.kept_columns, b.kept_columns);
  EXPECT_EQ(a.log1p, b.log1p);
  EXPECT_EQ(a.mean, b.mean);  // bit for bit
  EXPECT_EQ(a.stddev, b.stddev);
}

void expect_same(const Manifest& a, const Manifest& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  EXPECT_EQ(a.created, b.created);
  EXPECT_EQ(a.settings_digest, b.settings_digest);
  EXPECT_EQ(a.settings, b.settings);
  EXPECT_EQ(a.collections, b.collections);
  ASSERT_EQ(a.feature_transforms.size(), b.feature_transforms.size());
  for (const auto& [id, t] : a.feature_transforms) {
    ASSERT_TRUE(b.find_transform(id)) << id;
    expect_same(t, *b.find_transform(id));
  }
  EXPECT_EQ(a.feature_files, b.feature_files);
  ASSERT_EQ(a.shards.size(), b.shards.size());
  for (size_t i = 0; i < a.shards.size(); ++i) {
    const ManifestShard &x = a.shards[i], &y = b.shards[i];
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.collection, y.collection);
    EXPECT_EQ(x.split, y.split);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.size_bytes, y.size_bytes);
    EXPECT_EQ(x.hash, y.hash);
    EXPECT_EQ(x.num_graphs, y.num_graphs);
  }
  ASSERT_EQ(a.graphs.size(), b.graphs.size());
  for (size_t i = 0; i < a.graphs.size(); ++i) {
    const ManifestGraph &x = a.graphs[i], &y = b.graphs[i];
    ASSERT_EQ(x.collection, y.collection);
    ASSERT_EQ(x.split, y.split);
    ASSERT_EQ(x.name, y.name);
    ASSERT_EQ(x.shard, y.shard);
    ASSERT_EQ(x.index, y.index);
    ASSERT_EQ(x.fold, y.fold);
    ASSERT_EQ(x.num_nodes, y.num_nodes);
    ASSERT_EQ(x.num_edges, y.num_edges);
    ASSERT_EQ(x.num_configs, y.num_configs);
    ASSERT_EQ(x.configs_before, y.configs_before);
    ASSERT_EQ(x.nodes_before, y.nodes_before);
    ASSERT_EQ(x.edges_before, y.edges_before);
  }
  ASSERT_EQ(a.sources.size(), b.sources.size());
  for (size_t i = 0; i < a.sources.size(); ++i) {
    const ManifestSource &x = a.sources[i], &y = b.sources[i];
    ASSERT_EQ(x.file, y.file);
    ASSERT_EQ(x.collection, y.collection);
    ASSERT_EQ(x.split, y.split);
    ASSERT_EQ(x.size_bytes, y.size_bytes);
    ASSERT_EQ(x.mtime_ns, y.mtime_ns);
    ASSERT_EQ(x.hash, y.hash);
    ASSERT_EQ(x.status, y.status);
    ASSERT_EQ(x.reason, y.reason);
  }
  ASSERT_EQ(a.rejected.size(), b.rejected.size());
  for (size_t i = 0; i < a.rejected.size(); ++i) {
    EXPECT_EQ(a.rejected[i].file, b.rejected[i].file);
    EXPECT_EQ(a.rejected[i].key, b.rejected[i].key);
    EXPECT_EQ(a.rejected[i].reason, b.rejected[i].reason);
  }
}

TEST(Manifest, RoundTripsEveryField) {
  TempDir dir;
  const Manifest m = sample(40, 30);
  write_manifest(dir.file(kManifestFileName), m);
  const Manifest back = read_manifest(dir.file(kManifestFileName));
  expect_same(m, back);
  EXPECT_EQ(m.sources[3].status, kSourceRejected);
  EXPECT_FALSE(back.sources[3].ok());
  EXPECT_TRUE(back.sources[0].ok());
  // Nothing but the manifest is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.file("")), fs::directory_iterator{}), 1);
}

TEST(Manifest, Lookups) {
  const Manifest m = sample(40, 30);
  const ManifestGraph* g = m.find_graph("tile:xla", "resnet50.4x4.fp16-7");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->num_nodes, 17);
  EXPECT_FALSE(m.find_graph("layout:nlp:random", "resnet50.4x4.fp16-7"));
  EXPECT_FALSE(m.find_graph("tile:xla", "absent"));
  ASSERT_TRUE(m.find_shard("tile_xla/train-r1-00000.h5"));
  EXPECT_EQ(m.find_shard("tile_xla/train-r1-00000.h5")->rank, 1);
  ASSERT_TRUE(m.find_source("tile/xla/train/graph 5.npz"));
  EXPECT_EQ(m.find_source("tile/xla/train/graph 5.npz")->mtime_ns, 1700000000123456794LL);
  EXPECT_FALSE(m.find_transform("layout:xla:default"));
  // Graphs 1, 7, 13, ... are tile:xla and valid (odd and i % 3 == 1).
  size_t expected = 0;
  for (int i = 0; i < 40; ++i) expected += (i % 2 == 1 && i % 3 == 1);
  EXPECT_EQ(m.graphs_of("tile:xla", "valid").size(), expected);
  EXPECT_EQ(m.graphs_of("tile:xla").size(), 20u);
}

TEST(Manifest, RealDatasetSizeRoundTrips) {
  TempDir dir;
  const Manifest m = sample(8000, 8000);
  const std::string path = dir.file(kManifestFileName);
  auto t0 = std::chrono::steady_clock::now();
  write_manifest(path, m);
  auto t1 = std::chrono::steady_clock::now();
  const Manifest back = read_manifest(path);
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("manifest of 8000 graphs + 8000 sources: %.1f MB, write %.0f ms, read %.0f ms\n",
              fs::file_size(path) / 1e6, ms(t0, t1), ms(t1, t2));
  expect_same(m, back);
}

void expect_error(const std::string& path, const std::string& text, const std::string& words) {
  if (!text.empty()) std::ofstream(path) << text;
  try {
    read_manifest(path);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

// Removes the first "field": value pair of an object after `after` in the JSON text.
std::string without_field(std::string text, const std::string& after, const std::string& field) {
  size_t at = text.find("\"" + field + "\": ", text.find(after));
  size_t end = at + field.size() + 4;
  if (text[end] == '"') {
    for (++end; text[end] != '"'; ++end)
      if (text[end] == '\\') ++end;
    ++end;
  } else {
    end = text.find_first_of(",}", end);
  }
  if (text[end] == ',')
    end += 2;  // ", "
  else
    at -= 2;  // the last field: drop the ", " before it
  text.erase(at, end - at);
  return text;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Manifest, ErrorsNameTheFileAndTheField) {
  TempDir dir;
  const std::string path = dir.file(kManifestFileName);
  expect_error(path, "", "cannot open");  // missing file
  const std::string good = manifest_to_yaml(sample(3, 3));
  // The helper itself must leave a valid manifest when it removes nothing essential.
  EXPECT_NO_THROW(manifest_from_yaml(good, path));
  expect_error(path, without_field(good, "\"graphs\":", "num_nodes"), "graphs[0].num_nodes");
  expect_error(path, without_field(good, "\"sources\":", "mtime_ns"), "sources[0].mtime_ns");
  expect_error(path, without_field(good, "\"rejected\":", "reason"), "rejected[0].reason");
  expect_error(path, without_field(good, "\"shards\":", "hash"), "shards[0].hash");
  expect_error(path, without_field(good, "", "settings_digest"), "key 'settings_digest': missing field");
  expect_error(path, without_field(good, "\"feature_transforms\":", "stddev"),
               "feature_transforms.layout:nlp:random.stddev");
  expect_error(path, replaced(good, "\"feature_files\": {", "\"feature_filez\": {"),
               "key 'feature_files': missing field");
  expect_error(path, replaced(good, "\"tile_xla/features-g1.h5\"", "3"), "feature_files.tile:xla");
  expect_error(path, replaced(good, "\"num_edges\": 17", "\"num_edges\": \"many\""),
               "graphs[0].num_edges");
  expect_error(path, replaced(good, "\"fold\": -2", "\"fold\": 1.5"), "graphs[0].fold");
  expect_error(path, replaced(good, "\"status\": \"ok\"", "\"status\": \"maybe\""),
               "sources[0].status");
  expect_error(path, replaced(good, "\"schema_version\": 1", "\"schema_version\": 2"),
               "schema_version 2");
  expect_error(path, "{\"schema_version\": [1,\n  2", "not valid JSON at line 2");
  expect_error(path, "[1, 2]\n", "not a tpuperf manifest");
}

// Standard parsers agree: Python's json and PyYAML read the same values (floats as floats,
// escapes decoded), and what json writes back (\u escapes, surrogate pairs, its own
// spacing) reads back to the same manifest.
TEST(Manifest, PythonJsonAndYamlAgree) {
  TempDir dir;
  Manifest m = sample(5, 5);
  m.settings += "control \x01 del \x7f c1 \xc2\x85 ls \xe2\x80\xa8 emoji \xf0\x9f\x98\x80 / \\ end";
  m.feature_transforms["tile:xla"].mean = {1e-300, 2.0, -0.0, 2.5e10};
  const std::string path = dir.file(kManifestFileName), again = dir.file("again.json");
  write_manifest(path, m);
  const std::string cmd =
      "/usr/bin/python3 -c 'import json, sys, yaml\n"
      "j = json.load(open(sys.argv[1]))\n"
      "y = yaml.safe_load(open(sys.argv[1]).read())\n"
      "assert j == y, [(k, j[k], y[k]) for k in j if j[k] != y[k]]\n"
      "assert all(isinstance(v, float) for v in y[\"feature_transforms\"][\"tile:xla\"][\"mean\"])\n"
      "assert len(j[\"graphs\"]) == 5 and j[\"graphs\"][0][\"nodes_before\"] == 40000000000\n"
      "json.dump(j, open(sys.argv[2], \"w\"), indent=2)' " +
      path + " " + again;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "python json/yaml checks failed (see above)";
  EXPECT_NE(read_text_file(again).find("\\ud83d\\ude00"), std::string::npos);  // really escaped
  expect_same(m, read_manifest(again));
  expect_same(m, read_manifest(path));
}

}  // namespace
}  // namespace tpuperf
