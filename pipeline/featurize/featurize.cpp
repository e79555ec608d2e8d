#include "pipeline/featurize/featurize.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/progress.h"
#include "pipeline/featurize/layout_records.h"
#include "pipeline/featurize/release_npz.h"
#include "pipeline/featurize/tile_records.h"
#include "pipeline/featurize/write_queue.h"

namespace tpuperf::featurize {

namespace {

void check_choice(const std::string& option, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  throw Error(fmt::format("--{} {} is not one of {}", option, value, list));
}

// The whole file; throws Error (reason only) when it cannot be read.
std::vector<uint8_t> read_record_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(std::string("cannot read: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Error("is a directory, not a record file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> data(static_cast<size_t>(st.st_size));
  size_t got = data.empty() ? 0 : std::fread(data.data(), 1, data.size(), f);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed || got != data.size())
    throw Error(fmt::format("read {} of {} bytes", got, data.size()));
  if (data.empty()) throw Error("empty file (0 bytes): not a tuning record");
  return data;
}

class Run {
 public:
  explicit Run(const FeaturizeOptions& o) : o_(o), writes_(o.threads) {}

  // Returns the bytes read (0 when the file could not be read).
  int64_t file(const std::string& path) {
    ++s_.files;
    std::vector<uint8_t> data;
    RecordKind kind = RecordKind::Tile;
    TopLevel top;
    try {
      data = read_record_file(path);
      s_.bytes += static_cast<int64_t>(data.size());
      top = scan_top_level(data.data(), data.size());
      kind = o_.kind ? *o_.kind : detect_kind(data.data(), top);
    } catch (const Error& e) {
      reject(path, "-", e.what());
      return static_cast<int64_t>(data.size());
    }
    std::string prefix = o_.prefix.empty() ? record_stem(path) : o_.prefix;
    if (kind == RecordKind::Tile)
      tile(path, featurize_tuning_data(data.data(), top, prefix, o_.extra_features));
    else
      layout(path, featurize_module_tuning_data(data.data(), data.size(), top, prefix, o_.extra_features));
    return static_cast<int64_t>(data.size());
  }

  // Waits for the outputs still being written; rethrows a write error.
  FeaturizeSummary finish() {
    writes_.finish();
    return std::move(s_);
  }

 private:
  void reject(const std::string& file, const std::string& record, const std::string& reason) {
    spdlog::warn("rejected {}: {}: {}", file, record, reason);
    s_.rejected.push_back({file, record, reason});
  }

  void rejections(const std::string& file, const std::vector<Rejection>& list) {
    for (const Rejection& r : list) reject(file, r.record, r.reason);
  }

  void count(const RecordCounts& c) {
    s_.records += c.kernels;
    s_.runs += c.runs;
    s_.error_runs += c.error_runs;
  }

  // Claims an output path for this run; false (and the record rejected) when an earlier
  // record of this run already wrote it.
  bool claim(const std::string& file, const std::string& record, const std::string& path) {
    auto [it, fresh] = claimed_.insert({path, file + ": " + record});
    if (!fresh)
      reject(file, record, fmt::format("output {} was already written by {} (use --prefix to "
                                       "tell the inputs apart)",
                                       path, it->second));
    return fresh;
  }

  std::string directory(RecordKind kind) const {
    if (kind == RecordKind::Tile) return fmt::format("{}/npz/tile/xla/{}", o_.out_dir, o_.split);
    return fmt::format("{}/npz/layout/{}/{}/{}", o_.out_dir, o_.source, o_.search, o_.split);
  }

  void tile(const std::string& file, TileResult r) {
    size_t before = s_.rejected.size();
    count(r.counts);
    rejections(file, r.rejected);
    std::string dir = directory(RecordKind::Tile);
    int written = 0;
    int64_t configs = 0;
    for (FeaturizedTile& k : r.kernels) {
      std::string path = dir + "/" + k.graph.name + ".npz";
      if (!claim(file, k.record, path)) continue;
      make_dirs(dir);
      wrote(path, k.graph.num_configs());
      ++written;
      configs += k.graph.num_configs();
      auto kernel = std::make_shared<FeaturizedTile>(std::move(k));
      writes_.submit([path, kernel] { write_tile_npz(path, *kernel); });
    }
    spdlog::info("{}: tile, {} kernels, {} runs ({} with an error): {} written with {} configs, {} "
                 "rejections",
                 file, r.counts.kernels, r.counts.runs, r.counts.error_runs, written, configs,
                 s_.rejected.size() - before);
  }

  void layout(const std::string& file, LayoutResult r) {
    size_t before = s_.rejected.size();
    count(r.counts);
    rejections(file, r.rejected);
    int64_t configs = 0;
    if (r.module) {
      std::string dir = directory(RecordKind::Layout);
      std::string path = dir + "/" + r.module->graph.name + ".npz";
      if (claim(file, r.module->record, path)) {
        make_dirs(dir);
        configs = r.module->graph.num_configs();
        wrote(path, configs);
        auto module = std::make_shared<FeaturizedLayout>(std::move(*r.module));
        writes_.submit([path, module] { write_layout_npz(path, *module); });
      }
    }
    spdlog::info("{}: layout, {} runs ({} with an error): {} configs written, {} rejections", file,
                 r.counts.runs, r.counts.error_runs, configs, s_.rejected.size() - before);
  }

  void wrote(const std::string& path, int64_t configs) {
    s_.written.push_back(path);
    s_.configs_written += configs;
  }

  const FeaturizeOptions& o_;
  FeaturizeSummary s_;
  std::map<std::string, std::string> claimed_;  // output path -> the record that wrote it
  WriteQueue writes_;
};

int64_t total_size(const std::vector<std::string>& files) {
  int64_t total = 0;
  for (const auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  }
  return total;
}

}  // namespace

void check_options(const FeaturizeOptions& o) {
  if (o.out_dir.empty()) throw Error("missing --out DIR (see tpuperf-featurize --help)");
  check_choice("split", o.split, {"train", "valid", "test"});
  check_choice("source", o.source, {"xla", "nlp"});
  check_choice("search", o.search, {"random", "default"});
  if (o.threads < 1) throw Error("--threads must be at least 1");
  if (o.prefix.find('/') != std::string::npos)
    throw Error("--prefix " + o.prefix + " holds a '/': it is part of a file name");
}

std::string record_stem(const std::string& path) {
  std::filesystem::path p(path);
  return (p.extension() == ".pb" ? p.stem() : p.filename()).string();  // names hold dots: only .pb goes
}

FeaturizeSummary featurize_files(const std::vector<std::string>& files, const FeaturizeOptions& o) {
  check_options(o);
  Run run(o);
  Progress progress("featurize", static_cast<int64_t>(files.size()), total_size(files));
  for (const auto& path : files) progress.tick(run.file(path));
  FeaturizeSummary summary = run.finish();
  progress.finish();
  return summary;
}

}  // namespace tpuperf::featurize
