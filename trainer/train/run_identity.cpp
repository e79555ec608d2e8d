#include "trainer/train/run_identity.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/hash.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

void hash_field(Hasher& h, const std::string& s) {
  h.update(s);
  h.update("\n", 1);
}

template <typename T>
void hash_values(Hasher& h, const std::vector<T>& v) {
  hash_field(h, std::to_string(v.size()));
  if (!v.empty()) h.update(v.data(), v.size() * sizeof(T));
}

std::map<std::string, std::string> read_data_identity(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(read_text_file(path));
  std::string collection, digest;
  while (in >> collection >> digest) out[collection] = digest;
  return out;
}

// train.* and model.* keys that never change what a run computes: how many threads, and
// when a stalled group gives up.
bool free_on_resume(const std::string& key) {
  return key == "train.threads_per_rank" || key == "train.stall_timeout_s";
}

// Keys whose change makes a resumed run differ from an uninterrupted one.
std::vector<std::string> changed_settings(const Config& saved, const Config& now) {
  std::vector<std::string> changed;
  std::vector<std::string> paths;
  for (const auto& key : config_schema()) paths.push_back(key.path);
  // The collections' sections too, an entry either config holds ("null" in the other).
  for (const Config* c : {&saved, &now})
    for (const auto& entry : c->section_entries())
      if (std::find(paths.begin(), paths.end(), entry) == paths.end()) paths.push_back(entry);
  for (const auto& path : paths) {
    const bool entry = path.rfind("collections.", 0) == 0;
    const std::string key = entry ? path.substr(path.find('.', 12) + 1) : path;
    const bool shapes_training = key.rfind("train.", 0) == 0 || key.rfind("model.", 0) == 0;
    if (!shapes_training || free_on_resume(key)) continue;
    // A saved config holds every key of its time: a missing one is newer than the run, whose
    // training it did not shape (e.g. a cap added later would change its remaining steps).
    // A section entry it lacks is one the run did not have.
    if (!entry && !saved.given(path))
      changed.push_back(path + " (not in the saved config: the run predates the key; start it --fresh)");
    else if (saved.value_text(path) != now.value_text(path))
      changed.push_back(path + " (" + saved.value_text(path) + " -> " + now.value_text(path) + ")");
  }
  return changed;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::map<std::string, std::string> data_identity(const Manifest& manifest,
                                                 const std::vector<std::string>& collections) {
  std::map<std::string, std::string> shard_hash;
  for (const auto& s : manifest.shards) shard_hash[s.file] = s.hash;
  std::map<std::string, std::string> out;
  for (const auto& c : collections) {
    Hasher h;
    for (const ManifestGraph* g : manifest.graphs_of(c)) {
      if (g->split == "test") continue;  // never trained or selected on
      for (const auto& f : {g->split, g->name, std::to_string(g->fold), g->shard, shard_hash[g->shard],
                            std::to_string(g->index)})
        hash_field(h, f);
    }
    if (const FeatureTransform* t = manifest.find_transform(c)) {
      hash_values(h, t->kept_columns);
      hash_values(h, t->mean);
      hash_values(h, t->stddev);
      hash_values(h, t->log1p);
    }
    out[c] = h.hex();
  }
  return out;
}

void save_data_identity(const std::string& output_dir, const std::map<std::string, std::string>& identity) {
  std::string text;
  for (const auto& [collection, digest] : identity) text += collection + " " + digest + "\n";
  write_file_atomic(output_dir + "/" + kDataIdentityFileName, text);
}

void check_resume_identity(const std::string& output_dir, const Config& now,
                           const std::map<std::string, std::string>& data_now) {
  const std::string config_path = output_dir + "/train_config.yaml";
  const std::string data_path = output_dir + "/" + kDataIdentityFileName;
  std::vector<std::string> problems;
  if (fs::exists(config_path)) {
    const auto changed = changed_settings(Config::load_saved(config_path), now);
    if (!changed.empty()) problems.push_back("settings changed: " + join(changed));
  } else {
    spdlog::warn("{}: no train_config.yaml; cannot check that --resume continues with the same settings", output_dir);
  }
  if (fs::exists(data_path)) {
    const auto saved = read_data_identity(data_path);
    std::vector<std::string> changed;
    for (const auto& [collection, digest] : data_now) {
      auto it = saved.find(collection);
      if (it != saved.end() && it->second != digest) changed.push_back(collection);
    }
    if (!changed.empty())
      problems.push_back("the train/valid graphs, folds or feature transform of " + join(changed) +
                         " changed since the run started (data.processed_dir was preprocessed again or "
                         "points elsewhere)");
  } else {
    spdlog::warn("{}: no {}; cannot check that --resume continues on the same data", output_dir,
                 kDataIdentityFileName);
  }
  if (!problems.empty())
    throw Error("--resume would continue the saved checkpoints under different conditions: " + join(problems) +
                    ". Restore them, or start over with --fresh",
                output_dir);
}

}  // namespace tpuperf
