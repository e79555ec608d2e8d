// HDF5 write and read failures found by the faults suite (issue #6): on a full disk the
// shard's error gives the OS cause without HDF5's noise (time, descriptor, buffer
// address), and the feature files report their failures with the cause too, leaving no
// temporary file. A file size limit (SIGXFSZ ignored, so write() fails with EFBIG) stands
// in for the full disk; it is set in a child process (a death test), never in the runner.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/shards/hdf5.h"
#include "common/shards/shard_writer.h"
#include "pipeline/preprocess/feature_file.h"
#include "pipeline/preprocess/features.h"

namespace tpuperf {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void limit_file_size(rlim_t bytes) {
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit limit{bytes, bytes};
  setrlimit(RLIMIT_FSIZE, &limit);
}

ProcessedGraph big_tile_graph() {
  ProcessedGraph g;
  g.collection = "tile:xla";
  g.split = "train";
  g.name = "big";
  g.num_nodes = 20000;
  g.num_node_feat = 140;
  g.node_feat.assign(static_cast<size_t>(g.num_nodes * g.num_node_feat), 1.5f);  // 11 MB
  g.node_opcode.assign(static_cast<size_t>(g.num_nodes), 7);
  g.config_runtime = {5, 6};
  g.config_feat.assign(2 * kTileConfigDim, 0.f);
  g.config_runtime_normalizers = {1, 1};
  return g;
}

FeatureTransform identity(int columns) {
  FeatureTransform t;
  for (int j = 0; j < columns; ++j) {
    t.kept_columns.push_back(j);
    t.log1p.push_back(0);
    t.mean.push_back(0.0);
    t.stddev.push_back(1.0);
  }
  return t;
}

// Child: writes a shard past the limit; exits 0 when the error is the condensed one.
void shard_write_error_is_condensed(const std::string& path) {
  limit_file_size(64 * 1024);
  try {
    ShardWriter w(path, "tile:xla", "train", 0);
    w.add(big_tile_graph());
    w.close();
  } catch (const Error& e) {
    std::string m = e.what();
    std::fprintf(stderr, "%s\n", m.c_str());
    bool ok = has(m, path) && has(m, "(HDF5: file write failed: File too large)") &&
              !has(m, "time =") && !has(m, "buf =") && !fs::exists(path + ".tmp");
    std::exit(ok ? 0 : 3);
  }
  std::exit(4);  // no error at all
}

TEST(ShardFaults, WriteErrorGivesTheCauseWithoutHdf5Noise) {
  TempDir dir;
  EXPECT_EXIT(shard_write_error_is_condensed(dir.file("full.h5")), ::testing::ExitedWithCode(0), "");
}

FeatureStats some_stats() {
  FeatureStats st;
  std::vector<float> feat(3 * kNodeFeatDim);
  for (size_t i = 0; i < feat.size(); ++i) feat[i] = static_cast<float>(i % 17);
  st.add_graph(feat, 3);
  return st;
}

// Child: a feature file past the limit; exits 0 when the error names the file and the
// cause, and neither the temporary file nor the target exists.
void feature_file_write_error_names_the_cause(const std::string& path) {
  FeatureStats st = some_stats();
  limit_file_size(2 * 1024);
  try {
    write_feature_file(path, "tile:xla", st, identity(kNodeFeatDim));
  } catch (const Error& e) {
    std::string m = e.what();
    std::fprintf(stderr, "%s\n", m.c_str());
    bool left = !fs::is_empty(fs::path(path).parent_path());
    bool ok = has(e.file(), path + ".tmp") && has(m, "File too large") && !left;
    std::exit(ok ? 0 : 3);
  }
  std::exit(4);
}

TEST(ShardFaults, FeatureFileWriteErrorNamesFileAndCause) {
  TempDir dir;
  EXPECT_EXIT(feature_file_write_error_names_the_cause(dir.file("features-g1.h5")),
              ::testing::ExitedWithCode(0), "");
}

TEST(ShardFaults, FeatureFileReadErrorGivesHdf5Cause) {
  TempDir dir;
  const std::string path = dir.file("features-g1.h5");
  std::ofstream(path) << "not an HDF5 file";
  try {
    read_feature_stats(path);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_TRUE(has(e.reason(), "cannot open feature file (HDF5: ")) << e.what();
  }
}

TEST(ShardFaults, FeatureFileRoundTripStillWorks) {
  TempDir dir;
  const std::string path = dir.file("features-g1.h5");
  FeatureStats st = some_stats();
  write_feature_file(path, "tile:xla", st, identity(kNodeFeatDim));
  EXPECT_EQ(read_feature_stats(path).to_flat(), st.to_flat());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

// The statistics a refit-only run reads: a flipped byte must fail the checksum.
TEST(ShardFaults, FlippedByteInFeatureFileIsDetected) {
  TempDir dir;
  const std::string path = dir.file("features-g1.h5");
  write_feature_file(path, "tile:xla", some_stats(), identity(kNodeFeatDim));
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "stats_flat", H5P_DEFAULT);
  hsize_t coord = 0, size = 0;
  unsigned mask = 0;
  haddr_t addr = 0;
  ASSERT_GE(H5Dget_chunk_info_by_coord(d, &coord, &mask, &addr, &size), 0);
  H5Dclose(d);
  H5Fclose(f);
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(addr + size / 2));
    char c = 0;
    io.get(c);
    io.seekp(static_cast<std::streamoff>(addr + size / 2));
    io.put(static_cast<char>(c ^ 0x5A));
  }
  try {
    read_feature_stats(path);
    FAIL() << "a damaged feature file was read without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.key(), "stats_flat");
    EXPECT_TRUE(has(e.reason(), "Fletcher32 checksum")) << e.what();
  }
}

TEST(ShardFaults, NoErrorDetailWhenHdf5RecordedNone) {
  quiet_hdf5();
  EXPECT_EQ(hdf5_error_detail(), "");
}

}  // namespace
}  // namespace tpuperf
