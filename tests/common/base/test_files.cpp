// common/files: the atomic write and the removal of what a killed writer leaves behind.
#include "common/base/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace fs = std::filesystem;
using namespace tpuperf;

namespace {

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tpuperf-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& rel) { std::ofstream(dir_ / rel) << "x"; }
  std::set<std::string> files() const {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir_).string());
    return out;
  }
  fs::path dir_;
};

TEST_F(FilesTest, AtomicWriteLeavesOnlyTheTarget) {
  write_file_atomic((dir_ / "a.yaml").string(), "k: 1\n");
  EXPECT_EQ(read_text_file((dir_ / "a.yaml").string()), "k: 1\n");
  EXPECT_EQ(files(), (std::set<std::string>{"a.yaml"}));
}

TEST_F(FilesTest, RemovesOnlyTemporariesOfAtomicWrites) {
  for (const char* f : {"manifest.yaml.tmp.123", "sub/best.pt.tmp.7", "keep.txt", "shard.h5.tmp", "x.tmp.12a",
                        "x.tmp.", "sub/notes.tmp.txt"})
    touch(f);
  EXPECT_EQ(remove_stale_temporaries(dir_.string(), false), 1);
  EXPECT_EQ(files(), (std::set<std::string>{"sub/best.pt.tmp.7", "keep.txt", "shard.h5.tmp", "x.tmp.12a", "x.tmp.",
                                            "sub/notes.tmp.txt"}));
  EXPECT_EQ(remove_stale_temporaries(dir_.string(), true), 1);
  EXPECT_EQ(files(), (std::set<std::string>{"keep.txt", "shard.h5.tmp", "x.tmp.12a", "x.tmp.", "sub/notes.tmp.txt"}));
  EXPECT_EQ(remove_stale_temporaries(dir_.string(), true), 0);
}

TEST_F(FilesTest, AMissingDirectoryHasNothingToRemove) {
  EXPECT_EQ(remove_stale_temporaries((dir_ / "absent").string(), true), 0);
}

}  // namespace
