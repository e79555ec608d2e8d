// The preprocessing plan's pieces: size-balanced partition of files over ranks, the
// settings digests that decide what a rerun redoes, and the raw-tree scan's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/formats/npz_writer.h"
#include "tests/test_util.h"
#include "pipeline/preprocess/plan.h"
#include "pipeline/preprocess/sources.h"

using namespace tpuperf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(Partition, BalancesBySizeAndIsDeterministic) {
  std::vector<int64_t> sizes = {100, 1, 1, 1, 50, 50, 2, 3, 97};
  auto bins = partition_by_size(sizes, 2);
  std::vector<int64_t> load(2, 0);
  for (size_t i = 0; i < sizes.size(); ++i) load[bins[i]] += sizes[i];
  // Total 305: LPT gives 153/152 here; any split worse than the largest item is wrong.
  EXPECT_LE(std::abs(load[0] - load[1]), 100);
  EXPECT_EQ(load[0] + load[1], 305);
  EXPECT_EQ(bins, partition_by_size(sizes, 2));
  // More bins than items: each item alone, every bin index valid.
  auto many = partition_by_size({5, 4}, 4);
  EXPECT_NE(many[0], many[1]);
}

TEST(Partition, OneRankGetsEverything) {
  auto bins = partition_by_size({3, 2, 1}, 1);
  EXPECT_EQ(bins, (std::vector<int>{0, 0, 0}));
}

TEST(Partition, EachShareIsWorkedLargestFirst) {
  std::vector<int64_t> sizes = {100, 1, 1, 1, 50, 50, 2, 3, 97};
  const auto bins = partition_by_size(sizes, 2);
  std::vector<size_t> seen;
  for (int part = 0; part < 2; ++part) {
    const auto mine = share_largest_first(sizes, 2, part);
    for (size_t k = 0; k < mine.size(); ++k) {
      EXPECT_EQ(bins[mine[k]], part);
      if (k > 0) {
        EXPECT_GE(sizes[mine[k - 1]], sizes[mine[k]]);
        // Equal sizes keep their index order: every rank computes the same.
        if (sizes[mine[k - 1]] == sizes[mine[k]]) {
          EXPECT_LT(mine[k - 1], mine[k]);
        }
      }
    }
    seen.insert(seen.end(), mine.begin(), mine.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<size_t> all(sizes.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
}

TEST(Sources, UnpackedSizeIsTheMembersInflatedBytes) {
  TempDir dir("unpacked");
  SourceFile npz;
  npz.abs_path = dir.file("g.npz");
  {
    NpzWriter w(npz.abs_path, /*compress=*/true);
    w.add("zeros", std::vector<float>(100000, 0.0f), {100000});  // 400 KB that deflate to ~1 KB
    w.add("ids", std::vector<int64_t>{1, 2, 3}, {3});
    w.close();
  }
  npz.size = static_cast<int64_t>(fs::file_size(npz.abs_path));
  const int64_t unpacked = unpacked_size(npz);
  // Each member is an npy file: its header (a multiple of 64 bytes) and its data.
  EXPECT_GT(unpacked, 400000 + 24);
  EXPECT_LT(unpacked, 400000 + 24 + 2 * 256);
  EXPECT_LT(npz.size, 20000);
  // Not a zip archive: its size on disk (it is rejected when processed).
  SourceFile junk;
  junk.abs_path = dir.file("junk.npz");
  std::ofstream(junk.abs_path) << "not a zip";
  junk.size = 9;
  EXPECT_EQ(unpacked_size(junk), 9);
}

TEST(SettingsDigest, GroupsChangeIndependently) {
  Config base = Config::load("", {});
  auto a = SettingsDigest::of(base);
  auto hops = SettingsDigest::of(Config::load("", {"preprocess.prune_hops=2"}));
  auto folds = SettingsDigest::of(Config::load("", {"preprocess.folds=3"}));
  auto logc = SettingsDigest::of(Config::load("", {"preprocess.log_columns=false"}));
  auto train = SettingsDigest::of(Config::load("", {"train.epochs=3"}));
  EXPECT_NE(a.graphs, hops.graphs);
  EXPECT_EQ(a.folds, hops.folds);
  EXPECT_EQ(a.graphs, folds.graphs);
  EXPECT_NE(a.folds, folds.folds);
  EXPECT_EQ(a.graphs, logc.graphs);
  EXPECT_NE(a.transform, logc.transform);
  EXPECT_EQ(a.text(), train.text());  // training settings never invalidate shards
  auto round = SettingsDigest::parse(a.text());
  EXPECT_EQ(round.graphs, a.graphs);
  EXPECT_EQ(round.folds, a.folds);
  EXPECT_EQ(round.transform, a.transform);
  EXPECT_TRUE(SettingsDigest::parse("garbage").graphs.empty());
}

TEST(Sources, ScanListsFilesInOrderAndNamesMissingDirectories) {
  fs::path root = fs::temp_directory_path() / ("tpuperf_scan_" + std::to_string(::getpid()));
  for (const auto& split : {"train", "valid", "test"}) fs::create_directories(root / "tile/xla" / split);
  std::ofstream(root / "tile/xla/train/b.npz") << "x";
  std::ofstream(root / "tile/xla/train/a.npz") << "xy";
  std::ofstream(root / "tile/xla/train/notes.txt") << "ignored";
  fs::create_directories(root / "tile/xla/valid/dir.npz");
  auto s = scan_sources(root.string(), {"tile:xla"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].stem, "a");
  EXPECT_EQ(s[0].size, 2);
  EXPECT_EQ(s[0].rel_path, "tile/xla/train/a.npz");
  EXPECT_EQ(s[1].stem, "b");
  EXPECT_TRUE(s[2].is_directory);
  EXPECT_EQ(s[2].split, "valid");
  try {
    scan_sources(root.string(), {"layout:xla:random"});
    FAIL() << "missing collection accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("layout/xla/random/train"));
    EXPECT_THAT(e.what(), HasSubstr("data.raw_dir"));
  }
  fs::remove_all(root);
}

TEST(CollectionDir, IsFilesystemFriendly) {
  EXPECT_EQ(collection_dir("layout:nlp:default"), "layout_nlp_default");
  EXPECT_EQ(unit_key("tile:xla", "train"), "tile:xla|train");
}
