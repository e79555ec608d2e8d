#include "pipeline/preprocess/plan.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/graph/collection.h"
#include "common/mpi/collectives.h"
#include "common/base/error.h"
#include "common/base/hash.h"
#include "common/base/log.h"

namespace tpuperf {

namespace fs = std::filesystem;

std::string unit_key(const std::string& collection, const std::string& split) {
  return collection + "|" + split;
}

SettingsDigest SettingsDigest::of(const Config& cfg) {
  SettingsDigest d;
  d.graphs = cfg.digest({"preprocess.prune_hops", "preprocess.prune_bridges", "preprocess.dedup",
                         "preprocess.compression", "preprocess.shard_mb"});
  d.folds = cfg.digest({"preprocess.folds", "preprocess.seed", "preprocess.fold_by"});
  d.transform = cfg.digest({"preprocess.log_columns", "preprocess.drop_constant_columns"});
  return d;
}

std::string SettingsDigest::text() const {
  return "graphs=" + graphs + ";folds=" + folds + ";transform=" + transform;
}

SettingsDigest SettingsDigest::parse(const std::string& text) {
  SettingsDigest d;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ';');) {
    auto eq = part.find('=');
    if (eq == std::string::npos) continue;
    std::string k = part.substr(0, eq), v = part.substr(eq + 1);
    if (k == "graphs") d.graphs = v;
    if (k == "folds") d.folds = v;
    if (k == "transform") d.transform = v;
  }
  return d;
}

namespace {

// Shard files are named "<dir>/<split>/g<generation>-r<rank>-<index>.h5".
int generation_of(const std::string& shard_file) {
  auto slash = shard_file.rfind('/');
  std::string base = shard_file.substr(slash == std::string::npos ? 0 : slash + 1);
  if (base.size() < 2 || base[0] != 'g') return 0;
  return std::atoi(base.c_str() + 1);
}

// Why the sources of one unit differ from the previous run's, or "" when they don't.
// A file whose mtime changed but whose content hash did not counts as unchanged.
std::string source_changes(const std::vector<const SourceFile*>& now,
                           const std::map<std::string, const ManifestSource*>& before_by_file,
                           size_t before_count) {
  int added = 0, changed = 0;
  for (const SourceFile* s : now) {
    auto it = before_by_file.find(s->rel_path);
    if (it == before_by_file.end()) {
      ++added;
      continue;
    }
    const ManifestSource& b = *it->second;
    if (b.size_bytes != s->size) {
      ++changed;
    } else if (b.mtime_ns != s->mtime_ns && !s->is_directory) {
      if (b.hash.empty() || hash_file(s->abs_path) != b.hash) ++changed;
    }
  }
  size_t removed = before_count + added - now.size();
  if (added == 0 && changed == 0 && removed == 0) return "";
  std::ostringstream why;
  why << added << " added, " << changed << " changed, " << removed << " removed source files";
  return why.str();
}

std::string shard_problem(const Manifest& prev, const std::string& unit_collection,
                          const std::string& unit_split, const std::string& processed_dir) {
  for (const auto& sh : prev.shards) {
    if (sh.collection != unit_collection || sh.split != unit_split) continue;
    std::error_code ec;
    auto size = fs::file_size(fs::path(processed_dir) / sh.file, ec);
    if (ec) return "shard " + sh.file + " is missing";
    if (static_cast<int64_t>(size) != sh.size_bytes) return "shard " + sh.file + " has the wrong size";
  }
  return "";
}

}  // namespace

Plan make_plan(const Config& cfg, const std::string& processed_dir, const Manifest* previous,
               bool force) {
  Plan plan;
  auto collections = cfg.get_list("data.collections");
  plan.sources = scan_sources(cfg.get_path("data.raw_dir"), collections);
  plan.process.assign(plan.sources.size(), 0);
  SettingsDigest now = SettingsDigest::of(cfg);
  SettingsDigest before;
  if (previous) {
    before = SettingsDigest::parse(previous->settings_digest);
    for (const auto& sh : previous->shards) plan.generation = std::max(plan.generation, generation_of(sh.file) + 1);
  }

  for (const auto& c : collections) {
    bool known = previous && std::count(previous->collections.begin(), previous->collections.end(), c);
    for (const auto& split : kSplits) {
      std::string why;
      if (force) {
        why = "--force";
      } else if (!previous) {
        why = "no previous output";
      } else if (!known) {
        why = "new collection";
      } else if (before.graphs != now.graphs) {
        why = "graph settings changed";
      } else if (split == "train" && before.folds != now.folds) {
        why = "fold settings changed";
      } else {
        std::vector<const SourceFile*> current;
        for (const auto& s : plan.sources)
          if (s.collection == c && s.split == split) current.push_back(&s);
        std::map<std::string, const ManifestSource*> prev_sources;
        for (const auto& s : previous->sources)
          if (s.collection == c && s.split == split) prev_sources[s.file] = &s;
        why = source_changes(current, prev_sources, prev_sources.size());
        if (why.empty()) why = shard_problem(*previous, c, split, processed_dir);
      }
      if (why.empty()) continue;
      plan.redo_units.insert(unit_key(c, split));
      plan.reasons.push_back(c + " " + split + ": " + why);
    }
    bool train_redone = plan.redo_units.count(unit_key(c, "train")) > 0;
    // Without a previous feature file (no valid train graph last time) there are no
    // statistics to refit from: only redoing the train split can give a transform.
    bool has_stats = previous && previous->feature_files.count(c);
    if (train_redone || (has_stats && (!previous->find_transform(c) || before.transform != now.transform))) {
      plan.refit.insert(c);
      if (!train_redone) plan.reasons.push_back(c + ": transform settings changed, refit");
    }
  }
  for (size_t i = 0; i < plan.sources.size(); ++i)
    plan.process[i] = plan.redo_units.count(unit_key(plan.sources[i].collection, plan.sources[i].split));
  return plan;
}

// A line-based text form: sources never hold tabs or newlines in their names in practice;
// a name that does is rejected here rather than silently mangled.
static std::string serialize(const Plan& p) {
  std::ostringstream out;
  out << "gen\t" << p.generation << "\n";
  for (const auto& u : p.redo_units) out << "unit\t" << u << "\n";
  for (const auto& c : p.refit) out << "refit\t" << c << "\n";
  for (const auto& r : p.reasons) out << "reason\t" << r << "\n";
  for (size_t i = 0; i < p.sources.size(); ++i) {
    const SourceFile& s = p.sources[i];
    if (s.abs_path.find_first_of("\t\n") != std::string::npos)
      throw Error("file names with tabs or newlines are not supported", s.abs_path);
    out << "src\t" << s.collection << "\t" << s.split << "\t" << s.rel_path << "\t" << s.abs_path << "\t"
        << s.stem << "\t" << s.size << "\t" << s.mtime_ns << "\t" << int(s.is_directory) << "\t"
        << int(p.process[i]) << "\n";
  }
  return out.str();
}

static Plan deserialize(const std::string& text) {
  Plan p;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
    if (f.empty()) continue;
    if (f[0] == "gen") p.generation = std::stoi(f.at(1));
    if (f[0] == "unit") p.redo_units.insert(f.at(1));
    if (f[0] == "refit") p.refit.insert(f.at(1));
    if (f[0] == "reason") p.reasons.push_back(f.at(1));
    if (f[0] == "src") {
      SourceFile s;
      s.collection = f.at(1);
      s.split = f.at(2);
      s.rel_path = f.at(3);
      s.abs_path = f.at(4);
      s.stem = f.at(5);
      s.size = std::stoll(f.at(6));
      s.mtime_ns = std::stoll(f.at(7));
      s.is_directory = f.at(8) == "1";
      p.sources.push_back(s);
      p.process.push_back(f.at(9) == "1");
    }
  }
  return p;
}

void broadcast_plan(Plan& plan, int rank, MPI_Comm comm) {
  std::string text = rank == 0 ? serialize(plan) : "";
  broadcast_bytes(text, 0, comm);
  if (rank != 0) plan = deserialize(text);
}

}  // namespace tpuperf
