#include "pipeline/preprocess/sources.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "common/base/error.h"
#include "common/formats/npz_reader.h"
#include "common/graph/graph.h"

namespace tpuperf {

namespace fs = std::filesystem;

static void stat_source(SourceFile& s) {
  struct stat st {};
  if (::stat(s.abs_path.c_str(), &st) != 0) throw Error("cannot stat", s.abs_path);
  s.is_directory = S_ISDIR(st.st_mode);
  s.size = s.is_directory ? 0 : static_cast<int64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

std::vector<SourceFile> scan_sources(const std::string& raw_root,
                                     const std::vector<std::string>& collections) {
  if (!fs::is_directory(raw_root))
    throw Error("raw data directory does not exist (set data.raw_dir to the npz_all/npz tree)", raw_root);
  std::vector<SourceFile> out;
  for (const auto& id : collections) {
    Collection c = Collection::parse(id);
    for (const auto& split : kSplits) {
      std::string dir = c.split_dir(raw_root, split);
      if (!fs::is_directory(dir))
        throw Error("missing directory of collection " + id + ", split " + split +
                        " (is data.raw_dir the npz_all/npz tree?)",
                    dir);
      std::vector<SourceFile> found;
      for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npz") != 0) continue;
        SourceFile s;
        s.collection = id;
        s.split = split;
        s.abs_path = entry.path().string();
        s.rel_path = fs::relative(entry.path(), raw_root).string();
        s.stem = file_stem(name);
        stat_source(s);
        found.push_back(std::move(s));
      }
      std::sort(found.begin(), found.end(),
                [](const SourceFile& a, const SourceFile& b) { return a.stem < b.stem; });
      out.insert(out.end(), found.begin(), found.end());
    }
  }
  return out;
}

std::vector<int> partition_by_size(const std::vector<int64_t>& sizes, int parts) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int64_t> load(parts, 0);
  std::vector<int> bin(sizes.size(), 0);
  for (size_t i : order) {
    int lightest = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    bin[i] = lightest;
    load[lightest] += std::max<int64_t>(sizes[i], 1);
  }
  return bin;
}

std::vector<size_t> share_largest_first(const std::vector<int64_t>& sizes, int parts, int part) {
  const std::vector<int> bin = partition_by_size(sizes, parts);
  std::vector<size_t> mine;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (bin[i] == part) mine.push_back(i);
  std::stable_sort(mine.begin(), mine.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  return mine;
}

int64_t unpacked_size(const SourceFile& s) {
  if (s.is_directory) return s.size;
  try {
    NpzReader r(s.abs_path);
    int64_t total = 0;
    for (const std::string& key : r.keys()) total += static_cast<int64_t>(r.entry(key).uncompressed_size);
    return total;
  } catch (const Error&) {
    return s.size;
  }
}

}  // namespace tpuperf
