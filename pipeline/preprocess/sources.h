// The raw input files of a preprocessing run: every <raw>/<collection dir>/<split>/*.npz
// of the selected collections, with the size and mtime that decide whether a rerun must
// read it again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/collection.h"

namespace tpuperf {

struct SourceFile {
  std::string collection;  // collection id, "layout:xla:random"
  std::string split;       // train, valid, test
  std::string rel_path;    // relative to the raw root, e.g. "layout/xla/random/train/x.npz"
  std::string abs_path;
  std::string stem;        // graph name
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool is_directory = false;  // a directory named *.npz: listed so that it is rejected
};

// Lists the sources of the collections in a deterministic order (collection as given,
// then split train/valid/test, then name). A missing collection or split directory is an
// Error naming it and the raw root (a collection with no files at all is almost always a
// wrong data.raw_dir).
std::vector<SourceFile> scan_sources(const std::string& raw_root,
                                     const std::vector<std::string>& collections);

// Assigns items to `parts` bins so that the bins' total sizes are balanced: largest item
// first to the lightest bin (LPT); ties broken by index, so every rank computes the same.
std::vector<int> partition_by_size(const std::vector<int64_t>& sizes, int parts);

// The indices of the items partition_by_size gives to `part`, largest first (ties by
// index): a rank works its largest file first, so that its buffers grow once and the
// small files even out the ranks' ends.
std::vector<size_t> share_largest_first(const std::vector<int64_t>& sizes, int parts, int part);

// The bytes a source's arrays take inflated, the sum of its zip members' sizes as the
// archive's directory records them: what reading and converting the file costs, which
// its size on disk does not tell (layout files deflate 20-60x, tile files far less).
// The size on disk when the directory cannot be read: the file is rejected later, when it
// is processed, with the reason.
int64_t unpacked_size(const SourceFile& s);

}  // namespace tpuperf
