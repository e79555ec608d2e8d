#include "pipeline/preprocess/merge.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/base/fault.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/base/progress.h"
#include "common/cli/tool_main.h"
#include "pipeline/preprocess/feature_file.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

int split_order(const std::string& split) {
  return static_cast<int>(std::find(kSplits.begin(), kSplits.end(), split) - kSplits.begin());
}

// Deterministic record order: collection as configured, split, then name/file.
template <typename T, typename Name>
void sort_records(std::vector<T>& v, const std::vector<std::string>& collections, Name name) {
  auto coll = [&](const std::string& c) {
    return std::find(collections.begin(), collections.end(), c) - collections.begin();
  };
  std::sort(v.begin(), v.end(), [&](const T& a, const T& b) {
    return std::make_tuple(coll(a.collection), split_order(a.split), name(a)) <
           std::make_tuple(coll(b.collection), split_order(b.split), name(b));
  });
}

// Records of the units this run did not redo, from the previous manifest. Sources whose
// mtime changed without a content change get the new mtime.
void keep_previous_units(const Plan& plan, const Manifest& prev, Manifest& m) {
  auto kept = [&](const std::string& c, const std::string& split) {
    return std::count(m.collections.begin(), m.collections.end(), c) &&
           !plan.redo_units.count(unit_key(c, split));
  };
  std::map<std::string, int64_t> mtime_now;
  for (const auto& s : plan.sources) mtime_now[s.rel_path] = s.mtime_ns;
  std::set<std::string> kept_files;
  for (auto s : prev.sources) {
    if (!kept(s.collection, s.split)) continue;
    if (mtime_now.count(s.file)) s.mtime_ns = mtime_now[s.file];
    kept_files.insert(s.file);
    m.sources.push_back(s);
  }
  for (const auto& r : prev.rejected)
    if (kept_files.count(r.file)) m.rejected.push_back(r);
  for (const auto& g : prev.graphs)
    if (kept(g.collection, g.split)) m.graphs.push_back(g);
  for (const auto& sh : prev.shards)
    if (kept(sh.collection, sh.split)) m.shards.push_back(sh);
}

void add_partials(const std::vector<Manifest>& partials, Manifest& m) {
  for (const auto& p : partials) {
    m.sources.insert(m.sources.end(), p.sources.begin(), p.sources.end());
    m.rejected.insert(m.rejected.end(), p.rejected.begin(), p.rejected.end());
    m.graphs.insert(m.graphs.end(), p.graphs.begin(), p.graphs.end());
    m.shards.insert(m.shards.end(), p.shards.begin(), p.shards.end());
  }
}

// Fits (or keeps) the transform of every collection.
void set_transforms(const PreprocessSettings& s, const Plan& plan, const Manifest* prev,
                    const std::map<std::string, FeatureStats>& stats, Manifest& m) {
  for (const auto& c : m.collections) {
    if (!plan.refit.count(c)) {
      if (prev->feature_files.count(c)) {  // absent when no train graph was valid
        m.feature_transforms[c] = prev->feature_transforms.at(c);
        m.feature_files[c] = prev->feature_files.at(c);
      }
      continue;
    }
    if (!stats.count(c) && !(prev && prev->feature_files.count(c))) {
      spdlog::error("{}: no valid train graph, so no feature transform (training on it will fail)", c);
      continue;
    }
    FeatureStats st = stats.count(c) ? stats.at(c)
                                     : read_feature_stats(s.out_dir + "/" + prev->feature_files.at(c));
    if (st.count(0) == 0) {
      spdlog::error("{}: no valid train graph, so no feature transform (training on it will fail)", c);
      continue;
    }
    FeatureTransform t = fit_transform(st, s.fit);
    std::string file = collection_dir(c) + "/features-g" + std::to_string(plan.generation) + ".h5";
    make_dirs(s.out_dir + "/" + collection_dir(c));
    write_feature_file(s.out_dir + "/" + file, c, st, t);
    spdlog::info("{}: feature transform fitted on {} train nodes: {} of {} columns kept, {} log-scaled", c,
                 st.count(0), t.kept_columns.size(), kNodeFeatDim,
                 std::count(t.log1p.begin(), t.log1p.end(), 1));
    m.feature_transforms[c] = std::move(t);
    m.feature_files[c] = file;
  }
}

std::string rejected_text(const Manifest& m) {
  std::ostringstream out;
  out << "# file\tkey\treason (files are relative to data.raw_dir)\n";
  for (const auto& r : m.rejected) out << r.file << "\t" << r.key << "\t" << r.reason << "\n";
  return out.str();
}

void log_summary(const Manifest& m) {
  for (const auto& c : m.collections) {
    int64_t graphs = 0, rejected = 0, cb = 0, ca = 0, nb = 0, na = 0, eb = 0, ea = 0, bytes = 0;
    for (const auto& g : m.graphs) {
      if (g.collection != c) continue;
      ++graphs;
      cb += g.configs_before, ca += g.num_configs;
      nb += g.nodes_before, na += g.num_nodes;
      eb += g.edges_before, ea += g.num_edges;
    }
    for (const auto& s : m.sources)
      if (s.collection == c && !s.ok()) ++rejected;
    for (const auto& sh : m.shards)
      if (sh.collection == c) bytes += sh.size_bytes;
    spdlog::info("{}: {} graphs, {} rejected; configs {} -> {} after dedup; nodes {} -> {}, edges {} -> {} "
                 "after pruning; {:.1f} MB of shards",
                 c, graphs, rejected, cb, ca, nb, na, eb, ea, bytes / kBytesPerMB);
  }
}

}  // namespace

void collect_garbage(const std::string& processed_dir, const Manifest& m) {
  std::set<std::string> referenced;
  for (const auto& sh : m.shards) referenced.insert(sh.file);
  for (const auto& [c, f] : m.feature_files) referenced.insert(f);
  const auto remove = [&](const fs::path& path) {
    std::error_code ec;  // best effort: a file that stays is removed by the next run
    fs::remove(path, ec);
    spdlog::debug("removed {}", fs::relative(path, processed_dir).string());
  };
  // Only the manifest's collections: a run over fewer collections leaves the others'
  // files alone (a later run that selects them again redoes them).
  for (const auto& c : m.collections) {
    fs::path dir = fs::path(processed_dir) / collection_dir(c);
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::string name = e.path().filename().string();
      bool ours = name.find(".h5") != std::string::npos || name.find(".tmp") != std::string::npos;
      if (ours && !referenced.count(fs::relative(e.path(), processed_dir).string())) remove(e.path());
    }
  }
  // The temporary copies a killed run's atomic writes of the top-level files left behind.
  remove_stale_temporaries(processed_dir, false);
}

int finish_on_rank0(const Config& cfg, const PreprocessSettings& s, const Plan& plan,
                    const Manifest* previous, const std::vector<Manifest>& partials,
                    const std::map<std::string, FeatureStats>& stats) {
  Manifest m;
  m.created = utc_now_iso8601();
  m.settings_digest = SettingsDigest::of(cfg).text();
  m.settings = cfg.dump({"data.", "preprocess."});
  m.collections = s.collections;
  if (previous) keep_previous_units(plan, *previous, m);
  add_partials(partials, m);
  set_transforms(s, plan, previous, stats, m);
  sort_records(m.graphs, m.collections, [](const ManifestGraph& g) { return g.name; });
  sort_records(m.shards, m.collections, [](const ManifestShard& sh) { return sh.file; });
  sort_records(m.sources, m.collections, [](const ManifestSource& src) { return src.file; });
  std::sort(m.rejected.begin(), m.rejected.end(),
            [](const ManifestRejected& a, const ManifestRejected& b) { return a.file < b.file; });

  make_dirs(s.out_dir);
  cfg.save(s.out_dir + "/" + kEffectiveConfigName);
  write_file_atomic(s.out_dir + "/" + kRejectedFileName, rejected_text(m));
  fault_point("preprocess.before_manifest");
  write_manifest(s.out_dir + "/" + kManifestFileName, m);  // last: the output is complete
  fault_point("preprocess.after_manifest");
  collect_garbage(s.out_dir, m);
  log_summary(m);
  if (!m.rejected.empty())
    spdlog::warn("{} source files rejected, listed in {}/{}", m.rejected.size(), s.out_dir, kRejectedFileName);
  return m.rejected.empty() ? kExitOk : kExitRejected;
}

}  // namespace tpuperf
